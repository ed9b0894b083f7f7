package member

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// cacheLag is how soon a pass that found the cache behind this controller's
// own last status write runs again, should that write's watch event not
// bring it back first.
const cacheLag = time.Second

// scope is what one reconcile of a member learns.
type scope struct {
	member *etcdv1.EtcdMember
	base   *etcdv1.EtcdMember

	registered bool
	pvc        *corev1.PersistentVolumeClaim
	pod        *corev1.Pod
	// dataLost: the member's data is gone (its PVC vanished after it was
	// created, or its tmpfs Pod went away); it must be replaced.
	dataLost bool
	// dataRefused is why the check before etcd refused to start the
	// member (pkg/agent check-data), if it did.
	dataRefused string
	// podLost: the member is lost because its Pod was lost with its node
	// (dataRefused says how), not because its data is gone.
	podLost bool
	// waitingForTLS: the member's first Pod waits for the cluster's
	// TLSReady condition.
	waitingForTLS bool
	// restarting: the Pod was deleted to start again with a new spec.
	restarting bool
	// suspended: the cluster's Suspended condition is True, so the member
	// runs no Pod and keeps its volume.
	suspended bool
	// lostCheck is how soon to look again at a terminating Pod that may
	// turn out lost with its node.
	lostCheck time.Duration
	// expandRefused says why the API server refused to grow the volume.
	expandRefused string
	// podRefused is why the API server refuses the member's Pod as its
	// spec builds it: the running Pod, if any, is kept.
	podRefused string
	// volume is what became of the PVC of a member whose cluster keeps
	// its volumes (spec.deletionPolicy Retain).
	volume retainedVolume
}

type retainedVolume int

const (
	volumeUnknown retainedVolume = iota
	volumeNone
	volumeReleased
)

// Reconcile keeps the member's PVC and Pod.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	m := &etcdv1.EtcdMember{}
	if err := r.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.Behind(m) {
		return ctrl.Result{RequeueAfter: cacheLag}, nil
	}
	s := &scope{member: m, base: m.DeepCopy(), registered: registered(m)}
	defer func() {
		setReadyCondition(s)
		setServingCondition(s)
		setVolumeRetainedCondition(s)
		rv, err := kube.ApplyStatus(ctx, r.Client, ControllerName, s.base, m)
		if rv != "" {
			r.written.Record(m, rv)
		}
		retErr = errors.Join(retErr, client.IgnoreNotFound(err))
	}()
	if m.Spec.DeletionPolicy == etcdv1.DeletionPolicyRetain {
		// The cluster is being deleted and keeps its volumes: release the
		// PVC and start nothing more, deleted or not.
		return kube.Run(ctx, s, r.observe, r.retainVolume)
	}
	if !m.DeletionTimestamp.IsZero() {
		// Still observed: a member on its way out whose data is gone says
		// so (Ready DataLost), which an automatic quorum recovery needs to
		// know that it holds no write.
		return kube.Run(ctx, s, r.observe, r.stopWhenFenced, r.reconcileDelete)
	}
	// 1. observe the cluster, the PVC and the Pod; 2. create the PVC;
	// 3. grow it to the spec's size; 4. stop the Pod of a fenced member
	// and 5. of a suspended cluster; 6. delete a Pod that failed for good;
	// 7. restart a Pod built from an older spec; 8. create the Pod; 9. keep
	// its serving label (spec.drained); 10. force the end of a Pod lost
	// with its node.
	res, err := kube.Run(ctx, s, r.observe, r.ensurePVC, r.expandPVC, r.stopWhenFenced, r.stopWhenSuspended, r.replaceFailedPod, r.restartForSpec, r.ensurePod, r.syncServing, r.releaseLostPod)
	if err == nil && res.IsZero() && s.lostCheck > 0 {
		// Nothing else wakes us when a terminating Pod's node is gone.
		res.RequeueAfter = s.lostCheck
	}
	return res, err
}

