package definition

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// Seal validates d, sorts its services by name and sets d.Hash from the
// canonical encoding. Validation problems are *FieldErrors joined, matching
// ErrInvalid. Resolve and Decode seal what they return.
func (d *Definition) Seal() error {
	slices.SortFunc(d.Services, func(a, b Service) int { return cmp.Compare(a.Name, b.Name) })
	if err := d.Validate(); err != nil {
		return err
	}
	b, err := d.Encode()
	if err != nil {
		return err
	}
	d.Hash = hashOf(b)
	return nil
}

// Encode returns the canonical encoding of d: JSON with fields in a fixed
// order, services sorted by name, map keys sorted, durations as Go duration
// strings ("10s"), no HTML escaping, one trailing newline. Equal definitions
// encode to equal bytes; Decode(Encode(d)) encodes to the same bytes again. The
// hash (d.Hash) is not part of the encoding. d is not modified.
func (d *Definition) Encode() ([]byte, error) {
	c := *d
	c.Services = slices.Clone(d.Services)
	slices.SortFunc(c.Services, func(a, b Service) int { return cmp.Compare(a.Name, b.Name) })
	if c.Services == nil {
		c.Services = []Service{}
	}
	return marshal(&c)
}

// Decode parses a definition from JSON (as Encode writes it; unknown fields
// are refused), validates it and seals it: the result's Hash is the hash of its
// canonical encoding, whatever the formatting of data. Errors match ErrInvalid.
func Decode(data []byte) (*Definition, error) {
	var d Definition
	if err := strictUnmarshal(data, &d); err != nil {
		return nil, &FieldError{Field: "(document)", Msg: fmt.Sprintf("not a valid definition: %v", err)}
	}
	if err := d.Seal(); err != nil {
		return nil, err
	}
	return &d, nil
}

// SpecHash is the lowercase hex SHA-256 of the service's canonical encoding:
// two services with equal specs (name, version, image, argv, environment,
// labels, healthcheck, process, grace, restart) have equal spec hashes, and a
// runtime restarts a stopped instance of the same spec rather than creating
// a new one.
func (s Service) SpecHash() string {
	b, err := marshal(s)
	if err != nil {
		// Every field is a string, number, slice or map of strings: it cannot
		// fail to marshal.
		panic(fmt.Sprintf("definition: marshal service %q: %v", s.Name, err))
	}
	return hashOf(b)
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("definition: encode: %w", err)
	}
	return buf.Bytes(), nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the JSON document")
	}
	return nil
}

// serviceFields is Service without its methods, for the JSON (un)marshalers.
type serviceFields Service

type serviceJSON struct {
	serviceFields
	StopGracePeriod string `json:"stop_grace_period"`
}

// MarshalJSON encodes the service with its stop grace period as a Go duration
// string.
func (s Service) MarshalJSON() ([]byte, error) {
	return marshal(serviceJSON{serviceFields: serviceFields(s), StopGracePeriod: s.StopGracePeriod.String()})
}

// UnmarshalJSON decodes what MarshalJSON writes; unknown fields and malformed
// durations are errors.
func (s *Service) UnmarshalJSON(b []byte) error {
	var j serviceJSON
	if err := strictUnmarshal(b, &j); err != nil {
		return err
	}
	*s = Service(j.serviceFields)
	return parseDurations(map[string]durationField{
		"stop_grace_period": {j.StopGracePeriod, &s.StopGracePeriod},
	})
}

type healthcheckFields Healthcheck

type healthcheckJSON struct {
	healthcheckFields
	Interval      string `json:"interval"`
	Timeout       string `json:"timeout"`
	StartPeriod   string `json:"start_period"`
	StartInterval string `json:"start_interval"`
}

// MarshalJSON encodes the healthcheck with durations as Go duration strings.
func (h Healthcheck) MarshalJSON() ([]byte, error) {
	return marshal(healthcheckJSON{
		healthcheckFields: healthcheckFields(h),
		Interval:          h.Interval.String(),
		Timeout:           h.Timeout.String(),
		StartPeriod:       h.StartPeriod.String(),
		StartInterval:     h.StartInterval.String(),
	})
}

// UnmarshalJSON decodes what MarshalJSON writes; unknown fields and malformed
// durations are errors.
func (h *Healthcheck) UnmarshalJSON(b []byte) error {
	var j healthcheckJSON
	if err := strictUnmarshal(b, &j); err != nil {
		return err
	}
	*h = Healthcheck(j.healthcheckFields)
	return parseDurations(map[string]durationField{
		"interval":       {j.Interval, &h.Interval},
		"timeout":        {j.Timeout, &h.Timeout},
		"start_period":   {j.StartPeriod, &h.StartPeriod},
		"start_interval": {j.StartInterval, &h.StartInterval},
	})
}

type durationField struct {
	text string
	dst  *time.Duration
}

func parseDurations(fields map[string]durationField) error {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f := fields[name]
		d, err := time.ParseDuration(f.text)
		if err != nil {
			return fmt.Errorf("%s: malformed duration %q", name, f.text)
		}
		*f.dst = d
	}
	return nil
}
