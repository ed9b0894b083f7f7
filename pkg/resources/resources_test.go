package resources

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

var plain = &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}, Spec: etcdv1.EtcdClusterSpec{TLS: etcdv1.TLSSpec{Disabled: true}}}

func member(state etcdv1.InitialClusterState, opts etcdv1.EtcdOptions, storage etcdv1.StorageSpec) *etcdv1.EtcdMember {
	return &etcdv1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-abcde", Namespace: "ns"},
		Spec: etcdv1.EtcdMemberSpec{
			ClusterName: "demo", Version: "3.6.16", Image: "quay.io/coreos/etcd:v3.6.16",
			InitialClusterState: state, InitialCluster: "demo-abcde=" + PeerURL(plain, "demo-abcde", "cluster.local"),
			ClusterToken: "uid", PeerURL: PeerURL(plain, "demo-abcde", "cluster.local"),
			ClientURL: ClientURL(plain, "demo-abcde", "cluster.local"), Options: opts, Storage: storage,
		},
	}
}

func TestEtcdArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		state    etcdv1.InitialClusterState
		firstPod bool
		opts     etcdv1.EtcdOptions
		want     []string
		notWant  []string
	}{
		{name: "initial member's first pod bootstraps", state: etcdv1.InitialClusterStateNew, firstPod: true,
			want: []string{"--initial-cluster-state=new", "--initial-cluster-token=uid", "--name=demo-abcde"}},
		{name: "initial member's later pod joins", state: etcdv1.InitialClusterStateNew, firstPod: false,
			want: []string{"--initial-cluster-state=existing"}, notWant: []string{"--initial-cluster-state=new"}},
		{name: "added member always joins", state: etcdv1.InitialClusterStateExisting, firstPod: true,
			want: []string{"--initial-cluster-state=existing"}},
		{name: "typed options and extra args", state: etcdv1.InitialClusterStateExisting,
			opts: etcdv1.EtcdOptions{
				QuotaBackendBytes: ptr.To[int64](1 << 30), AutoCompactionMode: "periodic", AutoCompactionRetention: "1h",
				SnapshotCount: ptr.To[int64](5000), HeartbeatIntervalMillis: ptr.To[int32](100), ElectionTimeoutMillis: ptr.To[int32](1000),
				MaxRequestBytes: ptr.To[int32](2 << 20), ExtraArgs: map[string]etcdv1.ExtraArgValue{"log-level": "debug", "experimental-x": "1"},
			},
			want: []string{"--quota-backend-bytes=1073741824", "--auto-compaction-mode=periodic", "--auto-compaction-retention=1h",
				"--snapshot-count=5000", "--heartbeat-interval=100", "--election-timeout=1000", "--max-request-bytes=2097152",
				"--log-level=debug", "--experimental-x=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := EtcdArgs(member(tt.state, tt.opts, etcdv1.StorageSpec{}), tt.firstPod)
			for _, w := range tt.want {
				if !slices.Contains(args, w) {
					t.Errorf("args %v lack %s", args, w)
				}
			}
			for _, w := range tt.notWant {
				if slices.Contains(args, w) {
					t.Errorf("args %v have %s", args, w)
				}
			}
		})
	}
}

func TestMemberPod(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		storage etcdv1.StorageSpec
		check   func(t *testing.T, p *corev1.Pod)
	}{
		{name: "pvc", storage: etcdv1.StorageSpec{}, check: func(t *testing.T, p *corev1.Pod) {
			if v := p.Spec.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "data-demo-abcde" {
				t.Errorf("volume = %+v", v)
			}
		}},
		{name: "memory", storage: etcdv1.StorageSpec{Medium: etcdv1.StorageMediumMemory, Size: ptr.To(resource.MustParse("256Mi"))}, check: func(t *testing.T, p *corev1.Pod) {
			v := p.Spec.Volumes[0]
			if v.EmptyDir == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit.String() != "256Mi" {
				t.Errorf("volume = %+v", v)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := MemberPod(member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{}, tt.storage), true)
			if p.Spec.Hostname != "demo-abcde" || p.Spec.Subdomain != "demo-peer" {
				t.Errorf("hostname %s subdomain %s", p.Spec.Hostname, p.Spec.Subdomain)
			}
			sc, c := p.Spec.SecurityContext, p.Spec.Containers[0]
			if !*sc.RunAsNonRoot || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
				*c.SecurityContext.AllowPrivilegeEscalation || c.SecurityContext.Capabilities.Drop[0] != "ALL" {
				t.Errorf("pod does not pass the restricted standard: %+v %+v", sc, c.SecurityContext)
			}
			if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/livez" {
				t.Errorf("probes %s %s", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
			}
			if p.Labels[etcdv1.MemberLabel] != "demo-abcde" || p.Labels[etcdv1.ClusterLabel] != "demo" || p.Labels[etcdv1.ServingLabel] != "true" {
				t.Errorf("labels %v", p.Labels)
			}
			if c.Name != EtcdContainer || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("container %s keeps termination message %q, want etcd's log on error", c.Name, c.TerminationMessagePolicy)
			}
			tt.check(t, p)
		})
	}
}

