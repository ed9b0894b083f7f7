package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// InitialClusterState is how a member's etcd starts on an empty data directory.
// +kubebuilder:validation:Enum=New;Existing
type InitialClusterState string

const (
	// InitialClusterStateNew bootstraps a brand-new cluster together with the
	// other initial members. Only members created before the cluster formed
	// have it, and only their first Pod uses it: every later Pod of the
	// member joins the cluster that exists by then.
	InitialClusterStateNew InitialClusterState = "New"
	// InitialClusterStateExisting joins a cluster that already runs, as a
	// member that was added with the Membership API first.
	InitialClusterStateExisting InitialClusterState = "Existing"
)

// EtcdMemberSpec is everything the Pod of one etcd member needs. The cluster
// controller writes it; the member controller builds the Pod and PVC from it.
// +kubebuilder:validation:XValidation:rule="self.clusterName == oldSelf.clusterName",message="spec.clusterName cannot change"
// +kubebuilder:validation:XValidation:rule="self.peerURL == oldSelf.peerURL",message="spec.peerURL cannot change: a member's peer URL is its identity in etcd"
// +kubebuilder:validation:XValidation:rule="oldSelf.initialClusterState != 'Existing' || self.initialClusterState == 'Existing'",message="spec.initialClusterState cannot go back to New: a member of a formed cluster never bootstraps a new one"
type EtcdMemberSpec struct {
	// ClusterName is the EtcdCluster this member belongs to.
	ClusterName string `json:"clusterName"`

	// Version of etcd, like 3.6.16.
	Version string `json:"version"`

	// Image is the etcd image to run.
	Image string `json:"image"`

	// Storage of the member's data directory. Its StorageClass and medium
	// are those of the volume it was made with, and its size only grows:
	// the cluster moves to other storage by replacing members.
	// +kubebuilder:validation:XValidation:rule="!has(oldSelf.storageClassName) || (has(self.storageClassName) && self.storageClassName == oldSelf.storageClassName)",message="spec.storage.storageClassName cannot change once set: a member's volume keeps its class (the cluster replaces members to move to another)"
	// +kubebuilder:validation:XValidation:rule="!has(oldSelf.size) || !has(self.size) || !(size(string(self.size)) <= 24 && string(self.size).matches('^[0-9]{1,18}(\\\\.[0-9]{1,9})?([KMGTPE]i|[kMGTPE]|[eE][0-9]{1,2})?$')) || size(string(oldSelf.size)) > 24 || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="spec.storage.size may grow but never shrink: a member's volume cannot (the cluster replaces members to move to smaller ones)"
	// +kubebuilder:validation:XValidation:rule="(has(self.medium) && self.medium == 'Memory') == (has(oldSelf.medium) && oldSelf.medium == 'Memory')",message="spec.storage.medium cannot change: a member's data stays where it is (the cluster replaces members to move to another medium)"
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// InitialClusterState is New for the members that bootstrap a cluster
	// together and Existing for members added later.
	InitialClusterState InitialClusterState `json:"initialClusterState"`

	// InitialCluster is etcd's --initial-cluster: name=peerURL pairs of the
	// members this one starts with.
	InitialCluster string `json:"initialCluster"`

	// ClusterToken is etcd's --initial-cluster-token, unique per EtcdCluster.
	ClusterToken string `json:"clusterToken"`

	// PeerURL is the URL other members reach this one at.
	PeerURL string `json:"peerURL"`

	// ClientURL is the URL clients reach this member at.
	ClientURL string `json:"clientURL"`

	// Resources of the etcd container.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// PodTemplate holds what is copied into the member's Pod.
	// +optional
	PodTemplate PodTemplate `json:"podTemplate,omitempty"`

	// Options are etcd settings.
	// +optional
	Options EtcdOptions `json:"options,omitempty"`

	// TLS names the Secrets the member mounts; nil when TLS is disabled.
	// +optional
	TLS *MemberTLS `json:"tls,omitempty"`

	// ForceNewCluster, set by the cluster controller only while it recovers
	// a cluster that lost its quorum from this member, starts etcd with
	// --force-new-cluster: the member restarts alone, from its own data, as
	// a one-member cluster. It is cleared (and the Pod restarted without
	// it) as soon as etcd answers as that one member.
	// +optional
	ForceNewCluster bool `json:"forceNewCluster,omitempty"`

	// MaxLearners is etcd's --max-learners (etcd 3.6 and later): how many
	// learners the cluster may hold at once. etcd checks it on every member
	// as it applies a membership change, so all members must agree: the
	// cluster controller sets the same value on every member (new members
	// from creation, running ones through one rollout) and adds more than
	// one learner at a time only once every member runs with it. 0: the
	// flag is not given, and etcd allows one learner.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=8
	MaxLearners int32 `json:"maxLearners,omitempty"`

	// Fenced, set by the cluster controller on every other member before
	// it forces one with --force-new-cluster in a quorum recovery, stops
	// this member's Pod and keeps it stopped (its volume kept): the members
	// left behind can then never form a quorum of their own beside the
	// forced one and acknowledge writes it does not have. The member
	// controller reports Ready reason Fenced once no Pod of the member
	// runs. Members left behind are released afterwards; a recovery that
	// stops before forcing clears it.
	// +optional
	Fenced bool `json:"fenced,omitempty"`

	// Drained, set by the cluster controller while it defragments the
	// member, takes the member's Pod out of the client Service (its label
	// etcd.raftsman.io/serving turns "false"), so that new client
	// connections go to the other members. It restarts nothing.
	// +optional
	Drained bool `json:"drained,omitempty"`

	// AgentImage is the operator's image: an init container of each member
	// Pod runs its binary to check, before etcd starts, that the data
	// directory is this member's and is there if the member ran before.
	// Empty: no check (members made before the check existed, until their
	// next rollout).
	// +optional
	AgentImage string `json:"agentImage,omitempty"`

	// Restore, on the one member that bootstraps a restored cluster, is the
	// snapshot its data directory is made from before etcd first starts.
	// +optional
	Restore *MemberRestore `json:"restore,omitempty"`

	// DeletionPolicy Retain, set by the cluster controller when a cluster
	// with spec.deletionPolicy Retain is deleted, makes the member
	// controller release the member's PVC (no owner reference, labelled
	// etcd.raftsman.io/retained-from) so that it outlives the member. It
	// reports that with the VolumeRetained condition.
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// MemberRestore is the snapshot a member's data directory is restored from.
type MemberRestore struct {
	// Destination holds the snapshot.
	Destination BackupDestination `json:"destination"`
	// Key of the snapshot in the destination.
	Key string `json:"key"`
	// SHA256 the snapshot must have; checked again before the restore.
	SHA256 string `json:"sha256"`
	// AgentImage is the operator's image, whose binary fetches the snapshot
	// and runs etcdutl in the member's Pod.
	AgentImage string `json:"agentImage"`
}

// EtcdMemberStatus is the observed state of one member.
type EtcdMemberStatus struct {
	// MemberID is the etcd member ID in hexadecimal, once etcd knows the member.
	// +optional
	MemberID string `json:"memberID,omitempty"`

	// Role is Voter or Learner.
	// +optional
	Role MemberRole `json:"role,omitempty"`

	// PodName is the member's Pod.
	// +optional
	PodName string `json:"podName,omitempty"`

	// PVCName is the member's PersistentVolumeClaim, set once it was created.
	// A member whose PVC is gone after that has lost its data and is replaced,
	// never restarted on an empty volume.
	// +optional
	PVCName string `json:"pvcName,omitempty"`

	// Conditions: Registered (cluster controller) and Ready (member controller).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// EtcdMember is one member of an etcd cluster. The operator creates it; it
// owns the member's Pod and PVC.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdm,categories=raftsman
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.status.role`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Member ID",type=string,JSONPath=`.status.memberID`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdMemberSpec   `json:"spec"`
	Status EtcdMemberStatus `json:"status,omitempty"`
}

// EtcdMemberList is a list of EtcdMembers.
// +kubebuilder:object:root=true
type EtcdMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdMember `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdMember{}, &EtcdMemberList{})
}
