package tls

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
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
	have, err := r.ownSecret(ctx, s, name)
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
		if err := r.writeSecret(ctx, s, name, corev1.SecretTypeOpaque, map[string][]byte{pki.CertKey: ca.CertPEM, pki.KeyKey: ca.KeyPEM}, nil); err != nil {
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
	if err := r.startRotation(ctx, s, name); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, s.setTrust()
}

// startRotation starts a CA rotation when the CA is due for renewal or the
// rotate-ca annotation asks for one that has not run: the new CA is
// trusted next to the old one first, and signs once every member restarted
// (promoteCA).
func (r *Reconciler) startRotation(ctx context.Context, s *scope, name string) error {
	c, ca := s.cluster, s.ca
	req := c.Annotations[etcdv1.RotateCAAnnotation]
	if s.nextCA != nil && req != "" {
		// A request that came while a rotation runs is served by it, even
		// if the status write of the pass that started it was lost.
		s.rotationRequest = req
	}
	if s.nextCA != nil || !pki.NeedsRenewal(ca.Cert, 0, s.now) && (req == "" || req == s.rotationRequest) {
		return nil
	}
	next, err := r.newCA(s)
	if err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Starting a CA rotation: the new CA is trusted first, and signs once every member restarted", "secret", name, "caNotAfter", ca.Cert.NotAfter)
	data := map[string][]byte{pki.CertKey: ca.CertPEM, pki.KeyKey: ca.KeyPEM, nextCertKey: next.CertPEM, nextKeyKey: next.KeyPEM}
	if err := r.writeSecret(ctx, s, name, corev1.SecretTypeOpaque, data, nil); err != nil {
		return err
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "CARotationStarted", "RotateCA",
		"A new CA is trusted next to the old one; members restart one at a time before it signs")
	s.nextCA, s.previousCA, s.rotationRequest = next, nil, req
	return nil
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
	if err := r.writeSecret(ctx, s, name, corev1.SecretTypeOpaque, data, nil); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "CARotated", "RotateCA",
		"The new CA signs the cluster's certificates; the old one stays trusted until it expires")
	// Issue the certificates from the new CA at once.
	return ctrl.Result{RequeueAfter: soon}, nil
}