func TestMemberPodTLS(t *testing.T) {
	t.Parallel()
	for _, mutual := range []bool{true, false} {
		t.Run(fmt.Sprintf("mutual=%v", mutual), func(t *testing.T) {
			t.Parallel()
			m := member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{})
			m.Spec.TLS = &etcdv1.MemberTLS{PeerSecretName: "demo-peer-tls", ServerSecretName: "demo-server-tls", ClientCertAuth: mutual}
			p := MemberPod(m, true)
			args := p.Spec.Containers[0].Args
			want := []string{"--listen-peer-urls=https://0.0.0.0:2380", "--listen-client-urls=https://0.0.0.0:2379",
				"--listen-metrics-urls=http://0.0.0.0:2381",
				"--peer-cert-file=/etc/etcd/tls/peer/tls.crt", "--peer-key-file=/etc/etcd/tls/peer/tls.key",
				"--peer-trusted-ca-file=/etc/etcd/tls/peer/ca.crt", "--peer-client-cert-auth=true",
				"--cert-file=/etc/etcd/tls/server/tls.crt", "--key-file=/etc/etcd/tls/server/tls.key",
				// Only a certificate for this cluster's peer names is a peer.
				"--peer-cert-allowed-hostname=demo-abcde.demo-peer.ns.svc.cluster.local"}
			clientAuth := []string{"--trusted-ca-file=/etc/etcd/tls/server/ca.crt", "--client-cert-auth=true"}
			if mutual {
				want = append(want, clientAuth...)
			}
			for _, w := range want {
				if !slices.Contains(args, w) {
					t.Errorf("args %v lack %s", args, w)
				}
			}
			// etcd asks for a client certificate as soon as it has a
			// trusted CA file, so without mutual TLS it must not get one.
			if !mutual && slices.ContainsFunc(args, func(a string) bool {
				return strings.HasPrefix(a, "--trusted-ca-file") || strings.HasPrefix(a, "--client-cert-auth")
			}) {
				t.Errorf("args %v ask for client certificates", args)
			}
			secrets := map[string]string{}
			for _, v := range p.Spec.Volumes {
				if v.Secret != nil {
					secrets[v.Name] = v.Secret.SecretName
					if *v.Secret.DefaultMode != 0o440 {
						t.Errorf("volume %s mode %o, want 0440", v.Name, *v.Secret.DefaultMode)
					}
				}
			}
			if secrets["peer-tls"] != "demo-peer-tls" || secrets["server-tls"] != "demo-server-tls" {
				t.Errorf("secret volumes %v", secrets)
			}
			for _, vm := range p.Spec.Containers[0].VolumeMounts {
				if vm.SubPath != "" {
					t.Errorf("mount %s uses subPath, which never sees Secret updates", vm.Name)
				}
			}
		})
	}
	plainArgs := EtcdArgs(member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{}), true)
	if slices.ContainsFunc(plainArgs, func(a string) bool {
		return strings.Contains(a, "https") || strings.Contains(a, "cert-file") || strings.Contains(a, "allowed-hostname")
	}) {
		t.Errorf("a member without TLS got TLS flags: %v", plainArgs)
	}
}

func TestServerHosts(t *testing.T) {
	t.Parallel()
	got := ServerHosts(plain, "cluster.local.")
	for _, want := range []string{"*.demo-peer.ns.svc", "*.demo-peer.ns.svc.cluster.local", "demo", "demo.ns", "demo.ns.svc", "demo.ns.svc.cluster.local", "localhost"} {
		if !slices.Contains(got, want) {
			t.Errorf("server hosts %v lack %s", got, want)
		}
	}
}

