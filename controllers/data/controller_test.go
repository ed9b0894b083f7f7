package data_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/resources"
)

const (
	clusterName = "demo"
	// sha is a snapshot checksum as the agent reports it: 64 hex digits.
	sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
)

func TestEnvDataController(t *testing.T) {
	c := startSuite(t)
	for name, test := range map[string]func(*testing.T, client.Client){
		"SuspendWaitsForMembershipChange": testSuspendWaitsForMembershipChange,
		"SuspendTakesFinalBackup":         testSuspendTakesFinalBackup,
		"RestoreChecksSnapshot":           testRestoreChecksSnapshot,
		"RestoreFromMissingBackup":        testRestoreFromMissingBackup,
		"StorageReady":                    testStorageReady,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, c)
		})
	}
}

// testSuspendWaitsForMembershipChange: a suspend waits for the running
// membership change to end; spec.suspend false runs the cluster again.
func testSuspendWaitsForMembershipChange(t *testing.T, c client.Client) {
	cl := newCluster(t, c, newNamespace(t, c), clusterName, func(s *etcdv1.EtcdClusterSpec) { s.Suspend = true })
	updateClusterStatus(t, c, cl, func(got *etcdv1.EtcdCluster) {
		got.Status.ClusterID = "8e9e05c52164694d"
		setCondition(&got.Status.Conditions, got.Generation, etcdv1.ConditionProgressing, true, etcdv1.ReasonScalingUp)
	})
	waitClusterCondition(t, c, cl, etcdv1.ConditionSuspended, metav1.ConditionFalse, etcdv1.ReasonWaitingForMembershipChange, etcdv1.ReasonScalingUp)
	consistently(t, "not Suspended during a membership change", func() error {
		return notTrue(getCluster(t, c, cl).Status.Conditions, etcdv1.ConditionSuspended)
	})

	updateClusterStatus(t, c, cl, func(got *etcdv1.EtcdCluster) {
		setCondition(&got.Status.Conditions, got.Generation, etcdv1.ConditionProgressing, false, etcdv1.ReasonSuspending)
	})
	waitClusterCondition(t, c, cl, etcdv1.ConditionSuspended, metav1.ConditionTrue, etcdv1.ReasonSuspended, "")

	got := getCluster(t, c, cl)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Suspend = false
	if err := c.Patch(t.Context(), got, patch); err != nil {
		t.Fatalf("resume: %v", err)
	}
	waitClusterCondition(t, c, cl, etcdv1.ConditionSuspended, metav1.ConditionFalse, etcdv1.ReasonNotSuspended, "")
}

// testSuspendTakesFinalBackup: with spec.backup, a suspend takes one final
// backup of the cluster and waits for it to be complete.
func testSuspendTakesFinalBackup(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	cl := newCluster(t, c, ns, clusterName, func(s *etcdv1.EtcdClusterSpec) {
		s.Suspend = true
		s.Backup = &etcdv1.ClusterBackupSpec{Schedule: "0 0 1 1 *", Destination: s3Destination()}
	})
	updateClusterStatus(t, c, cl, func(got *etcdv1.EtcdCluster) {
		got.Status.ClusterID = "8e9e05c52164694d"
		setCondition(&got.Status.Conditions, got.Generation, etcdv1.ConditionProgressing, false, etcdv1.ReasonSuspending)
	})

	name := fmt.Sprintf("%s-suspend-%d", cl.Name, cl.Generation)
	final := &etcdv1.EtcdBackup{}
	eventually(t, "final backup "+name, func() error { return c.Get(t.Context(), key(ns, name), final) })
	if final.Labels[etcdv1.BackupKindLabel] != "suspend" || final.Labels[etcdv1.ClusterLabel] != cl.Name {
		t.Errorf("final backup labels = %v, want %s=suspend and %s=%s", final.Labels, etcdv1.BackupKindLabel, etcdv1.ClusterLabel, cl.Name)
	}
	if final.Spec.ClusterName != cl.Name || final.Spec.Destination.S3 == nil || final.Spec.Destination.S3.Bucket != s3Destination().S3.Bucket {
		t.Errorf("final backup spec = %+v, want cluster %s to the scheduled destination", final.Spec, cl.Name)
	}
	if len(final.OwnerReferences) != 0 {
		t.Errorf("final backup owners = %v, want none: snapshots outlive their cluster", final.OwnerReferences)
	}
	waitClusterCondition(t, c, cl, etcdv1.ConditionSuspended, metav1.ConditionFalse, etcdv1.ReasonTakingFinalBackup, name)
	consistently(t, "not Suspended before the final backup is complete", func() error {
		return notTrue(getCluster(t, c, cl).Status.Conditions, etcdv1.ConditionSuspended)
	})

	markComplete(t, c, final, "")
	waitClusterCondition(t, c, cl, etcdv1.ConditionSuspended, metav1.ConditionTrue, etcdv1.ReasonSuspended, "")
}

