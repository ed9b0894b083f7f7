package tls

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// What members trust, and when.
//
// Peers: the peer Secret's ca.crt, the CA of the peer certificate's source.
//
// Clients: the serving Secret's ca.crt, which etcd loads as its
// --trusted-ca-file. With authentication on, etcd takes a client
// certificate's common name as the user, so whoever can get a certificate
// from a CA in that file can connect as root. It holds only the operator's CA
// of the cluster (whose client certificate the operator presents) and the
// CAs the user names in spec.tls.client.trustedCASecretRef: never the CA of
// the peer certificate, of a cert-manager issuer (often shared by a whole
// Kubernetes cluster) or of the user's serving certificate. Those sign
// certificates for other purposes than etcd's clients.
//
// etcd loads both files only when it starts: the trust revision names their
// content, and the cluster controller restarts the members one at a time
// when it changes.

// setTrust computes the operator's CAs members trust: the signing one, the
// incoming one during a rotation, and the retired one until it expires.
func (s *scope) setTrust() error {
	pems := [][]byte{s.ca.CertPEM}
	if s.nextCA != nil {
		pems = append(pems, s.nextCA.CertPEM)
	}
	if prev, err := pki.ParseCertsPEM(s.previousCA); err == nil && prev[0].NotAfter.After(s.now) {
		pems = append(pems, s.previousCA)
	}
	trust, err := pki.Bundle(pems...)
	if err != nil {
		return fmt.Errorf("trust bundle: %w", err)
	}
	s.trust = trust
	return nil
}

// trustedClientCAs reads the CAs of spec.tls.client.trustedCASecretRef: nil
// when it is not set. ok is false when the Secret is missing or unusable,
// with the reason recorded: the CAs members trust for clients must then stay
// as they are, since leaving the user's out would lock their clients out at
// the next restart.
func (r *Reconciler) trustedClientCAs(ctx context.Context, s *scope) (cas []byte, ok bool, err error) {
	c := s.cluster
	ref := c.Spec.TLS.Client.TrustedCASecretRef
	if ref == nil {
		return nil, true, nil
	}
	s.pollUser = true
	sec := &corev1.Secret{}
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, sec)
	if apierrors.IsNotFound(err) {
		s.problem(etcdv1.ReasonSecretNotFound, "Secret %s named in spec.tls.client.trustedCASecretRef does not exist: create it with the CAs of your clients in ca.crt, or remove the field", ref.Name)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("get secret %s: %w", ref.Name, err)
	}
	cas, err = pki.ValidateCAData(sec.Data, s.now)
	if err != nil {
		s.problem(etcdv1.ReasonSecretInvalid, "Secret %s (spec.tls.client.trustedCASecretRef): %v", ref.Name, err)
		return nil, false, nil
	}
	return cas, true, nil
}

// membersTrust says whether every member runs with the trust revision rev:
// Ready for a spec that names it. An error reading them counts as no.
func (r *Reconciler) membersTrust(ctx context.Context, s *scope, rev string) bool {
	c := s.cluster
	if rev == "" {
		return false
	}
	list := &etcdv1.EtcdMemberList{}
	if err := r.List(ctx, list, kube.OfCluster(c.Namespace, c.Name)...); err != nil {
		return false
	}
	for _, m := range list.Items {
		if !metav1.IsControlledBy(&m, c) || !m.DeletionTimestamp.IsZero() {
			continue
		}
		if m.Spec.TLS == nil || m.Spec.TLS.TrustRevision != rev || !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
			return false
		}
	}
	return true
}

// staged decides what members get when a certificate from outside (a
// Secret of the user, or cert-manager) changes. It returns the certificate
// to mount and the CAs of its source: the new certificate's and those of
// the one in place, each until it expires, so that whoever checks it keeps
// accepting both.
//
// A peer certificate of a CA members do not trust yet must wait: members
// load the CAs they trust only when they start, so first its CA joins the
// peer ca.crt next to the current certificate, the members restart one at a
// time with both (the trust revision changed), and only then the new
// certificate goes in.
//
// Members do not check their own serving certificate; clients do, with the
// ca.crt of the client Secret. A new serving certificate waits only until
// that Secret carries its CA, which this pass writes.
func (r *Reconciler) staged(ctx context.Context, s *scope, usage pki.Usage, kp *pki.KeyPair, ca []byte) (*pki.KeyPair, []byte, bool, error) {
	c := s.cluster
	mounted := mountedName(c, usage)
	have, err := r.ownSecret(ctx, s, mounted)
	if err != nil || have == nil {
		return kp, ca, err == nil, err
	}
	source := have.Data[pki.CAKey]
	if sc, ok := have.Data[sourceCAKey]; ok {
		source = sc
	}
	trust, err := pki.Bundle(unexpired(s.now, source, ca)...)
	if err != nil {
		return nil, nil, false, fmt.Errorf("trust bundle of %s: %w", mounted, err)
	}
	if bytes.Equal(have.Data[pki.CertKey], kp.CertPEM) {
		return kp, trust, true, nil
	}
	var ready bool
	var waits string
	if usage == pki.UsageServer {
		name := resources.ClientTLSSecretName(c.Name)
		cs, err := r.ownSecret(ctx, s, name)
		if err != nil {
			return nil, nil, false, err
		}
		ready = cs == nil || verifies(kp, cs.Data[pki.CAKey])
		waits = fmt.Sprintf("the new certificate for %s waits until the client Secret %s carries its CA", mounted, name)
	} else {
		ready = verifies(kp, have.Data[pki.CAKey]) && r.membersTrust(ctx, s, r.mountedTrust(ctx, s))
		waits = fmt.Sprintf("the new certificate for %s waits until every member has restarted trusting its CA", mounted)
	}
	if ready {
		return kp, trust, true, nil
	}
	current, err := pki.ParseKeyPair(have.Data[pki.CertKey], have.Data[pki.KeyKey])
	if err != nil {
		return kp, trust, true, nil
	}
	s.pendingSource = waits
	return current, trust, true, nil
}

// mountedTrust is the trust revision of the CAs in the Secrets members
// mount now, read from them rather than from a status that may lag.
func (r *Reconciler) mountedTrust(ctx context.Context, s *scope) string {
	c := s.cluster
	peer, err := r.ownSecret(ctx, s, resources.PeerTLSSecretName(c.Name))
	if err != nil || peer == nil {
		return ""
	}
	server, err := r.ownSecret(ctx, s, resources.ServerTLSSecretName(c.Name))
	if err != nil || server == nil {
		return ""
	}
	rev, err := pki.TrustRevision(peer.Data[pki.CAKey], server.Data[pki.CAKey])
	if err != nil {
		return ""
	}
	return rev
}

// verifies says whether a certificate chains to one of the CAs in caPEM.
func verifies(kp *pki.KeyPair, caPEM []byte) bool {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return false
	}
	inter := x509.NewCertPool()
	if certs, err := pki.ParseCertsPEM(kp.CertPEM); err == nil {
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
	}
	_, err := kp.Cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	return err == nil
}

// unexpired keeps the certificates of the PEM inputs that are still valid.
func unexpired(now time.Time, pems ...[]byte) [][]byte {
	var out [][]byte
	for _, p := range pems {
		certs, err := pki.ParseCertsPEM(p)
		if err != nil {
			continue
		}
		for _, c := range certs {
			if c.NotAfter.After(now) {
				out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}))
			}
		}
	}
	return out
}
