package demo

import (
	"bytes"
	"testing"
)

// TestComposeYAML_AppExeDropsTheSubcommand: with FleetOptions.AppExe the
// services run the sample app alone, which takes no `sample-app`
// subcommand: StartFleet drops every service's command line, so each of
// the four services must have one in exactly the form it removes.
func TestComposeYAML_AppExeDropsTheSubcommand(t *testing.T) {
	if n := bytes.Count(composeYAML, []byte("\n    command: [sample-app]")); n != 4 {
		t.Fatalf("compose.yaml has %d service command lines of the form StartFleet drops, want 4 (one a service)", n)
	}
}
