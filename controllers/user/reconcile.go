package user

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// soon is how soon a pass comes back for what the cache will show in a
// moment: this controller's own last write.
const soon = 10 * time.Millisecond

// scope is what one reconcile of an EtcdUser learns.
type scope struct {
	user, base *etcdv1.EtcdUser
	now        time.Time

	// cluster is the user's cluster once its TLS and auth are ready.
	cluster *etcdv1.EtcdCluster
	// ca signs the user's certificate; serverCA checks the members; root
	// is the operator's own connection to etcd.
	ca       *pki.KeyPair
	serverCA []byte
	root     etcd.Credentials
	// secret is the user's Secret as written; cert the certificate in it.
	secret *corev1.Secret
	cert   *pki.KeyPair
	// issued: this pass issued the certificate.
	issued bool
	// applied: etcd holds the user and role as the spec says.
	applied bool
	// reason and msg say why the user is not Ready; the first one wins.
	reason, msg string
}

// Reconcile keeps one EtcdUser's user, role and Secret.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	u := &etcdv1.EtcdUser{}
	if err := r.Get(ctx, req.NamespacedName, u); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if r.written.Behind(u) {
		return ctrl.Result{RequeueAfter: soon}, nil
	}
	s := &scope{user: u, now: r.now()}
	if !u.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if err := kube.AddFinalizer(ctx, r.Client, ControllerName, u, etcdv1.UserFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	s.base = u.DeepCopy()
	defer func() {
		setStatus(s)
		r.notReadyEvent(s)
		rv, err := kube.ApplyStatus(ctx, r.Client, ControllerName, s.base, s.user)
		if rv != "" {
			r.written.Record(s.user, rv)
		}
		retErr = errors.Join(retErr, err)
	}()
	// 1. the cluster: TLS and authentication ready; 2. the intent (the
	// names) recorded; 3. the certificate and the Secret; 4. the user and
	// role in etcd; 5. come back to renew.
	return kube.Run(ctx, s, r.readCluster, recordIntent, r.ensureSecret, r.ensureEtcdUser, renewLater)
}

// notReadyEvent tells, once per reason, why a user stopped being Ready or
// cannot become Ready.
func (r *Reconciler) notReadyEvent(s *scope) {
	was := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionReady)
	now := meta.FindStatusCondition(s.user.Status.Conditions, etcdv1.ConditionReady)
	if now == nil || now.Status == metav1.ConditionTrue || s.reason == "" || was != nil && was.Reason == now.Reason {
		return
	}
	r.Recorder.Eventf(s.user, nil, corev1.EventTypeWarning, now.Reason, "Reconcile", "%s", now.Message)
}

// wait records why the user is not Ready yet; the first reason wins.
func (s *scope) wait(reason, format string, args ...any) {
	if s.reason == "" {
		s.reason, s.msg = reason, fmt.Sprintf(format, args...)
	}
}

// readCluster reads the user's cluster and, behind the tls controller's
// conditions, the CA that signs and the operator's own credentials.
func (r *Reconciler) readCluster(ctx context.Context, s *scope) (ctrl.Result, error) {
	u := s.user
	cl, err := r.getCluster(ctx, u.Namespace, u.Spec.ClusterName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cl == nil {
		s.wait(etcdv1.ReasonClusterNotFound, "EtcdCluster %s does not exist in namespace %s, or is being deleted", u.Spec.ClusterName, u.Namespace)
		return ctrl.Result{}, nil
	}
	on, known := cl.AuthOn()
	st, tlsOK := cl.TLSSecrets()
	switch {
	case known && !on:
		s.wait(etcdv1.ReasonAuthDisabled, "EtcdCluster %s has spec.auth.enabled false: set it to true to use EtcdUsers (etcd then refuses every client without a user of its own)", cl.Name)
		return ctrl.Result{}, nil
	case !known || !tlsOK:
		s.wait(etcdv1.ReasonWaitingForCluster, "Waiting for EtcdCluster %s to have TLSReady and AuthReady True for its generation %d", cl.Name, cl.Generation)
		return ctrl.Result{}, nil
	}
	ca, err := r.secretOf(ctx, cl, st.CASecretName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if s.ca, err = pki.ParseKeyPair(ca.Data[pki.CertKey], ca.Data[pki.KeyKey]); err != nil {
		return ctrl.Result{}, fmt.Errorf("the CA in secret %s: %w", st.CASecretName, err)
	}
	if s.root, err = r.creds.Load(ctx, r.Client, r.APIReader, cl); err != nil {
		return ctrl.Result{}, err
	}
	s.serverCA, s.cluster = s.root.CAPEM, cl
	return ctrl.Result{}, nil
}

// getCluster is the cluster, or nil when it is gone or being deleted.
func (r *Reconciler) getCluster(ctx context.Context, namespace, name string) (*etcdv1.EtcdCluster, error) {
	cl := &etcdv1.EtcdCluster{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cl); {
	case apierrors.IsNotFound(err):
		r.Etcd.Forget(clientKey(types.NamespacedName{Namespace: namespace, Name: name}))
		r.creds.Forget(types.NamespacedName{Namespace: namespace, Name: name})
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get cluster %s: %w", name, err)
	}
	if !cl.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return cl, nil
}

// secretOf reads one of the cluster's Secrets from the API server: the
// cache holds Secrets' metadata only. A user's passes come on events (its
// spec, its Secret, its cluster's TLSReady, AuthReady and CA) and when its
// certificate is due, not on a timer: an idle cluster's users have no
// pass, hence no read.
func (r *Reconciler) secretOf(ctx context.Context, cl *etcdv1.EtcdCluster, name string) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: name}, sec); err != nil {
		return nil, fmt.Errorf("get secret %s of cluster %s: %w", name, cl.Name, err)
	}
	return sec, nil
}

// recordIntent writes the user's and role's names to the status before
// etcd first hears of them, so that a deletion knows there is something
// to delete even when the pass that made them did not get to write it.
func recordIntent(_ context.Context, s *scope) (ctrl.Result, error) {
	u := s.user
	if s.reason != "" || u.Status.RoleName != "" {
		return ctrl.Result{}, nil
	}
	u.Status.UserName, u.Status.RoleName = u.Name, resources.UserRoleName(u.Name)
	return ctrl.Result{RequeueAfter: soon}, nil
}

// renewLater comes back when the certificate is due for renewal.
func renewLater(_ context.Context, s *scope) (ctrl.Result, error) {
	if s.cert == nil {
		return ctrl.Result{}, nil
	}
	at := pki.RenewAt(s.cert.Cert, s.cluster.Spec.TLS.RenewBeforeExpiry())
	return ctrl.Result{RequeueAfter: max(at.Sub(s.now), time.Second)}, nil
}
