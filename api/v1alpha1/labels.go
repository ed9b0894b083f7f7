package v1alpha1

// Labels and annotations the operator puts on what it creates.
const (
	// ClusterLabel names the EtcdCluster an object belongs to.
	ClusterLabel = "etcd.raftsman.io/cluster"
	// ShardLabel names the operator shard of an EtcdCluster and of every
	// object made for it; an operator replica caches only the shards it
	// holds.
	ShardLabel = "etcd.raftsman.io/shard"
	// MemberLabel names the EtcdMember a Pod or PVC belongs to.
	MemberLabel = "etcd.raftsman.io/member"
	// ServingLabel is "true" on a member Pod in the client Service and
	// "false" while the member is drained (EtcdMember spec.drained); the
	// client Service selects on it.
	ServingLabel = "etcd.raftsman.io/serving"
	// NameLabel and InstanceLabel are the well-known app labels.
	NameLabel      = "app.kubernetes.io/name"
	InstanceLabel  = "app.kubernetes.io/instance"
	ManagedByLabel = "app.kubernetes.io/managed-by"

	// RetainedFromLabel on a PVC kept after its cluster was deleted
	// (spec.deletionPolicy Retain) names that cluster; RetainedMemberLabel
	// names the member. Such a PVC carries none of the labels the operator
	// selects on, so nothing of the operator touches it again.
	RetainedFromLabel   = "etcd.raftsman.io/retained-from"
	RetainedMemberLabel = "etcd.raftsman.io/retained-member"

	// MemberFinalizer holds an EtcdMember until its etcd member has left the
	// cluster with MemberRemove.
	MemberFinalizer = "etcd.raftsman.io/membership"
	// ClusterFinalizer holds an EtcdCluster until its members are released.
	ClusterFinalizer = "etcd.raftsman.io/cluster"

	// RotateCAAnnotation on an EtcdCluster asks for a new CA now: each new
	// value starts one rotation.
	RotateCAAnnotation = "etcd.raftsman.io/rotate-ca"
	// DefragAnnotation on an EtcdCluster asks for a defragmentation of
	// every member now, whatever spec.maintenance.defrag says: each new
	// value starts one run (reason Requested), as soon as a run may start.
	// status.maintenance.lastRequest is the last value a run started for.
	DefragAnnotation = "etcd.raftsman.io/defrag"
	// BackupLabel names the EtcdBackup a backup Pod works for.
	BackupLabel = "etcd.raftsman.io/backup"
	// BackupKindLabel on an EtcdBackup the operator made says why:
	// "scheduled" or "suspend". Retention only ever deletes scheduled ones.
	BackupKindLabel = "etcd.raftsman.io/backup-kind"
	// ScheduledAtAnnotation on a scheduled EtcdBackup is the time it was
	// scheduled for (RFC 3339).
	ScheduledAtAnnotation = "etcd.raftsman.io/scheduled-at"
	// BackupFinalizer holds an EtcdBackup until its snapshot is deleted.
	BackupFinalizer = "etcd.raftsman.io/backup-data"
	// UserFinalizer holds an EtcdUser until its user and role are deleted
	// from etcd.
	UserFinalizer = "etcd.raftsman.io/etcd-user"

	// TrustRevisionAnnotation on a member Pod is the trust revision it
	// started with.
	TrustRevisionAnnotation = "etcd.raftsman.io/trust-revision"
	// PodSpecHashAnnotation on a member Pod is the hash of the member spec
	// fields it was built from (resources.PodSpecHash). The member
	// controller restarts a Pod whose hash differs from its member's spec;
	// the cluster controller changes those fields one member at a time.
	PodSpecHashAnnotation = "etcd.raftsman.io/pod-spec-hash"
	// ReplacesAnnotation on an EtcdMember names the member it replaces:
	// one on storage the spec no longer asks for (another StorageClass, a
	// smaller size, another medium). The cluster controller creates it
	// with the annotation, adds it as a learner and promotes it, and only
	// then removes the member it names.
	ReplacesAnnotation = "etcd.raftsman.io/replaces"
	// UpdateStartedAnnotation on an EtcdMember is when a rolling update
	// gave it a new spec (RFC 3339); the cluster controller removes it once
	// the member is healthy and caught up on that spec.
	UpdateStartedAnnotation = "etcd.raftsman.io/update-started"
	// RecoverQuorumAnnotation on an EtcdCluster that lost its quorum names
	// the member to restart the cluster from (alone, from its own data), or
	// is RecoverFromLatestBackup. The operator removes it when the recovery
	// is done.
	RecoverQuorumAnnotation = "etcd.raftsman.io/recover-quorum"
	// RecoverFromLatestBackup, as the value of RecoverQuorumAnnotation,
	// restores the newest Complete EtcdBackup of the cluster into the same
	// EtcdCluster: every member is released with its volume kept, and a new
	// etcd cluster starts from the snapshot. Writes made after the snapshot
	// are not in it. No member name can be this value: a member's suffix
	// has no vowels.
	RecoverFromLatestBackup = "latest-backup"
	// RecoverQuorumAcceptLossAnnotation, set to the same member as
	// RecoverQuorumAnnotation, confirms a recovery from a member that is a
	// learner or behind another reachable member: the writes only the
	// others hold are given up. The operator removes it with the other.
	RecoverQuorumAcceptLossAnnotation = "etcd.raftsman.io/recover-quorum-accept-loss"
)

// Ports etcd listens on in every member Pod.
const (
	ClientPort  = 2379
	PeerPort    = 2380
	MetricsPort = 2381
)
