package shard

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// Relabel gives every EtcdCluster, and everything made for it, the shard
// label its hash gives for n shards. It runs when the operator starts,
// before any shard's controllers, and reads past any cache. Children go
// first: a cluster moves to its new shard only once all its objects are
// there, so its new holder never sees the cluster without its members.
//
// namespaces are the namespaces the operator watches; none means all. Each
// is listed on its own, so that an operator limited to some namespaces
// needs no right to list clusters anywhere else.
//
// It is safe only while no replica runs shards with another number of
// shards; the Deployment's Recreate strategy makes sure of that.
func Relabel(ctx context.Context, c client.Client, n int, namespaces []string) (moved int, err error) {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		m, err := relabelIn(ctx, c, n, ns)
		moved += m
		if err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// relabelIn relabels the clusters of one namespace, or of all for "".
func relabelIn(ctx context.Context, c client.Client, n int, namespace string) (moved int, err error) {
	clusters := &metav1.PartialObjectMetadataList{}
	clusters.SetGroupVersionKind(etcdv1.GroupVersion.WithKind("EtcdClusterList"))
	if err := c.List(ctx, clusters, client.InNamespace(namespace)); err != nil {
		return 0, fmt.Errorf("list clusters: %w", err)
	}
	for i := range clusters.Items {
		cl := &clusters.Items[i]
		cl.SetGroupVersionKind(etcdv1.GroupVersion.WithKind("EtcdCluster"))
		want := Label(Of(cl.Namespace, cl.Name, n))
		if have, ok := cl.Labels[etcdv1.ShardLabel]; !ok || have == want {
			// Unlabelled clusters are new: the Labeler labels them.
			continue
		}
		if err := relabelChildren(ctx, c, cl.Namespace, cl.Name, want); err != nil {
			return moved, err
		}
		if err := setLabel(ctx, c, cl, want); err != nil {
			return moved, err
		}
		moved++
	}
	return moved, nil
}

// childKinds are the kinds of what the operator makes for a cluster.
var childKinds = []schema.GroupVersionKind{
	etcdv1.GroupVersion.WithKind("EtcdMemberList"),
	etcdv1.GroupVersion.WithKind("EtcdBackupList"),
	etcdv1.GroupVersion.WithKind("EtcdUserList"),
	corev1.SchemeGroupVersion.WithKind("PodList"),
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaimList"),
	corev1.SchemeGroupVersion.WithKind("ServiceList"),
	corev1.SchemeGroupVersion.WithKind("SecretList"),
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudgetList"),
	{Group: "cert-manager.io", Version: "v1", Kind: "CertificateList"},
}

func relabelChildren(ctx context.Context, c client.Client, namespace, cluster, shard string) error {
	for _, gvk := range childKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		err := c.List(ctx, list, kube.OfCluster(namespace, cluster)...)
		if meta.IsNoMatchError(err) {
			continue // cert-manager is optional
		}
		if err != nil {
			return fmt.Errorf("list %s of %s/%s: %w", gvk.Kind, namespace, cluster, err)
		}
		for i := range list.Items {
			item := &list.Items[i]
			item.SetGroupVersionKind(schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind[:len(gvk.Kind)-len("List")]})
			if item.Labels[etcdv1.ShardLabel] == shard {
				continue
			}
			if err := setLabel(ctx, c, item, shard); err != nil {
				return err
			}
		}
	}
	return nil
}

func setLabel(ctx context.Context, c client.Client, obj client.Object, shard string) error {
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, etcdv1.ShardLabel, shard))
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("move %s %s to shard %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), shard, err)
	}
	return nil
}
