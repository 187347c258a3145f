package fleet

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Encode writes c as mythex.yml that Load reads back to an equal Config:
// durations as Go duration strings ("1.5s"), zero-valued fields left out.
// Tools that generate fleets (the demo, test harnesses) use it.
func Encode(c Config) ([]byte, error) {
	n, err := encodeValue(reflect.ValueOf(c))
	if err != nil {
		return nil, err
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("encode fleet config: %w", err)
	}
	return b, nil
}

func encodeValue(v reflect.Value) (*yaml.Node, error) {
	switch {
	case v.Type() == durationType:
		return scalar(fmt.Sprint(v.Interface())), nil
	case v.Kind() == reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" || v.Field(i).IsZero() {
				continue
			}
			val, err := encodeValue(v.Field(i))
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, scalar(name), val)
		}
		return m, nil
	case v.Kind() == reflect.Slice:
		s := &yaml.Node{Kind: yaml.SequenceNode}
		for i := range v.Len() {
			val, err := encodeValue(v.Index(i))
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, val)
		}
		return s, nil
	case v.Kind() == reflect.Map:
		m := &yaml.Node{Kind: yaml.MappingNode}
		keys := v.MapKeys()
		strs := make([]string, len(keys))
		for i, k := range keys {
			strs[i] = k.String()
		}
		slices.Sort(strs)
		for _, k := range strs {
			m.Content = append(m.Content, scalar(k), scalar(fmt.Sprint(v.MapIndex(reflect.ValueOf(k)).Interface())))
		}
		return m, nil
	case v.Kind() == reflect.Int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}, nil
	case v.Kind() == reflect.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}, nil
	case v.Kind() == reflect.String:
		return scalar(v.String()), nil
	}
	return nil, fmt.Errorf("encode fleet config: unsupported field kind %s", v.Kind())
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}
