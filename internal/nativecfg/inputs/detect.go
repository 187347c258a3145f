// Package inputs finds the files `mythex check PATH...` is given, detects the
// kind of each (Kubernetes, ECS, compose, Kamal, fly.toml, Nomad, mythex.yml)
// and hands them to the platform's reader.
package inputs

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/nativecfg/kube"
)

// Unknown is the kind of a file no reader understands.
const Unknown = "unknown"

// Detect returns the platform a file belongs to, from its name and contents.
func Detect(name string, data []byte) string {
	base := strings.ToLower(filepath.Base(name))
	ext := filepath.Ext(base)
	switch {
	case base == "fly.toml" || ext == ".toml":
		if bytes.Contains(data, []byte("app")) || bytes.Contains(data, []byte("[http_service]")) || bytes.Contains(data, []byte("kill_timeout")) {
			return nativecfg.Fly
		}
		return Unknown
	case ext == ".hcl" || ext == ".nomad":
		if bytes.Contains(data, []byte("job")) {
			return nativecfg.Nomad
		}
		return Unknown
	case ext == ".json":
		return detectJSON(data)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if k := detectJSON(data); k != Unknown {
			return k
		}
	}
	if kube.Sniff(data) {
		return nativecfg.Kubernetes
	}
	if name == "-" {
		if bytes.Contains(data, []byte("kill_timeout")) || bytes.HasPrefix(trimmed, []byte("app =")) {
			return nativecfg.Fly
		}
		if bytes.Contains(data, []byte("job \"")) {
			return nativecfg.Nomad
		}
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil || top == nil {
		return Unknown
	}
	_, hasServices := top["services"]
	_, hasLB := top["load_balancer"]
	_, hasDrain := top["drain"]
	_, hasService := top["service"]
	_, hasImage := top["image"]
	_, hasServers := top["servers"]
	switch {
	case hasLB && hasDrain:
		return nativecfg.Mythex
	case hasService && (hasImage || hasServers):
		return nativecfg.Kamal
	case hasServices:
		return nativecfg.Compose
	}
	return Unknown
}

// detectJSON recognises Kubernetes objects in JSON, ECS task definitions and
// services (as registered or as `aws ecs describe-*` prints them) and `aws elbv2
// describe-target-groups` / `describe-target-group-attributes` output.
func detectJSON(data []byte) string {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return Unknown
	}
	if top["apiVersion"] != nil && top["kind"] != nil {
		return nativecfg.Kubernetes // kubectl get -o json
	}
	for _, k := range []string{"containerDefinitions", "taskDefinition", "services", "service", "loadBalancers",
		"deploymentConfiguration", "TargetGroups", "Attributes", "family"} {
		if _, ok := top[k]; ok {
			return nativecfg.ECS
		}
	}
	return Unknown
}
