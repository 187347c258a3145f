package fleet

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Loaded is a validated Config with where it came from.
type Loaded struct {
	Config
	// Path is the absolute path of the file it was read from.
	Path string
	// Set holds the dotted paths of every field the file set explicitly.
	Set map[string]bool
}

// Dir is the directory of the config file; relative paths in it (compose) are
// resolved against it.
func (l *Loaded) Dir() string { return filepath.Dir(l.Path) }

// AdminTokenPath is load_balancer.admin_token_file resolved against Dir (an
// absolute path stays as it is); "" when it is not set.
func (l *Loaded) AdminTokenPath() string {
	p := l.LoadBalancer.AdminTokenFile
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(l.Dir(), p)
}

// Load reads and validates mythex.yml at path. Decoding is strict: an unknown
// key, a missing required field, a malformed or negative duration, a wrong type
// or an out-of-range value each give a *FieldError naming file, line and field;
// all problems are returned at once, joined, and match ErrInvalid. An unreadable
// file gives the os error, wrapped.
func Load(path string) (*Loaded, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read fleet config: %w; give the fleet's config with -f FILE (examples/seed/after.yml is a complete one)", err)
	}
	if err != nil {
		return nil, fmt.Errorf("read fleet config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet config: %w", err)
	}
	return Parse(abs, data)
}

// Parse decodes and validates data as mythex.yml; file names it in errors.
// Errors are as for Load.
func Parse(file string, data []byte) (*Loaded, error) {
	p := &problems{file: file, lines: map[string]int{}}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &FieldError{File: file, Field: "(document)", Msg: "file is empty; see examples/seed/after.yml for a complete config"}
		}
		// go.yaml.in reports "yaml: line N: what"; put N where a reader looks.
		msg, line := err.Error(), 0
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return nil, &FieldError{File: file, Line: line, Field: "(document)", Msg: "not valid YAML: " + msg}
	}
	if len(doc.Content) == 0 {
		return nil, &FieldError{File: file, Field: "(document)", Msg: "file is empty; see examples/seed/after.yml for a complete config"}
	}
	root := doc.Content[0]
	set := map[string]bool{}
	w := walker{p: p, set: set}
	w.walk(root, reflect.TypeFor[Config](), "")
	if err := p.err(); err != nil {
		return nil, err
	}
	cfg := Default()
	if err := root.Decode(&cfg); err != nil {
		// The walk checked every type; this is a bug or a YAML corner case.
		return nil, &FieldError{File: file, Field: "(document)", Msg: err.Error()}
	}
	cfg.finish(set)
	cfg.validate(p)
	if err := p.err(); err != nil {
		return nil, err
	}
	return &Loaded{Config: cfg, Path: file, Set: set}, nil
}

// walker checks a YAML node tree against the Config type: unknown keys, required
// fields, scalar types and durations. It records the line of every field.
type walker struct {
	p   *problems
	set map[string]bool
}

var durationType = reflect.TypeFor[time.Duration]()

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	w.p.lines[path] = n.Line
	switch {
	case t == durationType:
		w.duration(n, path)
	case t.Kind() == reflect.Struct:
		w.mapping(n, t, path)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.p.add(path, "expected a list, got %s", describe(n))
			return
		}
		for i, c := range n.Content {
			w.walk(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case t.Kind() == reflect.Int:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			w.p.add(path, "expected a whole number, got %s", describe(n))
			return
		}
		if _, err := strconv.Atoi(n.Value); err != nil {
			w.p.add(path, "expected a whole number, got %q", n.Value)
		}
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
			w.p.add(path, "expected a string, got %s", describe(n))
		}
	}
}

func (w *walker) duration(n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode {
		w.p.add(path, "expected a duration like 5s, got %s", describe(n))
		return
	}
	if n.Tag == "!!int" || n.Tag == "!!float" {
		w.p.add(path, "%s is a bare number; durations need a unit, e.g. %ss", n.Value, n.Value)
		return
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		w.p.add(path, "malformed duration %q; use a Go duration like 5s, 1m30s or 250ms", n.Value)
		return
	}
	if d < 0 {
		w.p.add(path, "negative duration %s; durations must be 0 or more", n.Value)
	}
}

func (w *walker) mapping(n *yaml.Node, t reflect.Type, path string) {
	if n.Kind != yaml.MappingNode {
		w.p.add(path, "expected a mapping of keys, got %s", describe(n))
		return
	}
	fields := map[string]reflect.StructField{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f
		names = append(names, name)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		w.p.lines[fp] = k.Line
		f, ok := fields[k.Value]
		if !ok {
			if strings.HasPrefix(k.Value, "x-") {
				continue // extension keys, as in compose
			}
			msg := "unknown key"
			if s := closest(k.Value, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else {
				msg += fmt.Sprintf("; known keys here: %s", strings.Join(names, ", "))
			}
			w.p.add(fp, "%s", msg)
			continue
		}
		if seen[k.Value] {
			w.p.add(fp, "key given twice; keep one")
			continue
		}
		seen[k.Value] = true
		w.set[fp] = true
		w.walk(v, f.Type, fp)
	}
	for _, name := range names {
		if fields[name].Tag.Get("mythex") == "required" && !seen[name] {
			w.p.errs = append(w.p.errs, &FieldError{File: w.p.file, Line: n.Line, Field: join(path, name),
				Msg: "required field is missing; add it (see examples/seed/after.yml)"})
		}
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.Tag == "!!null" {
		return "nothing (null)"
	}
	return fmt.Sprintf("%q", n.Value)
}

// closest returns the known name within edit distance 2 of s, if any.
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
