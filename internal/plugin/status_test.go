package plugin

import (
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// TestStatus renders the status of sample in the situations an operator
// looks at it for. want are regular expressions matched line by line
// (columns are separated by runs of spaces, written as " +").
func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		cluster func(*etcdv1.EtcdCluster)
		objs    func(t *testing.T) []client.Object // instead of sample's members, Pods and Secrets
		extra   []client.Object
		etcd    func(map[string]memberStatus)
		alarms  []alarm
		want    []string
		notWant []string
	}{{
		name: "healthy",
		want: []string{
			`^Cluster: +prod/sample, created 60m ago$`,
			`^Version: +desired 3\.6\.16, running 3\.6\.16$`,
			`^Members: +3 of 3 voters ready \(spec\.replicas 3\), cluster ID cafe$`,
			`^Leader: +sample-aaaaa \(a1\)$`,
			`^Rollout: +none$`,
			`^MEMBER +ID +ROLE +LEADER +VERSION +POD +HEALTHY +DB SIZE +IN USE +QUOTA +RAFT TERM +RAFT INDEX +STORAGE$`,
			`^sample-aaaaa +a1 +Voter +\* +3\.6\.16 +Ready +yes +20\.0 KiB +16\.0 KiB +2\.0 GiB +4 +1234 +default 1Gi$`,
			`^sample-bbbbb +b2 +Voter +3\.6\.16 +Ready +yes +20\.0 KiB`,
			`^Alarms: +none$`,
			`^Backup: +no complete backup recorded$`,
			`^ +no schedule \(spec\.backup\)$`,
			`^Certificates: +client +sample-client-tls +CN=root, expires 2026-04-02T03:04:05Z \(in 90d\)$`,
			`^ +server +sample-server-tls +CN=etcd-server, expires 2026-02-01T03:04:05Z \(in 30d\)$`,
			`^ +CA +sample-ca +operator's CA, expires 2035-12-31T03:04:05Z \(in 10y\)$`,
			`^ +renewal +next at 2026-03-03T03:04:05Z \(in 60d\)$`,
			`^Users: +none \(EtcdUser\)$`,
			`^CONDITION +STATUS +REASON +AGE +MESSAGE$`,
			`^Available +True +QuorumHealthy +10m +3 of 3 voters healthy$`,
		},
		notWant: []string{`did not answer`, `stale`, `Suspend:`},
	}, {
		name: "etcd names a newer leader; a member does not answer",
		etcd: func(m map[string]memberStatus) {
			b := m["sample-bbbbb"]
			b.Leader, b.RaftTerm = 0xb2, 5
			m["sample-bbbbb"] = b
			delete(m, "sample-ccccc")
		},
		want: []string{
			`^Leader: +sample-bbbbb \(b2\)$`,
			`^sample-aaaaa +a1 +Voter +3\.6\.16 +Ready`,
			`^sample-bbbbb +b2 +Voter +\* +3\.6\.16`,
			`^sample-ccccc +c3 +Voter +3\.6\.16 +Ready +yes +- +- +- +- +- +default 1Gi$`,
			`^  sample-ccccc: etcd did not answer: context deadline exceeded$`,
		},
	}, {
		name:   "alarms name their members",
		alarms: []alarm{{MemberID: 0xb2, Type: "NOSPACE"}, {MemberID: 0xff, Type: "CORRUPT"}},
		want:   []string{`^Alarms: +NOSPACE on sample-bbbbb, CORRUPT on ff$`},
	}, {
		name: "a rollout under way",
		cluster: func(c *etcdv1.EtcdCluster) {
			c.Spec.Version = "3.7.3"
			c.Status.Rollout = &etcdv1.RolloutStatus{Member: "sample-bbbbb", Since: ptr.To(metav1.NewTime(testNow.Add(-90 * time.Second))),
				Updated: 1, Total: 3, SnapshottedFor: "3.7"}
		},
		want: []string{
			`^Version: +desired 3\.7\.3, running 3\.6\.16$`,
			`^Rollout: +1 of 3 members updated, now sample-bbbbb \(for 90s\), every member snapshotted for 3\.7$`,
		},
	}, {
		name:    "desired and running differ with no rollout",
		cluster: func(c *etcdv1.EtcdCluster) { c.Spec.Version = "3.6.17" },
		want:    []string{`^Rollout: +none under way; members run 3\.6\.16, the spec says 3\.6\.17$`},
	}, {
		name: "suspended: no Pod, etcd not asked",
		cluster: func(c *etcdv1.EtcdCluster) {
			c.Spec.Suspend = true
		},
		objs: func(t *testing.T) []client.Object {
			return append([]client.Object{etcdMember("sample-aaaaa", "a1"), etcdMember("sample-bbbbb", "b2"), etcdMember("sample-ccccc", "c3")}, tlsSecrets(t, true)...)
		},
		want: []string{
			`^Suspend: +spec\.suspend is true$`,
			`^sample-aaaaa +a1 +Voter +\* +3\.6\.16 +none +yes +- +-`,
			`^  etcd not asked: no member Pod runs$`,
			`^Alarms: +unknown: etcd not asked: no member Pod runs$`,
		},
	}, {
		name: "--no-etcd",
		args: []string{"--no-etcd"},
		want: []string{`^  etcd not asked \(--no-etcd\)$`, `^Leader: +sample-aaaaa \(a1\)$`},
	}, {
		name: "TLS disabled",
		cluster: func(c *etcdv1.EtcdCluster) {
			c.Spec.TLS.Disabled = true
			c.Status.TLS = nil
		},
		want:    []string{`^Certificates: +none \(spec\.tls\.disabled\)$`},
		notWant: []string{`sample-client-tls`},
	}, {
		name: "a Secret the user may not read",
		objs: func(t *testing.T) []client.Object {
			return []client.Object{etcdMember("sample-aaaaa", "a1"), memberPod("sample-aaaaa", true), tlsSecrets(t, true)[0]}
		},
		want: []string{`^ +server +sample-server-tls +unreadable: secrets "sample-server-tls" not found$`},
	}, {
		name: "backups: the last complete one, a newer failed one, the schedule",
		cluster: func(c *etcdv1.EtcdCluster) {
			c.Spec.Backup = &etcdv1.ClusterBackupSpec{Schedule: "@daily"}
			c.Status.Backup = &etcdv1.ClusterBackupStatus{
				NextScheduleTime: ptr.To(metav1.NewTime(testNow.Add(3 * time.Hour))),
				LastSuccessfulBackup: &etcdv1.BackupRecord{Name: "nightly-1", Time: metav1.NewTime(testNow.Add(-21 * time.Hour)),
					URI: "s3://b/prod/sample/nightly-1.db", Revision: 99},
			}
		},
		extra: []client.Object{
			backup("nightly-1", "sample", -21*time.Hour, etcdv1.ConditionComplete, "SnapshotStored", ""),
			backup("nightly-2", "sample", -time.Hour, etcdv1.ConditionFailed, "SnapshotFailed", "upload: access denied"),
			backup("other", "another-cluster", -time.Minute, etcdv1.ConditionComplete, "SnapshotStored", ""),
		},
		want: []string{
			`^Backup: +last complete nightly-1, taken 2026-01-01T06:04:05Z \(21h ago\), revision 99, s3://b/prod/sample/nightly-1\.db$`,
			`^ +newest nightly-2, created 60m ago: Failed: upload: access denied$`,
			`^ +schedule "@daily", next 2026-01-02T06:04:05Z \(in 3h\)$`,
		},
		notWant: []string{`other`},
	}, {
		name: "a condition of an older generation is stale",
		cluster: func(c *etcdv1.EtcdCluster) {
			c.Status.Conditions[0].ObservedGeneration = 1
		},
		want: []string{`^TLSReady +True \(stale\) +CertificatesReady`},
	}, {
		name: "etcd 3.5 reports no quota: the spec's",
		cluster: func(c *etcdv1.EtcdCluster) {
			c.Spec.Options.QuotaBackendBytes = ptr.To[int64](8 << 30)
		},
		etcd: func(m map[string]memberStatus) {
			for k, s := range m {
				s.DBSizeQuota, s.Version = 0, "3.5.35"
				m[k] = s
			}
		},
		want: []string{`^sample-aaaaa +a1 +Voter +\* +3\.5\.35 +Ready +yes +20\.0 KiB +16\.0 KiB +8\.0 GiB`},
	}, {
		name: "a learner being added: in EtcdMembers, not yet Ready",
		objs: func(t *testing.T) []client.Object {
			objs := sampleObjects(t)[1:]
			l := etcdMember("sample-ddddd", "d4")
			l.Status.Role = etcdv1.RoleLearner
			return append(objs, l, memberPod("sample-ddddd", false))
		},
		etcd: func(m map[string]memberStatus) {
			m["sample-ddddd"] = memberStatus{ID: 0xd4, Leader: 0xa1, IsLearner: true, Version: "3.6.16", DBSize: 4096, RaftTerm: 4, RaftIndex: 1200}
		},
		want: []string{`^sample-ddddd +d4 +Learner +3\.6\.16 +Running +no +4\.0 KiB`},
	}, {
		name: "members replaced onto another StorageClass",
		cluster: func(c *etcdv1.EtcdCluster) {
			c.Spec.Storage.StorageClassName = ptr.To("fast")
		},
		objs: func(t *testing.T) []client.Object {
			objs := sampleObjects(t)[1:]
			n := etcdMember("sample-ddddd", "d4")
			n.Status.Role = etcdv1.RoleLearner
			n.Spec.Storage.StorageClassName = ptr.To("fast")
			n.Annotations = map[string]string{etcdv1.ReplacesAnnotation: "sample-bbbbb"}
			return append(objs, n, memberPod("sample-ddddd", false))
		},
		want: []string{
			`^sample-ddddd +d4 +Learner .* +fast 1Gi$`,
			`^sample-bbbbb +b2 +Voter .* +default 1Gi$`,
			`^ +sample-bbbbb: on default 1Gi, spec\.storage asks for fast 1Gi`,
			`^ +sample-ddddd: replaces sample-bbbbb$`,
		},
		notWant: []string{`sample-ddddd: on`},
	}, {
		name: "users of the cluster",
		extra: []client.Object{
			&etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: "tenant-b", Namespace: "prod"}, Spec: etcdv1.EtcdUserSpec{ClusterName: "sample",
				Permissions: []etcdv1.KeyPermission{{Prefix: "/b/"}}},
				Status: etcdv1.EtcdUserStatus{Conditions: []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionFalse, Reason: etcdv1.ReasonAuthDisabled}}}},
			&etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Namespace: "prod"}, Spec: etcdv1.EtcdUserSpec{ClusterName: "sample",
				Permissions: []etcdv1.KeyPermission{{Prefix: "/a/"}, {Prefix: "/shared/"}}},
				Status: etcdv1.EtcdUserStatus{Conditions: []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonRolesApplied}}}},
			&etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "prod"}, Spec: etcdv1.EtcdUserSpec{ClusterName: "other",
				Permissions: []etcdv1.KeyPermission{{Prefix: "/o/"}}}},
		},
		want: []string{`^Users: +tenant-a \(2 prefixes, ready\), tenant-b \(1 prefixes, not ready: AuthDisabled\)$`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := cluster()
			if tt.cluster != nil {
				tt.cluster(c)
			}
			objs := sampleObjects(t)[1:]
			if tt.objs != nil {
				objs = tt.objs(t)
			}
			te := newTestEnv(t, interceptor.Funcs{}, append(append([]client.Object{c}, objs...), tt.extra...)...)
			te.etcdFake.statuses = healthyEtcd()
			if tt.etcd != nil {
				tt.etcd(te.etcdFake.statuses)
			}
			te.etcdFake.alarms = tt.alarms
			if err := te.run(append([]string{"status", "sample"}, tt.args...)...); err != nil {
				t.Fatal(err)
			}
			out := te.out.String()
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			for _, w := range tt.want {
				re := regexp.MustCompile(w)
				if !slicesContainsFunc(lines, re.MatchString) {
					t.Errorf("no line matches %s in:\n%s", w, out)
				}
			}
			for _, nw := range tt.notWant {
				if strings.Contains(out, nw) {
					t.Errorf("output has %q:\n%s", nw, out)
				}
			}
			if len(lines) > 40 {
				t.Errorf("%d lines: more than a screen", len(lines))
			}
		})
	}
}

