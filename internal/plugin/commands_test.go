package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestCommands runs each verb's command line against a fake API server and
// checks what it refused, wrote and said.
func TestCommands(t *testing.T) {
	t.Parallel()
	s3 := etcdv1.BackupDestination{S3: &etcdv1.S3Destination{Endpoint: "http://s3:9000", Bucket: "etcd", Prefix: "p/",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "creds"}}}
	scheduled := func(c *etcdv1.EtcdCluster) {
		c.Spec.Backup = &etcdv1.ClusterBackupSpec{Schedule: "@daily", Destination: s3}
	}
	tests := []struct {
		name    string
		args    []string
		cluster func(*etcdv1.EtcdCluster)
		extra   []client.Object
		funcs   interceptor.Funcs
		wantErr string
		wantOut string
		check   func(t *testing.T, te *testEnvironment)
	}{
		{name: "status needs a cluster", args: []string{"status"}, wantErr: "status takes 1 argument(s): [CLUSTER]; got 0"},
		{name: "status takes one cluster", args: []string{"status", "a", "b"}, wantErr: "got 2"},
		{name: "an unknown cluster", args: []string{"status", "nope"}, wantErr: `etcdcluster prod/nope: etcdclusters.etcd.raftsman.io "nope" not found`},
		{name: "an unknown verb", args: []string{"scale", "sample"}, wantErr: `unknown command "scale"`},

		{name: "suspend", args: []string{"suspend", "sample"}, wantOut: "spec.suspend set to true",
			check: func(t *testing.T, te *testEnvironment) {
				if c := te.get(t); !c.Spec.Suspend || c.Spec.Replicas == nil || *c.Spec.Replicas != 3 {
					t.Errorf("spec after suspend: %+v", c.Spec)
				}
			}},
		{name: "suspend twice changes nothing", args: []string{"suspend", "sample"},
			cluster: func(c *etcdv1.EtcdCluster) { c.Spec.Suspend = true }, wantOut: "already has spec.suspend true"},
		{name: "resume", args: []string{"resume", "sample"}, cluster: func(c *etcdv1.EtcdCluster) { c.Spec.Suspend = true },
			wantOut: "spec.suspend set to false",
			check: func(t *testing.T, te *testEnvironment) {
				if te.get(t).Spec.Suspend {
					t.Error("still suspended")
				}
			}},
		{name: "suspend --wait waits for Suspended of this generation", args: []string{"suspend", "sample", "--wait"},
			funcs:   conditionAfterPatch(etcdv1.ConditionSuspended, etcdv1.ReasonSuspended),
			wantOut: "etcdcluster sample Suspended"},

		{name: "recover-quorum needs --from", args: []string{"recover-quorum", "sample"}, wantErr: "recover-quorum needs --from MEMBER (the member to restart the cluster from) or --latest-backup"},
		{name: "recover-quorum from both", args: []string{"recover-quorum", "sample", "--from", "sample-aaaaa", "--latest-backup"}, wantErr: "not both"},
		{name: "recover-quorum from the newest backup", args: []string{"recover-quorum", "sample", "--latest-backup"},
			extra:   []client.Object{restorable(backup("nightly", "sample", -time.Hour, etcdv1.ConditionComplete, "SnapshotStored", ""))},
			wantOut: "annotated etcd.raftsman.io/recover-quorum=latest-backup",
			check: func(t *testing.T, te *testEnvironment) {
				if got := te.get(t).Annotations[etcdv1.RecoverQuorumAnnotation]; got != etcdv1.RecoverFromLatestBackup {
					t.Errorf("annotation %q, want %s", got, etcdv1.RecoverFromLatestBackup)
				}
			}},
		{name: "recover-quorum from no backup", extra: []client.Object{restorable(backup("nightly", "sample", -time.Hour, etcdv1.ConditionFailed, "SnapshotFailed", "x"))}, args: []string{"recover-quorum", "sample", "--latest-backup"}, wantErr: "etcdcluster prod/sample has no Complete EtcdBackup to restore"},
		{name: "recover-quorum from a stranger", args: []string{"recover-quorum", "sample", "--from", "nope"}, wantErr: "nope is not a member of etcdcluster prod/sample"},
		{name: "recover-quorum confirmed from a member behind", args: []string{"recover-quorum", "sample", "--from", "sample-aaaaa", "--accept-loss"},
			wantOut: "annotated etcd.raftsman.io/recover-quorum=sample-aaaaa",
			check: func(t *testing.T, te *testEnvironment) {
				a := te.get(t).Annotations
				if a[etcdv1.RecoverQuorumAnnotation] != "sample-aaaaa" || a[etcdv1.RecoverQuorumAcceptLossAnnotation] != "sample-aaaaa" {
					t.Errorf("annotations %v, want both naming sample-aaaaa", a)
				}
			}},
		{name: "recover-quorum accept-loss needs a member", args: []string{"recover-quorum", "sample", "--latest-backup", "--accept-loss"}, wantErr: "--accept-loss goes with --from MEMBER"},
		{name: "recover-quorum", args: []string{"recover-quorum", "sample", "--from", "sample-aaaaa"},
			wantOut: "annotated etcd.raftsman.io/recover-quorum=sample-aaaaa",
			check: func(t *testing.T, te *testEnvironment) {
				if got := te.get(t).Annotations[etcdv1.RecoverQuorumAnnotation]; got != "sample-aaaaa" {
					t.Errorf("annotation %q, want sample-aaaaa", got)
				}
			}},

		{name: "backup goes where the schedule's go", args: []string{"backup", "sample"}, cluster: scheduled,
			wantOut: "etcdbackup prod/sample-20260102-030405 created",
			check: func(t *testing.T, te *testEnvironment) {
				b := te.backup(t, "sample-20260102-030405")
				if b.Spec.ClusterName != "sample" || b.Spec.Destination.S3 == nil || b.Spec.Destination.S3.Bucket != "etcd" {
					t.Errorf("backup spec %+v", b.Spec)
				}
				if b.Labels[etcdv1.BackupKindLabel] != "" {
					t.Errorf("a manual backup labelled %v: retention would prune it", b.Labels)
				}
			}},
		{name: "backup without a destination", args: []string{"backup", "sample"},
			wantErr: "etcdcluster sample has no spec.backup to take the destination from: say where with --pvc CLAIM[:FOLDER] or --like BACKUP"},
		{name: "backup to a PVC folder, named", args: []string{"backup", "sample", "--pvc", "backups:etcd/prod", "--name", "before-upgrade"},
			check: func(t *testing.T, te *testEnvironment) {
				d := te.backup(t, "before-upgrade").Spec.Destination
				if d.PVC == nil || d.PVC.ClaimName != "backups" || d.PVC.Path != "etcd/prod" || d.S3 != nil {
					t.Errorf("destination %+v", d)
				}
			}},
		{name: "backup like another", args: []string{"backup", "sample", "--like", "old"},
			extra: []client.Object{&etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: ns},
				Spec: etcdv1.EtcdBackupSpec{ClusterName: "x", Destination: s3}}},
			check: func(t *testing.T, te *testEnvironment) {
				if d := te.backup(t, "sample-20260102-030405").Spec.Destination; d.S3 == nil || d.S3.Prefix != "p/" {
					t.Errorf("destination %+v", d)
				}
			}},
		{name: "backup --pvc and --like", args: []string{"backup", "sample", "--pvc", "a", "--like", "b"},
			wantErr: "if any flags in the group [pvc like] are set none of the others can be"},
		{name: "backup name must be a label", args: []string{"backup", "sample", "--pvc", "a", "--name", "Before_Upgrade"},
			wantErr: `backup name "Before_Upgrade"`},
		{name: "backup --wait: Complete", args: []string{"backup", "sample", "--wait"}, cluster: scheduled,
			funcs:   backupEndsWith(etcdv1.ConditionComplete),
			wantOut: "etcdbackup sample-20260102-030405 Complete: 4.0 KiB, revision 42"},
		{name: "backup --wait: Failed", args: []string{"backup", "sample", "--wait"}, cluster: scheduled,
			funcs:   backupEndsWith(etcdv1.ConditionFailed),
			wantErr: "etcdbackup sample-20260102-030405 failed (SnapshotFailed): no space"},
		{name: "backup --wait gives up", args: []string{"backup", "sample", "--wait", "--timeout", "20ms"}, cluster: scheduled,
			wantErr: "etcdbackup sample-20260102-030405: not done after 20ms"},

		{name: "restore needs --from and --to", args: []string{"restore", "sample", "--to", "x"}, wantErr: `required flag(s) "from" not set`},
		{name: "restore copies the spec", args: []string{"restore", "sample", "--from", "nightly", "--to", "sample-2"},
			cluster: func(c *etcdv1.EtcdCluster) {
				scheduled(c)
				c.Spec.Suspend = true
				c.Spec.Image = "registry.example/etcd:v3.6.16"
				c.Spec.TLS.Peer = &etcdv1.TLSSource{SecretRef: &corev1.LocalObjectReference{Name: "my-peer"}}
				c.Spec.TLS.Client.TrustedCASecretRef = &corev1.LocalObjectReference{Name: "partners"}
			},
			extra:   []client.Object{backup("nightly", "sample", -time.Hour, etcdv1.ConditionComplete, "SnapshotStored", "")},
			wantOut: "etcdcluster prod/sample-2 created from etcdbackup nightly",
			check: func(t *testing.T, te *testEnvironment) {
				c := &etcdv1.EtcdCluster{}
				if err := te.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sample-2"}, c); err != nil {
					t.Fatal(err)
				}
				s := c.Spec
				switch {
				case s.Bootstrap == nil || s.Bootstrap.Restore == nil || s.Bootstrap.Restore.BackupName != "nightly":
					t.Errorf("bootstrap %+v", s.Bootstrap)
				case s.Suspend || s.TLS.Peer != nil:
					t.Errorf("suspend %v, peer %+v copied", s.Suspend, s.TLS.Peer)
				case s.Version != "3.6.16" || s.Image != "registry.example/etcd:v3.6.16" || *s.Replicas != 3 || s.Backup == nil ||
					s.TLS.Client.TrustedCASecretRef == nil:
					t.Errorf("spec not copied: %+v", s)
				case c.Labels["team"] != "a" || c.Labels[etcdv1.ShardLabel] != "":
					t.Errorf("labels %v", c.Labels)
				}
				for _, note := range []string{"spec.tls.peer.secretRef my-peer not copied", `sample-2 is backed up on "@daily" too`} {
					if !strings.Contains(te.err.String(), note) {
						t.Errorf("no note %q in %q", note, te.err.String())
					}
				}
			}},
		{name: "restore --dry-run prints and creates nothing", args: []string{"restore", "sample", "--from", "nightly", "--to", "sample-2", "--dry-run", "--replicas", "1"},
			extra:   []client.Object{backup("nightly", "sample", -time.Hour, etcdv1.ConditionComplete, "SnapshotStored", "")},
			wantOut: "kind: EtcdCluster",
			check: func(t *testing.T, te *testEnvironment) {
				for _, s := range []string{"backupName: nightly", "replicas: 1", "name: sample-2"} {
					if !strings.Contains(te.out.String(), s) {
						t.Errorf("no %q in\n%s", s, te.out.String())
					}
				}
				err := te.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sample-2"}, &etcdv1.EtcdCluster{})
				if err == nil {
					t.Error("--dry-run created the cluster")
				}
			}},
		{name: "restore from a backup not Complete", args: []string{"restore", "sample", "--from", "nightly", "--to", "sample-2"},
			extra:   []client.Object{backup("nightly", "sample", -time.Hour, etcdv1.ConditionFailed, "SnapshotFailed", "x")},
			wantErr: "etcdbackup nightly is not Complete"},

		{name: "move-leader needs --to", args: []string{"move-leader", "sample"}, wantErr: `required flag(s) "to" not set`},
		{name: "move-leader to a follower", args: []string{"move-leader", "sample", "--to", "sample-ccccc"},
			wantOut: "leadership of sample moved from sample-aaaaa to sample-ccccc",
			check: func(t *testing.T, te *testEnvironment) {
				if got := strings.Join(te.etcdFake.moved, " "); got != "sample-aaaaa->c3" {
					t.Errorf("MoveLeader calls %q, want sample-aaaaa->c3", got)
				}
			}},
		{name: "move-leader to the leader", args: []string{"move-leader", "sample", "--to", "sample-aaaaa"}, wantOut: "sample-aaaaa already leads sample"},
		{name: "move-leader to a stranger", args: []string{"move-leader", "sample", "--to", "x"},
			wantErr: "x is not a member of sample; its members are [sample-aaaaa sample-bbbbb sample-ccccc]"},
		{name: "move-leader during a rollout", args: []string{"move-leader", "sample", "--to", "sample-bbbbb"},
			cluster: func(c *etcdv1.EtcdCluster) { c.Status.Rollout = &etcdv1.RolloutStatus{Updated: 1, Total: 3} },
			wantErr: "a rolling change of sample is under way (1 of 3 members updated)"},
		{name: "move-leader while scaling", args: []string{"move-leader", "sample", "--to", "sample-bbbbb"},
			cluster: func(c *etcdv1.EtcdCluster) {
				meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionProgressing, Status: metav1.ConditionTrue,
					Reason: etcdv1.ReasonScalingUp, Message: "adding a learner", ObservedGeneration: 2})
			},
			wantErr: "the operator is changing sample (Progressing True, ScalingUp: adding a learner)"},
		{name: "move-leader to a learner", args: []string{"move-leader", "sample", "--to", "sample-ccccc"},
			cluster: func(c *etcdv1.EtcdCluster) { c.Status.Members[2].Role = etcdv1.RoleLearner },
			wantErr: "sample-ccccc is a Learner: only a voting member can lead"},

		{name: "etcdctl needs its arguments after --", args: []string{"etcdctl", "sample", "get", "--", "k"},
			wantErr: "etcdctl takes one cluster before --, got [sample get]"},
		{name: "etcdctl with nothing to do", args: []string{"etcdctl", "sample"}, wantErr: "say what etcdctl should do after --"},
		{name: "etcdctl not installed", args: []string{"etcdctl", "sample", "--etcdctl", "/nonexistent/etcdctl", "--", "get", "k"},
			wantErr: "install etcdctl (it comes with every etcd release) or give its path with --etcdctl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := cluster()
			if tt.cluster != nil {
				tt.cluster(c)
			}
			te := newTestEnv(t, tt.funcs, append(append([]client.Object{c}, sampleObjects(t)[1:]...), tt.extra...)...)
			te.etcdFake.statuses = healthyEtcd()
			err := te.run(tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v; stderr %s", err, te.err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one with %q", err, tt.wantErr)
			}
			if !strings.Contains(te.out.String(), tt.wantOut) {
				t.Errorf("output %q, want %q in it", te.out.String(), tt.wantOut)
			}
			if tt.check != nil {
				tt.check(t, te)
			}
		})
	}
}

