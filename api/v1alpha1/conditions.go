package v1alpha1

// Conditions are the only contract between Raftsman's controllers. Each
// condition type has exactly one owner, the only controller that writes it
// (by server-side apply, with the owner's field manager: see StatusFields);
// the others read it and act only when it is True and its observedGeneration
// equals the object's generation (a stale condition counts as Unknown).
//
//	| object      | condition    | owner               |
//	|-------------|--------------|---------------------|
//	| EtcdCluster | Available    | controllers/cluster |
//	| EtcdCluster | Progressing  | controllers/cluster |
//	| EtcdCluster | Degraded     | controllers/cluster |
//	| EtcdCluster | TLSReady     | controllers/tls     |
//	| EtcdCluster | AuthReady    | controllers/tls     |
//	| EtcdCluster | Suspended    | controllers/data    |
//	| EtcdCluster | StorageReady | controllers/data    |
//	| EtcdCluster | BackupReady  | controllers/data    |
//	| EtcdCluster | RestoreReady | controllers/data    |
//	| EtcdMember  | Registered   | controllers/cluster |
//	| EtcdMember  | Ready        | controllers/member  |
//	| EtcdMember  | VolumeRetained | controllers/member |
//	| EtcdMember  | Serving      | controllers/member  |
//	| EtcdBackup  | Complete     | controllers/backup  |
//	| EtcdBackup  | Failed       | controllers/backup  |
//	| EtcdUser    | Ready        | controllers/user    |
//
// The owner names in Owners and StatusFields are those of the controllers'
// field managers (FieldManager), which every object they wrote records.
// controllers/data, split out of the backup controller, owns its conditions
// and fields under the backup controller's name, "backup", on EtcdClusters:
// the backup controller writes only EtcdBackups.
//
// Data read behind another controller's condition: the cluster controller
// reads status.tls behind TLSReady, status.restore behind RestoreReady, and
// an EtcdBackup's status (key, sha256, revision) behind its Complete, to
// restore a cluster that lost its quorum from its newest backup. Before it
// forces a member with --force-new-cluster, it waits for every other
// member's Ready to say Fenced (no Pod left) for that member's generation.
// The user controller reads status.tls behind TLSReady, and changes etcd's
// users only while AuthReady says AuthEnabled for the cluster's generation.
const (
	// ConditionAvailable is True while a quorum of voting members is healthy,
	// so the cluster serves reads and writes.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the operator is changing the
	// cluster: bootstrapping it, adding, promoting or removing a member.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when a member is unhealthy or missing.
	ConditionDegraded = "Degraded"

	// ConditionTLSReady is True when the cluster's certificates are in the
	// Secrets named in status.tls (or TLS is disabled). The cluster and
	// member controllers create no member and no Pod before.
	ConditionTLSReady = "TLSReady"
	// ConditionAuthReady is True when etcd's authentication is as the spec
	// says: on with the root password of the Secret in status.auth, or off.
	ConditionAuthReady = "AuthReady"

	// ConditionRegistered is True once etcd knows the member: it is one of
	// the initial members of a new cluster, or it was added as a learner.
	// The member controller creates the member's Pod only then, with one
	// exception: an initial member of a cluster etcd has not formed yet is
	// in the initial cluster by construction and starts while it has no
	// Registered condition at all; it gets the condition, True, with the
	// member ID etcd gives it (one status write instead of two).
	ConditionRegistered = "Registered"
	// ConditionReady is True while the member's Pod is Ready (etcd's own
	// readiness endpoint answers).
	ConditionReady = "Ready"
	// ConditionVolumeRetained is True once the member's PVC no longer
	// belongs to the member (spec.deletionPolicy Retain), so deleting the
	// member keeps it. The cluster controller releases the members of a
	// deleted Retain cluster only then.
	ConditionVolumeRetained = "VolumeRetained"
	// ConditionServing is True while the member's Pod carries the label the
	// client Service selects on (etcd.raftsman.io/serving=true), False
	// while spec.drained takes it out. The cluster controller defragments
	// a drained member only once this is False for its generation.
	ConditionServing = "Serving"

	// ConditionSuspended is True once every member's Pod may stop: no
	// membership change runs and the final backup (if any) is complete. The
	// member controller stops the Pods, and the cluster controller changes
	// nothing, while it is True.
	ConditionSuspended = "Suspended"
	// ConditionStorageReady is True when every member volume has the size
	// of spec.storage.size.
	ConditionStorageReady = "StorageReady"
	// ConditionBackupReady is True when scheduled backups run as the spec
	// says and the newest one is complete.
	ConditionBackupReady = "BackupReady"
	// ConditionRestoreReady is True once the snapshot a new cluster is
	// restored from was found and its checksum matched. The cluster
	// controller creates the first member only then.
	ConditionRestoreReady = "RestoreReady"

	// ConditionComplete is True once an EtcdBackup's snapshot is stored and
	// its size and checksum were checked.
	ConditionComplete = "Complete"
	// ConditionFailed is True when an EtcdBackup cannot be taken; it is
	// final, the message says why.
	ConditionFailed = "Failed"
)