// testRestoreChecksSnapshot: a restored cluster's snapshot is read whole by
// an agent Pod; only a matching checksum turns RestoreReady True.
func testRestoreChecksSnapshot(t *testing.T, c client.Client) {
	for _, tc := range []struct {
		name       string
		phase      corev1.PodPhase
		result     agent.Result
		wantStatus metav1.ConditionStatus
		wantReason string
		wantMsg    string
	}{
		{
			name:       "ChecksumMismatch",
			phase:      corev1.PodFailed,
			result:     agent.Result{Error: "the snapshot has sha256 0000, want " + sha, Reason: agent.ReasonChecksumMismatch},
			wantStatus: metav1.ConditionFalse,
			wantReason: etcdv1.ReasonChecksumMismatch,
			wantMsg:    "the snapshot has sha256 0000, want " + sha,
		},
		{
			name:       "Verified",
			phase:      corev1.PodSucceeded,
			result:     agent.Result{SHA256: sha, Size: 20480, URI: "s3://etcd-backups/raftsman/snapshot.db"},
			wantStatus: metav1.ConditionTrue,
			wantReason: etcdv1.ReasonSnapshotVerified,
			wantMsg:    sha,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, c)
			// The snapshot of an earlier cluster of the same name, which the
			// new one is made from. The shard labeler would have labelled the
			// backup with its cluster, as done here.
			src := newBackup(t, c, ns, "src", clusterName)
			src = markComplete(t, c, src, sha)
			cl := newCluster(t, c, ns, clusterName, func(s *etcdv1.EtcdClusterSpec) {
				s.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: src.Name}}
			})

			pod := waitPod(t, c, ns, cl.Name+"-restore-check")
			got := waitClusterCondition(t, c, cl, etcdv1.ConditionRestoreReady, metav1.ConditionFalse, etcdv1.ReasonVerifyingSnapshot, src.Status.Key)
			if !metav1.IsControlledBy(pod, got) {
				t.Errorf("Pod owners = %v, want controlled by EtcdCluster %s", pod.OwnerReferences, cl.Name)
			}
			ctr := agentContainer(t, pod)
			checkArgs(t, ctr.Args, append([]string{"agent", "verify", "--key=" + src.Status.Key, "--sha256=" + sha}, wantS3Args...))
			checkCredentialsEnv(t, ctr)

			endPod(t, c, pod, tc.phase, resultJSON(t, tc.result))
			got = waitClusterCondition(t, c, cl, etcdv1.ConditionRestoreReady, tc.wantStatus, tc.wantReason, tc.wantMsg)
			if tc.wantStatus != metav1.ConditionTrue {
				if got.Status.Restore != nil {
					t.Errorf("status.restore = %+v, want none for a snapshot that failed its check", got.Status.Restore)
				}
				return
			}
			r := got.Status.Restore
			switch {
			case r == nil:
				t.Fatalf("status.restore is not set")
			case r.Key != src.Status.Key || r.SHA256 != sha || r.URI != tc.result.URI || r.Size != tc.result.Size:
				t.Errorf("status.restore = %+v, want key %s, sha256 %s, uri %s, size %d", r, src.Status.Key, sha, tc.result.URI, tc.result.Size)
			case r.Destination.S3 == nil || *r.Destination.S3 != *src.Spec.Destination.S3:
				t.Errorf("status.restore.destination = %+v, want the backup's %+v", r.Destination, src.Spec.Destination)
			}
			waitGone(t, c, pod)
		})
	}
}