func TestPDBLetsOneVoterGo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		replicas int32
		voters   int
		want     int
	}{
		{replicas: 3, voters: 0, want: 2}, // before etcd listed any voter
		{replicas: 1, voters: 1, want: 0},
		{replicas: 3, voters: 3, want: 2},
		{replicas: 5, voters: 3, want: 2}, // scaling up: etcd's voters count
		{replicas: 3, voters: 5, want: 4}, // scaling down
		{replicas: 7, voters: 7, want: 6},
	} {
		c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Labels: map[string]string{etcdv1.ShardLabel: "2"}}, Spec: etcdv1.EtcdClusterSpec{Replicas: ptr.To(tc.replicas)}}
		pdb := PDB(c, tc.voters)
		if got := pdb.Spec.MinAvailable.IntValue(); got != tc.want {
			t.Errorf("replicas %d, voters %d: minAvailable %d, want %d", tc.replicas, tc.voters, got, tc.want)
		}
		if _, ok := pdb.Spec.Selector.MatchLabels[etcdv1.ShardLabel]; ok {
			t.Errorf("selector %v has the shard label: after a move to another shard it would select no Pod", pdb.Spec.Selector.MatchLabels)
		}
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	if got := PeerURL(plain, "demo-x", "cluster.local."); got != "http://demo-x.demo-peer.ns.svc.cluster.local:2380" {
		t.Errorf("peer URL %s", got)
	}
	secure := plain.DeepCopy()
	secure.Spec.TLS.Disabled = false
	if got := ClientURL(secure, "demo-x", "cluster.local"); got != "https://demo-x.demo-peer.ns.svc.cluster.local:2379" {
		t.Errorf("client URL with TLS %s", got)
	}
	if got := InitialCluster([][2]string{{"a", "http://a:2380"}, {"b", "http://b:2380"}}); got != "a=http://a:2380,b=http://b:2380" {
		t.Errorf("initial cluster %s", got)
	}
	c := &etcdv1.EtcdCluster{Spec: etcdv1.EtcdClusterSpec{Version: "3.5.35"}}
	if got := Image(c, "quay.io/coreos/etcd"); got != "quay.io/coreos/etcd:v3.5.35" {
		t.Errorf("image %s", got)
	}
	c.Spec.Image = "mirror/etcd:custom"
	if got := Image(c, "quay.io/coreos/etcd"); !strings.HasPrefix(got, "mirror/") {
		t.Errorf("image override ignored: %s", got)
	}
}

func TestAgentLabels(t *testing.T) {
	t.Parallel()
	sharded := map[string]string{etcdv1.ShardLabel: "3", etcdv1.ClusterLabel: "demo"}
	agent := func(extra ...string) map[string]string {
		l := map[string]string{etcdv1.NameLabel: "raftsman-agent", etcdv1.ManagedByLabel: "raftsman"}
		for i := 0; i < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	tests := []struct {
		name  string
		owner metav1.Object
		want  map[string]string
	}{
		{name: "cluster", owner: &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, want: agent()},
		{name: "cluster of a shard", owner: &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Labels: sharded}},
			want: agent(etcdv1.ShardLabel, "3")},
		{name: "backup", owner: &etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly"}},
			want: agent(etcdv1.BackupLabel, "nightly")},
		{name: "backup of a shard", owner: &etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Labels: sharded}},
			want: agent(etcdv1.BackupLabel, "nightly", etcdv1.ShardLabel, "3")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := AgentLabels(tt.owner); !maps.Equal(got, tt.want) {
				t.Errorf("AgentLabels = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMemberPodRequests(t *testing.T) {
	t.Parallel()
	q := resource.MustParse
	tests := []struct {
		name         string
		user         corev1.ResourceRequirements
		wantRequests corev1.ResourceList
		wantLimits   corev1.ResourceList
	}{
		{name: "nothing set gets both defaults", wantRequests: DefaultEtcdRequests},
		{name: "user requests are kept, the missing one filled in",
			user:         corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")}},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("2"), corev1.ResourceMemory: q("128Mi")}},
		{name: "a limit alone is not given a smaller request",
			user:         corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("100m")},
			wantLimits:   corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}},
		{name: "both set by the user",
			user:         corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("2Gi")}},
			wantRequests: corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("2Gi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{})
			m.Spec.Resources = tt.user
			got := MemberPod(m, true).Spec.Containers[0].Resources
			if !equalResources(got.Requests, tt.wantRequests) || !equalResources(got.Limits, tt.wantLimits) {
				t.Errorf("resources = %v / %v, want requests %v limits %v", got.Requests, got.Limits, tt.wantRequests, tt.wantLimits)
			}
			if len(tt.user.Requests) == 0 && m.Spec.Resources.Requests != nil {
				t.Errorf("the builder changed the member's spec: %v", m.Spec.Resources)
			}
		})
	}
}

