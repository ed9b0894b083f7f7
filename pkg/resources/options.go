package resources

import (
	"strings"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// Defaults the operator writes into each member's options when the
// cluster's spec leaves them out (docs/maintenance.md documents them).
const (
	// MaxDefaultQuota is etcd's suggested largest backend (8 GiB): the
	// default quota never goes above it, however big the volume.
	MaxDefaultQuota = int64(8) << 30
	// walReserve is what the default quota leaves on the volume for the
	// WAL before anything else: etcd keeps 5 WAL files of 64 MiB and
	// writes a sixth. A volume under 768 MiB reserves half of itself.
	walReserve = int64(6*64) << 20
	// DefaultCompactionMode and DefaultCompactionRetention turn on
	// auto-compaction when the spec sets neither: history older than an
	// hour is compacted, so compaction frees pages for defragmentation to
	// give back, and a watcher can still resume from up to an hour ago.
	DefaultCompactionMode      = "periodic"
	DefaultCompactionRetention = "1h"
	// DefaultRevisionRetention is the retention of revision mode when the
	// spec sets the mode alone (etcd's own default, 0, would turn
	// compaction off).
	DefaultRevisionRetention = "10000"
	// NoSpaceKeepRevisions is how many revisions a NOSPACE repair keeps
	// when compacting, unless revision mode keeps more.
	NoSpaceKeepRevisions = int64(1000)
)

// EtcdDefaultQuota is the quota etcd enforces when none is set, or 0.
const EtcdDefaultQuota = int64(2) << 30

// EffectiveQuota is the quota etcd enforces for a member's options.
func EffectiveQuota(q *int64) int64 {
	if q == nil || *q <= 0 {
		return EtcdDefaultQuota
	}
	return *q
}

// DefaultQuota is the backend quota for a volume of size bytes: half of
// what is left after the WAL's reserve (384 MiB, or half of a smaller
// volume), capped at MaxDefaultQuota. Half, because the database
// needs room for a second copy of itself at times: a defragmentation
// writes the new file before it removes the old, and a member that is sent
// a snapshot holds it beside its database. So the database reaches its
// quota, and etcd raises NOSPACE and refuses writes, before the volume is
// full and the WAL cannot be written.
func DefaultQuota(size int64) int64 {
	reserve := min(size/2, walReserve)
	return min((size-reserve)/2, MaxDefaultQuota)
}

// MemberOptions are the etcd options every member of the cluster runs
// with: the spec's, with the defaults above for what it leaves out. They
// are written into each EtcdMember, so that growing the storage (which
// grows the default quota) is a rolling change like any other option.
//
// legacy is true for a cluster whose members were made before these
// defaults (their options have no quota): it keeps etcd's own defaults (a
// 2 GiB quota, no compaction). Bringing a smaller quota to a running
// database could put it over its quota at the first write, and turning
// compaction on would drop history its watchers may resume from. Setting
// the options in the spec applies them.
func MemberOptions(c *etcdv1.EtcdCluster, legacy bool) etcdv1.EtcdOptions {
	o := *c.Spec.Options.DeepCopy()
	if legacy {
		return o
	}
	if o.QuotaBackendBytes == nil {
		q := DefaultQuota(storageSize(c.Spec.Storage).Value())
		o.QuotaBackendBytes = &q
	}
	switch {
	case o.AutoCompactionMode == "" && o.AutoCompactionRetention == "":
		o.AutoCompactionMode, o.AutoCompactionRetention = DefaultCompactionMode, DefaultCompactionRetention
	case o.AutoCompactionMode == "revision" && o.AutoCompactionRetention == "":
		o.AutoCompactionRetention = DefaultRevisionRetention
	case o.AutoCompactionRetention == "":
		o.AutoCompactionRetention = DefaultCompactionRetention
	}
	return o
}

// MaxLearners is a member's --max-learners for its etcd version: limit on
// 3.6 and later (etcd's default, 1, is left implicit: 0), none on 3.5,
// which has no such flag.
func MaxLearners(version string, limit int32) int32 {
	if limit <= 1 || strings.HasPrefix(version, "3.5.") {
		return 0
	}
	return limit
}
