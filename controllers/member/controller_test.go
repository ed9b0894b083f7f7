package member_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

const clusterName = "demo"

func TestEnvMemberController(t *testing.T) {
	c := startSuite(t)
	for name, test := range map[string]func(*testing.T, client.Client){
		"RestrictedNamespacesRefuseOtherPods": testRestrictedNamespace,
		"WaitsForRegistration":                testWaitsForRegistration,
		"PreparedJoinerGetsItsGatedPod":       testPreparedJoiner,
		"StaleRegistrationIsNotEnough":        testStaleRegistration,
		"RegisteredMemberGetsItsPod":          testRegisteredMemberGetsPod,
		"InitialMemberStartsAtOnce":           testInitialMemberStarts,
		"LostPodIsRecreatedToJoin":            testPodRecreated,
		"LostPVCIsDataLost":                   testPVCLost,
		"MemoryMedium":                        testMemoryMedium,
		"RetainReleasesThePVC":                testRetainVolume,
		"RetainMemoryHasNoVolume":             testRetainMemory,
		"DrainedLeavesTheClientService":       testDrained,
		"RejectedPodNeverCostsTheRunningOne":  testPodRejected,
		"FencedMemberRunsNoPod":               testFenced,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, c)
		})
	}
}

// testRestrictedNamespace checks the premise of the Pod tests: their
// namespaces refuse a Pod that is not restricted, so a member Pod that is
// created at all meets the restricted Pod Security Standard.
func testRestrictedNamespace(t *testing.T, c client.Client) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: newNamespace(t, c)},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	err := c.Create(t.Context(), pod)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("create an unrestricted Pod: want Forbidden by PodSecurity admission, got %v", err)
	}
}

// testWaitsForRegistration: a member etcd does not know yet gets its PVC at
// once (provisioning overlaps the membership change) but no Pod.
func testWaitsForRegistration(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", nil)
	got := waitReady(t, c, m, etcdv1.ReasonWaitingForRegistration)
	// The volume's name is recorded before any Pod exists (a Pod is made
	// only once it is stored); it counts as the member's data once a Pod
	// may have written to it, so a PVC lost before that is made again.
	eventually(t, "status.pvcName recorded before the Pod", func() error {
		if got := getMember(t, c, m).Status.PVCName; got != resources.PVCName(m.Name) {
			return fmt.Errorf("status.pvcName = %q", got)
		}
		return nil
	})
	if got.Status.PodName != "" {
		t.Errorf("status.podName = %q, want none before registration", got.Status.PodName)
	}

	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), key(m.Namespace, resources.PVCName(m.Name)), pvc); err != nil {
		t.Fatalf("get PVC: %v", err)
	}
	if !metav1.IsControlledBy(pvc, got) {
		t.Errorf("PVC owners = %v, want controlled by EtcdMember %s", pvc.OwnerReferences, m.Name)
	}
	if got, want := pvc.Spec.Resources.Requests[corev1.ResourceStorage], resource.MustParse("1Gi"); got.Cmp(want) != 0 {
		t.Errorf("PVC request = %s, want the default %s", got.String(), want.String())
	}
	if pvc.Labels[etcdv1.MemberLabel] != m.Name || pvc.Labels[etcdv1.ClusterLabel] != clusterName {
		t.Errorf("PVC labels = %v, want the member and cluster labels", pvc.Labels)
	}

	// The reconcile that wrote Ready had already decided about the Pod.
	err := c.Get(t.Context(), key(m.Namespace, m.Name), &corev1.Pod{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("get Pod of an unregistered member: want NotFound, got %v", err)
	}
}

