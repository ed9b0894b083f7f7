//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

// otherCA is a CA the test makes on its own, with crypto/x509 rather than
// the operator's code, as a user's corporate CA would be.
type otherCA struct {
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
}

func newOtherCA(t *testing.T, cn string) *otherCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{"e2e"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &otherCA{cert: cert, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// clientCert signs a client certificate with common name cn.
func (ca *otherCA) clientCert(t *testing.T, cn string) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(12 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// withClientCert is the root TLS configuration of the cluster (it checks
// the members with the client Secret's ca.crt) presenting another
// certificate.
func withClientCert(base *tls.Config, cert tls.Certificate) *tls.Config {
	c := base.Clone()
	c.Certificates = []tls.Certificate{cert}
	return c
}

// tlsRefusal connects to a member's client port and reads the first bytes
// the member sends: nil when it accepts the client certificate, else how
// the session ended. etcd refuses a certificate of a CA it does not trust
// with a TLS alert, which with TLS 1.3 the client reads after its side of
// the handshake; that tells a refusal from a member that cannot be reached.
func tlsRefusal(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, member string, cfg *tls.Config) error {
	t.Helper()
	p := &corev1.Pod{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: member}, p); err != nil {
		t.Fatal(err)
	}
	c := cfg.Clone()
	c.ServerName = fmt.Sprintf("%s.%s-peer.%s.svc", member, key.Name, key.Namespace)
	c.NextProtos = []string{"h2"}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 3 * time.Second}, Config: c}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.Status.PodIP, fmt.Sprint(etcdv1.ClientPort)))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err
}

// wantTLSRefusal fails unless every member ends the session with a TLS
// alert.
func wantTLSRefusal(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, what string, cfg *tls.Config) {
	t.Helper()
	for _, m := range getCluster(ctx, t, k, key).Status.Members {
		err := tlsRefusal(ctx, t, k, key, m.Name, cfg)
		if err == nil || !strings.Contains(err.Error(), "remote error: tls") {
			t.Errorf("%s at member %s: %v, want a TLS alert", what, m.Name, err)
		}
	}
}

// podUIDs are the UIDs of the members' Pods, to tell when each restarted.
func podUIDs(ctx context.Context, t *testing.T, k *kube, c *etcdv1.EtcdCluster) map[string]types.UID {
	t.Helper()
	uids := map[string]types.UID{}
	for _, m := range c.Status.Members {
		p := &corev1.Pod{}
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: m.Name}, p); err != nil {
			t.Fatal(err)
		}
		uids[m.Name] = p.UID
	}
	return uids
}

