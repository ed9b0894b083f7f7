package user

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// PasswordKey is the key of the user's password in its Secret.
const PasswordKey = "password"

// ensureSecret keeps the user's Secret: a client certificate of the
// cluster's CA with the user's name as common name (kept until due for
// renewal or signed by a CA that no longer signs), the CA of the members'
// serving certificate, and the password when the spec asks for one
// (generated once).
func (r *Reconciler) ensureSecret(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.reason != "" {
		return ctrl.Result{}, nil
	}
	u, cl := s.user, s.cluster
	name := resources.UserSecretName(cl.Name, u.Name)
	have, err := r.ownSecret(ctx, s, name)
	if err != nil || s.reason != "" {
		return ctrl.Result{}, err
	}
	req := pki.Request{CommonName: u.Name, Usage: pki.UsageClient, Lifetime: cl.Spec.TLS.Lifetime()}
	s.cert = reuse(s, have, req)
	if s.cert == nil {
		if s.cert, err = pki.Issue(s.ca, req, s.now); err != nil {
			return ctrl.Result{}, fmt.Errorf("issue the certificate of user %s: %w", u.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Issuing the user's certificate", "secret", name, "notAfter", s.cert.Cert.NotAfter)
		s.issued = true
	}
	data := map[string][]byte{pki.CertKey: s.cert.CertPEM, pki.KeyKey: s.cert.KeyPEM, pki.CAKey: s.serverCA}
	if u.Spec.Password {
		pw := []byte(nil)
		if have != nil {
			pw = have.Data[PasswordKey]
		}
		if len(pw) == 0 {
			if pw, err = newPassword(); err != nil {
				return ctrl.Result{}, err
			}
		}
		data[PasswordKey] = pw
	}
	if s.secret, err = r.writeSecret(ctx, s, name, have, data); err != nil {
		return ctrl.Result{}, err
	}
	if s.issued {
		r.Recorder.Eventf(u, nil, corev1.EventTypeNormal, "CertificateIssued", "Issue",
			"Issued the user's certificate in Secret %s; it expires at %s", name, s.cert.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ctrl.Result{}, nil
}

// ownSecret reads the user's Secret: nil when the cache has none of that
// name. Its metadata comes from the cache, its data from the API server
// (see secretOf). A Secret of that name that is not this EtcdUser's is a
// conflict: the operator leaves it as it is, and does not read its data.
func (r *Reconciler) ownSecret(ctx context.Context, s *scope, name string) (*corev1.Secret, error) {
	key := client.ObjectKey{Namespace: s.user.Namespace, Name: name}
	m, err := kube.SecretMeta(ctx, r.Client, key)
	if err != nil || m == nil {
		return nil, err
	}
	if !s.owns(m, name) {
		return nil, nil
	}
	sec := &corev1.Secret{}
	switch err := r.APIReader.Get(ctx, key, sec); {
	case apierrors.IsNotFound(err):
		// Deleted since the cache saw it; the deletion brings a pass.
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	if !s.owns(sec, name) {
		return nil, nil
	}
	return sec, nil
}

// owns says whether the Secret is this EtcdUser's, and records the
// conflict when it is not.
func (s *scope) owns(obj metav1.Object, name string) bool {
	if owner := metav1.GetControllerOf(obj); owner == nil || owner.UID != s.user.UID {
		s.wait(etcdv1.ReasonNameConflict, "Secret %s exists and is not this EtcdUser's: delete it, or rename the EtcdUser", name)
		return false
	}
	return true
}

// writeSecret creates the user's Secret, owned by the EtcdUser, or updates
// its data when it differs; an unchanged Secret costs no write.
func (r *Reconciler) writeSecret(ctx context.Context, s *scope, name string, have *corev1.Secret, data map[string][]byte) (*corev1.Secret, error) {
	if have == nil {
		sec := &corev1.Secret{Type: corev1.SecretTypeTLS, Data: data}
		sec.Name, sec.Namespace, sec.Labels = name, s.user.Namespace, resources.ObjectLabels(s.cluster)
		if err := controllerutil.SetControllerReference(s.user, sec, r.Scheme()); err != nil {
			return nil, fmt.Errorf("own secret %s: %w", name, err)
		}
		if err := r.Create(ctx, sec); err != nil {
			return nil, fmt.Errorf("create secret %s: %w", name, err)
		}
		return sec, nil
	}
	if maps.EqualFunc(have.Data, data, bytes.Equal) {
		return have, nil
	}
	have = have.DeepCopy()
	have.Data = data
	if err := r.Update(ctx, have); err != nil {
		return nil, fmt.Errorf("update secret %s: %w", name, err)
	}
	return have, nil
}

// reuse returns the certificate in the Secret when it still fits: signed
// by the CA that signs now, for this user, for client use only, not due
// for renewal, and no longer-lived than the cluster now asks.
func reuse(s *scope, have *corev1.Secret, req pki.Request) *pki.KeyPair {
	if have == nil {
		return nil
	}
	kp, err := pki.ParseKeyPair(have.Data[pki.CertKey], have.Data[pki.KeyKey])
	if err != nil {
		return nil
	}
	c := kp.Cert
	if c.CheckSignatureFrom(s.ca.Cert) != nil || c.Subject.CommonName != req.CommonName ||
		!slices.Equal(c.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) ||
		pki.NeedsRenewal(c, s.cluster.Spec.TLS.RenewBeforeExpiry(), s.now) ||
		c.NotAfter.Sub(c.NotBefore) > req.Lifetime+10*time.Minute {
		return nil
	}
	return kp
}

// newPassword is 32 random bytes, URL-safe base64.
func newPassword() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate a password: %w", err)
	}
	return []byte(base64.RawURLEncoding.EncodeToString(b)), nil
}
