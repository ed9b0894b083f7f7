package tls

import (
	"context"
	"crypto/x509"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// trustCAs are the CAs of a test: one per possible source of a certificate.
type trustCAs struct {
	peer, server, issuer, clients, clients2 *pki.KeyPair
}

func newTrustCAs(t *testing.T) trustCAs {
	t.Helper()
	mk := func(cn string) *pki.KeyPair {
		ca, err := pki.NewCA(cn, 24*time.Hour, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	return trustCAs{peer: mk("peer CA"), server: mk("serving CA"), issuer: mk("shared issuer"), clients: mk("clients CA"), clients2: mk("clients CA 2")}
}

// trustEnv is one cluster on a fake API server, with the Secrets users and
// cert-manager would have written.
type trustEnv struct {
	t *testing.T
	c client.Client
	r *Reconciler
}

const trustNS, trustCluster = "ns", "demo"

func newTrustEnv(t *testing.T, spec etcdv1.TLSSpec, objs ...client.Object) *trustEnv {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// cert-manager's Certificate, without importing cert-manager.
	scheme.AddKnownTypeWithName(certificateGVK, &unstructured.Unstructured{})
	c := &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: trustCluster, Namespace: trustNS, UID: "uid-1", Generation: 1},
		Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16", TLS: spec},
	}
	cl := fake.NewClientBuilder().WithTypeConverters(testenv.TypeConverters(t)...).WithScheme(scheme).
		WithObjects(append([]client.Object{c}, objs...)...).
		WithStatusSubresource(&etcdv1.EtcdCluster{}).
		Build()
	return &trustEnv{t: t, c: cl, r: &Reconciler{Client: cl, APIReader: cl, Recorder: events.NewFakeRecorder(100),
		Etcd: etcd.NewFakeFactory(), Options: DefaultOptions()}}
}

func (e *trustEnv) reconcile() *etcdv1.EtcdCluster {
	e.t.Helper()
	if _, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: trustNS, Name: trustCluster}}); err != nil {
		e.t.Fatalf("reconcile: %v", err)
	}
	c := &etcdv1.EtcdCluster{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: trustNS, Name: trustCluster}, c); err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *trustEnv) secret(name string) *corev1.Secret {
	e.t.Helper()
	s := &corev1.Secret{}
	if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: trustNS, Name: name}, s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

// cas names the CAs in a bundle by common name, the operator's as
// "operator".
func (e *trustEnv) cas(pemBytes []byte) []string {
	e.t.Helper()
	certs, err := pki.ParseCertsPEM(pemBytes)
	if err != nil {
		e.t.Fatal(err)
	}
	var names []string
	for _, c := range certs {
		n := c.Subject.CommonName
		if strings.Contains(n, "etcd CA") {
			n = "operator"
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func userSecret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: trustNS}, Data: data}
}

