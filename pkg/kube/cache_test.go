package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
	"github.com/raftsman/raftsman/pkg/resources"
)

// cacheTransform is the transform CacheOptions gives the kind of obj.
func cacheTransform(t *testing.T, obj client.Object) toolscache.TransformFunc {
	t.Helper()
	for o, by := range CacheOptions("shard-0", "ns").ByObject {
		if reflect.TypeOf(o) == reflect.TypeOf(obj) {
			if by.Transform == nil {
				t.Fatalf("%T has no transform", obj)
			}
			return by.Transform
		}
	}
	t.Fatalf("%T has no ByObject entry", obj)
	return nil
}

// transformed runs the cache's transform of obj's kind on a copy of obj.
func transformed[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	out, err := cacheTransform(t, obj)(obj.DeepCopyObject())
	if err != nil {
		t.Fatalf("transform: %v", err)
	}
	return out.(T)
}

var (
	created  = metav1.NewTime(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	started  = metav1.NewTime(created.Add(4 * time.Second))
	deleting = metav1.NewTime(created.Add(time.Hour))
)

// fixtureMember is a member of a TLS cluster whose Pod template adds a
// label and annotations of the user's.
func fixtureMember() *etcdv1.EtcdMember {
	cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"}}
	peer := resources.PeerURL(cl, "demo-x7k2p", "cluster.local")
	return &etcdv1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{
			Name: "demo-x7k2p", Namespace: "ns", UID: "member-uid", Generation: 3,
			Labels: map[string]string{etcdv1.ShardLabel: "shard-0"},
		},
		Spec: etcdv1.EtcdMemberSpec{
			ClusterName:         "demo",
			Version:             "3.6.16",
			Image:               "quay.io/coreos/etcd:v3.6.16",
			InitialClusterState: etcdv1.InitialClusterStateExisting,
			InitialCluster:      resources.InitialCluster([][2]string{{"demo-a", peer}, {"demo-b", peer}, {"demo-x7k2p", peer}}),
			ClusterToken:        "token-uid",
			PeerURL:             peer,
			ClientURL:           resources.ClientURL(cl, "demo-x7k2p", "cluster.local"),
			AgentImage:          "ghcr.io/raftsman/raftsman:v1.4.0",
			TLS:                 &etcdv1.MemberTLS{PeerSecretName: "demo-peer-tls", ServerSecretName: "demo-server-tls", TrustRevision: "rev-7"},
			PodTemplate: etcdv1.PodTemplate{Metadata: etcdv1.PodMetadata{
				Labels:      map[string]etcdv1.LabelValue{"team": "payments"},
				Annotations: map[string]etcdv1.AnnotationValue{"prometheus.io/scrape": "true", "prometheus.io/port": "2381"},
			}},
		},
	}
}

// memberOwner is the controller reference of the fixture member's Pod.
var memberOwner = metav1.OwnerReference{
	APIVersion: "etcd.raftsman.io/v1alpha1", Kind: "EtcdMember", Name: "demo-x7k2p", UID: "member-uid",
	Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
}

// managedFields are the field managers' records the API server keeps on a
// member Pod: the member controller's and the kubelet's.
func managedFields() []metav1.ManagedFieldsEntry {
	spec := `{"f:metadata":{"f:annotations":{".":{},"f:etcd.raftsman.io/pod-spec-hash":{},"f:etcd.raftsman.io/trust-revision":{}},"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{},"f:etcd.raftsman.io/cluster":{},"f:etcd.raftsman.io/member":{},"f:etcd.raftsman.io/serving":{},"f:etcd.raftsman.io/shard":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"member-uid\"}":{}}},"f:spec":{"f:affinity":{".":{},"f:podAntiAffinity":{".":{},"f:preferredDuringSchedulingIgnoredDuringExecution":{}}},"f:automountServiceAccountToken":{},"f:containers":{"k:{\"name\":\"etcd\"}":{".":{},"f:args":{},"f:command":{},"f:image":{},"f:imagePullPolicy":{},"f:livenessProbe":{".":{},"f:failureThreshold":{},"f:httpGet":{".":{},"f:path":{},"f:port":{},"f:scheme":{}},"f:periodSeconds":{},"f:successThreshold":{},"f:timeoutSeconds":{}},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":2379,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}},"f:readinessProbe":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}},"f:securityContext":{},"f:terminationMessagePath":{},"f:terminationMessagePolicy":{},"f:volumeMounts":{}}},"f:dnsPolicy":{},"f:enableServiceLinks":{},"f:hostname":{},"f:initContainers":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:subdomain":{},"f:terminationGracePeriodSeconds":{},"f:volumes":{}}}`
	status := `{"f:status":{"f:conditions":{"k:{\"type\":\"ContainersReady\"}":{".":{},"f:lastProbeTime":{},"f:lastTransitionTime":{},"f:status":{},"f:type":{}},"k:{\"type\":\"Initialized\"}":{},"k:{\"type\":\"PodReadyToStartContainers\"}":{},"k:{\"type\":\"Ready\"}":{}},"f:containerStatuses":{},"f:hostIP":{},"f:hostIPs":{},"f:initContainerStatuses":{},"f:phase":{},"f:podIP":{},"f:podIPs":{".":{},"k:{\"ip\":\"10.244.3.17\"}":{".":{},"f:ip":{}}},"f:startTime":{}}}`
	return []metav1.ManagedFieldsEntry{
		{Manager: "raftsman-member", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(spec)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &started, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(status)}, Subresource: "status"},
	}
}

