//go:build e2e

package e2e

import (
	"context"
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

// cmObject is a cert-manager object of the given kind.
func cmObject(kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cert-manager.io/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     spec,
	}}
	return u
}

func TestCertManagerSource(t *testing.T) {
	parallel(t)
	f := features.New("cert-manager").
		Assess("a cluster runs with certificates cert-manager issues from a CA Issuer", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			// A CA Issuer whose CA a self-signed Issuer makes.
			for _, o := range []*unstructured.Unstructured{
				cmObject("Issuer", ns, "selfsigned", map[string]any{"selfSigned": map[string]any{}}),
				cmObject("Certificate", ns, "test-ca", map[string]any{
					"isCA": true, "commonName": "test-ca", "secretName": "test-ca",
					"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
					"issuerRef":  map[string]any{"name": "selfsigned", "kind": "Issuer"},
				}),
				cmObject("Issuer", ns, "ca", map[string]any{"ca": map[string]any{"secretName": "test-ca"}}),
			} {
				if err := k.c.Create(ctx, o); err != nil {
					t.Fatalf("create %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
			c := newCluster(ns, "cm", 3)
			issuer := &etcdv1.CertManagerSource{IssuerRef: etcdv1.IssuerRef{Name: "ca", Kind: "Issuer"}}
			c.Spec.TLS.Peer = &etcdv1.TLSSource{CertManager: issuer}
			c.Spec.TLS.Client.CertManager = issuer
			start := time.Now()
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			t.Logf("3 members Available %.1fs after create", time.Since(start).Seconds())

			caCert := k.secretData(ctx, t, ns, "test-ca")["tls.crt"]
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(caCert)
			c = getCluster(ctx, t, k, key)
			for purpose, mounted := range map[string]string{"peer": c.Status.TLS.PeerSecretName, "client": c.Status.TLS.ServerSecretName} {
				name := fmt.Sprintf("cm-%s-cm", purpose)
				cert := cmObject("Certificate", ns, name, nil)
				if err := k.c.Get(ctx, client.ObjectKeyFromObject(cert), cert); err != nil {
					t.Fatalf("cert-manager Certificate %s: %v", name, err)
				}
				issued := k.secretData(ctx, t, ns, name)
				if string(k.secretData(ctx, t, ns, mounted)[pki.CertKey]) != string(issued[pki.CertKey]) {
					t.Errorf("Secret %s does not hold the certificate cert-manager issued in %s", mounted, name)
				}
				leaf, err := pki.ParseCertsPEM(issued[pki.CertKey])
				if err != nil {
					t.Fatal(err)
				}
				if _, err := leaf[0].Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
					t.Errorf("%s is not signed by the Issuer's CA: %v", name, err)
				}
			}
			cli := etcdClient(ctx, t, k, key)
			w := startWriter(ctx, cli, "cm/")
			time.Sleep(2 * time.Second)
			acked, _ := w.stop()
			checkKeys(ctx, t, cli, "cm/", acked)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