// testRestoreFromMissingBackup: a cluster restored from no EtcdBackup waits,
// and reads nothing.
func testRestoreFromMissingBackup(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	cl := newCluster(t, c, ns, clusterName, func(s *etcdv1.EtcdClusterSpec) {
		s.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: "missing"}}
	})
	got := waitClusterCondition(t, c, cl, etcdv1.ConditionRestoreReady, metav1.ConditionFalse, etcdv1.ReasonBackupNotFound, "missing")
	if got.Status.Restore != nil {
		t.Errorf("status.restore = %+v, want none", got.Status.Restore)
	}
	consistently(t, "no check Pod without a backup", func() error {
		if err := c.Get(t.Context(), key(ns, cl.Name+"-restore-check"), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get check Pod: want NotFound, got %v", err)
		}
		return nil
	})
}

// testStorageReady: StorageReady compares the member volumes with
// spec.storage.size, and says when their class cannot grow them.
func testStorageReady(t *testing.T, c client.Client) {
	for _, tc := range []struct {
		name       string
		expandable bool
		capacity   string
		wantStatus metav1.ConditionStatus
		wantReason string
		// wantMsg is in the message; it names the volume count, so that
		// a condition written before the PVC was seen does not count.
		wantMsg func(class string) string
	}{
		{
			name: "ExpansionNotSupported", expandable: false, capacity: "1Gi",
			wantStatus: metav1.ConditionFalse, wantReason: etcdv1.ReasonExpansionNotSupported,
			wantMsg: func(class string) string { return "StorageClass " + class + " does not allow volume expansion" },
		},
		{
			name: "Expanding", expandable: true, capacity: "1Gi",
			wantStatus: metav1.ConditionFalse, wantReason: etcdv1.ReasonExpanding,
			wantMsg: func(string) string { return "0 of 1 volumes have 2Gi" },
		},
		{
			name: "VolumesMatch", expandable: true, capacity: "2Gi",
			wantStatus: metav1.ConditionTrue, wantReason: etcdv1.ReasonVolumesMatch,
			wantMsg: func(string) string { return "Every member volume" },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, c)
			// StorageClasses are cluster-scoped: the namespace's name makes
			// this one unique to the test.
			class := &storagev1.StorageClass{
				ObjectMeta:           metav1.ObjectMeta{Name: ns + "-standard"},
				Provisioner:          "example.com/no-provisioner",
				AllowVolumeExpansion: ptr.To(tc.expandable),
			}
			if err := c.Create(t.Context(), class); err != nil {
				t.Fatalf("create StorageClass: %v", err)
			}
			t.Cleanup(func() {
				// t.Context() is done by the time cleanups run.
				if err := c.Delete(context.Background(), class); client.IgnoreNotFound(err) != nil {
					t.Errorf("delete StorageClass: %v", err)
				}
			})
			size := resource.MustParse("2Gi")
			cl := newCluster(t, c, ns, clusterName, func(s *etcdv1.EtcdClusterSpec) {
				s.Storage = etcdv1.StorageSpec{Size: &size, StorageClassName: ptr.To(class.Name)}
			})

			capacity := resource.MustParse(tc.capacity)
			labels := resources.ClusterLabels(cl.Name)
			labels[etcdv1.MemberLabel] = cl.Name + "-a"
			pvc := &corev1.PersistentVolumeClaim{
				ObjectMeta: metav1.ObjectMeta{Name: resources.PVCName(cl.Name + "-a"), Namespace: ns, Labels: labels},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: ptr.To(class.Name),
					Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: capacity}},
				},
			}
			if err := c.Create(t.Context(), pvc); err != nil {
				t.Fatalf("create PVC: %v", err)
			}
			// No provisioner runs: the test binds the claim as one would.
			pvc.Status = corev1.PersistentVolumeClaimStatus{
				Phase:       corev1.ClaimBound,
				AccessModes: pvc.Spec.AccessModes,
				Capacity:    corev1.ResourceList{corev1.ResourceStorage: capacity},
			}
			if err := c.Status().Update(t.Context(), pvc); err != nil {
				t.Fatalf("bind PVC: %v", err)
			}

			waitClusterCondition(t, c, cl, etcdv1.ConditionStorageReady, tc.wantStatus, tc.wantReason, tc.wantMsg(class.Name))
		})
	}
}

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// s3Destination is an S3 bucket; the Secret it names need not exist, since
// no agent runs.
func s3Destination() etcdv1.BackupDestination {
	return etcdv1.BackupDestination{S3: &etcdv1.S3Destination{
		Endpoint:             "https://s3.example.com",
		Bucket:               "etcd-backups",
		Prefix:               "raftsman/",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-credentials"},
		ForcePathStyle:       true,
	}}
}

