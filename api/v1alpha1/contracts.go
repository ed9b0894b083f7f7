package v1alpha1

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The accessors below are the only way a controller reads a status field
// another controller writes (StatusFields): each returns the field with ok
// only behind its owner's condition for the object's current generation, so
// that a reader never acts on what the owner wrote for an older spec. A
// direct read in another controller's package fails
// TestNoUndeclaredStatusReads.
//
//	| accessor                    | field                          | reader                | behind (owner)                      |
//	|-----------------------------|--------------------------------|-----------------------|-------------------------------------|
//	| EtcdCluster.TLSSecrets      | status.tls                     | cluster, backup, user | TLSReady (tls), TLSCurrent          |
//	| EtcdCluster.AuthOn          | (AuthReady's reason)           | user                  | AuthReady (tls)                     |
//	| EtcdCluster.CheckedRestore  | status.restore                 | cluster               | RestoreReady (data)                 |
//	| EtcdCluster.ObservedMembers | status.members                 | backup                | status.observedGeneration (cluster) |
//	| EtcdCluster.ObservedID      | status.clusterID               | data                  | status.observedGeneration (cluster) |
//	| EtcdMember.RegisteredRole   | status.role                    | data                  | Registered (cluster)                |
//	| EtcdBackup.Snapshot         | status (key, uri, sha256, ...) | cluster, data         | Complete (backup)                   |
//
// Spec fields one controller writes for another to read: the cluster
// controller writes each EtcdMember's spec (the member controller runs it,
// and its Ready for the member's generation says it does); the tls
// controller reads a member's spec.tls.trustRevision only behind that Ready.
//
// TLSReady is the one condition read for an earlier generation too: the
// certificates depend on spec.tls alone, so a TLSReady the tls controller
// set for the same spec.tls (TLSCurrent) holds for the current generation,
// and a spec change that does not touch TLS waits for no pass of the tls
// controller.

// TLSSecrets is status.tls, the Secrets of the cluster's certificates,
// while TLSReady holds for the spec as it is now (TLSCurrent).
func (c *EtcdCluster) TLSSecrets() (*TLSStatus, bool) {
	if !c.TLSCurrent() || c.Status.TLS == nil {
		return nil, false
	}
	return c.Status.TLS, true
}

// TLSCurrent says whether the tls controller's TLSReady is True for the
// spec as it is now: for the current generation, or for an earlier one
// with the same spec.tls (status.tls.specHash is TLSSpecHash; for a
// cluster without TLS, TLSReady says TLSDisabled).
func (c *EtcdCluster) TLSCurrent() bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, ConditionTLSReady)
	switch {
	case cond == nil || cond.Status != metav1.ConditionTrue:
		return false
	case cond.ObservedGeneration == c.Generation:
		return true
	case c.Spec.TLS.Disabled:
		return cond.Reason == ReasonTLSDisabled
	}
	return c.Status.TLS != nil && c.Status.TLS.SpecHash != "" && c.Status.TLS.SpecHash == c.TLSSpecHash()
}

// TLSSpecHash identifies spec.tls: the tls controller records it with the
// certificates it issued for it (status.tls.specHash).
func (c *EtcdCluster) TLSSpecHash() string {
	b, err := json.Marshal(c.Spec.TLS)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// AuthOn says what the tls controller's AuthReady says of the cluster's
// current generation: known is false while it says nothing for it (or is
// False: authentication is changing), on is true once authentication is
// enabled in etcd as the spec asks.
func (c *EtcdCluster) AuthOn() (on, known bool) {
	cond := meta.FindStatusCondition(c.Status.Conditions, ConditionAuthReady)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != c.Generation {
		return false, false
	}
	return cond.Reason == ReasonAuthEnabled, true
}

// CheckedRestore is status.restore, the snapshot a new cluster is made
// from, while RestoreReady (its sha256 checked) is True for the generation.
func (c *EtcdCluster) CheckedRestore() (*RestoreStatus, bool) {
	if !isTrue(c.Status.Conditions, ConditionRestoreReady, c.Generation) || c.Status.Restore == nil {
		return nil, false
	}
	return c.Status.Restore, true
}

// ObservedMembers is status.members, once the cluster controller's status
// is of the current generation.
func (c *EtcdCluster) ObservedMembers() ([]ClusterMemberStatus, bool) {
	if c.Status.ObservedGeneration != c.Generation {
		return nil, false
	}
	return c.Status.Members, true
}

// ObservedID is status.clusterID ("" before the cluster formed), once the
// cluster controller's status is of the current generation.
func (c *EtcdCluster) ObservedID() (string, bool) {
	if c.Status.ObservedGeneration != c.Generation {
		return "", false
	}
	return c.Status.ClusterID, true
}

// RegisteredRole is a member's role in etcd while Registered is True for
// the member's generation.
func (m *EtcdMember) RegisteredRole() (MemberRole, bool) {
	if !isTrue(m.Status.Conditions, ConditionRegistered, m.Generation) {
		return "", false
	}
	return m.Status.Role, true
}

// Snapshot is a backup's status (where its snapshot is, its sha256,
// revision and times) while Complete is True for the backup's generation.
func (b *EtcdBackup) Snapshot() (*EtcdBackupStatus, bool) {
	if !isTrue(b.Status.Conditions, ConditionComplete, b.Generation) {
		return nil, false
	}
	return &b.Status, true
}

// Finished says whether the backup controller is done with a backup:
// Complete or Failed is True for the backup's generation.
func (b *EtcdBackup) Finished() bool {
	return isTrue(b.Status.Conditions, ConditionComplete, b.Generation) || isTrue(b.Status.Conditions, ConditionFailed, b.Generation)
}

func isTrue(conds []metav1.Condition, t string, generation int64) bool {
	c := meta.FindStatusCondition(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}
