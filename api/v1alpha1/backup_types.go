package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupDestination is where snapshots are stored: an S3-compatible object
// store or a PersistentVolumeClaim, exactly one.
// +kubebuilder:validation:XValidation:rule="has(self.s3) != has(self.pvc)",message="a backup destination is exactly one of s3 or pvc"
type BackupDestination struct {
	// S3 is an S3-compatible object store.
	// +optional
	S3 *S3Destination `json:"s3,omitempty"`
	// PVC is a PersistentVolumeClaim in the cluster's namespace.
	// +optional
	PVC *PVCDestination `json:"pvc,omitempty"`
}

// S3Destination is a bucket and key prefix of an S3-compatible store.
type S3Destination struct {
	// Endpoint is the store's URL, like https://s3.eu-west-1.amazonaws.com:
	// http or https, a host name or IPv4 address and an optional port,
	// nothing else. The backup agent refuses any other URL, so the API
	// server refuses it first.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?([.][a-zA-Z0-9]([-a-zA-Z0-9]*[a-zA-Z0-9])?)*(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?/?$')",message="spec.s3.endpoint must be a URL http://host[:port] or https://host[:port], like https://s3.eu-west-1.amazonaws.com: a host name or IPv4 address, no path, query, user or fragment"
	Endpoint string `json:"endpoint"`
	// Bucket holds the snapshots; it must exist. Its name follows S3's
	// rules for bucket names, checked at admission.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9][a-z0-9.-]*[a-z0-9]$') && !self.contains('..') && !self.matches('^[0-9]+[.][0-9]+[.][0-9]+[.][0-9]+$')",message="spec.s3.bucket must be an S3 bucket name: 3 to 63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit, no '..', not an IP address"
	Bucket string `json:"bucket"`
	// Prefix is put before every key, like "etcd/": at most 512 characters,
	// so that every key stays under S3's 1024 bytes.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region of the bucket, like eu-west-1.
	// +kubebuilder:default="us-east-1"
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-a-zA-Z0-9_]*$`
	// +optional
	Region string `json:"region,omitempty"`
	// CredentialsSecretRef names a Secret in the cluster's namespace with the
	// keys accessKeyID and secretAccessKey. The operator never reads it: only
	// the backup Pods of that namespace mount it.
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.s3.credentialsSecretRef.name must name a Secret: lowercase letters, digits, '-' and '.', at most 253 characters"
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// ForcePathStyle addresses the bucket as endpoint/bucket instead of
	// bucket.endpoint (most self-hosted stores need it).
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// CASecretRef names a Secret with a ca.crt key to trust for an https
	// endpoint signed by a private CA.
	// +kubebuilder:validation:XValidation:rule="has(self.name) && size(self.name) <= 253 && self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.s3.caSecretRef.name must name a Secret: lowercase letters, digits, '-' and '.', at most 253 characters"
	// +optional
	CASecretRef *corev1.LocalObjectReference `json:"caSecretRef,omitempty"`
}

// PVCDestination is a folder of a PersistentVolumeClaim.
type PVCDestination struct {
	// ClaimName is the PersistentVolumeClaim, in the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="spec.pvc.claimName must name a PersistentVolumeClaim: lowercase letters, digits, '-' and '.', at most 253 characters"
	ClaimName string `json:"claimName"`
	// Path is a folder inside the volume.
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="spec.pvc.path is a relative folder without '..'"
	// +optional
	Path string `json:"path,omitempty"`
}

// ClusterBackupSpec schedules backups of a cluster.
type ClusterBackupSpec struct {
	// Schedule is when scheduled backups are taken (see CronSchedule).
	Schedule CronSchedule `json:"schedule"`
	// Retention says which scheduled backups are kept.
	// +kubebuilder:default={keepLast: 7}
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`
	// Destination of the snapshots.
	Destination BackupDestination `json:"destination"`
}