func (r *Reconciler) observe(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.member
	c := &etcdv1.EtcdCluster{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, c); {
	case err == nil:
		// Once True, Suspended stays True while spec.suspend does, even
		// before the data controller restamps it for a later generation.
		s.suspended = c.Spec.Suspend && meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1.ConditionSuspended)
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("get cluster %s: %w", m.Spec.ClusterName, err)
	}
	pod := &corev1.Pod{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Name}, pod); {
	case err == nil:
		s.pod = pod
		m.Status.PodName = pod.Name
		s.dataRefused = dataRefused(pod)
		if s.dataRefused == "" {
			s.dataRefused = etcdRefusedData(pod)
		}
	case !apierrors.IsNotFound(err):
		return ctrl.Result{}, fmt.Errorf("get pod %s: %w", m.Name, err)
	}
	if s.dataRefused == "" && s.pod != nil {
		s.dataRefused, s.lostCheck = r.podLost(ctx, s.pod, time.Now())
		s.podLost = s.dataRefused != ""
	}
	if s.dataRefused != "" {
		// The check before etcd found no data, or another member's, under a
		// member that ran before, or etcd refused it, or the Pod's node is
		// gone with it: the member is lost, never started without it.
		s.dataLost = true
		return ctrl.Result{}, nil
	}
	if !resources.UsesPVC(m) {
		// A tmpfs member's data lives as long as its Pod.
		s.dataLost = s.pod == nil && m.Status.PodName != "" && r.goneForSure(ctx, &corev1.Pod{}, m.Namespace, m.Name)
		return ctrl.Result{}, nil
	}
	pvc := &corev1.PersistentVolumeClaim{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: resources.PVCName(m.Name)}, pvc); {
	case err == nil:
		// Recorded again should the write that recorded it with the first
		// Pod have been lost.
		s.pvc, m.Status.PVCName = pvc, pvc.Name
		s.dataLost = !pvc.DeletionTimestamp.IsZero() && ranOn(m)
	case apierrors.IsNotFound(err):
		// The cache may lag behind a PVC just created: only the API server
		// itself may say that the volume of a member that ran is gone.
		s.dataLost = ranOn(m) && r.goneForSure(ctx, pvc, m.Namespace, resources.PVCName(m.Name))
	default:
		return ctrl.Result{}, fmt.Errorf("get pvc of %s: %w", m.Name, err)
	}
	return ctrl.Result{}, nil
}

// ensurePVC creates the PVC at once, before the member is registered, so
// that provisioning overlaps with the membership change.
func (r *Reconciler) ensurePVC(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.member
	if !resources.UsesPVC(m) || s.pvc != nil || s.dataLost {
		return ctrl.Result{}, nil
	}
	pvc := resources.MemberPVC(m)
	if err := controllerutil.SetControllerReference(m, pvc, r.Scheme()); err != nil {
		return ctrl.Result{}, fmt.Errorf("own pvc of %s: %w", m.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Creating PVC", "pvc", pvc.Name)
	if err := r.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) && !namespaceTerminating(err) {
		return ctrl.Result{}, fmt.Errorf("create pvc %s: %w", pvc.Name, err)
	}
	s.pvc = pvc
	m.Status.PVCName = pvc.Name
	objectsCreated.WithLabelValues("pvc").Inc()
	return ctrl.Result{}, nil
}

// restartForSpec deletes the Pod of a member whose spec changed since the
// Pod was built (resources.PodSpecHash): a new version, image, resources,
// Pod template, options or trusted CAs. ensurePod then starts it again, on
// the same volume with the same identity. The cluster controller changes
// the spec of one member at a time, and only while the others are healthy,
// so this never costs the quorum. A Pod made before Pods carried the hash
// is given its member's hash instead.
func (r *Reconciler) restartForSpec(ctx context.Context, s *scope) (ctrl.Result, error) {
	m, p := s.member, s.pod
	if p == nil || !p.DeletionTimestamp.IsZero() || s.suspended {
		return ctrl.Result{}, nil
	}
	if resources.NeedsHashStamp(m, p) {
		ctrl.LoggerFrom(ctx).Info("Stamping the spec hash on a Pod made by an earlier operator", "pod", p.Name)
		patch := client.MergeFrom(p.DeepCopy())
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[etcdv1.PodSpecHashAnnotation] = resources.PodSpecHash(m)
		if err := r.Patch(ctx, p, patch); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("stamp pod %s: %w", p.Name, err)
		}
		return ctrl.Result{}, nil
	}
	if resources.PodUpToDate(m, p) {
		return ctrl.Result{}, nil
	}
	// The running Pod goes only once the API server would take the new
	// one: a spec it refuses must not cost a running member.
	if refused, err := r.refusesPod(ctx, s); err != nil || refused {
		return ctrl.Result{}, err
	}
	ctrl.LoggerFrom(ctx).Info("Restarting the Pod to take the member's new spec", "pod", p.Name, "hash", resources.PodSpecHash(m))
	if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	r.Recorder.Eventf(m, p, corev1.EventTypeNormal, "PodRestarted", "Restart", "Pod %s restarts to take the member's new spec (version %s)", p.Name, m.Spec.Version)
	// The Pod's deletion wakes this controller to start it again.
	s.restarting = true
	return ctrl.Result{}, nil
}

