package tls

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// TestSteadyPasses: once the certificates are in place, a pass over the
// unchanged cluster reads no Secret from the API server and asks to come
// back at the renewal, as the full pass did; a Secret changed by someone
// else, a change of the cluster, or the clock reaching a renewal makes the
// next pass read the Secrets again and do what it must.
func TestSteadyPasses(t *testing.T) {
	t.Parallel()
	for name, change := range map[string]func(t *testing.T, e *trustEnv, now *time.Time){
		"a Secret changed": func(t *testing.T, e *trustEnv, _ *time.Time) {
			sec := e.secret(resources.PeerTLSSecretName(trustCluster))
			sec.Data[pki.CAKey] = []byte("not a CA")
			if err := e.c.Update(context.Background(), sec); err != nil {
				t.Fatal(err)
			}
		},
		"the cluster changed": func(t *testing.T, e *trustEnv, _ *time.Time) {
			c := e.reconcile()
			c.Annotations = map[string]string{"note": "changed"}
			if err := e.c.Update(context.Background(), c); err != nil {
				t.Fatal(err)
			}
		},
		"a renewal due": func(t *testing.T, e *trustEnv, now *time.Time) {
			*now = e.reconcile().Status.TLS.RenewAt.Add(time.Minute)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newTrustEnv(t, etcdv1.TLSSpec{})
			reads := &testenv.Reads{}
			e.r.APIReader = reads.Reader(e.c)
			now := time.Now()
			e.r.Now = func() time.Time { return now }
			secretReads := func() int { return reads.Count(&corev1.Secret{}, trustNS) }
			pass := func() ctrl.Result {
				t.Helper()
				res, err := e.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: trustNS, Name: trustCluster}})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			// Issued, then read once and found in order.
			pass()
			full := pass()
			n := secretReads()
			for range 3 {
				if res := pass(); res != full {
					t.Errorf("a pass over the unchanged cluster asks for %+v, the full pass for %+v", res, full)
				}
			}
			if got := secretReads() - n; got != 0 {
				t.Errorf("3 passes over the unchanged cluster read %d Secrets, want 0", got)
			}

			change(t, e, &now)
			before := e.secret(resources.PeerTLSSecretName(trustCluster))
			pass()
			if secretReads() == n {
				t.Fatalf("the pass after the change read no Secret")
			}
			after := e.secret(resources.PeerTLSSecretName(trustCluster))
			if string(after.Data[pki.CAKey]) == "not a CA" {
				t.Errorf("the peer Secret was not repaired")
			}
			if name == "a renewal due" && string(after.Data[pki.CertKey]) == string(before.Data[pki.CertKey]) {
				t.Errorf("the peer certificate was not renewed")
			}
		})
	}
}

// TestUntil: a steady pass holds until the first renewal, CA rotation or
// expiry of the retired CA it foresaw, whichever comes first.
func TestUntil(t *testing.T) {
	t.Parallel()
	now := time.Now()
	mk := func(life time.Duration, at time.Time) *pki.KeyPair {
		ca, err := pki.NewCA("ca", life, at)
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	ca := mk(30*time.Hour, now)                     // due for rotation in 20h
	retired := mk(2*time.Hour, now.Add(-time.Hour)) // expires in 1h
	expired := mk(time.Hour, now.Add(-2*time.Hour)) // expired an hour ago
	for _, tc := range []struct {
		name string
		s    scope
		want time.Time
	}{
		{"nothing", scope{now: now}, time.Time{}},
		{"the CA's rotation", scope{now: now, ca: ca}, pki.RenewAt(ca.Cert, 0)},
		{"a renewal before", scope{now: now, ca: ca, renewAt: now.Add(5 * time.Hour)}, now.Add(5 * time.Hour)},
		{"the retired CA's expiry", scope{now: now, ca: ca, renewAt: now.Add(5 * time.Hour), previousCA: retired.CertPEM}, retired.Cert.NotAfter},
		{"a retired CA already expired", scope{now: now, ca: ca, renewAt: now.Add(5 * time.Hour), previousCA: expired.CertPEM}, now.Add(5 * time.Hour)},
	} {
		if got := tc.s.until(); !got.Equal(tc.want) {
			t.Errorf("%s: until %v, want %v", tc.name, got, tc.want)
		}
	}
}
