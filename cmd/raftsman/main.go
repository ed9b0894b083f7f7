// Command raftsman is the Raftsman etcd operator: it parses its flags and
// runs controllers.Run (or, as "raftsman agent", the backup agent; as
// "raftsman probe", the chart's helm test).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/raftsman/raftsman/controllers"
	"github.com/raftsman/raftsman/controllers/backup"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/data"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/controllers/user"
	"github.com/raftsman/raftsman/internal/probe"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/gate"
	"github.com/raftsman/raftsman/pkg/kube"
)

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

func main() {
	if filepath.Base(os.Args[0]) == gate.Name {
		// Copied under the gate's name by an image that lacks the small
		// binary (pkg/agent, check-data --install-to).
		os.Exit(gate.Main(os.Args[1:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		// The same binary is the backup agent of backup and restore Pods.
		os.Exit(agent.Main(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "probe" {
		// The chart's helm test asks the operator's health endpoints with it.
		os.Exit(probe.Main(os.Args[2:]))
	}
	var (
		metricsAddr, probeAddr string
		leaderElect            bool
		metricsSecure          bool
		opts                   = controllers.Options{Cluster: cluster.DefaultOptions(), TLS: tls.DefaultOptions(), Backup: backup.DefaultOptions(), Data: data.DefaultOptions(), User: user.DefaultOptions()}
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
	flag.DurationVar(&opts.Cluster.CalmHealthInterval, "calm-health-interval", opts.Cluster.CalmHealthInterval, "Longest time between two health polls of a calm etcd cluster (healthy, under half its quota, not growing): its polls space out from --health-interval, doubling, up to it. At most --health-interval polls every --health-interval.")
	flag.DurationVar(&opts.Cluster.RolloutTimeout, "rollout-timeout", opts.Cluster.RolloutTimeout, "How long a member restarted by a rolling change may take to be healthy and caught up before the rollout stops (Degraded, reason RolloutStuck).")
	flag.DurationVar(&opts.Cluster.LostPodTimeout, "lost-pod-timeout", opts.Cluster.LostPodTimeout, "How long past its grace period a member's Pod may stay terminating (its node lost) before the member is replaced; 0 turns it off.")
	flag.DurationVar(&opts.Cluster.DefragTimeout, "defrag-timeout", opts.Cluster.DefragTimeout, "How long one member's defragmentation may take.")
	flag.DurationVar(&opts.Cluster.DrainDelay, "drain-delay", opts.Cluster.DrainDelay, "How long a member taken out of the client Service is left before it is defragmented, for the Service's endpoints and proxies to drop it.")
	flag.DurationVar(&opts.Cluster.LearnerTimeout, "learner-timeout", opts.Cluster.LearnerTimeout, "How long a learner may take to start and catch up after it was added before it is removed and added again.")
	flag.Func("max-learners", fmt.Sprintf("etcd's --max-learners on members of etcd 3.6 and later (1 to 8; default %d): how many new members a scale adds to etcd at once. etcd 3.5 adds one at a time. 1 leaves the flag out; changing it rolls every 3.6 cluster once.", opts.Cluster.MaxLearners), func(v string) error {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 || n > 8 {
			return fmt.Errorf("--max-learners must be a number from 1 to 8, not %q", v)
		}
		opts.Cluster.MaxLearners = int32(n)
		return nil
	})
	flag.DurationVar(&opts.Cluster.RetryInterval, "retry-interval", opts.Cluster.RetryInterval, "How soon a membership change etcd refused for now is tried again.")
	flag.DurationVar(&opts.Cluster.EtcdTimeout, "etcd-timeout", opts.Cluster.EtcdTimeout, "Timeout of each etcd call.")
	flag.DurationVar(&opts.Cluster.StatusTimeout, "status-timeout", opts.Cluster.StatusTimeout, "Timeout of the health question to one etcd member.")
	flag.DurationVar(&opts.TLS.CALifetime, "ca-lifetime", opts.TLS.CALifetime, "Lifetime of the CA the operator makes for each etcd cluster.")
	flag.DurationVar(&opts.TLS.UserSecretInterval, "user-secret-interval", opts.TLS.UserSecretInterval, "How often Secrets that users bring (certificates, root credentials) are read again.")
	flag.IntVar(&opts.Cluster.Workers, "workers", opts.Cluster.Workers, "How many clusters, and how many members, are reconciled at once.")
	flag.IntVar(&opts.Cluster.LongCalls, "long-calls", opts.Cluster.LongCalls, "How many etcd calls that may take minutes (defragmentations) run at once per shard, beside the reconcile workers.")
	flag.IntVar(&opts.Cluster.Observations, "observations", opts.Cluster.Observations, "How many looks at clusters' etcd (member list, member status, alarms) run at once per shard beside the reconcile workers, in each of two lanes: clusters that answered last time, and those that did not.")
	flag.DurationVar(&opts.Cluster.ObserveWait, "observe-wait", opts.Cluster.ObserveWait, "How long a pass waits for etcd's answer about a cluster that answered last time; a look that takes longer goes on beside the workers, the cluster counted as suspect until it answers again.")
	flag.StringVar(&opts.Backup.AgentImage, "agent-image", "", "Image of backup and restore Pods: the operator's own image. Empty: the image this operator Pod runs (read from its Pod, named by POD_NAME and POD_NAMESPACE).")
	flag.DurationVar(&opts.Backup.BackupDeadline, "backup-deadline", opts.Backup.BackupDeadline, "Longest run of one backup Pod.")
	flag.DurationVar(&opts.Data.StartingDeadline, "backup-starting-deadline", opts.Data.StartingDeadline, "A scheduled backup that could not start within this long of its time is skipped.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	shards.Leases = leaderElect
	serve := controllers.ServeOptions{MetricsAddr: metricsAddr, MetricsSecure: metricsSecure, ProbeAddr: probeAddr}
	if err := controllers.Run(ctrl.SetupSignalHandler(), opts, shards, serve); err != nil {
		ctrl.Log.Error(err, "The operator stopped")
		os.Exit(1)
	}
}
