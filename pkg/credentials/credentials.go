// Package credentials reads what the operator presents to a cluster's etcd.
package credentials

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/pki"
)

// Load returns the operator's credentials for the etcd of c: none when TLS
// is disabled, else the client certificate in the Secret that status.tls
// names (the tls controller writes it before TLSReady turns True).
func Load(ctx context.Context, r client.Reader, c *etcdv1.EtcdCluster) (etcd.Credentials, error) {
	if c.Spec.TLS.Disabled {
		return etcd.Credentials{}, nil
	}
	if c.Status.TLS == nil || c.Status.TLS.ClientSecretName == "" {
		return etcd.Credentials{}, fmt.Errorf("status.tls.clientSecretName of %s is not set yet", c.Name)
	}
	sec := &corev1.Secret{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Status.TLS.ClientSecretName}, sec); err != nil {
		return etcd.Credentials{}, fmt.Errorf("get the client certificate: %w", err)
	}
	return etcd.Credentials{CertPEM: sec.Data[pki.CertKey], KeyPEM: sec.Data[pki.KeyKey], CAPEM: sec.Data[pki.CAKey]}, nil
}
