package backup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// scope is what one reconcile of an EtcdBackup learns.
type scope struct {
	backup *etcdv1.EtcdBackup
	base   *etcdv1.EtcdBackup
	now    time.Time

	cluster *etcdv1.EtcdCluster
	pod     *corev1.Pod
	// result is the agent's result once its Pod ended.
	result *agent.Result
	// pending says why the snapshot has not started.
	pending string
	// clusterMissing: the EtcdBackup names no cluster.
	clusterMissing bool
}

// cacheLag is how soon a pass that found the cache behind this controller's
// own last status write runs again, should that write's watch event not
// bring it back first.
const cacheLag = time.Second

// Reconcile takes the snapshot of an EtcdBackup, once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &etcdv1.EtcdBackup{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, b)
	}
	if r.written.Behind(b) {
		return ctrl.Result{RequeueAfter: cacheLag}, nil
	}
	if err := kube.AddFinalizer(ctx, r.Client, ControllerName, b, etcdv1.BackupFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	s := &scope{backup: b, base: b.DeepCopy(), now: now(r.Now)}
	if b.Finished() {
		// A finished backup keeps its result; its Pod is not needed.
		return ctrl.Result{}, kube.DeletePod(ctx, r.Client, b.Namespace, snapshotPodName(b))
	}
	res, err := kube.Run(ctx, s, r.observe, r.startSnapshot, r.collect)
	setBackupConditions(s)
	rv, applyErr := kube.ApplyStatus(ctx, r.Client, ControllerName, s.base, b)
	if rv != "" {
		r.written.Record(b, rv)
	}
	return res, errors.Join(err, applyErr)
}

func snapshotPodName(b *etcdv1.EtcdBackup) string { return b.Name + "-snapshot" }
func deletePodName(b *etcdv1.EtcdBackup) string   { return b.Name + "-delete" }

func (r *Reconciler) observe(ctx context.Context, s *scope) (ctrl.Result, error) {
	b := s.backup
	pod := &corev1.Pod{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: snapshotPodName(b)}, pod); {
	case err == nil:
		s.pod = pod
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("get pod %s: %w", snapshotPodName(b), err)
	}
	c := &etcdv1.EtcdCluster{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: b.Spec.ClusterName}, c); {
	case err == nil:
		s.cluster = c
	case apierrors.IsNotFound(err):
		s.clusterMissing = s.pod == nil
	default:
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", b.Spec.ClusterName, err)
	}
	return ctrl.Result{}, nil
}

// startSnapshot creates the agent Pod that snapshots a healthy member, a
// follower when there is one (the leader has the most to do).
func (r *Reconciler) startSnapshot(ctx context.Context, s *scope) (ctrl.Result, error) {
	b, c := s.backup, s.cluster
	if s.pod != nil || s.clusterMissing {
		return ctrl.Result{}, nil
	}
	member := b.Spec.Member
	if member == "" {
		if !kube.IsTrue(c.Status.Conditions, etcdv1.ConditionAvailable, c.Generation) {
			// The cluster's changes wake this controller (pendingBackups).
			s.pending = fmt.Sprintf("Waiting for cluster %s to be Available", c.Name)
			return ctrl.Result{}, nil
		}
		var ok bool
		if member, ok = pickMember(c); !ok {
			s.pending = fmt.Sprintf("No healthy voting member of %s to take the snapshot from", c.Name)
			return ctrl.Result{}, nil
		}
	}
	m := &etcdv1.EtcdMember{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: member}, m); {
	case apierrors.IsNotFound(err) || (err == nil && m.Spec.ClusterName != c.Name):
		// A member named by the spec: the snapshot fails for good (the
		// agent's Pod is never made, so the Failed condition says why).
		s.pending = fmt.Sprintf("Member %s is not a member of cluster %s", member, c.Name)
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get member %s: %w", member, err)
	}
	args := []string{"snapshot", "--endpoint=" + m.Spec.ClientURL, "--key=" + resources.BackupKey(b)}
	task := resources.AgentTask{
		Name: snapshotPodName(b), Namespace: b.Namespace, Labels: resources.AgentLabels(b),
		Image: r.Options.AgentImage, Destination: b.Spec.Destination, Deadline: int64(r.Options.BackupDeadline.Seconds()),
	}
	if !c.Spec.TLS.Disabled {
		st, ok := c.TLSSecrets()
		if !ok {
			// The cluster's changes wake this controller (pendingBackups).
			s.pending = fmt.Sprintf("Waiting for the certificates of cluster %s (TLSReady for its generation)", c.Name)
			return ctrl.Result{}, nil
		}
		task.ClientTLSSecret = st.ClientSecretName
		args = append(args, resources.AgentTLSArgs()...)
	}
	task.Args = args
	pod := resources.AgentPod(task)
	if err := controllerutil.SetControllerReference(b, pod, r.Scheme()); err != nil {
		return ctrl.Result{}, fmt.Errorf("own pod: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Starting the snapshot", "member", member, "pod", pod.Name)
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	s.pod = pod
	b.Status.StartTime = &metav1.Time{Time: s.now}
	b.Status.Member = member
	return ctrl.Result{}, nil
}

// pickMember is a healthy voter, a follower when there is one.
func pickMember(c *etcdv1.EtcdCluster) (string, bool) {
	observed, ok := c.ObservedMembers()
	if !ok {
		return "", false
	}
	ms := slices.Clone(observed)
	ms = slices.DeleteFunc(ms, func(m etcdv1.ClusterMemberStatus) bool { return !m.Healthy || m.Role != etcdv1.RoleVoter })
	if len(ms) == 0 {
		return "", false
	}
	slices.SortStableFunc(ms, func(a, b etcdv1.ClusterMemberStatus) int {
		switch {
		case a.Leader == b.Leader:
			return 0
		case a.Leader:
			return 1
		}
		return -1
	})
	return ms[0].Name, true
}

// collect reads the agent's result once its Pod ended.
func (r *Reconciler) collect(_ context.Context, s *scope) (ctrl.Result, error) {
	res, done := agent.PodResult(s.pod)
	if !done {
		return ctrl.Result{}, nil
	}
	b := s.backup
	if pvc := b.Spec.Destination.PVC; pvc != nil && res.Key != "" {
		res.URI = resources.PVCURI(pvc, res.Key)
	}
	s.result = &res
	b.Status.CompletionTime = &metav1.Time{Time: s.now}
	if res.Error == "" {
		b.Status.Key, b.Status.URI, b.Status.Size, b.Status.SHA256 = res.Key, res.URI, res.Size, res.SHA256
		b.Status.Revision, b.Status.EtcdVersion = res.Revision, res.EtcdVersion
	} else if res.Key != "" {
		// What a failed run may have left is deleted with the EtcdBackup.
		b.Status.Key, b.Status.URI = res.Key, res.URI
	}
	return ctrl.Result{}, nil
}
