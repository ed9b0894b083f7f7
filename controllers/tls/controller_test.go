package tls_test

import (
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

func TestEnvTLSController(t *testing.T) {
	c, factory, reads := startSuite(t)
	e := func(t *testing.T) *env {
		return &env{t: t, c: c, factory: factory, reads: reads, ns: testenv.NewNamespace(t, c, "tls-", nil)}
	}
	t.Run("OperatorCertificates", func(t *testing.T) { t.Parallel(); testOperatorCertificates(t, e(t)) })
	t.Run("Disabled", func(t *testing.T) { t.Parallel(); testDisabled(t, e(t)) })
	t.Run("UserSecret", func(t *testing.T) { t.Parallel(); testUserSecret(t, e(t)) })
	t.Run("CertManagerMissing", func(t *testing.T) { t.Parallel(); testCertManagerMissing(t, e(t)) })
	t.Run("Auth", func(t *testing.T) { t.Parallel(); testAuth(t, e(t)) })
	t.Run("CARotation", func(t *testing.T) { t.Parallel(); testCARotation(t, e(t)) })
	t.Run("UserCAChange", func(t *testing.T) { t.Parallel(); testUserCAChange(t, e(t)) })
	t.Run("LostCA", func(t *testing.T) { t.Parallel(); testLostCA(t, e(t)) })
	t.Run("TrustedClientCAs", func(t *testing.T) { t.Parallel(); testTrustedClientCAs(t, e(t)) })
	t.Run("IdlePassesReadNoSecret", func(t *testing.T) { t.Parallel(); testIdlePasses(t, e(t)) })
}

type env struct {
	t       *testing.T
	c       client.Client
	factory *etcd.FakeFactory
	reads   *testenv.Reads
	ns      string
}

const clusterName = "demo"

func (e *env) create(mutate func(*etcdv1.EtcdClusterSpec)) *etcdv1.EtcdCluster {
	e.t.Helper()
	cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: e.ns}, Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}}
	if mutate != nil {
		mutate(&cl.Spec)
	}
	if err := e.c.Create(e.t.Context(), cl); err != nil {
		e.t.Fatalf("create EtcdCluster: %v", err)
	}
	return cl
}

func (e *env) cluster() *etcdv1.EtcdCluster {
	e.t.Helper()
	cl := &etcdv1.EtcdCluster{}
	if err := e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: clusterName}, cl); err != nil {
		e.t.Fatal(err)
	}
	return cl
}

func (e *env) secret(name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	return s, e.c.Get(e.t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, s)
}

// waitCondition waits for a condition of the current generation.
func (e *env) waitCondition(typ string, status metav1.ConditionStatus, reason string) *etcdv1.EtcdCluster {
	e.t.Helper()
	var cl *etcdv1.EtcdCluster
	eventually(e.t, fmt.Sprintf("%s %s %s", typ, status, reason), func() error {
		cl = e.cluster()
		cond := meta.FindStatusCondition(cl.Status.Conditions, typ)
		if cond == nil || cond.Status != status || cond.Reason != reason || cond.ObservedGeneration != cl.Generation {
			return fmt.Errorf("%s = %+v", typ, cond)
		}
		return nil
	})
	return cl
}

