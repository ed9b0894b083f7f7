package backup_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/resources"
)

const (
	clusterName = "demo"
	// sha is a snapshot checksum as the agent reports it: 64 hex digits.
	sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
)

func TestEnvBackupController(t *testing.T) {
	c := startSuite(t)
	for name, test := range map[string]func(*testing.T, client.Client){
		"BackupRunsAgentPod":        testBackupRunsAgentPod,
		"NamedMemberWithoutQuorum":  testNamedMemberWithoutQuorum,
		"FailedAgentPodFailsBackup": testFailedAgentPod,
		"MissingClusterFailsBackup": testMissingCluster,
		"DeleteRemovesSnapshot":     testDeleteRemovesSnapshot,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, c)
		})
	}
}

// testBackupRunsAgentPod: an EtcdBackup runs an agent Pod against a healthy
// follower and records the agent's result.
func testBackupRunsAgentPod(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	_, follower := availableCluster(t, c, ns)
	b := newBackup(t, c, ns, "nightly", clusterName)

	pod := waitPod(t, c, ns, b.Name+"-snapshot")
	got := waitBackupCondition(t, c, b, etcdv1.ConditionComplete, metav1.ConditionFalse, etcdv1.ReasonRunning, "")
	if !metav1.IsControlledBy(pod, got) {
		t.Errorf("Pod owners = %v, want controlled by EtcdBackup %s", pod.OwnerReferences, b.Name)
	}
	if !controllerutil.ContainsFinalizer(got, etcdv1.BackupFinalizer) {
		t.Errorf("finalizers = %v, want %s", got.Finalizers, etcdv1.BackupFinalizer)
	}
	if got.Status.Member != follower.Name || got.Status.StartTime == nil {
		t.Errorf("status.member = %q, startTime = %v: want %s and a start time", got.Status.Member, got.Status.StartTime, follower.Name)
	}
	if pod.Labels[etcdv1.BackupLabel] != b.Name {
		t.Errorf("Pod labels = %v, want %s=%s", pod.Labels, etcdv1.BackupLabel, b.Name)
	}
	ctr := agentContainer(t, pod)
	if ctr.Image != options.AgentImage {
		t.Errorf("image = %q, want %q", ctr.Image, options.AgentImage)
	}
	wantKey := ns + "/" + clusterName + "/" + b.Name + ".db"
	checkArgs(t, ctr.Args, append([]string{"agent", "snapshot", "--endpoint=" + follower.Spec.ClientURL, "--key=" + wantKey}, wantS3Args...))
	if slices.ContainsFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--cert=") }) {
		t.Errorf("args %q have client TLS flags for a cluster without TLS", ctr.Args)
	}
	checkCredentialsEnv(t, ctr)

	res := agent.Result{
		Key: wantKey, URI: "s3://etcd-backups/raftsman/" + wantKey, Size: 20480, SHA256: sha,
		Revision: 42, Member: follower.Name, EtcdVersion: "3.6.16",
	}
	endPod(t, c, pod, corev1.PodSucceeded, resultJSON(t, res))
	got = waitBackupCondition(t, c, b, etcdv1.ConditionComplete, metav1.ConditionTrue, etcdv1.ReasonSnapshotStored, res.URI)
	checkCondition(t, got.Status.Conditions, got.Generation, etcdv1.ConditionFailed, metav1.ConditionFalse, etcdv1.ReasonSnapshotStored)
	st := got.Status
	if st.Key != res.Key || st.URI != res.URI || st.Size != res.Size || st.SHA256 != res.SHA256 || st.Revision != res.Revision || st.EtcdVersion != res.EtcdVersion {
		t.Errorf("status = %+v, want the agent's result %+v", st, res)
	}
	if st.CompletionTime == nil {
		t.Errorf("status.completionTime is not set")
	}
	waitGone(t, c, pod)
}

// testNamedMemberWithoutQuorum: a backup of one named member runs while
// the cluster has no quorum (the member serves a snapshot of its own data
// without one); an unnamed one waits for Available.
func testNamedMemberWithoutQuorum(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	cl, _ := availableCluster(t, c, ns)
	updateClusterStatus(t, c, cl, func(got *etcdv1.EtcdCluster) {
		setCondition(&got.Status.Conditions, got.Generation, etcdv1.ConditionAvailable, false, etcdv1.ReasonQuorumLost)
	})
	plain := newBackup(t, c, ns, "plain", clusterName)
	named := &etcdv1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "from-m1", Namespace: ns, Labels: map[string]string{etcdv1.ClusterLabel: clusterName}},
		Spec:       etcdv1.EtcdBackupSpec{ClusterName: clusterName, Member: "m1", Destination: s3Destination()},
	}
	if err := c.Create(t.Context(), named); err != nil {
		t.Fatalf("create EtcdBackup: %v", err)
	}
	pod := waitPod(t, c, ns, named.Name+"-snapshot")
	m1 := &etcdv1.EtcdMember{}
	if err := c.Get(t.Context(), key(ns, "m1"), m1); err != nil {
		t.Fatal(err)
	}
	if args := agentContainer(t, pod).Args; !slices.Contains(args, "--endpoint="+m1.Spec.ClientURL) {
		t.Errorf("agent args %q do not name member m1's client URL %s", args, m1.Spec.ClientURL)
	}
	// The Pod is made before the pass's status write lands.
	eventually(t, "status.member m1", func() error {
		if got := getBackup(t, c, named); got.Status.Member != "m1" {
			return fmt.Errorf("status.member = %q, want m1", got.Status.Member)
		}
		return nil
	})
	waitBackupCondition(t, c, plain, etcdv1.ConditionComplete, metav1.ConditionFalse, etcdv1.ReasonPending, "Available")
	if err := c.Get(t.Context(), key(ns, plain.Name+"-snapshot"), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the backup of no named member started a Pod without quorum: %v", err)
	}
}