// Owners maps each condition type to the controller that owns it, per kind.
var Owners = map[string]map[string]string{
	"EtcdCluster": {
		ConditionAvailable:   "cluster",
		ConditionProgressing: "cluster",
		ConditionDegraded:    "cluster",
		ConditionTLSReady:    "tls",
		ConditionAuthReady:   "tls",

		ConditionSuspended:    "backup",
		ConditionStorageReady: "backup",
		ConditionBackupReady:  "backup",
		ConditionRestoreReady: "backup",
	},
	"EtcdMember": {
		ConditionRegistered:     "cluster",
		ConditionReady:          "member",
		ConditionVolumeRetained: "member",
		ConditionServing:        "member",
	},
	"EtcdBackup": {
		ConditionComplete: "backup",
		ConditionFailed:   "backup",
	},
	"EtcdUser": {
		ConditionReady: "user",
	},
}

// StatusFields maps each status field (by its JSON name) to the controller
// that writes it, per kind; the conditions are shared out by Owners. Each
// controller applies only its own fields and conditions, by server-side
// apply with the field manager FieldManager(controller), so no two
// controllers ever write the same field and none overwrites another's.
// A status field or condition type missing here is refused when it is
// written (kube.ApplyStatus), so a new one cannot go unowned.
//
// The one kind two controllers write the status of is EtcdMember: the
// cluster controller applies what etcd says of the member (memberID, role,
// Registered), the member controller what its Pod and PVC say.
var StatusFields = map[string]map[string]string{
	"EtcdCluster": {
		"observedGeneration": "cluster",
		"replicas":           "cluster",
		"readyReplicas":      "cluster",
		"selector":           "cluster",
		"clusterID":          "cluster",
		"version":            "cluster",
		"members":            "cluster",
		"recovery":           "cluster",
		"alarms":             "cluster",
		"rollout":            "cluster",
		"maintenance":        "cluster",
		"tls":                "tls",
		"auth":               "tls",
		"backup":             "backup",
		"restore":            "backup",
	},
	"EtcdMember": {
		"memberID": "cluster",
		"role":     "cluster",
		"podName":  "member",
		"pvcName":  "member",
	},
	"EtcdBackup": {
		"key":            "backup",
		"uri":            "backup",
		"size":           "backup",
		"sha256":         "backup",
		"revision":       "backup",
		"member":         "backup",
		"etcdVersion":    "backup",
		"startTime":      "backup",
		"completionTime": "backup",
	},
	"EtcdUser": {
		"secretName":           "user",
		"userName":             "user",
		"roleName":             "user",
		"notAfter":             "user",
		"renewAt":              "user",
		"appliedSecretVersion": "user",
	},
}

// FieldManager is the field manager a controller applies status with.
func FieldManager(controller string) string {
	return "raftsman-" + controller
}