// testOperatorCertificates: with the default spec the controller makes a CA
// and the peer, serving and client certificates, names them in status.tls
// and sets TLSReady; the certificates carry what members and clients need.
func testOperatorCertificates(t *testing.T, e *env) {
	e.create(nil)
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	st := cl.Status.TLS
	if st == nil || st.PeerSecretName != resources.PeerTLSSecretName(clusterName) || st.ServerSecretName != resources.ServerTLSSecretName(clusterName) ||
		st.ClientSecretName != resources.ClientTLSSecretName(clusterName) || st.CASecretName != resources.CASecretName(clusterName) || st.NotAfter == nil || st.RenewAt == nil {
		t.Fatalf("status.tls = %+v", st)
	}
	caSecret, err := e.secret(st.CASecretName)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.ParseKeyPair(caSecret.Data[pki.CertKey], caSecret.Data[pki.KeyKey])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	member := resources.MemberHost(clusterName, clusterName+"-x1y2z", e.ns, "cluster.local")
	cases := []struct {
		secret string
		usage  x509.ExtKeyUsage
		hosts  []string
		cn     string
	}{
		{st.PeerSecretName, x509.ExtKeyUsageServerAuth, []string{member, fmt.Sprintf("%s-x.%s-peer.%s.svc", clusterName, clusterName, e.ns)}, ""},
		{st.PeerSecretName, x509.ExtKeyUsageClientAuth, nil, ""},
		{st.ServerSecretName, x509.ExtKeyUsageServerAuth, []string{member, clusterName, clusterName + "." + e.ns, clusterName + "." + e.ns + ".svc",
			clusterName + "." + e.ns + ".svc.cluster.local", "localhost", "127.0.0.1", "::1"}, ""},
		{st.ClientSecretName, x509.ExtKeyUsageClientAuth, nil, "root"},
	}
	for _, tc := range cases {
		sec, err := e.secret(tc.secret)
		if err != nil {
			t.Fatal(err)
		}
		if !metav1.IsControlledBy(sec, cl) || sec.Labels[etcdv1.ManagedByLabel] != "raftsman" {
			t.Errorf("%s: owners %v labels %v, want owned by the cluster and labelled", tc.secret, sec.OwnerReferences, sec.Labels)
		}
		kp, err := pki.ParseKeyPair(sec.Data[pki.CertKey], sec.Data[pki.KeyKey])
		if err != nil {
			t.Fatalf("%s: %v", tc.secret, err)
		}
		if _, err := kp.Cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{tc.usage}}); err != nil {
			t.Errorf("%s: does not verify against the CA for %v: %v", tc.secret, tc.usage, err)
		}
		for _, h := range tc.hosts {
			if err := kp.Cert.VerifyHostname(h); err != nil {
				t.Errorf("%s: %v", tc.secret, err)
			}
		}
		if tc.cn != "" && kp.Cert.Subject.CommonName != tc.cn {
			t.Errorf("%s: common name %q, want %q", tc.secret, kp.Cert.Subject.CommonName, tc.cn)
		}
		if got := kp.Cert.NotAfter.Sub(kp.Cert.NotBefore); got < 2159*time.Hour || got > 2161*time.Hour {
			t.Errorf("%s: lifetime %v, want about the default 2160h", tc.secret, got)
		}
		if !strings.Contains(string(sec.Data[pki.CAKey]), "BEGIN CERTIFICATE") {
			t.Errorf("%s: no ca.crt", tc.secret)
		}
	}
	if want := pki.RenewAt(mustLeaf(t, e, st.ClientSecretName), 0); !st.RenewAt.Time.Equal(want.UTC().Truncate(time.Second)) {
		t.Errorf("status.tls.renewAt = %v, want two thirds into the lifetime, %v", st.RenewAt, want)
	}

	// A shorter lifetime in the spec: the certificates are issued again.
	old := mustLeaf(t, e, st.PeerSecretName)
	cl = e.cluster()
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Spec.TLS.CertificateLifetime = &metav1.Duration{Duration: time.Hour}
	if err := e.c.Patch(t.Context(), cl, patch); err != nil {
		t.Fatal(err)
	}
	eventually(t, "peer certificate reissued with the new lifetime", func() error {
		kp := mustLeaf(t, e, st.PeerSecretName)
		if kp.SerialNumber.Cmp(old.SerialNumber) == 0 || kp.NotAfter.Sub(kp.NotBefore) > 2*time.Hour {
			return fmt.Errorf("lifetime %v", kp.NotAfter.Sub(kp.NotBefore))
		}
		return nil
	})
	if caNow := mustLeaf(t, e, st.CASecretName); caNow.SerialNumber.Cmp(ca.Cert.SerialNumber) != 0 {
		t.Errorf("the CA changed with the lifetime of its certificates")
	}
}

func mustLeaf(t *testing.T, e *env, secret string) *x509.Certificate {
	t.Helper()
	sec, err := e.secret(secret)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := pki.ParseCertsPEM(sec.Data[pki.CertKey])
	if err != nil {
		t.Fatal(err)
	}
	return certs[0]
}

// testDisabled: no Secret, TLSReady True with its own reason.
func testDisabled(t *testing.T, e *env) {
	e.create(func(sp *etcdv1.EtcdClusterSpec) { sp.TLS.Disabled = true })
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonTLSDisabled)
	if cl.Status.TLS != nil {
		t.Errorf("status.tls = %+v with TLS disabled", cl.Status.TLS)
	}
	list := &corev1.SecretList{}
	if err := e.c.List(t.Context(), list, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d Secrets made for a cluster without TLS", len(list.Items))
	}
}

