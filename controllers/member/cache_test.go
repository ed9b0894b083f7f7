package member

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// cachedPod is p as the operator's cache keeps it: through the Pod
// transform of kube.CacheOptions.
func cachedPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	for o, by := range kube.CacheOptions("").ByObject {
		if _, ok := o.(*corev1.Pod); ok {
			out, err := by.Transform(p.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			return out.(*corev1.Pod)
		}
	}
	t.Fatal("no Pod entry in the cache options")
	return nil
}

// served adds to p what the API server, admission and the kubelet set on
// a real Pod and the controllers never read: all of it must make no
// difference.
func served(p *corev1.Pod) {
	p.ResourceVersion, p.Generation, p.CreationTimestamp = "777", 1, metav1.Now()
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "etcd.raftsman.io/v1alpha1", Kind: "EtcdMember", Name: "demo-a", UID: "uid-a", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}, Subresource: "status"}}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations["k8s.v1.cni.cncf.io/network-status"] = `[{"name":"cilium","ips":["10.244.3.17"]}]`
	p.Spec.DNSPolicy, p.Spec.SchedulerName, p.Spec.ServiceAccountName = corev1.DNSClusterFirst, corev1.DefaultSchedulerName, "default"
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy:3128"})
		p.Spec.Containers[i].TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if p.Spec.NodeName != "" {
		p.Status.HostIP, p.Status.HostIPs = "10.0.0.7", []corev1.HostIP{{IP: "10.0.0.7"}}
		p.Status.PodIP, p.Status.PodIPs = "10.244.3.17", []corev1.PodIP{{IP: "10.244.3.17"}}
		p.Status.StartTime = &p.CreationTimestamp
	}
	p.Status.QOSClass = corev1.PodQOSBurstable
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			cs.Image, cs.ImageID = "quay.io/coreos/etcd:v3.6.16", "quay.io/coreos/etcd@sha256:0123"
			cs.ContainerID, cs.Started = "containerd://abc", ptr.To(cs.State.Running != nil)
			cs.VolumeMounts = []corev1.VolumeMountStatus{{Name: "data", MountPath: "/var/lib/etcd"}}
		}
	}
}

