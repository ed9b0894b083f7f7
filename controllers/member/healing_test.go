package member

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/resources"
)

// unitEnv is one member under test: a fake API server and the reconciler.
// The test plays the cluster controller (Registered) and the kubelet (the
// Pod's status). It counts the Pods the reconciler creates and deletes.
type unitEnv struct {
	t   *testing.T
	c   client.Client
	r   *Reconciler
	rec *events.FakeRecorder
	m   *etcdv1.EtcdMember

	podCreates, podDeletes int
	// failStatus makes the member's status writes fail, as if the
	// operator died before it wrote the status.
	failStatus bool
}

// registeredMember is a member the cluster controller registered in etcd,
// whose first Pod has not been made yet.
func registeredMember() *etcdv1.EtcdMember {
	cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}, Spec: etcdv1.EtcdClusterSpec{TLS: etcdv1.TLSSpec{Disabled: true}}}
	peer := resources.PeerURL(cl, "demo-a", "cluster.local")
	return &etcdv1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-a", Namespace: "ns", UID: "uid-a", Generation: 1, Labels: resources.ClusterLabels("demo")},
		Spec: etcdv1.EtcdMemberSpec{
			ClusterName:         "demo",
			Version:             "3.6.16",
			Image:               "quay.io/coreos/etcd:v3.6.16",
			InitialClusterState: etcdv1.InitialClusterStateNew,
			InitialCluster:      resources.InitialCluster([][2]string{{"demo-a", peer}}),
			ClusterToken:        "uid-1",
			PeerURL:             peer,
			ClientURL:           resources.ClientURL(cl, "demo-a", "cluster.local"),
			AgentImage:          "ghcr.io/raftsman/raftsman:test",
		},
		Status: etcdv1.EtcdMemberStatus{Conditions: []metav1.Condition{{
			Type: etcdv1.ConditionRegistered, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonInitialMember, ObservedGeneration: 1,
		}}},
	}
}

// runningMember is a registered member whose first Pod was made on its PVC,
// and that Pod, as the kubelet reports it after change.
func runningMember(change func(*corev1.Pod)) (*etcdv1.EtcdMember, *corev1.PersistentVolumeClaim, *corev1.Pod) {
	m := registeredMember()
	m.Status.PVCName, m.Status.PodName = resources.PVCName(m.Name), m.Name
	pod := resources.MemberPod(m, true)
	pod.UID = "pod-1"
	pod.Status.Phase = corev1.PodRunning
	if change != nil {
		change(pod)
	}
	return m, resources.MemberPVC(m), pod
}

func newUnitEnv(t *testing.T, m *etcdv1.EtcdMember, objs ...client.Object) *unitEnv {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cluster := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", Generation: 1}, Spec: etcdv1.EtcdClusterSpec{TLS: etcdv1.TLSSpec{Disabled: true}}}
	e := &unitEnv{t: t, m: m, rec: events.NewFakeRecorder(100)}
	e.c = fake.NewClientBuilder().WithTypeConverters(testenv.TypeConverters(t)...).WithScheme(s).
		WithObjects(append(objs, cluster, m)...).
		WithStatusSubresource(&etcdv1.EtcdMember{}, &etcdv1.EtcdCluster{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*corev1.Pod); ok {
					e.podCreates++
				}
				return c.Create(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if _, ok := obj.(*corev1.Pod); ok {
					e.podDeletes++
				}
				return c.Delete(ctx, obj, opts...)
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				if e.failStatus {
					return errors.New("operator killed before the status write")
				}
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		}).
		Build()
	e.r = &Reconciler{Client: e.c, APIReader: e.c, Recorder: e.rec}
	return e
}

func (e *unitEnv) reconcile() error {
	e.t.Helper()
	_, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(e.m)})
	return err
}

func (e *unitEnv) mustReconcile() {
	e.t.Helper()
	if err := e.reconcile(); err != nil {
		e.t.Fatalf("reconcile: %v", err)
	}
}

func (e *unitEnv) member() *etcdv1.EtcdMember {
	e.t.Helper()
	m := &etcdv1.EtcdMember{}
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(e.m), m); err != nil {
		e.t.Fatal(err)
	}
	return m
}

