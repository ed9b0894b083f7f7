package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// resumeResult is one suspend and resume of a settled 3-member cluster.
type resumeResult struct {
	// took runs from the resume patch until the cluster has converged
	// with every member back; suspendTook from the suspend patch until
	// Suspended was True and no member Pod was left.
	took, suspendTook float64
	// log is what happened when after the resume patch, for the run's
	// output.
	log []event
}

// resumeText says how the resume is measured.
const resumeText = "The resume runs on a 3-member cluster of its own, created once the clusters above and the reference Pods are deleted, and settled for 6 s. spec.suspend is set to true, and the benchmark waits until Suspended is True for the cluster's generation and none of its member Pods is left (the suspend's own time, in brackets in the row); the member IDs (each EtcdMember's status.memberID and the cluster's status.members), the cluster ID and the UIDs of the PVCs are read before the suspend. Then spec.suspend is set to false, and the time runs from that patch until the cluster has converged with 3 healthy voters (Available True and Progressing False for the cluster's generation, readyReplicas 3, every status.members entry a healthy Voter) and every member has a new Pod, Ready, mounting its own PVC (the same object, by UID), and its EtcdMember Ready for its generation. The member IDs and the cluster ID must then be those of before the suspend, or the benchmark stops with an error. The reference is the plain etcd Pod deleted and recreated on its PVC, of the same run."

// memberRecord is what a member is before the suspend.
type memberRecord struct {
	id, pvc string
	pvcUID  types.UID
	podUID  types.UID
}

// suspendResume creates a settled 3-member cluster, suspends it until
// every member Pod is gone, resumes it and times the resume until each
// member runs again on its own PVC under its own member ID.
func (b *bench) suspendResume(ns, name string) (resumeResult, error) {
	var res resumeResult
	if _, err := b.createCluster(ns, name, 3); err != nil {
		return res, err
	}
	time.Sleep(settle)
	c := &etcdv1.EtcdCluster{}
	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return res, err
	}
	clusterID := c.Status.ClusterID
	before, err := b.memberRecords(ns, name)
	if err != nil {
		return res, err
	}
	if err := clusterIDs(c, before); err != nil {
		return res, fmt.Errorf("before the suspend: %w", err)
	}

	start := time.Now()
	if err := b.setSuspend(ns, name, true); err != nil {
		return res, err
	}
	if _, err := b.poll(3*time.Minute, func() (bool, error) {
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		if !isTrue(c.Status.Conditions, etcdv1.ConditionSuspended, c.Generation) {
			return false, nil
		}
		pods := &corev1.PodList{}
		if err := b.c.List(b.ctx, pods, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
			return false, err
		}
		return len(pods.Items) == 0, nil
	}); err != nil {
		return res, fmt.Errorf("suspend: %w", err)
	}
	res.suspendTook = time.Since(start).Seconds()

	converged := b.rolledOut(ns, name, 3, "")
	start = time.Now()
	if err := b.setSuspend(ns, name, false); err != nil {
		return res, err
	}
	tl := newTimeline(start)
	if _, err := b.poll(3*time.Minute, func() (bool, error) {
		c := &etcdv1.EtcdCluster{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return false, err
		}
		for _, t := range []string{etcdv1.ConditionSuspended, etcdv1.ConditionAvailable} {
			if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil && cond.ObservedGeneration == c.Generation {
				tl.see(fmt.Sprintf("%s %s (%s)", t, cond.Status, cond.Reason))
			}
		}
		back, err := b.membersBack(ns, before, tl)
		if err != nil || !back {
			return false, err
		}
		return converged()
	}); err != nil {
		return res, fmt.Errorf("resume: %w", err)
	}
	took := time.Since(start)
	res.took, res.log = took.Seconds(), append(tl.log, event{took, "converged, every member back"})

	if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
		return res, err
	}
	after, err := b.memberRecords(ns, name)
	if err != nil {
		return res, err
	}
	for m, r := range before {
		if a, ok := after[m]; !ok || a.id != r.id {
			return res, fmt.Errorf("member %s has ID %q after the resume, %q before", m, a.id, r.id)
		}
	}
	if len(after) != len(before) {
		return res, fmt.Errorf("members %v after the resume, %v before", slices.Sorted(maps.Keys(after)), slices.Sorted(maps.Keys(before)))
	}
	if err := clusterIDs(c, before); err != nil {
		return res, fmt.Errorf("after the resume: %w", err)
	}
	if c.Status.ClusterID != clusterID {
		return res, fmt.Errorf("cluster ID %s after the resume, %s before", c.Status.ClusterID, clusterID)
	}
	return res, nil
}

