package credentials

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

// TestCacheReadsEachVersionOnce: the client Secret's data is read from the
// API server once per resourceVersion the cache shows; a changed Secret is
// read again, a deleted one is an error, and TLS off reads nothing.
func TestCacheReadsEachVersionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-client-tls", Namespace: "ns"},
		Data: map[string][]byte{pki.CertKey: []byte("cert-1"), pki.KeyKey: []byte("key-1"), pki.CAKey: []byte("ca-1")}}
	reads := 0
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(sec).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			// The data; a metadata Get is the cache's.
			if _, ok := obj.(*corev1.Secret); ok {
				reads++
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Status: etcdv1.EtcdClusterStatus{TLS: &etcdv1.TLSStatus{ClientSecretName: sec.Name}}}
	var k Cache
	load := func(wantCert string, wantReads int) {
		t.Helper()
		creds, err := k.Load(ctx, c, c, cl)
		if err != nil {
			t.Fatal(err)
		}
		if string(creds.CertPEM) != wantCert || reads != wantReads {
			t.Errorf("certificate %q after %d reads, want %q after %d", creds.CertPEM, reads, wantCert, wantReads)
		}
	}
	for range 3 {
		load("cert-1", 1)
	}

	if err := c.Get(ctx, client.ObjectKeyFromObject(sec), sec); err != nil {
		t.Fatal(err)
	}
	sec.Data[pki.CertKey] = []byte("cert-2")
	if err := c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	reads = 0
	for range 3 {
		load("cert-2", 1)
	}

	if err := c.Delete(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Load(ctx, c, c, cl); !apierrors.IsNotFound(err) {
		t.Errorf("deleted Secret: error %v, want NotFound", err)
	}
	if len(k.kept) != 0 {
		t.Errorf("credentials kept for a Secret that is gone: %v", k.kept)
	}

	reads = 0
	off := cl.DeepCopy()
	off.Spec.TLS.Disabled = true
	if creds, err := k.Load(ctx, c, c, off); err != nil || creds.TLS() || reads != 0 {
		t.Errorf("TLS off: %+v, %v after %d reads, want no credentials and no read", creds, err, reads)
	}
}
