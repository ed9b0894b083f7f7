package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TLSSpec says how etcd's peer and client connections are encrypted. When
// spec.tls is omitted, both use certificates from a CA the operator keeps for
// the cluster, and clients must present a certificate.
//
// What a member loads at start (the CAs it trusts, whether it checks client
// certificates) cannot change while it runs, so disabled, the sources and
// mutual are fixed once the cluster exists. Lifetimes may change at any time.
// +kubebuilder:validation:XValidation:rule="(has(self.disabled) && self.disabled) == (has(oldSelf.disabled) && oldSelf.disabled)",message="spec.tls.disabled cannot change on an existing cluster: every member would need new peer URLs; create a new cluster and restore a backup into it"
// +kubebuilder:validation:XValidation:rule="(has(self.peer) && has(self.peer.secretRef)) == (has(oldSelf.peer) && has(oldSelf.peer.secretRef)) && (has(self.peer) && has(self.peer.certManager)) == (has(oldSelf.peer) && has(oldSelf.peer.certManager)) && (!has(self.peer) || !has(self.peer.secretRef) || self.peer.secretRef == oldSelf.peer.secretRef) && (!has(self.peer) || !has(self.peer.certManager) || self.peer.certManager == oldSelf.peer.certManager)",message="spec.tls.peer cannot change on an existing cluster: running members keep trusting the CA they started with"
// +kubebuilder:validation:XValidation:rule="!has(self.renewBefore) || !has(self.certificateLifetime) || duration(self.renewBefore) < duration(self.certificateLifetime)",message="spec.tls.renewBefore must be shorter than spec.tls.certificateLifetime"
// +kubebuilder:validation:XValidation:rule="!has(self.disabled) || !self.disabled || (!has(self.peer) && !has(self.client.secretRef) && !has(self.client.certManager) && !has(self.client.operator))",message="spec.tls.disabled: true cannot be combined with certificate sources"
type TLSSpec struct {
	// Disabled runs etcd without TLS on both peer and client connections:
	// anyone who reaches the Pods can read and write. Only for tests and
	// networks that are encrypted otherwise.
	// +optional
	Disabled bool `json:"disabled,omitempty"`

	// Peer is where the certificate members use between themselves comes
	// from. The operator's CA when omitted.
	// +optional
	Peer *TLSSource `json:"peer,omitempty"`

	// Client is where the certificate members serve clients with comes from,
	// and whether clients must present one.
	// +kubebuilder:default={}
	// +optional
	Client ClientTLS `json:"client"`

	// CertificateLifetime of the certificates the operator issues, at
	// least one minute.
	// +kubebuilder:default="2160h"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.tls.certificateLifetime must be a duration like 2160h in h, m, s or ms (no days), of at most 2562047h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="spec.tls.certificateLifetime must be at least 1m"
	// +optional
	CertificateLifetime *metav1.Duration `json:"certificateLifetime,omitempty"`

	// RenewBefore is how long before expiry an operator-issued certificate
	// is replaced, at least one minute; a third of its lifetime when
	// omitted.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.tls.renewBefore must be a duration like 720h in h, m, s or ms (no days), of at most 2562047h"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="spec.tls.renewBefore must be at least 1m: a renewed certificate takes up to a minute to reach the members' volumes, and the old one must not expire first"
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

// Lifetime of the certificates the operator issues: 90 days when unset.
func (t TLSSpec) Lifetime() time.Duration {
	if l := t.CertificateLifetime; l != nil && l.Duration > 0 {
		return l.Duration
	}
	return 90 * 24 * time.Hour
}

// RenewBeforeExpiry is spec.tls.renewBefore; 0 (a third of the lifetime,
// see pki.RenewAt) when unset.
func (t TLSSpec) RenewBeforeExpiry() time.Duration {
	if rb := t.RenewBefore; rb != nil {
		return rb.Duration
	}
	return 0
}

// TLSSource is where a certificate comes from: at most one of the three.
// None means the operator's CA.
// +kubebuilder:validation:XValidation:rule="(has(self.operator) ? 1 : 0) + (has(self.secretRef) ? 1 : 0) + (has(self.certManager) ? 1 : 0) <= 1",message="set at most one of operator, secretRef and certManager"
type TLSSource struct {
	// Operator: the operator issues the certificate from a CA it keeps in a
	// Secret per cluster, and renews it.
	// +optional
	Operator *OperatorTLSSource `json:"operator,omitempty"`

	// SecretRef names a Secret of yours in the cluster's namespace holding
	// tls.crt, tls.key and ca.crt. Its certificate must cover the members'
	// names (see docs/tls.md). You renew it; changes are picked up within a
	// minute.
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.tls.peer.secretRef.name must name a Secret: lowercase letters, digits, '-' and '.', at most 253 characters"
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`

	// CertManager: the operator creates cert-manager Certificates issued by
	// this issuer. cert-manager must be installed.
	// +optional
	CertManager *CertManagerSource `json:"certManager,omitempty"`
}

// OperatorTLSSource has no settings yet; its presence selects the source.
type OperatorTLSSource struct{}

// ClientTLS is the TLS of etcd's client port.
// +kubebuilder:validation:XValidation:rule="(has(self.operator) ? 1 : 0) + (has(self.secretRef) ? 1 : 0) + (has(self.certManager) ? 1 : 0) <= 1",message="set at most one of operator, secretRef and certManager"
// +kubebuilder:validation:XValidation:rule="!has(self.trustedCASecretRef) || !has(self.mutual) || self.mutual",message="spec.tls.client.trustedCASecretRef needs spec.tls.client.mutual: without client certificates members trust no client CA; remove one of them"
// +kubebuilder:validation:XValidation:rule="(!has(self.mutual) || self.mutual) == (!has(oldSelf.mutual) || oldSelf.mutual)",message="spec.tls.client.mutual cannot change on an existing cluster: members check client certificates or not from their start"
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) == has(oldSelf.secretRef) && has(self.certManager) == has(oldSelf.certManager) && (!has(self.secretRef) || self.secretRef == oldSelf.secretRef) && (!has(self.certManager) || self.certManager == oldSelf.certManager)",message="spec.tls.client's source cannot change on an existing cluster: running members keep trusting the CA they started with"
type ClientTLS struct {
	// Operator: the operator issues the serving certificate.
	// +optional
	Operator *OperatorTLSSource `json:"operator,omitempty"`

	// SecretRef names a Secret of yours holding the serving certificate
	// (tls.crt, tls.key) and the CA that signs it (ca.crt). Clients get that
	// CA in the client Secret to check the members. Members do not accept
	// client certificates of this CA unless it is also named in
	// trustedCASecretRef.
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.tls.client.secretRef.name must name a Secret: lowercase letters, digits, '-' and '.', at most 253 characters"
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`

	// CertManager: the serving certificate is a cert-manager Certificate.
	// +optional
	CertManager *CertManagerSource `json:"certManager,omitempty"`

	// Mutual: clients must present a certificate signed by the operator's CA
	// of this cluster or by a CA in trustedCASecretRef. The operator's own
	// client certificate (common name root) is always trusted.
	// +kubebuilder:default=true
	// +optional
	Mutual *bool `json:"mutual,omitempty"`

	// TrustedCASecretRef names a Secret of yours whose ca.crt holds the CAs
	// whose client certificates members accept, besides the operator's CA of
	// this cluster. The CA of a cert-manager issuer, of the peer certificate
	// or of a client secretRef is never trusted for clients unless it is
	// named here: whoever can get a certificate from it could otherwise
	// connect, and as root with common name root. Every certificate in
	// ca.crt must be a CA; expired ones are left out. The Secret is read
	// again every minute, and a change restarts the members one at a time,
	// since etcd loads the CAs it trusts only at start.
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.tls.client.trustedCASecretRef.name must name a Secret: lowercase letters, digits, '-' and '.', at most 253 characters"
	// +optional
	TrustedCASecretRef *corev1.LocalObjectReference `json:"trustedCASecretRef,omitempty"`
}

// IsMutual says whether clients must present a certificate (the default).
func (c ClientTLS) IsMutual() bool { return c.Mutual == nil || *c.Mutual }

// Source returns the client side's certificate source.
func (c ClientTLS) Source() TLSSource {
	return TLSSource{Operator: c.Operator, SecretRef: c.SecretRef, CertManager: c.CertManager}
}

// CertManagerSource points at a cert-manager issuer.
type CertManagerSource struct {
	// IssuerRef is the Issuer (in the cluster's namespace) or ClusterIssuer.
	IssuerRef IssuerRef `json:"issuerRef"`
}

// IssuerRef names a cert-manager issuer.
type IssuerRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="issuerRef.name must name a cert-manager issuer: lowercase letters, digits, '-' and '.', at most 253 characters"
	Name string `json:"name"`
	// Kind is Issuer or ClusterIssuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group of the issuer.
	// +kubebuilder:default="cert-manager.io"
	// +optional
	Group string `json:"group,omitempty"`
}