// Reasons of the conditions the data controller owns (Suspended,
// StorageReady, BackupReady, RestoreReady) and of those the backup
// controller owns (Complete, Failed). ChecksumMismatch is of both.
const (
	// ReasonNotSuspended: spec.suspend is false (Suspended False).
	ReasonNotSuspended = "NotSuspended"
	// ReasonWaitingForMembershipChange: a suspend waits for a membership
	// change to end (Suspended False).
	ReasonWaitingForMembershipChange = "WaitingForMembershipChange"
	// ReasonTakingFinalBackup: a suspend waits for its final backup.
	ReasonTakingFinalBackup = "TakingFinalBackup"
	// ReasonFinalBackupFailed: the final backup failed; the cluster keeps
	// running until it succeeds or spec.backup is removed.
	ReasonFinalBackupFailed = "FinalBackupFailed"
	// ReasonSuspended: the members' Pods stop or are stopped (Suspended True).
	ReasonSuspended = "Suspended"

	// ReasonVolumesMatch: every member volume has the spec's size.
	ReasonVolumesMatch = "VolumesMatch"
	// ReasonExpanding: member volumes are being expanded.
	ReasonExpanding = "Expanding"
	// ReasonExpansionNotSupported: the StorageClass does not allow volume
	// expansion.
	ReasonExpansionNotSupported = "ExpansionNotSupported"
	// ReasonMemoryMedium: tmpfs members have no volume to expand.
	ReasonMemoryMedium = "MemoryMedium"

	// ReasonNoSchedule: spec.backup is not set (BackupReady True).
	ReasonNoSchedule = "NoSchedule"
	// ReasonInvalidSchedule: spec.backup.schedule does not parse.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonBackupSucceeded: the newest backup is complete.
	ReasonBackupSucceeded = "BackupSucceeded"
	// ReasonBackupFailed: the newest backup failed.
	ReasonBackupFailed = "BackupFailed"
	// ReasonWaitingForFirstBackup: no scheduled backup has completed yet.
	ReasonWaitingForFirstBackup = "WaitingForFirstBackup"

	// ReasonSnapshotVerified: the snapshot's checksum matched (RestoreReady True).
	ReasonSnapshotVerified = "SnapshotVerified"
	// ReasonVerifyingSnapshot: the snapshot is being read and checked.
	ReasonVerifyingSnapshot = "VerifyingSnapshot"
	// ReasonBackupNotFound: the EtcdBackup to restore from does not exist.
	ReasonBackupNotFound = "BackupNotFound"
	// ReasonBackupNotComplete: the EtcdBackup to restore from is not Complete.
	ReasonBackupNotComplete = "BackupNotComplete"
	// ReasonChecksumMismatch: the snapshot's checksum is not the recorded
	// one; nothing is started.
	ReasonChecksumMismatch = "ChecksumMismatch"
	// ReasonSnapshotUnreadable: the snapshot cannot be read, or no checksum
	// is known for it.
	ReasonSnapshotUnreadable = "SnapshotUnreadable"

	// ReasonSnapshotStored: the backup is stored and checked (Complete True).
	ReasonSnapshotStored = "SnapshotStored"
	// ReasonRunning: the backup's Pod runs (Complete False).
	ReasonRunning = "Running"
	// ReasonPending: the backup waits for its cluster (Complete False).
	ReasonPending = "Pending"
	// ReasonClusterNotFound: the EtcdBackup names no existing cluster.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonSnapshotFailed: the snapshot or its upload failed (Failed True).
	ReasonSnapshotFailed = "SnapshotFailed"
)

// Reasons of EtcdCluster conditions.
const (
	// ReasonQuorumHealthy: a quorum of voters answers (Available True).
	ReasonQuorumHealthy = "QuorumHealthy"
	// ReasonQuorumLost: fewer than a quorum of voters answer (Available False).
	ReasonQuorumLost = "QuorumLost"
	// ReasonBootstrapping: the initial members are starting (Available False,
	// Progressing True).
	ReasonBootstrapping = "Bootstrapping"
	// ReasonScalingUp: a member is being added as a learner (Progressing True).
	ReasonScalingUp = "ScalingUp"
	// ReasonPromotingLearner: a learner waits to be in sync before promotion.
	ReasonPromotingLearner = "PromotingLearner"
	// ReasonScalingDown: a member is being removed (Progressing True).
	ReasonScalingDown = "ScalingDown"
	// ReasonRestoringBackup: a lost quorum is recovered from a backup; the
	// old members go and a new cluster starts from the snapshot
	// (Progressing True).
	ReasonRestoringBackup = "RestoringBackup"
	// ReasonReplacingMember: a member that lost its data is being replaced.
	ReasonReplacingMember = "ReplacingMember"
	// ReasonReplacingMembers: members on storage the spec no longer asks
	// for are replaced one at a time (Progressing True; the message names
	// the member and counts, "2 of 3").
	ReasonReplacingMembers = "ReplacingMembers"
	// ReasonReplacementStuck: the member that replaces another did not
	// become a healthy voter, or the database would not fit the new
	// volumes; the old member stays and nothing else is replaced until
	// the spec changes (Degraded True).
	ReasonReplacementStuck = "ReplacementStuck"
	// ReasonWaitingForHealth: etcd refuses membership changes until every
	// voter has been connected for a while; the operator retries soon.
	ReasonWaitingForHealth = "WaitingForClusterHealth"
	// ReasonQuorumAtRisk: a removal waits because it would leave too few
	// healthy voters.
	ReasonQuorumAtRisk = "QuorumAtRisk"
	// ReasonConverged: membership matches the spec (Progressing False).
	ReasonConverged = "Converged"
	// ReasonMembersHealthy: every member is healthy (Degraded False).
	ReasonMembersHealthy = "MembersHealthy"
	// ReasonMembersUnhealthy: some member does not answer (Degraded True).
	ReasonMembersUnhealthy = "MembersUnhealthy"
	// ReasonEtcdError: an etcd call failed in an unexpected way.
	ReasonEtcdError = "EtcdError"
)

