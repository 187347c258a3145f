package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"mvdan.cc/sh/v3/syntax"
)

// exampleCall is one invocation of mythex found in a command's Example: the
// words after the program (mythex, ./mythex or go run ./cmd/mythex).
type exampleCall struct {
	line string   // the example's source line, for messages
	args []string // the words after the program, quotes removed
}

// exampleCalls parses an Example as the shell would and returns every call of
// mythex in it, including one run by `mythex measure -- mythex ...`. A word
// with an expansion ($V, "$(...)") stands for one argument.
func exampleCalls(t *testing.T, example string) []exampleCall {
	t.Helper()
	f, err := syntax.NewParser().Parse(strings.NewReader(example), "")
	if err != nil {
		t.Fatalf("the example is not a valid shell script: %v\n%s", err, example)
		return nil
	}
	var calls []exampleCall
	syntax.Walk(f, func(n syntax.Node) bool {
		ce, ok := n.(*syntax.CallExpr)
		if !ok || len(ce.Args) == 0 {
			return true
		}
		words := make([]string, len(ce.Args))
		for i, w := range ce.Args {
			words[i] = wordText(w)
		}
		line := strings.Split(example, "\n")[ce.Pos().Line()-1]
		for rest := words; ; {
			args, ok := afterProgram(rest)
			if !ok {
				break
			}
			calls = append(calls, exampleCall{line: strings.TrimSpace(line), args: args})
			// `mythex measure ... -- mythex deploy ...` runs a second mythex.
			i := slices.Index(args, "--")
			if i < 0 {
				break
			}
			rest = args[i+1:]
		}
		return true
	})
	return calls
}

// afterProgram returns the arguments of words when words run mythex.
func afterProgram(words []string) ([]string, bool) {
	switch {
	case len(words) >= 1 && (words[0] == "mythex" || words[0] == "./mythex"):
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/mythex":
		return words[3:], true
	}
	return nil, false
}

// wordText is a shell word as the program receives it, with every expansion
// replaced by a placeholder value.
func wordText(w *syntax.Word) string {
	var b strings.Builder
	var parts func([]syntax.WordPart)
	parts = func(ps []syntax.WordPart) {
		for _, p := range ps {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				parts(p.Parts)
			default: // $V, $(...), $((...)): one value
				b.WriteString("x")
			}
		}
	}
	parts(w.Parts)
	return b.String()
}

// walkCommands calls fn for root and every command below it that a user can
// run or list, skipping cobra's own help and completion commands.
func walkCommands(root *cobra.Command, fn func(*cobra.Command)) {
	fn(root)
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		walkCommands(c, fn)
	}
}

// checkExampleCall parses one example call against a fresh command tree (flag
// values stick to a tree) and returns the command it runs, or an error that
// says why a user typing it would be refused.
func checkExampleCall(call exampleCall) (*cobra.Command, error) {
	root := newRootCmd()
	cmd, rest, err := root.Find(call.args)
	if err != nil {
		return nil, err
	}
	if cmd.DisableFlagParsing {
		return cmd, nil // sample-app: its flags are the sample app's own, parsed by it
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return cmd, err
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return cmd, err
	}
	if err := cmd.ValidateRequiredFlags(); err != nil {
		return cmd, err
	}
	if err := cmd.ValidateFlagGroups(); err != nil {
		return cmd, err
	}
	// A fleet config of the repository's examples must exist: examples run
	// from the repository's root, two levels above this package.
	if f := cmd.Flags().Lookup("file"); f != nil && f.Changed && strings.HasPrefix(f.Value.String(), "examples/") {
		if _, err := os.Stat(filepath.Join("..", "..", f.Value.String())); err != nil {
			return cmd, fmt.Errorf("-f %s: %w", f.Value.String(), err)
		}
	}
	return cmd, nil
}

// TestEveryCommandHasAnExampleThatParses walks the command tree: every command
// has an Example, at least one of the example's calls runs that command (or one
// below it), and every call of mythex in every example names a real command
// with flags and arguments that command accepts — what `--help` shows is what a
// user can type. Nothing runs.
func TestEveryCommandHasAnExampleThatParses(t *testing.T) {
	t.Parallel()
	walkCommands(newRootCmd(), func(c *cobra.Command) {
		path := c.CommandPath()
		t.Run(path, func(t *testing.T) {
			if strings.TrimSpace(c.Example) == "" {
				t.Fatalf("%s has no Example: `%s --help` must show at least one that runs on examples/local", path, path)
			}
			calls := exampleCalls(t, c.Example)
			if len(calls) == 0 {
				t.Fatalf("%s: no example runs mythex:\n%s", path, c.Example)
			}
			own := false
			for _, call := range calls {
				got, err := checkExampleCall(call)
				if err != nil {
					t.Errorf("%s: example %q: %v", path, call.line, err)
					continue
				}
				if got == c || strings.HasPrefix(got.CommandPath()+" ", path+" ") {
					own = true
				}
			}
			if !own {
				t.Errorf("%s: no example runs %s itself (or one of its subcommands)", path, path)
			}
		})
	})
}

// TestExampleCheckCatchesBadExamples proves the walk above can fail: an unknown
// flag, a misspelt command, a missing required value, an extra argument and a
// fleet config of examples/ that does not exist are each refused, and good
// calls pass.
func TestExampleCheckCatchesBadExamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		example string
		wantErr string
	}{
		{name: "good", example: `mythex check -f examples/local/mythex.yml --json | jq .`},
		{name: "go run, continued line", example: "go run ./cmd/mythex status \\\n  -f examples/local/mythex.yml --json"},
		{name: "env and command substitution", example: `V=1 mythex deploy -f m.yml --version "$(git rev-parse HEAD)"`},
		{name: "unknown flag", example: `mythex check --no-such-flag`, wantErr: "unknown flag: --no-such-flag"},
		{name: "flag without its value", example: `mythex deploy -f m.yml --version`, wantErr: "flag needs an argument"},
		{name: "bad duration", example: `mythex measure --url http://127.0.0.1:9080/ --duration 3`, wantErr: "invalid argument"},
		{name: "extra argument", example: `mythex version extra`, wantErr: "unknown command"},
		{name: "measure runs a bad deploy", example: `mythex measure --url http://127.0.0.1:9080/ -- mythex deploy --versoin v2`, wantErr: "unknown flag: --versoin"},
		{name: "required flag missing", example: `mythex deploy -f m.yml`, wantErr: `required flag(s) "version" not set`},
		{name: "example config that is not there", example: `mythex status -f examples/nowhere/mythex.yml`, wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := exampleCalls(t, tt.example)
			if len(calls) == 0 {
				t.Fatalf("no call of mythex found in %q", tt.example)
			}
			var errs []string
			for _, call := range calls {
				if _, err := checkExampleCall(call); err != nil {
					errs = append(errs, err.Error())
				}
			}
			got := strings.Join(errs, "; ")
			switch {
			case tt.wantErr == "" && got != "":
				t.Fatalf("want no error, got %s", got)
			case tt.wantErr != "" && !strings.Contains(got, tt.wantErr):
				t.Fatalf("want an error containing %q, got %q", tt.wantErr, got)
			}
		})
	}
}