// testPreparedJoiner: a joiner with the agent image gets its first Pod at
// once, before etcd lists it, with etcd behind the join gate; its Ready
// says the Pod is prepared. A later Pod of a member etcd does not list is
// not made: only the first Pod is gated (a Pod lost before the add would
// find the marker its first Pod wrote, and is refused as DataLost).
func testPreparedJoiner(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", func(s *etcdv1.EtcdMemberSpec) { s.AgentImage = "raftsman:test" })
	pod := waitPod(t, c, m, "")
	if pod.Spec.Containers[0].Command[0] == "/usr/local/bin/etcd" || !slices.Contains(pod.Spec.Containers[0].Args, "join") {
		t.Fatalf("the prepared joiner's etcd container runs %q %q, want the join gate", pod.Spec.Containers[0].Command, pod.Spec.Containers[0].Args)
	}
	got := waitReady(t, c, m, etcdv1.ReasonWaitingForRegistration)
	if c := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionReady); !strings.Contains(c.Message, "prepared") {
		t.Errorf("Ready message %q, want it to say the Pod is prepared", c.Message)
	}
	eventually(t, "status.podName recorded", func() error {
		if got := getMember(t, c, m).Status.PodName; got != pod.Name {
			return fmt.Errorf("status.podName = %q", got)
		}
		return nil
	})
	if err := c.Delete(t.Context(), pod); err != nil {
		t.Fatalf("delete the Pod: %v", err)
	}
	consistently(t, "no second Pod before etcd lists the member", func() error {
		if err := c.Get(t.Context(), key(m.Namespace, m.Name), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get Pod: want NotFound, got %v", err)
		}
		return nil
	})
}

// testInitialMemberStarts: an initial member of a cluster etcd has not
// formed yet is in the initial cluster by construction: it gets its PVC and
// its Pod in one pass, without a Registered condition, and the volume and
// the Pod are recorded in one status write. A Registered condition, once
// there, decides: False stops the next Pod.
func testInitialMemberStarts(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", func(s *etcdv1.EtcdMemberSpec) { s.InitialClusterState = etcdv1.InitialClusterStateNew })
	pod := waitPod(t, c, m, "")
	eventually(t, "status.pvcName and status.podName recorded", func() error {
		got := getMember(t, c, m)
		if got.Status.PVCName != resources.PVCName(m.Name) || got.Status.PodName != pod.Name {
			return fmt.Errorf("status.pvcName %q, status.podName %q", got.Status.PVCName, got.Status.PodName)
		}
		if meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionRegistered) != nil {
			return fmt.Errorf("a Registered condition the test did not set")
		}
		return nil
	})

	got := getMember(t, c, m)
	got.Status.Conditions = append(got.Status.Conditions, metav1.Condition{
		Type: etcdv1.ConditionRegistered, Status: metav1.ConditionFalse, ObservedGeneration: got.Generation,
		Reason: etcdv1.ReasonAwaitingAdd, Message: "set by the test", LastTransitionTime: metav1.Now(),
	})
	if err := c.Status().Update(t.Context(), got); err != nil {
		t.Fatalf("set Registered False: %v", err)
	}
	if err := c.Delete(t.Context(), pod); err != nil {
		t.Fatalf("delete the Pod: %v", err)
	}
	consistently(t, "no new Pod while Registered is False", func() error {
		if err := c.Get(t.Context(), key(m.Namespace, m.Name), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get Pod: want NotFound, got %v", err)
		}
		return nil
	})
}

// testStaleRegistration: Registered counts only for the member's current
// generation; one written for an older spec is Unknown.
func testStaleRegistration(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", nil)
	waitReady(t, c, m, etcdv1.ReasonWaitingForRegistration)
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.Image = "quay.io/coreos/etcd:v3.6.17"
	if err := c.Patch(t.Context(), m, patch); err != nil {
		t.Fatalf("change the spec: %v", err)
	}
	if m.Generation < 2 {
		t.Fatalf("generation = %d after a spec change, want 2", m.Generation)
	}

	setRegistered(t, c, m, m.Generation-1)
	consistently(t, "no Pod for a stale Registered condition", func() error {
		if err := c.Get(t.Context(), key(m.Namespace, m.Name), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get Pod: want NotFound, got %v", err)
		}
		return nil
	})

	setRegistered(t, c, m, m.Generation)
	waitPod(t, c, m, "")
}

