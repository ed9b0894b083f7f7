package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

const (
	dataVolume = "data"
	dataMount  = "/var/lib/etcd"
	// dataDir is a folder inside the volume: etcd wants to create it with
	// mode 0700 itself, which it cannot do on a volume's root.
	dataDir = dataMount + "/data"
	// etcdUser runs etcd: the Pods pass the restricted Pod Security Standard.
	etcdUser = 65532

	peerTLSVolume   = "peer-tls"
	peerTLSMount    = "/etc/etcd/tls/peer"
	serverTLSVolume = "server-tls"
	serverTLSMount  = "/etc/etcd/tls/server"
)

// DefaultStorageSize is the size of a member volume when the spec has none.
var DefaultStorageSize = resource.MustParse("1Gi")

// DefaultEtcdRequests are the etcd container's requests for a resource the
// spec names neither a request nor a limit for. Without them a member Pod
// is BestEffort: the first to be evicted under memory pressure, and free
// to be packed onto a node with no room for it. An idle member uses about
// 25 MiB; these leave room for a small cluster's working set and are meant
// to be raised with spec.resources for real load.
var DefaultEtcdRequests = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("128Mi"),
}

// DefaultAgentRequests are the requests of backup and restore agent Pods:
// a snapshot streams through one upload part (16 MiB) of memory.
var DefaultAgentRequests = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("50m"),
	corev1.ResourceMemory: resource.MustParse("64Mi"),
}

// Spreading weights of a member Pod: nodes first, then zones, so that one
// lost node or zone takes as few members as the scheduler can manage.
const (
	spreadNodeWeight = 100
	spreadZoneWeight = 50
)

// EtcdArgs is etcd's command line for a member. Only the first Pod of an
// initial member may bootstrap a new cluster: any later Pod of it joins the
// cluster that exists by then.
func EtcdArgs(m *etcdv1.EtcdMember, firstPod bool) []string {
	state := "existing"
	if firstPod && m.Spec.InitialClusterState == etcdv1.InitialClusterStateNew {
		state = "new"
	}
	scheme := "http"
	if m.Spec.TLS != nil {
		scheme = "https"
	}
	args := []string{
		"--name=" + m.Name,
		"--data-dir=" + dataDir,
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", scheme, etcdv1.PeerPort),
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", scheme, etcdv1.ClientPort),
		// Plain HTTP, for the kubelet's probes and for scraping.
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", etcdv1.MetricsPort),
		"--initial-advertise-peer-urls=" + m.Spec.PeerURL,
		"--advertise-client-urls=" + m.Spec.ClientURL,
		"--initial-cluster=" + m.Spec.InitialCluster,
		"--initial-cluster-state=" + state,
		"--initial-cluster-token=" + m.Spec.ClusterToken,
	}
	add := func(flag string, v string) { args = append(args, "--"+flag+"="+v) }
	if m.Spec.ForceNewCluster {
		// Only while the operator recovers a lost quorum from this member.
		add("force-new-cluster", "true")
	}
	if m.Spec.MaxLearners > 0 {
		add("max-learners", strconv.Itoa(int(m.Spec.MaxLearners)))
	}
	if t := m.Spec.TLS; t != nil {
		// etcd reads the certificate and key files again on every new
		// connection, so renewed Secrets reach it without a restart.
		add("peer-cert-file", peerTLSMount+"/tls.crt")
		add("peer-key-file", peerTLSMount+"/tls.key")
		add("peer-trusted-ca-file", peerTLSMount+"/ca.crt")
		add("peer-client-cert-auth", "true")
		// A peer must present a certificate for the cluster's own peer
		// names, not just any from a CA the members trust: a CA shared by
		// several clusters (one issuer for a platform) would otherwise let
		// a member of another cluster in. The peer certificate covers
		// *.<cluster>-peer.<ns>.svc[.<domain>], so every member's own name
		// is one each legitimate peer's certificate covers.
		if host := peerHost(m.Spec.PeerURL); host != "" {
			add("peer-cert-allowed-hostname", host)
		}
		add("cert-file", serverTLSMount+"/tls.crt")
		add("key-file", serverTLSMount+"/tls.key")
		if t.ClientCertAuth {
			add("trusted-ca-file", serverTLSMount+"/ca.crt")
			add("client-cert-auth", "true")
		}
	}
	o := m.Spec.Options
	if o.QuotaBackendBytes != nil {
		add("quota-backend-bytes", strconv.FormatInt(*o.QuotaBackendBytes, 10))
	}
	if o.AutoCompactionMode != "" {
		add("auto-compaction-mode", o.AutoCompactionMode)
	}
	if o.AutoCompactionRetention != "" {
		add("auto-compaction-retention", o.AutoCompactionRetention)
	}
	if o.SnapshotCount != nil {
		add("snapshot-count", strconv.FormatInt(*o.SnapshotCount, 10))
	}
	if o.HeartbeatIntervalMillis != nil {
		add("heartbeat-interval", strconv.Itoa(int(*o.HeartbeatIntervalMillis)))
	}
	if o.ElectionTimeoutMillis != nil {
		add("election-timeout", strconv.Itoa(int(*o.ElectionTimeoutMillis)))
	}
	if o.MaxRequestBytes != nil {
		add("max-request-bytes", strconv.Itoa(int(*o.MaxRequestBytes)))
	}
	extra := stringMap(o.ExtraArgs)
	corruptionChecks(m.Spec.Version, extra)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		add(k, extra[k])
	}
	return args
}

