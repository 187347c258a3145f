package demo

import (
	"strings"
	"testing"
)

func TestOptions_CheckFlags(t *testing.T) {
	ok := Options{Hosts: 3, Rate: 200, Deploys: 1, Profile: ProfileAfter, LB: LBEmbedded, Runtime: RuntimeProcess}
	cases := []struct {
		name              string
		edit              func(*Options)
		scaleSet, deploys bool
		want              string
	}{
		{"defaults", func(*Options) {}, false, false, ""},
		{"one host", func(o *Options) { o.Hosts = 1 }, false, false, "--hosts 1"},
		{"no rate", func(o *Options) { o.Rate = 0 }, false, false, "--rate"},
		{"scale given as 0", func(o *Options) { o.TimeScale = 0 }, true, false, "--time-scale"},
		{"unknown lb", func(o *Options) { o.LB = "nginx" }, false, false, `--lb "nginx"`},
		{"unknown fault", func(o *Options) { o.Fault = "meteor" }, false, false, `--fault "meteor"`},
		{"fault with deploys", func(o *Options) { o.Fault = FaultNames()[0]; o.Deploys = 2 }, false, true, "leave out --deploys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			err := o.CheckFlags(tc.scaleSet, tc.deploys)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("CheckFlags = %v, want %q", err, tc.want)
			}
		})
	}
}