func equalResources(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v.Cmp(w) != 0 {
			return false
		}
	}
	return true
}

func TestMemberPodSpreads(t *testing.T) {
	t.Parallel()
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}}}},
	}}
	tests := []struct {
		name       string
		user       *corev1.Affinity
		wantSpread bool
	}{
		{name: "no affinity spreads over nodes and zones", wantSpread: true},
		{name: "the user's node affinity is kept next to the spreading", user: &corev1.Affinity{NodeAffinity: nodeAffinity}, wantSpread: true},
		{name: "an empty podAntiAffinity turns spreading off", user: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{})
			m.Spec.PodTemplate.Affinity = tt.user
			a := MemberPod(m, true).Spec.Affinity
			if tt.user != nil && tt.user.NodeAffinity != nil && a.NodeAffinity == nil {
				t.Errorf("node affinity dropped: %+v", a)
			}
			terms := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
			if !tt.wantSpread {
				if len(terms) != 0 || a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
					t.Errorf("anti-affinity %+v, want the user's empty one", a.PodAntiAffinity)
				}
				return
			}
			keys := map[string]int32{}
			for _, term := range terms {
				keys[term.PodAffinityTerm.TopologyKey] = term.Weight
				sel := term.PodAffinityTerm.LabelSelector.MatchLabels
				if sel[etcdv1.ClusterLabel] != "demo" || sel[etcdv1.ShardLabel] != "" {
					t.Errorf("term selects %v, want the cluster's labels without the shard", sel)
				}
			}
			if keys[corev1.LabelHostname] <= keys[corev1.LabelTopologyZone] || keys[corev1.LabelTopologyZone] == 0 {
				t.Errorf("weights %v, want nodes before zones, both soft", keys)
			}
			if a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				t.Errorf("spreading is required, want a preference: %+v", a.PodAntiAffinity)
			}
			if tt.user != nil && tt.user.PodAntiAffinity != nil {
				t.Errorf("the builder changed the member's spec")
			}
		})
	}
}

// TestOperatorFlagsAreOwned: every flag the Pod builder sets is one that
// spec.options.extraArgs may not set (owned, or with a typed field), so no
// user flag can override the operator's.
func TestOperatorFlagsAreOwned(t *testing.T) {
	t.Parallel()
	m := member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{
		QuotaBackendBytes: ptr.To[int64](1), AutoCompactionMode: "periodic", AutoCompactionRetention: "1h",
		SnapshotCount: ptr.To[int64](1), HeartbeatIntervalMillis: ptr.To[int32](100), ElectionTimeoutMillis: ptr.To[int32](1000),
		MaxRequestBytes: ptr.To[int32](1),
	}, etcdv1.StorageSpec{})
	m.Spec.TLS = &etcdv1.MemberTLS{PeerSecretName: "p", ServerSecretName: "s", ClientCertAuth: true}
	refused := append(slices.Clone(etcdv1.OwnedExtraArgs), etcdv1.TypedExtraArgs...)
	for _, version := range []string{"3.5.35", "3.6.16", "3.7.3"} {
		m.Spec.Version = version
		for _, a := range EtcdArgs(m, true) {
			flag, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			if slices.Contains(etcdv1.DefaultedExtraArgs, flag) {
				continue // the operator's default, extraArgs may set it
			}
			if !slices.Contains(refused, flag) {
				t.Errorf("the operator sets --%s, which spec.options.extraArgs could override: add it to OwnedExtraArgs", flag)
			}
			if slices.Contains(etcdv1.AllowedExtraArgs, flag) {
				t.Errorf("--%s is both set by the operator and allowed in extraArgs", flag)
			}
		}
	}
}