// Reasons of the TLSReady and AuthReady conditions.
const (
	// ReasonCertificatesReady: every certificate is in its Secret (TLSReady True).
	ReasonCertificatesReady = "CertificatesReady"
	// ReasonTLSDisabled: spec.tls.disabled is true (TLSReady True).
	ReasonTLSDisabled = "TLSDisabled"
	// ReasonSecretNotFound: a Secret named in the spec does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretInvalid: a Secret's certificate, key or CA is unusable;
	// the message says which key and why.
	ReasonSecretInvalid = "SecretInvalid"
	// ReasonCertManagerNotInstalled: the certManager source is used but
	// cert-manager's Certificate kind is not served.
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"
	// ReasonCertificatePending: cert-manager has not issued a certificate yet.
	ReasonCertificatePending = "CertificatePending"
	// ReasonIssueFailed: the operator could not write a certificate.
	ReasonIssueFailed = "IssueFailed"

	// ReasonAuthEnabled: authentication is on (AuthReady True).
	ReasonAuthEnabled = "AuthEnabled"
	// ReasonAuthDisabled: authentication is off as asked (AuthReady True).
	ReasonAuthDisabled = "AuthDisabled"
	// ReasonWaitingForAvailable: auth changes wait for the cluster to be
	// Available.
	ReasonWaitingForAvailable = "WaitingForAvailable"
	// ReasonCredentialsInvalid: the root credentials Secret is missing or
	// has no password.
	ReasonCredentialsInvalid = "CredentialsInvalid"

	// ReasonWaitingForTLS: the cluster controller waits for TLSReady
	// (Progressing True).
	ReasonWaitingForTLS = "WaitingForTLS"
	// ReasonWaitingForRestore: a restored cluster's first member waits for
	// RestoreReady (Progressing True).
	ReasonWaitingForRestore = "WaitingForRestore"
	// ReasonSuspending: membership changes are paused because spec.suspend
	// is set (Progressing False once none runs).
	ReasonSuspending = "Suspending"

	// ReasonRollingUpdate: members take a new spec (version, image,
	// resources, Pod template, options, trusted CAs) one at a time
	// (Progressing True; the message names the member and how far along).
	ReasonRollingUpdate = "RollingUpdate"
	// ReasonUpgradeBlocked: a version change cannot start or go on (a
	// minor skipped, a patch too old to upgrade from); nothing restarts
	// (Progressing True, the message names the path).
	ReasonUpgradeBlocked = "UpgradeBlocked"
	// ReasonCorrupt: etcd raised a CORRUPT alarm; the member it names is
	// replaced and the alarm cleared (Degraded True).
	ReasonCorrupt = "Corrupt"
	// ReasonNoSpace: etcd raised a NOSPACE alarm: the database reached its
	// quota and etcd takes no more writes (Degraded True) until the
	// operator compacted, defragmented and disarmed it.
	ReasonNoSpace = "NoSpace"
	// ReasonDefragmenting (Progressing True): members are defragmented one
	// at a time (spec.maintenance.defrag, or a NOSPACE repair).
	ReasonDefragmenting = "Defragmenting"
	// ReasonInClientService (Serving True): the Pod is in the client Service.
	ReasonInClientService = "InClientService"
	// ReasonDrained (Serving False): spec.drained took the Pod out of the
	// client Service.
	ReasonDrained = "Drained"
	// ReasonLearnerStuck: a learner did not start or catch up in time; it
	// is removed and added again (Progressing True).
	ReasonLearnerStuck = "LearnerStuck"

	// ReasonRolloutStuck: a member restarted by a rollout did not come back
	// healthy in time; the rollout touches no other member until the spec
	// changes again (Degraded True, the message names the member).
	ReasonRolloutStuck = "RolloutStuck"
	// ReasonMemberUndecodable (Degraded, Progressing): an EtcdMember of the
	// cluster cannot be decoded; no membership change, rollout or recovery
	// runs until it is fixed or deleted.
	ReasonMemberUndecodable = "MemberUndecodable"
	// ReasonNameConflict (Degraded): an object under a name the cluster
	// needs (a Service, the PodDisruptionBudget) is not the cluster's; the
	// operator leaves it as it is.
	ReasonNameConflict = "NameConflict"
)

