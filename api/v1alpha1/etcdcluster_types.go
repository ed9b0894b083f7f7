package v1alpha1

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxStatusMembers bounds status.members, so that the rules that read it
// have a cost the API server can bound.
const MaxStatusMembers = 64

// EtcdClusterSpec is the desired state of an etcd cluster.
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.auth.enabled) || !self.auth.enabled || ((!has(self.tls.disabled) || !self.tls.disabled) && (!has(self.tls.client.mutual) || self.tls.client.mutual))",message="spec.auth.enabled needs TLS with client certificates (spec.tls.client.mutual, the default): the operator acts as root with its client certificate"
// +kubebuilder:validation:XValidation:rule="!has(self.suspend) || !self.suspend || !has(self.storage) || !has(self.storage.medium) || self.storage.medium != 'Memory'",message="spec.suspend cannot be set on a cluster with spec.storage.medium Memory: its data lives only as long as its Pods; take a backup and delete the cluster instead"
// +kubebuilder:validation:XValidation:rule="!self.version.matches('^3\\\\.[7-9]\\\\.') || !has(self.options) || !has(self.options.extraArgs) || self.options.extraArgs.all(k, !k.startsWith('experimental-'))",message="spec.options.extraArgs cannot set experimental- flags with etcd 3.7 or later: 3.7 removed them and would not start. Use the names 3.6 gave them (for example corrupt-check-time for experimental-corrupt-check-time)"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap) && (!has(self.bootstrap) || self.bootstrap == oldSelf.bootstrap)",message="spec.bootstrap cannot change: it only says how a new cluster starts"
// +kubebuilder:validation:XValidation:rule="!has(self.options) || !has(self.options.quotaBackendBytes) || !has(self.storage) || !has(self.storage.size) || !(size(string(self.storage.size)) <= 24 && string(self.storage.size).matches('^[0-9]{1,18}(\\\\.[0-9]{1,9})?([KMGTPE]i|[kMGTPE]|[eE][0-9]{1,2})?$')) || quantity(string(self.storage.size)).asApproximateFloat() > double(self.options.quotaBackendBytes == 0 ? 2147483648 : self.options.quotaBackendBytes)",message="spec.options.quotaBackendBytes (0 is etcd's default, 2 GiB) must be less than spec.storage.size (1Gi by default): the database would fill the volume before etcd raises its NOSPACE alarm, and the WAL and a defragmentation need room beside it. Leave it unset for the default (see docs/maintenance.md)"
type EtcdClusterSpec struct {
	// Replicas is the number of etcd members. Odd numbers tolerate the most
	// failures for their size; an even number is allowed and the status warns.
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Version is the etcd version to run, like 3.6.16. Changing it rolls
	// the members over one at a time: patch versions freely, minor versions
	// one at a time in either direction (see docs/upgrades.md).
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:XValidation:rule="self.matches('^3\\\\.[5-9]\\\\.[0-9]+$')",message="spec.version must be an etcd release like 3.6.16 (3.5 or newer, without a leading v)"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^3\\\\.5\\\\.[0-9]+$') || self.matches('^3\\\\.5\\\\.(1[1-9]|[2-9][0-9]|[1-9][0-9][0-9]+)$')",message="spec.version 3.5 must be 3.5.11 or later: earlier 3.5 releases lack the /livez and /readyz endpoints the member Pods are probed on"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^3\\\\.[5-9]\\\\.[0-9]+$') || !oldSelf.matches('^3\\\\.[5-9]\\\\.[0-9]+$') || (int(self.substring(2, 3)) <= int(oldSelf.substring(2, 3)) + 1 && int(oldSelf.substring(2, 3)) <= int(self.substring(2, 3)) + 1)",messageExpression="'spec.version cannot go from ' + oldSelf + ' to ' + self + ' in one step: etcd changes one minor version at a time. Set ' + (self > oldSelf ? {'5': '3.6', '6': '3.7', '7': '3.8', '8': '3.9'} : {'6': '3.5', '7': '3.6', '8': '3.7', '9': '3.8'})[oldSelf.substring(2, 3)] + '.x first, wait until status.version shows it, then go on'"
	Version string `json:"version"`

	// Image overrides the etcd image. By default the operator runs
	// <repository>:v<version>, the repository being an operator setting.
	// The image must hold etcd in /usr/local/bin like the upstream image.
	// +optional
	Image string `json:"image,omitempty"`

	// Storage of each member's data directory. A larger size grows every
	// volume online. Another storageClassName, a smaller size or another
	// medium replaces the members one at a time, with the quorum kept: a
	// new member on a new volume joins as a learner and is promoted, then
	// an old one is removed from etcd and its volume deleted (kept under
	// deletionPolicy Retain); the leader goes last.
	// +kubebuilder:default={}
	// +optional
	Storage StorageSpec `json:"storage,omitempty"`

	// Resources of the etcd container.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// PodTemplate holds what the operator copies into every member Pod.
	// +optional
	PodTemplate PodTemplate `json:"podTemplate,omitempty"`

	// Options are etcd settings.
	// +optional
	Options EtcdOptions `json:"options,omitempty"`

	// TLS of peer and client connections: on by default, with certificates
	// from a CA the operator keeps for the cluster.
	// +kubebuilder:default={}
	// +optional
	TLS TLSSpec `json:"tls"`

	// Auth turns on etcd's user authentication.
	// +optional
	Auth AuthSpec `json:"auth,omitempty"`

	// Suspend stops every member's Pod and keeps every EtcdMember and volume:
	// false starts the same members again, with their data and identities.
	// A final backup is taken first when spec.backup is set.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Backup schedules snapshots of the cluster.
	// +optional
	Backup *ClusterBackupSpec `json:"backup,omitempty"`

	// Bootstrap says how a new cluster starts: empty, or restored from a
	// snapshot. It cannot change.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// DeletionPolicy says what happens to the members' volumes when the
	// EtcdCluster is deleted: Delete (the default) deletes them with the
	// members; Retain keeps every member's PVC, labelled
	// etcd.raftsman.io/retained-from=<cluster>, for a person to restore from
	// or delete. Scaling down always deletes the removed member's volume.
	// +kubebuilder:default=Delete
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// Recovery says what the operator does when etcd loses its quorum.
	// +optional
	Recovery RecoverySpec `json:"recovery,omitempty"`

	// Maintenance says when the operator defragments the members.
	// +kubebuilder:default={}
	// +optional
	Maintenance MaintenanceSpec `json:"maintenance,omitempty"`
}

