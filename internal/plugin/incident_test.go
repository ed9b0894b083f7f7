package plugin

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// requested is the value a request made at testNow annotates.
const requested = "2026-01-02T03:04:05Z"

// TestIncidentVerbs: alarm, compact, defrag and rotate-ca. Those that
// destroy or disrupt ask on a terminal, refuse without one, and go ahead
// with --yes; defrag and rotate-ca only annotate the cluster, for the
// operator to act on.
func TestIncidentVerbs(t *testing.T) {
	t.Parallel()
	noSpaceOnB := func(f *fakeEtcd) {
		f.alarms = []alarm{{MemberID: 0xb2, Type: "NOSPACE"}, {MemberID: 0xc3, Type: "CORRUPT"}}
		st := f.statuses["sample-bbbbb"]
		st.DBSize, st.DBSizeQuota = 2<<30, 2<<30
		f.statuses["sample-bbbbb"] = st
	}
	atRevision := func(f *fakeEtcd) {
		for pod, st := range f.statuses {
			st.Revision = 5000
			f.statuses[pod] = st
		}
	}
	wantDisarmed := func(want string) func(*testing.T, *testEnvironment) {
		return func(t *testing.T, te *testEnvironment) {
			if got := strings.Join(te.etcdFake.disarmed, " "); got != want {
				t.Errorf("disarmed %q, want %q", got, want)
			}
		}
	}
	wantCompacted := func(want string) func(*testing.T, *testEnvironment) {
		return func(t *testing.T, te *testEnvironment) {
			if got := strings.Join(te.etcdFake.compacted, " "); got != want {
				t.Errorf("compacted %q, want %q", got, want)
			}
		}
	}
	wantAnnotation := func(key, want string) func(*testing.T, *testEnvironment) {
		return func(t *testing.T, te *testEnvironment) {
			if got := te.get(t).Annotations[key]; got != want {
				t.Errorf("annotation %s = %q, want %q", key, got, want)
			}
		}
	}
	runVerbCases(t, []verbCase{
		{name: "alarm needs list or disarm", args: []string{"alarm", "sample"}, wantErr: "alarm takes list or disarm"},
		{name: "alarm list: none", args: []string{"alarm", "list", "sample"}, wantOut: []string{"No alarm on sample.\n"}},
		{name: "alarm list names the members", args: []string{"alarm", "list", "sample"}, etcd: noSpaceOnB,
			wantOut: []string{"MEMBER        ID  ALARM\nsample-bbbbb  b2  NOSPACE\nsample-ccccc  c3  CORRUPT\n"}},
		{name: "alarm list asks another member when one does not answer", args: []string{"alarm", "list", "sample"},
			etcd: func(f *fakeEtcd) { delete(f.statuses, "sample-bbbbb"); noSpaceOnB(f) }, wantOut: []string{"NOSPACE"}},
		{name: "alarm list: no member answers", args: []string{"alarm", "list", "sample"},
			etcd: func(f *fakeEtcd) { f.statuses = map[string]memberStatus{} }, wantErr: "no member of sample answered: sample-bbbbb: context deadline exceeded"},

		{name: "alarm disarm: nothing to do", args: []string{"alarm", "disarm", "sample"}, wantOut: []string{"No NOSPACE alarm on sample: nothing to disarm."}},
		{name: "alarm disarm refuses without a terminal", args: []string{"alarm", "disarm", "sample"}, etcd: noSpaceOnB,
			wantErr: "refused: no terminal to confirm on; pass --yes", check: wantDisarmed("")},
		{name: "alarm disarm, confirmed, leaves CORRUPT", args: []string{"alarm", "disarm", "sample"}, etcd: noSpaceOnB, tty: true, stdin: "y\n",
			wantOut: []string{"NOSPACE on sample-bbbbb disarmed"},
			wantErrOut: []string{"Disarm 1 NOSPACE alarm(s) of prod/sample", "sample-bbbbb: database 2.0 GiB, at its quota 2.0 GiB: the next write raises the alarm again",
				"Go ahead? [y/N]", "note: CORRUPT on sample-ccccc left alone"},
			check: wantDisarmed("sample-bbbbb:NOSPACE:b2")},
		{name: "alarm disarm, not confirmed", args: []string{"alarm", "disarm", "sample"}, etcd: noSpaceOnB, tty: true, stdin: "n\n",
			wantErr: "not confirmed: nothing done", check: wantDisarmed("")},
		{name: "alarm disarm --yes", args: []string{"alarm", "disarm", "sample", "--yes"}, etcd: noSpaceOnB,
			check: wantDisarmed("sample-bbbbb:NOSPACE:b2")},

		{name: "compact needs a revision", args: []string{"compact", "sample"}, wantErr: "at least one of the flags in the group [revision keep] is required"},
		{name: "compact takes one of them", args: []string{"compact", "sample", "--keep", "1", "--revision", "2"}, wantErr: "none of the others can be"},
		{name: "compact refuses without a terminal", args: []string{"compact", "sample", "--keep", "1000"}, etcd: atRevision,
			wantErr: "Compact the key history of prod/sample up to revision 4000 (it is at 5000)", check: wantCompacted("")},
		{name: "compact --keep --yes, on a member that does not lead", args: []string{"compact", "sample", "--keep", "1000", "--yes"}, etcd: atRevision,
			wantOut: []string{"prod/sample compacted up to revision 4000 (of 5000); a defragmentation gives the freed pages back: kubectl raftsman defrag sample"},
			check:   wantCompacted("sample-bbbbb:4000")},
		{name: "compact --revision --physical, confirmed", args: []string{"compact", "sample", "--revision", "4500", "--physical"}, etcd: atRevision,
			tty: true, stdin: "yes\n", check: wantCompacted("sample-bbbbb:4500:physical")},
		{name: "compact beyond the revision", args: []string{"compact", "sample", "--revision", "6000", "--yes"}, etcd: atRevision,
			wantErr: "revision 6000 is in the future: sample is at revision 5000"},
		{name: "compact keeping more than there is", args: []string{"compact", "sample", "--keep", "9000", "--yes"}, etcd: atRevision,
			wantOut: []string{"sample is at revision 5000: nothing to compact"}, check: wantCompacted("")},
		{name: "compact a negative revision", args: []string{"compact", "sample", "--revision", "-1", "--yes"}, wantErr: "take a positive number"},

		{name: "defrag refuses without a terminal", args: []string{"defrag", "sample"},
			wantErr: "Defragment every member of prod/sample, one at a time", check: wantAnnotation(etcdv1.DefragAnnotation, "")},
		{name: "defrag --yes annotates", args: []string{"defrag", "sample", "--yes"},
			wantOut: []string{"etcdcluster prod/sample annotated etcd.raftsman.io/defrag=" + requested},
			check:   wantAnnotation(etcdv1.DefragAnnotation, requested)},
		{name: "defrag of a suspended cluster", args: []string{"defrag", "sample", "--yes"}, cluster: func(c *etcdv1.EtcdCluster) { c.Spec.Suspend = true },
			wantErr: "etcdcluster sample is suspended"},
		{name: "defrag asked for already", args: []string{"defrag", "sample", "--yes"},
			cluster: func(c *etcdv1.EtcdCluster) {
				c.Status.Maintenance = &etcdv1.MaintenanceStatus{LastRequest: "earlier", Defrag: &etcdv1.DefragRun{Reason: etcdv1.DefragForRequest,
					Member: "sample-bbbbb", Phase: etcdv1.DefragDraining, Pending: []string{"sample-aaaaa"}}}
			},
			wantOut: []string{"a defragmentation of sample asked for at earlier is under way: draining sample-bbbbb; next sample-aaaaa"},
			check:   wantAnnotation(etcdv1.DefragAnnotation, "")},
		{name: "defrag --wait", args: []string{"defrag", "sample", "--yes", "--wait"},
			cluster: func(c *etcdv1.EtcdCluster) {
				c.Status.Maintenance = &etcdv1.MaintenanceStatus{LastRequest: "earlier", Members: []etcdv1.MemberDefragStatus{
					{Name: "sample-ccccc", Time: metav1.NewTime(testNow.Add(-time.Hour)), Reason: etcdv1.DefragForRequest}}}
			},
			funcs: patchedThen(func(c *etcdv1.EtcdCluster) {
				at := metav1.NewTime(testNow.Add(time.Minute))
				rec := func(name string) etcdv1.MemberDefragStatus {
					return etcdv1.MemberDefragStatus{Name: name, Time: at, Reason: etcdv1.DefragForRequest, SizeBefore: 40 << 20, SizeAfter: 10 << 20,
						ReclaimedBytes: 30 << 20, DurationMillis: 412}
				}
				// Not this run's: the record of an earlier request.
				old := rec("sample-ccccc")
				old.Time = metav1.NewTime(testNow.Add(-time.Hour))
				c.Status.Maintenance = &etcdv1.MaintenanceStatus{LastRequest: requested,
					Members: []etcdv1.MemberDefragStatus{rec("sample-aaaaa"), rec("sample-bbbbb"), old}}
			}),
			wantOut: []string{"defragmentation of sample done",
				"  sample-aaaaa: 40.0 MiB -> 10.0 MiB (30.0 MiB given back) in 412ms\n",
				"  sample-ccccc: not defragmented in this run (see the cluster's DefragFailed events)"}},
		{name: "defrag --wait gives up", args: []string{"defrag", "sample", "--yes", "--wait", "--timeout", "20ms"},
			wantErr: "defragmentation of sample: not done after 20ms"},

		{name: "rotate-ca, confirmed", args: []string{"rotate-ca", "sample"}, tty: true, stdin: "y\n",
			wantOut:    []string{"etcdcluster prod/sample annotated etcd.raftsman.io/rotate-ca=" + requested},
			wantErrOut: []string{"Replace the CA of prod/sample: every member restarts once"},
			check:      wantAnnotation(etcdv1.RotateCAAnnotation, requested)},
		{name: "rotate-ca refuses without a terminal", args: []string{"rotate-ca", "sample"},
			wantErr: "pass --yes", check: wantAnnotation(etcdv1.RotateCAAnnotation, "")},
		{name: "rotate-ca without TLS", args: []string{"rotate-ca", "sample", "--yes"}, cluster: func(c *etcdv1.EtcdCluster) { c.Spec.TLS.Disabled = true },
			wantErr: "runs without TLS"},
		{name: "rotate-ca during a rotation", args: []string{"rotate-ca", "sample", "--yes"},
			cluster: func(c *etcdv1.EtcdCluster) { c.Status.TLS.CARotation = "A new CA is trusted next to the old one" },
			wantOut: []string{"a CA rotation of sample is under way: A new CA is trusted next to the old one"},
			check:   wantAnnotation(etcdv1.RotateCAAnnotation, "")},
		{name: "rotate-ca --wait", args: []string{"rotate-ca", "sample", "--yes", "--wait"},
			funcs:   patchedThen(func(c *etcdv1.EtcdCluster) { c.Status.TLS.CARotationRequest = requested }),
			wantOut: []string{"CA of sample rotated: the new CA signs"}},
		{name: "rotate-ca --wait while the new CA waits for the members", args: []string{"rotate-ca", "sample", "--yes", "--wait", "--timeout", "20ms"},
			funcs: patchedThen(func(c *etcdv1.EtcdCluster) {
				c.Status.TLS.CARotationRequest, c.Status.TLS.CARotation = requested, "waiting for the members"
			}),
			wantErr: "CA rotation of sample: not done after 20ms", wantErrOut: []string{"waiting for the members"}},
	})
}
