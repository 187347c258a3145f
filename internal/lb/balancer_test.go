package lb

import (
	"reflect"
	"testing"
)

func TestRotationOf(t *testing.T) {
	I, H, U, D, X := StateInitial, StateHealthy, StateUnhealthy, StateDraining, StateUnused
	tests := []struct {
		name         string
		states       []State
		wantIn       []int
		wantFailOpen bool
	}{
		{"no targets", nil, nil, false},
		{"healthy ones only", []State{H, U, H, I, D}, []int{0, 2}, false},
		{"one healthy among unhealthy", []State{U, U, H}, []int{2}, false},
		{"all unhealthy: fail open to all", []State{U, U, U}, []int{0, 1, 2}, true},
		{"unhealthy and initial, none healthy: fail open to every registered one", []State{U, I, D}, []int{0, 1}, true},
		{"only initial: fail open", []State{I, I}, []int{0, 1}, true},
		{"draining never takes new requests, even failing open", []State{D, U}, []int{1}, true},
		{"only draining: nothing", []State{D, D}, nil, false},
		{"only unused: nothing", []State{X}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, failOpen := rotationOf(tt.states)
			if !reflect.DeepEqual(in, tt.wantIn) || failOpen != tt.wantFailOpen {
				t.Fatalf("rotationOf(%v) = %v, %v; want %v, %v", tt.states, in, failOpen, tt.wantIn, tt.wantFailOpen)
			}
		})
	}
}

func TestParseAlgorithm(t *testing.T) {
	for _, a := range []Algorithm{RoundRobin, LeastOutstandingRequests} {
		got, err := ParseAlgorithm(a.String())
		if err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %v, %v", a.String(), got, err)
		}
	}
	if _, err := ParseAlgorithm("random"); err == nil {
		t.Error("ParseAlgorithm(random): no error")
	}
}

func targets(n int) []*Target {
	ts := make([]*Target, n)
	for i := range ts {
		ts[i] = &Target{id: string(rune('a' + i))}
	}
	return ts
}

func TestBalancer_Pick(t *testing.T) {
	t.Run("empty rotation picks nothing", func(t *testing.T) {
		if got := newBalancer(RoundRobin).pick(); got != nil {
			t.Fatalf("pick = %v, want nil", got.id)
		}
	})
	t.Run("round robin takes each in turn", func(t *testing.T) {
		b := newBalancer(RoundRobin)
		b.cur.Store(&rotation{targets: targets(3)})
		var got string
		for range 6 {
			got += b.pick().id
		}
		if got != "abcabc" {
			t.Fatalf("picks = %s, want abcabc", got)
		}
	})
	t.Run("least outstanding takes the least loaded", func(t *testing.T) {
		b := newBalancer(LeastOutstandingRequests)
		ts := targets(3)
		ts[0].inFlight.Store(5)
		ts[1].inFlight.Store(2)
		ts[2].inFlight.Store(7)
		b.cur.Store(&rotation{targets: ts})
		for range 6 {
			if got := b.pick().id; got != "b" {
				t.Fatalf("pick = %s, want b (2 in flight)", got)
			}
		}
	})
	t.Run("least outstanding spreads ties", func(t *testing.T) {
		b := newBalancer(LeastOutstandingRequests)
		b.cur.Store(&rotation{targets: targets(3)})
		seen := map[string]int{}
		for range 30 {
			seen[b.pick().id]++
		}
		if seen["a"] != 10 || seen["b"] != 10 || seen["c"] != 10 {
			t.Fatalf("picks among idle targets = %v, want 10 each", seen)
		}
	})
}

func BenchmarkBalancer_Pick(b *testing.B) {
	for _, algo := range []Algorithm{RoundRobin, LeastOutstandingRequests} {
		b.Run(algo.String(), func(b *testing.B) {
			bal := newBalancer(algo)
			ts := targets(4)
			for i, t := range ts {
				t.inFlight.Store(int64(i + 1))
			}
			bal.cur.Store(&rotation{targets: ts})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if bal.pick() == nil {
						b.Fatal("nil pick")
					}
				}
			})
		})
	}
}

// BenchmarkTargetGroup_Acquire measures routing one request: pick, count in
// flight, release.
func BenchmarkTargetGroup_Acquire(b *testing.B) {
	g := NewTargetGroup(testSettings(), GroupDeps{Logger: discardLogger(), HealthChecker: newFakeChecker()})
	defer g.Close()
	for _, a := range []string{addrA, addrB, addrC} {
		if _, err := g.Register(a, a); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t := g.acquire()
			if t == nil {
				b.Fatal("no target")
			}
			t.release()
		}
	})
}
