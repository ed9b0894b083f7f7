package user

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
)

// TestReuse: a certificate is kept until it is due for renewal, signed by
// another CA, for another name or usage, or longer-lived than asked.
func TestReuse(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := pki.NewCA("ca", 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.NewCA("other", 365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	day := 24 * time.Hour
	req := pki.Request{CommonName: "tenant-a", Usage: pki.UsageClient, Lifetime: 30 * day}
	issue := func(ca *pki.KeyPair, r pki.Request) *corev1.Secret {
		kp, err := pki.Issue(ca, r, now)
		if err != nil {
			t.Fatal(err)
		}
		return &corev1.Secret{Data: map[string][]byte{pki.CertKey: kp.CertPEM, pki.KeyKey: kp.KeyPEM}}
	}
	withName, withUsage, longer := req, req, req
	withName.CommonName = "tenant-b"
	withUsage.Usage, withUsage.DNSNames = pki.UsagePeer, []string{"x"}
	longer.Lifetime = 60 * day
	for _, tt := range []struct {
		name string
		have *corev1.Secret
		at   time.Time
		want bool
	}{
		{name: "fits", have: issue(ca, req), at: now.Add(day), want: true},
		{name: "no Secret", at: now},
		{name: "due for renewal", have: issue(ca, req), at: now.Add(25 * day)},
		{name: "another CA signs now", have: issue(other, req), at: now},
		{name: "another user", have: issue(ca, withName), at: now},
		{name: "another usage", have: issue(ca, withUsage), at: now},
		{name: "longer-lived than asked", have: issue(ca, longer), at: now},
		{name: "unreadable", have: &corev1.Secret{Data: map[string][]byte{pki.CertKey: []byte("x")}}, at: now},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cl := &etcdv1.EtcdCluster{}
			cl.Spec.TLS.CertificateLifetime = &metav1.Duration{Duration: 30 * day}
			s := &scope{ca: ca, cluster: cl, now: tt.at}
			if got := reuse(s, tt.have, req) != nil; got != tt.want {
				t.Errorf("reuse = %t, want %t", got, tt.want)
			}
		})
	}
}
