package tls

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// rootCommonName is the common name of the operator's client certificate:
// with authentication on, etcd takes it as the user name.
const rootCommonName = "root"

// certificateGVK is cert-manager's Certificate kind.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

func lifetime(c *etcdv1.EtcdCluster) time.Duration {
	if l := c.Spec.TLS.CertificateLifetime; l != nil && l.Duration > 0 {
		return l.Duration
	}
	return 90 * 24 * time.Hour
}

func renewBefore(c *etcdv1.EtcdCluster) time.Duration {
	if rb := c.Spec.TLS.RenewBefore; rb != nil {
		return rb.Duration
	}
	return 0
}

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

// ensureCA makes the cluster's CA once and reads it afterwards; it starts a
// CA rotation when the CA is two thirds through its life or the rotate-ca
// annotation has a new value. The CA always exists with TLS on: it signs
// the operator's client certificate whatever the source of the others.
//
// A rotation never breaks a connection: etcd loads the CAs it trusts only at
// start, so the new CA is first added to what members trust, the members
// restart one at a time (the cluster controller does that when
// status.tls.trustRevision changes), and only once all of them run with
// both CAs does the new one start signing (promoteCA).
func (r *Reconciler) ensureCA(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if c.Spec.TLS.Disabled {
		return ctrl.Result{}, nil
	}
	if c.Status.TLS != nil {
		s.rotationRequest = c.Status.TLS.CARotationRequest
	}
	name := resources.CASecretName(c.Name)
	have, err := r.ownSecret(ctx, c, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if have == nil && c.Status.TLS != nil && c.Status.TLS.CASecretName != "" && r.goneForSure(ctx, c.Namespace, name) {
		// Members run with certificates of the lost CA: certificates of a
		// new one would be refused by every member until it restarts, and
		// restarted members would refuse the others. Nothing is issued; the
		// certificates in place keep working until they expire.
		s.problem(etcdv1.ReasonSecretNotFound, "The CA Secret %s is gone while members use certificates it signed; restore it from a backup (nothing is issued until then; the certificates in place expire at %s)",
			name, c.Status.TLS.NotAfter)
		return ctrl.Result{}, nil
	}
	if have == nil && c.Status.TLS != nil && c.Status.TLS.CASecretName != "" {
		return ctrl.Result{}, fmt.Errorf("the CA Secret %s is not in the cache yet", name)
	}
	if have == nil {
		ca, err := r.newCA(s)
		if err != nil {
			return ctrl.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("Creating the cluster's CA", "secret", name)
		if err := r.writeSecret(ctx, c, name, corev1.SecretTypeOpaque, map[string][]byte{pki.CertKey: ca.CertPEM, pki.KeyKey: ca.KeyPEM}, nil); err != nil {
			return ctrl.Result{}, err
		}
		s.ca = ca
		return ctrl.Result{}, s.setTrust()
	}
	ca, err := pki.ParseKeyPair(have.Data[pki.CertKey], have.Data[pki.KeyKey])
	if err != nil {
		s.problem(etcdv1.ReasonSecretInvalid, "The CA Secret %s does not hold a usable certificate and key; restore it from a backup", name)
		return ctrl.Result{}, nil
	}
	s.ca, s.previousCA = ca, have.Data[previousCertKey]
	if len(have.Data[nextCertKey]) > 0 {
		if s.nextCA, err = pki.ParseKeyPair(have.Data[nextCertKey], have.Data[nextKeyKey]); err != nil {
			s.problem(etcdv1.ReasonSecretInvalid, "The incoming CA (next.crt, next.key) in Secret %s is unusable; remove both keys to start the rotation again", name)
			return ctrl.Result{}, nil
		}
	}
	req := c.Annotations[etcdv1.RotateCAAnnotation]
	if s.nextCA != nil && req != "" {
		// A request that came while a rotation runs is served by it, even
		// if the status write of the pass that started it was lost.
		s.rotationRequest = req
	}
	if s.nextCA == nil && (pki.NeedsRenewal(ca.Cert, 0, s.now) || req != "" && req != s.rotationRequest) {
		next, err := r.newCA(s)
		if err != nil {
			return ctrl.Result{}, err
		}
		ctrl.LoggerFrom(ctx).Info("Starting a CA rotation: the new CA is trusted first, and signs once every member restarted", "secret", name, "caNotAfter", ca.Cert.NotAfter)
		data := map[string][]byte{pki.CertKey: ca.CertPEM, pki.KeyKey: ca.KeyPEM, nextCertKey: next.CertPEM, nextKeyKey: next.KeyPEM}
		if err := r.writeSecret(ctx, c, name, corev1.SecretTypeOpaque, data, nil); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "CARotationStarted", "RotateCA",
			"A new CA is trusted next to the old one; members restart one at a time before it signs")
		s.nextCA, s.previousCA, s.rotationRequest = next, nil, req
	}
	return ctrl.Result{}, s.setTrust()
}

func (r *Reconciler) newCA(s *scope) (*pki.KeyPair, error) {
	ca, err := pki.NewCA(fmt.Sprintf("%s.%s etcd CA %s", s.cluster.Name, s.cluster.Namespace, s.now.UTC().Format("2006-01-02T15:04:05Z")), r.Options.CALifetime, s.now)
	if err != nil {
		return nil, fmt.Errorf("make the CA: %w", err)
	}
	return ca, nil
}

// promoteCA ends a CA rotation once every member runs with the bundle that
// trusts both CAs: the new CA signs from now on, and the certificates are
// issued again from it on the next pass.
func (r *Reconciler) promoteCA(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if s.nextCA == nil || s.tlsReason != "" || s.trustRev == "" {
		return ctrl.Result{}, nil
	}
	if !r.membersTrust(ctx, s, s.trustRev) {
		// A member's change wakes this controller.
		return ctrl.Result{}, nil
	}
	name := resources.CASecretName(c.Name)
	ctrl.LoggerFrom(ctx).Info("Every member trusts the new CA: it signs from now on", "secret", name)
	data := map[string][]byte{pki.CertKey: s.nextCA.CertPEM, pki.KeyKey: s.nextCA.KeyPEM, previousCertKey: s.ca.CertPEM}
	if err := r.writeSecret(ctx, c, name, corev1.SecretTypeOpaque, data, nil); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "CARotated", "RotateCA",
		"The new CA signs the cluster's certificates; the old one stays trusted until it expires")
	// Issue the certificates from the new CA at once.
	return ctrl.Result{RequeueAfter: soon}, nil
}

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
	return ctrl.Result{}, r.writeSecret(ctx, c, resources.PeerTLSSecretName(c.Name), corev1.SecretTypeTLS,
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
	return ctrl.Result{}, r.writeSecret(ctx, c, resources.ServerTLSSecretName(c.Name), corev1.SecretTypeTLS,
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
	have, err := r.ownSecret(ctx, c, name)
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
	return ctrl.Result{}, r.writeSecret(ctx, c, name, corev1.SecretTypeTLS,
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
		name := resources.CertManagerName(c.Name, field)
		if ok, err := r.ensureCertificate(ctx, s, name, src.CertManager.IssuerRef, hosts, ips); err != nil || !ok {
			return nil, nil, false, err
		}
		sec, err := r.ownSecret(ctx, c, name)
		if err != nil {
			return nil, nil, false, err
		}
		if sec == nil {
			s.problem(etcdv1.ReasonCertificatePending, "Waiting for cert-manager to issue Certificate %s", name)
			return nil, nil, false, nil
		}
		kp, ca, ok, err := s.checked(sec, "cert-manager Certificate "+name, usage, sample)
		if err != nil || !ok {
			return kp, ca, ok, err
		}
		return r.staged(ctx, s, usage, kp, ca)
	}
	name := mountedName(c, usage)
	have, err := r.ownSecret(ctx, c, name)
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

// goneForSure asks the API server, not the cache, whether a Secret is gone.
func (r *Reconciler) goneForSure(ctx context.Context, namespace, name string) bool {
	return apierrors.IsNotFound(r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{}))
}

// ownSecret reads a Secret of the cluster from the cache: nil when absent.
// A Secret of an earlier cluster of the same name, which the garbage
// collector has not deleted yet, is an error: using it would tie this
// cluster to certificates about to vanish.
func (r *Reconciler) ownSecret(ctx context.Context, c *etcdv1.EtcdCluster, name string) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, sec); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	if owner := metav1.GetControllerOf(sec); owner != nil && owner.Kind == "EtcdCluster" && owner.UID != c.UID {
		return nil, fmt.Errorf("secret %s belongs to an earlier EtcdCluster %s; waiting for the garbage collector to delete it", name, owner.Name)
	}
	return sec, nil
}

