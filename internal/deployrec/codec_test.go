package deployrec

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mythex/mythex/internal/deploy"
	"github.com/mythex/mythex/internal/history"
)

// recordingOf is a deploy of hosts measured for secs seconds.
func recordingOf(hosts, secs int) Recording {
	d := Deploy{From: "v1", Version: "v2", Start: t0, End: t0.Add(time.Duration(secs) * time.Second),
		Result: &Result{OK: true, Seconds: float64(secs), Hosts: []deploy.HostResult{{Host: "web-1", OK: true}}}}
	for h := range hosts {
		name := fmt.Sprintf("web-%d", h+1)
		d.Hosts = append(d.Hosts, name)
		for i, p := range []deploy.Phase{deploy.PhaseDrain, deploy.PhaseStop, deploy.PhaseStart} {
			at := t0.Add(time.Duration(h*3+i) * time.Second)
			d.Events = append(d.Events, deploy.Event{At: at, Host: name, Phase: p, Kind: deploy.EventBegin},
				deploy.Event{At: at.Add(time.Second), Host: name, Phase: p, Kind: deploy.EventEnd, Elapsed: 1})
		}
		d.Events = append(d.Events, deploy.Event{At: t0, Host: name, Kind: deploy.EventTarget, Target: &deploy.TargetState{State: "healthy", InRotation: true, InFlight: -1}})
	}
	p := &Probe{URL: "http://lb/", Rate: 100, StartedAt: t0, Totals: &Totals{Counts: Counts{Requests: int64(100 * secs), OK: int64(100 * secs)}}}
	for s := range secs {
		p.Seconds = append(p.Seconds, Second{Second: s, Counts: Counts{Requests: 100, OK: 100}, P50Ms: 1.5, P99Ms: 7, Versions: map[string]int64{"v1": 60, "v2": 40}})
	}
	d.Probe = p
	return Recording{Format: FormatVersion, Command: "mythex deploy", CreatedAt: t0, Deploys: []Deploy{d}}
}

func TestEncode_RoundTrips(t *testing.T) {
	cases := []struct {
		name       string
		rec        Recording
		wantGzip   bool
		maxEncoded int
	}{
		{"small: plain JSON", recordingOf(1, 2), false, compressAbove},
		// A 10-minute deploy of 20 hosts measured every second.
		{"10 minutes, 20 hosts: gzipped", recordingOf(20, 600), true, 64 << 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := Encode(c.rec)
			if err != nil {
				t.Fatal(err)
			}
			if gz := bytes.HasPrefix(b, gzipMagic); gz != c.wantGzip || len(b) > c.maxEncoded {
				t.Errorf("%d bytes, gzipped %v; want at most %d, gzipped %v", len(b), gz, c.maxEncoded, c.wantGzip)
			}
			t.Logf("%d bytes encoded", len(b))
			got, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := json.Marshal(c.rec)
			have, _ := json.Marshal(got)
			if !bytes.Equal(want, have) {
				t.Error("the decoded recording differs from the one encoded")
			}
			if !reflect.DeepEqual(got.Deploys[0].Probe.Totals, c.rec.Deploys[0].Probe.Totals) {
				t.Errorf("totals %+v, want %+v", got.Deploys[0].Probe.Totals, c.rec.Deploys[0].Probe.Totals)
			}
		})
	}
}

// TestMaxEncoded_IsTheHistoryBound: what Encode accepts, an agent keeps.
func TestMaxEncoded_IsTheHistoryBound(t *testing.T) {
	if MaxEncoded != history.MaxTimeline {
		t.Errorf("MaxEncoded %d, history.MaxTimeline %d: a recording Encode accepts would be refused by the agents", MaxEncoded, history.MaxTimeline)
	}
}

func gz(t *testing.T, raw []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecode_Hostile: whatever a store hands back — corrupt, truncated,
// oversize, a gzip bomb, a recording a report could not draw — Decode
// returns an error naming it, never a panic nor a huge allocation.
func TestDecode_Hostile(t *testing.T) {
	good, err := Encode(recordingOf(3, 60))
	if err != nil {
		t.Fatal(err)
	}
	with := func(change func(*Recording)) []byte {
		r := recordingOf(1, 5)
		change(&r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		b    []byte
		want error
		say  string
	}{
		{"empty", nil, ErrCorrupt, "EOF"},
		{"not JSON", []byte("{hello"), ErrCorrupt, "invalid character"},
		{"truncated gzip", good[:len(good)/2], ErrCorrupt, "unexpected EOF"},
		{"gzip header only", gzipMagic, ErrCorrupt, ""},
		{"oversize", append([]byte("{"), make([]byte, MaxEncoded)...), ErrTooLarge, "at most 1024 KB"},
		{"a gzip bomb", gz(t, append([]byte(`{"format":1,"x":"`), bytes.Repeat([]byte("a"), MaxDecoded+10)...)), ErrTooLarge, "inflates past 16 MB"},
		{"data after the recording", append(with(func(*Recording) {}), []byte(` {"format":1}`)...), ErrCorrupt, "data after"},
		{"a newer format", with(func(r *Recording) { r.Format = 9 }), ErrCorrupt, "written by a newer mythex"},
		{"no format", with(func(r *Recording) { r.Format = 0 }), ErrCorrupt, "format 0"},
		{"no deploy", with(func(r *Recording) { r.Deploys = nil }), ErrCorrupt, "no deploy"},
		{"no start", with(func(r *Recording) { r.Deploys[0].Start = time.Time{} }), ErrCorrupt, "not a span"},
		{"ends before it starts", with(func(r *Recording) { r.Deploys[0].End = t0.Add(-time.Second) }), ErrCorrupt, "not a span"},
		{"a century long", with(func(r *Recording) { r.Deploys[0].End = t0.AddDate(100, 0, 0) }), ErrCorrupt, "not a span"},
		{"an event a year away", with(func(r *Recording) { r.Deploys[0].Events[0].At = t0.AddDate(1, 0, 0) }), ErrCorrupt, "event at"},
		{"a prober a year early", with(func(r *Recording) { r.Deploys[0].Probe.StartedAt = t0.AddDate(-1, 0, 0) }), ErrCorrupt, "prober started"},
		{"a second far beyond", with(func(r *Recording) { r.Deploys[0].Probe.Seconds[0].Second = 1 << 30 }), ErrCorrupt, "second 1073741824"},
		{"a negative second", with(func(r *Recording) { r.Deploys[0].Probe.Seconds[0].Second = -1 }), ErrCorrupt, "second -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.b)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.say) {
				t.Errorf("Decode = %v; want %v saying %q", err, c.want, c.say)
			}
		})
	}
}

// TestEncode_TooLarge: a recording beyond the bound is refused with its
// size, not stored truncated.
func TestEncode_TooLarge(t *testing.T) {
	r := recordingOf(1, 5)
	// Incompressible: random bytes, as base64 (gzip gets it back to ¾).
	noise := make([]byte, 3*MaxEncoded/2)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(noise)
	r.Deploys[0].Events[0].Detail = base64.StdEncoding.EncodeToString(noise)
	if _, err := Encode(r); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "at most 1024 KB") {
		t.Errorf("Encode = %v; want ErrTooLarge naming the bound", err)
	}
}
