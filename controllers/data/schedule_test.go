package data

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/schedule"
)

// TestScheduleIsSpread: clusters that share a cron schedule take their
// backups at offsets of their own: a backup is not due at the scheduled
// time itself but at the cluster's offset after it, and the next time
// says so.
func TestScheduleIsSpread(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	created := time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)
	offsets := map[time.Duration]bool{}
	for _, name := range []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d"} {
		sched, err := schedule.Parse("0 3 * * *")
		if err != nil {
			t.Fatal(err)
		}
		off := schedule.Spread(sched, "ns/"+name).(schedule.Shifted).Offset
		offsets[off] = true
		at := created.Add(time.Hour + off)
		for _, tt := range []struct {
			now  time.Time
			want bool
		}{{now: created.Add(time.Hour), want: off == 0}, {now: at, want: true}} {
			c := &etcdv1.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.Time{Time: created}, Generation: 1},
				Spec:       etcdv1.EtcdClusterSpec{Backup: &etcdv1.ClusterBackupSpec{Schedule: "0 3 * * *"}},
			}
			c.Status.Conditions = []metav1.Condition{{Type: etcdv1.ConditionAvailable, Status: metav1.ConditionTrue, ObservedGeneration: 1, Reason: "Test"}}
			r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).Build(), Options: DefaultOptions()}
			s := &scope{cluster: c, now: tt.now}
			if _, err := r.reconcileSchedule(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			started := c.Status.Backup != nil && c.Status.Backup.LastScheduleTime != nil
			if started != tt.want {
				t.Errorf("%s at %v: backup started %t, want %t (offset %v)", name, tt.now, started, tt.want, off)
			}
			if started && !c.Status.Backup.LastScheduleTime.Time.Equal(at) {
				t.Errorf("%s: scheduled at %v, want %v", name, c.Status.Backup.LastScheduleTime.Time, at)
			}
			if want := at; !tt.want && !s.sched.next.Equal(want) {
				t.Errorf("%s: next %v, want %v", name, s.sched.next, want)
			}
		}
	}
	if len(offsets) < 2 {
		t.Errorf("4 clusters share %d offset(s)", len(offsets))
	}
}