// registered says whether the member may run: etcd lists it (Registered
// True for the member's generation, from the cluster controller), or it is
// an initial member of a cluster etcd has not formed yet, which is in the
// initial cluster by construction and has no Registered condition until
// etcd answers (a condition of any kind then decides).
func registered(m *etcdv1.EtcdMember) bool {
	if meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionRegistered) != nil {
		return kube.IsTrue(m.Status.Conditions, etcdv1.ConditionRegistered, m.Generation)
	}
	return m.Spec.InitialClusterState == etcdv1.InitialClusterStateNew
}

// ranOn says whether the member's recorded volume may hold its data: a
// Pod of the member has existed. A PVC lost before is simply made again.
func ranOn(m *etcdv1.EtcdMember) bool {
	return m.Status.PVCName != "" && m.Status.PodName != ""
}

// replaceFailedPod deletes a Pod that has ended for good (phase Failed: an
// eviction, a node's graceful shutdown); ensurePod starts a new one on the
// same volume, with the same identity. The kubelet never restarts a Failed
// Pod, so without this the member would stay down.
func (r *Reconciler) replaceFailedPod(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := s.pod
	if p == nil || !p.DeletionTimestamp.IsZero() || p.Status.Phase != corev1.PodFailed || s.dataLost {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Replacing a failed Pod", "pod", p.Name, "reason", p.Status.Reason, "message", p.Status.Message)
	if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("delete failed pod %s: %w", p.Name, err)
	}
	r.Recorder.Eventf(s.member, p, corev1.EventTypeWarning, "PodFailed", "Restart", "Pod %s failed (%s: %s); a new Pod starts on the same volume", p.Name, p.Status.Reason, p.Status.Message)
	s.restarting = true
	return ctrl.Result{}, nil
}

// dataRefused is the message of the member's check-data init container
// when it refused the data directory (DataLost or ForeignData).
// etcd exits on a data directory it cannot read with one of
// refusedDataContexts, and, when the data itself is damaged, one of
// refusedDataCauses: a database file that is not a bbolt file any more, a
// WAL or snapshot whose checksum fails. The same contexts also wrap errors
// of the machine (permission denied, an I/O error, a full or read-only
// disk), which a restart or a person may fix: those are not given up on.
var (
	refusedDataContexts = []string{
		"failed to open database",
		"failed to recover v3 backend from snapshot",
		"failed to find database snapshot file",
		"failed to open WAL",
		"failed to read WAL",
		"failed to recover v2 store",
	}
	refusedDataCauses = []string{"invalid database", "crc mismatch", "file size too small", "unexpected EOF", "invalid page type"}
	machineErrors     = []string{"permission denied", "input/output error", "read-only file system", "no space left on device"}
)

// refusedDataRestarts is how many times etcd must have exited refusing
// its data before the member is given up: once may be a disk that was
// not ready.
const refusedDataRestarts = 2

// etcdRefusedData says why the etcd container keeps exiting on its data,
// from the end of its log the kubelet kept as the termination message, or
// "" when it does not: only while the container is backing off from a
// crash loop (one that restarted and runs is fine), and only for damaged
// data.
func etcdRefusedData(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.LastTerminationState.Terminated
		w := cs.State.Waiting
		if cs.Name != resources.EtcdContainer || cs.Ready || w == nil || w.Reason != "CrashLoopBackOff" ||
			cs.RestartCount < refusedDataRestarts || t == nil || t.ExitCode == 0 {
			continue
		}
		contains := func(list []string) string {
			for _, s := range list {
				if strings.Contains(t.Message, s) {
					return s
				}
			}
			return ""
		}
		ctx, cause := contains(refusedDataContexts), contains(refusedDataCauses)
		if ctx == "" || cause == "" || contains(machineErrors) != "" {
			continue
		}
		return fmt.Sprintf("etcd exited %d times refusing its data directory (%q: %q, exit code %d)", cs.RestartCount, ctx, cause, t.ExitCode)
	}
	return ""
}