// testFailedAgentPod: an agent Pod that failed fails the backup, for the
// reason and with the error of its result.
func testFailedAgentPod(t *testing.T, c client.Client) {
	for _, tc := range []struct {
		name       string
		phase      corev1.PodPhase
		message    string
		wantReason string
		wantMsg    string
	}{
		{
			name:  "ChecksumMismatch",
			phase: corev1.PodFailed,
			message: resultJSON(t, agent.Result{
				Error: "the stored object has sha256 0000, the streamed snapshot " + sha, Reason: agent.ReasonChecksumMismatch,
			}),
			wantReason: etcdv1.ReasonChecksumMismatch,
			wantMsg:    "the stored object has sha256 0000, the streamed snapshot " + sha,
		},
		{
			name:       "UploadFailed",
			phase:      corev1.PodFailed,
			message:    resultJSON(t, agent.Result{Error: "upload part 3: connection reset by peer", Reason: agent.ReasonFailed}),
			wantReason: etcdv1.ReasonSnapshotFailed,
			wantMsg:    "upload part 3: connection reset by peer",
		},
		{
			// The Pod was killed before it wrote a result (its deadline).
			name:       "NoResult",
			phase:      corev1.PodFailed,
			message:    "",
			wantReason: etcdv1.ReasonSnapshotFailed,
			wantMsg:    "without a result",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, c)
			availableCluster(t, c, ns)
			b := newBackup(t, c, ns, "nightly", clusterName)
			pod := waitPod(t, c, ns, b.Name+"-snapshot")
			endPod(t, c, pod, tc.phase, tc.message)

			got := waitBackupCondition(t, c, b, etcdv1.ConditionFailed, metav1.ConditionTrue, tc.wantReason, tc.wantMsg)
			if tc.message != "" {
				if msg := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionFailed).Message; msg != tc.wantMsg {
					t.Errorf("Failed message = %q, want the agent's error %q", msg, tc.wantMsg)
				}
			}
			checkCondition(t, got.Status.Conditions, got.Generation, etcdv1.ConditionComplete, metav1.ConditionFalse, tc.wantReason)
			if got.Status.SHA256 != "" || got.Status.Size != 0 {
				t.Errorf("status sha256 %q size %d, want none for a failed backup", got.Status.SHA256, got.Status.Size)
			}
		})
	}
}

// testMissingCluster: an EtcdBackup of no cluster fails at once, without a
// Pod.
func testMissingCluster(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	b := newBackup(t, c, ns, "orphan", "nowhere")
	got := waitBackupCondition(t, c, b, etcdv1.ConditionFailed, metav1.ConditionTrue, etcdv1.ReasonClusterNotFound, "nowhere")
	checkCondition(t, got.Status.Conditions, got.Generation, etcdv1.ConditionComplete, metav1.ConditionFalse, etcdv1.ReasonClusterNotFound)
	if err := c.Get(t.Context(), key(ns, b.Name+"-snapshot"), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("get snapshot Pod: want NotFound, got %v", err)
	}
}

