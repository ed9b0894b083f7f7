package user

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"github.com/raftsman/raftsman/pkg/credentials"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// ControllerName names the controller in logs, metrics, events and its
// field manager.
const ControllerName = "user"

// Options are the settings of the user controller.
type Options struct {
	// ClusterDomain is the DNS domain of the Kubernetes cluster; etcd is
	// reached at its client Service under it.
	ClusterDomain string
	// EtcdTimeout bounds the etcd calls of one pass.
	EtcdTimeout time.Duration
	// Workers is how many EtcdUsers are reconciled at once.
	Workers int
}

// DefaultOptions are the defaults of the operator's flags.
func DefaultOptions() Options {
	return Options{ClusterDomain: "cluster.local", EtcdTimeout: 5 * time.Second, Workers: 2}
}

// Reconciler reconciles EtcdUsers.
type Reconciler struct {
	client.Client
	// APIReader reads the data of Secrets, of which the cache holds the
	// metadata only.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Etcd      etcd.Factory
	Options   Options
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// written: this controller's last status writes, so that a pass never
	// decides from a cached copy older than them.
	written kube.Written
	// creds: the operator's client certificate of each cluster, read from
	// the API server only when its Secret changed.
	creds credentials.Cache
}

// RBAC, in raftsman-manager (namespaced kinds where clusters live):
// EtcdUsers read, their finalizer applied, their Ready condition and
// fields applied to the status subresource; clusters read; the users'
// Secrets and the cluster's CA and client Secrets read (their metadata
// through the cache, listed and watched, their data past it), the users'
// created and their data updated. Nothing here deletes a Secret:
// each belongs to its EtcdUser and goes with it.
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdusers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdusers/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdusers/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. It runs when an EtcdUser's
// spec changes or its deletion starts, when its Secret changes, when the
// tls controller's TLSReady or AuthReady of its cluster changes, and when
// the cluster's CA Secret changes (a CA rotation issues the certificates
// again).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := kube.Register(metrics.Registry, userCollector{reader: kube.Caches}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)}).
		For(&etcdv1.EtcdUser{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deleting{}))).
		// The cache holds Secrets' metadata only: their owners and labels
		// are all these two need.
		Owns(&corev1.Secret{}, builder.OnlyMetadata).
		Watches(&etcdv1.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.usersOfCluster), builder.WithPredicates(tlsOrAuthChanged{})).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.usersOfCA)).
		Complete(r)
}

// deleting passes the update that starts an EtcdUser's deletion.
type deleting struct{ predicate.Funcs }

func (deleting) Update(e event.UpdateEvent) bool {
	return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
}

// tlsOrAuthChanged passes cluster updates that change TLSReady or
// AuthReady: what the users wait for.
type tlsOrAuthChanged struct{ predicate.Funcs }

func (tlsOrAuthChanged) Update(e event.UpdateEvent) bool {
	oldC, okOld := e.ObjectOld.(*etcdv1.EtcdCluster)
	newC, okNew := e.ObjectNew.(*etcdv1.EtcdCluster)
	if !okOld || !okNew {
		return false
	}
	for _, t := range []string{etcdv1.ConditionTLSReady, etcdv1.ConditionAuthReady} {
		a, b := meta.FindStatusCondition(oldC.Status.Conditions, t), meta.FindStatusCondition(newC.Status.Conditions, t)
		if (a == nil) != (b == nil) || a != nil && (a.Status != b.Status || a.Reason != b.Reason || a.ObservedGeneration != b.ObservedGeneration) {
			return true
		}
	}
	return false
}

// usersOfCluster maps a cluster to its EtcdUsers.
func (r *Reconciler) usersOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.users(ctx, o.GetNamespace(), o.GetName())
}

// usersOfCA maps a cluster's CA Secret to the cluster's EtcdUsers.
func (r *Reconciler) usersOfCA(ctx context.Context, o client.Object) []reconcile.Request {
	cluster, ok := o.GetLabels()[etcdv1.ClusterLabel]
	if !ok || o.GetName() != resources.CASecretName(cluster) {
		return nil
	}
	return r.users(ctx, o.GetNamespace(), cluster)
}

func (r *Reconciler) users(ctx context.Context, namespace, cluster string) []reconcile.Request {
	list := &etcdv1.EtcdUserList{}
	if err := r.List(ctx, list, client.InNamespace(namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the EtcdUsers of a cluster", "cluster", cluster)
		return nil
	}
	var out []reconcile.Request
	for _, u := range list.Items {
		if u.Spec.ClusterName == cluster {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: u.Namespace, Name: u.Name}})
		}
	}
	return out
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
