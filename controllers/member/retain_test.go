package member_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// testRetainVolume: a member whose cluster is deleted with
// spec.deletionPolicy Retain releases its PVC (no owner reference, so the
// garbage collector keeps it; retained-from labels instead of the ones the
// operator selects on), says so with VolumeRetained for its generation, and
// starts no Pod meanwhile.
func testRetainVolume(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	m := newMember(t, c, ns, "demo-a", nil)
	waitReady(t, c, m, etcdv1.ReasonWaitingForRegistration)
	pvcKey := key(ns, resources.PVCName(m.Name))
	eventually(t, "PVC created", func() error { return c.Get(t.Context(), pvcKey, &corev1.PersistentVolumeClaim{}) })

	got := getMember(t, c, m)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.DeletionPolicy = etcdv1.DeletionPolicyRetain
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatalf("set deletionPolicy Retain: %v", err)
	}
	setRegistered(t, c, m, got.Generation)
	waitVolumeRetained(t, c, m, etcdv1.ReasonVolumeReleased)

	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), pvcKey, pvc); err != nil {
		t.Fatalf("get PVC: %v", err)
	}
	for _, ref := range pvc.OwnerReferences {
		if ref.UID == got.UID {
			t.Errorf("PVC still owned by the member: %v", pvc.OwnerReferences)
		}
	}
	if pvc.Labels[etcdv1.RetainedFromLabel] != clusterName || pvc.Labels[etcdv1.RetainedMemberLabel] != m.Name {
		t.Errorf("PVC labels %v, want %s=%s and %s=%s", pvc.Labels, etcdv1.RetainedFromLabel, clusterName, etcdv1.RetainedMemberLabel, m.Name)
	}
	for _, l := range []string{etcdv1.ClusterLabel, etcdv1.MemberLabel, etcdv1.ManagedByLabel} {
		if _, ok := pvc.Labels[l]; ok {
			t.Errorf("PVC keeps label %s: a later cluster of the same name would count it as its own", l)
		}
	}
	consistently(t, "no Pod for a member on its way out", func() error {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(m), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("pod: %v", err)
	})

	// Deleting the member now leaves the PVC: nothing refers to it.
	if err := c.Delete(t.Context(), getMember(t, c, m)); err != nil {
		t.Fatalf("delete member: %v", err)
	}
	consistently(t, "PVC kept", func() error { return c.Get(t.Context(), pvcKey, &corev1.PersistentVolumeClaim{}) })
}

// testRetainMemory: a Memory member has no volume to keep and says so.
func testRetainMemory(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", func(s *etcdv1.EtcdMemberSpec) {
		s.Storage.Medium = etcdv1.StorageMediumMemory
		s.DeletionPolicy = etcdv1.DeletionPolicyRetain
	})
	waitVolumeRetained(t, c, m, etcdv1.ReasonNoVolume)
}

func waitVolumeRetained(t *testing.T, c client.Client, m *etcdv1.EtcdMember, reason string) {
	t.Helper()
	eventually(t, "VolumeRetained True "+reason, func() error {
		got := getMember(t, c, m)
		cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionVolumeRetained)
		switch {
		case cond == nil:
			return fmt.Errorf("no VolumeRetained condition")
		case cond.Status != metav1.ConditionTrue || cond.Reason != reason:
			return fmt.Errorf("VolumeRetained %s %s: %s", cond.Status, cond.Reason, cond.Message)
		case cond.ObservedGeneration != got.Generation:
			return fmt.Errorf("VolumeRetained is for generation %d, the member is at %d", cond.ObservedGeneration, got.Generation)
		}
		return nil
	})
}