// testDrained: spec.drained turns the Pod's serving label (which the
// client Service selects on) to "false" in place, with the Serving
// condition False for the member's generation, and back; the Pod is the
// same one throughout.
func testDrained(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", nil)
	setRegistered(t, c, m, m.Generation)
	pod := waitPod(t, c, m, "")
	if pod.Labels[etcdv1.ServingLabel] != "true" {
		t.Fatalf("a new Pod's labels %v, want %s=true", pod.Labels, etcdv1.ServingLabel)
	}
	for _, drained := range []bool{true, false} {
		var cur *etcdv1.EtcdMember
		if err := retry.RetryOnConflict(busyRetry, func() error {
			cur = getMember(t, c, m)
			cur.Spec.Drained = drained
			return c.Update(t.Context(), cur)
		}); err != nil {
			t.Fatal(err)
		}
		setRegistered(t, c, cur, cur.Generation)
		eventually(t, fmt.Sprintf("serving label and condition for drained=%t", drained), func() error {
			got := &corev1.Pod{}
			if err := c.Get(t.Context(), key(m.Namespace, pod.Name), got); err != nil {
				return err
			}
			if got.UID != pod.UID {
				return fmt.Errorf("the Pod was replaced")
			}
			if want := fmt.Sprint(!drained); got.Labels[etcdv1.ServingLabel] != want {
				return fmt.Errorf("label %s=%q, want %q", etcdv1.ServingLabel, got.Labels[etcdv1.ServingLabel], want)
			}
			mm := getMember(t, c, m)
			cond := meta.FindStatusCondition(mm.Status.Conditions, etcdv1.ConditionServing)
			if cond == nil || cond.ObservedGeneration != mm.Generation || (cond.Status == metav1.ConditionTrue) == drained {
				return fmt.Errorf("Serving = %+v for generation %d", cond, mm.Generation)
			}
			return nil
		})
	}
}

// testRegisteredMemberGetsPod: once Registered, the member gets its Pod; only
// the first Pod of an initial member bootstraps a new cluster.
func testRegisteredMemberGetsPod(t *testing.T, c client.Client) {
	for _, tc := range []struct {
		state     etcdv1.InitialClusterState
		wantState string
	}{
		{etcdv1.InitialClusterStateNew, "new"},
		{etcdv1.InitialClusterStateExisting, "existing"},
	} {
		t.Run(string(tc.state), func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, c)
			m := newMember(t, c, ns, "demo-a", func(s *etcdv1.EtcdMemberSpec) { s.InitialClusterState = tc.state })
			setRegistered(t, c, m, m.Generation)
			pod := waitPod(t, c, m, "")

			// No kubelet runs the Pod, so it stays Pending. The pass that
			// creates the Pod may report PodNotReady before the next one
			// records the Pod's name.
			got := waitReady(t, c, m, etcdv1.ReasonPodNotReady)
			eventually(t, "status.podName "+pod.Name, func() error {
				if err := c.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
					return err
				}
				if got.Status.PodName != pod.Name {
					return fmt.Errorf("status.podName = %q", got.Status.PodName)
				}
				return nil
			})
			if !metav1.IsControlledBy(pod, got) {
				t.Errorf("Pod owners = %v, want controlled by EtcdMember %s", pod.OwnerReferences, m.Name)
			}
			if got.Status.PVCName != resources.PVCName(m.Name) {
				t.Errorf("status.pvcName = %q, want %q", got.Status.PVCName, resources.PVCName(m.Name))
			}

			if pod.Spec.Hostname != m.Name || pod.Spec.Subdomain != resources.PeerServiceName(clusterName) {
				t.Errorf("hostname.subdomain = %s.%s, want %s.%s", pod.Spec.Hostname, pod.Spec.Subdomain, m.Name, resources.PeerServiceName(clusterName))
			}
			if pod.Labels[etcdv1.MemberLabel] != m.Name || pod.Labels[etcdv1.ClusterLabel] != clusterName {
				t.Errorf("Pod labels = %v, want the member and cluster labels", pod.Labels)
			}
			if len(pod.Spec.Containers) != 1 {
				t.Fatalf("Pod has %d containers, want 1", len(pod.Spec.Containers))
			}
			ctr := pod.Spec.Containers[0]
			if ctr.Image != m.Spec.Image {
				t.Errorf("image = %q, want %q", ctr.Image, m.Spec.Image)
			}
			for _, arg := range []string{
				"--name=" + m.Name,
				"--initial-cluster-state=" + tc.wantState,
				"--initial-cluster=" + m.Spec.InitialCluster,
				"--initial-cluster-token=" + m.Spec.ClusterToken,
				"--initial-advertise-peer-urls=" + m.Spec.PeerURL,
				"--advertise-client-urls=" + m.Spec.ClientURL,
				"--log-level=warn",
			} {
				if !slices.Contains(ctr.Args, arg) {
					t.Errorf("args %q lack %q", ctr.Args, arg)
				}
			}

			// The restricted Pod Security Standard, field by field (the
			// namespace's admission already refused anything less).
			psc, sc := pod.Spec.SecurityContext, ctr.SecurityContext
			switch {
			case psc == nil || !ptr.Deref(psc.RunAsNonRoot, false):
				t.Errorf("pod securityContext.runAsNonRoot is not true: %+v", psc)
			case psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
				t.Errorf("pod seccompProfile = %+v, want RuntimeDefault", psc.SeccompProfile)
			}
			switch {
			case sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true):
				t.Errorf("container allowPrivilegeEscalation is not false: %+v", sc)
			case sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL"):
				t.Errorf("container capabilities = %+v, want ALL dropped", sc.Capabilities)
			case !ptr.Deref(sc.ReadOnlyRootFilesystem, false):
				t.Errorf("container readOnlyRootFilesystem is not true")
			}
			if ptr.Deref(pod.Spec.AutomountServiceAccountToken, true) {
				t.Errorf("automountServiceAccountToken is not false: etcd needs no API access")
			}

			vol := dataVolume(pod)
			if vol == nil || vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != resources.PVCName(m.Name) {
				t.Errorf("data volume = %+v, want the PVC %s", vol, resources.PVCName(m.Name))
			}
		})
	}
}