// testUserSecret: a user's Secret is checked; each defect gives a False
// TLSReady naming it, and a good Secret is copied for the members.
func testUserSecret(t *testing.T, e *env) {
	e.create(func(sp *etcdv1.EtcdClusterSpec) {
		sp.TLS.Client.SecretRef = &corev1.LocalObjectReference{Name: "my-server"}
	})
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionFalse, etcdv1.ReasonSecretNotFound)
	if msg := meta.FindStatusCondition(cl.Status.Conditions, etcdv1.ConditionTLSReady).Message; !strings.Contains(msg, "my-server") {
		t.Errorf("message %q does not name the Secret", msg)
	}

	userCA, err := pki.NewCA("my CA", 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	good, err := pki.Issue(userCA, pki.Request{CommonName: "etcd", Usage: pki.UsageServer, Lifetime: time.Hour,
		DNSNames: []string{"*." + clusterName + "-peer." + e.ns + ".svc", "*." + clusterName + "-peer." + e.ns + ".svc.cluster.local", clusterName + "." + e.ns + ".svc"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.Issue(userCA, pki.Request{CommonName: "other", Usage: pki.UsageServer, Lifetime: time.Hour, DNSNames: []string{"elsewhere"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-server", Namespace: e.ns}}
	steps := []struct {
		name string
		data map[string][]byte
		want string // in the message; empty: ready
	}{
		{"missing ca.crt", map[string][]byte{pki.CertKey: good.CertPEM, pki.KeyKey: good.KeyPEM}, "ca.crt"},
		{"wrong key", map[string][]byte{pki.CertKey: good.CertPEM, pki.KeyKey: other.KeyPEM, pki.CAKey: userCA.CertPEM}, "tls.key"},
		{"names not covered", map[string][]byte{pki.CertKey: other.CertPEM, pki.KeyKey: other.KeyPEM, pki.CAKey: userCA.CertPEM}, "does not cover"},
		{"good", map[string][]byte{pki.CertKey: good.CertPEM, pki.KeyKey: good.KeyPEM, pki.CAKey: userCA.CertPEM}, ""},
	}
	for i, step := range steps {
		sec.Data = step.data
		var err error
		if i == 0 {
			err = e.c.Create(t.Context(), sec)
		} else {
			err = e.c.Update(t.Context(), sec)
		}
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if step.want == "" {
			break
		}
		cl = e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionFalse, etcdv1.ReasonSecretInvalid)
		eventually(t, step.name+" named", func() error {
			msg := meta.FindStatusCondition(e.cluster().Status.Conditions, etcdv1.ConditionTLSReady).Message
			if !strings.Contains(msg, step.want) || !strings.Contains(msg, "my-server") || strings.Contains(msg, "BEGIN") {
				return fmt.Errorf("message %q, want it to name %q and the Secret, and hold no PEM", msg, step.want)
			}
			return nil
		})
	}
	cl = e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	server, err := e.secret(cl.Status.TLS.ServerSecretName)
	if err != nil {
		t.Fatal(err)
	}
	if string(server.Data[pki.CertKey]) != string(good.CertPEM) {
		t.Errorf("the serving certificate is not the user's")
	}
	// The members trust client certificates of the operator's CA alone, not
	// of the CA that signs their serving certificate.
	trust, err := pki.ParseCertsPEM(server.Data[pki.CAKey])
	if err != nil || len(trust) != 1 || !trust[0].Equal(mustLeaf(t, e, cl.Status.TLS.CASecretName)) {
		t.Fatalf("server ca.crt holds %d certificates (%v), want the operator's CA alone", len(trust), err)
	}
	clientSecret, err := e.secret(cl.Status.TLS.ClientSecretName)
	if err != nil {
		t.Fatal(err)
	}
	if cas, err := pki.ParseCertsPEM(clientSecret.Data[pki.CAKey]); err != nil || len(cas) != 1 || !cas[0].Equal(userCA.Cert) {
		t.Errorf("the client Secret's ca.crt is not the CA that signs the serving certificate (%d certificates, %v)", len(cas), err)
	}
	if got, want := cl.Status.TLS.NotAfter.Time, good.Cert.NotAfter.UTC().Truncate(time.Second); !got.Equal(want) {
		t.Errorf("status.tls.notAfter = %v, want the user certificate's %v", got, want)
	}
}

// testCertManagerMissing: without cert-manager's kinds the source says so.
func testCertManagerMissing(t *testing.T, e *env) {
	e.create(func(sp *etcdv1.EtcdClusterSpec) {
		sp.TLS.Peer = &etcdv1.TLSSource{CertManager: &etcdv1.CertManagerSource{IssuerRef: etcdv1.IssuerRef{Name: "ca"}}}
	})
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionFalse, etcdv1.ReasonCertManagerNotInstalled)
	if msg := meta.FindStatusCondition(cl.Status.Conditions, etcdv1.ConditionTLSReady).Message; !strings.Contains(msg, "cert-manager") {
		t.Errorf("message %q", msg)
	}
}

// testAuth: authentication waits for Available, is enabled once with the
// generated password, follows a password change, and is turned off again.
func testAuth(t *testing.T, e *env) {
	e.create(func(sp *etcdv1.EtcdClusterSpec) { sp.Auth.Enabled = true })
	cl := e.waitCondition(etcdv1.ConditionAuthReady, metav1.ConditionFalse, etcdv1.ReasonWaitingForAvailable)
	fake := e.factory.Cluster("auth/" + e.ns + "/" + clusterName)
	if _, on := fake.RootPassword(); on {
		t.Fatalf("auth enabled before the cluster is Available")
	}
	rootSecret, err := e.secret(resources.RootCredentialsSecretName(clusterName))
	if err != nil {
		t.Fatal(err)
	}
	if pw := rootSecret.Data["password"]; len(pw) < 32 {
		t.Fatalf("generated password of %d bytes", len(pw))
	}

	// Play the cluster controller.
	setAvailable := func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cl := e.cluster()
			meta.SetStatusCondition(&cl.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonQuorumHealthy, ObservedGeneration: cl.Generation})
			return e.c.Status().Update(t.Context(), cl)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setAvailable()
	cl = e.waitCondition(etcdv1.ConditionAuthReady, metav1.ConditionTrue, etcdv1.ReasonAuthEnabled)
	if pw, on := fake.RootPassword(); !on || pw != string(rootSecret.Data["password"]) {
		t.Fatalf("etcd auth on %v with the Secret's password %v", on, pw == string(rootSecret.Data["password"]))
	}
	if cl.Status.Auth == nil || cl.Status.Auth.RootSecretName != rootSecret.Name || cl.Status.Auth.AppliedSecretVersion != rootSecret.ResourceVersion {
		t.Fatalf("status.auth = %+v", cl.Status.Auth)
	}
	if creds := fake.LastCredentials(); !creds.TLS() || len(creds.CertPEM) == 0 {
		t.Errorf("the operator reached etcd without its client certificate")
	}
	if n := fake.Calls("EnableAuth"); n != 1 {
		t.Errorf("EnableAuth called %d times, want once", n)
	}

	rootSecret.Data["password"] = []byte("a-new-password")
	if err := e.c.Update(t.Context(), rootSecret); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new password in etcd", func() error {
		if pw, _ := fake.RootPassword(); pw != "a-new-password" {
			return fmt.Errorf("etcd has another password")
		}
		return nil
	})
	if n := fake.Calls("EnableAuth"); n != 1 {
		t.Errorf("EnableAuth called %d times after a password change, want once", n)
	}

	cl = e.cluster()
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Spec.Auth.Enabled = false
	if err := e.c.Patch(t.Context(), cl, patch); err != nil {
		t.Fatal(err)
	}
	setAvailable()
	e.waitCondition(etcdv1.ConditionAuthReady, metav1.ConditionTrue, etcdv1.ReasonAuthDisabled)
	if _, on := fake.RootPassword(); on {
		t.Errorf("etcd auth still on")
	}
}

// testCARotation: the rotate-ca annotation adds a new CA to what members
// trust without letting it sign; once every member runs with the new trust
// (the test plays the cluster and member controllers), the new CA signs, the
// certificates are issued again from it, and the set of trusted CAs stays the
// same so that members do not restart twice.
func testCARotation(t *testing.T, e *env) {
	e.create(nil)
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	oldCA := mustLeaf(t, e, cl.Status.TLS.CASecretName)
	oldRev := cl.Status.TLS.TrustRevision
	if oldRev == "" {
		t.Fatalf("no trust revision in %+v", cl.Status.TLS)
	}
	m, setReady := e.member(cl, oldRev)

	cl = e.cluster()
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Annotations = map[string]string{etcdv1.RotateCAAnnotation: "1"}
	if err := e.c.Patch(t.Context(), cl, patch); err != nil {
		t.Fatal(err)
	}
	var newRev string
	eventually(t, "the new CA trusted", func() error {
		st := e.cluster().Status.TLS
		if st.CARotation == "" || st.TrustRevision == oldRev || st.CARotationRequest != "1" {
			return fmt.Errorf("status.tls %+v", st)
		}
		newRev = st.TrustRevision
		return nil
	})
	caSecret, err := e.secret(cl.Status.TLS.CASecretName)
	if err != nil {
		t.Fatal(err)
	}
	next, err := pki.ParseCertsPEM(caSecret.Data["next.crt"])
	if err != nil {
		t.Fatalf("no incoming CA in the CA Secret: %v", err)
	}
	peer, err := e.secret(cl.Status.TLS.PeerSecretName)
	if err != nil {
		t.Fatal(err)
	}
	trusted, err := pki.ParseCertsPEM(peer.Data[pki.CAKey])
	if err != nil || len(trusted) != 2 {
		t.Fatalf("peer ca.crt holds %d CAs (%v), want the old and the new", len(trusted), err)
	}
	if leaf := mustLeaf(t, e, cl.Status.TLS.PeerSecretName); leaf.CheckSignatureFrom(oldCA) != nil {
		t.Errorf("the peer certificate is no longer from the old CA while a member still trusts only it")
	}
	testenv.Consistently(t, 2*time.Second, "the old CA still signs", func() error {
		if ca := mustLeaf(t, e, cl.Status.TLS.CASecretName); ca.SerialNumber.Cmp(oldCA.SerialNumber) != 0 {
			return fmt.Errorf("the new CA signs before the member restarted")
		}
		return nil
	})

	// The member restarts with the new trust.
	e.restart(m, newRev)
	setReady()
	eventually(t, "the new CA signing", func() error {
		st := e.cluster().Status.TLS
		ca := mustLeaf(t, e, st.CASecretName)
		leaf := mustLeaf(t, e, st.PeerSecretName)
		if st.CARotation != "" || ca.SerialNumber.Cmp(next[0].SerialNumber) != 0 || leaf.CheckSignatureFrom(ca) != nil {
			return fmt.Errorf("status.tls %+v, peer certificate from the new CA: %v", st, leaf.CheckSignatureFrom(ca) == nil)
		}
		if st.TrustRevision != newRev {
			return fmt.Errorf("trust revision %s after the switch, want still %s (same CAs)", st.TrustRevision, newRev)
		}
		return nil
	})
	caSecret, err = e.secret(cl.Status.TLS.CASecretName)
	if err != nil {
		t.Fatal(err)
	}
	if prev, err := pki.ParseCertsPEM(caSecret.Data["previous.crt"]); err != nil || prev[0].SerialNumber.Cmp(oldCA.SerialNumber) != 0 {
		t.Errorf("the old CA is not kept as previous.crt: %v", err)
	}
}

// member plays the cluster and member controllers: a Ready member of the
// cluster running with the trust revision rev. setReady marks it Ready
// again for its current generation.
func (e *env) member(cl *etcdv1.EtcdCluster, rev string) (m *etcdv1.EtcdMember, setReady func()) {
	t := e.t
	t.Helper()
	m = &etcdv1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: clusterName + "-a1b2c", Namespace: e.ns, Labels: resources.ClusterLabels(clusterName),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: etcdv1.GroupVersion.String(), Kind: "EtcdCluster", Name: cl.Name, UID: cl.UID, Controller: ptr.To(true)}}},
		Spec: etcdv1.EtcdMemberSpec{ClusterName: clusterName, Version: "3.6.16", Image: "etcd", InitialClusterState: etcdv1.InitialClusterStateNew,
			InitialCluster: "x", ClusterToken: "t", PeerURL: "https://x:2380", ClientURL: "https://x:2379",
			TLS: &etcdv1.MemberTLS{PeerSecretName: cl.Status.TLS.PeerSecretName, ServerSecretName: cl.Status.TLS.ServerSecretName, ClientCertAuth: true, TrustRevision: rev}},
	}
	if err := e.c.Create(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	setReady = func() {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := e.c.Get(t.Context(), client.ObjectKeyFromObject(m), m); err != nil {
				return err
			}
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: etcdv1.ConditionReady, Status: metav1.ConditionTrue, Reason: etcdv1.ReasonPodReady, ObservedGeneration: m.Generation})
			return e.c.Status().Update(t.Context(), m)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	setReady()
	return m, setReady
}

