package member

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "member"

// Reconciler reconciles an EtcdMember into its Pod and PVC.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache; used before concluding that a
	// member's data is gone.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Workers is how many members are reconciled at once.
	Workers int
	// LostPodTimeout is how long past its grace period a Pod may stay
	// terminating before its member counts as lost: the kubelet of a lost
	// node never confirms the Pod's end, and a Pod bound to a local volume
	// on that node could not start elsewhere anyway. Zero turns it off.
	LostPodTimeout time.Duration

	// written: this controller's last status writes, so that a pass never
	// decides from a cached copy older than them.
	written kube.Written
}

// RBAC, all in raftsman-manager (namespaced kinds where clusters live):
// members and their cluster through the cache; the member's Pod and PVC
// names and its Ready, Serving and VolumeRetained by server-side apply of
// the status subresource; Pods created, and deleted to restart or stop them; PVCs
// created, and patched to grow them (the owner reference deletes them).
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller: it runs on every change of an
// EtcdMember and of the Pods and PVCs the member owns.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := kube.Register(metrics.Registry, memberCollector{reader: kube.Caches}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		For(&etcdv1.EtcdMember{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Watches(&etcdv1.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.clusterToMembers), builder.WithPredicates(gateChanged{})).
		Complete(r)
}

// clusterToMembers maps a cluster to its members, for the first Pods that
// wait for TLSReady and for the Pods that stop or start with Suspended.
func (r *Reconciler) clusterToMembers(ctx context.Context, o client.Object) []reconcile.Request {
	list := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, list, kube.OfCluster(o.GetNamespace(), o.GetName())...); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, m := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.Namespace, Name: m.Name}})
	}
	return reqs
}

// gateChanged passes cluster updates that change a condition members wait
// on: TLSReady (first Pods) or Suspended (every Pod).
type gateChanged struct{ predicate.Funcs }

func (gateChanged) Create(event.CreateEvent) bool   { return false }
func (gateChanged) Delete(event.DeleteEvent) bool   { return false }
func (gateChanged) Generic(event.GenericEvent) bool { return false }

func (gateChanged) Update(e event.UpdateEvent) bool {
	oldC, okOld := e.ObjectOld.(*etcdv1.EtcdCluster)
	newC, okNew := e.ObjectNew.(*etcdv1.EtcdCluster)
	if !okOld || !okNew {
		return false
	}
	for _, t := range []string{etcdv1.ConditionTLSReady, etcdv1.ConditionSuspended} {
		if kube.IsTrue(oldC.Status.Conditions, t, oldC.Generation) != kube.IsTrue(newC.Status.Conditions, t, newC.Generation) {
			return true
		}
	}
	return oldC.Spec.Suspend != newC.Spec.Suspend
}