// corruptionChecks turns on etcd's corruption checks, unless extra sets
// them: the check at start (a member whose data differs from the others'
// does not join) and the check after each compaction (the leader compares
// the members' hashes; a mismatch raises a CORRUPT alarm, and the operator
// replaces the member it names). etcd 3.5 names them experimental flags,
// 3.6 and later feature gates (3.7 removed the flags).
func corruptionChecks(version string, extra map[string]string) {
	if strings.HasPrefix(version, "3.5.") {
		for _, f := range []string{"experimental-initial-corrupt-check", "experimental-compact-hash-check-enabled"} {
			if _, ok := extra[f]; !ok {
				extra[f] = "true"
			}
		}
		return
	}
	gates := extra["feature-gates"]
	for _, g := range []string{"InitialCorruptCheck", "CompactHashCheck"} {
		if !strings.Contains(gates, g+"=") {
			gates = strings.TrimPrefix(gates+","+g+"=true", ",")
		}
	}
	extra["feature-gates"] = gates
}

// EtcdContainer is the name of the etcd container of a member Pod.
const EtcdContainer = "etcd"

// ServingValue is the value of the member Pod's serving label: "false"
// while the member is drained, so the client Service leaves it out.
func ServingValue(m *etcdv1.EtcdMember) string {
	return strconv.FormatBool(!m.Spec.Drained)
}