// MaintenanceSpec is the upkeep the operator does on a running cluster.
type MaintenanceSpec struct {
	// Defrag says when members are defragmented.
	// +kubebuilder:default={}
	// +optional
	Defrag DefragPolicy `json:"defrag,omitempty"`
}

// DefragPolicy says when a member's database file is defragmented, which
// gives the free pages compaction left back to the file system. A member
// is defragmented when the schedule fires, or when the free space in its
// database file reaches both thresholds, whichever comes first. Members go
// one at a time, each taken out of the client Service first; followers
// first, the leader last after leadership moved away. A NOSPACE alarm is
// repaired (compaction, defragmentation, disarm) even when this is
// disabled.
type DefragPolicy struct {
	// Disabled turns scheduled and threshold defragmentation off.
	// +optional
	Disabled bool `json:"disabled,omitempty"`
	// Schedule defragments every member when it fires, whatever its free
	// space. Empty: the thresholds alone decide.
	// +optional
	Schedule CronSchedule `json:"schedule,omitempty"`
	// MinFreePercent is the share of a member's database file that must be
	// free before the thresholds defragment it (default 50).
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	MinFreePercent *int32 `json:"minFreePercent,omitempty"`
	// MinFreeBytes is how much of a member's database file must be free
	// before the thresholds defragment it (default 64Mi), so that small
	// databases are not defragmented for little gain.
	// +kubebuilder:default="64Mi"
	// +kubebuilder:validation:XValidation:rule="(size(string(self)) <= 24 && string(self).matches('^[0-9]{1,18}(\\\\.[0-9]{1,9})?([KMGTPE]i|[kMGTPE]|[eE][0-9]{1,2})?$')) && quantity(string(self)).isInteger()",message="spec.maintenance.defrag.minFreeBytes must be a whole number of bytes like 64Mi (digits, then Ki, Mi, Gi, k, M, G or an exponent of at most 2 digits; at most 24 characters), not negative"
	// +optional
	MinFreeBytes *resource.Quantity `json:"minFreeBytes,omitempty"`
}

// DeletionPolicy is what happens to the members' volumes when their cluster
// is deleted.
// +kubebuilder:validation:Enum=Delete;Retain
type DeletionPolicy string

const (
	// DeletionPolicyDelete deletes the volumes with the cluster.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyRetain keeps the volumes when the cluster is deleted.
	DeletionPolicyRetain DeletionPolicy = "Retain"
)

// StorageMedium says where a member keeps its data.
// +kubebuilder:validation:Enum="";Memory
type StorageMedium string

const (
	// StorageMediumDefault keeps data on a PersistentVolumeClaim.
	StorageMediumDefault StorageMedium = ""
	// StorageMediumMemory keeps data in a tmpfs emptyDir: it is lost when a
	// member's Pod goes, and the member is then replaced.
	StorageMediumMemory StorageMedium = "Memory"
)

// ResourceRequirements are the etcd container's requests and limits:
// corev1.ResourceRequirements without claims (member Pods declare no
// resource claims), at most 8 resources each, of the names a container
// may ask for. Each quantity is checked by a bounded pattern that only
// text Go decodes matches (Quantity); one the API server would refuse in a
// Pod (a request above its limit) is found by the member controller's dry
// run before any Pod goes, and reported (PodRejected): a rule comparing
// them here would exceed the CRD's validation cost budget.
type ResourceRequirements struct {
	// Limits of the etcd container.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'] || k.startsWith('hugepages-') || (k.contains('/') && !k.startsWith('kubernetes.io/') && !k.startsWith('requests.')))",message="spec.resources.limits may name cpu, memory, ephemeral-storage, hugepages-<size> and extended resources <domain>/<name>"
	// +optional
	Limits ResourceList `json:"limits,omitempty"`
	// Requests of the etcd container.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['cpu', 'memory', 'ephemeral-storage'] || k.startsWith('hugepages-') || (k.contains('/') && !k.startsWith('kubernetes.io/') && !k.startsWith('requests.')))",message="spec.resources.requests may name cpu, memory, ephemeral-storage, hugepages-<size> and extended resources <domain>/<name>"
	// +optional
	Requests ResourceList `json:"requests,omitempty"`
}

// ResourceList is a set of resource quantities by name.
type ResourceList map[corev1.ResourceName]Quantity

