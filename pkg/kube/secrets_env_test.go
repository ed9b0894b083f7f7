package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/kube"
)

// TestEnvSecretsMetadataOnly: a shard's cache holds the metadata of the
// operator's Secrets of that shard, and nothing of their data; a typed read
// of Secrets through the cache, or through a client that reads from it as
// the managers' clients do, is refused instead of starting an informer of
// whole Secrets.
func TestEnvSecretsMetadataOnly(t *testing.T) {
	cfg, scheme := testenv.Start(t)
	api, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ns := testenv.NewNamespace(t, api, "secrets-", nil)
	opts := kube.CacheOptions("shard-0")
	opts.Scheme = scheme
	c, err := kube.NewCache(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = c.Start(ctx)
	}()
	t.Cleanup(func() { cancel(); <-stopped })

	const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
	secret := func(name string, labels map[string]string) {
		t.Helper()
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels,
				Annotations: map[string]string{lastApplied: `{"data":{"tls.key":"a2V5"}}`, "etcd.raftsman.io/note": "kept"}},
			Data: map[string][]byte{"tls.key": []byte("the private key")},
		}
		if err := api.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	ours := map[string]string{etcdv1.ManagedByLabel: "raftsman", etcdv1.ShardLabel: "shard-0", etcdv1.ClusterLabel: "demo"}
	secret("demo-ca", ours)
	secret("other-shard-ca", map[string]string{etcdv1.ManagedByLabel: "raftsman", etcdv1.ShardLabel: "shard-1"})
	secret("users", nil)

	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	inf, err := c.GetInformer(t.Context(), meta)
	if err != nil {
		t.Fatal(err)
	}
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	testenv.Eventually(t, 20*time.Second, "the operator's Secret in the cache", func() error {
		m, err := kube.SecretMeta(t.Context(), c, key("demo-ca"))
		if err == nil && m == nil {
			err = fmt.Errorf("not yet")
		}
		return err
	})
	for _, name := range []string{"other-shard-ca", "users"} {
		if m, err := kube.SecretMeta(t.Context(), c, key(name)); m != nil || err != nil {
			t.Errorf("Secret %s in the shard's cache: %v, %v", name, m, err)
		}
	}
	// What the informer stores: metadata, the operator's annotations only.
	for _, o := range inf.(toolscache.SharedIndexInformer).GetStore().List() {
		m, ok := o.(*metav1.PartialObjectMetadata)
		switch {
		case !ok:
			t.Errorf("the Secret informer stores a %T", o)
		case m.Namespace != ns:
		case m.Name != "demo-ca" || len(m.Annotations) != 1 || m.Annotations["etcd.raftsman.io/note"] != "kept" || m.ManagedFields != nil:
			t.Errorf("the Secret informer stores %s with annotations %v and %d managedFields", m.Name, m.Annotations, len(m.ManagedFields))
		}
	}

	// Refused: whatever would start an informer of whole Secrets.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	cached, err := client.New(cfg, client.Options{Scheme: scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	_, typedInformer := c.GetInformer(t.Context(), &corev1.Secret{})
	_, kindInformer := c.GetInformerForKind(t.Context(), corev1.SchemeGroupVersion.WithKind("Secret"))
	for what, err := range map[string]error{
		"typed Get":                  c.Get(t.Context(), key("demo-ca"), &corev1.Secret{}),
		"typed List":                 c.List(t.Context(), &corev1.SecretList{}, client.InNamespace(ns)),
		"unstructured Get":           c.Get(t.Context(), key("demo-ca"), u),
		"typed Get through a client": cached.Get(t.Context(), key("demo-ca"), &corev1.Secret{}),
		"typed informer":             typedInformer,
		"informer of the kind":       kindInformer,
	} {
		if err == nil {
			t.Errorf("%s of a Secret through the cache: no error, want one", what)
		}
	}
	if err := cached.Get(t.Context(), key("demo-ca"), meta); err != nil || meta.ResourceVersion == "" {
		t.Errorf("metadata Get through a client = %v, %v", meta, err)
	}
}
