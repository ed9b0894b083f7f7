package resources

import (
	"path"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// Backups run in short-lived Pods of the operator's own image (the agent):
// the operator never holds a snapshot in memory and never reads a tenant's
// storage credentials, which only the Pods of that tenant's namespace mount.
const (
	// AgentBinary is the operator's binary in its image.
	AgentBinary = "/raftsman"
	// AgentUser runs the agent, like the operator.
	AgentUser = 65532

	backupVolume   = "backup"
	backupMount    = "/backup"
	s3CAVolume     = "s3-ca"
	s3CAMount      = "/etc/raftsman/s3-ca"
	etcdTLSVolume  = "etcd-client-tls"
	etcdTLSMount   = "/etc/raftsman/etcd-client-tls"
	toolsVolume    = "raftsman-tools"
	toolsMount     = "/raftsman-tools"
	restoreStaging = dataMount + "/restore"

	// Environment variables the agent reads the S3 credentials from.
	EnvAccessKeyID     = "RAFTSMAN_S3_ACCESS_KEY_ID"
	EnvSecretAccessKey = "RAFTSMAN_S3_SECRET_ACCESS_KEY"
)

// Restorable says whether b can be restored into c after a lost quorum: a
// backup of c, Complete for its generation, with its checksum, not being
// deleted, and begun after c was created (backups outlive their cluster,
// so an older one is of an earlier cluster that had c's name).
func Restorable(c *etcdv1.EtcdCluster, b *etcdv1.EtcdBackup) bool {
	snap, ok := b.Snapshot()
	return ok && b.Spec.ClusterName == c.Name && b.DeletionTimestamp.IsZero() && snap.SHA256 != "" && snap.StartTime != nil &&
		!snap.StartTime.Before(&c.CreationTimestamp)
}

// BackupKey is where the snapshot of an EtcdBackup goes in its destination
// (after the S3 prefix or inside the PVC folder): one key per EtcdBackup, so
// a retried backup overwrites its own snapshot and nothing else.
func BackupKey(b *etcdv1.EtcdBackup) string {
	return path.Join(b.Namespace, b.Spec.ClusterName, b.Name+".db")
}

// PVCURI names a snapshot on a PVC destination for people: the agent only
// knows the folder its Pod mounted.
func PVCURI(d *etcdv1.PVCDestination, key string) string {
	return "pvc://" + d.ClaimName + "/" + path.Join(d.Path, key)
}

// DestinationArgs are the agent's flags naming a destination.
func DestinationArgs(d etcdv1.BackupDestination) []string {
	if s3 := d.S3; s3 != nil {
		args := []string{"--s3-endpoint=" + s3.Endpoint, "--s3-bucket=" + s3.Bucket, "--s3-prefix=" + s3.Prefix,
			"--s3-path-style=" + strconv.FormatBool(s3.ForcePathStyle)}
		if s3.Region != "" {
			args = append(args, "--s3-region="+s3.Region)
		}
		if s3.CASecretRef != nil {
			args = append(args, "--s3-ca-file="+s3CAMount+"/ca.crt")
		}
		return args
	}
	if d.PVC != nil {
		return []string{"--dir=" + path.Join(backupMount, d.PVC.Path)}
	}
	return nil
}

// destinationEnv passes the S3 credentials from the user's Secret.
func destinationEnv(d etcdv1.BackupDestination) []corev1.EnvVar {
	if d.S3 == nil {
		return nil
	}
	ref := func(env, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: d.S3.CredentialsSecretRef, Key: key,
		}}}
	}
	return []corev1.EnvVar{ref(EnvAccessKeyID, "accessKeyID"), ref(EnvSecretAccessKey, "secretAccessKey")}
}

// destinationVolumes mount the PVC of a PVC destination or the CA of an
// S3 endpoint.
func destinationVolumes(d etcdv1.BackupDestination, readOnly bool) ([]corev1.Volume, []corev1.VolumeMount) {
	switch {
	case d.PVC != nil:
		return []corev1.Volume{{Name: backupVolume, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
				ClaimName: d.PVC.ClaimName, ReadOnly: readOnly,
			}}}},
			[]corev1.VolumeMount{{Name: backupVolume, MountPath: backupMount, ReadOnly: readOnly}}
	case d.S3 != nil && d.S3.CASecretRef != nil:
		return []corev1.Volume{{Name: s3CAVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: d.S3.CASecretRef.Name, DefaultMode: ptr.To[int32](0o444),
			}}}},
			[]corev1.VolumeMount{{Name: s3CAVolume, MountPath: s3CAMount, ReadOnly: true}}
	}
	return nil, nil
}