// fullMemberPod is the fixture member's Pod as the API server stores it
// once the kubelet runs it: the member controller's Pod with the API
// server's defaults, an admission webhook's proxy settings, a CNI's
// annotation and the kubelet's status of a Ready member that restarted
// once.
func fullMemberPod() *corev1.Pod {
	m := fixtureMember()
	p := resources.MemberPod(m, false)
	p.UID, p.ResourceVersion, p.Generation, p.CreationTimestamp = "pod-uid", "918273", 1, created
	p.OwnerReferences = []metav1.OwnerReference{memberOwner}
	p.ManagedFields = managedFields()
	p.Annotations["k8s.v1.cni.cncf.io/network-status"] = `[{"name":"cilium","interface":"eth0","ips":["10.244.3.17"],"mac":"0a:58:0a:f4:03:11","default":true,"dns":{}}]`
	p.Annotations["kubectl.kubernetes.io/default-container"] = "etcd"

	// The API server's defaults.
	s := &p.Spec
	s.NodeName = "node-eu-west-1c-7"
	s.DNSPolicy, s.SchedulerName, s.ServiceAccountName, s.DeprecatedServiceAccount = corev1.DNSClusterFirst, corev1.DefaultSchedulerName, "default", "default"
	s.Priority, s.PreemptionPolicy = ptr.To[int32](0), ptr.To(corev1.PreemptLowerPriority)
	s.Tolerations = append(s.Tolerations,
		corev1.Toleration{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)})
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			c.TerminationMessagePath = corev1.TerminationMessagePathDefault
			// A mutating webhook's proxy settings.
			c.Env = append(c.Env,
				corev1.EnvVar{Name: "HTTP_PROXY", Value: "http://proxy.corp.example:3128"},
				corev1.EnvVar{Name: "HTTPS_PROXY", Value: "http://proxy.corp.example:3128"},
				corev1.EnvVar{Name: "NO_PROXY", Value: "localhost,127.0.0.1,.svc,.svc.cluster.local,10.0.0.0/8"},
				corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}})
			for _, probe := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				if probe != nil {
					probe.SuccessThreshold = 1
					probe.HTTPGet.Scheme = corev1.URISchemeHTTP
				}
			}
		}
	}

	// The kubelet's status: Ready, after one restart.
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: started}
	}
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodReadyToStartContainers), cond(corev1.PodInitialized), cond(corev1.PodReady),
			cond(corev1.ContainersReady), cond(corev1.PodScheduled),
		},
		HostIP: "10.0.12.7", HostIPs: []corev1.HostIP{{IP: "10.0.12.7"}},
		PodIP: "10.244.3.17", PodIPs: []corev1.PodIP{{IP: "10.244.3.17"}},
		StartTime: &created,
		QOSClass:  corev1.PodQOSBurstable,
		InitContainerStatuses: []corev1.ContainerStatus{{
			Name: resources.CheckDataContainer, Ready: true,
			Image: "ghcr.io/raftsman/raftsman:v1.4.0", ImageID: "ghcr.io/raftsman/raftsman@sha256:" + strings.Repeat("4e", 32),
			ContainerID: "containerd://" + strings.Repeat("a1", 32), Started: ptr.To(false),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: `{"member":"demo-x7k2p"}`, StartedAt: created, FinishedAt: started,
				ContainerID: "containerd://" + strings.Repeat("a1", 32),
			}},
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "data", MountPath: "/var/lib/etcd"}},
			User:         &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 65532, GID: 65532, SupplementalGroups: []int64{65532}}},
		}},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "etcd", Ready: true, RestartCount: 1,
			Image: "quay.io/coreos/etcd:v3.6.16", ImageID: "quay.io/coreos/etcd@sha256:" + strings.Repeat("9c", 32),
			ContainerID: "containerd://" + strings.Repeat("b2", 32), Started: ptr.To(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "OOMKilled", StartedAt: created, FinishedAt: started,
				ContainerID: "containerd://" + strings.Repeat("c3", 32),
			}},
			AllocatedResources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Resources:          &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			VolumeMounts: []corev1.VolumeMountStatus{
				{Name: "data", MountPath: "/var/lib/etcd"},
				{Name: "peer-tls", MountPath: "/etc/etcd/tls/peer", ReadOnly: true},
				{Name: "server-tls", MountPath: "/etc/etcd/tls/server", ReadOnly: true},
			},
			User: &corev1.ContainerUser{Linux: &corev1.LinuxContainerUser{UID: 65532, GID: 65532, SupplementalGroups: []int64{65532}}},
		}},
	}
	return p
}