// AuthSpec turns on etcd's authentication.
type AuthSpec struct {
	// Enabled creates the root user and role and enables authentication
	// once the cluster is Available. Turning it off disables authentication.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// RootCredentialsSecretRef names a Secret of yours with the root user's
	// password under the key "password". When omitted the operator generates
	// one in a Secret it owns. Changing the password in the Secret changes
	// it in etcd.
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.auth.rootCredentialsSecretRef.name must name a Secret: lowercase letters, digits, '-' and '.', at most 253 characters"
	// +optional
	RootCredentialsSecretRef *corev1.LocalObjectReference `json:"rootCredentialsSecretRef,omitempty"`
}

// TLSStatus names the Secrets the tls controller keeps for the cluster, so
// that no other controller or user has to guess them.
type TLSStatus struct {
	// PeerSecretName holds the members' peer certificate (tls.crt, tls.key)
	// and the CA they trust for peers (ca.crt).
	// +optional
	PeerSecretName string `json:"peerSecretName,omitempty"`
	// ServerSecretName holds the members' serving certificate and the CAs
	// whose client certificates they accept (ca.crt).
	// +optional
	ServerSecretName string `json:"serverSecretName,omitempty"`
	// ClientSecretName holds a client certificate with common name root and
	// the CA of the serving certificate (ca.crt): what etcdctl needs.
	// +optional
	ClientSecretName string `json:"clientSecretName,omitempty"`
	// CASecretName holds the operator's CA of this cluster.
	// +optional
	CASecretName string `json:"caSecretName,omitempty"`
	// SpecHash identifies the spec.tls these certificates were issued for:
	// a later generation with the same spec.tls needs no new TLSReady.
	// +optional
	SpecHash string `json:"specHash,omitempty"`
	// NotAfter is when the first of the cluster's certificates expires.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// RenewAt is when the operator next renews a certificate it issued.
	// +optional
	RenewAt *metav1.Time `json:"renewAt,omitempty"`
	// CANotAfter is when the operator's CA of this cluster expires; it is
	// replaced at two thirds of its lifetime.
	// +optional
	CANotAfter *metav1.Time `json:"caNotAfter,omitempty"`
	// TrustRevision names the set of CAs members load when they start. When
	// it changes (a CA rotation, a new CA in your peer Secret, or a change of
	// spec.tls.client.trustedCASecretRef), the cluster controller restarts the
	// members one at a time, each once the others are healthy.
	// +optional
	TrustRevision string `json:"trustRevision,omitempty"`
	// CARotation is empty, or says that a new CA is trusted next to the old
	// one and waits for every member to load both before it signs.
	// +optional
	CARotation string `json:"caRotation,omitempty"`
	// CARotationRequest is the last value of the rotate-ca annotation the
	// operator acted on.
	// +optional
	CARotationRequest string `json:"caRotationRequest,omitempty"`
}

// AuthStatus is the state of etcd's authentication.
type AuthStatus struct {
	// Enabled is true once authentication is on in etcd.
	// +optional
	Enabled bool `json:"enabled,omitempty"`
	// RootSecretName holds the root user's password (key "password").
	// +optional
	RootSecretName string `json:"rootSecretName,omitempty"`
	// AppliedSecretVersion is the resourceVersion of that Secret whose
	// password etcd has; another version means the password changes.
	// +optional
	AppliedSecretVersion string `json:"appliedSecretVersion,omitempty"`
}

// MemberTLS is what a member Pod mounts; empty when TLS is disabled.
type MemberTLS struct {
	// PeerSecretName: see TLSStatus.
	PeerSecretName string `json:"peerSecretName"`
	// ServerSecretName: see TLSStatus.
	ServerSecretName string `json:"serverSecretName"`
	// ClientCertAuth makes etcd require client certificates.
	// +optional
	ClientCertAuth bool `json:"clientCertAuth,omitempty"`
	// TrustRevision is the status.tls.trustRevision the member's Pod must
	// have started with; the member controller restarts a Pod that did not.
	// +optional
	TrustRevision string `json:"trustRevision,omitempty"`
}
