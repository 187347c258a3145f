package testbin

import (
	"errors"
	"io"
	"os/exec"
)

// Run runs the program bin with args, as a user's shell would (no shell
// involved: each arg is one argument), with the environment env (nil: this
// test process's own), its standard output and error to stdout and stderr,
// and returns its exit status: 0, the code it exited with, or -1 when a
// signal ended it (exec.ExitError's ExitCode). The error is for a program
// that could not be started or waited for.
func Run(bin string, env []string, stdout, stderr io.Writer, args ...string) (int, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}