// wantS3Args are the agent's flags for s3Destination, with the region the
// CRD defaults.
var wantS3Args = []string{
	"--s3-endpoint=https://s3.example.com", "--s3-bucket=etcd-backups", "--s3-prefix=raftsman/",
	"--s3-path-style=true", "--s3-region=us-east-1",
}

// newCluster creates an EtcdCluster without TLS, as a user would.
func newCluster(t *testing.T, c client.Client, ns, name string, mutate func(*etcdv1.EtcdClusterSpec)) *etcdv1.EtcdCluster {
	t.Helper()
	cl := &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1.EtcdClusterSpec{
			Replicas: ptr.To[int32](3),
			Version:  "3.6.16",
			TLS:      etcdv1.TLSSpec{Disabled: true},
		},
	}
	if mutate != nil {
		mutate(&cl.Spec)
	}
	if err := c.Create(t.Context(), cl); err != nil {
		t.Fatalf("create EtcdCluster: %v", err)
	}
	return cl
}

func getCluster(t *testing.T, c client.Client, cl *etcdv1.EtcdCluster) *etcdv1.EtcdCluster {
	t.Helper()
	got := &etcdv1.EtcdCluster{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(cl), got); err != nil {
		t.Fatalf("get EtcdCluster: %v", err)
	}
	return got
}

// updateClusterStatus plays the cluster controller: it changes the status
// of the newest cluster and says it observed its generation (the data
// controller reads the cluster controller's fields only then), retried when
// the data controller wrote in between.
func updateClusterStatus(t *testing.T, c client.Client, cl *etcdv1.EtcdCluster, mutate func(*etcdv1.EtcdCluster)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &etcdv1.EtcdCluster{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(cl), got); err != nil {
			return err
		}
		mutate(got)
		got.Status.ObservedGeneration = got.Generation
		return c.Status().Update(t.Context(), got)
	})
	if err != nil {
		t.Fatalf("update EtcdCluster status: %v", err)
	}
}

func setCondition(conds *[]metav1.Condition, generation int64, typ string, status bool, reason string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: "set by the test", ObservedGeneration: generation,
	})
}

// newBackup creates an EtcdBackup of a cluster to s3Destination, labelled
// with its cluster as the shard labeler does.
func newBackup(t *testing.T, c client.Client, ns, name, cluster string) *etcdv1.EtcdBackup {
	t.Helper()
	b := &etcdv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{etcdv1.ClusterLabel: cluster}},
		Spec:       etcdv1.EtcdBackupSpec{ClusterName: cluster, Destination: s3Destination()},
	}
	if err := c.Create(t.Context(), b); err != nil {
		t.Fatalf("create EtcdBackup: %v", err)
	}
	return b
}

// markComplete plays the backup controller, which does not run in this
// suite: it writes the status of a stored snapshot, with checksum sum, onto
// an EtcdBackup, as an agent run would have: Complete True and Failed False
// for its generation.
func markComplete(t *testing.T, c client.Client, b *etcdv1.EtcdBackup, sum string) *etcdv1.EtcdBackup {
	t.Helper()
	var got *etcdv1.EtcdBackup
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got = &etcdv1.EtcdBackup{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
			return err
		}
		got.Status.Key = resources.BackupKey(got)
		got.Status.URI = "s3://etcd-backups/raftsman/" + got.Status.Key
		got.Status.Size = 20480
		got.Status.SHA256 = sum
		got.Status.Revision = 42
		setCondition(&got.Status.Conditions, got.Generation, etcdv1.ConditionComplete, true, etcdv1.ReasonSnapshotStored)
		setCondition(&got.Status.Conditions, got.Generation, etcdv1.ConditionFailed, false, etcdv1.ReasonSnapshotStored)
		return c.Status().Update(t.Context(), got)
	})
	if err != nil {
		t.Fatalf("mark EtcdBackup %s complete: %v", b.Name, err)
	}
	return got
}

