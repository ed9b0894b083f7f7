package v1alpha1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTLSCurrent: TLSReady holds for the current generation, or for an
// earlier one with the same spec.tls.
func TestTLSCurrent(t *testing.T) {
	t.Parallel()
	withTLS := func(gen, condGen int64, status metav1.ConditionStatus, reason string, hash func(*EtcdCluster) string, change func(*EtcdCluster)) *EtcdCluster {
		c := &EtcdCluster{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		c.Status.Conditions = []metav1.Condition{{Type: ConditionTLSReady, Status: status, Reason: reason, ObservedGeneration: condGen}}
		c.Status.TLS = &TLSStatus{ClientSecretName: "c"}
		if hash != nil {
			c.Status.TLS.SpecHash = hash(c)
		}
		if change != nil {
			change(c)
		}
		return c
	}
	same := func(c *EtcdCluster) string { return c.TLSSpecHash() }
	lifetime := func(c *EtcdCluster) { c.Spec.TLS.CertificateLifetime = &metav1.Duration{Duration: 1e12} }
	disable := func(c *EtcdCluster) { c.Spec.TLS.Disabled = true; c.Status.TLS = nil }
	for _, tt := range []struct {
		name string
		c    *EtcdCluster
		want bool
	}{
		{name: "True for this generation", c: withTLS(2, 2, metav1.ConditionTrue, ReasonCertificatesReady, nil, nil), want: true},
		{name: "False for this generation", c: withTLS(2, 2, metav1.ConditionFalse, ReasonIssueFailed, same, nil), want: false},
		{name: "True for an earlier one, same spec.tls", c: withTLS(3, 2, metav1.ConditionTrue, ReasonCertificatesReady, same, nil), want: true},
		{name: "True for an earlier one, spec.tls changed since", c: withTLS(3, 2, metav1.ConditionTrue, ReasonCertificatesReady, same, lifetime), want: false},
		{name: "True for an earlier one, no hash recorded", c: withTLS(3, 2, metav1.ConditionTrue, ReasonCertificatesReady, nil, nil), want: false},
		{name: "disabled, TLSDisabled for an earlier one", c: withTLS(3, 2, metav1.ConditionTrue, ReasonTLSDisabled, nil, disable), want: true},
		{name: "disabled since certificates were ready", c: withTLS(3, 2, metav1.ConditionTrue, ReasonCertificatesReady, same, disable), want: false},
		{name: "no condition", c: &EtcdCluster{}, want: false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.c.TLSCurrent(); got != tt.want {
				t.Errorf("TLSCurrent = %t, want %t", got, tt.want)
			}
			if _, ok := tt.c.TLSSecrets(); ok != (tt.want && tt.c.Status.TLS != nil) {
				t.Errorf("TLSSecrets ok = %t", ok)
			}
		})
	}
}

// TestAuthOn: AuthReady counts only for the current generation.
func TestAuthOn(t *testing.T) {
	t.Parallel()
	with := func(gen, condGen int64, status metav1.ConditionStatus, reason string) *EtcdCluster {
		c := &EtcdCluster{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		c.Status.Conditions = []metav1.Condition{{Type: ConditionAuthReady, Status: status, Reason: reason, ObservedGeneration: condGen}}
		return c
	}
	for _, tt := range []struct {
		name          string
		c             *EtcdCluster
		on, wantKnown bool
	}{
		{name: "enabled for this generation", c: with(2, 2, metav1.ConditionTrue, ReasonAuthEnabled), on: true, wantKnown: true},
		{name: "disabled for this generation", c: with(2, 2, metav1.ConditionTrue, ReasonAuthDisabled), on: false, wantKnown: true},
		{name: "enabled for an earlier generation", c: with(3, 2, metav1.ConditionTrue, ReasonAuthEnabled)},
		{name: "changing", c: with(2, 2, metav1.ConditionFalse, ReasonWaitingForAvailable)},
		{name: "no condition", c: &EtcdCluster{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			on, known := tt.c.AuthOn()
			if on != tt.on || known != tt.wantKnown {
				t.Errorf("AuthOn = %t, %t; want %t, %t", on, known, tt.on, tt.wantKnown)
			}
		})
	}
}
