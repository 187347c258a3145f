package apiclient

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
)

// cfg is the Config of the tests: small limits so oversized answers are cheap.
var cfg = Config{Name: "test api", Timeout: 10 * time.Second, ErrorLimit: 32, AnswerLimit: 64}

type answer struct {
	N   int    `json:"n"`
	Pad string `json:"pad,omitempty"`
}

// reply answers every request with status and body.
func reply(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestNew_Base(t *testing.T) {
	tests := []struct {
		name, base, want string
	}{
		{"bare host:port gets http", "127.0.0.1:9201", "http://127.0.0.1:9201"},
		{"trailing slash dropped", "http://127.0.0.1:9201/", "http://127.0.0.1:9201"},
		{"https kept", "https://lb.example:8079", "https://lb.example:8079"},
		{"bare with slashes", "lb.example:8079//", "http://lb.example:8079"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := New(tc.base, "t", nil, cfg).Base(); got != tc.want {
				t.Errorf("Base() = %q; want %q", got, tc.want)
			}
		})
	}
}

func TestNew_HTTPClient(t *testing.T) {
	if got := New("h:1", "t", nil, cfg).hc.Timeout; got != cfg.Timeout {
		t.Errorf("default client's timeout = %v; want %v", got, cfg.Timeout)
	}
	hc := &http.Client{}
	if got := New("h:1", "t", hc, cfg).hc; got != hc {
		t.Error("New did not keep the given *http.Client")
	}
}

func TestClient_Do_Answers(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc // nil: nothing listens at the base URL
		cancel  bool             // the call's context ends once the API has the request
		out     any
		want    any // out after the call, when it succeeds
		// wantStatus and wantMsg: the error is a *StatusError with them.
		wantStatus int
		wantMsg    string
		// wantSend: the error wraps a *SendError for the request's URL.
		wantSend bool
		wantIs   error  // the error matches it with errors.Is
		wantText string // the error's text begins with it
	}{
		{name: "2xx JSON decoded", handler: reply(200, `{"n":7}`), out: &answer{}, want: &answer{N: 7}},
		{name: "201 is a success", handler: reply(201, `{"n":1}`+"\n"), out: &answer{}, want: &answer{N: 1}},
		{name: "2xx with nil out discards the body", handler: reply(200, `{"n":7}`)},
		{name: "2xx raw within its max", handler: reply(200, "hello"), out: &Raw{Max: 10}, want: &Raw{Max: 10, Bytes: []byte("hello")}},
		{name: "2xx raw over its max keeps max+1 bytes", handler: reply(200, "hello"), out: &Raw{Max: 3}, want: &Raw{Max: 3, Bytes: []byte("hell")}},
		{name: "2xx JSON over the answer limit fails to decode", handler: reply(200, `{"n":1,"pad":"`+strings.Repeat("x", 100)+`"}`),
			out: &answer{}, wantText: "test api GET /v1/x?y=1: decode answer: "},
		{name: "2xx not JSON", handler: reply(200, "<html>"), out: &answer{}, wantText: "test api GET /v1/x?y=1: decode answer: "},
		{name: "error JSON", handler: reply(409, `{"error":"held by bob"}`), out: &answer{}, wantStatus: 409, wantMsg: "held by bob"},
		{name: "error JSON without an error field is its text", handler: reply(400, ` {"x":1} `), wantStatus: 400, wantMsg: `{"x":1}`},
		{name: "error plain text trimmed", handler: reply(500, "  boom\n"), out: &answer{}, wantStatus: 500, wantMsg: "boom"},
		{name: "error with no body", handler: reply(503, ""), wantStatus: 503, wantMsg: ""},
		{name: "oversized error body cut at the error limit", handler: reply(502, strings.Repeat("y", 100)), wantStatus: 502, wantMsg: strings.Repeat("y", 32)},
		{name: "transport error", out: &answer{}, wantSend: true, wantText: "test api GET /v1/x?y=1: "},
		{name: "context cancelled", handler: reply(200, `{"n":7}`), cancel: true, out: &answer{},
			wantSend: true, wantIs: context.Canceled, wantText: "test api GET /v1/x?y=1: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := tc.handler
			if tc.cancel {
				h = func(w http.ResponseWriter, r *http.Request) {
					cancel()
					<-r.Context().Done() // the client hung up
				}
			}
			srv := httptest.NewServer(h)
			if tc.handler == nil && !tc.cancel {
				srv.Close() // nothing listens: the connection is refused
			} else {
				defer srv.Close()
			}
			c := New(srv.URL, "tok", nil, cfg)
			err := c.Do(ctx, Request{Method: http.MethodGet, Path: "/v1/x?y=1"}, tc.out)

			var se *StatusError
			var sendErr *SendError
			switch {
			case tc.wantStatus != 0:
				if !errors.As(err, &se) || se.Status != tc.wantStatus || se.Message != tc.wantMsg {
					t.Fatalf("Do = %v; want a StatusError %d %q", err, tc.wantStatus, tc.wantMsg)
				}
			case tc.wantSend:
				if !errors.As(err, &sendErr) || sendErr.URL != srv.URL+"/v1/x?y=1" {
					t.Fatalf("Do = %v; want a SendError for %s", err, srv.URL+"/v1/x?y=1")
				}
			case tc.wantText == "":
				if err != nil {
					t.Fatalf("Do = %v; want success", err)
				}
				if !reflect.DeepEqual(tc.out, tc.want) {
					t.Fatalf("out = %+v; want %+v", tc.out, tc.want)
				}
			}
			if tc.wantText != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantText)) {
				t.Errorf("Do = %v; want an error beginning %q", err, tc.wantText)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Do = %v; want it to match %v", err, tc.wantIs)
			}
			if !tc.wantSend && errors.As(err, &sendErr) {
				t.Errorf("Do = %v; a SendError for an answer that arrived", err)
			}
		})
	}
}

