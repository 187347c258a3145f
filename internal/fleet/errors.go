package fleet

import (
	"errors"
	"fmt"
)

// ErrInvalid is matched (errors.Is) by every error Load and Validate return for
// bad input: an unknown key, a missing required field, a malformed or negative
// duration, a value out of range. The CLI maps it to exit code 2.
var ErrInvalid = errors.New("invalid fleet config")

// FieldError is one problem with one field of mythex.yml. Its message names the
// file, the line, the field's dotted path and what to do about it.
type FieldError struct {
	// File is the path of the config file; empty for a Config built in code.
	File string
	// Line is the 1-based line of the offending key or value; 0 when unknown.
	Line int
	// Field is the dotted path of the field, e.g. load_balancer.health_check.interval.
	Field string
	// Msg says what is wrong and how to fix it.
	Msg string
}

// Error formats the problem as "file:line: field: msg".
func (e *FieldError) Error() string {
	loc := e.File
	if loc == "" {
		loc = "mythex.yml"
	}
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Field, e.Msg)
}

// Is reports whether target is ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// problems collects FieldErrors with positions looked up by field path.
type problems struct {
	file  string
	lines map[string]int
	errs  []error
}

func (p *problems) add(field, format string, args ...any) {
	p.errs = append(p.errs, &FieldError{File: p.file, Line: p.line(field), Field: field, Msg: fmt.Sprintf(format, args...)})
}

// line finds the line of field, or of its nearest ancestor present in the file.
func (p *problems) line(field string) int {
	for f := field; f != ""; f = parent(f) {
		if l, ok := p.lines[f]; ok {
			return l
		}
	}
	return 0
}

func (p *problems) err() error { return errors.Join(p.errs...) }

func parent(field string) string {
	for i := len(field) - 1; i >= 0; i-- {
		if field[i] == '.' || field[i] == '[' {
			return field[:i]
		}
	}
	return ""
}
