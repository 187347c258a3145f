package nativecfg

import (
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Source finds the line of a key path in one YAML or JSON document. It
// parses lazily, the first time a line is asked for: readers decode with the
// platform's own types, and only a finding needs a position.
type Source struct {
	data []byte
	// base is the line of data's first line in its file (documents after the
	// first of a multi-document stream start further down).
	base int
	once sync.Once
	root *yaml.Node
}

// NewSource returns a Source for one document whose first line is line base
// (1 for a whole file).
func NewSource(data []byte, base int) *Source { return &Source{data: data, base: base} }

// At returns a Loc for path in this source.
func (src *Source) At(file, path string) Loc { return Loc{File: file, Path: path, src: src} }

// Line returns the line of path, or of its deepest ancestor present when the
// key itself is absent (where it belongs); 0 when nothing of it is.
func (src *Source) Line(path string) int {
	src.once.Do(func() {
		var n yaml.Node
		if yaml.Unmarshal(src.data, &n) == nil && len(n.Content) > 0 {
			src.root = n.Content[0]
		}
	})
	node := src.root
	if node == nil {
		return 0
	}
	line := 0
	for _, seg := range splitPath(path) {
		next := child(node, seg)
		if next == nil {
			break
		}
		node = next
		line = node.Line
	}
	if line == 0 {
		return 0
	}
	return line + src.base - 1
}

// child returns the node of a mapping key (its key node, for the line) or a
// sequence index.
func child(n *yaml.Node, seg string) *yaml.Node {
	if n.Kind == yaml.SequenceNode {
		i, err := strconv.Atoi(seg)
		if err != nil || i < 0 || i >= len(n.Content) {
			return nil
		}
		return n.Content[i]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == seg {
			v := n.Content[i+1]
			if v.Kind == yaml.ScalarNode {
				return &yaml.Node{Kind: yaml.ScalarNode, Line: n.Content[i].Line, Value: v.Value}
			}
			// A mapping's or sequence's own line is that of its first
			// entry; report the key's.
			cp := *v
			cp.Line = n.Content[i].Line
			return &cp
		}
	}
	return nil
}

// splitPath splits "a.b[0].c[\"x.y/z\"]" into a, b, 0, c, x.y/z.
func splitPath(p string) []string {
	var out []string
	for p != "" {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(out, p)
			}
			seg := p[1:end]
			if strings.HasPrefix(seg, `"`) {
				// A quoted key may hold ']' — find the closing quote.
				q := strings.Index(p[2:], `"]`)
				if q < 0 {
					return append(out, p)
				}
				seg, end = p[2:2+q], 2+q+1
			}
			out = append(out, seg)
			p = p[end+1:]
		default:
			i := strings.IndexAny(p, ".[")
			if i < 0 {
				return append(out, p)
			}
			out = append(out, p[:i])
			p = p[i:]
		}
	}
	return out
}

// Key writes one key of a path: plain when it is a simple name, ["..."]
// when it holds dots or slashes (annotation and label keys).
func Key(k string) string {
	if strings.ContainsAny(k, "./[]\" ") {
		return `["` + k + `"]`
	}
	return "." + k
}
