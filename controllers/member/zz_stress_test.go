package member_test

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func TestEnvStressDataLost(t *testing.T) {
	c := startSuite(t)
	for _, medium := range []etcdv1.StorageMedium{"", etcdv1.StorageMediumMemory} {
		for i := range 40 {
			t.Run(fmt.Sprintf("%s-%d", medium, i), func(t *testing.T) {
				t.Parallel()
				ns := newNamespace(t, c)
				size := resource.MustParse("64Mi")
				m := newMember(t, c, ns, "demo-a", func(s *etcdv1.EtcdMemberSpec) { s.Storage = etcdv1.StorageSpec{Medium: medium, Size: &size} })
				setRegistered(t, c, m, m.Generation)
				deadline := time.Now().Add(4 * time.Second)
				for time.Now().Before(deadline) {
					got := &etcdv1.EtcdMember{}
					if err := c.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
						t.Fatal(err)
					}
					if cnd := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionReady); cnd != nil && cnd.Reason == etcdv1.ReasonDataLost {
						t.Fatalf("fresh member marked DataLost: %+v status %+v", cnd, got.Status)
					}
					time.Sleep(5 * time.Millisecond)
				}
			})
		}
	}
}
