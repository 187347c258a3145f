package fleet

import (
	"maps"
	"reflect"
)

// Scaled returns a copy of c with every duration multiplied by factor (0.1 makes
// a 15s drain 1.5s). Counts and thresholds are unchanged, so every timing
// relation keeps its sign. Demos and end-to-end tests use it to run the real
// numbers faster. Hosts are copied, not shared. factor must be > 0.
func (c Config) Scaled(factor float64) Config {
	c.Hosts = append([]Host(nil), c.Hosts...)
	for i := range c.Hosts {
		c.Hosts[i].Vars = maps.Clone(c.Hosts[i].Vars)
	}
	c.Deploy.Verify = append([]string(nil), c.Deploy.Verify...)
	c.Deploy.TargetServices = append([]string(nil), c.Deploy.TargetServices...)
	scaleValue(reflect.ValueOf(&c).Elem(), factor)
	return c
}

func scaleValue(v reflect.Value, factor float64) {
	switch {
	case v.Type() == durationType:
		v.SetInt(int64(float64(v.Int()) * factor))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			scaleValue(v.Field(i), factor)
		}
	case v.Kind() == reflect.Slice:
		for i := range v.Len() {
			scaleValue(v.Index(i), factor)
		}
	}
}
