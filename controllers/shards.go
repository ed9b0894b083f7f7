package controllers

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/shard"
)

// ShardOptions configure how a replica shares the clusters with the others.
type ShardOptions struct {
	// Shards is the number of shards; every replica must use the same.
	Shards int
	// Leases: each shard runs where its Lease is held. Without, this
	// replica runs every shard (one replica only).
	Leases bool
	// Namespace of the Leases, and Identity of this replica in them.
	Namespace, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod of the Leases.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// WatchNamespaces are the only namespaces whose clusters this replica
	// sees and touches (caches, relabelling, labelers); none means all.
	// The root manager's cache must be limited to the same namespaces.
	WatchNamespaces []string
}

// DefaultShardOptions are the defaults of the operator's flags.
func DefaultShardOptions() ShardOptions {
	return ShardOptions{Shards: 1, Leases: true, Namespace: "raftsman-system",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second}
}

// SetupShards adds to root, the replica's manager (metrics, probes), the
// labeler of new clusters and the shard runner: for each shard whose Lease
// the replica holds, a manager of its own runs every controller, with
// caches that see only that shard's objects in the watched namespaces. The
// labelers read through root's cache, which the caller limits to the
// watched namespaces (RootCacheOptions).
func SetupShards(root ctrl.Manager, opts Options, so ShardOptions) error {
	if opts.Etcd == nil {
		opts.Etcd = etcd.NewClientFactory()
	}
	if err := (&shard.Labeler{Client: root.GetClient(), Shards: so.Shards}).SetupWithManager(root); err != nil {
		return fmt.Errorf("set up the shard labeler: %w", err)
	}
	if err := (&shard.BackupLabeler{Client: root.GetClient(), Shards: so.Shards}).SetupWithManager(root); err != nil {
		return fmt.Errorf("set up the backup labeler: %w", err)
	}
	if err := (&shard.UserLabeler{Client: root.GetClient(), Shards: so.Shards}).SetupWithManager(root); err != nil {
		return fmt.Errorf("set up the user labeler: %w", err)
	}
	cs, err := kubernetes.NewForConfig(root.GetConfig())
	if err != nil {
		return fmt.Errorf("client for the Leases: %w", err)
	}
	direct, err := client.New(root.GetConfig(), client.Options{Scheme: root.GetScheme(), Mapper: root.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("client for relabelling: %w", err)
	}
	for _, c := range shard.Collectors() {
		if err := kube.Register(metrics.Registry, c); err != nil {
			return err
		}
	}
	log := ctrl.Log.WithName("shards")
	runner := &shard.Runner{
		Client: cs, Namespace: so.Namespace, Identity: so.Identity, Shards: so.Shards, NoLeases: !so.Leases,
		LeaseDuration: so.LeaseDuration, RenewDeadline: so.RenewDeadline, RetryPeriod: so.RetryPeriod,
		StopTimeout: so.LeaseDuration - so.RenewDeadline,
		Log:         log,
		Prepare:     prepare(direct, so, log),
		Run:         runShard(root, opts, so),
	}
	return root.Add(runner)
}

// RootCacheOptions are the options of the cache of a replica's own manager
// (root of SetupShards): the labelers' EtcdClusters and EtcdBackups, in the
// watched namespaces only.
func RootCacheOptions(so ShardOptions) cache.Options {
	return kube.CacheOptions("", so.WatchNamespaces...)
}

// joinMetrics lets the metric collectors read the manager's cache while its
// controllers run.
func joinMetrics(mgr ctrl.Manager) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return nil
		}
		remove := kube.Caches.Add(mgr.GetCache())
		<-ctx.Done()
		remove()
		return nil
	}))
}

// prepare runs once when a replica starts, before any shard: it moves
// clusters to the shards of the current shard count, and hands status an
// earlier version wrote over to the controllers that own it now.
func prepare(direct client.Client, so ShardOptions, log logr.Logger) func(context.Context) error {
	return func(ctx context.Context) error {
		moved, err := shard.Relabel(ctx, direct, so.Shards, so.WatchNamespaces)
		if moved > 0 {
			log.Info("Moved clusters to the shards of the current shard count", "clusters", moved, "shards", so.Shards)
		}
		if err != nil {
			return err
		}
		// An object left as it was keeps an earlier version's status
		// fields, which is no reason to stop every other cluster.
		adopted, err := kube.AdoptLegacyStatus(ctx, direct, so.WatchNamespaces)
		if adopted > 0 {
			log.Info("Handed the status an earlier version wrote over to the controllers that own it", "objects", adopted)
		}
		if err != nil {
			log.Error(err, "Some status an earlier version wrote was not handed over: a field its controller no longer sets may stay in it until the next start")
		}
		return nil
	}
}

// runShard runs shard i: a manager of its own, caching only the shard's
// objects, with every controller.
func runShard(root ctrl.Manager, opts Options, so ShardOptions) func(context.Context, int) error {
	return func(ctx context.Context, i int) error {
		mgr, err := ctrl.NewManager(root.GetConfig(), ctrl.Options{
			Scheme:                 root.GetScheme(),
			Cache:                  kube.CacheOptions(shard.Label(i), so.WatchNamespaces...),
			NewCache:               kube.NewCache,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			// Every shard's manager registers the same controllers.
			Controller: config.Controller{SkipNameValidation: ptr.To(true)},
			Logger:     ctrl.Log.WithValues("shard", i),
		})
		if err != nil {
			return fmt.Errorf("manager of shard %d: %w", i, err)
		}
		if err := Setup(mgr, opts); err != nil {
			return err
		}
		return mgr.Start(ctx)
	}
}