// leafPaths are the JSON paths of obj's leaves, list indexes left out.
func leafPaths(t *testing.T, obj any) []string {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				set[path] = true
			}
			for k, e := range x {
				walk(path+"."+k, e)
			}
		case []any:
			for _, e := range x {
				walk(path+"[]", e)
			}
		default:
			set[path] = true
		}
	}
	walk("", v)
	return slices.Sorted(maps.Keys(set))
}

// TestLeanPodKeepsWhatIsRead: of a full member Pod, the cache keeps
// exactly the fields of the table in cache.go, with their values.
func TestLeanPodKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	full := fullMemberPod()
	m := fixtureMember()
	lean := transformed(t, full)

	want := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "demo-x7k2p", Namespace: "ns", UID: "pod-uid", ResourceVersion: "918273", Generation: 1,
			CreationTimestamp: created,
			Labels: map[string]string{
				"team": "payments", etcdv1.NameLabel: "etcd", etcdv1.InstanceLabel: "demo", etcdv1.ManagedByLabel: "raftsman",
				etcdv1.ClusterLabel: "demo", etcdv1.ShardLabel: "shard-0", etcdv1.MemberLabel: "demo-x7k2p", etcdv1.ServingLabel: "true",
			},
			Annotations: map[string]string{
				etcdv1.PodSpecHashAnnotation:   resources.PodSpecHash(m),
				etcdv1.TrustRevisionAnnotation: "rev-7",
			},
			OwnerReferences: []metav1.OwnerReference{memberOwner},
		},
		Spec: corev1.PodSpec{NodeName: "node-eu-west-1c-7"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			Conditions: full.Status.Conditions,
			InitContainerStatuses: []corev1.ContainerStatus{{
				Name: resources.CheckDataContainer, Ready: true,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 0, Reason: "Completed", Message: `{"member":"demo-x7k2p"}`, StartedAt: created, FinishedAt: started,
					ContainerID: "containerd://" + strings.Repeat("a1", 32),
				}},
			}},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name: "etcd", Ready: true, RestartCount: 1,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", StartedAt: created, FinishedAt: started,
					ContainerID: "containerd://" + strings.Repeat("c3", 32),
				}},
			}},
		},
	}
	if !reflect.DeepEqual(lean, want) {
		got, _ := json.MarshalIndent(lean, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("lean Pod:\n%s\nwant:\n%s", got, exp)
	}

	// The same, as the list of fields: what a reader may count on.
	wantPaths := []string{
		".metadata.annotations.etcd.raftsman.io/pod-spec-hash",
		".metadata.annotations.etcd.raftsman.io/trust-revision",
		".metadata.creationTimestamp",
		".metadata.generation",
		".metadata.labels.app.kubernetes.io/instance",
		".metadata.labels.app.kubernetes.io/managed-by",
		".metadata.labels.app.kubernetes.io/name",
		".metadata.labels.etcd.raftsman.io/cluster",
		".metadata.labels.etcd.raftsman.io/member",
		".metadata.labels.etcd.raftsman.io/serving",
		".metadata.labels.etcd.raftsman.io/shard",
		".metadata.labels.team",
		".metadata.name",
		".metadata.namespace",
		".metadata.ownerReferences[].apiVersion",
		".metadata.ownerReferences[].blockOwnerDeletion",
		".metadata.ownerReferences[].controller",
		".metadata.ownerReferences[].kind",
		".metadata.ownerReferences[].name",
		".metadata.ownerReferences[].uid",
		".metadata.resourceVersion",
		".metadata.uid",
		".spec.containers", // required in JSON: null
		".spec.nodeName",
		".status.conditions[].lastProbeTime", // null
		".status.conditions[].lastTransitionTime",
		".status.conditions[].status",
		".status.conditions[].type",
		".status.containerStatuses[].image", // required in JSON: ""
		".status.containerStatuses[].imageID",
		".status.containerStatuses[].lastState.terminated.containerID",
		".status.containerStatuses[].lastState.terminated.exitCode",
		".status.containerStatuses[].lastState.terminated.finishedAt",
		".status.containerStatuses[].lastState.terminated.reason",
		".status.containerStatuses[].lastState.terminated.startedAt",
		".status.containerStatuses[].name",
		".status.containerStatuses[].ready",
		".status.containerStatuses[].restartCount",
		".status.containerStatuses[].state.running.startedAt",
		".status.initContainerStatuses[].image",
		".status.initContainerStatuses[].imageID",
		".status.initContainerStatuses[].lastState",
		".status.initContainerStatuses[].name",
		".status.initContainerStatuses[].ready",
		".status.initContainerStatuses[].restartCount",
		".status.initContainerStatuses[].state.terminated.containerID",
		".status.initContainerStatuses[].state.terminated.exitCode",
		".status.initContainerStatuses[].state.terminated.finishedAt",
		".status.initContainerStatuses[].state.terminated.message",
		".status.initContainerStatuses[].state.terminated.reason",
		".status.initContainerStatuses[].state.terminated.startedAt",
		".status.phase",
	}
	if got := leafPaths(t, lean); !slices.Equal(got, wantPaths) {
		t.Errorf("fields kept:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantPaths, "\n"))
	}
	// The transform leaves its input as it was.
	if !reflect.DeepEqual(full, fullMemberPod()) {
		t.Error("the transform changed its input")
	}
}

// TestLeanPodKeepsTerminatingAndFailedFields: the fields only a Pod that
// ends or failed has (deletion, phase reason and message, waiting states
// and termination messages) survive.
func TestLeanPodKeepsTerminatingAndFailedFields(t *testing.T) {
	t.Parallel()
	full := fullMemberPod()
	full.DeletionTimestamp, full.DeletionGracePeriodSeconds = &deleting, ptr.To[int64](30)
	full.Finalizers = []string{"example.com/keep"}
	full.Status.Phase, full.Status.Reason, full.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	full.Status.NominatedNodeName = "node-2"
	full.Status.Conditions = append(full.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet", Message: "memory pressure"})
	full.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 5m0s restarting failed container=etcd"}}
	full.Status.ContainerStatuses[0].LastTerminationState.Terminated.Message = "panic: failed to open database"
	full.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debugger", Image: "busybox"}}

	lean := transformed(t, full)
	if !lean.DeletionTimestamp.Equal(&deleting) || lean.DeletionGracePeriodSeconds == nil || *lean.DeletionGracePeriodSeconds != 30 {
		t.Errorf("deletion = %v, grace %v", lean.DeletionTimestamp, lean.DeletionGracePeriodSeconds)
	}
	if !slices.Equal(lean.Finalizers, full.Finalizers) {
		t.Errorf("finalizers = %v", lean.Finalizers)
	}
	if lean.Status.Phase != corev1.PodFailed || lean.Status.Reason != "Evicted" || lean.Status.Message != full.Status.Message {
		t.Errorf("status = %s %s %s", lean.Status.Phase, lean.Status.Reason, lean.Status.Message)
	}
	if !reflect.DeepEqual(lean.Status.Conditions, full.Status.Conditions) {
		t.Errorf("conditions = %+v", lean.Status.Conditions)
	}
	if cs := lean.Status.ContainerStatuses[0]; !reflect.DeepEqual(cs.State, full.Status.ContainerStatuses[0].State) ||
		!reflect.DeepEqual(cs.LastTerminationState, full.Status.ContainerStatuses[0].LastTerminationState) {
		t.Errorf("etcd container state = %+v, last %+v", cs.State, cs.LastTerminationState)
	}
	if lean.Status.NominatedNodeName != "" || lean.Status.EphemeralContainerStatuses != nil {
		t.Errorf("kept what nothing reads: %q %v", lean.Status.NominatedNodeName, lean.Status.EphemeralContainerStatuses)
	}
}

// agentFixture is an agent Pod of a backup to S3 (its env names the
// credentials), as the API server has it after it ended with result msg.
func agentFixture(phase corev1.PodPhase, reason, msg, result string) *corev1.Pod {
	b := &etcdv1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "ns", Labels: map[string]string{etcdv1.ShardLabel: "shard-0"}}}
	p := resources.AgentPod(resources.AgentTask{
		Name: "nightly-snapshot", Namespace: "ns", Labels: resources.AgentLabels(b), Image: "ghcr.io/raftsman/raftsman:v1.4.0",
		Args:        []string{"snapshot", "--endpoint=https://demo-a.demo-peer.ns.svc:2379", "--key=ns/demo/nightly.db"},
		Destination: etcdv1.BackupDestination{S3: &etcdv1.S3Destination{Bucket: "backups", Endpoint: "https://s3.example", CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3-creds"}}},
		Deadline:    600, ClientTLSSecret: "demo-client-tls",
	})
	p.UID, p.ResourceVersion, p.CreationTimestamp, p.ManagedFields = "agent-uid", "5", created, managedFields()
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "etcd.raftsman.io/v1alpha1", Kind: "EtcdBackup", Name: "nightly", UID: "backup-uid", Controller: ptr.To(true)}}
	p.Spec.NodeName = "node-1"
	p.Status = corev1.PodStatus{Phase: phase, Reason: reason, Message: msg, PodIP: "10.244.1.9", StartTime: &created, QOSClass: corev1.PodQOSBurstable}
	state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: result}}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", Image: "ghcr.io/raftsman/raftsman:v1.4.0", ImageID: "x@sha256:1", ContainerID: "containerd://1", State: state}}
	return p
}