// MemberPod is the Pod of a member. Its name and hostname are the member's
// name, so the member's DNS name under the peer Service never changes.
// firstPod is true when the member never had a Pod before.
func MemberPod(m *etcdv1.EtcdMember, firstPod bool) *corev1.Pod {
	t := m.Spec.PodTemplate
	labels := stringMap(t.Metadata.Labels)
	maps.Copy(labels, MemberLabels(m))
	labels[etcdv1.ServingLabel] = ServingValue(m)

	probe := func(path string, period, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("metrics")}},
			PeriodSeconds:    period,
			TimeoutSeconds:   5,
			FailureThreshold: failures,
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        m.Name,
			Namespace:   m.Namespace,
			Labels:      labels,
			Annotations: podAnnotations(m),
		},
		Spec: corev1.PodSpec{
			Hostname:           m.Name,
			Subdomain:          PeerServiceName(m.Spec.ClusterName),
			RestartPolicy:      corev1.RestartPolicyAlways,
			EnableServiceLinks: ptr.To(false),
			// etcd needs no Kubernetes API access.
			AutomountServiceAccountToken:  ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Affinity:                      spreadAffinity(t.Affinity, ClusterLabels(m.Spec.ClusterName)),
			Tolerations:                   tolerations(t.Tolerations),
			NodeSelector:                  nilIfEmpty(stringMap(t.NodeSelector)),
			TopologySpreadConstraints:     t.TopologySpreadConstraints,
			PriorityClassName:             t.PriorityClassName,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				RunAsUser:      ptr.To[int64](etcdUser),
				RunAsGroup:     ptr.To[int64](etcdUser),
				FSGroup:        ptr.To[int64](etcdUser),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:            EtcdContainer,
				Image:           m.Spec.Image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/usr/local/bin/etcd"},
				Args:            EtcdArgs(m, firstPod),
				Ports: []corev1.ContainerPort{
					{Name: "client", ContainerPort: etcdv1.ClientPort, Protocol: corev1.ProtocolTCP},
					{Name: "peer", ContainerPort: etcdv1.PeerPort, Protocol: corev1.ProtocolTCP},
					{Name: "metrics", ContainerPort: etcdv1.MetricsPort, Protocol: corev1.ProtocolTCP},
				},
				Resources:    withDefaultRequests(m.Spec.Resources, DefaultEtcdRequests),
				VolumeMounts: volumeMounts(m),
				// A learner is never ready (etcd's readyz refuses learners), so
				// clients of the client Service only reach voters.
				ReadinessProbe: probe("/readyz", 1, 3),
				// Generous, so that a member replaying a large WAL is not
				// killed. No startup probe: the kubelet would hold readiness
				// checks back until it passed, delaying every Pod's Ready.
				LivenessProbe: probe("/livez", 5, 24),
				// The end of etcd's log is the termination message: the
				// member controller tells from it an etcd that exits
				// because it cannot read its data (etcdRefusedData), and
				// says why a container cannot run.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false),
					ReadOnlyRootFilesystem:   ptr.To(true),
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
			Volumes: volumes(m),
		},
	}
	if m.Spec.Restore != nil {
		inits, vols := restoreInitContainers(m)
		pod.Spec.InitContainers = inits
		pod.Spec.Volumes = append(pod.Spec.Volumes, vols...)
	}
	if m.Spec.AgentImage != "" {
		c, vols := checkDataContainer(m, firstPod)
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
		pod.Spec.Volumes = append(pod.Spec.Volumes, vols...)
	}
	if JoinsGated(m, firstPod) {
		// The agent starts etcd once etcd lists the member.
		useGate(pod, m)
		// While the gate waits nothing listens: without a startup probe
		// the liveness probe would kill a joiner that waits its turn for
		// two minutes, and the kubelet's back-off would then delay its
		// start long after it was added. The startup probe holds the
		// liveness and readiness probes back until etcd answers; it is
		// asked every second, so readiness is checked at most a second
		// after etcd starts. A joiner is never ready before it is
		// promoted anyway (etcd's readyz refuses learners).
		pod.Spec.Containers[0].StartupProbe = probe("/livez", 1, joinWaitSeconds)
	}
	return pod
}

// useGate makes the join gate (pkg/gate) start etcd in the Pod: the one
// init step (check-data) also copies the gate next to etcd, and the etcd
// container runs the gate, which execs etcd. No-op without the agent
// image, or when the Pod has the gate already.
func useGate(pod *corev1.Pod, m *etcdv1.EtcdMember) {
	etcd := &pod.Spec.Containers[0]
	if m.Spec.AgentImage == "" || etcd.Command[0] == gateBinary {
		return
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; c.Name == CheckDataContainer {
			c.Args = append(c.Args, "--install-to="+gateBinary)
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: toolsVolume, MountPath: toolsMount})
		}
	}
	// A restored member's Pods have the volume already (its restore
	// init containers copy the agent there too).
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == toolsVolume }) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: toolsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	etcd.Command = []string{gateBinary}
	etcd.Args = append(joinArgs(m), append([]string{"--", "/usr/local/bin/etcd"}, etcd.Args...)...)
	etcd.VolumeMounts = append(etcd.VolumeMounts, corev1.VolumeMount{Name: toolsVolume, MountPath: toolsMount, ReadOnly: true})
}

// gateBinary is where the check-data init container copies the gate
// (pkg/gate, a few megabytes: not the operator's whole binary).
const gateBinary = toolsMount + "/raftsman-gate"

