// Package dockerexample embeds examples/docker/compose.yaml, the local demo's
// definition for the Docker runtime, so that `mythex demo --runtime docker`
// deploys the one copy the README walks through and the tests resolve.
package dockerexample

import _ "embed"

// Compose is examples/docker/compose.yaml.
//
//go:embed compose.yaml
var Compose []byte