// testPodRecreated: a member whose Pod is gone gets a new one, which joins
// the cluster that exists by then instead of bootstrapping another.
func testPodRecreated(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", func(s *etcdv1.EtcdMemberSpec) { s.InitialClusterState = etcdv1.InitialClusterStateNew })
	setRegistered(t, c, m, m.Generation)
	first := waitPod(t, c, m, "")
	if !slices.Contains(first.Spec.Containers[0].Args, "--initial-cluster-state=new") {
		t.Fatalf("first Pod args %q lack --initial-cluster-state=new", first.Spec.Containers[0].Args)
	}
	// Wait until the status records the Pod, as it would before any restart.
	eventually(t, "status.podName recorded", func() error {
		if got := getMember(t, c, m).Status.PodName; got != first.Name {
			return fmt.Errorf("status.podName = %q", got)
		}
		return nil
	})

	// A Pod no node runs goes at once: there is no kubelet to wait for.
	if err := c.Delete(t.Context(), first, client.Preconditions{UID: &first.UID}); err != nil {
		t.Fatalf("delete Pod: %v", err)
	}
	second := waitPod(t, c, m, first.UID)
	args := second.Spec.Containers[0].Args
	if !slices.Contains(args, "--initial-cluster-state=existing") || slices.Contains(args, "--initial-cluster-state=new") {
		t.Errorf("second Pod args %q: want --initial-cluster-state=existing only", args)
	}
	if !metav1.IsControlledBy(second, getMember(t, c, m)) {
		t.Errorf("second Pod owners = %v, want controlled by EtcdMember %s", second.OwnerReferences, m.Name)
	}
}