// restart moves a member to another trust revision, as the cluster
// controller does before the member controller restarts its Pod.
func (e *env) restart(m *etcdv1.EtcdMember, rev string) {
	e.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(e.t.Context(), client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
		m.Spec.TLS.TrustRevision = rev
		return e.c.Update(e.t.Context(), m)
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// testUserCAChange: a user's peer certificate from a new CA reaches the
// members only after they restarted trusting that CA; until then they keep
// the current certificate and the peer ca.crt holds both CAs. A serving
// certificate from a new CA needs no restart: members do not check it, and
// it goes in once the client Secret carries its CA.
func testUserCAChange(t *testing.T, e *env) {
	issue := func(ca *pki.KeyPair, usage pki.Usage) *pki.KeyPair {
		kp, err := pki.Issue(ca, pki.Request{CommonName: "etcd", Usage: usage, Lifetime: time.Hour,
			DNSNames: []string{"*." + clusterName + "-peer." + e.ns + ".svc", "*." + clusterName + "-peer." + e.ns + ".svc.cluster.local", clusterName + "." + e.ns + ".svc"}}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	oldCA, err := pki.NewCA("old", 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	newCA, err := pki.NewCA("new", 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	oldLeaf, newLeaf := issue(oldCA, pki.UsagePeer), issue(newCA, pki.UsagePeer)
	oldServing, newServing := issue(oldCA, pki.UsageServer), issue(newCA, pki.UsageServer)
	user := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: e.ns},
		Data: map[string][]byte{pki.CertKey: oldLeaf.CertPEM, pki.KeyKey: oldLeaf.KeyPEM, pki.CAKey: oldCA.CertPEM}}
	serving := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "mine-serving", Namespace: e.ns},
		Data: map[string][]byte{pki.CertKey: oldServing.CertPEM, pki.KeyKey: oldServing.KeyPEM, pki.CAKey: oldCA.CertPEM}}
	for _, s := range []*corev1.Secret{user, serving} {
		if err := e.c.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	}
	e.create(func(sp *etcdv1.EtcdClusterSpec) {
		sp.TLS.Peer = &etcdv1.TLSSource{SecretRef: &corev1.LocalObjectReference{Name: "mine"}}
		sp.TLS.Client.SecretRef = &corev1.LocalObjectReference{Name: "mine-serving"}
	})
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	oldRev := cl.Status.TLS.TrustRevision
	m, setReady := e.member(cl, oldRev)

	serving.Data = map[string][]byte{pki.CertKey: newServing.CertPEM, pki.KeyKey: newServing.KeyPEM, pki.CAKey: newCA.CertPEM}
	if err := e.c.Update(t.Context(), serving); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new serving certificate in place without a restart", func() error {
		st := e.cluster().Status.TLS
		server, err := e.secret(st.ServerSecretName)
		if err != nil {
			return err
		}
		clientSecret, err := e.secret(st.ClientSecretName)
		if err != nil {
			return err
		}
		cas, err := pki.ParseCertsPEM(clientSecret.Data[pki.CAKey])
		if err != nil {
			return err
		}
		if string(server.Data[pki.CertKey]) != string(newServing.CertPEM) || len(cas) != 2 {
			return fmt.Errorf("new serving certificate in place: %v; %d CAs in the client Secret, want old and new", string(server.Data[pki.CertKey]) == string(newServing.CertPEM), len(cas))
		}
		if st.TrustRevision != oldRev {
			return fmt.Errorf("trust revision %s, want still %s: members do not load their serving CA", st.TrustRevision, oldRev)
		}
		return nil
	})

	user.Data = map[string][]byte{pki.CertKey: newLeaf.CertPEM, pki.KeyKey: newLeaf.KeyPEM, pki.CAKey: newCA.CertPEM}
	if err := e.c.Update(t.Context(), user); err != nil {
		t.Fatal(err)
	}
	var newRev string
	eventually(t, "both CAs trusted, the old certificate kept", func() error {
		st := e.cluster().Status.TLS
		peer, err := e.secret(st.PeerSecretName)
		if err != nil {
			return err
		}
		cas, err := pki.ParseCertsPEM(peer.Data[pki.CAKey])
		if err != nil {
			return err
		}
		if st.TrustRevision == oldRev || st.CARotation == "" || string(peer.Data[pki.CertKey]) != string(oldLeaf.CertPEM) || len(cas) != 2 {
			return fmt.Errorf("status.tls %+v, %d CAs in the peer ca.crt (want old and new)", st, len(cas))
		}
		newRev = st.TrustRevision
		return nil
	})
	e.restart(m, newRev)
	setReady()
	eventually(t, "the new certificate in place", func() error {
		st := e.cluster().Status.TLS
		peer, err := e.secret(st.PeerSecretName)
		if err != nil {
			return err
		}
		if string(peer.Data[pki.CertKey]) != string(newLeaf.CertPEM) || st.CARotation != "" {
			return fmt.Errorf("status.tls %+v; new certificate in place: %v", st, string(peer.Data[pki.CertKey]) == string(newLeaf.CertPEM))
		}
		if st.TrustRevision != newRev {
			return fmt.Errorf("trust revision %s, want still %s: the old CA stays trusted until it expires", st.TrustRevision, newRev)
		}
		return nil
	})
}