// podLost says why a Pod that has been terminating for LostPodTimeout past
// its grace period counts as lost with its node, or "" and how soon to
// look again while it is terminating. A Pod whose node is there and Ready
// is not lost, however long it takes (a volume slow to unmount): the
// node is read straight from the API server when the operator may read
// Nodes; where it may not (an install limited to some namespaces), the
// timeout alone decides.
func (r *Reconciler) podLost(ctx context.Context, p *corev1.Pod, now time.Time) (string, time.Duration) {
	if r.LostPodTimeout <= 0 || p.DeletionTimestamp.IsZero() {
		return "", 0
	}
	// The deletion timestamp is already the end of the grace period.
	stuck := now.Sub(p.DeletionTimestamp.Time)
	if stuck < r.LostPodTimeout {
		return "", r.LostPodTimeout - stuck
	}
	node := p.Spec.NodeName
	if node == "" {
		node = "no node"
	} else if r.nodeReady(ctx, node) {
		return "", r.LostPodTimeout
	}
	return fmt.Sprintf("Pod %s on %s has been terminating for %s past its grace period: its node does not confirm its end (node lost?)", p.Name, node, stuck.Round(time.Second)), 0
}

// nodeReady says whether the node exists, is not being deleted, and is
// Ready; false also when it cannot be read.
func (r *Reconciler) nodeReady(ctx context.Context, name string) bool {
	if r.APIReader == nil {
		return false
	}
	n := &corev1.Node{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
		return false
	}
	if !n.DeletionTimestamp.IsZero() {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// releaseLostPod deletes a Pod lost with its node without waiting for its
// kubelet, which will never answer, and says so once; the member is
// replaced meanwhile.
func (r *Reconciler) releaseLostPod(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := s.pod
	if !s.dataLost || p == nil || p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	if msg, _ := r.podLost(ctx, p, time.Now()); msg == "" {
		return ctrl.Result{}, nil
	}
	if p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds > 0 {
		ctrl.LoggerFrom(ctx).Info("Deleting a Pod lost with its node", "pod", p.Name, "node", p.Spec.NodeName)
		if err := r.Delete(ctx, p, client.GracePeriodSeconds(0), client.Preconditions{UID: &p.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("delete lost pod %s: %w", p.Name, err)
		}
	}
	if c := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionReady); c == nil || c.Reason != etcdv1.ReasonPodLost {
		r.Recorder.Eventf(s.member, p, corev1.EventTypeWarning, "PodLost", "Delete", "Pod %s on %s did not end within %s of its grace period; the member is replaced", p.Name, p.Spec.NodeName, r.LostPodTimeout)
	}
	return ctrl.Result{}, nil
}

func dataRefused(p *corev1.Pod) string {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name != resources.CheckDataContainer {
			continue
		}
		for _, t := range []*corev1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t == nil || t.ExitCode == 0 {
				continue
			}
			if res, err := agent.ParseResult(t.Message); err == nil && (res.Reason == agent.ReasonDataLost || res.Reason == agent.ReasonForeignData) {
				return res.Error
			}
		}
	}
	return ""
}