// TestCorruptionChecksOnByDefault: each version gets its own names for the
// corruption checks, and a user's own setting wins.
func TestCorruptionChecksOnByDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version string
		extra   map[string]etcdv1.ExtraArgValue
		want    []string
		notWant []string
	}{
		{version: "3.5.35", want: []string{"--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true"}, notWant: []string{"--feature-gates"}},
		{version: "3.6.16", want: []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}, notWant: []string{"--experimental-"}},
		{version: "3.7.3", want: []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}, notWant: []string{"--experimental-"}},
		{version: "3.6.16", extra: map[string]etcdv1.ExtraArgValue{"feature-gates": "StopGRPCServiceOnDefrag=true,CompactHashCheck=false"},
			want: []string{"--feature-gates=StopGRPCServiceOnDefrag=true,CompactHashCheck=false,InitialCorruptCheck=true"}},
		{version: "3.5.35", extra: map[string]etcdv1.ExtraArgValue{"experimental-initial-corrupt-check": "false"},
			want: []string{"--experimental-initial-corrupt-check=false", "--experimental-compact-hash-check-enabled=true"}},
	} {
		m := member(etcdv1.InitialClusterStateExisting, etcdv1.EtcdOptions{ExtraArgs: tc.extra}, etcdv1.StorageSpec{})
		m.Spec.Version = tc.version
		args := strings.Join(EtcdArgs(m, false), " ")
		for _, w := range tc.want {
			if !strings.Contains(args, w) {
				t.Errorf("%s %v: args %s lack %s", tc.version, tc.extra, args, w)
			}
		}
		for _, w := range tc.notWant {
			if strings.Contains(args, w) {
				t.Errorf("%s: args %s have %s", tc.version, args, w)
			}
		}
		if tc.extra != nil && len(m.Spec.Options.ExtraArgs) != len(tc.extra) {
			t.Errorf("the builder changed the member's extraArgs: %v", m.Spec.Options.ExtraArgs)
		}
	}
}

// TestJoinerPodIsGated: the first Pod of a member that joins a running
// cluster starts etcd through the agent's join gate, asking the members it
// was made with, with the peer certificate; every other Pod runs etcd
// itself, as before.
func TestJoinerPodIsGated(t *testing.T) {
	t.Parallel()
	joiner := func() *etcdv1.EtcdMember {
		m := member(etcdv1.InitialClusterStateExisting, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{})
		m.Spec.AgentImage = "raftsman:dev"
		m.Spec.InitialCluster = "demo-a=https://demo-a.demo-peer.ns.svc.cluster.local:2380,demo-b=https://demo-b.demo-peer.ns.svc.cluster.local:2380," + m.Name + "=" + m.Spec.PeerURL
		m.Spec.TLS = &etcdv1.MemberTLS{PeerSecretName: "demo-peer-tls", ServerSecretName: "demo-server-tls"}
		return m
	}
	tests := []struct {
		name     string
		mutate   func(*etcdv1.EtcdMember)
		firstPod bool
		gated    bool
	}{
		{"joiner's first Pod", func(*etcdv1.EtcdMember) {}, true, true},
		{"joiner's later Pod: etcd lists it by then", func(*etcdv1.EtcdMember) {}, false, false},
		{"initial member", func(m *etcdv1.EtcdMember) { m.Spec.InitialClusterState = etcdv1.InitialClusterStateNew }, true, false},
		{"no agent image", func(m *etcdv1.EtcdMember) { m.Spec.AgentImage = "" }, true, false},
		{"force-new-cluster", func(m *etcdv1.EtcdMember) { m.Spec.ForceNewCluster = true }, true, false},
		{"restored", func(m *etcdv1.EtcdMember) {
			m.Spec.Restore = &etcdv1.MemberRestore{Key: "k", SHA256: "s", AgentImage: "raftsman:dev"}
		}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := joiner()
			tt.mutate(m)
			p := MemberPod(m, tt.firstPod)
			etcd := p.Spec.Containers[0]
			var check corev1.Container
			if n := len(p.Spec.InitContainers); n > 0 {
				check = p.Spec.InitContainers[n-1]
			}
			if got := JoinsGated(m, tt.firstPod); got != tt.gated {
				t.Fatalf("JoinsGated = %v, want %v", got, tt.gated)
			}
			if !tt.gated {
				if etcd.Command[0] != "/usr/local/bin/etcd" || etcd.StartupProbe != nil {
					t.Errorf("not gated: command %q, startup probe %v; want etcd itself, no startup probe", etcd.Command, etcd.StartupProbe)
				}
				if m.Spec.AgentImage != "" && slices.ContainsFunc(check.Args, func(a string) bool { return strings.HasPrefix(a, "--install-to") }) {
					t.Errorf("not gated: check-data installs the agent: %q", check.Args)
				}
				return
			}
			if etcd.Command[0] != "/raftsman-tools/raftsman-gate" {
				t.Errorf("command %q, want the agent copied by the init container", etcd.Command)
			}
			sep := slices.Index(etcd.Args, "--")
			if sep < 0 || etcd.Args[sep+1] != "/usr/local/bin/etcd" {
				t.Fatalf("args %q: want the gate's flags, --, then etcd's command line", etcd.Args)
			}
			wantGate := []string{"join", "--name=" + m.Name, "--peer-url=" + m.Spec.PeerURL, "--data-dir=/var/lib/etcd/data",
				"--peers=https://demo-a.demo-peer.ns.svc.cluster.local:2380,https://demo-b.demo-peer.ns.svc.cluster.local:2380",
				"--cert=/etc/etcd/tls/peer/tls.crt", "--key=/etc/etcd/tls/peer/tls.key", "--cacert=/etc/etcd/tls/peer/ca.crt"}
			if !slices.Equal(etcd.Args[:sep], wantGate) {
				t.Errorf("gate flags\n got %q\nwant %q", etcd.Args[:sep], wantGate)
			}
			if !slices.Equal(etcd.Args[sep+2:], EtcdArgs(m, true)) {
				t.Errorf("etcd's flags behind the gate differ from EtcdArgs")
			}
			if !slices.Contains(check.Args, "--install-to=/raftsman-tools/raftsman-gate") || !slices.Contains(check.Args, "--first-pod") {
				t.Errorf("check-data args %q: want the agent installed in the same init step", check.Args)
			}
			if len(p.Spec.InitContainers) != 1 {
				t.Errorf("%d init containers, want one", len(p.Spec.InitContainers))
			}
			if etcd.StartupProbe == nil || etcd.StartupProbe.PeriodSeconds != 1 || etcd.StartupProbe.FailureThreshold*etcd.StartupProbe.PeriodSeconds < 600 {
				t.Errorf("startup probe %+v: want one asked every second that lets a joiner wait", etcd.StartupProbe)
			}
			if PodSpecHash(m) != PodSpecHash(joiner()) {
				t.Errorf("the gate changed the spec hash")
			}
		})
	}
}