// TestLeanPodAnswersLikeFullPod: what the helpers outside the controllers
// tell from a Pod (an agent's result, whether a member's Pod is up to date
// or needs the hash, which cluster a Pod wakes) is the same from the lean
// Pod as from the full one. controllers/member tests its own helpers and
// its whole reconcile the same way (cache_test.go there).
func TestLeanPodAnswersLikeFullPod(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	member := func(change func(*etcdv1.EtcdMember, *corev1.Pod)) (*etcdv1.EtcdMember, *corev1.Pod) {
		m, p := fixtureMember(), fullMemberPod()
		change(m, p)
		return m, p
	}
	noChange := func(*etcdv1.EtcdMember, *corev1.Pod) {}
	tests := []struct {
		name   string
		member *etcdv1.EtcdMember
		pod    *corev1.Pod
	}{
		{name: "agent running", pod: agentFixture(corev1.PodRunning, "", "", "")},
		{name: "agent succeeded", pod: agentFixture(corev1.PodSucceeded, "", "", `{"key":"ns/demo/nightly.db","uri":"s3://backups/ns/demo/nightly.db","size":100,"sha256":"`+sum+`","revision":5}`)},
		{name: "agent failed with its error", pod: agentFixture(corev1.PodFailed, "", "", `{"error":"sha256 differs","reason":"ChecksumMismatch"}`)},
		{name: "agent past its deadline", pod: agentFixture(corev1.PodFailed, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline", "")},
		{name: "agent evicted", pod: agentFixture(corev1.PodFailed, "Evicted", "The node was low on resource: ephemeral-storage.", `{"key":"k"}`)},
		{name: "member up to date", member: fixtureMember(), pod: fullMemberPod()},
		{name: "member spec changed", member: func() *etcdv1.EtcdMember { m := fixtureMember(); m.Spec.Version = "3.6.17"; return m }(), pod: fullMemberPod()},
		{name: "member trusts a new CA", member: func() *etcdv1.EtcdMember { m := fixtureMember(); m.Spec.TLS.TrustRevision = "rev-8"; return m }(), pod: fullMemberPod()},
		{name: "pod without a hash, same trust", member: fixtureMember(), pod: func() *corev1.Pod {
			_, p := member(func(_ *etcdv1.EtcdMember, p *corev1.Pod) { delete(p.Annotations, etcdv1.PodSpecHashAnnotation) })
			return p
		}()},
		{name: "pod without a hash, older trust", member: func() *etcdv1.EtcdMember { m, _ := member(noChange); m.Spec.TLS.TrustRevision = "rev-8"; return m }(), pod: func() *corev1.Pod {
			_, p := member(func(_ *etcdv1.EtcdMember, p *corev1.Pod) { delete(p.Annotations, etcdv1.PodSpecHashAnnotation) })
			return p
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lean := transformed(t, tt.pod)
			answers := func(p *corev1.Pod) string {
				res, done := agent.PodResult(p)
				out := fmt.Sprintf("result %+v done %v; wakes %v; labels %v", res, done, ToCluster(context.Background(), p), p.Labels)
				if tt.member != nil {
					out += fmt.Sprintf("; upToDate %v needsHash %v", resources.PodUpToDate(tt.member, p), resources.NeedsHashStamp(tt.member, p))
				}
				return out
			}
			if got, want := answers(lean), answers(tt.pod); got != want {
				t.Errorf("lean Pod: %s\nfull Pod: %s", got, want)
			}
		})
	}
}

func fullPVC() *corev1.PersistentVolumeClaim {
	m := fixtureMember()
	pvc := resources.MemberPVC(m)
	pvc.UID, pvc.ResourceVersion, pvc.CreationTimestamp, pvc.ManagedFields = "pvc-uid", "4242", created, managedFields()
	pvc.OwnerReferences = []metav1.OwnerReference{memberOwner}
	pvc.Finalizers = []string{"kubernetes.io/pvc-protection"}
	pvc.Annotations = map[string]string{
		"pv.kubernetes.io/bind-completed":               "yes",
		"pv.kubernetes.io/bound-by-controller":          "yes",
		"volume.beta.kubernetes.io/storage-provisioner": "ebs.csi.aws.com",
		"volume.kubernetes.io/storage-provisioner":      "ebs.csi.aws.com",
		"volume.kubernetes.io/selected-node":            "node-eu-west-1c-7",
	}
	pvc.Spec.StorageClassName = ptr.To("gp3")
	pvc.Spec.VolumeName = "pvc-0b6d2c8e-58f5-4a5b-9a53-2d1c0f6a7e11"
	pvc.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
	pvc.Status = corev1.PersistentVolumeClaimStatus{
		Phase:       corev1.ClaimBound,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
		Conditions: []corev1.PersistentVolumeClaimCondition{{
			Type: corev1.PersistentVolumeClaimFileSystemResizePending, Status: corev1.ConditionTrue, LastTransitionTime: started,
			Message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node.",
		}},
		AllocatedResources: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
	}
	return pvc
}

// TestLeanPVCKeepsWhatIsRead: of a bound member PVC, the cache keeps its
// identity, labels and owners, its requests and class, phase and capacity.
func TestLeanPVCKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	full := fullPVC()
	full.DeletionTimestamp = &deleting
	lean := transformed(t, full)
	want := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: "data-demo-x7k2p", Namespace: "ns", UID: "pvc-uid", ResourceVersion: "4242", CreationTimestamp: created,
			DeletionTimestamp: &deleting, Labels: full.Labels, OwnerReferences: []metav1.OwnerReference{memberOwner},
			Finalizers: []string{"kubernetes.io/pvc-protection"},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("gp3"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	if want.Name != resources.PVCName("demo-x7k2p") {
		t.Fatalf("fixture PVC is %s", want.Name)
	}
	if !reflect.DeepEqual(lean, want) {
		got, _ := json.MarshalIndent(lean, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("lean PVC:\n%s\nwant:\n%s", got, exp)
	}
	if len(lean.Labels) == 0 || lean.Labels[etcdv1.MemberLabel] != "demo-x7k2p" {
		t.Errorf("labels = %v", lean.Labels)
	}
}

// TestLeanTransformIsSafe: the transform is idempotent (a tombstone's
// object, already lean, stays the same), leaves other objects but for
// their managedFields, and may run at once for many objects.
func TestLeanTransformIsSafe(t *testing.T) {
	t.Parallel()
	podT := cacheTransform(t, &corev1.Pod{})
	once := transformed(t, fullMemberPod())
	twice, err := podT(once.DeepCopy())
	if err != nil || !reflect.DeepEqual(twice, once) {
		t.Errorf("second transform = %+v (%v), want the same lean Pod", twice, err)
	}
	pvcOnce := transformed(t, fullPVC())
	if pvcTwice, err := cacheTransform(t, &corev1.PersistentVolumeClaim{})(pvcOnce.DeepCopy()); err != nil || !reflect.DeepEqual(pvcTwice, pvcOnce) {
		t.Errorf("second PVC transform = %+v (%v)", pvcTwice, err)
	}

	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/demo-x7k2p", Obj: fullMemberPod()}
	out, err := podT(tomb)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := out.(toolscache.DeletedFinalStateUnknown)
	if !ok || got.Key != tomb.Key || !reflect.DeepEqual(got.Obj, once) {
		t.Errorf("tombstone = %#v, want its key and the lean Pod", out)
	}
	odd := toolscache.DeletedFinalStateUnknown{Key: "ns/x", Obj: "not an object"}
	if out, err := podT(odd); err != nil || !reflect.DeepEqual(out, odd) {
		t.Errorf("tombstone of something else = %#v, %v", out, err)
	}

	// A metadata-only watch of Pods hands the transform metadata.
	pm := &metav1.PartialObjectMetadata{ObjectMeta: *fullMemberPod().ObjectMeta.DeepCopy()}
	out, err = podT(pm)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*metav1.PartialObjectMetadata); got.ManagedFields != nil || len(got.Annotations) != len(fullMemberPod().Annotations) {
		t.Errorf("metadata-only Pod: managedFields %v, annotations %v", got.ManagedFields, got.Annotations)
	}

	// Concurrent use (go test -race): many objects at once, none shared.
	done := make(chan *corev1.Pod)
	for i := range 16 {
		go func() {
			p := fullMemberPod()
			p.Name = fmt.Sprintf("pod-%d", i)
			out, _ := podT(p)
			done <- out.(*corev1.Pod)
		}()
	}
	names := map[string]bool{}
	for range 16 {
		names[(<-done).Name] = true
	}
	if len(names) != 16 {
		t.Errorf("%d distinct Pods out of 16", len(names))
	}
}

// TestSecretMetadataKeepsWhatIsRead: of a Secret the cache holds the
// metadata a metadata watch brings, less managedFields and the annotations
// of other domains: kubectl's last-applied-configuration holds the data.
func TestSecretMetadataKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "demo-ca", Namespace: "ns", UID: "secret-uid", ResourceVersion: "42", CreationTimestamp: created,
			Labels: map[string]string{etcdv1.ClusterLabel: "demo", etcdv1.ManagedByLabel: "raftsman", etcdv1.ShardLabel: "shard-0"},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","data":{"tls.key":"c2VjcmV0"},"kind":"Secret"}`,
				"cert-manager.io/issuer-name":                      "shared",
				"etcd.raftsman.io/note":                            "kept",
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "etcd.raftsman.io/v1alpha1", Kind: "EtcdCluster", Name: "demo", UID: "cluster-uid", Controller: ptr.To(true)}},
			ManagedFields:   managedFields(),
		},
	}
	want := in.DeepCopy()
	want.ManagedFields = nil
	want.Annotations = map[string]string{"etcd.raftsman.io/note": "kept"}
	out, err := cacheTransform(t, &corev1.Secret{})(in.DeepCopy())
	if err != nil || !reflect.DeepEqual(out, want) {
		t.Errorf("Secret metadata = %+v (%v), want %+v", out, err, want)
	}
}