// StartsAfter makes the Pod of a member that has run start etcd only once
// each member at peers serves its peers, at most 10 s (pkg/agent, join
// --after). The member controller uses it when every member of a cluster
// starts again at once: see the agent for why. A Pod without the agent
// image is left as it is.
func StartsAfter(pod *corev1.Pod, m *etcdv1.EtcdMember, peers []string) {
	if len(peers) == 0 || m.Spec.AgentImage == "" {
		return
	}
	useGate(pod, m)
	etcd := &pod.Spec.Containers[0]
	i := slices.Index(etcd.Args, "--")
	etcd.Args = slices.Insert(etcd.Args, i, "--restart", "--after="+strings.Join(peers, ","))
}

// joinWaitSeconds is how long a prepared joiner waits to be added before
// the kubelet restarts its etcd container (the gate then waits again):
// long enough for a scale by the largest step, one learner at a time. The
// startup probe stays with the Pod, so it is also how long an etcd of this
// Pod that hangs after a later restart goes on before the kubelet kills it.
const joinWaitSeconds = 600

// JoinsGated says whether the Pod of a member is a prepared joiner's: the
// first Pod of a member that joins a running cluster, made before etcd
// lists the member so that its scheduling, volume and image start overlap
// with the membership change. Its etcd container runs the agent's join
// gate, which starts etcd only once etcd lists the member, with the member
// list of that moment as --initial-cluster (pkg/agent, join). Later Pods
// of a member are made only once etcd lists it (the member controller),
// and a restored or force-new-cluster member does not join.
func JoinsGated(m *etcdv1.EtcdMember, firstPod bool) bool {
	return firstPod && m.Spec.AgentImage != "" && m.Spec.InitialClusterState == etcdv1.InitialClusterStateExisting &&
		m.Spec.Restore == nil && !m.Spec.ForceNewCluster
}

// joinArgs are the gate's flags: whom to ask for the member list (the
// members the joiner was made with: the gate adds those they list), and
// the member's peer certificate to ask with.
func joinArgs(m *etcdv1.EtcdMember) []string {
	var peers []string
	for pair := range strings.SplitSeq(m.Spec.InitialCluster, ",") {
		if _, u, ok := strings.Cut(pair, "="); ok && u != m.Spec.PeerURL {
			peers = append(peers, u)
		}
	}
	args := []string{"join", "--name=" + m.Name, "--peer-url=" + m.Spec.PeerURL, "--data-dir=" + dataDir, "--peers=" + strings.Join(peers, ",")}
	if m.Spec.TLS != nil {
		args = append(args, "--cert="+peerTLSMount+"/tls.crt", "--key="+peerTLSMount+"/tls.key", "--cacert="+peerTLSMount+"/ca.crt")
	}
	return args
}

// The marker check-data keeps (see pkg/agent): on the member's PVC next to
// the data directory, or, for a tmpfs member, on a disk volume of the Pod,
// which outlives a wiped tmpfs (a node reboot) but not the Pod.
const (
	stateVolume = "state"
	stateMount  = "/var/lib/raftsman"
	// CheckDataContainer is the name of the init container that checks the
	// data directory before etcd starts.
	CheckDataContainer = "check-data"
)