// writeSecret creates a Secret owned by the cluster, or updates its data
// when it differs; an unchanged Secret costs no write.
func (r *Reconciler) writeSecret(ctx context.Context, c *etcdv1.EtcdCluster, name string, typ corev1.SecretType, data map[string][]byte, extra map[string]string) error {
	have, err := r.ownSecret(ctx, c, name)
	if err != nil {
		return err
	}
	if have == nil {
		sec := &corev1.Secret{Type: typ, Data: data}
		sec.Name, sec.Namespace = name, c.Namespace
		sec.Labels = resources.ObjectLabels(c)
		maps.Copy(sec.Labels, extra)
		if err := controllerutil.SetControllerReference(c, sec, r.Scheme()); err != nil {
			return fmt.Errorf("own secret %s: %w", name, err)
		}
		if err := r.Create(ctx, sec); err != nil {
			// AlreadyExists too: the cache has not seen the Secret yet, and
			// what it holds is not what this pass meant to write.
			return fmt.Errorf("create secret %s: %w", name, err)
		}
		return nil
	}
	if equalData(have.Data, data) {
		return nil
	}
	have.Data = data
	if err := r.Update(ctx, have); err != nil {
		return fmt.Errorf("update secret %s: %w", name, err)
	}
	return nil
}

func equalData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// ensureCertificate creates the cert-manager Certificate of one purpose.
// It reads past the cache: the operator starts and runs without
// cert-manager, whose kinds may not exist.
func (r *Reconciler) ensureCertificate(ctx context.Context, s *scope, name string, issuer etcdv1.IssuerRef, hosts []string, ips []net.IP) (bool, error) {
	c := s.cluster
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(certificateGVK)
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, have)
	switch {
	case meta.IsNoMatchError(err):
		s.problem(etcdv1.ReasonCertManagerNotInstalled, "spec.tls uses certManager but cert-manager's Certificate kind (cert-manager.io/v1) is not installed: install cert-manager or choose another source")
		return false, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("get certificate %s: %w", name, err)
	}
	usages := []any{"digital signature", "key encipherment", "server auth", "client auth"}
	ipStrings := make([]any, 0, len(ips))
	for _, ip := range ips {
		ipStrings = append(ipStrings, ip.String())
	}
	dns := make([]any, 0, len(hosts))
	for _, h := range hosts {
		dns = append(dns, h)
	}
	labels := map[string]any{}
	for k, v := range resources.ObjectLabels(c) {
		labels[k] = v
	}
	issuerKind := issuer.Kind
	if issuerKind == "" {
		issuerKind = "Issuer"
	}
	issuerGroup := issuer.Group
	if issuerGroup == "" {
		issuerGroup = "cert-manager.io"
	}
	spec := map[string]any{
		"secretName":     name,
		"secretTemplate": map[string]any{"labels": labels},
		"commonName":     "etcd-member",
		"dnsNames":       dns,
		"usages":         usages,
		"duration":       lifetime(c).String(),
		"privateKey":     map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"},
		"issuerRef":      map[string]any{"name": issuer.Name, "kind": issuerKind, "group": issuerGroup},
	}
	if len(ipStrings) > 0 {
		spec["ipAddresses"] = ipStrings
	}
	if rb := renewBefore(c); rb > 0 {
		spec["renewBefore"] = rb.String()
	}
	if err == nil {
		// Keep what the spec decides (lifetimes, names, issuer) and leave
		// the rest of the Certificate to cert-manager.
		haveSpec, _, _ := unstructured.NestedMap(have.Object, "spec")
		if haveSpec == nil {
			haveSpec = map[string]any{}
		}
		changed := false
		for k, v := range spec {
			if !equality.Semantic.DeepEqual(haveSpec[k], v) {
				haveSpec[k], changed = v, true
			}
		}
		if _, ok := spec["renewBefore"]; !ok && haveSpec["renewBefore"] != nil {
			delete(haveSpec, "renewBefore")
			changed = true
		}
		if !changed {
			return true, nil
		}
		if err := unstructured.SetNestedMap(have.Object, haveSpec, "spec"); err != nil {
			return false, fmt.Errorf("certificate %s: %w", name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Updating a cert-manager Certificate", "certificate", name)
		if err := r.Update(ctx, have); err != nil {
			return false, fmt.Errorf("update certificate %s: %w", name, err)
		}
		return true, nil
	}
	want := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	want.SetGroupVersionKind(certificateGVK)
	want.SetName(name)
	want.SetNamespace(c.Namespace)
	want.SetLabels(resources.ObjectLabels(c))
	if err := controllerutil.SetControllerReference(c, want, r.Scheme()); err != nil {
		return false, fmt.Errorf("own certificate %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Creating a cert-manager Certificate", "certificate", name, "issuer", issuer.Name)
	if err := r.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
		if meta.IsNoMatchError(err) {
			s.problem(etcdv1.ReasonCertManagerNotInstalled, "spec.tls uses certManager but cert-manager's Certificate kind (cert-manager.io/v1) is not installed: install cert-manager or choose another source")
			return false, nil
		}
		return false, fmt.Errorf("create certificate %s: %w", name, err)
	}
	return true, nil
}