// testTrustedClientCAs: spec.tls.client.trustedCASecretRef is checked like
// the user's other Secrets (absent, then malformed: TLSReady False naming
// it) and, once good, its CAs join the operator's in what members trust for
// clients, under a new trust revision.
func testTrustedClientCAs(t *testing.T, e *env) {
	e.create(nil)
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	baseRev := cl.Status.TLS.TrustRevision
	patch := client.MergeFrom(cl.DeepCopy())
	cl.Spec.TLS.Client.TrustedCASecretRef = &corev1.LocalObjectReference{Name: "client-cas"}
	if err := e.c.Patch(t.Context(), cl, patch); err != nil {
		t.Fatal(err)
	}
	named := func(what string) {
		t.Helper()
		eventually(t, what+" named", func() error {
			msg := meta.FindStatusCondition(e.cluster().Status.Conditions, etcdv1.ConditionTLSReady).Message
			if !strings.Contains(msg, what) || !strings.Contains(msg, "client-cas") || !strings.Contains(msg, "trustedCASecretRef") {
				return fmt.Errorf("message %q, want it to name %q, the Secret and the field", msg, what)
			}
			return nil
		})
	}
	e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionFalse, etcdv1.ReasonSecretNotFound)
	named("does not exist")

	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "client-cas", Namespace: e.ns}, Data: map[string][]byte{pki.CAKey: []byte("not PEM")}}
	if err := e.c.Create(t.Context(), sec); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionFalse, etcdv1.ReasonSecretInvalid)
	named("ca.crt holds no PEM-encoded certificate")
	if st := e.cluster().Status.TLS; st.TrustRevision != baseRev {
		t.Errorf("trust revision %s while the Secret is unusable, want still %s", st.TrustRevision, baseRev)
	}

	clientsCA, err := pki.NewCA("my clients", 24*time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sec.Data = map[string][]byte{pki.CAKey: clientsCA.CertPEM}
	if err := e.c.Update(t.Context(), sec); err != nil {
		t.Fatal(err)
	}
	cl = e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	eventually(t, "the clients' CA trusted", func() error {
		st := e.cluster().Status.TLS
		server, err := e.secret(st.ServerSecretName)
		if err != nil {
			return err
		}
		cas, err := pki.ParseCertsPEM(server.Data[pki.CAKey])
		if err != nil {
			return err
		}
		var names []string
		for _, c := range cas {
			names = append(names, c.Subject.CommonName)
		}
		if len(cas) != 2 || !cas[0].Equal(mustLeaf(t, e, st.CASecretName)) || !cas[1].Equal(clientsCA.Cert) {
			return fmt.Errorf("server ca.crt holds %v, want the operator's CA and my clients", names)
		}
		if st.TrustRevision == baseRev {
			return fmt.Errorf("trust revision unchanged: members would not restart to load the new CA")
		}
		return nil
	})
	clientSecret, err := e.secret(cl.Status.TLS.ClientSecretName)
	if err != nil {
		t.Fatal(err)
	}
	if cas, err := pki.ParseCertsPEM(clientSecret.Data[pki.CAKey]); err != nil || len(cas) != 1 || !cas[0].Equal(mustLeaf(t, e, cl.Status.TLS.CASecretName)) {
		t.Errorf("the client Secret's ca.crt is not the operator's CA alone, which signs the serving certificate")
	}
}

