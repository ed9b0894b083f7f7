package tls

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

func TestSetStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := pki.NewCA("ca", time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	client, err := pki.Issue(ca, pki.Request{CommonName: "root", Usage: pki.UsageClient, Lifetime: 30 * time.Minute}, now)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		spec       etcdv1.EtcdClusterSpec
		status     etcdv1.EtcdClusterStatus
		scope      func(*scope)
		tls, auth  string // wanted reasons
		tlsTrue    bool
		authTrue   bool
		keepStatus bool // status.tls kept from before
	}{
		{name: "disabled", spec: etcdv1.EtcdClusterSpec{TLS: etcdv1.TLSSpec{Disabled: true}},
			tls: etcdv1.ReasonTLSDisabled, tlsTrue: true, auth: etcdv1.ReasonAuthDisabled, authTrue: true},
		{name: "certificates ready", scope: func(s *scope) { s.client = client; s.notAfter = client.Cert.NotAfter },
			tls: etcdv1.ReasonCertificatesReady, tlsTrue: true, auth: etcdv1.ReasonAuthDisabled, authTrue: true},
		{name: "bad user Secret keeps the last good names",
			status: etcdv1.EtcdClusterStatus{TLS: &etcdv1.TLSStatus{PeerSecretName: "old"}},
			scope:  func(s *scope) { s.problem(etcdv1.ReasonSecretInvalid, "Secret x: ca.crt is missing") },
			tls:    etcdv1.ReasonSecretInvalid, auth: etcdv1.ReasonAuthDisabled, authTrue: true, keepStatus: true},
		{name: "first problem wins", scope: func(s *scope) {
			s.problem(etcdv1.ReasonSecretNotFound, "first")
			s.problem(etcdv1.ReasonSecretInvalid, "second")
		}, tls: etcdv1.ReasonSecretNotFound, auth: etcdv1.ReasonAuthDisabled, authTrue: true},
		{name: "auth waits", spec: etcdv1.EtcdClusterSpec{Auth: etcdv1.AuthSpec{Enabled: true}},
			scope: func(s *scope) {
				s.client = client
				s.authReason, s.authMsg = etcdv1.ReasonWaitingForAvailable, "waiting"
			},
			tls: etcdv1.ReasonCertificatesReady, tlsTrue: true, auth: etcdv1.ReasonWaitingForAvailable},
		{name: "auth on", spec: etcdv1.EtcdClusterSpec{Auth: etcdv1.AuthSpec{Enabled: true}},
			status: etcdv1.EtcdClusterStatus{Auth: &etcdv1.AuthStatus{Enabled: true, RootSecretName: "demo-root-credentials"}},
			scope:  func(s *scope) { s.client = client },
			tls:    etcdv1.ReasonCertificatesReady, tlsTrue: true, auth: etcdv1.ReasonAuthEnabled, authTrue: true},
		{name: "auth being turned off", status: etcdv1.EtcdClusterStatus{Auth: &etcdv1.AuthStatus{Enabled: true}},
			scope: func(s *scope) { s.client = client },
			tls:   etcdv1.ReasonCertificatesReady, tlsTrue: true, auth: etcdv1.ReasonWaitingForAvailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Generation: 4}, Spec: tt.spec, Status: tt.status}
			s := &scope{cluster: c, now: now}
			if tt.scope != nil {
				tt.scope(s)
			}
			setStatus(s)
			check := func(typ, reason string, status bool) {
				got := meta.FindStatusCondition(c.Status.Conditions, typ)
				want := metav1.ConditionFalse
				if status {
					want = metav1.ConditionTrue
				}
				if got == nil || got.Reason != reason || got.Status != want || got.ObservedGeneration != 4 || got.Message == "" {
					t.Errorf("%s = %+v, want %s %s for generation 4 with a message", typ, got, want, reason)
				}
			}
			check(etcdv1.ConditionTLSReady, tt.tls, tt.tlsTrue)
			check(etcdv1.ConditionAuthReady, tt.auth, tt.authTrue)
			switch {
			case tt.keepStatus:
				if c.Status.TLS == nil || c.Status.TLS.PeerSecretName != "old" {
					t.Errorf("status.tls = %+v, want the last good one kept", c.Status.TLS)
				}
			case tt.tlsTrue && !tt.spec.TLS.Disabled:
				if c.Status.TLS == nil || c.Status.TLS.ClientSecretName != "demo-client-tls" || (c.Status.TLS.NotAfter == nil) != s.notAfter.IsZero() {
					t.Errorf("status.tls = %+v", c.Status.TLS)
				}
			}
		})
	}
}