// pod is the member's Pod, or nil.
func (e *unitEnv) pod() *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{}
	err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: e.m.Name}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *unitEnv) ready() metav1.Condition {
	e.t.Helper()
	if c := meta.FindStatusCondition(e.member().Status.Conditions, etcdv1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func (e *unitEnv) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// checkData is the check-data init container's status after it exited.
func checkData(exitCode int32, msg string, last bool) corev1.ContainerStatus {
	t := &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: "Error", Message: msg}
	cs := corev1.ContainerStatus{Name: resources.CheckDataContainer}
	if last {
		// Restarted by the kubelet, and backing off now.
		cs.LastTerminationState.Terminated = t
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	} else {
		cs.State.Terminated = t
	}
	return cs
}

func TestFailedPodIsReplaced(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		pod         func(*corev1.Pod)
		wantDeleted bool
	}{
		{name: "evicted", wantDeleted: true, pod: func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		}},
		{name: "node shutdown", wantDeleted: true, pod: func(p *corev1.Pod) {
			p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Terminated", "Pod was terminated in response to imminent node shutdown."
		}},
		{name: "running", pod: func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning }},
		{name: "pending", pod: func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, pvc, pod := runningMember(tt.pod)
			e := newUnitEnv(t, m, pvc, pod)
			e.mustReconcile()

			evs := e.events()
			failed := slices.DeleteFunc(slices.Clone(evs), func(ev string) bool { return !strings.HasPrefix(ev, "Warning PodFailed ") })
			if !tt.wantDeleted {
				if p := e.pod(); p == nil || p.UID != pod.UID || e.podDeletes != 0 || len(failed) != 0 {
					t.Errorf("a %s Pod was replaced: pod %v, %d deletes, events %v", pod.Status.Phase, p, e.podDeletes, evs)
				}
				return
			}
			if p := e.pod(); p != nil {
				t.Fatalf("failed Pod still there: %+v", p.Status)
			}
			if len(failed) != 1 || !strings.Contains(failed[0], pod.Status.Reason) || !strings.Contains(failed[0], pod.Name) {
				t.Errorf("events = %v, want one Warning PodFailed naming the Pod and %q", evs, pod.Status.Reason)
			}
			if r := e.ready(); r.Status != metav1.ConditionFalse || r.Reason != etcdv1.ReasonRestarting {
				t.Errorf("Ready = %+v, want False Restarting", r)
			}
			if e.podCreates != 0 {
				t.Errorf("%d Pods created in the pass that deleted the failed one", e.podCreates)
			}

			// The next pass (the deletion wakes it) starts a new Pod on
			// the same volume, not as a first Pod.
			e.mustReconcile()
			p := e.pod()
			if p == nil || e.podCreates != 1 {
				t.Fatalf("no new Pod after the failed one went (%d creates)", e.podCreates)
			}
			if p.Status.Phase == corev1.PodFailed {
				t.Errorf("new Pod is Failed")
			}
			if got := e.member(); got.Status.PodName != p.Name || got.Status.PVCName != pvc.Name {
				t.Errorf("status podName %q pvcName %q, want %q %q", got.Status.PodName, got.Status.PVCName, p.Name, pvc.Name)
			}
			for _, ic := range p.Spec.InitContainers {
				if ic.Name == resources.CheckDataContainer && slices.Contains(ic.Args, "--first-pod") {
					t.Errorf("the replacement Pod's data check runs as a first Pod: %q", ic.Args)
				}
			}
			if evs := e.events(); slices.ContainsFunc(evs, func(ev string) bool { return strings.HasPrefix(ev, "Warning PodFailed ") }) {
				t.Errorf("PodFailed again for the new Pod: %v", evs)
			}
		})
	}
}

// panicOpenDB is the end of etcd 3.6's log when its database file is not
// a bbolt file any more, as the kubelet keeps it (FallbackToLogsOnError).
const panicOpenDB = `{"level":"panic","caller":"backend/backend.go:205","msg":"failed to open database","path":"/var/lib/etcd/default.etcd/member/snap/db","error":"invalid database"}
panic: failed to open database`

// etcdExited is the etcd container after it exited restarts times, the
// last time with message.
func etcdExited(restarts int32, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "etcd", RestartCount: restarts,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: message}}}
}