// ensurePod creates the Pod of a registered member, or the first Pod of a
// prepared joiner. A Pod that is still terminating is waited for (its
// deletion wakes this controller up).
func (r *Reconciler) ensurePod(ctx context.Context, s *scope) (ctrl.Result, error) {
	m := s.member
	// A joiner's first Pod is made at once, before etcd lists the member:
	// its etcd waits behind the join gate (resources.JoinsGated), so the
	// Pod's scheduling, volume and image start overlap with the
	// membership change. Any other Pod waits until etcd lists the member.
	prepared := resources.JoinsGated(m, m.Status.PodName == "")
	if (!s.registered && !prepared) || s.dataLost || s.pod != nil || s.restarting || s.suspended || m.Spec.Fenced {
		return ctrl.Result{}, nil
	}
	var after []string
	if m.Status.PodName != "" {
		var err error
		if after, err = r.peersBefore(ctx, m); err != nil {
			return ctrl.Result{}, err
		}
	}
	if m.Spec.TLS != nil && m.Status.PodName == "" {
		// Later Pods of the member mount the Secrets its first Pod ran with,
		// which the tls controller only ever replaces with good ones.
		ready, err := r.clusterTLSReady(ctx, m)
		if err != nil || !ready {
			s.waitingForTLS = !ready
			return ctrl.Result{}, err
		}
	}
	if resources.UsesPVC(m) {
		// The volume is recorded with the first Pod, in the status write
		// of this pass: from then on a member whose recorded volume is
		// gone is lost, never started on a new empty one (ranOn). What
		// protects a member that ran is the Pod's record (status.podName,
		// which makes later Pods check their data before etcd starts).
		m.Status.PVCName = resources.PVCName(m.Name)
	}
	pod := resources.MemberPod(m, m.Status.PodName == "")
	resources.StartsAfter(pod, m, after)
	if err := controllerutil.SetControllerReference(m, pod, r.Scheme()); err != nil {
		return ctrl.Result{}, fmt.Errorf("own pod of %s: %w", m.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Creating Pod", "pod", pod.Name, "firstPod", m.Status.PodName == "")
	if err := r.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) && !namespaceTerminating(err) {
		if why := podRefusal(err); why != "" {
			// Retrying changes nothing: a change of the spec wakes us.
			s.podRefused = why
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("create pod %s: %w", pod.Name, err)
	}
	s.pod = pod
	m.Status.PodName = pod.Name
	objectsCreated.WithLabelValues("pod").Inc()
	return ctrl.Result{}, nil
}

// syncServing keeps the Pod's serving label as spec.drained says: the
// client Service selects on it, so a drained member gets no new client
// connections. Labels change in place; nothing restarts.
func (r *Reconciler) syncServing(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := s.pod
	want := resources.ServingValue(s.member)
	if p == nil || !p.DeletionTimestamp.IsZero() || p.Labels[etcdv1.ServingLabel] == want {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Setting the Pod's serving label", "pod", p.Name, "serving", want)
	patch := client.MergeFrom(p.DeepCopy())
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[etcdv1.ServingLabel] = want
	if err := r.Patch(ctx, p, patch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(fmt.Errorf("label pod %s serving=%s: %w", p.Name, want, err))
	}
	return ctrl.Result{}, nil
}

// stopWhenFenced deletes the Pod of a fenced member (spec.fenced: the
// cluster controller is about to force another member with
// --force-new-cluster), a member being deleted included; ensurePod starts
// none while the member is fenced. The PVC stays.
func (r *Reconciler) stopWhenFenced(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := s.pod
	if !s.member.Spec.Fenced || p == nil || !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Stopping the Pod of a fenced member", "pod", p.Name)
	if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("delete pod %s of fenced member: %w", p.Name, err)
	}
	r.Recorder.Eventf(s.member, p, corev1.EventTypeWarning, "PodFenced", "Fence", "Pod %s stopped: the member is fenced while another member is forced to recover the cluster's quorum; the volume %s keeps the data", p.Name, s.member.Status.PVCName)
	return ctrl.Result{}, nil
}

// stopWhenSuspended deletes the Pod of a member of a suspended cluster. The
// EtcdMember and its PVC stay, so the member starts again with its data and
// member ID. etcd has written every committed entry to its WAL, so the
// Pods of every member may stop at once.
func (r *Reconciler) stopWhenSuspended(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := s.pod
	if !s.suspended || p == nil || !p.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Stopping the Pod of a suspended cluster", "pod", p.Name)
	if err := r.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("delete pod %s: %w", p.Name, err)
	}
	r.Recorder.Eventf(s.member, p, corev1.EventTypeNormal, "PodStopped", "Suspend", "Pod %s stopped: the cluster is suspended; the volume %s keeps the data", p.Name, s.member.Status.PVCName)
	return ctrl.Result{}, nil
}

// expandPVC grows the member's PVC to the size of its spec. The cluster
// controller raises that size when spec.storage.size grows; the volume's
// driver does the rest online. A refusal (the StorageClass does not allow
// expansion) is recorded, not retried: the data controller's StorageReady
// condition tells the user, and a change of the member or PVC brings the
// next try.
func (r *Reconciler) expandPVC(ctx context.Context, s *scope) (ctrl.Result, error) {
	pvc, want := s.pvc, s.member.Spec.Storage.Size
	if pvc == nil || want == nil || !pvc.DeletionTimestamp.IsZero() || pvc.ResourceVersion == "" {
		return ctrl.Result{}, nil
	}
	have := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if have.Cmp(*want) >= 0 {
		return ctrl.Result{}, nil
	}
	ctrl.LoggerFrom(ctx).Info("Expanding the PVC", "pvc", pvc.Name, "from", have.String(), "to", want.String())
	patch := client.MergeFrom(pvc.DeepCopy())
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = want.DeepCopy()
	switch err := r.Patch(ctx, pvc, patch); {
	case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
		s.expandRefused = err.Error()
		ctrl.LoggerFrom(ctx).Info("The PVC cannot be expanded", "pvc", pvc.Name, "error", err.Error())
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("expand pvc %s: %w", pvc.Name, err)
	}
	r.Recorder.Eventf(s.member, pvc, corev1.EventTypeNormal, "VolumeExpanding", "Expand", "PVC %s asked to grow from %s to %s", pvc.Name, have.String(), want.String())
	return ctrl.Result{}, nil
}

// clusterTLSReady says whether the member's cluster has its certificates;
// a change of the condition wakes this controller.
func (r *Reconciler) clusterTLSReady(ctx context.Context, m *etcdv1.EtcdMember) (bool, error) {
	c := &etcdv1.EtcdCluster{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}, c); {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get cluster %s: %w", m.Spec.ClusterName, err)
	}
	return kube.IsTrue(c.Status.Conditions, etcdv1.ConditionTLSReady, c.Generation), nil
}

