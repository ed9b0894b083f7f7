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
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "backup"

// Options are the settings of the backup controller.
type Options struct {
	// AgentImage is the operator's own image, run by backup Pods.
	AgentImage string
	// BackupDeadline bounds the run of one agent Pod.
	BackupDeadline time.Duration
	// StartingDeadline skips a scheduled backup that could not start within
	// this long of its time (the operator was down): the next one is taken
	// on time instead of a late one now.
	StartingDeadline time.Duration
	// Workers is how many clusters and backups are reconciled at once.
	Workers int
}

// DefaultOptions are the defaults of the operator's flags.
func DefaultOptions() Options {
	return Options{BackupDeadline: time.Hour, StartingDeadline: 10 * time.Minute, Workers: 4}
}

// Reconciler reconciles the suspend, storage, schedule and restore state of
// an EtcdCluster.
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

// BackupReconciler runs EtcdBackups.
type BackupReconciler struct {
	client.Client
	Recorder events.EventRecorder
	Options  Options
	Now      func() time.Time

	written kube.Written
}

// RBAC in raftsman-manager (namespaced kinds where clusters live): the
// cluster's conditions and fields this controller owns by server-side apply
// of its status; EtcdBackups created by schedules and suspend, their
// finalizer added and removed (patch), expired ones deleted; agent Pods created and deleted
// (finalizers: they are owned by their backup, blockOwnerDeletion); PVCs
// read for the storage condition.
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// StorageClasses are cluster-scoped (is volume expansion allowed?): they
// are in the small ClusterRole raftsman-cluster-scope, bound cluster-wide
// in both installs.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch,roleName=raftsman-cluster-scope

// SetupWithManager registers both reconcilers. The cluster side runs on
// changes of the cluster, of its EtcdBackups, of its member volumes and of
// its restore check Pod; the backup side on changes of an EtcdBackup and
// of its agent Pods.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := kube.Register(metrics.Registry, backupCollector{reader: kube.Caches}); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)}).
		For(&etcdv1.EtcdCluster{}).
		Owns(&corev1.Pod{}).
		Watches(&etcdv1.EtcdBackup{}, handler.EnqueueRequestsFromMapFunc(kube.ToCluster)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(kube.ToCluster)).
		Complete(r); err != nil {
		return err
	}
	run := &BackupReconciler{Client: r.Client, Recorder: r.Recorder, Options: r.Options, Now: r.Now}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-run").
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)}).
		For(&etcdv1.EtcdBackup{}).
		Owns(&corev1.Pod{}).
		// A backup waiting for its cluster starts when the cluster changes.
		Watches(&etcdv1.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(run.pendingBackups)).
		Complete(run)
}

// pendingBackups maps a cluster to its backups that have not finished.
func (r *BackupReconciler) pendingBackups(ctx context.Context, o client.Object) []reconcile.Request {
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