func (b *bench) setSuspend(ns, name string, suspend bool) error {
	patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend))
	return b.c.Patch(b.ctx, &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, patch)
}

// memberRecords reads each member's ID, PVC and Pod.
func (b *bench) memberRecords(ns, name string) (map[string]memberRecord, error) {
	members := &etcdv1.EtcdMemberList{}
	if err := b.c.List(b.ctx, members, client.InNamespace(ns), client.MatchingLabels{etcdv1.ClusterLabel: name}); err != nil {
		return nil, err
	}
	out := map[string]memberRecord{}
	for _, m := range members.Items {
		r := memberRecord{id: m.Status.MemberID, pvc: m.Status.PVCName}
		if r.id == "" || r.pvc == "" {
			return nil, fmt.Errorf("member %s has no member ID or PVC in its status", m.Name)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: r.pvc}, pvc); err != nil {
			return nil, err
		}
		r.pvcUID = pvc.UID
		pod := &corev1.Pod{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: m.Name}, pod); client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		r.podUID = pod.UID
		out[m.Name] = r
	}
	return out, nil
}

// clusterIDs checks that the cluster's status.members give each member the
// ID its EtcdMember recorded.
func clusterIDs(c *etcdv1.EtcdCluster, members map[string]memberRecord) error {
	if len(c.Status.Members) != len(members) {
		return fmt.Errorf("%d members in the cluster's status, %d EtcdMembers", len(c.Status.Members), len(members))
	}
	for _, ms := range c.Status.Members {
		if r, ok := members[ms.Name]; !ok || r.id != ms.ID {
			return fmt.Errorf("member %s has ID %q in the cluster's status, %q in its EtcdMember", ms.Name, ms.ID, r.id)
		}
	}
	return nil
}

// membersBack says whether every member of before has a new Pod, Ready,
// that mounts the member's own PVC (the same object), and its EtcdMember
// Ready; it logs when each Pod and member got there.
func (b *bench) membersBack(ns string, before map[string]memberRecord, tl *timeline) (bool, error) {
	back := true
	for _, name := range slices.Sorted(maps.Keys(before)) {
		r := before[name]
		p := &corev1.Pod{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, p); client.IgnoreNotFound(err) != nil {
			return false, err
		} else if err != nil || p.UID == r.podUID {
			back = false
			continue
		}
		tl.see("Pod " + name + " created")
		if cs := containerStatus(p, resources.EtcdContainer); cs != nil && cs.State.Running != nil {
			tl.see("Pod " + name + " etcd running")
		}
		if !isReady(p) {
			back = false
			continue
		}
		tl.see("Pod " + name + " Ready")
		if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool {
			return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == r.pvc
		}) {
			return false, fmt.Errorf("the new Pod of %s does not mount its PVC %s", name, r.pvc)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: r.pvc}, pvc); err != nil {
			return false, err
		}
		if pvc.UID != r.pvcUID {
			return false, fmt.Errorf("the PVC %s of %s was made again (UID %s, %s before)", r.pvc, name, pvc.UID, r.pvcUID)
		}
		m := &etcdv1.EtcdMember{}
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
			return false, err
		}
		if !isTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
			back = false
			continue
		}
		tl.see("EtcdMember " + name + " Ready")
	}
	return back, nil
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// printResume writes what run i measured of the suspend and resume.
func printResume(i int, res resumeResult) {
	fmt.Printf("run %d: suspended (every member Pod gone) in %.1fs, resumed in %.1fs\n", i+1, res.suspendTook, res.took)
	for _, l := range res.log {
		fmt.Printf("  resume %s\n", l)
	}
}