// TestClientCertificateTrust: members accept client certificates only from
// the operator's CA of the cluster and from the CAs the user names in
// spec.tls.client.trustedCASecretRef. With authentication on, etcd takes a
// certificate's common name as the user, so a certificate with common name
// root from any CA members trust is root. The serving certificate comes
// from a cert-manager CA Issuer, as a shared ClusterIssuer would give it:
// a certificate anyone gets from that issuer must not be root either.
func TestClientCertificateTrust(t *testing.T) {
	parallel(t)
	const name = "trust"
	var key client.ObjectKey
	var other *otherCA
	// firstKeys are written before the members trust the other CA.
	var firstKeys []string
	f := features.New("client certificate trust").
		Setup(func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			for _, o := range []*unstructured.Unstructured{
				cmObject("Issuer", ns, "selfsigned", map[string]any{"selfSigned": map[string]any{}}),
				cmObject("Certificate", ns, "shared-ca", map[string]any{
					"isCA": true, "commonName": "shared-ca", "secretName": "shared-ca",
					"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
					"issuerRef":  map[string]any{"name": "selfsigned", "kind": "Issuer"},
				}),
				cmObject("Issuer", ns, "shared", map[string]any{"ca": map[string]any{"secretName": "shared-ca"}}),
			} {
				if err := k.c.Create(ctx, o); err != nil {
					t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			c := newCluster(ns, name, 3)
			c.Spec.Auth.Enabled = true
			c.Spec.TLS.Client.CertManager = &etcdv1.CertManagerSource{IssuerRef: etcdv1.IssuerRef{Name: "shared", Kind: "Issuer"}}
			start := time.Now()
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key = client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			waitFor(ctx, t, time.Minute, "AuthReady", func() (bool, error) {
				return conditionTrue(getCluster(ctx, t, k, key), etcdv1.ConditionAuthReady) == nil, nil
			})
			t.Logf("3 members with authentication on %.1fs after create", time.Since(start).Seconds())
			other = newOtherCA(t, "other clients CA")
			return ctx
		}).
		Assess("a root certificate of another CA or of the serving certificate's issuer is refused; the client Secret works", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := key.Namespace
			root := k.rootTLS(ctx, t, key)
			cli := etcdClient(ctx, t, k, key)
			w := startWriter(ctx, cli, "trust/")
			time.Sleep(time.Second)
			firstKeys, _ = w.stop()
			checkKeys(ctx, t, cli, "trust/", firstKeys)

			if err := tryPut(ctx, k.clientConfig(ctx, t, key, withClientCert(root, other.clientCert(t, "root")))); err == nil {
				t.Errorf("a certificate with common name root of another CA was accepted")
			} else {
				t.Logf("another CA's root certificate refused: %v", err)
			}
			wantTLSRefusal(ctx, t, k, key, "another CA's root certificate", withClientCert(root, other.clientCert(t, "root")))

			// A certificate with common name root, client authentication,
			// from the issuer of the serving certificate.
			intruder := cmObject("Certificate", ns, "intruder", map[string]any{
				"commonName": "root", "secretName": "intruder", "usages": []any{"digital signature", "client auth"},
				"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
				"issuerRef":  map[string]any{"name": "shared", "kind": "Issuer"},
			})
			if err := k.c.Create(ctx, intruder); err != nil {
				t.Fatal(err)
			}
			var data map[string][]byte
			waitFor(ctx, t, time.Minute, "cert-manager to issue the intruder's certificate", func() (bool, error) {
				sec := &corev1.Secret{}
				if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "intruder"}, sec); err != nil {
					return false, ignoreNotFound(err)
				}
				data = sec.Data
				return len(data[pki.CertKey]) > 0, nil
			})
			cert, err := tls.X509KeyPair(data[pki.CertKey], data[pki.KeyKey])
			if err != nil {
				t.Fatal(err)
			}
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, withClientCert(root, cert))); err == nil {
				t.Errorf("a certificate with common name root from the serving certificate's issuer was accepted")
			} else {
				t.Logf("the issuer's root certificate refused: %v", err)
			}
			wantTLSRefusal(ctx, t, k, key, "the issuer's root certificate", withClientCert(root, cert))
			for _, m := range getCluster(ctx, t, k, key).Status.Members {
				if err := tlsRefusal(ctx, t, k, key, m.Name, root); err != nil {
					t.Errorf("member %s refuses the client Secret's certificate: %v", m.Name, err)
				}
			}
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, root)); err != nil {
				t.Errorf("the client Secret's certificate: %v", err)
			}
			return ctx
		}).
		Assess("with the other CA in trustedCASecretRef, members restart and accept its certificate", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := key.Namespace
			c := getCluster(ctx, t, k, key)
			oldRev := c.Status.TLS.TrustRevision
			before := podUIDs(ctx, t, k, c)
			cli := etcdClient(ctx, t, k, key)
			w := startWriter(ctx, cli, "restart/")

			sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "client-cas", Namespace: ns}, Data: map[string][]byte{pki.CAKey: other.certPEM}}
			if err := k.c.Create(ctx, sec); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.TLS.Client.TrustedCASecretRef = &corev1.LocalObjectReference{Name: sec.Name}
			if err := k.c.Patch(ctx, c, patch); err != nil {
				t.Fatal(err)
			}
			waitFor(ctx, t, 6*time.Minute, "every member restarted with the new trust", func() (bool, error) {
				c = getCluster(ctx, t, k, key)
				st := c.Status.TLS
				if st.TrustRevision == oldRev || conditionTrue(c, etcdv1.ConditionTLSReady) != nil {
					return false, fmt.Errorf("status.tls %+v", st)
				}
				members := &etcdv1.EtcdMemberList{}
				if err := k.c.List(ctx, members, client.InNamespace(ns)); err != nil {
					return false, err
				}
				for _, m := range members.Items {
					if m.Spec.TLS == nil || m.Spec.TLS.TrustRevision != st.TrustRevision {
						return false, fmt.Errorf("member %s not restarted yet", m.Name)
					}
					p := &corev1.Pod{}
					if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, p); err != nil {
						return false, ignoreNotFound(err)
					}
					if p.UID == before[m.Name] || !podReady(p) {
						return false, fmt.Errorf("pod %s not restarted and Ready yet", m.Name)
					}
				}
				return true, nil
			})
			waitConverged(ctx, t, k, key, 3, 2*time.Minute)
			t.Logf("members restarted with the new trust in %.1fs", time.Since(start).Seconds())
			acked, failed := w.stop()
			t.Logf("writer during the restarts: %d acknowledged, %d failed", len(acked), failed)

			root := k.rootTLS(ctx, t, key)
			trusted := withClientCert(root, other.clientCert(t, "root"))
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, trusted)); err != nil {
				t.Errorf("a root certificate of the trusted CA after the restarts: %v", err)
			}
			// Every member, not just the one the Service picked.
			for _, m := range c.Status.Members {
				p := &corev1.Pod{}
				if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, p); err != nil {
					t.Fatal(err)
				}
				if err := tryPut(ctx, dialByName(fmt.Sprintf("%s.%s-peer.%s.svc", m.Name, name, ns), p.Status.PodIP, trusted)); err != nil {
					t.Errorf("member %s refuses the trusted CA's certificate: %v", m.Name, err)
				}
			}
			otherCli, err := clientv3.New(k.clientConfig(ctx, t, key, trusted))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = otherCli.Close() }()
			checkKeys(ctx, t, otherCli, "trust/", firstKeys)
			checkKeys(ctx, t, otherCli, "restart/", acked)

			// The issuer's certificate stays refused: naming one CA does
			// not bring the others in.
			data := k.secretData(ctx, t, ns, "intruder")
			cert, err := tls.X509KeyPair(data[pki.CertKey], data[pki.KeyKey])
			if err != nil {
				t.Fatal(err)
			}
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, withClientCert(root, cert))); err == nil {
				t.Errorf("the issuer's root certificate is accepted after the restarts")
			}
			wantTLSRefusal(ctx, t, k, key, "the issuer's root certificate after the restarts", withClientCert(root, cert))
			if err := tryPut(ctx, k.clientConfig(ctx, t, key, root)); err != nil {
				t.Errorf("the client Secret's certificate after the restarts: %v", err)
			}
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
