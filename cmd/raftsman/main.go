// Command raftsman is the Raftsman etcd operator.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers"
	"github.com/raftsman/raftsman/controllers/backup"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/kube"
)

// metricsOptions serve metrics securely by default: authenticated and
// authorized like any Kubernetes API, over HTTPS.
func metricsOptions(addr string, secure bool) metricsserver.Options {
	if !secure {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		// The same binary is the backup agent of backup and restore Pods.
		os.Exit(agent.Main(os.Args[2:]))
	}
	var (
		metricsAddr, probeAddr string
		leaderElect            bool
		metricsSecure          bool
		opts                   = controllers.Options{Cluster: cluster.DefaultOptions(), TLS: tls.DefaultOptions(), Backup: backup.DefaultOptions()}
		shards                 = controllers.DefaultShardOptions()
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443", "Address of the metrics endpoint; 0 turns it off.")
	flag.BoolVar(&metricsSecure, "metrics-secure", true, "Serve metrics over HTTPS to clients whose token may get /metrics (TokenReview and SubjectAccessReview); false serves plain HTTP to anyone.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address of the health and readiness endpoints.")
	flag.BoolVar(&leaderElect, "leader-elect", true, "Run each shard where its Lease is held, so that replicas share the shards; false runs every shard here (one replica only).")
	flag.IntVar(&shards.Shards, "shards", shards.Shards, "Number of shards the clusters are split into; every replica must use the same. Changing it moves clusters between shards at the next start (use the Recreate strategy).")
	flag.Func("watch-namespaces", "Comma-separated namespaces whose EtcdClusters and EtcdBackups this operator manages; it reads and writes nothing in other namespaces (its RBAC can then be Roles in these namespaces). Empty: every namespace.", func(v string) error {
		shards.WatchNamespaces = kube.ParseNamespaces(v)
		return nil
	})
	flag.StringVar(&shards.Namespace, "lease-namespace", envOr("POD_NAMESPACE", shards.Namespace), "Namespace of the shards' Leases.")
	flag.DurationVar(&shards.LeaseDuration, "lease-duration", shards.LeaseDuration, "How long a shard's Lease lasts without renewal; another replica takes the shard over after it.")
	flag.DurationVar(&shards.RenewDeadline, "renew-deadline", shards.RenewDeadline, "How long a holder keeps trying to renew a shard's Lease before it stops the shard.")
	flag.DurationVar(&shards.RetryPeriod, "retry-period", shards.RetryPeriod, "How often Leases are tried and renewed.")
	flag.StringVar(&opts.Cluster.EtcdRepository, "etcd-repository", opts.Cluster.EtcdRepository, "Image repository of etcd; a cluster runs <repository>:v<version> unless it names an image.")
	flag.StringVar(&opts.Cluster.ClusterDomain, "cluster-domain", opts.Cluster.ClusterDomain, "DNS domain of the Kubernetes cluster.")
	flag.DurationVar(&opts.Cluster.HealthInterval, "health-interval", opts.Cluster.HealthInterval, "How often a quiet etcd cluster's members are asked for their health.")
	flag.DurationVar(&opts.Cluster.RolloutTimeout, "rollout-timeout", opts.Cluster.RolloutTimeout, "How long a member restarted by a rolling change may take to be healthy and caught up before the rollout stops (Degraded, reason RolloutStuck).")
	flag.DurationVar(&opts.Cluster.LostPodTimeout, "lost-pod-timeout", opts.Cluster.LostPodTimeout, "How long past its grace period a member's Pod may stay terminating (its node lost) before the member is replaced; 0 turns it off.")
	flag.DurationVar(&opts.Cluster.DefragTimeout, "defrag-timeout", opts.Cluster.DefragTimeout, "How long one member's defragmentation may take.")
	flag.DurationVar(&opts.Cluster.DrainDelay, "drain-delay", opts.Cluster.DrainDelay, "How long a member taken out of the client Service is left before it is defragmented, for the Service's endpoints and proxies to drop it.")
	flag.DurationVar(&opts.Cluster.LearnerTimeout, "learner-timeout", opts.Cluster.LearnerTimeout, "How long a learner may take to start and catch up after it was added before it is removed and added again.")
	flag.DurationVar(&opts.Cluster.RetryInterval, "retry-interval", opts.Cluster.RetryInterval, "How soon a membership change etcd refused for now is tried again.")
	flag.DurationVar(&opts.Cluster.EtcdTimeout, "etcd-timeout", opts.Cluster.EtcdTimeout, "Timeout of each etcd call.")
	flag.DurationVar(&opts.Cluster.StatusTimeout, "status-timeout", opts.Cluster.StatusTimeout, "Timeout of the health question to one etcd member.")
	flag.DurationVar(&opts.TLS.CALifetime, "ca-lifetime", opts.TLS.CALifetime, "Lifetime of the CA the operator makes for each etcd cluster.")
	flag.DurationVar(&opts.TLS.UserSecretInterval, "user-secret-interval", opts.TLS.UserSecretInterval, "How often Secrets that users bring (certificates, root credentials) are read again.")
	flag.IntVar(&opts.Cluster.Workers, "workers", opts.Cluster.Workers, "How many clusters, and how many members, are reconciled at once.")
	flag.IntVar(&opts.Cluster.LongCalls, "long-calls", opts.Cluster.LongCalls, "How many etcd calls that may take minutes (defragmentations) run at once per shard, beside the reconcile workers.")
	flag.StringVar(&opts.Backup.AgentImage, "agent-image", "", "Image of backup and restore Pods: the operator's own image. Empty: the image this operator Pod runs (read from its Pod, named by POD_NAME and POD_NAMESPACE).")
	flag.DurationVar(&opts.Backup.BackupDeadline, "backup-deadline", opts.Backup.BackupDeadline, "Longest run of one backup Pod.")
	flag.DurationVar(&opts.Backup.StartingDeadline, "backup-starting-deadline", opts.Backup.StartingDeadline, "A scheduled backup that could not start within this long of its time is skipped.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		log.Error(err, "Cannot build the scheme")
		os.Exit(1)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		log.Error(err, "Cannot build the scheme")
		os.Exit(1)
	}
	cfg := ctrl.GetConfigOrDie()
	kube.CountWrites(cfg)
	if opts.Backup.AgentImage == "" {
		image, err := ownImage(cfg, scheme)
		if err != nil {
			log.Error(err, "Cannot find the operator's image for backup Pods: set --agent-image")
			os.Exit(1)
		}
		opts.Backup.AgentImage = image
	}
	// The replica's own manager serves metrics and probes and labels new
	// clusters; each shard it holds gets a manager of its own. Both kinds
	// of cache see only the watched namespaces.
	if len(shards.WatchNamespaces) > 0 {
		log.Info("Watching only some namespaces", "namespaces", shards.WatchNamespaces)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOptions(metricsAddr, metricsSecure),
		HealthProbeBindAddress: probeAddr,
		Cache:                  controllers.RootCacheOptions(shards),
	})
	if err != nil {
		log.Error(err, "Cannot create the manager")
		os.Exit(1)
	}
	shards.Leases = leaderElect
	if shards.Identity, err = os.Hostname(); err != nil {
		log.Error(err, "Cannot name this replica")
		os.Exit(1)
	}
	if err := controllers.SetupShards(mgr, opts, shards); err != nil {
		log.Error(err, "Cannot set up the controllers")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "Cannot add the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "Cannot add the readiness check")
		os.Exit(1)
	}
	log.Info("Starting the manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "The manager stopped")
		os.Exit(1)
	}
}

// ownImage is the image of this operator's container, read from its Pod.
func ownImage(cfg *rest.Config, scheme *runtime.Scheme) (string, error) {
	name, namespace := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || namespace == "" {
		return "", errors.New("POD_NAME and POD_NAMESPACE are not set")
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	pod := &corev1.Pod{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return "", fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	for _, ct := range pod.Spec.Containers {
		if ct.Name == "manager" {
			return ct.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container named manager", namespace, name)
}