// TestStartsAfter: a Pod of a member that ran starts etcd behind the gate
// with the peers to wait for; a joiner's gated Pod gets them added; a Pod
// without the agent image, or no peers, is left as it is; a restored
// member keeps one tools volume.
func TestStartsAfter(t *testing.T) {
	t.Parallel()
	peers := []string{"https://demo-a.demo-peer.ns.svc.cluster.local:2380"}
	tests := []struct {
		name     string
		mutate   func(*etcdv1.EtcdMember)
		firstPod bool
		peers    []string
		gated    bool
	}{
		{"a member that ran", func(*etcdv1.EtcdMember) {}, false, peers, true},
		{"no peers", func(*etcdv1.EtcdMember) {}, false, nil, false},
		{"no agent image", func(m *etcdv1.EtcdMember) { m.Spec.AgentImage = "" }, false, peers, false},
		{"a joiner's gated Pod", func(m *etcdv1.EtcdMember) { m.Spec.InitialClusterState = etcdv1.InitialClusterStateExisting }, true, peers, true},
		{"a restored member", func(m *etcdv1.EtcdMember) {
			m.Spec.Restore = &etcdv1.MemberRestore{Key: "k", SHA256: "s", AgentImage: "raftsman:dev"}
		}, false, peers, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := member(etcdv1.InitialClusterStateNew, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{})
			m.Spec.AgentImage = "raftsman:dev"
			tt.mutate(m)
			p := MemberPod(m, tt.firstPod)
			StartsAfter(p, m, tt.peers)
			etcd := p.Spec.Containers[0]
			if !tt.gated {
				if etcd.Command[0] != "/usr/local/bin/etcd" {
					t.Errorf("command %q, want etcd itself", etcd.Command)
				}
				return
			}
			sep := slices.Index(etcd.Args, "--")
			if etcd.Command[0] != "/raftsman-tools/raftsman-gate" || sep < 0 || !slices.Contains(etcd.Args[:sep], "--after="+peers[0]) {
				t.Errorf("command %q args %q: want the gate with --after before --", etcd.Command, etcd.Args)
			}
			if !slices.Equal(etcd.Args[sep+2:], EtcdArgs(m, tt.firstPod)) {
				t.Errorf("etcd's flags behind the gate differ from EtcdArgs")
			}
			n := 0
			for _, v := range p.Spec.Volumes {
				if v.Name == "raftsman-tools" {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d tools volumes, want 1", n)
			}
			installs := 0
			for _, c := range p.Spec.InitContainers {
				if slices.Contains(c.Args, "--install-to=/raftsman-tools/raftsman-gate") {
					installs++
				}
			}
			if installs != 1 {
				t.Errorf("%d init containers install the gate, want 1", installs)
			}
		})
	}
}