// AgentTask is one run of the agent in a Pod of its own.
type AgentTask struct {
	// Name and Namespace of the Pod.
	Name, Namespace string
	Labels          map[string]string
	// Image is the operator's image.
	Image string
	// Args follow "agent": the command and its flags, without the
	// destination's, which come from Destination.
	Args        []string
	Destination etcdv1.BackupDestination
	// ClientTLSSecret, when set, is mounted for the agent to reach etcd.
	ClientTLSSecret string
	// Deadline bounds the Pod's run.
	Deadline int64
}

// AgentTLSArgs are the flags that point the agent at the mounted client
// certificate of a cluster.
func AgentTLSArgs() []string {
	return []string{"--cert=" + etcdTLSMount + "/tls.crt", "--key-file=" + etcdTLSMount + "/tls.key", "--cacert=" + etcdTLSMount + "/ca.crt"}
}

// AgentPod is the Pod of an agent task. It never restarts: its controller
// reads the result from the termination message and decides what next.
func AgentPod(t AgentTask) *corev1.Pod {
	vols, mounts := destinationVolumes(t.Destination, false)
	if t.ClientTLSSecret != "" {
		vols = append(vols, corev1.Volume{Name: etcdTLSVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: t.ClientTLSSecret, DefaultMode: ptr.To[int32](0o440),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: etcdTLSVolume, MountPath: etcdTLSMount, ReadOnly: true})
	}
	args := append(append([]string{"agent"}, t.Args...), DestinationArgs(t.Destination)...)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: t.Name, Namespace: t.Namespace, Labels: t.Labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                corev1.RestartPolicyNever,
			EnableServiceLinks:           ptr.To(false),
			AutomountServiceAccountToken: ptr.To(false),
			ActiveDeadlineSeconds:        ptr.To(max(t.Deadline, 60)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](AgentUser),
				RunAsGroup:     ptr.To[int64](AgentUser),
				FSGroup:        ptr.To[int64](AgentUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:                     "agent",
				Image:                    t.Image,
				ImagePullPolicy:          corev1.PullIfNotPresent,
				Command:                  []string{AgentBinary},
				Args:                     args,
				Env:                      destinationEnv(t.Destination),
				VolumeMounts:             mounts,
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				SecurityContext:          restrictedContainer(),
				Resources:                corev1.ResourceRequirements{Requests: DefaultAgentRequests.DeepCopy()},
			}},
			Volumes: vols,
		},
	}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// restoreInitContainers make a restored member's data directory before etcd
// first starts: the agent's binary is copied out of the operator's image,
// then run in the etcd image, where etcdutl is. The agent does nothing when
// the data directory exists, so a Pod that starts again never restores
// twice; it checks the snapshot's sha256 before etcdutl sees it.
func restoreInitContainers(m *etcdv1.EtcdMember) ([]corev1.Container, []corev1.Volume) {
	r := m.Spec.Restore
	vols, mounts := destinationVolumes(r.Destination, true)
	vols = append(vols, corev1.Volume{Name: toolsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	tools := corev1.VolumeMount{Name: toolsVolume, MountPath: toolsMount}
	args := append([]string{"agent", "restore",
		"--key=" + r.Key, "--sha256=" + r.SHA256,
		"--data-dir=" + dataDir, "--staging=" + restoreStaging,
		"--name=" + m.Name, "--initial-cluster=" + m.Spec.InitialCluster,
		"--initial-cluster-token=" + m.Spec.ClusterToken, "--initial-advertise-peer-urls=" + m.Spec.PeerURL,
		"--etcdutl=/usr/local/bin/etcdutl",
	}, DestinationArgs(r.Destination)...)
	return []corev1.Container{{
		Name:            "install-agent",
		Image:           r.AgentImage,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{AgentBinary},
		Args:            []string{"agent", "install", "--to=" + toolsMount + "/raftsman"},
		VolumeMounts:    []corev1.VolumeMount{tools},
		SecurityContext: restrictedContainer(),
	}, {
		Name:                     "restore",
		Image:                    m.Spec.Image,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Command:                  []string{toolsMount + "/raftsman"},
		Args:                     args,
		Env:                      destinationEnv(r.Destination),
		VolumeMounts:             append([]corev1.VolumeMount{{Name: dataVolume, MountPath: dataMount}, tools}, mounts...),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restrictedContainer(),
	}}, vols
}
