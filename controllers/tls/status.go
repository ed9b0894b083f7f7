package tls

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// setStatus turns the facts of a reconcile into status.tls and the
// TLSReady and AuthReady conditions.
func setStatus(s *scope) {
	setTLSStatus(s)
	setTLSReady(s)
	setAuthReady(s)
}

func setTLSStatus(s *scope) {
	c := s.cluster
	if c.Spec.TLS.Disabled {
		c.Status.TLS = nil
		return
	}
	if s.tlsReason != "" || s.client == nil {
		// Keep the names of the last good state: members mount them.
		return
	}
	st := &etcdv1.TLSStatus{
		PeerSecretName:   resources.PeerTLSSecretName(c.Name),
		ServerSecretName: resources.ServerTLSSecretName(c.Name),
		ClientSecretName: resources.ClientTLSSecretName(c.Name),
		CASecretName:     resources.CASecretName(c.Name),
		SpecHash:         c.TLSSpecHash(),
	}
	if !s.notAfter.IsZero() {
		st.NotAfter = ptrTime(s.notAfter)
	}
	if !s.renewAt.IsZero() {
		st.RenewAt = ptrTime(s.renewAt)
	}
	if s.ca != nil {
		st.CANotAfter = ptrTime(s.ca.Cert.NotAfter)
	}
	st.TrustRevision, st.CARotationRequest = s.trustRev, s.rotationRequest
	switch {
	case s.nextCA != nil:
		st.CARotation = "A new CA is trusted next to the old one; it signs once every member has restarted with both"
	case s.pendingSource != "":
		st.CARotation = "A new CA is trusted next to the old one: " + s.pendingSource
	}
	c.Status.TLS = st
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t.UTC().Truncate(time.Second))
	return &mt
}

func setTLSReady(s *scope) {
	c := s.cluster
	switch {
	case c.Spec.TLS.Disabled:
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionTLSReady, true, etcdv1.ReasonTLSDisabled,
			"TLS is disabled: peer and client connections are plain and unauthenticated")
	case s.tlsReason != "":
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionTLSReady, false, s.tlsReason, s.tlsMsg)
	case s.client == nil:
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionTLSReady, false, etcdv1.ReasonIssueFailed,
			"The certificates are not all written yet; see the operator's log")
	default:
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionTLSReady, true, etcdv1.ReasonCertificatesReady,
			fmt.Sprintf("Certificates are in the Secrets named in status.tls; the first expires at %s", s.notAfter.UTC().Format(time.RFC3339)))
	}
}

func setAuthReady(s *scope) {
	c := s.cluster
	switch {
	case s.authReason != "":
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionAuthReady, false, s.authReason, s.authMsg)
	case !c.Spec.Auth.Enabled && (c.Status.Auth == nil || !c.Status.Auth.Enabled):
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionAuthReady, true, etcdv1.ReasonAuthDisabled,
			"etcd authentication is off (spec.auth.enabled is false)")
	case c.Spec.Auth.Enabled && c.Status.Auth != nil && c.Status.Auth.Enabled:
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionAuthReady, true, etcdv1.ReasonAuthEnabled,
			fmt.Sprintf("etcd authentication is on; the root password is in Secret %s", c.Status.Auth.RootSecretName))
	default:
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionAuthReady, false, etcdv1.ReasonWaitingForAvailable,
			"Authentication changes wait until the cluster is Available")
	}
}