// testDeleteRemovesSnapshot: a deleted EtcdBackup stays until an agent Pod
// deleted its snapshot.
func testDeleteRemovesSnapshot(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	b := newBackup(t, c, ns, "old", clusterName)
	b = markComplete(t, c, b, sha)
	eventually(t, "finalizer "+etcdv1.BackupFinalizer, func() error {
		got := getBackup(t, c, b)
		if !controllerutil.ContainsFinalizer(got, etcdv1.BackupFinalizer) {
			return fmt.Errorf("finalizers = %v", got.Finalizers)
		}
		return nil
	})

	if err := c.Delete(t.Context(), b); err != nil {
		t.Fatalf("delete EtcdBackup: %v", err)
	}
	pod := waitPod(t, c, ns, b.Name+"-delete")
	if !metav1.IsControlledBy(pod, b) {
		t.Errorf("Pod owners = %v, want controlled by EtcdBackup %s", pod.OwnerReferences, b.Name)
	}
	ctr := agentContainer(t, pod)
	checkArgs(t, ctr.Args, append([]string{"agent", "delete", "--key=" + b.Status.Key}, wantS3Args...))
	checkCredentialsEnv(t, ctr)
	consistently(t, "EtcdBackup held until its snapshot is deleted", func() error {
		got := &etcdv1.EtcdBackup{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
			return fmt.Errorf("get EtcdBackup: %w", err)
		}
		if got.DeletionTimestamp.IsZero() {
			return fmt.Errorf("no deletionTimestamp")
		}
		return nil
	})

	endPod(t, c, pod, corev1.PodSucceeded, "{}")
	waitGone(t, c, b)
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

// availableCluster plays the cluster controller: an Available cluster of two
// healthy voters, m1 the leader and m2 a follower, with their EtcdMembers.
// It returns the cluster and the follower.
func availableCluster(t *testing.T, c client.Client, ns string) (*etcdv1.EtcdCluster, *etcdv1.EtcdMember) {
	t.Helper()
	cl := newCluster(t, c, ns, clusterName, nil)
	names := []string{"m1", "m2"}
	var pairs [][2]string
	for _, n := range names {
		pairs = append(pairs, [2]string{n, resources.PeerURL(cl, n, "cluster.local")})
	}
	var members []*etcdv1.EtcdMember
	for _, n := range names {
		m := &etcdv1.EtcdMember{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: resources.ClusterLabels(cl.Name)},
			Spec: etcdv1.EtcdMemberSpec{
				ClusterName:         cl.Name,
				Version:             "3.6.16",
				Image:               "registry.example.com/etcd:v3.6.16",
				InitialClusterState: etcdv1.InitialClusterStateNew,
				InitialCluster:      resources.InitialCluster(pairs),
				ClusterToken:        "token-" + ns,
				PeerURL:             resources.PeerURL(cl, n, "cluster.local"),
				ClientURL:           resources.ClientURL(cl, n, "cluster.local"),
			},
		}
		if err := c.Create(t.Context(), m); err != nil {
			t.Fatalf("create EtcdMember %s: %v", n, err)
		}
		members = append(members, m)
	}
	updateClusterStatus(t, c, cl, func(got *etcdv1.EtcdCluster) {
		got.Status.ClusterID = "8e9e05c52164694d"
		got.Status.Members = []etcdv1.ClusterMemberStatus{
			{Name: "m1", ID: "8e9e05c52164694d", Role: etcdv1.RoleVoter, Version: "3.6.16", Healthy: true, Leader: true},
			{Name: "m2", ID: "91bc3c398fb3c146", Role: etcdv1.RoleVoter, Version: "3.6.16", Healthy: true},
		}
		setCondition(&got.Status.Conditions, got.Generation, etcdv1.ConditionAvailable, true, etcdv1.ReasonQuorumHealthy)
	})
	return cl, members[1]
}

// updateClusterStatus plays the cluster controller: it changes the status
// of the newest cluster and says it observed its generation (the backup
// controller reads the cluster controller's fields only then), retried when
// the backup controller wrote in between.
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

func getBackup(t *testing.T, c client.Client, b *etcdv1.EtcdBackup) *etcdv1.EtcdBackup {
	t.Helper()
	got := &etcdv1.EtcdBackup{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatalf("get EtcdBackup: %v", err)
	}
	return got
}

// markComplete writes the status of a stored snapshot, with checksum sum,
// onto an EtcdBackup, as an agent run would have: Complete True and Failed
// False for its generation, whatever the controller wrote before.
func markComplete(t *testing.T, c client.Client, b *etcdv1.EtcdBackup, sum string) *etcdv1.EtcdBackup {
	t.Helper()
	// The backup controller owns these fields: its first pass, which
	// writes its conditions, ends before the test plays the snapshot's
	// outcome, so that a pass read before cannot write over it. Later
	// passes find nothing to change and write nothing.
	testenv.Eventually(t, 20*time.Second, "backup "+b.Name+" seen by its controller", func() error {
		cur := &etcdv1.EtcdBackup{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), cur); err != nil {
			return err
		}
		if len(cur.Status.Conditions) == 0 {
			return fmt.Errorf("no condition yet")
		}
		return nil
	})
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

// checkCondition fails t unless the condition is as wanted for generation.
func checkCondition(t *testing.T, conds []metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	if err := conditionIs(conds, generation, typ, status, reason, ""); err != nil {
		t.Error(err)
	}
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

// waitBackupCondition waits for a condition of the backup's current
// generation whose message contains msg.
func waitBackupCondition(t *testing.T, c client.Client, b *etcdv1.EtcdBackup, typ string, status metav1.ConditionStatus, reason, msg string) *etcdv1.EtcdBackup {
	t.Helper()
	var got *etcdv1.EtcdBackup
	eventually(t, fmt.Sprintf("%s %s %s", typ, status, reason), func() error {
		got = &etcdv1.EtcdBackup{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(b), got); err != nil {
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