// fullService is a cluster's client Service as the API server gives it,
// with a field someone else set (session affinity).
func fullService() *corev1.Service {
	owner := metav1.OwnerReference{APIVersion: etcdv1.GroupVersion.String(), Kind: "EtcdCluster", Name: "demo", UID: "cluster-uid", Controller: ptr.To(true)}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-client", Namespace: "ns", UID: "svc-uid", ResourceVersion: "77", CreationTimestamp: created,
			ManagedFields: managedFields(), Labels: map[string]string{etcdv1.ClusterLabel: "demo"}, OwnerReferences: []metav1.OwnerReference{owner},
			Annotations: map[string]string{"cloud.example.com/load-balancer": "internal"}},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"},
			Selector:                 map[string]string{etcdv1.ClusterLabel: "demo"},
			Ports:                    []corev1.ServicePort{{Name: "client", Port: 2379, TargetPort: intstr.FromString("client"), Protocol: corev1.ProtocolTCP}},
			PublishNotReadyAddresses: true, SessionAffinity: corev1.ServiceAffinityClientIP,
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
		},
	}
}

// TestLeanServiceKeepsWhatIsRead: of a member cluster's client Service,
// the cache keeps its identity, labels and owners, its selector, ports and
// publishing of not-ready addresses, type and cluster IP; the other
// fields, set by the API server or by someone else, go.
func TestLeanServiceKeepsWhatIsRead(t *testing.T) {
	t.Parallel()
	full := fullService()
	owner := full.OwnerReferences[0]
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-client", Namespace: "ns", UID: "svc-uid", ResourceVersion: "77", CreationTimestamp: created,
			Labels: full.Labels, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.10", Selector: full.Spec.Selector, Ports: full.Spec.Ports, PublishNotReadyAddresses: true},
	}
	if lean := transformed(t, full); !reflect.DeepEqual(lean, want) {
		got, _ := json.MarshalIndent(lean, "", "  ")
		exp, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("lean Service:\n%s\nwant:\n%s", got, exp)
	}
}

