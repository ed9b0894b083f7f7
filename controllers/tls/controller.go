package tls

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "tls"

// Options are the settings of the tls controller.
type Options struct {
	// ClusterDomain is the DNS domain of the Kubernetes cluster; the
	// certificates name the members under it.
	ClusterDomain string
	// CALifetime is the lifetime of each cluster's CA.
	CALifetime time.Duration
	// UserSecretInterval is how often Secrets the user brings are read
	// again. The operator does not watch Secrets it does not own, so that
	// its cache holds only its own.
	UserSecretInterval time.Duration
	// EtcdTimeout bounds each etcd call.
	EtcdTimeout time.Duration
	// Workers is how many clusters are reconciled at once.
	Workers int
}

// DefaultOptions are the defaults of the operator's flags.
func DefaultOptions() Options {
	return Options{
		ClusterDomain:      "cluster.local",
		CALifetime:         10 * 365 * 24 * time.Hour,
		UserSecretInterval: time.Minute,
		EtcdTimeout:        5 * time.Second,
		Workers:            4,
	}
}

// Reconciler reconciles the TLS and authentication of an EtcdCluster.
type Reconciler struct {
	client.Client
	// APIReader reads the data of Secrets, of which the cache holds the
	// metadata only (the operator's own) or nothing (the user's), and
	// cert-manager objects, which are not in the cache.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Etcd      etcd.Factory
	Options   Options
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// written: this controller's last status writes, so that a pass never
	// decides from a cached copy older than them.
	written kube.Written
	// steady: each cluster's last pass that found everything in order, so
	// that the same pass again reads nothing from the API server.
	steady steadyPasses
}

// RBAC, all in raftsman-manager (namespaced kinds where clusters live): the
// TLSReady and AuthReady conditions and status.tls and status.auth by
// server-side apply of the status subresource; Secrets read (the
// operator's metadata through the cache, listed and watched, and their data
// past it, as users' Secrets), created and their data updated; cert-manager Certificates read past the cache, created and their
// spec updated. Nothing here deletes: owner references do.
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. It runs when a cluster's spec
// or annotations change (rotate-ca), when its Available condition changes
// (authentication waits for it), and when a Secret or a member of the
// cluster changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := kube.Register(metrics.Registry, certCollector{reader: kube.Caches}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.Options.Workers, 1)}).
		For(&etcdv1.EtcdCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, availableChanged{}))).
		// The cache holds Secrets' metadata only; their labels name the
		// cluster.
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(kube.ToCluster)).
		// A CA rotation waits for the members to restart.
		Watches(&etcdv1.EtcdMember{}, handler.EnqueueRequestsFromMapFunc(kube.ToCluster)).
		Complete(r)
}

// availableChanged passes updates that change the Available condition.
type availableChanged struct{ predicate.Funcs }

func (availableChanged) Update(e event.UpdateEvent) bool {
	oldC, okOld := e.ObjectOld.(*etcdv1.EtcdCluster)
	newC, okNew := e.ObjectNew.(*etcdv1.EtcdCluster)
	if !okOld || !okNew {
		return false
	}
	a := meta.FindStatusCondition(oldC.Status.Conditions, etcdv1.ConditionAvailable)
	b := meta.FindStatusCondition(newC.Status.Conditions, etcdv1.ConditionAvailable)
	if a == nil || b == nil {
		return a != b
	}
	return a.Status != b.Status || a.ObservedGeneration != b.ObservedGeneration
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
