package termui

import (
	"encoding/json"
	"time"

	"github.com/mythex/mythex/internal/probe"
)

// ProbeSecondJSON is one second of the prober as the `mythex deploy --json`
// event stream carries it, stamped at.
func ProbeSecondJSON(b probe.Bucket, at time.Time) []byte {
	line, _ := json.Marshal(struct {
		At     time.Time    `json:"at"`
		Kind   string       `json:"kind"`
		Second probe.Bucket `json:"second"`
	}{at, "probe_second", b})
	return line
}