// checkDataContainer is the init container that refuses to let etcd start
// under the member's identity without the member's data.
func checkDataContainer(m *etcdv1.EtcdMember, firstPod bool) (corev1.Container, []corev1.Volume) {
	marker := dataMount + "/raftsman-member.json"
	mounts := []corev1.VolumeMount{{Name: dataVolume, MountPath: dataMount}}
	var vols []corev1.Volume
	if !UsesPVC(m) {
		marker = stateMount + "/member.json"
		mounts = append(mounts, corev1.VolumeMount{Name: stateVolume, MountPath: stateMount})
		vols = append(vols, corev1.Volume{Name: stateVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	args := []string{"agent", "check-data", "--data-dir=" + dataDir, "--marker=" + marker, "--member=" + m.Name, "--uid=" + string(m.UID)}
	if firstPod {
		args = append(args, "--first-pod")
	}
	return corev1.Container{
		Name:                     CheckDataContainer,
		Image:                    m.Spec.AgentImage,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		Command:                  []string{AgentBinary},
		Args:                     args,
		VolumeMounts:             mounts,
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		SecurityContext:          restrictedContainer(),
		Resources:                corev1.ResourceRequirements{Requests: DefaultAgentRequests.DeepCopy()},
	}, vols
}

// peerHost is the host name of a member's peer URL.
func peerHost(peerURL string) string {
	u, err := url.Parse(peerURL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// withDefaultRequests fills in a request for each default resource the
// user set neither a request nor a limit for. A limit alone is left alone:
// Kubernetes then requests the limit.
func withDefaultRequests(r corev1.ResourceRequirements, defaults corev1.ResourceList) corev1.ResourceRequirements {
	out := *r.DeepCopy()
	for name, q := range defaults {
		if _, ok := out.Requests[name]; ok {
			continue
		}
		if _, ok := out.Limits[name]; ok {
			continue
		}
		if out.Requests == nil {
			out.Requests = corev1.ResourceList{}
		}
		out.Requests[name] = q.DeepCopy()
	}
	return out
}

// spreadAffinity is the user's affinity with, unless the user wrote a
// podAntiAffinity of their own (an empty one turns spreading off), a soft
// preference to put the cluster's members on different nodes and then
// different zones. Soft, so that a cluster still starts on one node (a
// test cluster, a small platform); a node without a zone label simply does
// not count for the zone term.
func spreadAffinity(user *corev1.Affinity, cluster map[string]string) *corev1.Affinity {
	a := &corev1.Affinity{}
	if user != nil {
		a = user.DeepCopy()
	}
	if a.PodAntiAffinity != nil {
		return a
	}
	term := func(weight int32, key string) corev1.WeightedPodAffinityTerm {
		return corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: maps.Clone(cluster)},
			TopologyKey:   key,
		}}
	}
	a.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{
		term(spreadNodeWeight, corev1.LabelHostname),
		term(spreadZoneWeight, corev1.LabelTopologyZone),
	}}
	return a
}

// podAnnotations are the user's, the trust revision the Pod starts with,
// and the hash of the spec it is built from.
func podAnnotations(m *etcdv1.EtcdMember) map[string]string {
	a := stringMap(m.Spec.PodTemplate.Metadata.Annotations)
	if m.Spec.TLS != nil && m.Spec.TLS.TrustRevision != "" {
		a[etcdv1.TrustRevisionAnnotation] = m.Spec.TLS.TrustRevision
	}
	a[etcdv1.PodSpecHashAnnotation] = PodSpecHash(m)
	return a
}

// PodSpecHash is the hash of the member spec fields a running member's Pod
// is built from and that may change while it runs: version, image,
// resources, Pod template, etcd options, TLS (trusted CAs included) and,
// for a Memory member, its tmpfs size. A Pod whose hash differs runs an
// older spec and is restarted, one member at a time, by a rollout.
//
// The hash covers the spec, not the Pod the builder makes of it: an
// operator upgrade that builds Pods differently restarts nothing by
// itself; its Pods take effect at the member's next rollout. Fields that
// matter only to a member's first Pod (initial cluster, restore) or to its
// PVC (a PVC's size grows online) are left out.
func PodSpecHash(m *etcdv1.EtcdMember) string {
	in := struct {
		Version     string                      `json:"version"`
		Image       string                      `json:"image"`
		Resources   corev1.ResourceRequirements `json:"resources"`
		PodTemplate etcdv1.PodTemplate          `json:"podTemplate"`
		Options     etcdv1.EtcdOptions          `json:"options"`
		TLS         *etcdv1.MemberTLS           `json:"tls,omitempty"`
		MemorySize  *resource.Quantity          `json:"memorySize,omitempty"`
		Force       bool                        `json:"forceNewCluster,omitempty"`
		// Left out when 0, so that the hash of a member made before the
		// field existed is the same.
		MaxLearners int32 `json:"maxLearners,omitempty"`
	}{m.Spec.Version, m.Spec.Image, m.Spec.Resources, m.Spec.PodTemplate, m.Spec.Options, m.Spec.TLS, nil, m.Spec.ForceNewCluster, m.Spec.MaxLearners}
	if !UsesPVC(m) {
		in.MemorySize = storageSize(m.Spec.Storage)
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Plain data with no custom marshalers that can fail.
		panic(fmt.Sprintf("hash the spec of member %s: %v", m.Name, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// PodUpToDate says whether a member's Pod was built from the member's
// current spec. A Pod made before Pods carried the hash counts as up to
// date when it started with the member's trusted CAs; the member
// controller then stamps the hash on it (AdoptPod).
func PodUpToDate(m *etcdv1.EtcdMember, p *corev1.Pod) bool {
	h, ok := p.Annotations[etcdv1.PodSpecHashAnnotation]
	if !ok {
		return startedWithTrust(m, p)
	}
	return h == PodSpecHash(m)
}

// NeedsHashStamp says whether p was made before Pods carried the spec
// hash and may take its member's current hash as its own.
func NeedsHashStamp(m *etcdv1.EtcdMember, p *corev1.Pod) bool {
	_, ok := p.Annotations[etcdv1.PodSpecHashAnnotation]
	return !ok && startedWithTrust(m, p)
}

// startedWithTrust says whether a member's Pod started trusting the CAs
// its spec names now.
func startedWithTrust(m *etcdv1.EtcdMember, p *corev1.Pod) bool {
	if m.Spec.TLS == nil {
		return true
	}
	return p.Annotations[etcdv1.TrustRevisionAnnotation] == m.Spec.TLS.TrustRevision
}

func volumeMounts(m *etcdv1.EtcdMember) []corev1.VolumeMount {
	mounts := []corev1.VolumeMount{{Name: dataVolume, MountPath: dataMount}}
	if m.Spec.TLS != nil {
		// Whole Secret volumes, never subPath: only those follow updates.
		mounts = append(mounts,
			corev1.VolumeMount{Name: peerTLSVolume, MountPath: peerTLSMount, ReadOnly: true},
			corev1.VolumeMount{Name: serverTLSVolume, MountPath: serverTLSMount, ReadOnly: true})
	}
	return mounts
}

func volumes(m *etcdv1.EtcdMember) []corev1.Volume {
	vols := []corev1.Volume{dataVolumeSource(m)}
	if t := m.Spec.TLS; t != nil {
		secret := func(name, secretName string) corev1.Volume {
			return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
				SecretName: secretName,
				// Readable by etcd through the Pod's fsGroup only.
				DefaultMode: ptr.To[int32](0o440),
			}}}
		}
		vols = append(vols, secret(peerTLSVolume, t.PeerSecretName), secret(serverTLSVolume, t.ServerSecretName))
	}
	return vols
}

func dataVolumeSource(m *etcdv1.EtcdMember) corev1.Volume {
	if m.Spec.Storage.Medium == etcdv1.StorageMediumMemory {
		return corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMediumMemory, SizeLimit: storageSize(m.Spec.Storage),
		}}}
	}
	return corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: PVCName(m.Name)},
	}}
}