// TestOtherKindsKeepTheirFields: kinds without a transform of their own
// (PodDisruptionBudgets, which the cluster controller writes back whole)
// lose only their managedFields.
func TestOtherKindsKeepTheirFields(t *testing.T) {
	t.Parallel()
	opts := CacheOptions("shard-0")
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", ManagedFields: managedFields(), Annotations: map[string]string{"a": "b"}},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}},
	}
	want := pdb.DeepCopy()
	want.ManagedFields = nil
	out, err := opts.DefaultTransform(pdb)
	if err != nil || !reflect.DeepEqual(out, want) {
		t.Errorf("PodDisruptionBudget = %+v (%v)", out, err)
	}
	var kinds []string
	for o, by := range opts.ByObject {
		if by.Transform != nil {
			kinds = append(kinds, fmt.Sprintf("%T", o))
		}
	}
	sort.Strings(kinds)
	if !slices.Equal(kinds, []string{"*v1.PersistentVolumeClaim", "*v1.Pod", "*v1.Secret", "*v1.Service"}) {
		t.Errorf("kinds with a transform of their own: %v", kinds)
	}
}

// TestLeanPodSize measures what a cached member Pod and PVC cost before
// (today's cache: the object without managedFields) and after: their
// JSON, and the heap that 1,000 of them hold.
func TestLeanPodSize(t *testing.T) {
	jsonSize := func(o any) int {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		return len(b)
	}
	// The heap 1,000 objects hold, each made as the informer makes it (a
	// decoded copy in, the stored object out).
	heap := heapPerObject
	measure := func(what string, full client.Object) {
		t.Helper()
		stripped := full.DeepCopyObject().(client.Object)
		stripped.SetManagedFields(nil)
		f := cacheTransform(t, full)
		lean, err := f(full.DeepCopyObject())
		if err != nil {
			t.Fatal(err)
		}
		before := heap(func() any { return stripped.DeepCopyObject() })
		after := heap(func() any {
			out, err := f(full.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			return out
		})
		t.Logf("%s: JSON %d bytes from the API server, %d cached before (without managedFields), %d lean (%.0f%% less); heap per cached object %d -> %d bytes (%.0f%% less)",
			what, jsonSize(full), jsonSize(stripped), jsonSize(lean), 100*(1-float64(jsonSize(lean))/float64(jsonSize(stripped))),
			before, after, 100*(1-float64(after)/float64(before)))
		if jsonSize(lean) >= jsonSize(stripped) {
			t.Errorf("%s: the lean object is not smaller", what)
		}
	}
	// The member Pod as the operator makes it, with the API server's
	// defaults and the kubelet's status, without what others add.
	plain := fullMemberPod()
	delete(plain.Annotations, "k8s.v1.cni.cncf.io/network-status")
	delete(plain.Annotations, "kubectl.kubernetes.io/default-container")
	for _, cs := range [][]corev1.Container{plain.Spec.InitContainers, plain.Spec.Containers} {
		for i := range cs {
			cs[i].Env = nil
		}
	}
	measure("member Pod", plain)
	measure("member Pod with a webhook's proxy env and a CNI annotation", fullMemberPod())
	measure("member PVC", fullPVC())
	measure("client Service", fullService())
	measure("agent Pod (backup to S3)", agentFixture(corev1.PodSucceeded, "", "", `{"key":"ns/demo/nightly.db"}`))
}

// heapPerObject is the heap each of 1,000 objects newObj makes holds.
func heapPerObject(newObj func() any) uint64 {
	const n = 1000
	keep := make([]any, 0, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		keep = append(keep, newObj())
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(keep)
	return (after.HeapAlloc - before.HeapAlloc) / n
}
