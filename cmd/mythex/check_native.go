package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mythex/mythex/internal/nativecfg"
	"github.com/mythex/mythex/internal/nativecfg/inputs"
	"github.com/mythex/mythex/internal/termui"
)

// Output formats of `mythex check PATH...`.
const (
	formatText   = "text"
	formatJSON   = "json"
	formatGitHub = "github"
)

// nativeOpts are the flags of `mythex check PATH...`.
type nativeOpts struct {
	format      string
	strict      bool
	callTimeout time.Duration
}

// runNativeCheck judges the files at paths: exit 0 when no relation fails
// (marginal ones too, unless strict), 1 when one does, 2 when an input is not
// understood.
func runNativeCheck(out io.Writer, stdin io.Reader, paths []string, o nativeOpts) error {
	set, err := inputs.Collect(paths, stdin)
	if err != nil {
		return withCode(exitBadUse, err)
	}
	subs, err := set.Subjects(inputs.Options{CallTimeout: o.callTimeout})
	if err != nil {
		return withCode(exitBadUse, err)
	}
	if len(subs) == 0 {
		return withCode(exitBadUse, fmt.Errorf("%w: %s: recognised %s, but no workload to judge (a Deployment, StatefulSet or DaemonSet; a service; a job)",
			inputs.ErrNotUnderstood, strings.Join(paths, " "), termui.DescribeSet(set)))
	}
	verdicts := nativecfg.JudgeAll(subs)
	worst := nativecfg.Worst(verdicts)
	switch o.format {
	case formatJSON:
		err = termui.WriteNativeJSON(out, set, verdicts, worst, o.strict)
	case formatGitHub:
		err = termui.WriteNativeGitHub(out, verdicts)
	default:
		err = termui.WriteNativeText(out, set, verdicts, worst, o.strict)
	}
	if err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if nativecfg.Fails(worst, o.strict) {
		return silentExit(exitFailed)
	}
	return nil
}
