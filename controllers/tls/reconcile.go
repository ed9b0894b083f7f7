package tls

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
)

// soon is how soon a pass comes back for what the cache will show in a
// moment: a Secret just written, or this controller's own last status write.
const soon = 10 * time.Millisecond

// scope is what one reconcile of a cluster learns.
type scope struct {
	cluster *etcdv1.EtcdCluster
	base    *etcdv1.EtcdCluster
	now     time.Time

	// ca is the operator's CA of the cluster, the one that signs; nextCA is
	// the incoming one during a rotation and previousCA (PEM) the retired
	// one, both trusted; trust is the bundle of the three.
	ca, nextCA *pki.KeyPair
	previousCA []byte
	trust      []byte
	// trustRev names every CA members load at start.
	trustRev string
	// rotationRequest is the rotate-ca annotation value acted on.
	rotationRequest string
	// peerCA and serverCA are the CAs that sign the peer and the serving
	// certificates, whatever their source.
	peerCA, serverCA []byte
	// client is the operator's own client certificate.
	client *pki.KeyPair
	// tlsReason and tlsMsg say why the certificates are not ready.
	tlsReason, tlsMsg string
	// notAfter is the first expiry among the certificates, renewAt the
	// next renewal the operator itself must do.
	notAfter, renewAt time.Time
	// pollUser: a source is a Secret of the user, read again periodically.
	pollUser bool
	// issued lists the Secrets whose certificates this pass issued.
	issued []string
	// pendingSource says which new certificate from outside waits for the
	// members to trust its CA.
	pendingSource string

	// secrets are the cluster's own Secrets this pass read, each once (nil:
	// none of that name); seen is the resourceVersion the cache showed of
	// each ("": none).
	secrets map[string]*corev1.Secret
	seen    map[string]string
	// acted: this pass created or updated a Secret or a Certificate, or
	// changed etcd's authentication. external: a certificate comes from
	// cert-manager, whose Certificate is read past the cache.
	acted, external bool
	// done: every step ran.
	done bool

	// rootSecret holds the root password, when auth is wanted.
	rootSecret *corev1.Secret
	// authReason and authMsg say why authentication is not as wanted.
	authReason, authMsg string
}

// Reconcile keeps the certificates and credentials of an EtcdCluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	c := &etcdv1.EtcdCluster{}
	if err := r.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.Etcd.Forget(authClientKey(req.NamespacedName))
			r.steady.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		// The owned Secrets go with the cluster.
		r.steady.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if r.written.Behind(c) {
		return ctrl.Result{RequeueAfter: soon}, nil
	}
	now := r.now()
	if res, ok := r.steady.again(ctx, r.Client, c, now); ok {
		return res, nil
	}
	s := &scope{cluster: c, base: c.DeepCopy(), now: now}
	defer func() {
		if len(s.issued) > 0 && !s.notAfter.IsZero() {
			// One event per pass, not per certificate.
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "CertificatesIssued", "Issue",
				"Issued the certificates in Secrets %s; the first expires at %s", strings.Join(s.issued, ", "), s.notAfter.UTC().Format(time.RFC3339))
		}
		setStatus(s)
		rv, err := kube.ApplyStatus(ctx, r.Client, ControllerName, s.base, s.cluster)
		if rv != "" {
			r.written.Record(s.cluster, rv)
		}
		r.steady.record(s, retErr == nil && err == nil && rv == "" && s.steady())
		retErr = errors.Join(retErr, err)
	}()
	// 1. the CA; 2. peer, 3. serving and 4. client certificates; 5. end a
	// CA rotation; 6. root credentials; 7. etcd's authentication; 8. come
	// back to renew.
	return kube.Run(ctx, s,
		r.ensureCA, r.ensurePeer, r.ensureServer, r.ensureClient, r.promoteCA,
		r.ensureRootSecret, r.reconcileAuth, r.renewLater)
}

// renewLater comes back when the next certificate is due for renewal, and
// sooner when a user's Secret must be read again.
func (r *Reconciler) renewLater(_ context.Context, s *scope) (ctrl.Result, error) {
	s.done = true
	var after time.Duration
	if !s.renewAt.IsZero() {
		after = max(s.renewAt.Sub(s.now), time.Second)
	}
	if s.pollUser && (after == 0 || after > r.Options.UserSecretInterval) {
		after = r.Options.UserSecretInterval
	}
	return ctrl.Result{RequeueAfter: after}, nil
}

// problem records why TLS is not ready; the first problem wins.
func (s *scope) problem(reason, format string, args ...any) {
	if s.tlsReason == "" {
		s.tlsReason, s.tlsMsg = reason, fmt.Sprintf(format, args...)
	}
}

// expires records a certificate's expiry and, for one the operator issued,
// its renewal time.
func (s *scope) expires(kp *pki.KeyPair, issued bool, renewBefore time.Duration) {
	if na := kp.Cert.NotAfter; s.notAfter.IsZero() || na.Before(s.notAfter) {
		s.notAfter = na
	}
	if issued {
		if at := pki.RenewAt(kp.Cert, renewBefore); s.renewAt.IsZero() || at.Before(s.renewAt) {
			s.renewAt = at
		}
	}
}
