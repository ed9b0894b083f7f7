// Package credentials reads what the operator presents to a cluster's etcd.
package credentials

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
)

// Cache keeps the operator's credentials for each cluster's etcd, read
// from the cluster's client Secret once per resourceVersion of it. The
// zero value is ready to use; it is safe for concurrent use.
//
// Its readers build an etcd client at every pass, and the cluster
// controller passes over a calm cluster every few minutes to poll its
// health: reading the Secret from the API server each time would cost one
// request per cluster per pass for a Secret that changes when its
// certificate is renewed, months apart. The manager's cache holds
// Secrets' metadata only (never their keys, see kube.CacheOptions), so a
// pass looks up there the Secret's resourceVersion, and reads the Secret
// from the API server only when that is not the version whose credentials
// are kept: an idle cluster's passes read no Secret from the API server.
// Any change of the Secret, by the tls controller or by anyone, gives it a
// new resourceVersion, and the next pass reads it again.
type Cache struct {
	mu   sync.Mutex
	kept map[types.NamespacedName]kept
}

// kept is what is kept for one cluster: the credentials read from version
// rv of Secret secret.
type kept struct {
	secret, rv string
	creds      etcd.Credentials
}

// Load returns the operator's credentials for the etcd of c: none when TLS
// is disabled, else the client certificate in the Secret that status.tls
// names (the tls controller writes it before TLSReady turns True). cached
// is the manager's cached client, which gives the Secret's metadata; api
// reads past the cache, for its data.
func (k *Cache) Load(ctx context.Context, cached, api client.Reader, c *etcdv1.EtcdCluster) (etcd.Credentials, error) {
	if c.Spec.TLS.Disabled {
		return etcd.Credentials{}, nil
	}
	if c.Status.TLS == nil || c.Status.TLS.ClientSecretName == "" {
		return etcd.Credentials{}, fmt.Errorf("status.tls.clientSecretName of %s is not set yet", c.Name)
	}
	name := c.Status.TLS.ClientSecretName
	cluster := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	key := client.ObjectKey{Namespace: c.Namespace, Name: name}
	m, err := kube.SecretMeta(ctx, cached, key)
	if err != nil {
		return etcd.Credentials{}, fmt.Errorf("get the client certificate: %w", err)
	}
	if m == nil {
		k.Forget(cluster)
		return etcd.Credentials{}, fmt.Errorf("get the client certificate: %w", apierrors.NewNotFound(corev1.Resource("secrets"), name))
	}
	if creds, ok := k.get(cluster, name, m.ResourceVersion); ok {
		return creds, nil
	}
	sec := &corev1.Secret{}
	if err := api.Get(ctx, key, sec); err != nil {
		return etcd.Credentials{}, fmt.Errorf("get the client certificate: %w", err)
	}
	creds := etcd.Credentials{CertPEM: sec.Data[pki.CertKey], KeyPEM: sec.Data[pki.KeyKey], CAPEM: sec.Data[pki.CAKey]}
	// Kept under the version the cache shows, which the next pass compares:
	// the API server may already have a newer one, read here, and the cache
	// will show it soon, which reads it once more.
	k.put(cluster, kept{secret: name, rv: m.ResourceVersion, creds: creds})
	return creds, nil
}

// Forget drops what is kept for a cluster, once it is gone.
func (k *Cache) Forget(cluster types.NamespacedName) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.kept, cluster)
}

func (k *Cache) get(cluster types.NamespacedName, secret, rv string) (etcd.Credentials, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.kept[cluster]
	if !ok || e.secret != secret || e.rv != rv {
		return etcd.Credentials{}, false
	}
	return e.creds, true
}

func (k *Cache) put(cluster types.NamespacedName, e kept) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.kept == nil {
		k.kept = map[types.NamespacedName]kept{}
	}
	k.kept[cluster] = e
}