// testFenced: spec.fenced stops the member's Pod and starts none while it
// is set, the PVC kept; Ready says Fenced for the member's generation only
// once no Pod is left (the cluster controller forces another member only
// then). Cleared, the member gets a Pod again.
func testFenced(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", nil)
	setRegistered(t, c, m, m.Generation)
	first := waitPod(t, c, m, "")
	setFenced := func(on bool) {
		t.Helper()
		if err := retry.RetryOnConflict(busyRetry, func() error {
			cur := getMember(t, c, m)
			patch := client.MergeFrom(cur.DeepCopy())
			cur.Spec.Fenced = on
			return c.Patch(t.Context(), cur, patch)
		}); err != nil {
			t.Fatalf("set spec.fenced=%v: %v", on, err)
		}
	}
	setFenced(true)
	waitReady(t, c, m, etcdv1.ReasonFenced)
	if err := c.Get(t.Context(), key(m.Namespace, m.Name), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Ready says Fenced, but the Pod: %v", err)
	}
	consistently(t, "no Pod while fenced, the PVC kept", func() error {
		if err := c.Get(t.Context(), key(m.Namespace, m.Name), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get Pod: want NotFound, got %v", err)
		}
		return c.Get(t.Context(), key(m.Namespace, resources.PVCName(m.Name)), &corev1.PersistentVolumeClaim{})
	})
	setFenced(false)
	// The cluster controller stamps Registered for each generation.
	setRegistered(t, c, m, getMember(t, c, m).Generation)
	waitPod(t, c, m, first.UID)
}

// testPVCLost: a member whose recorded PVC is gone has lost its data. It is
// never started again on a new, empty volume: the cluster controller
// replaces it.
func testPVCLost(t *testing.T, c client.Client) {
	m := newMember(t, c, newNamespace(t, c), "demo-a", nil)
	setRegistered(t, c, m, m.Generation)
	pod := waitPod(t, c, m, "")
	eventually(t, "status.pvcName recorded", func() error {
		if got := getMember(t, c, m).Status.PVCName; got != resources.PVCName(m.Name) {
			return fmt.Errorf("status.pvcName = %q", got)
		}
		return nil
	})

	pvcKey := key(m.Namespace, resources.PVCName(m.Name))
	pvc := &corev1.PersistentVolumeClaim{}
	if err := c.Get(t.Context(), pvcKey, pvc); err != nil {
		t.Fatalf("get PVC: %v", err)
	}
	if err := c.Delete(t.Context(), pvc); err != nil {
		t.Fatalf("delete PVC: %v", err)
	}
	// The API server's admission adds kubernetes.io/pvc-protection; with no
	// controller-manager to lift it, the test does, as the PVC protection
	// controller would once no Pod uses the claim.
	eventually(t, "PVC gone", func() error {
		err := c.Get(t.Context(), pvcKey, pvc)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case len(pvc.Finalizers) > 0:
			if err := c.Patch(t.Context(), pvc, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
				return fmt.Errorf("lift finalizers: %w", err)
			}
		}
		return fmt.Errorf("PVC still there, finalizers %v", pvc.Finalizers)
	})

	got := waitReady(t, c, m, etcdv1.ReasonDataLost)
	if got.Status.PVCName != resources.PVCName(m.Name) {
		t.Errorf("status.pvcName = %q, want it kept as proof of the loss", got.Status.PVCName)
	}
	consistently(t, "no new PVC for a member that lost its data", func() error {
		if err := c.Get(t.Context(), pvcKey, &corev1.PersistentVolumeClaim{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get PVC: want NotFound, got %v", err)
		}
		return nil
	})

	// Nor a new Pod when the old one goes.
	if err := c.Delete(t.Context(), pod); err != nil {
		t.Fatalf("delete Pod: %v", err)
	}
	consistently(t, "no new Pod for a member that lost its data", func() error {
		if err := c.Get(t.Context(), key(m.Namespace, m.Name), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get Pod: want NotFound, got %v", err)
		}
		return nil
	})
	waitReady(t, c, m, etcdv1.ReasonDataLost)
}

