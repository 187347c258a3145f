package definition

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefinition_EncodeRoundTrip(t *testing.T) {
	d := testDefinition(t, "v1")
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(b)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	b2, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Errorf("re-encoding differs:\n%s\n%s", b, b2)
	}
	if got.Hash != d.Hash || len(d.Hash) != 64 {
		t.Errorf("hash after decode = %q, want %q", got.Hash, d.Hash)
	}
	if got.Services[0].StopGracePeriod != 30*time.Second || got.Services[0].Healthcheck.StartInterval != time.Second {
		t.Errorf("durations not round-tripped: %+v", got.Services[0])
	}
	if got.Services[0].Name != "api" {
		t.Errorf("services not sorted: first is %q", got.Services[0].Name)
	}
}

func TestDefinition_EncodeIsCanonical(t *testing.T) {
	d := testDefinition(t, "v1")
	b, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// The same content, indented and with services in another order, decodes
	// to the same hash.
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	svcs := raw["services"].([]any)
	svcs[0], svcs[1] = svcs[1], svcs[0]
	pretty, err := json.MarshalIndent(raw, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(pretty)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if got.Hash != d.Hash {
		t.Errorf("hash of reformatted definition = %s, want %s", got.Hash, d.Hash)
	}
	if strings.Contains(string(b), `\u003c`) || !bytes.HasSuffix(b, []byte("}\n")) {
		t.Errorf("encoding not plain: %s", b)
	}
}

func TestDecode_Errors(t *testing.T) {
	good, err := testDefinition(t, "v1").Encode()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data string
		want string
	}{
		{"not json", "{", "not a valid definition"},
		{"unknown top-level field", strings.Replace(string(good), `"version":"v1",`, `"version":"v1","extra":1,`, 1), `unknown field "extra"`},
		{"unknown service field", strings.Replace(string(good), `"name":"api",`, `"name":"api","volumes":[],`, 1), `unknown field "volumes"`},
		{"malformed duration", strings.Replace(string(good), `"stop_grace_period":"30s"`, `"stop_grace_period":"30"`, 1), "malformed duration"},
		{"invalid content", strings.Replace(string(good), `"policy":"on-failure"`, `"policy":"sometimes"`, 1), "unknown restart policy"},
		{"trailing data", string(good) + "{}", "trailing data"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode([]byte(tc.data))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestService_SpecHash(t *testing.T) {
	base := testDefinition(t, "v1").Services[0]
	cases := []struct {
		name   string
		change func(s *Service)
		same   bool
	}{
		{"unchanged copy", func(*Service) {}, true},
		{"environment value", func(s *Service) {
			s.Environment = map[string]string{EnvVersion: "v1", EnvService: "api", "MYTHEX_APP_SERVICE": "other"}
		}, false},
		{"version", func(s *Service) { s.Version = "v2" }, false},
		{"grace period", func(s *Service) { s.StopGracePeriod = time.Second }, false},
		{"argv", func(s *Service) { s.Command = []string{"--listen", "127.0.0.1:2"} }, false},
		{"health timeout", func(s *Service) { h := *s.Healthcheck; h.Timeout = time.Second; s.Healthcheck = &h }, false},
		{"process port", func(s *Service) { p := *s.Process; p.Port = 1; s.Process = &p }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.change(&s)
			if got := s.SpecHash() == base.SpecHash(); got != tc.same {
				t.Errorf("same spec hash = %v, want %v", got, tc.same)
			}
		})
	}
}