// testLostCA: a CA Secret deleted after the cluster had certificates is
// not replaced by a new CA behind the members' back.
func testLostCA(t *testing.T, e *env) {
	e.create(nil)
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	peer := mustLeaf(t, e, cl.Status.TLS.PeerSecretName)
	ca, err := e.secret(cl.Status.TLS.CASecretName)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(t.Context(), ca); err != nil {
		t.Fatal(err)
	}
	cl = e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionFalse, etcdv1.ReasonSecretNotFound)
	if msg := meta.FindStatusCondition(cl.Status.Conditions, etcdv1.ConditionTLSReady).Message; !strings.Contains(msg, cl.Status.TLS.CASecretName) {
		t.Errorf("message %q does not name the CA Secret", msg)
	}
	testenv.Consistently(t, 2*time.Second, "no new CA and the certificates kept", func() error {
		if _, err := e.secret(cl.Status.TLS.CASecretName); err == nil {
			return fmt.Errorf("a new CA Secret was made")
		}
		if now := mustLeaf(t, e, cl.Status.TLS.PeerSecretName); now.SerialNumber.Cmp(peer.SerialNumber) != 0 {
			return fmt.Errorf("the peer certificate was issued again")
		}
		return nil
	})
}

// testIdlePasses: the cache holds Secrets' metadata only, and once a
// cluster's certificates are in place, a pass that finds nothing changed
// (here a member's annotation, as any write to a member brings a pass)
// reads no Secret from the API server. A Secret someone else changes is
// read again at once, and repaired.
func testIdlePasses(t *testing.T, e *env) {
	e.create(nil)
	cl := e.waitCondition(etcdv1.ConditionTLSReady, metav1.ConditionTrue, etcdv1.ReasonCertificatesReady)
	m, _ := e.member(cl, cl.Status.TLS.TrustRevision)
	secretReads := func() int { return e.reads.Count(&corev1.Secret{}, e.ns) }
	passes := func() int { return e.reads.Count(&etcdv1.EtcdCluster{}, e.ns) }
	touches := 0
	// touch changes the member and waits for the pass it brings to start.
	// Passes over one cluster never overlap: once the pass of a touch has
	// started, the reads of the pass of the touch before are all counted.
	touch := func() {
		t.Helper()
		touches++
		before := passes()
		patch := client.MergeFrom(m.DeepCopy())
		m.Annotations = map[string]string{"test/touch": fmt.Sprint(touches)}
		if err := e.c.Patch(t.Context(), m, patch); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a pass after the member changed", func() error {
			if passes() == before {
				return fmt.Errorf("no pass yet")
			}
			return nil
		})
	}
	// The passes that follow the certificates' writes read them.
	eventually(t, "a pass that reads no Secret", func() error {
		n := secretReads()
		touch()
		touch()
		if got := secretReads() - n; got > 0 {
			return fmt.Errorf("the passes read %d Secrets", got)
		}
		return nil
	})
	n := secretReads()
	for range 3 {
		touch()
	}
	touch()
	if got := secretReads() - n; got != 0 {
		t.Errorf("3 passes over an unchanged cluster read %d Secrets from the API server, want 0", got)
	}

	// Someone else changes the client Secret: the pass it brings reads it.
	name := cl.Status.TLS.ClientSecretName
	sec, err := e.secret(name)
	if err != nil {
		t.Fatal(err)
	}
	want := sec.Data[pki.CAKey]
	sec.Data[pki.CAKey] = []byte("not a CA")
	if err := e.c.Update(t.Context(), sec); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the client Secret repaired", func() error {
		sec, err := e.secret(name)
		if err != nil {
			return err
		}
		if string(sec.Data[pki.CAKey]) != string(want) {
			return fmt.Errorf("ca.crt = %q", sec.Data[pki.CAKey])
		}
		return nil
	})
	if secretReads() == n {
		t.Errorf("the client Secret was repaired without reading it from the API server")
	}
}