// Reasons of EtcdMember conditions.
const (
	// ReasonInitialMember: the member bootstraps the cluster (Registered True).
	ReasonInitialMember = "InitialMember"
	// ReasonMemberAdded: the member was added with MemberAddAsLearner.
	ReasonMemberAdded = "MemberAdded"
	// ReasonAwaitingAdd: the member waits to be added to etcd.
	ReasonAwaitingAdd = "AwaitingMemberAdd"

	// ReasonPodReady: the member's Pod is Ready (Ready True).
	ReasonPodReady = "PodReady"
	// ReasonPodNotReady: the Pod is starting, or runs but etcd is not ready.
	ReasonPodNotReady = "PodNotReady"
	// ReasonWaitingForRegistration: the Pod waits for Registered, or a
	// prepared joiner's Pod waits for etcd to list the member.
	ReasonWaitingForRegistration = "WaitingForRegistration"
	// ReasonDataLost: the member's volume is gone; the member must be replaced.
	ReasonDataLost = "DataLost"
	// ReasonPodLost: the member's Pod was lost with its node; the member is
	// replaced, but its data may still be on a volume that outlives the
	// node, so a quorum recovery never restores a backup over it by itself.
	ReasonPodLost = "PodLost"
	// ReasonRestarting: the Pod is being recreated to take the member's
	// new spec (Ready False).
	ReasonRestarting = "Restarting"
	// ReasonPodFailing: the etcd container cannot run (its image cannot be
	// pulled, it exits at start); the message has what the kubelet says.
	ReasonPodFailing = "PodFailing"
	// ReasonPodRejected (member Ready, cluster Degraded): the API server
	// refuses the member's Pod as its spec would build it (found by a
	// server-side dry run before a running Pod is deleted, or at create);
	// the running Pod, if any, is kept.
	ReasonPodRejected = "PodRejected"
	// ReasonUnschedulable (member Ready, cluster Degraded): the scheduler
	// finds no node for the member's Pod; the message is the scheduler's.
	ReasonUnschedulable = "Unschedulable"

	// ReasonFencing: the member is fenced (spec.fenced) and its Pod is
	// stopping (Ready False).
	ReasonFencing = "Fencing"
	// ReasonFenced: the member is fenced and no Pod of it runs (Ready
	// False); the cluster controller forces another member only once every
	// other member says so for its generation.
	ReasonFenced = "Fenced"

	// ReasonVolumeReleased: the member's PVC no longer belongs to it and
	// outlives it (VolumeRetained True).
	ReasonVolumeReleased = "VolumeReleased"
	// ReasonNoVolume: the member has no PVC to keep (Memory, or never
	// created); VolumeRetained True.
	ReasonNoVolume = "NoVolume"
	// ReasonReleasingVolume: the PVC is being released (VolumeRetained False).
	ReasonReleasingVolume = "ReleasingVolume"
)

// Reasons of an EtcdUser's Ready condition. AuthDisabled, ClusterNotFound,
// EtcdError and NameConflict are shared with other kinds.
const (
	// ReasonRolesApplied: the user, its role with the spec's permissions
	// and its Secret are in place (Ready True).
	ReasonRolesApplied = "RolesApplied"
	// ReasonWaitingForCluster: the cluster's TLSReady or AuthReady is not
	// True for its current generation yet (Ready False).
	ReasonWaitingForCluster = "WaitingForCluster"
)
