package demo

import (
	"net"
	"testing"
)

// TestFreePorts: ports are distinct across calls, free (bindable) when
// returned, and below the kernel's ephemeral range where it is known, so no
// bind to port 0 or outgoing connection elsewhere takes them meanwhile.
func TestFreePorts(t *testing.T) {
	t.Parallel()
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 3 {
		ports, err := freePorts(17)
		if err != nil {
			t.Fatal(err)
		}
		if len(ports) != 17 {
			t.Fatalf("%d ports, want 17", len(ports))
		}
		for _, p := range ports {
			if seen[p] {
				t.Errorf("port %d handed out twice", p)
			}
			seen[p] = true
			if low > minFleetPort && (p < minFleetPort || p >= low) {
				t.Errorf("port %d outside [%d, %d): inside the ephemeral range", p, minFleetPort, low)
			}
			l, err := net.Listen("tcp", addr(p))
			if err != nil {
				t.Errorf("port %d is not free: %v", p, err)
				continue
			}
			l.Close()
		}
	}
}
