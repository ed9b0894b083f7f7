package shard

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// Labeler gives each new EtcdCluster its shard label. Every replica runs
// it, without a Lease: the hash decides, so replicas that label the same
// cluster agree, and no cluster waits for one particular replica. It
// watches only the clusters' metadata, which costs little memory even for
// every cluster of the fleet.
//
// It adds a missing label (with the cluster controller's finalizer, in the
// same write: labelPatch) and never changes one: moving a running cluster
// to another shard while a shard holder works on it could let two replicas
// act on it. A label that no longer matches (the number of shards changed)
// is fixed by Relabel when the operator starts, before any shard runs.
type Labeler struct {
	client.Client
	Recorder events.EventRecorder
	Shards   int
}

// SetupWithManager registers the labeler.
func (l *Labeler) SetupWithManager(mgr ctrl.Manager) error {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(etcdv1.GroupVersion.WithKind("EtcdCluster"))
	return ctrl.NewControllerManagedBy(mgr).
		Named("shard-labeler").
		WithOptions(controller.Options{MaxConcurrentReconciles: 2}).
		For(meta, builder.OnlyMetadata).
		Complete(l)
}

// Reconcile labels one cluster.
func (l *Labeler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(etcdv1.GroupVersion.WithKind("EtcdCluster"))
	if err := l.Get(ctx, req.NamespacedName, meta); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want := Label(Of(req.Namespace, req.Name, l.Shards))
	have, ok := meta.Labels[etcdv1.ShardLabel]
	switch {
	case ok && have == want:
		return ctrl.Result{}, nil
	case ok:
		ctrl.LoggerFrom(ctx).Info("The cluster's shard label does not match the number of shards; the operator's next start moves it", "shard", have, "want", want)
		return ctrl.Result{}, nil
	}
	if err := l.Patch(ctx, meta, client.RawPatch(types.ApplyPatchType, labelPatch(meta, want)), client.FieldOwner(etcdv1.FieldManager("shard")), client.ForceOwnership); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("label %s with its shard: %w", req, err)
	}
	return ctrl.Result{}, nil
}

// labelPatch is the apply of a new cluster's shard label and, in the same
// write, of the cluster controller's finalizer, which that controller
// would otherwise add in a write of its own (kube.AddFinalizer finds it
// there). A cluster being deleted gets no new finalizer. The apply owns
// only these two entries: other labels and finalizers stay as they are.
func labelPatch(meta *metav1.PartialObjectMetadata, shard string) []byte {
	m := map[string]any{"name": meta.Name, "namespace": meta.Namespace, "labels": map[string]string{etcdv1.ShardLabel: shard}}
	if meta.DeletionTimestamp.IsZero() {
		m["finalizers"] = []string{etcdv1.ClusterFinalizer}
	}
	patch, _ := json.Marshal(map[string]any{"apiVersion": etcdv1.GroupVersion.String(), "kind": "EtcdCluster", "metadata": m})
	return patch
}

// BackupLabeler gives each EtcdBackup the cluster and shard labels of the
// cluster it names, so that the replica holding that shard sees it. Users
// create EtcdBackups without labels; like the Labeler, every replica runs
// it and the hash decides.
type BackupLabeler struct {
	client.Client
	Shards int
}

// SetupWithManager registers the labeler.
func (l *BackupLabeler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("backup-labeler").
		For(&etcdv1.EtcdBackup{}).
		Complete(l)
}

// Reconcile labels one backup.
func (l *BackupLabeler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &etcdv1.EtcdBackup{}
	if err := l.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, labelForCluster(ctx, l.Client, b, b.Spec.ClusterName, l.Shards)
}

// UserLabeler gives each EtcdUser the cluster and shard labels of the
// cluster it names, as BackupLabeler does for backups.
type UserLabeler struct {
	client.Client
	Shards int
}

// SetupWithManager registers the labeler.
func (l *UserLabeler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("user-labeler").
		For(&etcdv1.EtcdUser{}).
		Complete(l)
}

// Reconcile labels one user.
func (l *UserLabeler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	u := &etcdv1.EtcdUser{}
	if err := l.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	return ctrl.Result{}, labelForCluster(ctx, l.Client, u, u.Spec.ClusterName, l.Shards)
}

// labelForCluster adds the cluster and shard labels of cluster to obj,
// those it lacks only.
func labelForCluster(ctx context.Context, c client.Client, obj client.Object, cluster string, shards int) error {
	want := map[string]string{etcdv1.ClusterLabel: cluster, etcdv1.ShardLabel: Label(Of(obj.GetNamespace(), cluster, shards))}
	labels := map[string]string{}
	for k, v := range want {
		if _, ok := obj.GetLabels()[k]; !ok {
			labels[k] = v
		}
	}
	if len(labels) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("label %s with its cluster's shard: %w", obj.GetName(), err)
	}
	return nil
}