// Quantity is a resource quantity like 500m, 1Gi or 2, as text or a whole
// number. Text is checked at admission by a bounded pattern, before
// anything parses it: at most 24 characters, digits, an optional fraction,
// then a unit or an exponent of at most 2 digits, not negative. The API
// server's own quantity pattern lets through text Go cannot decode
// ("1e1.5") or costs seconds to parse ("1e-4000000"). Decoding fails on a
// value Go cannot parse (one stored before this rule), which makes the
// object undecodable: reported, and left alone (see docs/security.md).
// +kubebuilder:validation:XIntOrString
// +kubebuilder:validation:Type=""
// +kubebuilder:validation:MaxLength=24
// +kubebuilder:validation:Pattern=`^[0-9]{1,18}([.][0-9]{1,9})?([KMGTPE]i|[numkMGTPE]|[eE][0-9]{1,2})?$`
type Quantity string

// UnmarshalJSON reads a quantity written as text or as a number, and fails
// on one Go cannot parse.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	text := strings.TrimSpace(string(b))
	if strings.HasPrefix(text, `"`) {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
	}
	if _, err := resource.ParseQuantity(text); err != nil {
		return fmt.Errorf("resource quantity %q: %w", text, err)
	}
	*q = Quantity(text)
	return nil
}

// Core is l as the Kubernetes type; nil when empty.
func (l ResourceList) Core() corev1.ResourceList {
	if len(l) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(l))
	for k, v := range l {
		// Decoding checked that it parses.
		out[k] = resource.MustParse(string(v))
	}
	return out
}

// Core is r as the Kubernetes type.
func (r ResourceRequirements) Core() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Limits: r.Limits.Core(), Requests: r.Requests.Core()}
}

// StorageSpec is the storage of each member.
type StorageSpec struct {
	// Size of each member's volume (or tmpfs limit for Memory), at least
	// 128Mi: etcd preallocates its write-ahead log in files of 64 MiB and
	// needs room for the next one and the database beside it.
	// +kubebuilder:default="1Gi"
	// +kubebuilder:validation:XValidation:rule="(size(string(self)) <= 24 && string(self).matches('^[0-9]{1,18}(\\\\.[0-9]{1,9})?([KMGTPE]i|[kMGTPE]|[eE][0-9]{1,2})?$')) && quantity(string(self)).compareTo(quantity('128Mi')) >= 0",message="spec.storage.size must be a size like 1Gi or 512Mi (digits, an optional fraction, then Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E or an exponent of at most 2 digits; at most 24 characters) of at least 128Mi: etcd preallocates 64 MiB write-ahead log files and needs room for the next one and the database beside them"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the member volumes; the default class when empty.
	// Setting another replaces the members onto volumes of that class;
	// removing it leaves the running members where they are.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.storage.storageClassName must name a StorageClass: lowercase letters, digits, '-' and '.', at most 253 characters"
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// Medium is "" for a PersistentVolumeClaim or Memory for tmpfs.
	// +optional
	Medium StorageMedium `json:"medium,omitempty"`
}