// BackupRetention says which backups of a schedule are kept; the newest
// complete backup is always kept.
type BackupRetention struct {
	// KeepLast keeps the newest N complete backups.
	// +kubebuilder:validation:Minimum=1
	// +optional
	KeepLast *int32 `json:"keepLast,omitempty"`
	// MaxAge deletes complete backups older than this, like 168h.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.backup.retention.maxAge must be a duration like 168h in h, m, s or ms (no days), of at most 2562047h"
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// BootstrapSpec says how a new cluster starts.
type BootstrapSpec struct {
	// Restore starts the cluster from a snapshot.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// RestoreSpec names the snapshot a new cluster starts from: an EtcdBackup,
// or an object in a destination.
// +kubebuilder:validation:XValidation:rule="has(self.backupName) != has(self.source)",message="spec.bootstrap.restore names exactly one of backupName or source"
type RestoreSpec struct {
	// BackupName is a Complete EtcdBackup in the cluster's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="spec.bootstrap.restore.backupName must name an EtcdBackup: lowercase letters, digits and '-', at most 63 characters"
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// Source is a snapshot in a destination, by key.
	// +optional
	Source *RestoreSource `json:"source,omitempty"`
}

// RestoreSource is a snapshot in a destination.
type RestoreSource struct {
	BackupDestination `json:",inline"`
	// Key is the object key (S3, without the prefix) or file path inside
	// the folder (PVC).
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
	// SHA256 the snapshot must have, in hex. When empty, the checksum the
	// operator recorded next to the snapshot is used; a snapshot without one
	// is refused.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{64})?$`
	// +optional
	SHA256 string `json:"sha256,omitempty"`
}

// BackupRecord is a complete backup, as recorded in a cluster's status.
type BackupRecord struct {
	// Name of the EtcdBackup.
	Name string `json:"name"`
	// Time the snapshot was taken.
	Time metav1.Time `json:"time"`
	// URI of the snapshot.
	URI string `json:"uri"`
	// Revision of etcd in the snapshot (at least; the revision when it began).
	Revision int64 `json:"revision"`
}

// ClusterBackupStatus is the state of a cluster's scheduled backups.
type ClusterBackupStatus struct {
	// LastScheduleTime is the scheduled time of the newest scheduled backup.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when the next scheduled backup is due.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
	// LastSuccessfulBackup is the newest Complete backup of the cluster.
	// +optional
	LastSuccessfulBackup *BackupRecord `json:"lastSuccessfulBackup,omitempty"`
}

// RestoreStatus is a checked snapshot a new cluster starts from.
type RestoreStatus struct {
	// Destination holds the snapshot.
	Destination BackupDestination `json:"destination"`
	// Key of the snapshot in the destination.
	Key string `json:"key"`
	// URI of the snapshot.
	URI string `json:"uri,omitempty"`
	// SHA256 the snapshot was checked to have.
	SHA256 string `json:"sha256"`
	// Size of the snapshot in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
}

// EtcdBackupSpec asks for one snapshot of a cluster.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an EtcdBackup's spec cannot change: create another EtcdBackup"
type EtcdBackupSpec struct {
	// ClusterName is the EtcdCluster to back up, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=35
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="spec.clusterName must name an EtcdCluster: a lowercase letter, then lowercase letters, digits and '-', at most 35 characters"
	ClusterName string `json:"clusterName"`
	// Member, when set, is the member to take the snapshot from, even while
	// the cluster is not Available: a member answers for a snapshot of its
	// own data without a quorum (for instance before recovering a lost
	// quorum from it). Unset: a healthy follower of an Available cluster.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="spec.member must name an EtcdMember of the cluster: a lowercase letter, then lowercase letters, digits and '-'"
	// +optional
	Member string `json:"member,omitempty"`
	// Destination of the snapshot.
	Destination BackupDestination `json:"destination"`
}

// EtcdBackupStatus is the result of a backup.
type EtcdBackupStatus struct {
	// Conditions: Complete (True once the snapshot is stored and checked)
	// and Failed (True when it cannot be taken; the message says why).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Key of the snapshot in the destination (without the S3 prefix).
	// +optional
	Key string `json:"key,omitempty"`
	// URI of the snapshot.
	// +optional
	URI string `json:"uri,omitempty"`
	// Size of the snapshot in bytes.
	// +optional
	Size int64 `json:"size,omitempty"`
	// SHA256 of the snapshot, in hex.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// Revision of etcd in the snapshot (at least; the revision when it began).
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// Member that served the snapshot.
	// +optional
	Member string `json:"member,omitempty"`
	// EtcdVersion of the member that served the snapshot.
	// +optional
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// StartTime is when the snapshot began.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the backup ended, complete or failed.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// EtcdBackup is one snapshot of an EtcdCluster, streamed to a destination.
// Its name is the value of a label on its agent Pods, hence the limits on
// it; they hold on creation only (optionalOldSelf), so that a backup
// created before them can still lose its finalizer.
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || (size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'))",message="metadata.name of an EtcdBackup must be a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters): it is the value of a label on the backup's Pods",optionalOldSelf=true
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdb,categories=raftsman
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Complete",type=string,JSONPath=`.status.conditions[?(@.type=="Complete")].status`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="URI",type=string,JSONPath=`.status.uri`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EtcdBackupSpec   `json:"spec"`
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// EtcdBackupList is a list of EtcdBackups.
// +kubebuilder:object:root=true
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdBackup{}, &EtcdBackupList{})
}

// CronSchedule is a cron expression (minute hour day-of-month month
// day-of-week, or @hourly, @daily, @every 6h), in UTC. It may start with
// CRON_TZ=UTC; other time zones are refused, as the operator's image may
// not have their rules. The rule's regex accepts only what the operator's
// parser (robfig/cron) accepts; it is built, and checked against the
// parser, by the tests in this package. @every is at least a minute: each
// run is work for the operator and etcd. A cron expression's runs start a
// little after their time, at an offset of the cluster's own (a hash of its
// namespace and name, below a tenth of the time between two runs and below
// 10 minutes), so that clusters sharing a schedule do not all start at
// once; @every runs count from the cluster's own times already.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=128
// +kubebuilder:validation:XValidation:rule="self.matches('^((CRON_TZ|TZ)=UTC )?(@(yearly|annually|monthly|weekly|daily|midnight|hourly)|@every ([0-9]{1,6}h([0-9]{1,7}m)?([0-9]{1,9}s)?|[0-9]{1,7}m([0-9]{1,9}s)?|[0-9]{1,9}s)|([*?]|(0?[0-9]|[1-5][0-9])|0?0-(0?[0-9]|[1-5][0-9])|0?1-(0?[1-9]|[1-5][0-9])|0?2-(0?[2-9]|[1-5][0-9])|0?3-(0?[3-9]|[1-5][0-9])|0?4-(0?[4-9]|[1-5][0-9])|0?5-(0?[5-9]|[1-5][0-9])|0?6-(0?[6-9]|[1-5][0-9])|0?7-(0?[7-9]|[1-5][0-9])|0?8-(0?[8-9]|[1-5][0-9])|0?9-(0?9|[1-5][0-9])|10-[1-5][0-9]|11-(1[1-9]|[2-5][0-9])|12-(1[2-9]|[2-5][0-9])|13-(1[3-9]|[2-5][0-9])|14-(1[4-9]|[2-5][0-9])|15-(1[5-9]|[2-5][0-9])|16-(1[6-9]|[2-5][0-9])|17-(1[7-9]|[2-5][0-9])|18-(1[8-9]|[2-5][0-9])|19-(19|[2-5][0-9])|20-[2-5][0-9]|21-(2[1-9]|[3-5][0-9])|22-(2[2-9]|[3-5][0-9])|23-(2[3-9]|[3-5][0-9])|24-(2[4-9]|[3-5][0-9])|25-(2[5-9]|[3-5][0-9])|26-(2[6-9]|[3-5][0-9])|27-(2[7-9]|[3-5][0-9])|28-(2[8-9]|[3-5][0-9])|29-(29|[3-5][0-9])|30-[3-5][0-9]|31-(3[1-9]|[4-5][0-9])|32-(3[2-9]|[4-5][0-9])|33-(3[3-9]|[4-5][0-9])|34-(3[4-9]|[4-5][0-9])|35-(3[5-9]|[4-5][0-9])|36-(3[6-9]|[4-5][0-9])|37-(3[7-9]|[4-5][0-9])|38-(3[8-9]|[4-5][0-9])|39-(39|[4-5][0-9])|40-[4-5][0-9]|41-(4[1-9]|5[0-9])|42-(4[2-9]|5[0-9])|43-(4[3-9]|5[0-9])|44-(4[4-9]|5[0-9])|45-(4[5-9]|5[0-9])|46-(4[6-9]|5[0-9])|47-(4[7-9]|5[0-9])|48-(4[8-9]|5[0-9])|49-(49|5[0-9])|50-5[0-9]|51-5[1-9]|52-5[2-9]|53-5[3-9]|54-5[4-9]|55-5[5-9]|56-5[6-9]|57-5[7-9]|58-5[8-9])(/[1-9][0-9]?)?(,([*?]|(0?[0-9]|[1-5][0-9])|0?0-(0?[0-9]|[1-5][0-9])|0?1-(0?[1-9]|[1-5][0-9])|0?2-(0?[2-9]|[1-5][0-9])|0?3-(0?[3-9]|[1-5][0-9])|0?4-(0?[4-9]|[1-5][0-9])|0?5-(0?[5-9]|[1-5][0-9])|0?6-(0?[6-9]|[1-5][0-9])|0?7-(0?[7-9]|[1-5][0-9])|0?8-(0?[8-9]|[1-5][0-9])|0?9-(0?9|[1-5][0-9])|10-[1-5][0-9]|11-(1[1-9]|[2-5][0-9])|12-(1[2-9]|[2-5][0-9])|13-(1[3-9]|[2-5][0-9])|14-(1[4-9]|[2-5][0-9])|15-(1[5-9]|[2-5][0-9])|16-(1[6-9]|[2-5][0-9])|17-(1[7-9]|[2-5][0-9])|18-(1[8-9]|[2-5][0-9])|19-(19|[2-5][0-9])|20-[2-5][0-9]|21-(2[1-9]|[3-5][0-9])|22-(2[2-9]|[3-5][0-9])|23-(2[3-9]|[3-5][0-9])|24-(2[4-9]|[3-5][0-9])|25-(2[5-9]|[3-5][0-9])|26-(2[6-9]|[3-5][0-9])|27-(2[7-9]|[3-5][0-9])|28-(2[8-9]|[3-5][0-9])|29-(29|[3-5][0-9])|30-[3-5][0-9]|31-(3[1-9]|[4-5][0-9])|32-(3[2-9]|[4-5][0-9])|33-(3[3-9]|[4-5][0-9])|34-(3[4-9]|[4-5][0-9])|35-(3[5-9]|[4-5][0-9])|36-(3[6-9]|[4-5][0-9])|37-(3[7-9]|[4-5][0-9])|38-(3[8-9]|[4-5][0-9])|39-(39|[4-5][0-9])|40-[4-5][0-9]|41-(4[1-9]|5[0-9])|42-(4[2-9]|5[0-9])|43-(4[3-9]|5[0-9])|44-(4[4-9]|5[0-9])|45-(4[5-9]|5[0-9])|46-(4[6-9]|5[0-9])|47-(4[7-9]|5[0-9])|48-(4[8-9]|5[0-9])|49-(49|5[0-9])|50-5[0-9]|51-5[1-9]|52-5[2-9]|53-5[3-9]|54-5[4-9]|55-5[5-9]|56-5[6-9]|57-5[7-9]|58-5[8-9])(/[1-9][0-9]?)?)* +([*?]|(0?[0-9]|1[0-9]|2[0-3])|0?0-(0?[0-9]|1[0-9]|2[0-3])|0?1-(0?[1-9]|1[0-9]|2[0-3])|0?2-(0?[2-9]|1[0-9]|2[0-3])|0?3-(0?[3-9]|1[0-9]|2[0-3])|0?4-(0?[4-9]|1[0-9]|2[0-3])|0?5-(0?[5-9]|1[0-9]|2[0-3])|0?6-(0?[6-9]|1[0-9]|2[0-3])|0?7-(0?[7-9]|1[0-9]|2[0-3])|0?8-(0?[8-9]|1[0-9]|2[0-3])|0?9-(0?9|1[0-9]|2[0-3])|10-(1[0-9]|2[0-3])|11-(1[1-9]|2[0-3])|12-(1[2-9]|2[0-3])|13-(1[3-9]|2[0-3])|14-(1[4-9]|2[0-3])|15-(1[5-9]|2[0-3])|16-(1[6-9]|2[0-3])|17-(1[7-9]|2[0-3])|18-(1[8-9]|2[0-3])|19-(19|2[0-3])|20-2[0-3]|21-2[1-3]|22-2[2-3])(/[1-9][0-9]?)?(,([*?]|(0?[0-9]|1[0-9]|2[0-3])|0?0-(0?[0-9]|1[0-9]|2[0-3])|0?1-(0?[1-9]|1[0-9]|2[0-3])|0?2-(0?[2-9]|1[0-9]|2[0-3])|0?3-(0?[3-9]|1[0-9]|2[0-3])|0?4-(0?[4-9]|1[0-9]|2[0-3])|0?5-(0?[5-9]|1[0-9]|2[0-3])|0?6-(0?[6-9]|1[0-9]|2[0-3])|0?7-(0?[7-9]|1[0-9]|2[0-3])|0?8-(0?[8-9]|1[0-9]|2[0-3])|0?9-(0?9|1[0-9]|2[0-3])|10-(1[0-9]|2[0-3])|11-(1[1-9]|2[0-3])|12-(1[2-9]|2[0-3])|13-(1[3-9]|2[0-3])|14-(1[4-9]|2[0-3])|15-(1[5-9]|2[0-3])|16-(1[6-9]|2[0-3])|17-(1[7-9]|2[0-3])|18-(1[8-9]|2[0-3])|19-(19|2[0-3])|20-2[0-3]|21-2[1-3]|22-2[2-3])(/[1-9][0-9]?)?)* +([*?]|(0?[1-9]|[1-2][0-9]|3[0-1])|0?1-(0?[1-9]|[1-2][0-9]|3[0-1])|0?2-(0?[2-9]|[1-2][0-9]|3[0-1])|0?3-(0?[3-9]|[1-2][0-9]|3[0-1])|0?4-(0?[4-9]|[1-2][0-9]|3[0-1])|0?5-(0?[5-9]|[1-2][0-9]|3[0-1])|0?6-(0?[6-9]|[1-2][0-9]|3[0-1])|0?7-(0?[7-9]|[1-2][0-9]|3[0-1])|0?8-(0?[8-9]|[1-2][0-9]|3[0-1])|0?9-(0?9|[1-2][0-9]|3[0-1])|10-([1-2][0-9]|3[0-1])|11-(1[1-9]|2[0-9]|3[0-1])|12-(1[2-9]|2[0-9]|3[0-1])|13-(1[3-9]|2[0-9]|3[0-1])|14-(1[4-9]|2[0-9]|3[0-1])|15-(1[5-9]|2[0-9]|3[0-1])|16-(1[6-9]|2[0-9]|3[0-1])|17-(1[7-9]|2[0-9]|3[0-1])|18-(1[8-9]|2[0-9]|3[0-1])|19-(19|2[0-9]|3[0-1])|20-(2[0-9]|3[0-1])|21-(2[1-9]|3[0-1])|22-(2[2-9]|3[0-1])|23-(2[3-9]|3[0-1])|24-(2[4-9]|3[0-1])|25-(2[5-9]|3[0-1])|26-(2[6-9]|3[0-1])|27-(2[7-9]|3[0-1])|28-(2[8-9]|3[0-1])|29-(29|3[0-1])|30-3[0-1])(/[1-9][0-9]?)?(,([*?]|(0?[1-9]|[1-2][0-9]|3[0-1])|0?1-(0?[1-9]|[1-2][0-9]|3[0-1])|0?2-(0?[2-9]|[1-2][0-9]|3[0-1])|0?3-(0?[3-9]|[1-2][0-9]|3[0-1])|0?4-(0?[4-9]|[1-2][0-9]|3[0-1])|0?5-(0?[5-9]|[1-2][0-9]|3[0-1])|0?6-(0?[6-9]|[1-2][0-9]|3[0-1])|0?7-(0?[7-9]|[1-2][0-9]|3[0-1])|0?8-(0?[8-9]|[1-2][0-9]|3[0-1])|0?9-(0?9|[1-2][0-9]|3[0-1])|10-([1-2][0-9]|3[0-1])|11-(1[1-9]|2[0-9]|3[0-1])|12-(1[2-9]|2[0-9]|3[0-1])|13-(1[3-9]|2[0-9]|3[0-1])|14-(1[4-9]|2[0-9]|3[0-1])|15-(1[5-9]|2[0-9]|3[0-1])|16-(1[6-9]|2[0-9]|3[0-1])|17-(1[7-9]|2[0-9]|3[0-1])|18-(1[8-9]|2[0-9]|3[0-1])|19-(19|2[0-9]|3[0-1])|20-(2[0-9]|3[0-1])|21-(2[1-9]|3[0-1])|22-(2[2-9]|3[0-1])|23-(2[3-9]|3[0-1])|24-(2[4-9]|3[0-1])|25-(2[5-9]|3[0-1])|26-(2[6-9]|3[0-1])|27-(2[7-9]|3[0-1])|28-(2[8-9]|3[0-1])|29-(29|3[0-1])|30-3[0-1])(/[1-9][0-9]?)?)* +([*?]|((0?[1-9]|1[0-2])|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))|0?1-(0?[1-9]|1[0-2])|0?2-(0?[2-9]|1[0-2])|0?3-(0?[3-9]|1[0-2])|0?4-(0?[4-9]|1[0-2])|0?5-(0?[5-9]|1[0-2])|0?6-(0?[6-9]|1[0-2])|0?7-(0?[7-9]|1[0-2])|0?8-(0?[8-9]|1[0-2])|0?9-(0?9|1[0-2])|10-1[0-2]|11-1[1-2]|(?i:jan-(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|feb-(feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|mar-(mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|apr-(apr|may|jun|jul|aug|sep|oct|nov|dec)|may-(may|jun|jul|aug|sep|oct|nov|dec)|jun-(jun|jul|aug|sep|oct|nov|dec)|jul-(jul|aug|sep|oct|nov|dec)|aug-(aug|sep|oct|nov|dec)|sep-(sep|oct|nov|dec)|oct-(oct|nov|dec)|nov-(nov|dec)))(/[1-9][0-9]?)?(,([*?]|((0?[1-9]|1[0-2])|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))|0?1-(0?[1-9]|1[0-2])|0?2-(0?[2-9]|1[0-2])|0?3-(0?[3-9]|1[0-2])|0?4-(0?[4-9]|1[0-2])|0?5-(0?[5-9]|1[0-2])|0?6-(0?[6-9]|1[0-2])|0?7-(0?[7-9]|1[0-2])|0?8-(0?[8-9]|1[0-2])|0?9-(0?9|1[0-2])|10-1[0-2]|11-1[1-2]|(?i:jan-(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|feb-(feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|mar-(mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|apr-(apr|may|jun|jul|aug|sep|oct|nov|dec)|may-(may|jun|jul|aug|sep|oct|nov|dec)|jun-(jun|jul|aug|sep|oct|nov|dec)|jul-(jul|aug|sep|oct|nov|dec)|aug-(aug|sep|oct|nov|dec)|sep-(sep|oct|nov|dec)|oct-(oct|nov|dec)|nov-(nov|dec)))(/[1-9][0-9]?)?)* +([*?]|(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))|0?0-0?[0-6]|0?1-0?[1-6]|0?2-0?[2-6]|0?3-0?[3-6]|0?4-0?[4-6]|0?5-0?[5-6]|(?i:sun-(sun|mon|tue|wed|thu|fri|sat)|mon-(mon|tue|wed|thu|fri|sat)|tue-(tue|wed|thu|fri|sat)|wed-(wed|thu|fri|sat)|thu-(thu|fri|sat)|fri-(fri|sat)))(/[1-9][0-9]?)?(,([*?]|(0?[0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))|0?0-0?[0-6]|0?1-0?[1-6]|0?2-0?[2-6]|0?3-0?[3-6]|0?4-0?[4-6]|0?5-0?[5-6]|(?i:sun-(sun|mon|tue|wed|thu|fri|sat)|mon-(mon|tue|wed|thu|fri|sat)|tue-(tue|wed|thu|fri|sat)|wed-(wed|thu|fri|sat)|thu-(thu|fri|sat)|fri-(fri|sat)))(/[1-9][0-9]?)?)*)$')",message="must be a cron expression of 5 fields separated by spaces (minute 0-59, hour 0-23, day of month 1-31, month 1-12 or jan-dec, day of week 0-6 or sun-sat; each a *, a value, a range like 1-5 or a list like 1,15, with an optional step like */10 up to 99), or @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly, or @every with a duration in h, m and s like @every 1h30m; it may start with CRON_TZ=UTC, the only time zone allowed"
// +kubebuilder:validation:XValidation:rule="!self.matches('^((CRON_TZ|TZ)=UTC )?@every ([0-9]{1,6}h([0-9]{1,7}m)?([0-9]{1,9}s)?|[0-9]{1,7}m([0-9]{1,9}s)?|[0-9]{1,9}s)$') || duration(self.substring(self.indexOf('@every ') + 7)) >= duration('1m')",message="@every must be at least 1m"
type CronSchedule string