func TestDataRefusedMarksMemberDataLost(t *testing.T) {
	t.Parallel()
	const lost = `{"error":"member demo-a ran before, and its data directory /var/lib/etcd/default.etcd is missing","reason":"DataLost"}`
	const foreign = `{"error":"the volume holds the data of member demo-b","reason":"ForeignData"}`
	tests := []struct {
		name string
		pod  func(*corev1.Pod)
		// wantErr is the check's error the Ready message carries, or ""
		// when the member is not lost.
		wantErr string
	}{
		{name: "data lost, init container terminated", wantErr: "its data directory /var/lib/etcd/default.etcd is missing", pod: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(1, lost, false)}
		}},
		{name: "foreign data, init container backing off", wantErr: "the volume holds the data of member demo-b", pod: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(1, foreign, true)}
		}},
		{name: "data lost, Pod failed", wantErr: "its data directory /var/lib/etcd/default.etcd is missing", pod: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodFailed
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(1, lost, false)}
		}},
		{name: "check passed", pod: func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(0, `{"member":"demo-a"}`, false)}
		}},
		{name: "check failed for another reason", pod: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(1, `{"error":"read marker: permission denied","reason":"Failed"}`, true)}
		}},
		{name: "message is the container's log", pod: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{checkData(1, "exec format error", true)}
		}},
		{name: "etcd keeps exiting on a database it cannot open", wantErr: `refusing its data directory ("failed to open database": "invalid database"`, pod: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{etcdExited(2, panicOpenDB)}
		}},
		{name: "etcd exited once on its database", pod: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{etcdExited(1, panicOpenDB)}
		}},
		{name: "etcd keeps exiting on a flag", pod: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{etcdExited(5, `{"level":"fatal","msg":"unknown flag: --bogus"}`)}
		}},
		{name: "etcd cannot open its database for want of permission", pod: func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{etcdExited(5, `{"level":"panic","msg":"failed to open database","error":"open /var/lib/etcd/data/member/snap/db: permission denied"}`)}
		}},
		{name: "etcd refused its database before and runs now", pod: func(p *corev1.Pod) {
			cs := etcdExited(3, panicOpenDB)
			cs.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{cs}
		}},
		{name: "another init container refused", pod: func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodPending
			cs := checkData(1, lost, false)
			cs.Name = "other"
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, pvc, pod := runningMember(tt.pod)
			e := newUnitEnv(t, m, pvc, pod)
			e.mustReconcile()
			e.mustReconcile()

			r := e.ready()
			if tt.wantErr == "" {
				if r.Reason == etcdv1.ReasonDataLost {
					t.Errorf("Ready = %+v, want the member not lost", r)
				}
				return
			}
			if r.Status != metav1.ConditionFalse || r.Reason != etcdv1.ReasonDataLost || !strings.Contains(r.Message, tt.wantErr) || r.ObservedGeneration != m.Generation {
				t.Errorf("Ready = %+v, want False DataLost for generation %d saying %q", r, m.Generation, tt.wantErr)
			}
			// etcd never starts without the member's data: no new Pod, and
			// the refused one is kept for its logs.
			if e.podCreates != 0 || e.podDeletes != 0 {
				t.Errorf("%d Pods created and %d deleted for a member whose data was refused", e.podCreates, e.podDeletes)
			}
			if p := e.pod(); p == nil || p.UID != pod.UID {
				t.Errorf("Pod = %v, want the refused Pod kept", p)
			}
			if evs := e.events(); slices.ContainsFunc(evs, func(ev string) bool { return strings.Contains(ev, "PodFailed") }) {
				t.Errorf("events = %v, want no PodFailed for a refused data directory", evs)
			}
		})
	}
}