// PodTemplate holds the parts of a member Pod a user may set. Each field is
// checked at admission in the terms the API server checks a Pod's (label
// keys and values, tolerations, a priority class name), so that a spec the
// API server would refuse later never reaches a member; what CEL cannot
// check cheaply (affinity terms, topology spread constraints, requests
// above limits) is refused by the server-side dry run of the member's Pod
// (Ready PodRejected).
type PodTemplate struct {
	// Metadata adds labels and annotations to member Pods.
	// +optional
	Metadata PodMetadata `json:"metadata,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// Tolerations of member Pods, as in a Pod's spec.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	Tolerations []Toleration `json:"tolerations,omitempty"`
	// NodeSelector of member Pods: label keys and values.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 253)",message="spec.podTemplate.nodeSelector keys must be label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit"
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// PriorityClassName of member Pods; the PriorityClass must exist.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.podTemplate.priorityClassName must name a PriorityClass: lowercase letters, digits, '-' and '.', at most 253 characters"
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// ExtraArgValue is the value of an etcd flag in spec.options.extraArgs.
// +kubebuilder:validation:MaxLength=1024
type ExtraArgValue string

// LabelValue is a label value as Kubernetes accepts it: at most 63
// characters, letters, digits, '-', '_' and '.', starting and ending with a
// letter or digit, or empty.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
type LabelValue string

// AnnotationValue is an annotation value. Kubernetes bounds a Pod's
// annotations to 256 KiB in all; at most 64 of these, each at most 3072
// characters with a key of at most 317, stay under it with room for the
// operator's own.
// +kubebuilder:validation:MaxLength=3072
type AnnotationValue string

// Toleration is a toleration of member Pods, as in a Pod's spec, checked at
// admission as the API server checks a Pod's.
// +kubebuilder:validation:XValidation:rule="has(self.key) && size(self.key) > 0 || (has(self.operator) && self.operator == 'Exists')",message="spec.podTemplate.tolerations: a toleration without a key must have operator Exists (it tolerates every taint)"
// +kubebuilder:validation:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="spec.podTemplate.tolerations: a toleration with operator Exists has no value"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",message="spec.podTemplate.tolerations: tolerationSeconds needs effect NoExecute"
type Toleration struct {
	// Key of the taint tolerated; empty with operator Exists tolerates
	// every taint.
	// +optional
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="size(self) == 0 || (self.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && self.indexOf('/') <= 253)",message="spec.podTemplate.tolerations key must be a taint key: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit"
	Key string `json:"key,omitempty"`
	// Operator is Equal (the default) or Exists.
	// +optional
	// +kubebuilder:validation:Enum=Equal;Exists
	Operator corev1.TolerationOperator `json:"operator,omitempty"`
	// Value of the taint, with operator Equal.
	// +optional
	Value LabelValue `json:"value,omitempty"`
	// Effect tolerated: NoSchedule, PreferNoSchedule or NoExecute; every
	// effect when empty.
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect corev1.TaintEffect `json:"effect,omitempty"`
	// TolerationSeconds, with effect NoExecute, is how long the Pod stays
	// on a node once the taint is added.
	// +optional
	TolerationSeconds *int64 `json:"tolerationSeconds,omitempty"`
}

// PodMetadata is the metadata a user may add to member Pods.
type PodMetadata struct {
	// Labels of member Pods. Labels under etcd.raftsman.io/ and
	// app.kubernetes.io/name, instance and managed-by are the operator's
	// (its selectors use them) and are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 253)",message="spec.podTemplate.metadata.labels keys must be label keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.raftsman.io/') && !(k in ['app.kubernetes.io/name', 'app.kubernetes.io/instance', 'app.kubernetes.io/managed-by']))",message="spec.podTemplate.metadata.labels cannot set labels under etcd.raftsman.io/, nor app.kubernetes.io/name, instance or managed-by: the operator sets them on member Pods and selects them by those"
	Labels map[string]LabelValue `json:"labels,omitempty"`
	// Annotations of member Pods: at most 64, each value at most 3072
	// characters. Annotations under etcd.raftsman.io/ are the operator's and
	// are refused.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && k.indexOf('/') <= 253)",message="spec.podTemplate.metadata.annotations keys must be annotation keys: an optional DNS subdomain prefix of at most 253 characters and '/', then a name of at most 63 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('etcd.raftsman.io/'))",message="spec.podTemplate.metadata.annotations cannot set annotations under etcd.raftsman.io/: the operator sets them on member Pods"
	Annotations map[string]AnnotationValue `json:"annotations,omitempty"`
}

// EtcdOptions are etcd settings. Each maps to the etcd flag of the same name.
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompactionRetention) || !has(self.autoCompactionMode) || self.autoCompactionMode != 'revision' || self.autoCompactionRetention.matches('^[0-9]{1,18}$')",message="spec.options.autoCompactionRetention must be a whole number of revisions like 1000 when spec.options.autoCompactionMode is revision"
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompactionRetention) || (has(self.autoCompactionMode) && self.autoCompactionMode == 'revision') || (self.autoCompactionRetention.matches('^[0-9]{1,7}$') && int(self.autoCompactionRetention) <= 2562047) || (self.autoCompactionRetention.matches('^([0-9]+([.][0-9]+)?(ms|s|m|h))+$') && duration(self.autoCompactionRetention) >= duration('0s'))",message="spec.options.autoCompactionRetention must be whole hours like 24 (at most 2562047) or a duration like 1h30m in h, m, s or ms when spec.options.autoCompactionMode is periodic, etcd's default"
// +kubebuilder:validation:XValidation:rule="(has(self.electionTimeoutMillis) ? self.electionTimeoutMillis : 1000) >= 5 * (has(self.heartbeatIntervalMillis) ? self.heartbeatIntervalMillis : 100)",message="spec.options.electionTimeoutMillis must be at least 5 times spec.options.heartbeatIntervalMillis (etcd's defaults are 1000 and 100)"
type EtcdOptions struct {
	// QuotaBackendBytes is the backend size limit (--quota-backend-bytes).
	// Unset, the operator's default for the volume (see
	// docs/maintenance.md); 0 is etcd's own default, 2 GiB.
	// +kubebuilder:validation:Minimum=0
	// +optional
	QuotaBackendBytes *int64 `json:"quotaBackendBytes,omitempty"`

	// AutoCompactionMode is periodic or revision (--auto-compaction-mode).
	// +kubebuilder:validation:Enum=periodic;revision
	// +optional
	AutoCompactionMode string `json:"autoCompactionMode,omitempty"`

	// AutoCompactionRetention is how much history to keep
	// (--auto-compaction-retention): in periodic mode (etcd's default) whole
	// hours like "24" or a duration like "1h30m"; in revision mode a number
	// of revisions like "1000". etcd reads a number first and a duration
	// only when that fails, so the rules on EtcdOptions accept the same.
	// +kubebuilder:validation:MaxLength=32
	// +optional
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`

	// SnapshotCount is the number of committed transactions that trigger a
	// snapshot to disk (--snapshot-count).
	// +kubebuilder:validation:Minimum=1
	// +optional
	SnapshotCount *int64 `json:"snapshotCount,omitempty"`

	// HeartbeatIntervalMillis is the raft heartbeat interval (--heartbeat-interval).
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=5000
	// +optional
	HeartbeatIntervalMillis *int32 `json:"heartbeatIntervalMillis,omitempty"`

	// ElectionTimeoutMillis is the raft election timeout (--election-timeout).
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=50000
	// +optional
	ElectionTimeoutMillis *int32 `json:"electionTimeoutMillis,omitempty"`

	// MaxRequestBytes is the largest request a client may send (--max-request-bytes).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRequestBytes *int32 `json:"maxRequestBytes,omitempty"`

	// ExtraArgs are further etcd flags, named without the leading dashes.
	// Only the flags in AllowedExtraArgs (limits.go; docs/configuration.md lists them)
	// may be set: flags the operator sets itself, flags with a typed field
	// above, and flags that change a member's identity, membership,
	// durability or security are refused, each with its own message. Values
	// are at most 1024 characters (ExtraArgValue): without that bound, a
	// rule that reads a value's characters is estimated at the longest
	// string a request can hold, over the API server's budget. The TLS
	// flags are checked as etcd checks them at start.
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-z0-9][a-z0-9-]*$'))",message="spec.options.extraArgs keys are flag names without leading dashes, like 'log-level': lowercase letters, digits and '-'; the flag's value goes in the value, not after '='"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['name', 'data-dir', 'wal-dir', 'initial-cluster', 'initial-cluster-state', 'initial-cluster-token', 'initial-advertise-peer-urls', 'advertise-client-urls', 'listen-peer-urls', 'listen-client-urls', 'listen-metrics-urls', 'listen-client-http-urls', 'discovery', 'discovery-srv', 'force-new-cluster', 'cert-file', 'key-file', 'trusted-ca-file', 'client-cert-auth', 'peer-cert-file', 'peer-key-file', 'peer-trusted-ca-file', 'peer-client-cert-auth', 'auto-tls', 'peer-auto-tls', 'config-file', 'peer-cert-allowed-hostname']))",message="spec.options.extraArgs cannot set a flag the operator owns (name, data and WAL dirs, initial-cluster*, listen and advertise URLs, discovery, force-new-cluster, TLS files and peer-cert-allowed-hostname, config-file): remove it"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['quota-backend-bytes', 'auto-compaction-mode', 'auto-compaction-retention', 'snapshot-count', 'heartbeat-interval', 'election-timeout', 'max-request-bytes']))",message="spec.options.extraArgs cannot set a flag that has a typed field in spec.options (quotaBackendBytes, autoCompactionMode, autoCompactionRetention, snapshotCount, heartbeatIntervalMillis, electionTimeoutMillis, maxRequestBytes): use the field"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.matches('^[a-z0-9][a-z0-9-]*$') || k in ['name', 'data-dir', 'wal-dir', 'initial-cluster', 'initial-cluster-state', 'initial-cluster-token', 'initial-advertise-peer-urls', 'advertise-client-urls', 'listen-peer-urls', 'listen-client-urls', 'listen-metrics-urls', 'listen-client-http-urls', 'discovery', 'discovery-srv', 'force-new-cluster', 'cert-file', 'key-file', 'trusted-ca-file', 'client-cert-auth', 'peer-cert-file', 'peer-key-file', 'peer-trusted-ca-file', 'peer-client-cert-auth', 'auto-tls', 'peer-auto-tls', 'config-file', 'peer-cert-allowed-hostname'] || k in ['quota-backend-bytes', 'auto-compaction-mode', 'auto-compaction-retention', 'snapshot-count', 'heartbeat-interval', 'election-timeout', 'max-request-bytes'] || k in ['log-level', 'logger', 'log-outputs', 'log-format', 'enable-log-rotation', 'log-rotation-config-json', 'max-txn-ops', 'max-concurrent-streams', 'max-snapshots', 'max-wals', 'backend-batch-interval', 'backend-batch-limit', 'backend-bbolt-freelist-type', 'raft-read-timeout', 'raft-write-timeout', 'grpc-keepalive-interval', 'grpc-keepalive-min-time', 'grpc-keepalive-timeout', 'experimental-compaction-batch-limit', 'compaction-batch-limit', 'experimental-compaction-sleep-interval', 'compaction-sleep-interval', 'experimental-bootstrap-defrag-threshold-megabytes', 'bootstrap-defrag-threshold-megabytes', 'experimental-snapshot-catchup-entries', 'snapshot-catchup-entries', 'experimental-warning-apply-duration', 'warning-apply-duration', 'experimental-warning-unary-request-duration', 'warning-unary-request-duration', 'experimental-watch-progress-notify-interval', 'watch-progress-notify-interval', 'experimental-memory-mlock', 'memory-mlock', 'experimental-txn-mode-write-with-shared-buffer', 'experimental-stop-grpc-service-on-defrag', 'experimental-initial-corrupt-check', 'experimental-corrupt-check-time', 'corrupt-check-time', 'experimental-compact-hash-check-enabled', 'experimental-compact-hash-check-time', 'compact-hash-check-time', 'metrics', 'enable-grpc-gateway', 'experimental-enable-distributed-tracing', 'enable-distributed-tracing', 'experimental-distributed-tracing-address', 'distributed-tracing-address', 'experimental-distributed-tracing-service-name', 'distributed-tracing-service-name', 'experimental-distributed-tracing-instance-id', 'distributed-tracing-instance-id', 'experimental-distributed-tracing-sampling-rate', 'distributed-tracing-sampling-rate', 'feature-gates', 'cipher-suites', 'tls-min-version', 'tls-max-version', 'auth-token-ttl', 'experimental-downgrade-check-time', 'downgrade-check-time', 'pre-vote', 'initial-election-tick-advance', 'experimental-enable-lease-checkpoint', 'experimental-enable-lease-checkpoint-persist'])",message="spec.options.extraArgs may set only the etcd flags on the allowlist (see docs/configuration.md: logging, limits and performance, corruption checks, metrics, tracing, feature-gates, TLS versions and ciphers): a flag that changes a member's identity, membership, durability or security, or that etcd does not know, is refused"
	// +kubebuilder:validation:XValidation:rule="!('tls-min-version' in self) || self['tls-min-version'] in ['TLS1.2', 'TLS1.3']",message="spec.options.extraArgs tls-min-version must be TLS1.2 or TLS1.3, the versions etcd accepts"
	// +kubebuilder:validation:XValidation:rule="!('tls-max-version' in self) || size(self['tls-max-version']) == 0 || self['tls-max-version'] in ['TLS1.2', 'TLS1.3']",message="spec.options.extraArgs tls-max-version must be TLS1.2, TLS1.3 or empty (no maximum), the versions etcd accepts"
	// +kubebuilder:validation:XValidation:rule="!('tls-min-version' in self) || !('tls-max-version' in self) || self['tls-min-version'] != 'TLS1.3' || self['tls-max-version'] != 'TLS1.2'",message="spec.options.extraArgs tls-min-version TLS1.3 is above tls-max-version TLS1.2: etcd would not start"
	// +kubebuilder:validation:XValidation:rule="!('cipher-suites' in self) || !('tls-min-version' in self) || self['tls-min-version'] != 'TLS1.3'",message="spec.options.extraArgs cipher-suites cannot be set with tls-min-version TLS1.3: TLS 1.3 suites are not configurable, and etcd would not start"
	// +kubebuilder:validation:XValidation:rule="!('cipher-suites' in self) || self['cipher-suites'].matches('^(TLS_AES_128_GCM_SHA256|TLS_AES_256_GCM_SHA384|TLS_CHACHA20_POLY1305_SHA256|TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA|TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA|TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA|TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA|TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256|TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384|TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256|TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384|TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256|TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256|TLS_RSA_WITH_RC4_128_SHA|TLS_RSA_WITH_3DES_EDE_CBC_SHA|TLS_RSA_WITH_AES_128_CBC_SHA|TLS_RSA_WITH_AES_256_CBC_SHA|TLS_RSA_WITH_AES_128_CBC_SHA256|TLS_RSA_WITH_AES_128_GCM_SHA256|TLS_RSA_WITH_AES_256_GCM_SHA384|TLS_ECDHE_ECDSA_WITH_RC4_128_SHA|TLS_ECDHE_RSA_WITH_RC4_128_SHA|TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA|TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256|TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256)(,(TLS_AES_128_GCM_SHA256|TLS_AES_256_GCM_SHA384|TLS_CHACHA20_POLY1305_SHA256|TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA|TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA|TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA|TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA|TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256|TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384|TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256|TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384|TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256|TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256|TLS_RSA_WITH_RC4_128_SHA|TLS_RSA_WITH_3DES_EDE_CBC_SHA|TLS_RSA_WITH_AES_128_CBC_SHA|TLS_RSA_WITH_AES_256_CBC_SHA|TLS_RSA_WITH_AES_128_CBC_SHA256|TLS_RSA_WITH_AES_128_GCM_SHA256|TLS_RSA_WITH_AES_256_GCM_SHA384|TLS_ECDHE_ECDSA_WITH_RC4_128_SHA|TLS_ECDHE_RSA_WITH_RC4_128_SHA|TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA|TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256|TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256))*$')",message="spec.options.extraArgs cipher-suites must be a comma-separated list of Go's cipher suite names, like TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, the names etcd accepts"
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	ExtraArgs map[string]ExtraArgValue `json:"extraArgs,omitempty"`
}

