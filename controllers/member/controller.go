package member

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

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
}

// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers/status,verbs=get;patch;update
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller: it runs on every change of an
// EtcdMember and of the Pods and PVCs the member owns.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := kube.Register(metrics.Registry, memberCollector{reader: mgr.GetCache()}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Workers, 1)}).
		For(&etcdv1.EtcdMember{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Complete(r)
}
