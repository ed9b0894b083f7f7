package data

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "data"

// StatusOwner is the name this controller owns its conditions and status
// fields under (etcdv1.Owners, etcdv1.StatusFields), and so its field
// manager, raftsman-backup. It is the backup controller's: this controller
// was part of it, and the field manager is recorded in every EtcdCluster it
// wrote. Under a new name, the old one would keep the fields this
// controller stops setting (status.backup.nextScheduleTime, a condition it
// no longer writes) for good.
const StatusOwner = "backup"

// Options are the settings of the data controller.
type Options struct {
	// AgentImage is the operator's own image, run by the Pods that check a
	// snapshot to restore from, and CheckDeadline bounds the run of one.
	// The operator sets both as the backup controller's (controllers.Setup).
	AgentImage    string
	CheckDeadline time.Duration
	// StartingDeadline skips a scheduled backup that could not start within
	// this long of its time (the operator was down): the next one is taken
	// on time instead of a late one now.
	StartingDeadline time.Duration
	// Workers is how many clusters are reconciled at once.
	Workers int
}

// DefaultOptions are the defaults of the operator's flags.
func DefaultOptions() Options {
	return Options{StartingDeadline: 10 * time.Minute, Workers: 4}
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

// RBAC in raftsman-manager (namespaced kinds where clusters live): the
// cluster's conditions and fields this controller owns by server-side apply
// of its status; its members listed (suspend waits for their changes);
// EtcdBackups listed, created by schedules and suspend, expired ones
// deleted; restore check Pods created and deleted (finalizers: they are
// owned by their cluster, blockOwnerDeletion); PVCs read for the storage
// condition.
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// StorageClasses are cluster-scoped (is volume expansion allowed?): they
// are in the small ClusterRole raftsman-cluster-scope, bound cluster-wide
// in both installs.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get;list;watch,roleName=raftsman-cluster-scope

// SetupWithManager registers the controller: it runs on changes of the
// cluster, of its EtcdBackups, of its member volumes and of its restore
// check Pod.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := kube.Register(metrics.Registry, backupCollector{reader: kube.Caches}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)}).
		For(&etcdv1.EtcdCluster{}).
		Owns(&corev1.Pod{}).
		Watches(&etcdv1.EtcdBackup{}, handler.EnqueueRequestsFromMapFunc(kube.ToCluster)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(kube.ToCluster)).
		Complete(r)
}

func now(f func() time.Time) time.Time {
	if f == nil {
		return time.Now()
	}
	return f()
}
