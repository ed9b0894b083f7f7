package tls

import (
	"context"
	"fmt"
	"net"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// certificateGVK is cert-manager's Certificate kind.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

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
	spec := certificateSpec(c, name, issuer, hosts, ips)
	if err == nil {
		if err := r.updateCertificate(ctx, have, spec); err != nil {
			return false, err
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

// certificateSpec is the spec of the cert-manager Certificate of the
// Secret name: what the cluster's spec decides (names, lifetime, renewal,
// issuer).
func certificateSpec(c *etcdv1.EtcdCluster, name string, issuer etcdv1.IssuerRef, hosts []string, ips []net.IP) map[string]any {
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
	return spec
}

// updateCertificate keeps what the spec decides (lifetimes, names, issuer)
// in an existing Certificate and leaves the rest to cert-manager.
func (r *Reconciler) updateCertificate(ctx context.Context, have *unstructured.Unstructured, spec map[string]any) error {
	name := have.GetName()
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
		return nil
	}
	if err := unstructured.SetNestedMap(have.Object, haveSpec, "spec"); err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Updating a cert-manager Certificate", "certificate", name)
	if err := r.Update(ctx, have); err != nil {
		return fmt.Errorf("update certificate %s: %w", name, err)
	}
	return nil
}

// fromCertManager is the certificate of a cert-manager Certificate the
// operator keeps for the cluster (ensureCertificate), once cert-manager
// issued it into its Secret.
func (r *Reconciler) fromCertManager(ctx context.Context, s *scope, field string, issuer etcdv1.IssuerRef, usage pki.Usage, hosts []string, ips []net.IP, sample []string) (*pki.KeyPair, []byte, bool, error) {
	s.external = true
	name := resources.CertManagerName(s.cluster.Name, field)
	if ok, err := r.ensureCertificate(ctx, s, name, issuer, hosts, ips); err != nil || !ok {
		return nil, nil, false, err
	}
	sec, err := r.ownSecret(ctx, s, name)
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
