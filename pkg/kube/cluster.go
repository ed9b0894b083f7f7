package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// ToCluster maps an object made for a cluster (a member, its Pod or PVC, a
// Secret, a backup) to the cluster named by its cluster label, for watches;
// an object without the label maps to nothing.
func ToCluster(_ context.Context, o client.Object) []reconcile.Request {
	name, ok := o.GetLabels()[etcdv1.ClusterLabel]
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// OfCluster selects the objects made for the cluster namespace/name (its
// members, Pods, PVCs, backups) in a List, with opts after.
func OfCluster(namespace, name string, opts ...client.ListOption) []client.ListOption {
	return append([]client.ListOption{client.InNamespace(namespace), client.MatchingLabels{etcdv1.ClusterLabel: name}}, opts...)
}