// namespaceTerminating: the namespace is going away with the member in it;
// nothing is left to create, and the member's own deletion follows.
func namespaceTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

// goneForSure asks the API server, not the cache, whether an object is gone.
func (r *Reconciler) goneForSure(ctx context.Context, obj client.Object, namespace, name string) bool {
	if r.APIReader == nil {
		return true
	}
	return apierrors.IsNotFound(r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj))
}

// refusesPod asks the API server, with a server-side dry run, whether it
// would create the member's Pod as its spec now builds it, and records why
// not. The dry run is of a Pod of a generated name, so that the running
// Pod of the same name does not answer for it.
func (r *Reconciler) refusesPod(ctx context.Context, s *scope) (bool, error) {
	m := s.member
	pod := resources.MemberPod(m, m.Status.PodName == "")
	if err := controllerutil.SetControllerReference(m, pod, r.Scheme()); err != nil {
		return false, fmt.Errorf("own pod of %s: %w", m.Name, err)
	}
	pod.GenerateName, pod.Name = pod.Name+"-", ""
	err := r.Create(ctx, pod, client.DryRunAll)
	if err == nil {
		return false, nil
	}
	if why := podRefusal(err); why != "" {
		ctrl.LoggerFrom(ctx).Info("The API server refuses the member's new Pod; the running Pod is kept", "why", why)
		s.podRefused = why
		return true, nil
	}
	return false, fmt.Errorf("dry run of the new pod of %s: %w", m.Name, err)
}

// podRefusal is the API server's message when err refuses a Pod for what
// it is (invalid, or forbidden by an admission policy), "" for an error a
// later try may not meet (a quota exceeded while the old Pod still
// counts, a timeout).
func podRefusal(err error) string {
	switch {
	case apierrors.IsInvalid(err):
	case apierrors.IsForbidden(err) && !strings.Contains(err.Error(), "exceeded quota"):
	default:
		return ""
	}
	msg := err.Error()
	if len(msg) > 1024 {
		msg = msg[:1024] + "..."
	}
	return msg
}

// peersBefore are the peer URLs of the members named before m, while no
// member of m's cluster is Ready (a resume from suspend, every Pod lost at
// once): m's etcd starts once each of them serves its peers (the agent's
// gate, resources.StartsAfter). etcd's initial corruption check asks every
// peer for its data's hash before the member serves: a peer that is not
// listening answers at once (connection refused), but one that listens and
// is in its own check answers nothing until the request's 7 s timeout, and
// the raft streams take as long again. Members that started together
// waited on each other that way (a 3-member cluster took 10 to 17 s to
// resume); started in name order, each finds its peers serving or not
// listening. The Pods are all made at once: only etcd's start waits. With
// a Ready member, or for a member's first Pod, none. Members being
// deleted, fenced, or that never ran do not count.
func (r *Reconciler) peersBefore(ctx context.Context, m *etcdv1.EtcdMember) ([]string, error) {
	members := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, members, kube.OfCluster(m.Namespace, m.Spec.ClusterName)...); err != nil {
		return nil, fmt.Errorf("list the members of cluster %s: %w", m.Spec.ClusterName, err)
	}
	slices.SortFunc(members.Items, func(a, b etcdv1.EtcdMember) int { return strings.Compare(a.Name, b.Name) })
	var before []string
	for _, o := range members.Items {
		if kube.IsTrue(o.Status.Conditions, etcdv1.ConditionReady, o.Generation) {
			return nil, nil
		}
		if o.Name < m.Name && o.DeletionTimestamp.IsZero() && !o.Spec.Fenced && o.Status.PodName != "" {
			before = append(before, o.Spec.PeerURL)
		}
	}
	return before, nil
}