// MemberRole is the raft role of a member as etcd reports it.
// +kubebuilder:validation:Enum=Voter;Learner
type MemberRole string

const (
	// RoleVoter is a full voting member.
	RoleVoter MemberRole = "Voter"
	// RoleLearner is a non-voting member catching up with the leader.
	RoleLearner MemberRole = "Learner"
)

// ClusterMemberStatus is one etcd member as the cluster controller last saw it.
type ClusterMemberStatus struct {
	// Name of the member (and of its EtcdMember and Pod).
	Name string `json:"name"`
	// ID is the etcd member ID in hexadecimal.
	// +optional
	ID string `json:"id,omitempty"`
	// Role is Voter or Learner.
	// +optional
	Role MemberRole `json:"role,omitempty"`
	// Version of etcd the member runs.
	// +optional
	Version string `json:"version,omitempty"`
	// Healthy is true when the member answered its last status request.
	Healthy bool `json:"healthy"`
	// Leader is true for the raft leader.
	// +optional
	Leader bool `json:"leader,omitempty"`
	// DBSize is the size of the member's database file in bytes, DBSizeInUse
	// the part of it that holds data (the rest is free pages a
	// defragmentation gives back), and Quota etcd's limit on DBSize
	// (--quota-backend-bytes), as of the last health check.
	// +optional
	DBSize int64 `json:"dbSize,omitempty"`
	// +optional
	DBSizeInUse int64 `json:"dbSizeInUse,omitempty"`
	// +optional
	Quota int64 `json:"quota,omitempty"`
}