// tlsSecret is a Secret with a certificate of ca for usage, covering the
// names of the cluster.
func tlsSecret(t *testing.T, name string, ca *pki.KeyPair, usage pki.Usage) *corev1.Secret {
	t.Helper()
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: trustCluster, Namespace: trustNS}}
	kp, err := pki.Issue(ca, pki.Request{CommonName: "etcd-member", DNSNames: resources.ServerHosts(c, "cluster.local"),
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: usage, Lifetime: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return userSecret(name, map[string][]byte{pki.CertKey: kp.CertPEM, pki.KeyKey: kp.KeyPEM, pki.CAKey: ca.CertPEM})
}

// TestClientTrust: whatever the sources of the peer and serving
// certificates, members accept client certificates only from the
// operator's CA and from the CAs of trustedCASecretRef; the client Secret
// carries the CA of the serving certificate, for clients to check members.
func TestClientTrust(t *testing.T) {
	t.Parallel()
	cas := newTrustCAs(t)
	issuer := &etcdv1.CertManagerSource{IssuerRef: etcdv1.IssuerRef{Name: "shared", Kind: "ClusterIssuer"}}
	trusted := &corev1.LocalObjectReference{Name: "client-cas"}
	tests := []struct {
		name string
		spec etcdv1.TLSSpec
		// clientTrust: the CAs in the serving Secret's ca.crt, which etcd
		// checks client certificates with; server: in the client Secret's
		// ca.crt; peer: in the peer Secret's ca.crt.
		clientTrust, server, peer []string
	}{
		{name: "operator", spec: etcdv1.TLSSpec{},
			clientTrust: []string{"operator"}, server: []string{"operator"}, peer: []string{"operator"}},
		{name: "operator, trusted CAs", spec: etcdv1.TLSSpec{Client: etcdv1.ClientTLS{TrustedCASecretRef: trusted}},
			clientTrust: []string{"clients CA", "clients CA 2", "operator"}, server: []string{"operator"}, peer: []string{"operator"}},
		{name: "peer secretRef", spec: etcdv1.TLSSpec{Peer: &etcdv1.TLSSource{SecretRef: &corev1.LocalObjectReference{Name: "my-peer"}}},
			clientTrust: []string{"operator"}, server: []string{"operator"}, peer: []string{"peer CA"}},
		{name: "client secretRef", spec: etcdv1.TLSSpec{Client: etcdv1.ClientTLS{SecretRef: &corev1.LocalObjectReference{Name: "my-server"}}},
			clientTrust: []string{"operator"}, server: []string{"serving CA"}, peer: []string{"operator"}},
		{name: "client secretRef, trusted CAs", spec: etcdv1.TLSSpec{Client: etcdv1.ClientTLS{SecretRef: &corev1.LocalObjectReference{Name: "my-server"}, TrustedCASecretRef: trusted}},
			clientTrust: []string{"clients CA", "clients CA 2", "operator"}, server: []string{"serving CA"}, peer: []string{"operator"}},
		{name: "peer and client secretRef of one CA", spec: etcdv1.TLSSpec{
			Peer:   &etcdv1.TLSSource{SecretRef: &corev1.LocalObjectReference{Name: "my-peer"}},
			Client: etcdv1.ClientTLS{SecretRef: &corev1.LocalObjectReference{Name: "my-server-of-peer-ca"}}},
			clientTrust: []string{"operator"}, server: []string{"peer CA"}, peer: []string{"peer CA"}},
		{name: "cert-manager", spec: etcdv1.TLSSpec{Peer: &etcdv1.TLSSource{CertManager: issuer}, Client: etcdv1.ClientTLS{CertManager: issuer}},
			clientTrust: []string{"operator"}, server: []string{"shared issuer"}, peer: []string{"shared issuer"}},
		{name: "cert-manager, trusted CAs", spec: etcdv1.TLSSpec{Peer: &etcdv1.TLSSource{CertManager: issuer}, Client: etcdv1.ClientTLS{CertManager: issuer, TrustedCASecretRef: trusted}},
			clientTrust: []string{"clients CA", "clients CA 2", "operator"}, server: []string{"shared issuer"}, peer: []string{"shared issuer"}},
		{name: "the issuer's CA named explicitly", spec: etcdv1.TLSSpec{Client: etcdv1.ClientTLS{CertManager: issuer, TrustedCASecretRef: &corev1.LocalObjectReference{Name: "issuer-ca"}}},
			clientTrust: []string{"operator", "shared issuer"}, server: []string{"shared issuer"}, peer: []string{"operator"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newTrustEnv(t, tt.spec,
				tlsSecret(t, "my-peer", cas.peer, pki.UsagePeer),
				tlsSecret(t, "my-server", cas.server, pki.UsageServer),
				tlsSecret(t, "my-server-of-peer-ca", cas.peer, pki.UsageServer),
				tlsSecret(t, resources.CertManagerName(trustCluster, "peer"), cas.issuer, pki.UsagePeer),
				tlsSecret(t, resources.CertManagerName(trustCluster, "client"), cas.issuer, pki.UsageServer),
				userSecret("client-cas", map[string][]byte{pki.CAKey: slices.Concat(cas.clients.CertPEM, cas.clients2.CertPEM)}),
				userSecret("issuer-ca", map[string][]byte{pki.CAKey: cas.issuer.CertPEM}))
			c := e.reconcile()
			if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionTLSReady); cond == nil || cond.Status != metav1.ConditionTrue {
				t.Fatalf("TLSReady = %+v", cond)
			}
			server := e.secret(resources.ServerTLSSecretName(trustCluster))
			if got := e.cas(server.Data[pki.CAKey]); !slices.Equal(got, tt.clientTrust) {
				t.Errorf("members trust client certificates of %v, want %v", got, tt.clientTrust)
			}
			if got := e.cas(e.secret(resources.ClientTLSSecretName(trustCluster)).Data[pki.CAKey]); !slices.Equal(got, tt.server) {
				t.Errorf("the client Secret's ca.crt holds %v, want the serving certificate's CA %v", got, tt.server)
			}
			if got := e.cas(e.secret(resources.PeerTLSSecretName(trustCluster)).Data[pki.CAKey]); !slices.Equal(got, tt.peer) {
				t.Errorf("the peer ca.crt holds %v, want %v", got, tt.peer)
			}

			// What etcd does with ca.crt: a client certificate with common
			// name root verifies only when its CA is in the bundle.
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(server.Data[pki.CAKey])
			op, err := pki.ParseKeyPair(e.secret(resources.CASecretName(trustCluster)).Data[pki.CertKey], e.secret(resources.CASecretName(trustCluster)).Data[pki.KeyKey])
			if err != nil {
				t.Fatal(err)
			}
			for name, ca := range map[string]*pki.KeyPair{"operator": op, "peer CA": cas.peer, "serving CA": cas.server,
				"shared issuer": cas.issuer, "clients CA": cas.clients, "clients CA 2": cas.clients2} {
				root, err := pki.Issue(ca, pki.Request{CommonName: "root", Usage: pki.UsageClient, Lifetime: time.Hour}, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				_, err = root.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
				if want := slices.Contains(tt.clientTrust, name); (err == nil) != want {
					t.Errorf("a root certificate of %s accepted: %v, want %v", name, err == nil, want)
				}
			}

			// A second pass changes nothing members load.
			if again := e.reconcile(); again.Status.TLS.TrustRevision != c.Status.TLS.TrustRevision {
				t.Errorf("trust revision %s then %s with nothing changed", c.Status.TLS.TrustRevision, again.Status.TLS.TrustRevision)
			}
		})
	}
}

// TestClientTrustRevision: naming, changing and dropping the trusted CAs
// changes the trust revision, so that the members restart to load them.
func TestClientTrustRevision(t *testing.T) {
	t.Parallel()
	cas := newTrustCAs(t)
	e := newTrustEnv(t, etcdv1.TLSSpec{}, userSecret("client-cas", map[string][]byte{pki.CAKey: cas.clients.CertPEM}))
	base := e.reconcile().Status.TLS.TrustRevision
	if base == "" {
		t.Fatal("no trust revision")
	}
	setSpec := func(ref *corev1.LocalObjectReference) {
		t.Helper()
		c := &etcdv1.EtcdCluster{}
		if err := e.c.Get(context.Background(), client.ObjectKey{Namespace: trustNS, Name: trustCluster}, c); err != nil {
			t.Fatal(err)
		}
		c.Spec.TLS.Client.TrustedCASecretRef = ref
		c.Generation++
		if err := e.c.Update(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	setCAs := func(pemBytes []byte) {
		t.Helper()
		s := e.secret("client-cas")
		s.Data[pki.CAKey] = pemBytes
		if err := e.c.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]string{base: "no trusted CAs"}
	step := func(what string, wantNew bool) string {
		t.Helper()
		rev := e.reconcile().Status.TLS.TrustRevision
		before, old := seen[rev]
		switch {
		case wantNew && old:
			t.Errorf("%s: trust revision %s, the same as with %s", what, rev, before)
		case !wantNew && !old:
			t.Errorf("%s: trust revision %s is new", what, rev)
		}
		if !old {
			seen[rev] = what
		}
		return rev
	}
	setSpec(&corev1.LocalObjectReference{Name: "client-cas"})
	one := step("one trusted CA", true)
	step("nothing changed", false)
	setCAs(slices.Concat(cas.clients.CertPEM, cas.clients2.CertPEM))
	step("a second trusted CA", true)
	setCAs(cas.clients2.CertPEM)
	step("the first trusted CA removed", true)
	setCAs(cas.clients.CertPEM)
	if rev := step("back to the first", false); rev != one {
		t.Errorf("back to the first trusted CA: revision %s, want %s", rev, one)
	}
	setSpec(nil)
	if rev := step("trustedCASecretRef removed", false); rev != base {
		t.Errorf("without trusted CAs: revision %s, want %s as at first", rev, base)
	}
}

// TestTrustedCASecretProblems: a missing or unusable trustedCASecretRef
// turns TLSReady False with a message naming it, and leaves the CAs members
// trust for clients as they were.
func TestTrustedCASecretProblems(t *testing.T) {
	t.Parallel()
	cas := newTrustCAs(t)
	leaf, err := pki.Issue(cas.clients, pki.Request{CommonName: "root", Usage: pki.UsageClient, Lifetime: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		secret *corev1.Secret // nil: absent
		reason string
		want   string
	}{
		{"missing", nil, etcdv1.ReasonSecretNotFound, "does not exist"},
		{"no ca.crt", userSecret("client-cas", map[string][]byte{"other": cas.clients.CertPEM}), etcdv1.ReasonSecretInvalid, "ca.crt is missing"},
		{"not PEM", userSecret("client-cas", map[string][]byte{pki.CAKey: []byte("not a certificate")}), etcdv1.ReasonSecretInvalid, "no PEM-encoded certificate"},
		{"a client certificate", userSecret("client-cas", map[string][]byte{pki.CAKey: leaf.CertPEM}), etcdv1.ReasonSecretInvalid, "not a CA certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newTrustEnv(t, etcdv1.TLSSpec{})
			good := e.reconcile()
			before := e.secret(resources.ServerTLSSecretName(trustCluster)).Data[pki.CAKey]
			if tt.secret != nil {
				if err := e.c.Create(context.Background(), tt.secret); err != nil {
					t.Fatal(err)
				}
			}
			good.Spec.TLS.Client.TrustedCASecretRef = &corev1.LocalObjectReference{Name: "client-cas"}
			good.Generation++
			if err := e.c.Update(context.Background(), good); err != nil {
				t.Fatal(err)
			}
			c := e.reconcile()
			cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1.ConditionTLSReady)
			if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != tt.reason ||
				!strings.Contains(cond.Message, tt.want) || !strings.Contains(cond.Message, "client-cas") || !strings.Contains(cond.Message, "trustedCASecretRef") {
				t.Errorf("TLSReady = %+v, want False %s naming the Secret, the field and %q", cond, tt.reason, tt.want)
			}
			if after := e.secret(resources.ServerTLSSecretName(trustCluster)).Data[pki.CAKey]; string(after) != string(before) {
				t.Errorf("the CAs members trust for clients changed while the Secret is unusable")
			}
			if c.Status.TLS.TrustRevision != good.Status.TLS.TrustRevision {
				t.Errorf("trust revision changed to %s while the Secret is unusable", c.Status.TLS.TrustRevision)
			}
			if res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(c)}); err != nil || res.RequeueAfter == 0 || res.RequeueAfter > e.r.Options.UserSecretInterval {
				t.Errorf("reconcile = %+v, %v; want the Secret read again within %v", res, err, e.r.Options.UserSecretInterval)
			}
		})
	}
}