// testMemoryMedium: a tmpfs member has no PVC, a size-limited memory
// emptyDir, and loses its data with its Pod.
func testMemoryMedium(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	size := resource.MustParse("256Mi")
	m := newMember(t, c, ns, "demo-a", func(s *etcdv1.EtcdMemberSpec) {
		s.Storage = etcdv1.StorageSpec{Medium: etcdv1.StorageMediumMemory, Size: &size}
	})
	waitReady(t, c, m, etcdv1.ReasonWaitingForRegistration)
	setRegistered(t, c, m, m.Generation)
	pod := waitPod(t, c, m, "")

	vol := dataVolume(pod)
	switch {
	case vol == nil || vol.EmptyDir == nil:
		t.Fatalf("data volume = %+v, want an emptyDir", vol)
	case vol.EmptyDir.Medium != corev1.StorageMediumMemory:
		t.Errorf("emptyDir medium = %q, want Memory", vol.EmptyDir.Medium)
	case vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Cmp(size) != 0:
		t.Errorf("emptyDir sizeLimit = %v, want %s", vol.EmptyDir.SizeLimit, size.String())
	}
	pvcs := &corev1.PersistentVolumeClaimList{}
	if err := c.List(t.Context(), pvcs, client.InNamespace(ns)); err != nil {
		t.Fatalf("list PVCs: %v", err)
	}
	if len(pvcs.Items) != 0 {
		t.Errorf("%d PVCs for a memory member, want none", len(pvcs.Items))
	}
	got := getMember(t, c, m)
	if got.Status.PVCName != "" {
		t.Errorf("status.pvcName = %q, want none", got.Status.PVCName)
	}

	// The tmpfs data went with the Pod: the member is lost, not restarted
	// empty under its old identity.
	eventually(t, "status.podName recorded", func() error {
		if got := getMember(t, c, m).Status.PodName; got != pod.Name {
			return fmt.Errorf("status.podName = %q", got)
		}
		return nil
	})
	if err := c.Delete(t.Context(), pod); err != nil {
		t.Fatalf("delete Pod: %v", err)
	}
	waitReady(t, c, m, etcdv1.ReasonDataLost)
	consistently(t, "no new Pod for a memory member whose Pod went", func() error {
		if err := c.Get(t.Context(), key(ns, m.Name), &corev1.Pod{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("get Pod: want NotFound, got %v", err)
		}
		return nil
	})
}

// busyRetry retries a test's write that meets the member controller's own
// status writes: on a busy machine the default five tries ran out.
var busyRetry = func() wait.Backoff {
	b := retry.DefaultRetry
	b.Steps = 50
	return b
}()

func key(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// newMember creates an EtcdMember as the cluster controller would for a
// member it adds as a learner: it starts once Registered (an initial
// member of a new cluster starts without it: testInitialMemberStarts).
func newMember(t *testing.T, c client.Client, ns, name string, mutate func(*etcdv1.EtcdMemberSpec)) *etcdv1.EtcdMember {
	t.Helper()
	cl := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: clusterName, Namespace: ns}, Spec: etcdv1.EtcdClusterSpec{TLS: etcdv1.TLSSpec{Disabled: true}}}
	peer := resources.PeerURL(cl, name, "cluster.local")
	m := &etcdv1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: resources.ClusterLabels(clusterName)},
		Spec: etcdv1.EtcdMemberSpec{
			ClusterName:         clusterName,
			Version:             "3.6.16",
			Image:               "quay.io/coreos/etcd:v3.6.16",
			InitialClusterState: etcdv1.InitialClusterStateExisting,
			InitialCluster:      resources.InitialCluster([][2]string{{name, peer}}),
			ClusterToken:        "token-" + ns,
			PeerURL:             peer,
			ClientURL:           resources.ClientURL(cl, name, "cluster.local"),
			Options:             etcdv1.EtcdOptions{ExtraArgs: map[string]etcdv1.ExtraArgValue{"log-level": "warn"}},
		},
	}
	if mutate != nil {
		mutate(&m.Spec)
	}
	if err := c.Create(t.Context(), m); err != nil {
		t.Fatalf("create EtcdMember: %v", err)
	}
	return m
}

func getMember(t *testing.T, c client.Client, m *etcdv1.EtcdMember) *etcdv1.EtcdMember {
	t.Helper()
	got := &etcdv1.EtcdMember{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatalf("get EtcdMember: %v", err)
	}
	return got
}