// conditionIs says how the condition differs from the wanted one, whose
// message contains msg.
func conditionIs(conds []metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, msg string) error {
	cond := meta.FindStatusCondition(conds, typ)
	switch {
	case cond == nil:
		return fmt.Errorf("no %s condition", typ)
	case cond.Status != status || cond.Reason != reason:
		return fmt.Errorf("%s %s %s: %s; want %s %s", typ, cond.Status, cond.Reason, cond.Message, status, reason)
	case cond.ObservedGeneration != generation:
		return fmt.Errorf("%s is for generation %d, the object is at %d", typ, cond.ObservedGeneration, generation)
	case !strings.Contains(cond.Message, msg):
		return fmt.Errorf("%s message %q does not contain %q", typ, cond.Message, msg)
	}
	return nil
}

// notTrue fails when the condition is True.
func notTrue(conds []metav1.Condition, typ string) error {
	if cond := meta.FindStatusCondition(conds, typ); cond != nil && cond.Status == metav1.ConditionTrue {
		return fmt.Errorf("%s True %s: %s", typ, cond.Reason, cond.Message)
	}
	return nil
}

// waitClusterCondition waits for a condition of the cluster's current
// generation whose message contains msg.
func waitClusterCondition(t *testing.T, c client.Client, cl *etcdv1.EtcdCluster, typ string, status metav1.ConditionStatus, reason, msg string) *etcdv1.EtcdCluster {
	t.Helper()
	var got *etcdv1.EtcdCluster
	eventually(t, fmt.Sprintf("%s %s %s", typ, status, reason), func() error {
		got = &etcdv1.EtcdCluster{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(cl), got); err != nil {
			return err
		}
		return conditionIs(got.Status.Conditions, got.Generation, typ, status, reason, msg)
	})
	return got
}

func waitPod(t *testing.T, c client.Client, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, "Pod "+name, func() error { return c.Get(t.Context(), key(ns, name), pod) })
	return pod
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	eventually(t, fmt.Sprintf("%T %s gone", obj, obj.GetName()), func() error {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		}
		return fmt.Errorf("still there (deletionTimestamp %v, finalizers %v)", obj.GetDeletionTimestamp(), obj.GetFinalizers())
	})
}

// endPod plays the kubelet: the agent container terminated with the
// agent's result as termination message, and the Pod ended in phase.
func endPod(t *testing.T, c client.Client, pod *corev1.Pod, phase corev1.PodPhase, message string) {
	t.Helper()
	exitCode, reason := int32(0), "Completed"
	if phase == corev1.PodFailed {
		exitCode, reason = 1, "Error"
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &corev1.Pod{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(pod), got); err != nil {
			return err
		}
		ctr := got.Spec.Containers[0]
		got.Status.Phase = phase
		got.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name:  ctr.Name,
			Image: ctr.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, Reason: reason, Message: message,
			}},
		}}
		return c.Status().Update(t.Context(), got)
	})
	if err != nil {
		t.Fatalf("end Pod %s: %v", pod.Name, err)
	}
}

func resultJSON(t *testing.T, res agent.Result) string {
	t.Helper()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func agentContainer(t *testing.T, pod *corev1.Pod) corev1.Container {
	t.Helper()
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("Pod %s has %d containers, want 1", pod.Name, len(pod.Spec.Containers))
	}
	return pod.Spec.Containers[0]
}

func checkArgs(t *testing.T, args, want []string) {
	t.Helper()
	for _, a := range want {
		if !slices.Contains(args, a) {
			t.Errorf("args %q lack %q", args, a)
		}
	}
}

// checkCredentialsEnv checks that the agent reads its S3 credentials from
// the Secret s3Destination names, never from the operator.
func checkCredentialsEnv(t *testing.T, ctr corev1.Container) {
	t.Helper()
	want := map[string]string{resources.EnvAccessKeyID: "accessKeyID", resources.EnvSecretAccessKey: "secretAccessKey"}
	for _, env := range ctr.Env {
		k, ok := want[env.Name]
		if !ok {
			continue
		}
		ref := env.ValueFrom
		if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "s3-credentials" || ref.SecretKeyRef.Key != k {
			t.Errorf("env %s = %+v, want from Secret s3-credentials key %s", env.Name, env.ValueFrom, k)
		}
		delete(want, env.Name)
	}
	for name := range want {
		t.Errorf("env %s is missing", name)
	}
}