func (te *testEnvironment) get(t *testing.T) *etcdv1.EtcdCluster {
	t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := te.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sample"}, c); err != nil {
		t.Fatal(err)
	}
	return c
}

func (te *testEnvironment) backup(t *testing.T, name string) *etcdv1.EtcdBackup {
	t.Helper()
	b := &etcdv1.EtcdBackup{}
	if err := te.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// backupEndsWith plays the backup controller: a created EtcdBackup is read
// back Running once, then ended with cond.
func backupEndsWith(cond string) interceptor.Funcs {
	reads := 0
	return interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if err := c.Get(ctx, key, obj, opts...); err != nil {
			return err
		}
		b, ok := obj.(*etcdv1.EtcdBackup)
		if !ok {
			return nil
		}
		reads++
		set := func(typ string, status metav1.ConditionStatus, reason, msg string) {
			meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg})
		}
		switch {
		case reads == 1:
			set(etcdv1.ConditionComplete, metav1.ConditionFalse, etcdv1.ReasonRunning, "snapshot streaming")
		case cond == etcdv1.ConditionComplete:
			set(etcdv1.ConditionComplete, metav1.ConditionTrue, etcdv1.ReasonSnapshotStored, "stored")
			b.Status.Size, b.Status.Revision = 4096, 42
		default:
			set(etcdv1.ConditionFailed, metav1.ConditionTrue, etcdv1.ReasonSnapshotFailed, "no space")
		}
		return nil
	}}
}