// TestFirstPodRecordsItsVolume: the first Pod is made in the pass that
// makes the PVC, and the status write of that pass records both; a lost
// write is made good by the next pass, which finds both and makes no
// second Pod.
func TestFirstPodRecordsItsVolume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// pvcExists: the PVC was made before the member was registered.
		pvcExists bool
		// crash: the status write of the first pass fails.
		crash bool
	}{
		{name: "no PVC yet"},
		{name: "PVC made before registration", pvcExists: true},
		{name: "status write lost", crash: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := registeredMember()
			var objs []client.Object
			if tt.pvcExists {
				m.Status.PVCName = resources.PVCName(m.Name)
				objs = append(objs, resources.MemberPVC(m))
			}
			e := newUnitEnv(t, m, objs...)
			passes := 1
			if tt.crash {
				passes = 2
			}
			for pass := 1; pass <= passes; pass++ {
				e.failStatus = tt.crash && pass == 1
				err := e.reconcile()
				if e.failStatus != (err != nil) {
					t.Fatalf("pass %d: reconcile error %v", pass, err)
				}
				e.failStatus = false
				if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: resources.PVCName(m.Name)}, &corev1.PersistentVolumeClaim{}); err != nil {
					t.Errorf("pass %d: PVC: %v", pass, err)
				}
				if e.pod() == nil {
					t.Fatalf("pass %d: no Pod", pass)
				}
			}
			got, p := e.member(), e.pod()
			if got.Status.PVCName != resources.PVCName(m.Name) || got.Status.PodName != p.Name {
				t.Errorf("status pvcName %q podName %q, want %q %q", got.Status.PVCName, got.Status.PodName, resources.PVCName(m.Name), p.Name)
			}
			vol := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
				return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == resources.PVCName(m.Name)
			})
			if vol < 0 {
				t.Errorf("Pod volumes %+v, want the PVC %s", p.Spec.Volumes, resources.PVCName(m.Name))
			}
			check := slices.IndexFunc(p.Spec.InitContainers, func(c corev1.Container) bool { return c.Name == resources.CheckDataContainer })
			if check < 0 || p.Spec.InitContainers[check].Image != m.Spec.AgentImage || !slices.Contains(p.Spec.InitContainers[check].Args, "--first-pod") {
				t.Errorf("init containers %+v, want %s with the agent image, as a first Pod", p.Spec.InitContainers, resources.CheckDataContainer)
			}
			if e.podCreates != 1 {
				t.Errorf("%d Pod creates, want 1", e.podCreates)
			}
		})
	}
}

// TestPodLostWithItsNode: a Pod terminating for LostPodTimeout past its
// grace period (its node gone, the kubelet never confirming) marks the
// member lost and is deleted without grace; one terminating for less is
// looked at again when the timeout would pass.
func TestPodLostWithItsNode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		deleted  time.Duration // how long ago the grace period ended
		grace    int64         // the Pod's deletion grace period
		node     string        // the Pod's node; node-ok exists and is Ready
		wantLost bool
		// wantDeletes: a Pod whose grace period is already 0 (its kubelet
		// stopped the containers; something else keeps the object) is not
		// deleted again.
		wantDeletes int
	}{
		{name: "past the timeout", deleted: 2 * time.Minute, grace: 30, wantLost: true, wantDeletes: 1},
		{name: "past the timeout, grace period already 0", deleted: 2 * time.Minute, wantLost: true},
		{name: "within the timeout", deleted: 10 * time.Second, grace: 30, wantLost: false},
		{name: "past the timeout on a Ready node", node: "node-ok", deleted: 2 * time.Minute, grace: 30, wantLost: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, pvc, pod := runningMember(func(p *corev1.Pod) {
				p.Spec.NodeName = "node-gone"
				if tt.node != "" {
					p.Spec.NodeName = tt.node
				}
				p.Finalizers = []string{"test/keep"} // the fake client keeps a deleted object only with one
				p.DeletionTimestamp = &metav1.Time{Time: time.Now().Add(-tt.deleted)}
				p.DeletionGracePeriodSeconds = ptr.To(tt.grace)
			})
			ready := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-ok"},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
			e := newUnitEnv(t, m, pvc, pod, ready)
			e.r.LostPodTimeout = time.Minute
			res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(m)})
			if err != nil {
				t.Fatal(err)
			}
			r := e.ready()
			if lost := r.Reason == etcdv1.ReasonPodLost; lost != tt.wantLost {
				t.Fatalf("Ready = %+v, want lost %t", r, tt.wantLost)
			}
			if !tt.wantLost {
				if res.RequeueAfter <= 0 || res.RequeueAfter > time.Minute {
					t.Errorf("requeue after %v, want when the timeout passes", res.RequeueAfter)
				}
				if e.podDeletes != 0 {
					t.Errorf("%d Pod deletes within the timeout", e.podDeletes)
				}
				return
			}
			if !strings.Contains(r.Message, "node-gone") || e.podDeletes != tt.wantDeletes {
				t.Errorf("Ready = %+v and %d Pod deletes, want the node named and %d", r, e.podDeletes, tt.wantDeletes)
			}
			if evs := e.events(); !slices.ContainsFunc(evs, func(ev string) bool { return strings.HasPrefix(ev, "Warning PodLost ") }) {
				t.Errorf("events %v, want PodLost", evs)
			}
		})
	}
}
