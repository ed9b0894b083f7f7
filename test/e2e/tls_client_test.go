//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

// secretData reads a Secret's data.
func (k *kube) secretData(ctx context.Context, t *testing.T, ns, name string) map[string][]byte {
	t.Helper()
	sec := &corev1.Secret{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		t.Fatalf("secret %s: %v", name, err)
	}
	return sec.Data
}

// rootTLS is the TLS configuration of the client certificate the operator
// keeps in the Secret named in status.tls; nil for a cluster without TLS.
func (k *kube) rootTLS(ctx context.Context, t *testing.T, key client.ObjectKey) *tls.Config {
	t.Helper()
	c := &etcdv1.EtcdCluster{}
	if err := k.c.Get(ctx, key, c); err != nil {
		t.Fatal(err)
	}
	if c.Spec.TLS.Disabled {
		return nil
	}
	if c.Status.TLS == nil {
		t.Fatalf("%s has no status.tls", key.Name)
	}
	d := k.secretData(ctx, t, key.Namespace, c.Status.TLS.ClientSecretName)
	return tlsConfig(t, d[pki.CertKey], d[pki.KeyKey], d[pki.CAKey])
}

// tlsConfig builds a client TLS configuration; no certificate when certPEM
// is nil.
func tlsConfig(t *testing.T, certPEM, keyPEM, caPEM []byte) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certPEM != nil {
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// clientConfig points a client at the cluster's client Service by its name.
func (k *kube) clientConfig(ctx context.Context, t *testing.T, key client.ObjectKey, tc *tls.Config) clientv3.Config {
	t.Helper()
	svc := &corev1.Service{}
	if err := k.c.Get(ctx, key, svc); err != nil {
		t.Fatal(err)
	}
	return dialByName(fmt.Sprintf("%s.%s.svc", key.Name, key.Namespace), svc.Spec.ClusterIP, tc)
}

// dialByName makes a client configuration for host that connects to ip.
// The tests run outside the cluster and cannot resolve its names, yet the
// certificate must be checked for the name (etcd's client takes the name
// to check from the endpoint's host, so an IP endpoint would not do).
func dialByName(host, ip string, tc *tls.Config) clientv3.Config {
	scheme := "http"
	if tc != nil {
		scheme = "https"
	}
	return clientv3.Config{
		Endpoints:   []string{fmt.Sprintf("%s://%s:%d", scheme, host, etcdv1.ClientPort)},
		TLS:         tc,
		DialTimeout: 3 * time.Second,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", net.JoinHostPort(ip, port))
		})},
	}
}
