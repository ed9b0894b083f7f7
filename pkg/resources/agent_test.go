package resources

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

var (
	s3Dest = etcdv1.BackupDestination{S3: &etcdv1.S3Destination{
		Endpoint: "https://minio.example:9000", Bucket: "backups", Prefix: "etcd/", Region: "eu-west-1",
		CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}, ForcePathStyle: true,
	}}
	s3DestCA = func() etcdv1.BackupDestination {
		d := *s3Dest.DeepCopy()
		d.S3.CASecretRef = &corev1.LocalObjectReference{Name: "s3-ca-bundle"}
		return d
	}()
	pvcDest = etcdv1.BackupDestination{PVC: &etcdv1.PVCDestination{ClaimName: "backup-claim", Path: "etcd/prod"}}
)

func volumeNamed(vols []corev1.Volume, name string) *corev1.Volume {
	for i := range vols {
		if vols[i].Name == name {
			return &vols[i]
		}
	}
	return nil
}

func mountNamed(mounts []corev1.VolumeMount, name string) *corev1.VolumeMount {
	for i := range mounts {
		if mounts[i].Name == name {
			return &mounts[i]
		}
	}
	return nil
}

// checkS3Env checks that the S3 credentials come from the user's Secret.
func checkS3Env(t *testing.T, env []corev1.EnvVar, secret string) {
	t.Helper()
	want := map[string]string{EnvAccessKeyID: "accessKeyID", EnvSecretAccessKey: "secretAccessKey"}
	if len(env) != len(want) {
		t.Errorf("env = %+v, want the two credentials", env)
	}
	for _, e := range env {
		key, ok := want[e.Name]
		if !ok {
			t.Errorf("unexpected env %s", e.Name)
			continue
		}
		if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
			e.ValueFrom.SecretKeyRef.Name != secret || e.ValueFrom.SecretKeyRef.Key != key {
			t.Errorf("env %s = %+v, want secret %s key %s", e.Name, e, secret, key)
		}
	}
}

