package cluster

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/credentials"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "cluster"

// Options are the settings of the cluster controller.
type Options struct {
	// EtcdRepository is the image repository of etcd; the image of a cluster
	// is <repository>:v<version> unless the cluster names one.
	EtcdRepository string
	// ClusterDomain is the DNS domain of the Kubernetes cluster.
	ClusterDomain string
	// HealthInterval is how often a quiet cluster's members are asked for
	// their health. etcd has no watch for member health, so this is a poll;
	// it is off the path of membership changes, which watches drive.
	HealthInterval time.Duration
	// CalmHealthInterval is the longest time between two polls of a calm
	// cluster: its polls space out from HealthInterval, doubling, up to
	// it (polls.go). At most HealthInterval: every HealthInterval. Above
	// the etcd client's idle timeout (2m), a calm cluster holds no open
	// connection between polls, and each poll opens one (a light look asks
	// one member): at 12m, 0.083 new TLS connections and 0.17 requests a
	// minute per calm cluster (10m sat on the 0.1 connections a minute the
	// fleet target allows: 0.1003 measured at 10,000 clusters).
	CalmHealthInterval time.Duration
	// MaxLearners is the --max-learners of members on etcd 3.6 and later,
	// and so how many members a scale adds at once there (3.5 adds one at
	// a time). 1 leaves the flag out. A new value reaches running clusters
	// through one rollout each.
	MaxLearners int32
	// RetryInterval is how soon a membership change etcd refused "for now"
	// is tried again (etcd waits until every voter has been connected for
	// 5 s, and promotes a learner only once it caught up).
	RetryInterval time.Duration
	// WaitInterval is how soon a pass that waits for what no watch
	// reports (a member's health, a learner catching up, a restarted
	// member settling, a step of a recovery) looks again.
	WaitInterval time.Duration
	// UnhealthyInterval is how soon members that did not answer are asked
	// again (one that just started or was promoted may miss one question,
	// and no event follows its recovery), and a refused downgrade retried.
	UnhealthyInterval time.Duration
	// StuckInterval is how soon a rollout stopped on a member that does not
	// recover looks whether it recovered by itself (a spec change wakes it
	// at once).
	StuckInterval time.Duration
	// EtcdTimeout bounds each etcd call.
	EtcdTimeout time.Duration
	// StatusTimeout bounds the health question to one member: a healthy
	// member answers in milliseconds, and a dead one must not hold up the
	// reconcile of its cluster for long.
	StatusTimeout time.Duration
	// RolloutTimeout bounds how long a member restarted by a rollout may
	// take to be healthy and caught up again; after that the rollout stops
	// (Degraded, reason RolloutStuck) and touches no other member.
	RolloutTimeout time.Duration
	// LearnerTimeout bounds how long a learner may take to start and catch
	// up after it was added; then it is removed and added again.
	LearnerTimeout time.Duration
	// LostPodTimeout is how long past its grace period a member's Pod may
	// stay terminating (its node lost) before the member is replaced.
	LostPodTimeout time.Duration
	// DefragTimeout bounds one member's defragmentation; a large
	// database takes minutes.
	DefragTimeout time.Duration
	// DrainDelay is how long a member taken out of the client Service is
	// left before it is defragmented, for the endpoints and the Service's
	// proxies on every node to drop it.
	DrainDelay time.Duration
	// Workers is how many clusters are reconciled at once, so that one
	// cluster whose etcd does not answer does not hold up the others.
	Workers int
	// LongCalls is how many etcd calls that may take minutes (a member's
	// defragmentation) run at once, beside the workers (LongCalls).
	LongCalls int
	// Observations is how many looks at clusters' etcd run at once per
	// shard, beside the workers, in each of two lanes: clusters that
	// answered last time, and those that did not (Observer).
	Observations int
	// ObserveWait is how long a pass waits for etcd's answer about a
	// cluster that answered last time; past it, the look goes on beside
	// the workers and the cluster counts as suspect.
	ObserveWait time.Duration
	// AgentImage is the operator's own image; a restored cluster's first
	// member runs its binary to fetch and check the snapshot.
	AgentImage string
	// Observe, when set, is told when a reconcile of a cluster starts and
	// (through the function it returns) ends; tests count with it that no
	// two replicas work on one cluster at once.
	Observe func(cluster string) (done func())
}

// DefaultOptions are the defaults of the operator's flags.
func DefaultOptions() Options {
	return Options{
		EtcdRepository:     "quay.io/coreos/etcd",
		ClusterDomain:      "cluster.local",
		HealthInterval:     time.Minute,
		CalmHealthInterval: 12 * time.Minute,
		MaxLearners:        4,
		RetryInterval:      200 * time.Millisecond,
		WaitInterval:       time.Second,
		UnhealthyInterval:  2 * time.Second,
		StuckInterval:      5 * time.Second,
		EtcdTimeout:        5 * time.Second,
		StatusTimeout:      time.Second,
		RolloutTimeout:     5 * time.Minute,
		LearnerTimeout:     5 * time.Minute,
		LostPodTimeout:     time.Minute,
		DefragTimeout:      10 * time.Minute,
		LongCalls:          2,
		Observations:       16,
		ObserveWait:        time.Second,
		DrainDelay:         3 * time.Second,
		Workers:            8,
	}
}

// Reconciler reconciles an EtcdCluster.
type Reconciler struct {
	client.Client
	// APIReader reads past the cache: an object of a name the cluster needs
	// that the cache does not hold (another shard's, or nobody's), and the
	// data of the client Secret, whose metadata only the cache holds.
	APIReader client.Reader
	Recorder  events.EventRecorder
	Etcd      etcd.Factory
	Options   Options
	// Long runs the etcd calls that may take minutes beside the workers
	// (nil: in the reconcile, for unit tests that count passes).
	Long *LongCalls
	// Observer looks at each cluster's etcd beside the workers (nil: in
	// the reconcile).
	Observer *Observer

	// polls paces each cluster's health checks (polls.go).
	polls polls
	// creds: the operator's client certificate of each cluster, read from
	// the API server only when its Secret changed.
	creds credentials.Cache

	// written: this controller's last writes, so that a pass never
	// decides from a cached copy older than them.
	written kube.Written
}

// RBAC, all in raftsman-manager (namespaced kinds where clusters live): the
// cluster's finalizer added and removed (patch); its status fields and
// conditions and the members' (memberID, role, Registered) by server-side
// apply of the status subresource; members created, patched
// (intent, finalizer), updated (restart for trust) and deleted; the
// finalizers subresources because members, Services and the PDB are owned
// with blockOwnerDeletion; Services and the PDB created and kept (update);
// Pods only read.
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers/status,verbs=patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers/finalizers,verbs=update
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdbackups,verbs=get;list;watch;create
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers the controller. It runs on every change of the
// cluster, of its EtcdMembers, Services and PDB, and of its member Pods (a
// learner's Pod starting is what makes it worth trying to promote it).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := kube.Register(metrics.Registry, clusterCollector{reader: kube.Caches}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.Options.Workers}).
		For(&etcdv1.EtcdCluster{}).
		Owns(&etcdv1.EtcdMember{}).
		Owns(&corev1.Service{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(kube.ToCluster))
	if r.Long != nil && r.Long.Limit > 0 {
		b = b.WatchesRawSource(r.Long.wakeSource())
	}
	if r.Observer.beside() {
		b = b.WatchesRawSource(r.Observer.wakeSource())
	}
	return b.Complete(r)
}