func TestClient_Do_Requests(t *testing.T) {
	tests := []struct {
		name, wantBody, wantType string // wantType: the Content-Type sent
		req                      Request
		wantHeader               http.Header
	}{
		{name: "no body, no Content-Type", req: Request{Method: http.MethodGet, Path: "/v1/status"}},
		{name: "JSON body encoded", req: Request{Method: http.MethodPost, Path: "/v1/targets", Body: answer{N: 3}},
			wantBody: `{"n":3}`, wantType: "application/json"},
		{name: "raw body sent as it is", req: Request{Method: http.MethodPut, Path: "/v1/definition", Body: []byte(`{"raw": true}`)},
			wantBody: `{"raw": true}`, wantType: "application/json"},
		{name: "extra header sent", req: Request{Method: http.MethodDelete, Path: "/v1/lease", Header: http.Header{"X-Mythex-Lease": {"L1"}}},
			wantHeader: http.Header{"X-Mythex-Lease": {"L1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			type seen struct {
				r    *http.Request
				body []byte
			}
			seenc := make(chan seen, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				seenc <- seen{r, b}
			}))
			defer srv.Close()
			if err := New(srv.URL+"/", "tok", nil, cfg).Do(context.Background(), tc.req, nil); err != nil {
				t.Fatal(err)
			}
			s := <-seenc
			got, body := s.r, s.body
			if got.Method != tc.req.Method || got.URL.RequestURI() != tc.req.Path {
				t.Errorf("request %s %s; want %s %s", got.Method, got.URL.RequestURI(), tc.req.Method, tc.req.Path)
			}
			if a := got.Header.Get("Authorization"); a != "Bearer tok" {
				t.Errorf("Authorization = %q; want Bearer tok", a)
			}
			if ct := got.Header.Get("Content-Type"); ct != tc.wantType {
				t.Errorf("Content-Type = %q; want %q", ct, tc.wantType)
			}
			if string(body) != tc.wantBody {
				t.Errorf("body = %q; want %q", body, tc.wantBody)
			}
			for k := range tc.wantHeader {
				if g := got.Header.Values(k); !reflect.DeepEqual(g, tc.wantHeader[k]) {
					t.Errorf("header %s = %q; want %q", k, g, tc.wantHeader[k])
				}
			}
		})
	}
}

func TestClient_Do_EncodeError(t *testing.T) {
	err := New("h:1", "tok", nil, cfg).Do(context.Background(), Request{Method: http.MethodPost, Path: "/v1/x", Body: make(chan int)}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "test api POST /v1/x: json: ") {
		t.Fatalf("Do = %v; want the encoding error, named", err)
	}
}
