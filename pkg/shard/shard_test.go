package shard

import (
	"fmt"
	"testing"
)

func TestOfIsStable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ns, name string
		n        int
	}{
		{"default", "sample", 4}, {"tenant-a", "etcd", 8}, {"a", "b/c", 3}, {"", "x", 2},
	}
	for _, tt := range tests {
		first := Of(tt.ns, tt.name, tt.n)
		for range 3 {
			if got := Of(tt.ns, tt.name, tt.n); got != first {
				t.Errorf("Of(%q, %q, %d) = %d then %d", tt.ns, tt.name, tt.n, first, got)
			}
		}
		if first < 0 || first >= tt.n {
			t.Errorf("Of(%q, %q, %d) = %d, out of range", tt.ns, tt.name, tt.n, first)
		}
	}
	// Namespace and name are not simply concatenated.
	if Of("ab", "c", 1<<20) == Of("a", "bc", 1<<20) {
		t.Errorf("ab/c and a/bc share a shard out of 2^20")
	}
	if got := Of("ns", "x", 1); got != 0 {
		t.Errorf("one shard: got %d", got)
	}
}

// TestOfIsBalanced: over 10,000 clusters every shard holds its share within
// 10%, for 2 to 8 shards.
func TestOfIsBalanced(t *testing.T) {
	t.Parallel()
	const clusters = 10000
	for n := 2; n <= 8; n++ {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			t.Parallel()
			counts := make([]int, n)
			for i := range clusters {
				// Names like platforms give them: a tenant namespace each.
				counts[Of(fmt.Sprintf("tenant-%d", i), "etcd", n)]++
			}
			share := float64(clusters) / float64(n)
			for s, c := range counts {
				if d := float64(c)/share - 1; d > 0.1 || d < -0.1 {
					t.Errorf("shard %d holds %d clusters, %.1f%% off its share %.0f", s, c, d*100, share)
				}
			}
		})
	}
}
