// Package controllers wires Raftsman's controllers into a manager.
package controllers

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/raftsman/raftsman/controllers/backup"
	"github.com/raftsman/raftsman/controllers/cluster"
	"github.com/raftsman/raftsman/controllers/member"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// Options configure every controller.
type Options struct {
	Cluster cluster.Options
	TLS     tls.Options
	Backup  backup.Options
	// Etcd makes the etcd clients; a fake in tests.
	Etcd etcd.Factory
}

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// Moving clusters between shards relabels everything made for them.
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims;services;secrets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=etcd.raftsman.io,resources=etcdclusters;etcdmembers;etcdbackups,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;patch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// The metrics endpoint checks its clients' tokens and rights.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// The operator's own account may read its metrics (tests scrape with it).
// +kubebuilder:rbac:urls=/metrics,verbs=get

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
	if err := (&cluster.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("raftsman-" + cluster.ControllerName),
		Etcd:     opts.Etcd,
		Options:  opts.Cluster,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the cluster controller: %w", err)
	}
	if err := (&member.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("raftsman-" + member.ControllerName),
		Workers:   opts.Cluster.Workers,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the member controller: %w", err)
	}
	opts.TLS.ClusterDomain = opts.Cluster.ClusterDomain
	opts.TLS.EtcdTimeout = opts.Cluster.EtcdTimeout
	if err := (&tls.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  mgr.GetEventRecorder("raftsman-" + tls.ControllerName),
		Etcd:      opts.Etcd,
		Options:   opts.TLS,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the tls controller: %w", err)
	}
	if err := (&backup.Reconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("raftsman-" + backup.ControllerName),
		Options:  opts.Backup,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the backup controller: %w", err)
	}
	return nil
}
