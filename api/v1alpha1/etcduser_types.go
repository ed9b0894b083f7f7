package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeyAccess is what a user may do with the keys under a prefix.
// +kubebuilder:validation:Enum=Read;ReadWrite
type KeyAccess string

const (
	// KeyAccessRead: get, list and watch the keys.
	KeyAccessRead KeyAccess = "Read"
	// KeyAccessReadWrite: read, put and delete the keys.
	KeyAccessReadWrite KeyAccess = "ReadWrite"
)

// KeyPermission lets the user read, or read and write, every key that
// starts with a prefix.
type KeyPermission struct {
	// Prefix: every key starting with it, byte for byte. End it with "/"
	// ("/tenants/a/") so that "/tenants/a" does not also cover
	// "/tenants/ab". "/" or "" (every key) needs spec.allowAllKeys.
	// +kubebuilder:validation:MaxLength=256
	Prefix string `json:"prefix"`
	// Access is Read or ReadWrite.
	// +kubebuilder:default=Read
	// +optional
	Access KeyAccess `json:"access,omitempty"`
}

// EtcdUserSpec is an etcd user of one cluster, with the key prefixes it
// may use. The operator keeps the user and one role of its own in etcd as
// the spec says, and gives the user a client certificate of the cluster's
// CA (common name: the user's name), and a password when asked.
// +kubebuilder:validation:XValidation:rule="self.permissions.all(p, size(p.prefix) > 0 && p.prefix != '/') || (has(self.allowAllKeys) && self.allowAllKeys)",message="spec.permissions: a prefix of \"/\" or \"\" gives every key; set spec.allowAllKeys: true to mean it"
// +kubebuilder:validation:XValidation:rule="(has(self.password) && self.password) == (has(oldSelf.password) && oldSelf.password)",message="spec.password cannot change: etcd cannot give a password to a user made without one; create another EtcdUser"
type EtcdUserSpec struct {
	// ClusterName is the EtcdCluster the user belongs to, in the same
	// namespace. It cannot change.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=35
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="spec.clusterName must name an EtcdCluster: a lowercase letter, then lowercase letters, digits and '-', at most 35 characters"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.clusterName cannot change: create another EtcdUser"
	ClusterName string `json:"clusterName"`

	// Permissions are the key prefixes the user may read or read and
	// write, each prefix once. Changing them changes the user's role in
	// place.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=prefix
	Permissions []KeyPermission `json:"permissions"`

	// AllowAllKeys allows a prefix of "/" or "" in permissions, which
	// covers every key (every key Kubernetes writes, for "/"). The user is
	// still not root: it cannot manage users, roles or the cluster.
	// +optional
	AllowAllKeys bool `json:"allowAllKeys,omitempty"`

	// Password also gives the user a generated password, in the key
	// "password" of its Secret. The client certificate is always issued:
	// the members require one from every client when authentication is on.
	// It cannot change once the user exists.
	// +optional
	Password bool `json:"password,omitempty"`
}

// EtcdUserStatus is what the operator made for the user.
type EtcdUserStatus struct {
	// Conditions: Ready (True once the user, its role and its Secret are
	// as the spec says).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SecretName holds what a client needs: tls.crt and tls.key (the
	// user's certificate), ca.crt (the CA that signs the members' serving
	// certificate) and, with spec.password, password.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// UserName is the user's name in etcd, the certificate's common name.
	// +optional
	UserName string `json:"userName,omitempty"`
	// RoleName is the user's one role in etcd.
	// +optional
	RoleName string `json:"roleName,omitempty"`
	// NotAfter is when the user's certificate expires.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// RenewAt is when the operator renews it.
	// +optional
	RenewAt *metav1.Time `json:"renewAt,omitempty"`
	// AppliedSecretVersion is the resourceVersion of the Secret whose
	// password etcd has, with spec.password.
	// +optional
	AppliedSecretVersion string `json:"appliedSecretVersion,omitempty"`
}

// EtcdUser is a client of an EtcdCluster with the least privilege it
// needs: its own user and role in etcd, limited to some key prefixes. Its
// name is the user's name in etcd and the common name of its certificate.
// +kubebuilder:validation:XValidation:rule="self.metadata.name != 'root'",message="metadata.name of an EtcdUser cannot be root: root is etcd's administrator, which the operator keeps for itself"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name of an EtcdUser must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters): it names the user's role and Secret"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdu,categories=raftsman
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.status.secretName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdUser struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdUserSpec   `json:"spec"`
	Status EtcdUserStatus `json:"status,omitempty"`
}

// EtcdUserList is a list of EtcdUsers.
// +kubebuilder:object:root=true
type EtcdUserList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdUser `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdUser{}, &EtcdUserList{})
}
