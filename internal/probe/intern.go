package probe

// maxInterned bounds an interner; past it the table starts over.
const maxInterned = 64

// interner turns header values into strings, allocating each distinct value
// once: the versions, hosts and markers of a target repeat, and a map lookup
// keyed by string(b) does not allocate. Not safe for concurrent use (one per
// worker).
type interner struct {
	m map[string]string
}

// of returns b as a string; "" for an empty b.
func (in *interner) of(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	if in.m == nil || len(in.m) >= maxInterned {
		in.m = make(map[string]string, 8)
	}
	s := string(b)
	in.m[s] = s
	return s
}