func TestAgentPod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		task     AgentTask
		wantArgs []string
		noArgs   []string
		check    func(t *testing.T, p *corev1.Pod)
	}{
		{
			name: "s3 with tls",
			task: AgentTask{
				Name: "nightly-snapshot", Namespace: "ns", Labels: map[string]string{etcdv1.BackupLabel: "nightly"},
				Image: "raftsman:v1", Destination: s3Dest, ClientTLSSecret: "demo-client-tls", Deadline: 3600,
				Args: append([]string{"snapshot", "--endpoint=https://demo-abcde.demo-peer.ns.svc:2379", "--key=ns/demo/nightly.db"}, AgentTLSArgs()...),
			},
			wantArgs: []string{
				"--endpoint=https://demo-abcde.demo-peer.ns.svc:2379", "--key=ns/demo/nightly.db",
				"--s3-endpoint=https://minio.example:9000", "--s3-bucket=backups", "--s3-prefix=etcd/",
				"--s3-path-style=true", "--s3-region=eu-west-1",
				"--cert=/etc/raftsman/etcd-client-tls/tls.crt", "--key-file=/etc/raftsman/etcd-client-tls/tls.key",
				"--cacert=/etc/raftsman/etcd-client-tls/ca.crt",
			},
			noArgs: []string{"--s3-ca-file=/etc/raftsman/s3-ca/ca.crt"},
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.Containers[0]
				checkS3Env(t, c.Env, "s3-creds")
				if !equalResources(c.Resources.Requests, DefaultAgentRequests) || c.Resources.Limits != nil {
					t.Errorf("agent resources = %+v, want the default requests and no limit", c.Resources)
				}
				v := volumeNamed(p.Spec.Volumes, etcdTLSVolume)
				if v == nil || v.Secret == nil || v.Secret.SecretName != "demo-client-tls" {
					t.Errorf("client TLS volume = %+v", v)
				}
				if m := mountNamed(c.VolumeMounts, etcdTLSVolume); m == nil || m.MountPath != etcdTLSMount || !m.ReadOnly {
					t.Errorf("client TLS mount = %+v", m)
				}
				if volumeNamed(p.Spec.Volumes, s3CAVolume) != nil || volumeNamed(p.Spec.Volumes, backupVolume) != nil {
					t.Errorf("volumes = %+v, want only the client TLS one", p.Spec.Volumes)
				}
				if *p.Spec.ActiveDeadlineSeconds != 3600 {
					t.Errorf("activeDeadlineSeconds = %d", *p.Spec.ActiveDeadlineSeconds)
				}
				if p.Labels[etcdv1.BackupLabel] != "nightly" {
					t.Errorf("labels = %v", p.Labels)
				}
			},
		},
		{
			name: "s3 with a private CA",
			task: AgentTask{Name: "restore-check", Namespace: "ns", Image: "raftsman:v1", Destination: s3DestCA,
				Args: []string{"verify", "--key=ns/demo/nightly.db"}},
			wantArgs: []string{"--key=ns/demo/nightly.db", "--s3-endpoint=https://minio.example:9000", "--s3-ca-file=/etc/raftsman/s3-ca/ca.crt"},
			noArgs:   AgentTLSArgs(),
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.Containers[0]
				checkS3Env(t, c.Env, "s3-creds")
				v := volumeNamed(p.Spec.Volumes, s3CAVolume)
				if v == nil || v.Secret == nil || v.Secret.SecretName != "s3-ca-bundle" {
					t.Errorf("CA volume = %+v", v)
				}
				if m := mountNamed(c.VolumeMounts, s3CAVolume); m == nil || m.MountPath != s3CAMount || !m.ReadOnly {
					t.Errorf("CA mount = %+v", m)
				}
				if volumeNamed(p.Spec.Volumes, etcdTLSVolume) != nil {
					t.Error("client TLS mounted without a secret")
				}
				if *p.Spec.ActiveDeadlineSeconds != 60 {
					t.Errorf("activeDeadlineSeconds = %d, want the 60s floor", *p.Spec.ActiveDeadlineSeconds)
				}
			},
		},
		{
			name: "pvc",
			task: AgentTask{Name: "nightly-delete", Namespace: "ns", Image: "raftsman:v1", Destination: pvcDest,
				Args: []string{"delete", "--key=ns/demo/nightly.db"}, Deadline: 600},
			wantArgs: []string{"--key=ns/demo/nightly.db", "--dir=/backup/etcd/prod"},
			noArgs:   []string{"--s3-endpoint="},
			check: func(t *testing.T, p *corev1.Pod) {
				c := p.Spec.Containers[0]
				if len(c.Env) != 0 {
					t.Errorf("env = %+v, want none", c.Env)
				}
				v := volumeNamed(p.Spec.Volumes, backupVolume)
				if v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "backup-claim" || v.PersistentVolumeClaim.ReadOnly {
					t.Errorf("backup volume = %+v, want the writable claim", v)
				}
				if m := mountNamed(c.VolumeMounts, backupVolume); m == nil || m.MountPath != "/backup" || m.ReadOnly {
					t.Errorf("backup mount = %+v", m)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := AgentPod(tt.task)
			if p.Name != tt.task.Name || p.Namespace != tt.task.Namespace {
				t.Errorf("pod %s/%s", p.Namespace, p.Name)
			}
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy = %s", p.Spec.RestartPolicy)
			}
			if p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken {
				t.Error("the agent Pod mounts a service account token")
			}
			sc := p.Spec.SecurityContext
			if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != AgentUser ||
				sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context = %+v", sc)
			}
			if len(p.Spec.Containers) != 1 {
				t.Fatalf("containers = %d", len(p.Spec.Containers))
			}
			c := p.Spec.Containers[0]
			if c.Image != tt.task.Image || !slices.Equal(c.Command, []string{AgentBinary}) {
				t.Errorf("image %s command %v", c.Image, c.Command)
			}
			if c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
				t.Errorf("terminationMessagePolicy = %s", c.TerminationMessagePolicy)
			}
			if csc := c.SecurityContext; csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
				csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
				t.Errorf("container security context = %+v", csc)
			}
			if len(c.Args) < 2 || c.Args[0] != "agent" || c.Args[1] != tt.task.Args[0] {
				t.Errorf("args = %q, want agent %s ...", c.Args, tt.task.Args[0])
			}
			for _, a := range tt.wantArgs {
				if !slices.Contains(c.Args, a) {
					t.Errorf("args %q lack %q", c.Args, a)
				}
			}
			for _, a := range tt.noArgs {
				for _, got := range c.Args {
					if strings.HasPrefix(got, a) {
						t.Errorf("args %q have %q", c.Args, got)
					}
				}
			}
			for _, m := range c.VolumeMounts {
				if volumeNamed(p.Spec.Volumes, m.Name) == nil {
					t.Errorf("mount %s has no volume", m.Name)
				}
			}
			tt.check(t, p)
		})
	}
}

func TestDestinationArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dest etcdv1.BackupDestination
		want []string
	}{
		{name: "s3", dest: s3Dest, want: []string{"--s3-endpoint=https://minio.example:9000", "--s3-bucket=backups", "--s3-prefix=etcd/", "--s3-path-style=true", "--s3-region=eu-west-1"}},
		{name: "s3 with CA", dest: s3DestCA, want: []string{"--s3-endpoint=https://minio.example:9000", "--s3-bucket=backups", "--s3-prefix=etcd/", "--s3-path-style=true", "--s3-region=eu-west-1", "--s3-ca-file=/etc/raftsman/s3-ca/ca.crt"}},
		{name: "pvc", dest: pvcDest, want: []string{"--dir=/backup/etcd/prod"}},
		{name: "pvc root", dest: etcdv1.BackupDestination{PVC: &etcdv1.PVCDestination{ClaimName: "c"}}, want: []string{"--dir=/backup"}},
		{name: "none", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := DestinationArgs(tt.dest); !slices.Equal(got, tt.want) {
				t.Errorf("DestinationArgs = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBackupKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		namespace, cluster, name, want string
	}{
		{namespace: "ns", cluster: "demo", name: "demo-20250301-1000", want: "ns/demo/demo-20250301-1000.db"},
		{namespace: "team-a", cluster: "events", name: "manual", want: "team-a/events/manual.db"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			b := &etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: tt.name}, Spec: etcdv1.EtcdBackupSpec{ClusterName: tt.cluster}}
			if got := BackupKey(b); got != tt.want {
				t.Errorf("BackupKey = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMemberPodRestore(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		restore *etcdv1.MemberRestore
		check   func(t *testing.T, p *corev1.Pod)
	}{
		{
			name: "no restore",
			check: func(t *testing.T, p *corev1.Pod) {
				if len(p.Spec.InitContainers) != 0 {
					t.Errorf("init containers = %+v, want none", p.Spec.InitContainers)
				}
				if volumeNamed(p.Spec.Volumes, toolsVolume) != nil {
					t.Error("tools volume without a restore")
				}
			},
		},
		{
			name:    "from s3",
			restore: &etcdv1.MemberRestore{Destination: s3DestCA, Key: "ns/old/nightly.db", SHA256: sum, AgentImage: "raftsman:v1"},
			check: func(t *testing.T, p *corev1.Pod) {
				r := p.Spec.InitContainers[1]
				checkS3Env(t, r.Env, "s3-creds")
				for _, a := range []string{"--s3-endpoint=https://minio.example:9000", "--s3-ca-file=/etc/raftsman/s3-ca/ca.crt"} {
					if !slices.Contains(r.Args, a) {
						t.Errorf("restore args %q lack %q", r.Args, a)
					}
				}
				if m := mountNamed(r.VolumeMounts, s3CAVolume); m == nil || !m.ReadOnly {
					t.Errorf("CA mount = %+v", m)
				}
			},
		},
		{
			name:    "from a pvc",
			restore: &etcdv1.MemberRestore{Destination: pvcDest, Key: "ns/old/nightly.db", SHA256: sum, AgentImage: "raftsman:v1"},
			check: func(t *testing.T, p *corev1.Pod) {
				r := p.Spec.InitContainers[1]
				if len(r.Env) != 0 {
					t.Errorf("restore env = %+v, want none", r.Env)
				}
				if !slices.Contains(r.Args, "--dir=/backup/etcd/prod") {
					t.Errorf("restore args %q lack --dir", r.Args)
				}
				v := volumeNamed(p.Spec.Volumes, backupVolume)
				if v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "backup-claim" || !v.PersistentVolumeClaim.ReadOnly {
					t.Errorf("backup volume = %+v, want the claim read-only", v)
				}
				if m := mountNamed(r.VolumeMounts, backupVolume); m == nil || !m.ReadOnly || m.MountPath != "/backup" {
					t.Errorf("backup mount = %+v", m)
				}
				if mountNamed(p.Spec.Containers[0].VolumeMounts, backupVolume) != nil {
					t.Error("etcd mounts the backup volume")
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{})
			m.Spec.Restore = tt.restore
			p := MemberPod(m, true)
			if tt.restore != nil {
				checkRestoreInits(t, m, p)
			}
			tt.check(t, p)
		})
	}
}

// checkRestoreInits checks what every restored member's Pod has.
func checkRestoreInits(t *testing.T, m *etcdv1.EtcdMember, p *corev1.Pod) {
	t.Helper()
	inits := p.Spec.InitContainers
	if len(inits) != 2 || inits[0].Name != "install-agent" || inits[1].Name != "restore" {
		t.Fatalf("init containers = %+v, want install-agent then restore", inits)
	}
	install, restore := inits[0], inits[1]
	if install.Image != m.Spec.Restore.AgentImage || !slices.Equal(install.Command, []string{AgentBinary}) ||
		!slices.Equal(install.Args, []string{"agent", "install", "--to=" + toolsMount + "/raftsman"}) {
		t.Errorf("install-agent = image %s command %v args %v", install.Image, install.Command, install.Args)
	}
	if mt := mountNamed(install.VolumeMounts, toolsVolume); mt == nil || mt.MountPath != toolsMount || mt.ReadOnly {
		t.Errorf("install-agent tools mount = %+v", mt)
	}
	if restore.Image != m.Spec.Image || !slices.Equal(restore.Command, []string{toolsMount + "/raftsman"}) {
		t.Errorf("restore = image %s command %v, want the etcd image running the installed agent", restore.Image, restore.Command)
	}
	if len(restore.Args) < 2 || restore.Args[0] != "agent" || restore.Args[1] != "restore" {
		t.Errorf("restore args = %q", restore.Args)
	}
	for _, a := range []string{
		"--key=" + m.Spec.Restore.Key, "--sha256=" + m.Spec.Restore.SHA256,
		"--data-dir=/var/lib/etcd/data", "--staging=/var/lib/etcd/restore",
		"--name=" + m.Name, "--initial-cluster=" + m.Spec.InitialCluster,
		"--initial-cluster-token=" + m.Spec.ClusterToken, "--initial-advertise-peer-urls=" + m.Spec.PeerURL,
		"--etcdutl=/usr/local/bin/etcdutl",
	} {
		if !slices.Contains(restore.Args, a) {
			t.Errorf("restore args %q lack %q", restore.Args, a)
		}
	}
	// The data directory the agent makes is the one etcd starts from.
	if !slices.Contains(p.Spec.Containers[0].Args, "--data-dir=/var/lib/etcd/data") {
		t.Errorf("etcd args %q do not use the restored data directory", p.Spec.Containers[0].Args)
	}
	if mt := mountNamed(restore.VolumeMounts, dataVolume); mt == nil || mt.MountPath != dataMount || mt.ReadOnly {
		t.Errorf("restore data mount = %+v", mt)
	}
	if mt := mountNamed(restore.VolumeMounts, toolsVolume); mt == nil || mt.MountPath != toolsMount {
		t.Errorf("restore tools mount = %+v", mt)
	}
	if v := volumeNamed(p.Spec.Volumes, toolsVolume); v == nil || v.EmptyDir == nil {
		t.Errorf("tools volume = %+v, want an emptyDir", v)
	}
	for _, c := range inits {
		if c.SecurityContext == nil || c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
			t.Errorf("init container %s security context = %+v", c.Name, c.SecurityContext)
		}
		for _, mt := range c.VolumeMounts {
			if volumeNamed(p.Spec.Volumes, mt.Name) == nil {
				t.Errorf("init container %s mounts %s, which is no volume", c.Name, mt.Name)
			}
		}
	}
	seen := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if seen[v.Name] {
			t.Errorf("volume %s twice", v.Name)
		}
		seen[v.Name] = true
	}
}

func TestRestorable(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", CreationTimestamp: created}}
	good := func() *etcdv1.EtcdBackup {
		return &etcdv1.EtcdBackup{
			ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 2},
			Spec:       etcdv1.EtcdBackupSpec{ClusterName: "demo"},
			Status: etcdv1.EtcdBackupStatus{SHA256: "ab", StartTime: &metav1.Time{Time: created.Add(time.Hour)},
				Conditions: []metav1.Condition{{Type: etcdv1.ConditionComplete, Status: metav1.ConditionTrue, ObservedGeneration: 2}}},
		}
	}
	tests := []struct {
		name   string
		change func(*etcdv1.EtcdBackup)
		want   bool
	}{
		{name: "complete backup of the cluster", change: func(*etcdv1.EtcdBackup) {}, want: true},
		{name: "another cluster's", change: func(b *etcdv1.EtcdBackup) { b.Spec.ClusterName = "other" }},
		{name: "begun before the cluster was created", change: func(b *etcdv1.EtcdBackup) { b.Status.StartTime.Time = created.Add(-time.Minute) }},
		{name: "no checksum", change: func(b *etcdv1.EtcdBackup) { b.Status.SHA256 = "" }},
		{name: "no start time", change: func(b *etcdv1.EtcdBackup) { b.Status.StartTime = nil }},
		{name: "being deleted", change: func(b *etcdv1.EtcdBackup) { b.DeletionTimestamp = &created }},
		{name: "Complete for an older generation", change: func(b *etcdv1.EtcdBackup) { b.Generation = 3 }},
		{name: "failed", change: func(b *etcdv1.EtcdBackup) { b.Status.Conditions[0].Type = etcdv1.ConditionFailed }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := good()
			tt.change(b)
			if got := Restorable(c, b); got != tt.want {
				t.Errorf("Restorable = %v, want %v", got, tt.want)
			}
		})
	}
}