// EtcdClusterStatus is the observed state of an etcd cluster.
type EtcdClusterStatus struct {
	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Available, Progressing and Degraded, and the conditions of
	// the other controllers (see conditions.go).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Replicas is the number of etcd members (voters and learners).
	// +optional
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of healthy voting members.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// Selector selects the member Pods; used by the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ClusterID is the etcd cluster ID in hexadecimal, set once the cluster
	// has formed. From then on no member bootstraps a new cluster.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// Version is the lowest etcd version the members run.
	// +optional
	Version string `json:"version,omitempty"`

	// TLS names the Secrets with the cluster's certificates.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`

	// Auth is the state of etcd's authentication.
	// +optional
	Auth *AuthStatus `json:"auth,omitempty"`

	// Backup is the state of scheduled backups.
	// +optional
	Backup *ClusterBackupStatus `json:"backup,omitempty"`

	// Restore is the snapshot a restored cluster starts from, once the
	// data controller found and checked it.
	// +optional
	Restore *RestoreStatus `json:"restore,omitempty"`

	// Members as etcd reports them, at most MaxStatusMembers (a cluster
	// has at most 9 voters and the member that replaces one).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Members []ClusterMemberStatus `json:"members,omitempty"`

	// Recovery is the last recovery from a lost quorum, if any.
	// +optional
	Recovery *RecoveryStatus `json:"recovery,omitempty"`

	// Alarms are the alarms etcd has raised (NOSPACE, CORRUPT), with the
	// member that raised each.
	// +optional
	Alarms []ClusterAlarm `json:"alarms,omitempty"`

	// Rollout is the rolling change under way, if any: members take the
	// spec's version, image, resources, Pod template, options and trusted
	// CAs one at a time.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// Maintenance is the defragmentation under way, if any, and the last
	// one of each member.
	// +optional
	Maintenance *MaintenanceStatus `json:"maintenance,omitempty"`
}

