package data

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func TestBackupCollector(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	backedUp := &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: "ns"},
		Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16", Backup: &etcdv1.ClusterBackupSpec{Schedule: "0 */6 * * *"}},
		Status: etcdv1.EtcdClusterStatus{Backup: &etcdv1.ClusterBackupStatus{LastSuccessfulBackup: &etcdv1.BackupRecord{
			Name: "kept-1", Time: metav1.NewTime(time.Unix(1764547200, 0)), URI: "s3://b/k", Revision: 7,
		}}},
	}
	plain := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ns"}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(backedUp, plain).Build()
	col := backupCollector{reader: c}
	want := `
# HELP raftsman_etcdcluster_backup_interval_seconds Seconds between two scheduled backups of an EtcdCluster (spec.backup.schedule); absent without a schedule.
# TYPE raftsman_etcdcluster_backup_interval_seconds gauge
raftsman_etcdcluster_backup_interval_seconds{name="kept",namespace="ns"} 21600
# HELP raftsman_etcdcluster_last_backup_timestamp_seconds Unix time of the newest complete backup of an EtcdCluster.
# TYPE raftsman_etcdcluster_last_backup_timestamp_seconds gauge
raftsman_etcdcluster_last_backup_timestamp_seconds{name="kept",namespace="ns"} 1.7645472e+09
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	// The series of a deleted cluster disappear.
	if err := c.Delete(context.Background(), backedUp); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col); n != 0 {
		t.Errorf("%d series left after the cluster was deleted", n)
	}
}

func TestScheduleInterval(t *testing.T) {
	t.Parallel()
	from := time.Date(2025, 3, 1, 10, 0, 30, 0, time.UTC)
	tests := []struct {
		expr   string
		want   time.Duration
		wantOK bool
	}{
		{expr: "* * * * *", want: time.Minute, wantOK: true},
		{expr: "0 * * * *", want: time.Hour, wantOK: true},
		{expr: "@daily", want: 24 * time.Hour, wantOK: true},
		{expr: "@every 6h", want: 6 * time.Hour, wantOK: true},
		{expr: "not a schedule"},
		{expr: "61 * * * *"},
		{expr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			got, ok := scheduleInterval(tt.expr, from)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("scheduleInterval(%q) = %v, %v; want %v, %v", tt.expr, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
