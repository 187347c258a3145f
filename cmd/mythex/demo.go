package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mythex/mythex/internal/demo"
	"github.com/mythex/mythex/internal/deployrec"
	"github.com/mythex/mythex/internal/report"
	"github.com/mythex/mythex/internal/termui"
)

func newDemoCmd() *cobra.Command {
	var (
		o          demo.Options
		asJSON     bool
		reportPath string
	)
	cmd := &cobra.Command{
		Use:   "demo [--profile after|before] [--rate 200] [--deploys 1]",
		Short: "Run the main job locally: a fleet behind the LB, a rolling deploy under load, the dropped requests counted",
		Long: `demo runs mythex's main job on this machine, with nothing to install: the
embedded load balancer, one host agent process per host (each running the
write-up's four services: api, orchestrator, gateway, publish-worker — the
sample app built into mythex), a first rollout of v1, then a rolling deploy
v1 → v2 under a constant load from the prober. It reports the requests that
reached nothing (the 502s users feel), the drain signals and app errors apart,
each host's deploy phases against their analytic lower bound, and which
versions answered over time.

--profile after runs the write-up's fixed numbers (health check every 5s,
unhealthy after 2, drain serving 15s; deregister and flip): zero requests
reach nothing. --profile before runs its broken ones (every 30s, drain 5s,
health flip only): the server leaves before the traffic does, and the prober
counts the requests that reached nothing.

--runtime docker runs the same demo with every service in a container on the
local Docker engine (examples/docker/compose.yaml; the image, FROM scratch
with this binary, is built first and removed afterwards with every container).

--lb haproxy runs it behind a real HAProxy (Debian: apt-get install haproxy)
instead of the embedded load balancer: a generated haproxy.cfg with an admin
stats socket, driven through HAProxy's Runtime API (docs/haproxy.md).

--lb alb deploys through the alb driver (aws-sdk-go-v2, SigV4-signed ELBv2 calls)
against the embedded load balancer's ELBv2 endpoint, as it would against an AWS ALB
target group, with a scaled propagation grace; each deploy reports its ELBv2 calls.

--fault NAME runs the deploy with one fault injected, under the same load,
waits for the fleet to settle and judges it: one version on every host,
recorded as last known good, verified, healthy and in rotation, and no more
requests reaching nothing than the fault's bound (the physical cost of the
fault; every request beyond it is mythex's). The faults:

` + demo.FaultHelp() + `
Every duration is multiplied by --time-scale so the demo ends in well under a
minute; the relations between them, which are what matter, stay as they are.
Ctrl-C stops it and every process it started.

--report FILE.html writes every deploy under load as one self-contained HTML
page: requests per second by outcome, each host's phases, the load
balancer's view of each target, the versions answering and the latency, on
one time axis, with the verdict, the timing invariants and the config.

Exit status: 0 when every deploy succeeded and no request reached nothing
(with --fault: when mythex handled the fault as expected), 1 otherwise, 2
for bad flags.`,
		Example: `  go run ./cmd/mythex demo
  go run ./cmd/mythex demo --profile before
  go run ./cmd/mythex demo --lb haproxy
  go run ./cmd/mythex demo --lb alb
  go run ./cmd/mythex demo --runtime docker
  go run ./cmd/mythex demo --report demo.html
  go run ./cmd/mythex demo --deploys 20 --rate 500 --json | jq '{requests, reached_nothing}'
  go run ./cmd/mythex demo --fault late-crash
  go run ./cmd/mythex demo --fault late-crash --report late-crash.html
  go run ./cmd/mythex demo --fault lb-restart --json | jq '{fault, rolled_back, fleet_version_after, reached_nothing, reached_nothing_bound}'
  go run ./cmd/mythex demo --lb haproxy --fault lb-restart`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.CheckFlags(cmd.Flags().Changed("time-scale"), cmd.Flags().Changed("deploys")); err != nil {
				return usagef("%v", err)
			}
			if err := checkReportPath(reportPath); err != nil {
				return err
			}
			if reportPath != "" {
				o.Recorder = deployrec.New("mythex "+strings.Join(os.Args[1:], " "), nil)
			}
			var out io.Writer = os.Stdout
			o.Mode = termui.Plain
			switch {
			case asJSON:
				out = nil
			case termui.IsTerminal(os.Stdout):
				o.Mode = termui.TTY
			}
			o.Out = out
			sum, err := demo.Run(cmd.Context(), o)
			if err != nil {
				if reportPath != "" && len(o.Recorder.Recording().Deploys) > 0 {
					// A demo cut short still leaves the report of what it saw.
					_ = report.WriteFile(reportPath, o.Recorder.Recording(), os.Stderr)
				}
				return err
			}
			if asJSON {
				b, _ := json.MarshalIndent(sum, "", "  ")
				fmt.Println(string(b))
			} else {
				demo.WriteSummary(os.Stdout, sum)
			}
			if reportPath != "" {
				progress := os.Stdout
				if asJSON {
					progress = os.Stderr
				}
				if err := report.WriteFile(reportPath, o.Recorder.Recording(), progress); err != nil {
					return err
				}
			}
			if !sum.OK() {
				return silentExit(exitFailed)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Profile, "profile", demo.ProfileAfter, "after (the write-up's fixed numbers) or before (its broken ones)")
	fl.Float64Var(&o.TimeScale, "time-scale", 0, fmt.Sprintf("multiply every duration by this (default %g for after, %g for before)", demo.DefaultTimeScale[demo.ProfileAfter], demo.DefaultTimeScale[demo.ProfileBefore]))
	fl.IntVar(&o.Hosts, "hosts", 3, "hosts in the fleet")
	fl.Float64Var(&o.Rate, "rate", 200, "load in requests per second during each deploy")
	fl.IntVar(&o.Deploys, "deploys", 1, "deploys under load (v1 → v2 → v3 …)")
	fl.BoolVar(&o.Keep, "keep", false, "keep the fleet's directory (config, state, logs) afterwards")
	fl.StringVar(&o.Runtime, "runtime", demo.RuntimeProcess, "what runs the services: process, or docker (containers on the local Docker engine; a static mythex for the image is built from source when this one is not)")
	fl.StringVar(&o.LB, "lb", demo.LBEmbedded, "the load balancer: embedded (mythex lb, in this process), haproxy (a real HAProxy, driven through its Runtime API) or alb (the embedded LB driven through the alb driver and its ELBv2 endpoint)")
	fl.StringVar(&o.Fault, "fault", "", "inject one fault into the deploy: "+strings.Join(demo.FaultNames(), ", "))
	fl.StringVar(&reportPath, "report", "", "write an HTML report of every deploy under load to this file (self-contained, opens offline)")
	fl.BoolVar(&asJSON, "json", false, `print {"requests", "reached_nothing", "deploys": [...]} as JSON instead of progress`)
	return cmd
}
