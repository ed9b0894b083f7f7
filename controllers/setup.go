// Package controllers wires Raftsman's controllers into a manager.
package controllers

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/raftsman/raftsman/controllers/backup"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/data"
	"github.com/raftsman/raftsman/controllers/member"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/controllers/undecodable"
	"github.com/raftsman/raftsman/controllers/user"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// Options configure every controller.
type Options struct {
	Cluster cluster.Options
	TLS     tls.Options
	Backup  backup.Options
	// Data: its agent image and the deadline of its Pods are the backup
	// controller's (Setup copies them).
	Data data.Options
	// User: its cluster domain and etcd timeout are the cluster
	// controller's (Setup copies them).
	User user.Options
	// Etcd makes the etcd clients; a fake in tests.
	Etcd etcd.Factory
}

// RBAC. The markers here and in each controller's controller.go generate
// config/rbac/role.yaml, three roles by where their rules apply:
//
//   - ClusterRole raftsman-manager: the namespaced kinds the controllers
//     need where clusters live. config/default binds it with a
//     ClusterRoleBinding (every namespace); config/namespaced binds the same
//     ClusterRole with a RoleBinding in each watched namespace, which grants
//     its rules in that namespace only.
//   - Role raftsman-own-namespace, in the operator's namespace: the shards'
//     and replicas' Leases, and the operator's own Pod. Nothing else there.
//   - ClusterRole raftsman-cluster-scope: the cluster-scoped requests left
//     in both installs (StorageClasses, the metrics endpoint's reviews).
//
// Shards (pkg/shard.Runner): leader election gets, creates and updates
// each shard's Lease; a replica's presence Lease is listed by the others
// and deleted when the replica stops. No watch, no patch.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;create;update;delete,namespace=raftsman-system,roleName=raftsman-own-namespace
// Without --agent-image, the operator reads its own Pod for its image.
// +kubebuilder:rbac:groups="",resources=pods,verbs=get,namespace=raftsman-system,roleName=raftsman-own-namespace
// Moving clusters between shards (pkg/shard.Relabel) lists, past the cache,
// everything made for a cluster and patches its shard label; the labelers
// patch the labels of new clusters and backups they watch.
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims;services;secrets,verbs=list;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list;patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters;etcdbackups;etcdusers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdmembers,verbs=list;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=list;patch
// The metrics endpoint checks its clients' tokens and rights: cluster-scoped
// reviews, so in the small ClusterRole of both installs. Who may read
// /metrics is granted to the scraper's account (config/prometheus), not to
// the operator's.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create,roleName=raftsman-cluster-scope
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create,roleName=raftsman-cluster-scope

// Setup adds every controller to the manager.
func Setup(mgr ctrl.Manager, opts Options) error {
	if opts.Etcd == nil {
		opts.Etcd = etcd.NewClientFactory()
	}
	if opts.Backup.AgentImage == "" {
		opts.Backup.AgentImage = opts.Cluster.AgentImage
	}
	opts.Cluster.AgentImage = opts.Backup.AgentImage
	if err := joinMetrics(mgr); err != nil {
		return err
	}
	// The controllers never see an object decoded in part: one tenant's
	// object the operator cannot decode must not stop the others.
	c, apiReader := kube.Decodable(mgr.GetClient()), kube.DecodableReader(mgr.GetAPIReader())
	if err := (&cluster.Reconciler{
		Client:    c,
		APIReader: apiReader,
		Recorder:  mgr.GetEventRecorder("raftsman-" + cluster.ControllerName),
		Etcd:      opts.Etcd,
		Options:   opts.Cluster,
		// Per shard: each shard's long calls are bounded on their own.
		Long:     &cluster.LongCalls{Limit: opts.Cluster.LongCalls},
		Observer: &cluster.Observer{Limit: opts.Cluster.Observations, Wait: opts.Cluster.ObserveWait},
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the cluster controller: %w", err)
	}
	if err := (&member.Reconciler{
		Client:    c,
		APIReader: apiReader,
		Recorder:  mgr.GetEventRecorder("raftsman-" + member.ControllerName),
		Workers:   opts.Cluster.Workers,
		// The member controller has no options of its own; this one is
		// about healing, which the cluster controller's options hold.
		LostPodTimeout: opts.Cluster.LostPodTimeout,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the member controller: %w", err)
	}
	opts.TLS.ClusterDomain = opts.Cluster.ClusterDomain
	opts.TLS.EtcdTimeout = opts.Cluster.EtcdTimeout
	if err := (&tls.Reconciler{
		Client:    c,
		APIReader: apiReader,
		Recorder:  mgr.GetEventRecorder("raftsman-" + tls.ControllerName),
		Etcd:      opts.Etcd,
		Options:   opts.TLS,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the tls controller: %w", err)
	}
	if err := setupBackupAndData(mgr, c, opts); err != nil {
		return err
	}
	if err := setupUsers(mgr, c, apiReader, opts); err != nil {
		return err
	}
	if err := undecodable.SetupWithManager(mgr, mgr.GetEventRecorder("raftsman-"+undecodable.ControllerName)); err != nil {
		return fmt.Errorf("set up the undecodable controller: %w", err)
	}
	return nil
}

// setupBackupAndData adds the backup controller and the data controller,
// which shares the backup controller's agent image and Pod deadline.
func setupBackupAndData(mgr ctrl.Manager, c client.Client, opts Options) error {
	if err := (&backup.Reconciler{
		Client:   c,
		Recorder: mgr.GetEventRecorder("raftsman-" + backup.ControllerName),
		Options:  opts.Backup,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the backup controller: %w", err)
	}
	opts.Data.AgentImage = opts.Backup.AgentImage
	opts.Data.CheckDeadline = opts.Backup.BackupDeadline
	if err := (&data.Reconciler{
		Client:   c,
		Recorder: mgr.GetEventRecorder("raftsman-" + data.ControllerName),
		Options:  opts.Data,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the data controller: %w", err)
	}
	return nil
}

// setupUsers adds the user controller, which reaches etcd as the tls
// controller does: same cluster domain, same timeout.
func setupUsers(mgr ctrl.Manager, c client.Client, apiReader client.Reader, opts Options) error {
	opts.User.ClusterDomain = opts.Cluster.ClusterDomain
	opts.User.EtcdTimeout = opts.Cluster.EtcdTimeout
	if err := (&user.Reconciler{
		Client:    c,
		APIReader: apiReader,
		Recorder:  mgr.GetEventRecorder("raftsman-" + user.ControllerName),
		Etcd:      opts.Etcd,
		Options:   opts.User,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the user controller: %w", err)
	}
	return nil
}