// TestServingCAChangeNeedsNoRestart: members do not load the CA of their
// serving certificate, so a user's new serving certificate from another CA
// goes in once the client Secret carries that CA, without a restart.
func TestServingCAChangeNeedsNoRestart(t *testing.T) {
	t.Parallel()
	cas := newTrustCAs(t)
	e := newTrustEnv(t, etcdv1.TLSSpec{Client: etcdv1.ClientTLS{SecretRef: &corev1.LocalObjectReference{Name: "my-server"}}},
		tlsSecret(t, "my-server", cas.server, pki.UsageServer))
	rev := e.reconcile().Status.TLS.TrustRevision
	next := tlsSecret(t, "my-server", cas.issuer, pki.UsageServer)
	user := e.secret("my-server")
	user.Data = next.Data
	if err := e.c.Update(context.Background(), user); err != nil {
		t.Fatal(err)
	}
	var c *etcdv1.EtcdCluster
	for i := range 3 {
		c = e.reconcile()
		if string(e.secret(resources.ServerTLSSecretName(trustCluster)).Data[pki.CertKey]) == string(next.Data[pki.CertKey]) {
			break
		}
		if i == 2 {
			t.Fatalf("the new serving certificate is not in place after 3 passes; status.tls %+v", c.Status.TLS)
		}
	}
	if c.Status.TLS.TrustRevision != rev || c.Status.TLS.CARotation != "" {
		t.Errorf("status.tls %+v, want trust revision %s still and no rotation", c.Status.TLS, rev)
	}
	if got := e.cas(e.secret(resources.ClientTLSSecretName(trustCluster)).Data[pki.CAKey]); !slices.Equal(got, []string{"serving CA", "shared issuer"}) {
		t.Errorf("the client Secret's ca.crt holds %v, want the old and the new serving CA", got)
	}
	if got := e.cas(e.secret(resources.ServerTLSSecretName(trustCluster)).Data[pki.CAKey]); !slices.Equal(got, []string{"operator"}) {
		t.Errorf("members trust client certificates of %v", got)
	}
}
