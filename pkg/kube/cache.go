package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// CacheOptions keep the operator's cache to what it needs: of all Secrets,
// only those of its clusters (certificates, credentials), which carry the
// managed-by label. Secrets of users are read past the cache.
func CacheOptions() cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{etcdv1.ManagedByLabel: "raftsman"})},
	}}
}
