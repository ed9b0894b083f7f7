package tls

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// PasswordKey is the key of the root password in the credentials Secret.
const PasswordKey = "password"

// authClientKey is this controller's etcd client of a cluster, apart from
// the cluster controller's.
func authClientKey(key types.NamespacedName) string { return "auth/" + key.String() }

// ensureRootSecret finds the root password: in the user's Secret, or in one
// the operator generates once.
func (r *Reconciler) ensureRootSecret(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if !c.Spec.Auth.Enabled {
		return ctrl.Result{}, nil
	}
	if ref := c.Spec.Auth.RootCredentialsSecretRef; ref != nil {
		sec := &corev1.Secret{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ref.Name}, sec)
		switch {
		case apierrors.IsNotFound(err):
			s.authReason, s.authMsg = etcdv1.ReasonCredentialsInvalid, fmt.Sprintf("Secret %s named in spec.auth.rootCredentialsSecretRef does not exist", ref.Name)
			return ctrl.Result{}, nil
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("get secret %s: %w", ref.Name, err)
		}
		s.pollUser = true
		if len(sec.Data[PasswordKey]) == 0 {
			s.authReason, s.authMsg = etcdv1.ReasonCredentialsInvalid, fmt.Sprintf("Secret %s named in spec.auth.rootCredentialsSecretRef has no %q key", ref.Name, PasswordKey)
			return ctrl.Result{}, nil
		}
		s.rootSecret = sec
		return ctrl.Result{}, nil
	}
	name := resources.RootCredentialsSecretName(c.Name)
	sec, err := r.ownSecret(ctx, s, name)
	if err != nil {
		return ctrl.Result{}, err
	}
	if sec == nil {
		pw, err := newPassword()
		if err != nil {
			return ctrl.Result{}, err
		}
		if err := r.writeSecret(ctx, s, name, corev1.SecretTypeOpaque, map[string][]byte{"username": []byte("root"), PasswordKey: pw}, nil); err != nil {
			return ctrl.Result{}, err
		}
		// The Secret's version is learnt when the cache sees it.
		return ctrl.Result{RequeueAfter: soon}, nil
	}
	if len(sec.Data[PasswordKey]) == 0 {
		s.authReason, s.authMsg = etcdv1.ReasonCredentialsInvalid, fmt.Sprintf("Secret %s has no %q key: put a password there", name, PasswordKey)
		return ctrl.Result{}, nil
	}
	s.rootSecret = sec
	return ctrl.Result{}, nil
}

// newPassword is 32 random bytes, URL-safe base64.
func newPassword() ([]byte, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("generate the root password: %w", err)
	}
	return []byte(base64.RawURLEncoding.EncodeToString(b)), nil
}

// reconcileAuth enables or disables etcd's authentication, or changes the
// root password, once the cluster is Available. Each etcd call may run
// again safely, and the status records what etcd has: an idle cluster
// costs no etcd call and no write.
func (r *Reconciler) reconcileAuth(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	st := c.Status.Auth
	enabled := st != nil && st.Enabled
	want := c.Spec.Auth.Enabled
	switch {
	case !want && !enabled:
		c.Status.Auth = nil
		return ctrl.Result{}, nil
	case want && s.rootSecret == nil:
		return ctrl.Result{}, nil
	case want && enabled && st.RootSecretName == s.rootSecret.Name && st.AppliedSecretVersion == s.rootSecret.ResourceVersion:
		return ctrl.Result{}, nil
	}
	if !kube.IsTrue(c.Status.Conditions, etcdv1.ConditionAvailable, c.Generation) || s.client == nil {
		s.authReason, s.authMsg = etcdv1.ReasonWaitingForAvailable, "Authentication changes wait until the cluster is Available"
		return ctrl.Result{}, nil
	}
	cli, err := r.Etcd.Get(ctx, authClientKey(types.NamespacedName{Namespace: c.Namespace, Name: c.Name}),
		[]string{fmt.Sprintf("https://%s.%s.svc.%s:%d", resources.ClientServiceName(c.Name), c.Namespace, r.Options.ClusterDomain, etcdv1.ClientPort)},
		etcd.Credentials{CertPEM: s.client.CertPEM, KeyPEM: s.client.KeyPEM, CAPEM: s.serverCA})
	if err != nil {
		return ctrl.Result{}, err
	}
	tctx, cancel := context.WithTimeout(ctx, r.Options.EtcdTimeout)
	defer cancel()
	log := ctrl.LoggerFrom(ctx)
	s.acted = true
	switch {
	case !want:
		log.Info("Disabling etcd authentication")
		if err := cli.DisableAuth(tctx); err != nil {
			return r.authFailed(s, err)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "AuthDisabled", "DisableAuth", "etcd authentication disabled")
		c.Status.Auth = nil
	case !enabled:
		log.Info("Enabling etcd authentication", "secret", s.rootSecret.Name)
		if err := cli.EnableAuth(tctx, string(s.rootSecret.Data[PasswordKey])); err != nil {
			return r.authFailed(s, err)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "AuthEnabled", "EnableAuth", "etcd authentication enabled; root password in Secret %s", s.rootSecret.Name)
	default:
		log.Info("Changing the etcd root password", "secret", s.rootSecret.Name)
		if err := cli.SetRootPassword(tctx, string(s.rootSecret.Data[PasswordKey])); err != nil {
			return r.authFailed(s, err)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "RootPasswordChanged", "ChangePassword", "etcd root password changed to the one in Secret %s", s.rootSecret.Name)
	}
	if want {
		c.Status.Auth = &etcdv1.AuthStatus{Enabled: true, RootSecretName: s.rootSecret.Name, AppliedSecretVersion: s.rootSecret.ResourceVersion}
	}
	return ctrl.Result{}, nil
}

// authFailed keeps etcd's "not now" apart from real failures.
func (r *Reconciler) authFailed(s *scope, err error) (ctrl.Result, error) {
	s.authReason, s.authMsg = etcdv1.ReasonEtcdError, fmt.Sprintf("etcd refused the authentication change: %v", err)
	return ctrl.Result{}, fmt.Errorf("authentication: %w", err)
}
