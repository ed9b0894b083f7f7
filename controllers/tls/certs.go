package tls

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// rootCommonName is the common name of the operator's client certificate:
// with authentication on, etcd takes it as the user name.
const rootCommonName = "root"

func lifetime(c *etcdv1.EtcdCluster) time.Duration { return c.Spec.TLS.Lifetime() }

func renewBefore(c *etcdv1.EtcdCluster) time.Duration { return c.Spec.TLS.RenewBeforeExpiry() }

// Keys of the CA Secret besides tls.crt and tls.key (the CA that signs):
// during a rotation the incoming CA, trusted but not signing yet, and after
// it the retired CA, still trusted until it expires.
const (
	// sourceCAKey, in the serving Secret, holds the CAs of the serving
	// certificate; ca.crt there holds the CAs of accepted clients instead.
	sourceCAKey     = "source-ca.crt"
	nextCertKey     = "next.crt"
	nextKeyKey      = "next.key"
	previousCertKey = "previous.crt"
)

// ensurePeer writes the members' peer certificate.
func (r *Reconciler) ensurePeer(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if c.Spec.TLS.Disabled || s.ca == nil {
		return ctrl.Result{}, nil
	}
	src := etcdv1.TLSSource{}
	if c.Spec.TLS.Peer != nil {
		src = *c.Spec.TLS.Peer
	}
	kp, ca, ok, err := r.obtain(ctx, s, "peer", src, pki.UsagePeer, resources.PeerHosts(c, r.Options.ClusterDomain), nil)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	s.peerCA = ca
	return ctrl.Result{}, r.writeSecret(ctx, s, resources.PeerTLSSecretName(c.Name), corev1.SecretTypeTLS,
		map[string][]byte{pki.CertKey: kp.CertPEM, pki.KeyKey: kp.KeyPEM, pki.CAKey: ca}, nil)
}

// ensureServer writes the members' serving certificate, with the CAs whose
// client certificates etcd accepts (ca.crt, see trust.go) and the CAs of the
// serving certificate itself (source-ca.crt), which go to the client Secret.
func (r *Reconciler) ensureServer(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if c.Spec.TLS.Disabled || s.ca == nil {
		return ctrl.Result{}, nil
	}
	trusted, ok, err := r.trustedClientCAs(ctx, s)
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	kp, ca, ok, err := r.obtain(ctx, s, "client", c.Spec.TLS.Client.Source(), pki.UsageServer,
		resources.ServerHosts(c, r.Options.ClusterDomain), []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	if err != nil || !ok {
		return ctrl.Result{}, err
	}
	s.serverCA = ca
	clientTrust, err := pki.Bundle(s.trust, trusted)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("client trust bundle: %w", err)
	}
	if s.trustRev, err = pki.TrustRevision(s.peerCA, clientTrust); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.writeSecret(ctx, s, resources.ServerTLSSecretName(c.Name), corev1.SecretTypeTLS,
		map[string][]byte{pki.CertKey: kp.CertPEM, pki.KeyKey: kp.KeyPEM, pki.CAKey: clientTrust, sourceCAKey: ca}, nil)
}

