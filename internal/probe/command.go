package probe

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// CommandWaitDelay is how long a command gets to exit after it was asked to
// (on interrupt) before it is killed.
const CommandWaitDelay = 10 * time.Second

// RunCommand runs argv (path resolved, never through a shell) to its end,
// with the given streams. On ctx's end the command is interrupted, then
// killed after CommandWaitDelay.
//
// The command gets $MYTHEX_MEASURE_START, the prober's second 0 in Unix
// nanoseconds: `mythex deploy` counts its progress lines' seconds from it.
func RunCommand(ctx context.Context, path string, argv []string, probeStart time.Time, stdin io.Reader, stdout, stderr io.Writer) *CommandResult {
	c := exec.CommandContext(ctx, path, argv[1:]...)
	c.Args = argv
	c.Env = append(os.Environ(), fmt.Sprintf("%s=%d", StartEnv, probeStart.UnixNano()))
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = CommandWaitDelay
	start := time.Now()
	err := c.Run()
	res := &CommandResult{Argv: argv, Elapsed: time.Since(start)}
	if c.ProcessState != nil {
		res.ExitCode = c.ProcessState.ExitCode()
	} else {
		res.ExitCode = -1
	}
	if err != nil {
		res.Error = err.Error()
		if res.ExitCode == 0 {
			res.ExitCode = -1
		}
	}
	return res
}

// StartEnv carries the prober's second 0 (Unix nanoseconds) to the
// command measure runs.
const StartEnv = "MYTHEX_MEASURE_START"

// StartFromEnv is the prober's second 0 from $MYTHEX_MEASURE_START, when
// this process runs under `mythex measure`; ok false otherwise or when the
// value is not a time within a day of now.
func StartFromEnv(now time.Time) (time.Time, bool) {
	ns, err := strconv.ParseInt(os.Getenv(StartEnv), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	t := time.Unix(0, ns)
	if d := now.Sub(t); d < -time.Minute || d > 24*time.Hour {
		return time.Time{}, false
	}
	return t, true
}
