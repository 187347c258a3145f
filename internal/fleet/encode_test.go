package fleet

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestEncode_RoundTrip(t *testing.T) {
	for _, name := range []string{"before.yml", "after.yml"} {
		t.Run(name, func(t *testing.T) {
			l, err := Load(filepath.Join("..", "..", "examples", "seed", name))
			if err != nil {
				t.Fatal(err)
			}
			c := l.Config.Scaled(0.15)
			c.Hosts[0].Vars = map[string]string{"B": "2", "A": "1"}
			b, err := Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse("gen.yml", b)
			if err != nil {
				t.Fatalf("Encode wrote a config Load refuses: %v\n%s", err, b)
			}
			if !reflect.DeepEqual(back.Config, c) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v\n%s", back.Config, c, b)
			}
			if c.Drain.ServePeriod != 2250*time.Millisecond && name == "after.yml" {
				t.Errorf("scaled serve period = %v", c.Drain.ServePeriod)
			}
		})
	}
}

func TestEncode_WritesFile(t *testing.T) {
	c := Default()
	c.Drain.ServePeriod = 1500 * time.Millisecond
	c.Drain.ShutdownTimeout = time.Second
	c.Backend.KeepAliveIdleTimeout = 75 * time.Second
	b, err := Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "mythex.yml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Load(p)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if l.Drain.ServePeriod != 1500*time.Millisecond {
		t.Errorf("serve period = %v", l.Drain.ServePeriod)
	}
}