func storageSize(s etcdv1.StorageSpec) *resource.Quantity {
	if s.Size != nil {
		q := s.Size.DeepCopy()
		return &q
	}
	q := DefaultStorageSize.DeepCopy()
	return &q
}

// UsesPVC reports whether the member keeps its data on a PVC.
func UsesPVC(m *etcdv1.EtcdMember) bool {
	return m.Spec.Storage.Medium != etcdv1.StorageMediumMemory
}

// MemberPVC is the data volume claim of a member.
func MemberPVC(m *etcdv1.EtcdMember) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PVCName(m.Name),
			Namespace: m.Namespace,
			Labels:    MemberLabels(m),
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: m.Spec.Storage.StorageClassName,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: *storageSize(m.Spec.Storage)},
			},
		},
	}
}

// stringMap copies a map of typed strings (label or annotation values) into
// a new map of strings, never nil.
func stringMap[V ~string](in map[string]V) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = string(v)
	}
	return out
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// tolerations are the Pod's tolerations of the template's.
func tolerations(in []etcdv1.Toleration) []corev1.Toleration {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, 0, len(in))
	for _, t := range in {
		out = append(out, corev1.Toleration{Key: t.Key, Operator: t.Operator, Value: string(t.Value), Effect: t.Effect, TolerationSeconds: t.TolerationSeconds})
	}
	return out
}
