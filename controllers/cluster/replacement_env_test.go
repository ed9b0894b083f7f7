package cluster_test

import (
	"fmt"
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// testStorageReplacement: another StorageClass replaces the members one at
// a time against a real API server. Each new member names the member it
// replaces, is added as a learner and promoted; only then does the old one
// leave etcd and go. There are never more than 4 members, and the leader
// goes last.
func testStorageReplacement(t *testing.T, e *env) {
	ms := e.formCluster(3)
	fake := e.fake()
	leader := fakeLeaderName(fake)
	old := names(ms)
	e.patchCluster(`{"spec":{"storage":{"storageClassName":"fast"}}}`)
	var replaced []string
	for range 3 {
		var n etcdv1.EtcdMember
		e.waitMembers(4, func(ms []etcdv1.EtcdMember) error {
			for _, m := range ms {
				if r := m.Annotations[etcdv1.ReplacesAnnotation]; r != "" && !slices.Contains(replaced, r) && m.Status.Role == etcdv1.RoleLearner {
					n = m
					return nil
				}
			}
			return fmt.Errorf("no learner made to replace a member yet: %v", names(ms))
		})
		o := n.Annotations[etcdv1.ReplacesAnnotation]
		if !slices.Contains(old, o) || ptrString(n.Spec.Storage.StorageClassName) != "fast" {
			t.Fatalf("member %s replaces %q on class %q, want one of %v on fast", n.Name, o, ptrString(n.Spec.Storage.StorageClassName), old)
		}
		// The old member stays while the new one is a learner.
		if _, ok := fakeMember(fake, e.getMember(o).Spec.PeerURL); !ok {
			t.Fatalf("%s left etcd before %s was promoted", o, n.Name)
		}
		e.waitCluster("ReplacingMembers", func(cl *etcdv1.EtcdCluster) error {
			return conditions(cl, cond{etcdv1.ConditionProgressing, metav1.ConditionTrue, etcdv1.ReasonReplacingMembers})
		})
		fake.Start(n.Spec.PeerURL, n.Name, n.Spec.ClientURL, true)
		e.setReadyCondition(n.Name, metav1.ConditionTrue, etcdv1.ReasonPodReady, "")
		eventually(t, o+" gone", func() error {
			err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: o}, &etcdv1.EtcdMember{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("%s still there (%v)", o, err)
		})
		if _, ok := fakeMember(fake, n.Spec.PeerURL); !ok {
			t.Fatalf("%s is not in etcd after replacing %s", n.Name, o)
		}
		replaced = append(replaced, o)
	}
	e.waitConverged(3)
	if replaced[2] != leader {
		t.Errorf("replaced %v, want the leader %s last", replaced, leader)
	}
	for _, m := range e.members() {
		if slices.Contains(old, m.Name) || ptrString(m.Spec.Storage.StorageClassName) != "fast" {
			t.Errorf("member %s on class %q after the change", m.Name, ptrString(m.Spec.Storage.StorageClassName))
		}
	}
	e.waitEvent("MemberReplaced", clusterName)
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