func podCondition(t corev1.PodConditionType, ok bool, reason, msg string) corev1.PodCondition {
	s := corev1.ConditionFalse
	if ok {
		s = corev1.ConditionTrue
	}
	return corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

// interestingPods are the member Pods the controller must tell apart, as
// change functions on runningMember's Pod.
func interestingPods() []struct {
	name   string
	change func(*corev1.Pod)
	member func(*etcdv1.EtcdMember)
} {
	onNode := func(p *corev1.Pod) {
		p.Spec.NodeName = "node-gone"
		p.Status.Conditions = append(p.Status.Conditions, podCondition(corev1.PodScheduled, true, "", ""))
	}
	running := func(p *corev1.Pod) {
		onNode(p)
		p.Status.Phase = corev1.PodRunning
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(0, `{"member":"demo-a"}`, false)}
		p.Status.InitContainerStatuses[0].Ready = true
	}
	etcd := func(p *corev1.Pod, ready bool, state corev1.ContainerState, restarts int32, last *corev1.ContainerStateTerminated) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", Ready: ready, State: state, RestartCount: restarts, LastTerminationState: corev1.ContainerState{Terminated: last}}}
		p.Status.Conditions = append(p.Status.Conditions, podCondition(corev1.PodReady, ready, "", ""), podCondition(corev1.ContainersReady, ready, "", ""))
	}
	waiting := func(reason, msg string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
	runningState := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	terminating := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			running(p)
			etcd(p, true, runningState, 0, nil)
			p.Finalizers = []string{"test/keep"} // the fake client keeps a deleted object only with one
			// Half a second off the whole second, so that the message's
			// rounded duration is the same for both passes.
			p.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-ago - 500*time.Millisecond)}
			p.DeletionGracePeriodSeconds = ptr.To[int64](30)
		}
	}
	return []struct {
		name   string
		change func(*corev1.Pod)
		member func(*etcdv1.EtcdMember)
	}{
		{name: "ready", change: func(p *corev1.Pod) { running(p); etcd(p, true, runningState, 0, nil) }},
		{name: "ready after an OOM kill", change: func(p *corev1.Pod) {
			running(p)
			etcd(p, true, runningState, 1, &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"})
		}},
		{name: "starting", change: func(p *corev1.Pod) {
			onNode(p)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: resources.CheckDataContainer, State: waiting("PodInitializing", "")}}
			etcd(p, false, waiting("PodInitializing", ""), 0, nil)
		}},
		{name: "running, not ready yet (a learner)", change: func(p *corev1.Pod) { running(p); etcd(p, false, runningState, 0, nil) }},
		{name: "crash loop", change: func(p *corev1.Pod) {
			running(p)
			etcd(p, false, waiting("CrashLoopBackOff", "back-off 40s restarting failed container=etcd"), 3,
				&corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: `{"level":"fatal","msg":"unknown flag: --bogus"}`})
		}},
		{name: "crash loop of OOM kills", change: func(p *corev1.Pod) {
			running(p)
			etcd(p, false, waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=etcd"), 9,
				&corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"})
		}},
		{name: "image pull back-off", change: func(p *corev1.Pod) {
			running(p)
			p.Status.Phase = corev1.PodPending
			etcd(p, false, waiting("ImagePullBackOff", `Back-off pulling image "quay.io/coreos/etcd:v3.6.99"`), 0, nil)
		}},
		{name: "config error", change: func(p *corev1.Pod) {
			running(p)
			etcd(p, false, waiting("CreateContainerConfigError", `secret "demo-peer-tls" not found`), 0, nil)
		}},
		{name: "unschedulable", change: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.Conditions = []corev1.PodCondition{podCondition(corev1.PodScheduled, false, corev1.PodReasonUnschedulable,
				"0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")}
		}},
		{name: "evicted", change: func(p *corev1.Pod) {
			running(p)
			etcd(p, false, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "ContainerStatusUnknown"}}, 0, nil)
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91Mi."
			p.Status.Conditions = append(p.Status.Conditions, podCondition(corev1.DisruptionTarget, true, "TerminationByKubelet", "The node was low on resource: memory."))
		}},
		{name: "failed past its deadline", change: func(p *corev1.Pod) {
			running(p)
			etcd(p, false, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 143, Reason: "Error"}}, 0, nil)
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
		}},
		{name: "node shutdown", change: func(p *corev1.Pod) {
			running(p)
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Terminated", "Pod was terminated in response to imminent node shutdown."
		}},
		{name: "terminating", change: terminating(10 * time.Second)},
		{name: "terminating past the lost timeout", change: terminating(2 * time.Minute)},
		{name: "terminating past the lost timeout, grace period already 0", change: func(p *corev1.Pod) {
			terminating(2 * time.Minute)(p)
			p.DeletionGracePeriodSeconds = ptr.To[int64](0)
		}},
		{name: "terminating past the lost timeout, never scheduled", change: func(p *corev1.Pod) {
			terminating(2 * time.Minute)(p)
			p.Spec.NodeName = ""
		}},
		{name: "data lost", change: func(p *corev1.Pod) {
			onNode(p)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(1, `{"error":"member demo-a ran before, and its data directory is missing","reason":"DataLost"}`, false)}
		}},
		{name: "foreign data, backing off", change: func(p *corev1.Pod) {
			onNode(p)
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(1, `{"error":"the volume holds the data of member demo-b","reason":"ForeignData"}`, true)}
		}},
		{name: "etcd refuses its data", change: func(p *corev1.Pod) {
			running(p)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{etcdExited(3, panicOpenDB)}
		}},
		{name: "drained", member: func(m *etcdv1.EtcdMember) { m.Spec.Drained = true }, change: func(p *corev1.Pod) {
			running(p)
			etcd(p, true, runningState, 0, nil)
			p.Labels[etcdv1.ServingLabel] = "false"
		}},
		{name: "being drained", member: func(m *etcdv1.EtcdMember) { m.Spec.Drained = true }, change: func(p *corev1.Pod) {
			running(p)
			etcd(p, true, runningState, 0, nil)
		}},
		{name: "older spec", member: func(m *etcdv1.EtcdMember) { m.Spec.Version, m.Spec.Image = "3.6.17", "quay.io/coreos/etcd:v3.6.17" }, change: func(p *corev1.Pod) {
			running(p)
			etcd(p, true, runningState, 0, nil)
		}},
		{name: "made before Pods carried the hash", change: func(p *corev1.Pod) {
			running(p)
			etcd(p, true, runningState, 0, nil)
			delete(p.Annotations, etcdv1.PodSpecHashAnnotation)
		}},
	}
}