// ensureClient writes the operator's client certificate (common name root),
// with the CA of the serving certificate so that it can check the members.
func (r *Reconciler) ensureClient(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if c.Spec.TLS.Disabled || s.ca == nil || s.serverCA == nil {
		return ctrl.Result{}, nil
	}
	name := resources.ClientTLSSecretName(c.Name)
	have, err := r.ownSecret(ctx, s, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	req := pki.Request{CommonName: rootCommonName, Usage: pki.UsageClient, Lifetime: lifetime(c)}
	kp := r.reuse(s, have, req)
	if kp == nil {
		if kp, err = r.issue(ctx, s, name, req); err != nil {
			return ctrl.Result{}, err
		}
	}
	s.client = kp
	s.expires(kp, true, renewBefore(c))
	return ctrl.Result{}, r.writeSecret(ctx, s, name, corev1.SecretTypeTLS,
		map[string][]byte{pki.CertKey: kp.CertPEM, pki.KeyKey: kp.KeyPEM, pki.CAKey: s.serverCA}, nil)
}

// obtain gets one certificate from its source: it issues (or keeps) one from
// the operator's CA, or reads and checks the user's or cert-manager's. It
// returns the pair and the PEM of the CA that signs it; ok is false when the
// source is not ready, with the reason recorded.
func (r *Reconciler) obtain(ctx context.Context, s *scope, field string, src etcdv1.TLSSource, usage pki.Usage, hosts []string, ips []net.IP) (*pki.KeyPair, []byte, bool, error) {
	c := s.cluster
	// Names a member really has (and, for serving, the client Service's), to
	// check a certificate that is not ours.
	sample := []string{resources.MemberHost(c.Name, c.Name+"-a1b2c", c.Namespace, r.Options.ClusterDomain)}
	if usage == pki.UsageServer {
		sample = append(sample, resources.ClientServiceName(c.Name)+"."+c.Namespace+".svc")
	}
	switch {
	case src.SecretRef != nil:
		s.pollUser = true
		sec := &corev1.Secret{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: src.SecretRef.Name}, sec)
		if apierrors.IsNotFound(err) {
			s.problem(etcdv1.ReasonSecretNotFound, "Secret %s named in spec.tls.%s.secretRef does not exist", src.SecretRef.Name, field)
			return nil, nil, false, nil
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("get secret %s: %w", src.SecretRef.Name, err)
		}
		kp, ca, ok, err := s.checked(sec, "spec.tls."+field+".secretRef", usage, sample)
		if err != nil || !ok {
			return kp, ca, ok, err
		}
		return r.staged(ctx, s, usage, kp, ca)
	case src.CertManager != nil:
		return r.fromCertManager(ctx, s, field, src.CertManager.IssuerRef, usage, hosts, ips, sample)
	}
	name := mountedName(c, usage)
	have, err := r.ownSecret(ctx, s, name)
	if err != nil {
		return nil, nil, false, err
	}
	// Not the cluster's name: with authentication on, etcd takes the common
	// name of a client certificate as a user name, and a cluster named root
	// would make every member root.
	req := pki.Request{CommonName: "etcd-" + usage.String(), DNSNames: hosts, IPs: ips, Usage: usage, Lifetime: lifetime(c)}
	kp := r.reuse(s, have, req)
	if kp == nil {
		if kp, err = r.issue(ctx, s, name, req); err != nil {
			return nil, nil, false, err
		}
	}
	s.expires(kp, true, renewBefore(c))
	return kp, s.trust, true, nil
}

// mountedName is the Secret members mount for a usage.
func mountedName(c *etcdv1.EtcdCluster, usage pki.Usage) string {
	if usage == pki.UsageServer {
		return resources.ServerTLSSecretName(c.Name)
	}
	return resources.PeerTLSSecretName(c.Name)
}

// checked validates a Secret that someone else wrote.
func (s *scope) checked(sec *corev1.Secret, what string, usage pki.Usage, hosts []string) (*pki.KeyPair, []byte, bool, error) {
	kp, err := pki.ValidateTLSData(sec.Data, usage, hosts, s.now)
	if err != nil {
		s.problem(etcdv1.ReasonSecretInvalid, "Secret %s (%s): %v", sec.Name, what, err)
		return nil, nil, false, nil
	}
	s.expires(kp, false, 0)
	return kp, sec.Data[pki.CAKey], true, nil
}

// reuse returns the certificate in an existing Secret of the operator when
// it still fits: signed by the current CA, same names and usage, not due
// for renewal, and no longer-lived than the spec now asks.
func (r *Reconciler) reuse(s *scope, have *corev1.Secret, req pki.Request) *pki.KeyPair {
	if have == nil {
		return nil
	}
	kp, err := pki.ParseKeyPair(have.Data[pki.CertKey], have.Data[pki.KeyKey])
	if err != nil {
		return nil
	}
	cert := kp.Cert
	if cert.CheckSignatureFrom(s.ca.Cert) != nil || cert.Subject.CommonName != req.CommonName ||
		!sameStrings(cert.DNSNames, req.DNSNames) || len(cert.IPAddresses) != len(req.IPs) ||
		pki.NeedsRenewal(cert, renewBefore(s.cluster), s.now) ||
		cert.NotAfter.Sub(cert.NotBefore) > req.Lifetime+10*time.Minute {
		return nil
	}
	wantUsage := map[pki.Usage][]x509.ExtKeyUsage{
		pki.UsageServer: {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		pki.UsagePeer:   {x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		pki.UsageClient: {x509.ExtKeyUsageClientAuth},
	}[req.Usage]
	if len(cert.ExtKeyUsage) != len(wantUsage) {
		return nil
	}
	return kp
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]bool{}
	for _, x := range a {
		seen[x] = true
	}
	for _, x := range b {
		if !seen[x] {
			return false
		}
	}
	return true
}

// issue signs a new certificate from the cluster's CA.
func (r *Reconciler) issue(ctx context.Context, s *scope, secret string, req pki.Request) (*pki.KeyPair, error) {
	kp, err := pki.Issue(s.ca, req, s.now)
	if err != nil {
		return nil, fmt.Errorf("issue the certificate of %s: %w", secret, err)
	}
	ctrl.LoggerFrom(ctx).Info("Issuing a certificate", "secret", secret, "notAfter", kp.Cert.NotAfter)
	s.issued = append(s.issued, secret)
	return kp, nil
}
