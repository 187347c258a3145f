package deployrec

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Bounds on a stored recording (mythex history keeps one per deploy on each
// agent). A 10-minute deploy of 20 hosts measured every second is about
// 40 KB encoded; the bounds leave room for hours, and refuse anything a
// report could not draw in reasonable memory.
const (
	// MaxEncoded is the most bytes Encode returns and Decode accepts.
	MaxEncoded = 1 << 20
	// MaxDecoded is the most bytes of JSON Decode inflates a gzipped
	// recording to (a gzip bomb stops here).
	MaxDecoded = 16 << 20
	// MaxSpan is the longest a decoded deploy may run, from its start to its
	// end (its events and the prober may reach an hour beyond either).
	MaxSpan = 24 * time.Hour
	// compressAbove is the JSON size above which Encode gzips.
	compressAbove = 4 << 10
)

// Errors of Decode (and Encode's ErrTooLarge), matched with errors.Is.
var (
	// ErrTooLarge: the recording is bigger than MaxEncoded (or inflates past
	// MaxDecoded).
	ErrTooLarge = errors.New("recording too large")
	// ErrCorrupt: the bytes are not a recording this mythex can read, or
	// it holds values a report cannot draw.
	ErrCorrupt = errors.New("corrupt recording")
)

// gzipMagic starts every gzip stream (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b}

// Encode writes rec as JSON, gzipped when larger than a few KB. Errors:
// ErrTooLarge when the result exceeds MaxEncoded.
func Encode(rec Recording) ([]byte, error) {
	raw, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode recording: %w", err)
	}
	out := raw
	if len(raw) > compressAbove {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression) // a valid level: no error
		_, _ = zw.Write(raw)                                        // a bytes.Buffer never fails
		if err := zw.Close(); err != nil {
			return nil, fmt.Errorf("encode recording: %w", err)
		}
		out = buf.Bytes()
	}
	if len(out) > MaxEncoded {
		return nil, fmt.Errorf("%w: %d KB encoded (%d KB of JSON), at most %d KB", ErrTooLarge, len(out)>>10, len(raw)>>10, MaxEncoded>>10)
	}
	return out, nil
}

// Decode reads what Encode wrote and checks it is something a report can
// draw (see Validate). Errors: ErrTooLarge, ErrCorrupt — never a panic,
// whatever b holds.
func Decode(b []byte) (Recording, error) {
	if len(b) > MaxEncoded {
		return Recording{}, fmt.Errorf("%w: %d KB, at most %d KB", ErrTooLarge, len(b)>>10, MaxEncoded>>10)
	}
	var r io.Reader = bytes.NewReader(b)
	if bytes.HasPrefix(b, gzipMagic) {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return Recording{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		defer zr.Close()
		r = zr
	}
	raw, err := io.ReadAll(io.LimitReader(r, MaxDecoded+1))
	switch {
	case err != nil:
		return Recording{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	case len(raw) > MaxDecoded:
		return Recording{}, fmt.Errorf("%w: inflates past %d MB", ErrTooLarge, MaxDecoded>>20)
	}
	var rec Recording
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&rec); err != nil {
		return Recording{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return Recording{}, fmt.Errorf("%w: data after the recording", ErrCorrupt)
	}
	if err := rec.Validate(); err != nil {
		return Recording{}, err
	}
	return rec, nil
}

// Validate checks that rec is a recording of this format a report can draw
// in bounded time and memory: at least one deploy, each with a start and an
// end at most MaxSpan apart, its events and its prober within an hour of
// them, and per-second buckets numbered within that. Errors wrap
// ErrCorrupt.
func (rec Recording) Validate() error {
	const slack = time.Hour
	switch {
	case rec.Format > FormatVersion:
		return fmt.Errorf("%w: format %d, written by a newer mythex (this one reads format %d): use that version", ErrCorrupt, rec.Format, FormatVersion)
	case rec.Format != FormatVersion:
		return fmt.Errorf("%w: format %d, want %d", ErrCorrupt, rec.Format, FormatVersion)
	case len(rec.Deploys) == 0:
		return fmt.Errorf("%w: no deploy in it", ErrCorrupt)
	}
	maxSeconds := int((MaxSpan + 2*slack) / time.Second)
	for i, d := range rec.Deploys {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("%w: deploy %d: %s", ErrCorrupt, i+1, fmt.Sprintf(format, a...))
		}
		if d.Start.IsZero() || d.End.Before(d.Start) || d.End.Sub(d.Start) > MaxSpan {
			return bad("start %s and end %s are not a span of at most %s", d.Start.Format(time.RFC3339), d.End.Format(time.RFC3339), MaxSpan)
		}
		near := func(t time.Time) bool { return !t.Before(d.Start.Add(-slack)) && !t.After(d.End.Add(slack)) }
		for _, e := range d.Events {
			if !near(e.At) {
				return bad("event at %s outside the deploy", e.At.Format(time.RFC3339))
			}
		}
		if p := d.Probe; p != nil {
			if !p.StartedAt.IsZero() && !near(p.StartedAt) {
				return bad("prober started at %s, outside the deploy", p.StartedAt.Format(time.RFC3339))
			}
			if len(p.Seconds) > maxSeconds {
				return bad("%d seconds of load, at most %d", len(p.Seconds), maxSeconds)
			}
			for _, s := range p.Seconds {
				if s.Second < 0 || s.Second >= maxSeconds {
					return bad("second %d of the load is outside the deploy", s.Second)
				}
			}
		}
	}
	return nil
}