// conditionAfterPatch plays the controller owning cond: once the cluster
// was patched, cond is True for the new generation.
func conditionAfterPatch(cond, reason string) interceptor.Funcs {
	patched := false
	return interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patched = true
			return c.Patch(ctx, obj, patch, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if cl, ok := obj.(*etcdv1.EtcdCluster); ok && patched {
				meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: cond, Status: metav1.ConditionTrue,
					Reason: reason, ObservedGeneration: cl.Generation})
			}
			return nil
		},
	}
}

// TestEtcdctl runs a stand-in etcdctl: it gets the forwarded endpoints and
// the client certificate's files, which exist while it runs and are gone
// after; its exit code is the plugin's.
func TestEtcdctl(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "etcdctl")
	script := `#!/bin/sh
echo "args: $*"
for a in "$@"; do
  case "$a" in
    --cert=*) f="${a#--cert=}"; echo "cert-dir: $(dirname "$f")"; head -1 "$f"; ls -ld "$(dirname "$f")" | cut -c1-10 ;;
  esac
done
echo "env: ${ETCDCTL_ENDPOINTS:-unset} ${ETCDCTL_WRITE_OUT:-unset}"
exit 3
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ETCDCTL_ENDPOINTS", "https://elsewhere:2379")
	t.Setenv("ETCDCTL_WRITE_OUT", "json")
	objs := sampleObjects(t)
	objs = append(objs, memberPod("sample-ddddd", false)) // a learner: never Ready
	te := newTestEnv(t, interceptor.Funcs{}, objs...)
	err := te.run("etcdctl", "sample", "--etcdctl", fake, "--", "get", "greeting", "--prefix")
	if code, ok := err.(exitError); !ok || code.code != 3 {
		t.Fatalf("error %v, want exit status 3", err)
	}
	out := te.out.String()
	for _, want := range []string{
		"args: --endpoints=https://127.0.0.1:10097,https://127.0.0.1:10098,https://127.0.0.1:10099 --cacert=",
		"/tls.key get greeting --prefix\n",
		"-----BEGIN CERTIFICATE-----",
		"drwx------",
		"env: unset json",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	_, certDir, _ := strings.Cut(out, "cert-dir: ")
	certDir, _, _ = strings.Cut(certDir, "\n")
	if _, err := os.Stat(certDir); !os.IsNotExist(err) {
		t.Errorf("%s still there after etcdctl ended (%v)", certDir, err)
	}

	// --member reaches that Pod only.
	te.out.Reset()
	if err := te.run("etcdctl", "sample", "--etcdctl", fake, "--member", "sample-bbbbb", "--", "endpoint", "status"); err == nil {
		t.Fatal("exit status 0, want 3")
	}
	if !strings.Contains(te.out.String(), "args: --endpoints=https://127.0.0.1:10098 --cacert") {
		t.Errorf("--member: %s", te.out.String())
	}
}

// TestEtcdctlRefusesAServingCertWithoutLoopback: etcdctl would fail on the
// name check; the plugin says why first.
func TestEtcdctlRefusesAServingCertWithoutLoopback(t *testing.T) {
	t.Parallel()
	objs := append([]client.Object{cluster(), etcdMember("sample-aaaaa", "a1"), memberPod("sample-aaaaa", true)}, tlsSecrets(t, false)...)
	te := newTestEnv(t, interceptor.Funcs{}, objs...)
	err := te.run("etcdctl", "sample", "--etcdctl", "/bin/true", "--", "get", "k")
	if err == nil || !strings.Contains(err.Error(), "the serving certificate in Secret sample-server-tls does not cover 127.0.0.1") {
		t.Fatalf("error %v", err)
	}
}

func TestEtcdctlArgv(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		endpoints []string
		dir       string
		args      []string
		want      string
	}{
		{"TLS", []string{"127.0.0.1:1", "127.0.0.1:2"}, "/tmp/x", []string{"get", "k"},
			"--endpoints=https://127.0.0.1:1,https://127.0.0.1:2 --cacert=/tmp/x/ca.crt --cert=/tmp/x/tls.crt --key=/tmp/x/tls.key get k"},
		{"no TLS", []string{"127.0.0.1:1"}, "", []string{"member", "list", "-w", "table"},
			"--endpoints=http://127.0.0.1:1 member list -w table"},
	}
	for _, tt := range tests {
		if got := strings.Join(etcdctlArgv(tt.endpoints, tt.dir, tt.args), " "); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestSplitEtcdctlArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		dash    int
		cluster string
		rest    string
		wantErr string
	}{
		{[]string{"sample", "get", "k"}, 1, "sample", "get k", ""},
		{[]string{"sample", "get", "k"}, -1, "sample", "get k", ""},
		{[]string{"sample"}, 1, "", "", "say what etcdctl should do"},
		{[]string{"get", "k"}, 0, "", "", "etcdctl needs a cluster"},
		{nil, -1, "", "", "etcdctl needs a cluster"},
		{[]string{"a", "b", "get"}, 2, "", "", "takes one cluster before --"},
	}
	for _, tt := range tests {
		cluster, rest, err := splitEtcdctlArgs(tt.args, tt.dash)
		if cluster != tt.cluster || strings.Join(rest, " ") != tt.rest || (err == nil) != (tt.wantErr == "") ||
			(err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("splitEtcdctlArgs(%v, %d) = %q, %v, %v", tt.args, tt.dash, cluster, rest, err)
		}
	}
}

func TestEtcdctlEnv(t *testing.T) {
	t.Parallel()
	got := etcdctlEnv([]string{"PATH=/bin", "ETCDCTL_ENDPOINTS=x", "ETCDCTL_CACERT=y", "ETCDCTL_USER=u", "ETCDCTL_CERT=c", "ETCDCTL_KEY=k", "HOME=/h"})
	if strings.Join(got, " ") != "PATH=/bin ETCDCTL_USER=u HOME=/h" {
		t.Errorf("env %v", got)
	}
}

// restorable gives a backup what a restore needs besides being Complete:
// the time its snapshot began and its checksum.
func restorable(b *etcdv1.EtcdBackup) *etcdv1.EtcdBackup {
	b.Status.StartTime, b.Status.SHA256 = &metav1.Time{Time: testNow}, strings.Repeat("ab", 32)
	return b
}