// MaintenanceStatus is the state of the cluster's upkeep.
type MaintenanceStatus struct {
	// Defrag is the defragmentation under way, if any.
	// +optional
	Defrag *DefragRun `json:"defrag,omitempty"`
	// LastScheduleTime is the scheduled time of the newest defragmentation
	// spec.maintenance.defrag.schedule started.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// Members holds the last defragmentation of each member.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []MemberDefragStatus `json:"members,omitempty"`
	// LastRequest is the last value of the etcd.raftsman.io/defrag
	// annotation a defragmentation started for.
	// +optional
	LastRequest string `json:"lastRequest,omitempty"`
}

// Why a defragmentation runs.
const (
	DefragForThreshold = "Threshold"
	DefragForSchedule  = "Schedule"
	DefragForNoSpace   = "NoSpace"
	// DefragForRequest: the etcd.raftsman.io/defrag annotation asked.
	DefragForRequest = "Requested"
)

// Defragmentation phases of the member being defragmented.
const (
	// DefragDraining: the member is being taken out of the client Service.
	DefragDraining = "Draining"
	// DefragDefragmenting: the operator asked etcd to defragment it.
	DefragDefragmenting = "Defragmenting"
	// DefragRestoring: done; the member goes back into the client Service.
	DefragRestoring = "Restoring"
)

// DefragRun is a defragmentation of some members, one at a time.
type DefragRun struct {
	// Reason is Threshold, Schedule, NoSpace or Requested.
	Reason string `json:"reason"`
	// Member is the member being defragmented now, in Phase.
	// +optional
	Member string `json:"member,omitempty"`
	// +optional
	Phase string `json:"phase,omitempty"`
	// Pending are the members still to defragment, in order.
	// +optional
	// +listType=atomic
	Pending []string `json:"pending,omitempty"`
	// StartedAt is when the run began; Since when the member's phase began.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Attempts counts the failed defragmentations of Member; after 3 it is
	// skipped in this run.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
	// CompactedRevision is the revision a NOSPACE repair compacted to.
	// +optional
	CompactedRevision int64 `json:"compactedRevision,omitempty"`
}

// MemberDefragStatus is the last defragmentation of one member.
type MemberDefragStatus struct {
	Name string `json:"name"`
	// Time the defragmentation finished.
	Time metav1.Time `json:"time"`
	// Reason is Threshold, Schedule, NoSpace or Requested.
	Reason string `json:"reason"`
	// SizeBefore and SizeAfter are the database file's size in bytes.
	SizeBefore int64 `json:"sizeBefore"`
	SizeAfter  int64 `json:"sizeAfter"`
	// ReclaimedBytes is SizeBefore - SizeAfter, or 0 when the file did
	// not shrink (a compact database can come out a page larger).
	ReclaimedBytes int64 `json:"reclaimedBytes"`
	// DurationMillis is how long etcd took to defragment.
	DurationMillis int64 `json:"durationMillis"`
}

// QuorumLossPolicy is what the operator does once etcd has lost its quorum.
// +kubebuilder:validation:Enum=Manual;Automatic
type QuorumLossPolicy string

const (
	// QuorumLossManual: the operator reports the loss and waits for the
	// etcd.raftsman.io/recover-quorum annotation.
	QuorumLossManual QuorumLossPolicy = "Manual"
	// QuorumLossAutomatic: once the loss has lasted quorumLossAfter and the
	// members gone do not answer either, the operator restarts the
	// reachable member with the highest raft index alone from its own data;
	// when every member has lost its data, it restores the newest Complete
	// EtcdBackup of the cluster.
	QuorumLossAutomatic QuorumLossPolicy = "Automatic"
)

// RecoverySpec is how the operator recovers from a lost quorum.
type RecoverySpec struct {
	// QuorumLoss is Manual (the default) or Automatic.
	// +kubebuilder:default=Manual
	// +optional
	QuorumLoss QuorumLossPolicy `json:"quorumLoss,omitempty"`
	// QuorumLossAfter is how long etcd must have had no quorum, and the
	// members gone not answered, before an Automatic recovery (default 5m).
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+(\\\\.[0-9]+)?(h|m|s|ms))+$') && duration(self) >= duration('30s')",message="spec.recovery.quorumLossAfter must be a duration like 5m in h, m, s or ms (no days), of at least 30s"
	// +optional
	QuorumLossAfter string `json:"quorumLossAfter,omitempty"`
}

