package deploy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/agentapi"
	"github.com/mythex/mythex/internal/definition"
	"github.com/mythex/mythex/internal/fleet"
)

// ErrNotRetained is matched (with ErrPreflight) by ForRollback's error when
// the version asked for is not kept by some host, or no version can be
// chosen for the whole fleet. Nothing was changed.
var ErrNotRetained = errors.New("version not retained on every host")

// HostDefinitions is what one host's agent keeps: its current, previous and
// last known good definitions (agentapi.Status.Definitions).
type HostDefinitions struct {
	Host string
	Defs agentapi.Definitions
}

// RollbackPlan is the decision of a fleet rollback: the version every host
// returns to, and which of its stored definitions each host publishes again.
type RollbackPlan struct {
	// Version is the version the fleet rolls back to.
	Version string `json:"version"`
	// Refs is, in host order, the stored definition each host returns to.
	Refs []definition.Ref `json:"refs"`
	// Why says how Version was chosen.
	Why string `json:"why"`
}

// refOrder is the order a host's definitions are tried for a version: the
// one verified on the whole fleet first.
var refOrder = []definition.Ref{definition.RefLastGood, definition.RefCurrent, definition.RefPrevious}

func refOf(d agentapi.Definitions, r definition.Ref) *agentapi.DefinitionRef {
	switch r {
	case definition.RefCurrent:
		return d.Current
	case definition.RefPrevious:
		return d.Previous
	case definition.RefLastGood:
		return d.LastGood
	}
	return nil
}

// retained lists the versions a host keeps, for messages.
func retained(d agentapi.Definitions) string {
	var vs []string
	for _, r := range refOrder {
		if x := refOf(d, r); x != nil && !slices.Contains(vs, x.Version) {
			vs = append(vs, x.Version)
		}
	}
	if len(vs) == 0 {
		return "nothing"
	}
	return strings.Join(vs, ", ")
}

// PlanRollback decides a fleet rollback from what each host keeps (each
// agent keeps three definitions: current, previous and last known good).
//
// With to set, every host must keep a definition of version to (its last
// good, else its current, else its previous); the hosts that do not are
// named. Without to, the fleet goes back to its last good version — the
// version every host recorded as last known good after the last deploy that
// verified the whole fleet — when some host runs anything else; when every
// host already runs it, back to the version each ran before it (previous),
// which must be the same on every host. Errors match ErrNotRetained.
func PlanRollback(hosts []HostDefinitions, to string) (RollbackPlan, error) {
	if len(hosts) == 0 {
		return RollbackPlan{}, fmt.Errorf("%w: no hosts", ErrNotRetained)
	}
	if to != "" {
		p := RollbackPlan{Version: to, Why: "asked for (--to)"}
		var missing []string
		for _, h := range hosts {
			ref := definition.Ref("")
			for _, r := range refOrder {
				if x := refOf(h.Defs, r); x != nil && x.Version == to {
					ref = r
					break
				}
			}
			if ref == "" {
				missing = append(missing, fmt.Sprintf("%s (keeps %s)", h.Host, retained(h.Defs)))
			}
			p.Refs = append(p.Refs, ref)
		}
		if len(missing) > 0 {
			return RollbackPlan{}, fmt.Errorf("%w: version %s is no longer kept by %s; a host keeps only its current, previous and last good definitions — roll back to a version every host keeps, or deploy %s again with mythex deploy",
				ErrNotRetained, to, strings.Join(missing, ", "), to)
		}
		return p, nil
	}
	good, split := oneVersion(hosts, definition.RefLastGood)
	if split != "" {
		return RollbackPlan{}, fmt.Errorf("%w: the hosts record no one last good version (%s); name the version with --to", ErrNotRetained, split)
	}
	onGood := true
	for _, h := range hosts {
		if h.Defs.Current == nil || h.Defs.Current.Hash != h.Defs.LastGood.Hash {
			onGood = false
		}
	}
	if !onGood {
		p := RollbackPlan{Version: good, Why: "the fleet's last good version"}
		for range hosts {
			p.Refs = append(p.Refs, definition.RefLastGood)
		}
		return p, nil
	}
	// The fleet runs its last good version: back to the one before it.
	prev, split := oneVersion(hosts, definition.RefPrevious)
	if split != "" {
		return RollbackPlan{}, fmt.Errorf("%w: every host runs its last good version %s, and the hosts keep no one version from before it (%s); name the version with --to",
			ErrNotRetained, good, split)
	}
	p := RollbackPlan{Version: prev, Why: fmt.Sprintf("the version before %s, which every host runs", good)}
	for range hosts {
		p.Refs = append(p.Refs, definition.RefPrevious)
	}
	return p, nil
}

