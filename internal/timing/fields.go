package timing

import (
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mythex/mythex/internal/fleet"
)

// numField is one numeric field of fleet.Config (a time.Duration or an int),
// found by reflection so that a field added to the config is seen here too.
type numField struct {
	// path is the dotted mythex.yml path, e.g. drain.serve_period. Fields
	// inside a list are written with "[]", e.g. hosts[].port.
	path string
	// duration says the field is a time.Duration; otherwise it is a count.
	duration bool
	// index locates the field for reflect.Value.FieldByIndex; nil for fields
	// inside a list, which have no single location.
	index []int
}

var (
	fieldsOnce sync.Once
	fieldList  []numField
	fieldByKey map[string]numField
)

// numericFields returns every numeric field of fleet.Config in declaration
// order.
func numericFields() []numField {
	fieldsOnce.Do(func() {
		fieldList = collectFields(reflect.TypeFor[fleet.Config](), "", nil, false)
		fieldByKey = make(map[string]numField, len(fieldList))
		for _, f := range fieldList {
			fieldByKey[f.path] = f
		}
	})
	return fieldList
}

// lookupField returns the numeric field at path.
func lookupField(path string) (numField, bool) {
	numericFields()
	f, ok := fieldByKey[path]
	return f, ok
}

var durationType = reflect.TypeFor[time.Duration]()

func collectFields(t reflect.Type, prefix string, index []int, inList bool) []numField {
	var out []numField
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		idx := append(append([]int(nil), index...), i)
		if inList {
			idx = nil
		}
		ft := sf.Type
		switch {
		case ft == durationType:
			out = append(out, numField{path: path, duration: true, index: idx})
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Int64:
			out = append(out, numField{path: path, index: idx})
		case ft.Kind() == reflect.Struct:
			out = append(out, collectFields(ft, path, idx, inList)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, collectFields(ft.Elem(), path+"[]", nil, true)...)
		}
	}
	return out
}

// get returns the field's value in c: nanoseconds for a duration, the count
// otherwise.
func (f numField) get(c *fleet.Config) int64 {
	return reflect.ValueOf(c).Elem().FieldByIndex(f.index).Int()
}

// set stores v in the field of c.
func (f numField) set(c *fleet.Config, v int64) {
	reflect.ValueOf(c).Elem().FieldByIndex(f.index).SetInt(v)
}

// format writes v the way mythex.yml does for this field.
func (f numField) format(v int64) string {
	if f.duration {
		return fmtDur(time.Duration(v))
	}
	return formatCount(v)
}

func formatCount(v int64) string { return strconv.FormatInt(v, 10) }

// FieldValue returns the value of the numeric field at the dotted mythex.yml
// path in c — nanoseconds for a duration, the count otherwise — and whether
// the path names a numeric field outside a list.
func FieldValue(c *fleet.Config, path string) (v int64, isDuration, ok bool) {
	f, ok := lookupField(path)
	if !ok || f.index == nil {
		return 0, false, false
	}
	return f.get(c), f.duration, true
}

// SetFieldValue stores v (nanoseconds or a count) in the numeric field at
// path; it reports false, changing nothing, when path names none.
func SetFieldValue(c *fleet.Config, path string, v int64) bool {
	f, ok := lookupField(path)
	if !ok || f.index == nil {
		return false
	}
	f.set(c, v)
	return true
}
