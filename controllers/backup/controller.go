package backup

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// ControllerName names the controller in logs, metrics and events, and is
// the owner of the EtcdBackup status (etcdv1.Owners, etcdv1.StatusFields).
const ControllerName = "backup"

// Options are the settings of the backup controller.
type Options struct {
	// AgentImage is the operator's own image, run by backup Pods.
	AgentImage string
	// BackupDeadline bounds the run of one agent Pod.
	BackupDeadline time.Duration
	// Workers is how many backups are reconciled at once.
	Workers int
}

// DefaultOptions are the defaults of the operator's flags.
func DefaultOptions() Options {
	return Options{BackupDeadline: time.Hour, Workers: 4}
}

// Reconciler runs EtcdBackups.
type Reconciler struct {
	client.Client
	Recorder events.EventRecorder
	Options  Options
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// written: this controller's last status writes, so that a pass never
	// decides from a cached copy older than them.
	written kube.Written
}

// RBAC in raftsman-manager (namespaced kinds where clusters live): the
// backup's conditions and fields this controller owns by server-side apply
// of its status; its finalizer added (apply) and removed (patch); the
// cluster and the member to snapshot read through the cache; agent Pods
// created and deleted (finalizers: they are owned by their backup,
// blockOwnerDeletion).
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller: it runs on changes of an
// EtcdBackup and of its agent Pods, and of the cluster of a backup that
// waits for it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)}).
		For(&etcdv1.EtcdBackup{}).
		Owns(&corev1.Pod{}).
		// A backup waiting for its cluster starts when the cluster changes.
		Watches(&etcdv1.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.pendingBackups)).
		Complete(r)
}

// pendingBackups maps a cluster to its backups that have not finished.
func (r *Reconciler) pendingBackups(ctx context.Context, o client.Object) []reconcile.Request {
	list := &etcdv1.EtcdBackupList{}
	if err := r.List(ctx, list, kube.OfCluster(o.GetNamespace(), o.GetName())...); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if b := &list.Items[i]; !b.Finished() {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
		}
	}
	return reqs
}

func now(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}