// RecoveryStatus is what the last quorum recovery did.
type RecoveryStatus struct {
	// Phase: Forcing (the chosen member restarts alone from its data with
	// etcd's --force-new-cluster), Restoring (the members go, their volumes
	// kept, and a new cluster starts from a backup), Regrowing (the cluster
	// runs with one member; new members join as learners), Done.
	Phase string `json:"phase"`
	// Member the cluster restarted from, when it restarted from a member.
	// +optional
	Member string `json:"member,omitempty"`
	// Backup is the EtcdBackup the cluster was restored from, when it was
	// restored from a backup.
	// +optional
	Backup string `json:"backup,omitempty"`
	// Snapshot is the EtcdBackup of the chosen member taken before it was
	// forced (when spec.backup names a destination).
	// +optional
	Snapshot string `json:"snapshot,omitempty"`
	// ReplacedClusterID is the ID of the etcd cluster a restore from a
	// backup gives up, recorded once every member kept its volume and
	// before the first one goes: until then, a quorum that comes back
	// cancels the restore.
	// +optional
	ReplacedClusterID string `json:"replacedClusterID,omitempty"`
	// Revision and RaftIndex that member held when it was chosen, or the
	// revision of the backup. RaftIndex is etcd's uint64 as the int64
	// JSON and the API server hold (an index past 2^63 is not reached).
	Revision int64 `json:"revision"`
	// +optional
	RaftIndex int64 `json:"raftIndex,omitempty"`
	// Automatic: chosen by the operator (spec.recovery.quorumLoss
	// Automatic), else named by the annotation.
	// +optional
	Automatic bool `json:"automatic,omitempty"`
	// StartedAt and FinishedAt bound the recovery.
	StartedAt metav1.Time `json:"startedAt"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// Message says what was done and what was kept.
	// +optional
	Message string `json:"message,omitempty"`
}

// Recovery phases.
const (
	RecoveryForcing   = "Forcing"
	RecoveryRestoring = "Restoring"
	RecoveryRegrowing = "Regrowing"
	RecoveryDone      = "Done"
)

// ClusterAlarm is one alarm etcd reports.
type ClusterAlarm struct {
	// Type is NOSPACE or CORRUPT.
	Type string `json:"type"`
	// MemberID is the etcd member the alarm is about, in hexadecimal.
	MemberID string `json:"memberID"`
	// Member is that member's name, when it has an EtcdMember.
	// +optional
	Member string `json:"member,omitempty"`
}

// RolloutStatus is how far a rolling change has come.
type RolloutStatus struct {
	// Member is the member restarting with the new spec now.
	// +optional
	Member string `json:"member,omitempty"`
	// Since is when that member was given the new spec. A member not
	// healthy and caught up within the operator's rollout timeout stops
	// the rollout (Degraded, reason RolloutStuck).
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// Updated members run the new spec, out of Total.
	Updated int32 `json:"updated"`
	Total   int32 `json:"total"`
	// DowngradeTarget is the minor version ("3.5") the operator enabled
	// etcd's downgrade to; empty when no downgrade runs.
	// +optional
	DowngradeTarget string `json:"downgradeTarget,omitempty"`
	// SnapshottedFor is "3.7" once every member snapshotted before the
	// upgrade from 3.6 to 3.7: etcd 3.7 cannot replay the log entries
	// etcd 3.5 wrote, so no member may start it with any in its log.
	// +optional
	SnapshottedFor string `json:"snapshottedFor,omitempty"`
}

// EtcdCluster is an etcd cluster managed by Raftsman.
//
// Its name becomes a Service name and label values, and the start of longer
// names (see MaxClusterNameLength), hence the rules on it. They hold on
// creation only (optionalOldSelf): a cluster created before them can still be
// updated and deleted.
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || size(self.metadata.name) <= 35",message="metadata.name of an EtcdCluster is at most 35 characters: the final backup before a suspend is named <name>-suspend-<generation>, with up to 19 digits, and that name is a label value of at most 63 characters on the backup's Pods",optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.metadata.name.endsWith('-peer')",message="metadata.name of an EtcdCluster cannot end in -peer: cluster <name>'s peer Service is <name>-peer, so a cluster x-peer would share its client Service with cluster x",optionalOldSelf=true
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name of an EtcdCluster must be a DNS-1035 label: a lowercase letter, then lowercase letters, digits and '-', not ending in '-', no dots; it is the name of the cluster's Service",optionalOldSelf=true
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=etcd,categories=raftsman
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.spec.storage) || !has(oldSelf.spec.storage.size) || !has(self.spec.storage) || !has(self.spec.storage.size) || !(size(string(self.spec.storage.size)) <= 24 && string(self.spec.storage.size).matches('^[0-9]{1,18}(\\\\.[0-9]{1,9})?([KMGTPE]i|[kMGTPE]|[eE][0-9]{1,2})?$')) || string(self.spec.storage.size) == string(oldSelf.spec.storage.size) || (has(self.spec.options) && has(self.spec.options.quotaBackendBytes) && self.spec.options.quotaBackendBytes > 0) || !has(self.status) || !has(self.status.members) || size(self.status.members) == 0 || [quantity(string(self.spec.storage.size)).asApproximateFloat()].all(s, 2.0 * double(self.status.members.map(m, has(m.dbSize) ? m.dbSize : 0).max()) + (s / 2.0 < 402653184.0 ? s / 2.0 : 402653184.0) < s)",message="spec.storage.size may change only to a size whose default quota, (size - min(size/2, 384Mi)) / 2, the most the database may hold before etcd raises its NOSPACE alarm, is above every member's database (status.members[].dbSize): compact and defragment first (status.members[].dbSizeInUse is what a defragmentation keeps), or choose a larger size. A smaller size replaces the members one at a time by members on smaller volumes"
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Desired",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Suspended",type=string,JSONPath=`.status.conditions[?(@.type=="Suspended")].status`,priority=1
// +kubebuilder:printcolumn:name="Last Backup",type=date,JSONPath=`.status.backup.lastSuccessfulBackup.time`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdClusterSpec   `json:"spec"`
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdClusters.
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{})
}