// TestStatusConditionOrder: the cluster's summary first, then each
// controller's, then any other by name.
func TestStatusConditionOrder(t *testing.T) {
	t.Parallel()
	conds := []metav1.Condition{{Type: "Zeta"}, {Type: etcdv1.ConditionBackupReady}, {Type: "Alpha"},
		{Type: etcdv1.ConditionDegraded}, {Type: etcdv1.ConditionAvailable}, {Type: etcdv1.ConditionTLSReady}}
	var got []string
	for _, c := range sortedConditions(conds) {
		got = append(got, c.Type)
	}
	want := "Available Degraded TLSReady BackupReady Alpha Zeta"
	if strings.Join(got, " ") != want {
		t.Errorf("order %v, want %s", got, want)
	}
}

func TestHumanBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 2 << 30: "2.0 GiB", 8 << 40: "8.0 TiB"} {
		if got := etcd.FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %s, want %s", n, got, want)
		}
	}
}

func backup(name, clusterName string, age time.Duration, cond, reason, msg string) *etcdv1.EtcdBackup {
	return &etcdv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(testNow.Add(age))},
		Spec:       etcdv1.EtcdBackupSpec{ClusterName: clusterName},
		Status: etcdv1.EtcdBackupStatus{Conditions: []metav1.Condition{{Type: cond, Status: metav1.ConditionTrue, Reason: reason, Message: msg}},
			Size: 4096, Revision: 99},
	}
}

func slicesContainsFunc(lines []string, f func(string) bool) bool {
	for _, l := range lines {
		if f(l) {
			return true
		}
	}
	return false
}
