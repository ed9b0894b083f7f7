package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// CacheOptions keep a shard's cache to the objects of its own clusters:
// every object the operator makes for a cluster carries the cluster's shard
// label, so a replica holds in memory only the shards it runs. Of Secrets,
// only the operator's (certificates, credentials) are cached; Secrets of
// users are read past the cache. An empty shard caches every shard's
// objects, for tests that run the controllers without sharding.
//
// namespaces, when given, are the only namespaces whose objects are cached
// (--watch-namespaces): the operator then needs no right to list or watch
// anything elsewhere. None caches every namespace.
func CacheOptions(shard string, namespaces ...string) cache.Options {
	managed, _ := labels.NewRequirement(etcdv1.ManagedByLabel, selection.Equals, []string{"raftsman"})
	secrets := labels.NewSelector().Add(*managed)
	// managedFields are about a fifth of a cached object and nothing here
	// reads them.
	opts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if shard != "" {
		inShard, _ := labels.NewRequirement(etcdv1.ShardLabel, selection.Equals, []string{shard})
		opts.DefaultLabelSelector = labels.NewSelector().Add(*inShard)
		secrets = secrets.Add(*inShard)
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = make(map[string]cache.Config, len(namespaces))
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	opts.ByObject = map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: secrets},
		// StorageClasses belong to no cluster and to no namespace: each
		// shard caches them all, whatever the watched namespaces (this is
		// one of the few cluster-wide reads, see controllers/setup.go).
		&storagev1.StorageClass{}: {Label: labels.Everything()},
	}
	return opts
}

// ParseNamespaces splits a comma-separated list of namespaces, dropping
// blanks and repeats; an empty list means every namespace.
func ParseNamespaces(list string) []string {
	var out []string
	seen := map[string]bool{}
	for _, ns := range strings.Split(list, ",") {
		ns = strings.TrimSpace(ns)
		if ns == "" || seen[ns] {
			continue
		}
		seen[ns] = true
		out = append(out, ns)
	}
	return out
}
