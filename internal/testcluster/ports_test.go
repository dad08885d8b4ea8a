package testcluster

import "testing"

// TestFreePortsNeverRepeat: ports handed out by separate calls are all
// distinct, although each call releases its ports before returning (the
// kernel would offer some of them again).
func TestFreePortsNeverRepeat(t *testing.T) {
	seen := map[int]bool{}
	for range 300 {
		ports, err := freePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ports {
			if seen[p] {
				t.Fatalf("port %d handed out twice", p)
			}
			seen[p] = true
		}
	}
}