// setRegistered plays the cluster controller: it sets Registered True for
// the given generation with a merge patch of the conditions guarded by the
// resourceVersion, retried when the member controller wrote in between.
func setRegistered(t *testing.T, c client.Client, m *etcdv1.EtcdMember, generation int64) {
	t.Helper()
	err := retry.RetryOnConflict(busyRetry, func() error {
		got := &etcdv1.EtcdMember{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		patch := client.MergeFromWithOptions(got.DeepCopy(), client.MergeFromWithOptimisticLock{})
		meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{
			Type: etcdv1.ConditionRegistered, Status: metav1.ConditionTrue, ObservedGeneration: generation,
			Reason: etcdv1.ReasonInitialMember, Message: "set by the test",
		})
		return c.Status().Patch(t.Context(), got, patch)
	})
	if err != nil {
		t.Fatalf("set Registered: %v", err)
	}
}

// waitReady waits for Ready False with reason for the current generation.
func waitReady(t *testing.T, c client.Client, m *etcdv1.EtcdMember, reason string) *etcdv1.EtcdMember {
	t.Helper()
	var got *etcdv1.EtcdMember
	eventually(t, "Ready False "+reason, func() error {
		got = &etcdv1.EtcdMember{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(m), got); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionReady)
		switch {
		case cond == nil:
			return fmt.Errorf("no Ready condition")
		case cond.Status != metav1.ConditionFalse || cond.Reason != reason:
			return fmt.Errorf("Ready %s %s: %s", cond.Status, cond.Reason, cond.Message)
		case cond.ObservedGeneration != got.Generation:
			return fmt.Errorf("Ready is for generation %d, the member is at %d", cond.ObservedGeneration, got.Generation)
		}
		return nil
	})
	return got
}

// waitPod waits for the member's Pod; with notUID, for one other than it.
func waitPod(t *testing.T, c client.Client, m *etcdv1.EtcdMember, notUID types.UID) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, "Pod of "+m.Name, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(m), pod); err != nil {
			return err
		}
		if pod.UID == notUID {
			return fmt.Errorf("still the old Pod %s", pod.UID)
		}
		return nil
	})
	return pod
}

func dataVolume(pod *corev1.Pod) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == "data" {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

// testPodRejected: a member spec the API server would refuse as a Pod
// (requests above limits) is found by a server-side dry run before the
// running Pod goes: the Pod stays, Ready says PodRejected with the API
// server's message, and setting the spec back leaves the same Pod. A new
// member with such a spec gets no Pod and the same condition.
func testPodRejected(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	m := newMember(t, c, ns, "demo-r", nil)
	setRegistered(t, c, m, m.Generation)
	first := waitPod(t, c, m, "")
	eventually(t, "status.podName recorded", func() error {
		if got := getMember(t, c, m).Status.PodName; got != first.Name {
			return fmt.Errorf("status.podName = %q", got)
		}
		return nil
	})
	bad := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}
	setResources := func(r corev1.ResourceRequirements) {
		t.Helper()
		var gen int64
		err := retry.RetryOnConflict(busyRetry, func() error {
			got := getMember(t, c, m)
			got.Spec.Resources = r
			err := c.Update(t.Context(), got)
			gen = got.Generation
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		setRegistered(t, c, m, gen)
	}
	samePod := func() {
		t.Helper()
		p := &corev1.Pod{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(first), p); err != nil {
			t.Fatalf("the running Pod: %v", err)
		}
		if p.UID != first.UID || !p.DeletionTimestamp.IsZero() {
			t.Fatalf("the running Pod was deleted or replaced (uid %s, deleting %v)", p.UID, p.DeletionTimestamp)
		}
	}

	setResources(bad)
	got := waitReady(t, c, m, etcdv1.ReasonPodRejected)
	cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1.ConditionReady)
	for _, want := range []string{"must be less than or equal to cpu limit", first.Name + " keeps running"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("Ready message %q does not say %q", cond.Message, want)
		}
	}
	samePod()

	setResources(corev1.ResourceRequirements{})
	waitReady(t, c, m, etcdv1.ReasonPodNotReady)
	samePod()

	fresh := newMember(t, c, ns, "demo-s", func(s *etcdv1.EtcdMemberSpec) { s.Resources = bad })
	setRegistered(t, c, fresh, fresh.Generation)
	waitReady(t, c, fresh, etcdv1.ReasonPodRejected)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(fresh), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Pod of the refused spec: %v", err)
	}
}
