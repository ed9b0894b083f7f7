package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// secretGVK is the kind whose objects the cache keeps as metadata only.
var secretGVK = corev1.SchemeGroupVersion.WithKind("Secret")

// NewCache is the cache of the operator's managers (ctrl.Options.NewCache):
// cache.New, which refuses to cache Secrets other than as metadata.
//
// The cache holds of Secrets their metadata only (see "What the cache
// keeps"). A typed Get or List of Secrets through it, or a watch of typed
// Secrets, would start a second informer holding every Secret whole, keys
// included, without a word: it fails instead, naming the two ways to read
// a Secret (SecretMeta from the cache, the API reader for its data).
func NewCache(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return metadataOnlySecrets{Cache: c}, nil
}

// metadataOnlySecrets is a cache that serves Secrets as
// metav1.PartialObjectMetadata only.
type metadataOnlySecrets struct{ cache.Cache }

// errSecretData is what asking the cache for a Secret's data gets.
func errSecretData(what string) error {
	return fmt.Errorf("%s: the cache holds Secrets' metadata only (metav1.PartialObjectMetadata, kube.SecretMeta); read a Secret's data with the API reader", what)
}

// typedSecret says whether obj is a Secret or a list of Secrets other
// than their metadata: typed, or unstructured.
func typedSecret(obj runtime.Object) bool {
	switch obj.(type) {
	case *corev1.Secret, *corev1.SecretList:
		return true
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return false
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	return gvk.Group == "" && (gvk.Kind == "Secret" || gvk.Kind == "SecretList")
}

func (c metadataOnlySecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if typedSecret(obj) {
		return errSecretData("get secret " + key.Name)
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

func (c metadataOnlySecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if typedSecret(list) {
		return errSecretData("list secrets")
	}
	return c.Cache.List(ctx, list, opts...)
}

func (c metadataOnlySecrets) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if typedSecret(obj) {
		return nil, errSecretData("informer of secrets")
	}
	return c.Cache.GetInformer(ctx, obj, opts...)
}

// GetInformerForKind always makes a typed informer.
func (c metadataOnlySecrets) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if gvk == secretGVK {
		return nil, errSecretData("informer of secrets")
	}
	return c.Cache.GetInformerForKind(ctx, gvk, opts...)
}

func (c metadataOnlySecrets) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if typedSecret(obj) {
		return errSecretData("index of secrets")
	}
	return c.Cache.IndexField(ctx, obj, field, extract)
}

// SecretMeta reads a Secret's metadata from the cache (r is the cached
// client): nil, and no error, when the cache has no such Secret.
func SecretMeta(ctx context.Context, r client.Reader, key client.ObjectKey) (*metav1.PartialObjectMetadata, error) {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(secretGVK)
	switch err := r.Get(ctx, key, m); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get the metadata of secret %s: %w", key.Name, err)
	}
	return m, nil
}