// TestCachedPodAnswersLikeFullPod: every helper of the member controller
// that reads a Pod answers the same from the Pod the cache keeps as from
// the whole Pod, for every kind of Pod the controller must tell apart.
func TestCachedPodAnswersLikeFullPod(t *testing.T) {
	t.Parallel()
	now := time.Now()
	for _, tt := range interestingPods() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, _, full := runningMember(tt.change)
			if tt.member != nil {
				tt.member(m)
			}
			served(full)
			lean := cachedPod(t, full)
			r := &Reconciler{LostPodTimeout: time.Minute}
			answers := func(p *corev1.Pod) string {
				lost, again := r.podLost(context.Background(), p, now)
				return fmt.Sprintf("ready %v; failing %q; unschedulable %q; etcdRefusedData %q; dataRefused %q; lost %q again %v; "+
					"upToDate %v needsHash %v; failed %v %q %q; serving %q; terminating %v grace %v; node %q; uid %q",
					podReady(p), podFailing(p), unschedulable(p), etcdRefusedData(p), dataRefused(p), lost, again,
					resources.PodUpToDate(m, p), resources.NeedsHashStamp(m, p), p.Status.Phase == corev1.PodFailed, p.Status.Reason, p.Status.Message,
					p.Labels[etcdv1.ServingLabel], !p.DeletionTimestamp.IsZero(), ptr.Deref(p.DeletionGracePeriodSeconds, -1), p.Spec.NodeName, p.UID)
			}
			if got, want := answers(lean), answers(full); got != want {
				t.Errorf("cached Pod: %s\nwhole Pod:  %s", got, want)
			}
		})
	}
}

// durations are the rounded durations of messages, which two passes a
// moment apart may round differently.
var durations = regexp.MustCompile(`[0-9]+m[0-9]+s|[0-9]+(\.[0-9]+)?s`)

// TestReconcileOnCachedPod: the whole reconcile of a member decides the
// same from the Pod the cache keeps as from the whole Pod: the same
// conditions, the same Pods created and deleted, the same events, the same
// Pod left behind (labels and annotations it patched).
func TestReconcileOnCachedPod(t *testing.T) {
	t.Parallel()
	for _, tt := range interestingPods() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			type outcome struct {
				conds            []string
				creates, deletes int
				events           []string
				requeue          bool
				labels, ann      map[string]string
				podLeft          bool
			}
			run := func(lean bool) outcome {
				m, pvc, pod := runningMember(tt.change)
				if tt.member != nil {
					tt.member(m)
				}
				served(pod)
				if lean {
					pod = cachedPod(t, pod)
				}
				e := newUnitEnv(t, m, pvc, pod)
				e.r.LostPodTimeout = time.Minute
				var out outcome
				for range 2 {
					res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
					if err != nil {
						t.Fatalf("reconcile: %v", err)
					}
					out.requeue = out.requeue || res.RequeueAfter > 0
				}
				for _, typ := range []string{etcdv1.ConditionReady, etcdv1.ConditionServing} {
					if c := meta.FindStatusCondition(e.member().Status.Conditions, typ); c != nil {
						out.conds = append(out.conds, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, durations.ReplaceAllString(c.Message, "<d>")))
					}
				}
				out.creates, out.deletes = e.podCreates, e.podDeletes
				for _, ev := range e.events() {
					out.events = append(out.events, durations.ReplaceAllString(ev, "<d>"))
				}
				if p := e.pod(); p != nil {
					out.podLeft = true
					out.labels = p.Labels
					// Of the annotations, the operator's: the others are
					// dropped from the cached copy, never from the Pod.
					out.ann = map[string]string{}
					for k, v := range p.Annotations {
						if strings.HasPrefix(k, "etcd.raftsman.io/") {
							out.ann[k] = v
						}
					}
				}
				return out
			}
			full, lean := run(false), run(true)
			t.Logf("%+v", full)
			if !reflect.DeepEqual(lean, full) {
				t.Errorf("from the cached Pod:\n%+v\nfrom the whole Pod:\n%+v", lean, full)
			}
			if len(full.conds) == 0 {
				t.Error("no conditions written")
			}
		})
	}
}
