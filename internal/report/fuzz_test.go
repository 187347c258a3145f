package report

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/mythex/mythex/internal/deployrec"
)

// FuzzWrite_Decoded: a stored recording read back from an agent (mythex
// history --report) is hostile input. Whatever Decode accepts, Write draws
// without a panic; whatever it refuses, it refuses with an error.
func FuzzWrite_Decoded(f *testing.F) {
	for _, rec := range []deployrec.Recording{synthetic(3, 20, 50, -1), synthetic(3, 20, 50, 1), synthetic(1, 2, 5, -1)} {
		b, err := deployrec.Encode(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		raw, _ := json.Marshal(rec)
		f.Add(raw)
	}
	f.Add([]byte(`{"format":1,"deploys":[{"start":"2026-12-01T14:00:00Z","end":"2026-12-01T14:00:00Z","events":[{"at":"2026-12-01T14:00:00Z","kind":"target"}],"probe":{"seconds":[{"second":3,"requests":-5}]}}]}`))
	f.Add([]byte(`{"format":1,"deploys":[{"start":"2026-12-01T14:00:00Z","end":"2026-12-02T14:00:00Z","events":[{"at":"2026-12-01T14:00:00Z","phase":"capacity","host":",,,","kind":"end","elapsed_seconds":1e300}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := deployrec.Decode(b)
		if err != nil {
			return
		}
		if err := Write(io.Discard, rec); err != nil {
			t.Fatalf("Write of a decoded recording: %v", err)
		}
	})
}
