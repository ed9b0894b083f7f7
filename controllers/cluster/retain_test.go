package cluster_test

import (
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// testDeleteRetain: a cluster deleted with spec.deletionPolicy Retain asks
// each member to keep its volume and holds every member until the member
// controller's VolumeRetained is True for the member's generation; only
// then does it let the members and itself go. The test plays the member
// controller.
func testDeleteRetain(t *testing.T, e *env) {
	ms := e.formCluster(3)
	e.patchCluster(`{"spec":{"deletionPolicy":"Retain"}}`)
	if err := e.c.Delete(t.Context(), e.getCluster()); err != nil {
		t.Fatalf("delete cluster: %v", err)
	}
	e.waitMembers(3, func(got []etcdv1.EtcdMember) error {
		for _, m := range got {
			if m.Spec.DeletionPolicy != etcdv1.DeletionPolicyRetain {
				return fmt.Errorf("%s: spec.deletionPolicy %q, want Retain", m.Name, m.Spec.DeletionPolicy)
			}
		}
		return nil
	})
	// Retained on two members only, and on the third for a stale
	// generation: every member still holds its finalizer.
	e.setVolumeRetained(ms[0], 0)
	e.setVolumeRetained(ms[1], 0)
	e.setVolumeRetained(ms[2], -1)
	consistently(t, "members held until every volume is kept", func() error {
		for _, m := range ms {
			if !controllerutil.ContainsFinalizer(e.getMember(m.Name), etcdv1.MemberFinalizer) {
				return fmt.Errorf("%s released before its volume was kept", m.Name)
			}
		}
		return nil
	})
	e.setVolumeRetained(ms[2], 0)
	eventually(t, "cluster gone", func() error {
		err := e.c.Get(t.Context(), e.key(), &etcdv1.EtcdCluster{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get cluster: want NotFound, got %v", err)
	})
	for _, m := range ms {
		if controllerutil.ContainsFinalizer(e.getMember(m.Name), etcdv1.MemberFinalizer) {
			t.Errorf("%s still holds %s", m.Name, etcdv1.MemberFinalizer)
		}
	}
	e.waitEvent("VolumesRetained", clusterName)
}

// setVolumeRetained plays the member controller: VolumeRetained True for
// the member's generation plus offset.
func (e *env) setVolumeRetained(m etcdv1.EtcdMember, offset int64) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &etcdv1.EtcdMember{}
		if err := e.c.Get(e.t.Context(), client.ObjectKeyFromObject(&m), got); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(got.DeepCopy(), client.MergeFromWithOptimisticLock{})
		meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{
			Type: etcdv1.ConditionVolumeRetained, Status: metav1.ConditionTrue, ObservedGeneration: got.Generation + offset,
			Reason: etcdv1.ReasonVolumeReleased, Message: "set by the test",
		})
		return e.c.Status().Patch(e.t.Context(), got, patch)
	})
	if err != nil {
		e.t.Fatalf("set VolumeRetained on %s: %v", m.Name, err)
	}
}