// oneVersion is the version every host keeps under ref, or, when the hosts
// disagree or one keeps none, "" and which hosts keep what ("v1 on web-1;
// (none) on web-2") for the refusal.
func oneVersion(hosts []HostDefinitions, ref definition.Ref) (string, string) {
	byVersion := map[string][]string{}
	var order []string
	for _, h := range hosts {
		v := "(none)"
		if x := refOf(h.Defs, ref); x != nil {
			v = x.Version
		}
		if _, ok := byVersion[v]; !ok {
			order = append(order, v)
		}
		byVersion[v] = append(byVersion[v], h.Host)
	}
	if len(order) == 1 && order[0] != "(none)" {
		return order[0], ""
	}
	var parts []string
	for _, v := range order {
		parts = append(parts, fmt.Sprintf("%s on %s", v, strings.Join(byVersion[v], ", ")))
	}
	return "", strings.Join(parts, "; ")
}

// BuildFunc builds the Options of a deploy of version to the fleet for its
// load balancer's kind (ForFleet, or the HAProxy driver's ForFleet).
type BuildFunc func(ctx context.Context, version string) (Options, error)

// ForRollback builds the Options of `mythex rollback`: the rolling deploy
// (drain handshake, capacity checks, look twice, sweep, last good recorded)
// of a version the hosts keep, each host publishing again its own stored
// definition of it, byte for byte as it was first published. It connects to
// every host through agents, asks each what it keeps, decides with
// PlanRollback, reads the chosen definitions back from the agents, then
// lets build make the rest of the deploy (the load balancer, the checks of
// mythex.yml) for that version and puts the stored definitions in place of
// the ones build resolved from deploy.compose. Errors wrap ErrPreflight
// (and ErrNotRetained when the version cannot be had): nothing was changed.
func ForRollback(ctx context.Context, cfg *fleet.Loaded, to, agentToken string, agents Connector, build BuildFunc) (Options, RollbackPlan, error) {
	if to != "" {
		if err := definition.CheckVersion(to); err != nil {
			return Options{}, RollbackPlan{}, fmt.Errorf("%w: --to: %w", ErrPreflight, err)
		}
	}
	if len(cfg.Hosts) == 0 {
		return Options{}, RollbackPlan{}, &fleet.FieldError{File: cfg.Path, Field: "hosts", Msg: "no hosts: list the servers to roll back"}
	}
	clients, err := ConnectAll(ctx, cfg, agentToken, agents)
	if err != nil {
		return Options{}, RollbackPlan{}, err
	}
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hosts := make([]HostDefinitions, len(clients))
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			st, err := c.Status(qctx)
			hosts[i], errs[i] = HostDefinitions{Host: cfg.Hosts[i].Name, Defs: st.Definitions}, err
			if err != nil {
				errs[i] = fmt.Errorf("host %s: %w", cfg.Hosts[i].Name, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Options{}, RollbackPlan{}, fmt.Errorf("%w, nothing was changed: %w", ErrPreflight, err)
	}
	plan, err := PlanRollback(hosts, to)
	if err != nil {
		return Options{}, RollbackPlan{}, fmt.Errorf("%w, nothing was changed: %w", ErrPreflight, err)
	}
	defs := make([][]byte, len(clients))
	for i, c := range clients {
		wg.Go(func() {
			name := cfg.Hosts[i].Name
			b, err := c.Definition(qctx, string(plan.Refs[i]))
			if err != nil {
				errs[i] = fmt.Errorf("host %s: read its %s definition: %w", name, plan.Refs[i], err)
				return
			}
			d, err := definition.Decode(b)
			if err != nil {
				errs[i] = fmt.Errorf("host %s: its %s definition: %w", name, plan.Refs[i], err)
				return
			}
			if d.Version != plan.Version {
				// It changed between the two questions: another deploy.
				errs[i] = fmt.Errorf("host %s: its %s definition is now %s, not %s; try again", name, plan.Refs[i], d.Version, plan.Version)
				return
			}
			if err := CheckServices(cfg, name, d); err != nil {
				errs[i] = fmt.Errorf("host %s: its %s definition: %w", name, plan.Refs[i], err)
				return
			}
			defs[i] = b
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Options{}, RollbackPlan{}, fmt.Errorf("%w, nothing was changed: %w", ErrPreflight, err)
	}
	o, err := build(ctx, plan.Version)
	if err != nil {
		return Options{}, RollbackPlan{}, err
	}
	if len(o.Hosts) != len(defs) {
		return Options{}, RollbackPlan{}, fmt.Errorf("%w: the deploy lists %d hosts, the fleet %d", ErrPreflight, len(o.Hosts), len(defs))
	}
	for i := range o.Hosts {
		if o.Hosts[i].Name != cfg.Hosts[i].Name {
			return Options{}, RollbackPlan{}, fmt.Errorf("%w: host %d is %s in the deploy, %s in the fleet", ErrPreflight, i, o.Hosts[i].Name, cfg.Hosts[i].Name)
		}
		o.Hosts[i].Definition = defs[i]
	}
	o.Version = plan.Version
	return o, plan, nil
}
