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
	// Endpoint is the store's URL, like https://s3.eu-west-1.amazonaws.com.
	// +kubebuilder:validation:XValidation:rule="self.startsWith('http://') || self.startsWith('https://')",message="spec.s3.endpoint must be a URL starting with http:// or https://"
	Endpoint string `json:"endpoint"`
	// Bucket holds the snapshots; it must exist.
	// +kubebuilder:validation:MinLength=3
	Bucket string `json:"bucket"`
	// Prefix is put before every key, like "etcd/".
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region of the bucket.
	// +kubebuilder:default="us-east-1"
	// +optional
	Region string `json:"region,omitempty"`
	// CredentialsSecretRef names a Secret in the cluster's namespace with the
	// keys accessKeyID and secretAccessKey. The operator never reads it: only
	// the backup Pods of that namespace mount it.
	CredentialsSecretRef corev1.LocalObjectReference `json:"credentialsSecretRef"`
	// ForcePathStyle addresses the bucket as endpoint/bucket instead of
	// bucket.endpoint (most self-hosted stores need it).
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
	// CASecretRef names a Secret with a ca.crt key to trust for an https
	// endpoint signed by a private CA.
	// +optional
	CASecretRef *corev1.LocalObjectReference `json:"caSecretRef,omitempty"`
}

// PVCDestination is a folder of a PersistentVolumeClaim.
type PVCDestination struct {
	// ClaimName is the PersistentVolumeClaim, in the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	ClaimName string `json:"claimName"`
	// Path is a folder inside the volume.
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.contains('..')",message="spec.pvc.path is a relative folder without '..'"
	// +optional
	Path string `json:"path,omitempty"`
}

// ClusterBackupSpec schedules backups of a cluster.
type ClusterBackupSpec struct {
	// Schedule is a cron expression (minute hour day-of-month month
	// day-of-week, or @hourly, @daily, @every 6h).
	// +kubebuilder:validation:MinLength=1
	Schedule string `json:"schedule"`
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
	ClusterName string `json:"clusterName"`
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
