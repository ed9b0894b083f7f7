// Package shard splits EtcdClusters over a fixed number of shards: a
// stable hash of a cluster's namespace and name picks its shard, so every
// operator replica computes the same answer without asking the others.
package shard

import (
	"hash/fnv"
	"strconv"
)

// Of returns the shard, in [0, n), of the cluster namespace/name.
func Of(namespace, name string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(namespace))
	_, _ = h.Write([]byte{'/'})
	_, _ = h.Write([]byte(name))
	// A final mix spreads FNV's low bits, which the modulo keeps.
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return int(x % uint64(n))
}

// Label is the value of the shard label for shard i.
func Label(i int) string { return strconv.Itoa(i) }

// LeaseName is the name of the Lease of shard i.
func LeaseName(i int) string { return "raftsman-shard-" + strconv.Itoa(i) }
