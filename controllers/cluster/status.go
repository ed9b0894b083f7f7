package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// setStatus turns the facts of a reconcile into the cluster's status and
// conditions and into each member's Registered condition.
func setStatus(s *scope) {
	c := s.cluster
	c.Status.ObservedGeneration = c.Generation
	c.Status.Selector = labels.SelectorFromSet(resources.ClusterLabels(c.Name)).String()
	if s.suspended {
		setSuspendedStatus(s)
		return
	}
	setAlarms(s)
	if s.formed {
		setMembers(s)
	} else {
		c.Status.ReadyReplicas = 0
		c.Status.Replicas = int32(len(s.active()))
		for i := range c.Status.Members {
			c.Status.Members[i].Healthy, c.Status.Members[i].Leader = false, false
		}
	}
	setAvailable(s)
	setProgressing(s)
	setDegraded(s)
	for _, m := range s.members {
		setRegistered(s, m)
	}
}

// setSuspendedStatus keeps what etcd said last (member IDs, cluster ID):
// the members come back with them.
func setSuspendedStatus(s *scope) {
	c := s.cluster
	c.Status.ReadyReplicas = 0
	for i := range c.Status.Members {
		c.Status.Members[i].Healthy, c.Status.Members[i].Leader = false, false
	}
	msg := "The cluster is suspended: its members' Pods are stopped, their volumes kept. Set spec.suspend to false to start them again"
	for _, t := range []string{etcdv1.ConditionAvailable, etcdv1.ConditionProgressing, etcdv1.ConditionDegraded} {
		kube.Set(&c.Status.Conditions, c.Generation, t, false, etcdv1.ReasonSuspended, msg)
	}
	for _, m := range s.members {
		setRegistered(s, m)
	}
}

// setMembers copies etcd's member list and health into the status.
func setMembers(s *scope) {
	c := s.cluster
	names := map[uint64]string{}
	for _, m := range s.members {
		if em, ok := s.inEtcd(m); ok {
			names[em.ID] = m.Name
		}
	}
	last := lastVersions(c)
	prev, quotas := map[string]etcdv1.ClusterMemberStatus{}, map[string]int64{}
	for _, ms := range c.Status.Members {
		prev[ms.Name] = ms
	}
	for _, m := range s.members {
		quotas[m.Name] = resources.EffectiveQuota(m.Spec.Options.QuotaBackendBytes)
	}
	members := make([]etcdv1.ClusterMemberStatus, 0, len(s.etcdList))
	var versions []string
	for _, em := range s.etcdList {
		name := names[em.ID]
		if name == "" {
			name = em.Name
		}
		if name == "" {
			name = etcd.FormatID(em.ID)
		}
		st, healthy := s.health[em.ID]
		ms := etcdv1.ClusterMemberStatus{Name: name, ID: etcd.FormatID(em.ID), Role: etcdv1.RoleVoter, Version: st.Version, Healthy: healthy, Leader: em.ID == s.leader}
		if em.IsLearner {
			ms.Role = etcdv1.RoleLearner
		}
		if ms.Version == "" {
			// A member that does not answer now (one restarting) still
			// runs, as far as anyone knows, what it ran last.
			ms.Version = last[name]
		}
		if ms.Version != "" {
			versions = append(versions, ms.Version)
		}
		setSizes(&ms, prev[name], st, healthy, quotas[name])
		members = append(members, ms)
	}
	slices.SortFunc(members, func(a, b etcdv1.ClusterMemberStatus) int { return strings.Compare(a.Name, b.Name) })
	// Only a cluster that someone else gave dozens of members gets here.
	members = members[:min(len(members), etcdv1.MaxStatusMembers)]
	_, healthy := s.voters()
	c.Status.Members = members
	c.Status.Replicas = int32(len(members))
	c.Status.ReadyReplicas = int32(healthy)
	if len(versions) > 0 {
		c.Status.Version = slices.MinFunc(versions, compareVersions)
	}
}

// sizeStep is how far a database size must move before the status shows
// the new one: sizes change with every write, and each status change is
// an API write.
const sizeStep = 1 << 20

// setSizes fills a member's database sizes and quota: what it answered
// now when that moved by sizeStep or more (or the status had none),
// else what the status showed.
func setSizes(ms *etcdv1.ClusterMemberStatus, prev etcdv1.ClusterMemberStatus, st etcd.Status, answered bool, quota int64) {
	ms.DBSize, ms.DBSizeInUse, ms.Quota = prev.DBSize, prev.DBSizeInUse, quota
	if !answered {
		return
	}
	moved := func(a, b int64) bool { return a == 0 || max(a-b, b-a) >= sizeStep }
	if moved(prev.DBSize, st.DBSize) || moved(prev.DBSizeInUse, st.DBSizeInUse) {
		ms.DBSize, ms.DBSizeInUse = st.DBSize, st.DBSizeInUse
	}
}

// lastVersions are the versions the status last showed, by member: what a
// member that does not answer now (one restarting) runs, as far as anyone
// knows.
func lastVersions(c *etcdv1.EtcdCluster) map[string]string {
	last := map[string]string{}
	for _, ms := range c.Status.Members {
		last[ms.Name] = ms.Version
	}
	return last
}

// compareVersions orders etcd versions like 3.5.9 < 3.5.10.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		_, _ = fmt.Sscan(pa[i], &x)
		_, _ = fmt.Sscan(pb[i], &y)
		if x != y {
			return x - y
		}
	}
	return len(pa) - len(pb)
}

func setAvailable(s *scope) {
	c := s.cluster
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionAvailable, ok, reason, msg)
	}
	switch {
	case !s.formed && s.restoringBackup():
		set(false, etcdv1.ReasonRestoringBackup, c.Status.Recovery.Message)
		return
	case !s.formed && c.Status.ClusterID == "":
		set(false, etcdv1.ReasonBootstrapping, fmt.Sprintf("Waiting for the %d initial members to start and form the cluster", len(s.members)))
		return
	case !s.formed && s.quorumReport != "":
		set(false, etcdv1.ReasonQuorumLost, fmt.Sprintf("etcd does not answer: %v; %s", s.etcdErr, s.quorumReport))
		return
	case !s.formed:
		set(false, etcdv1.ReasonQuorumLost, fmt.Sprintf("etcd does not answer: %v. Check the member Pods with kubectl get etcdmember,pods", s.etcdErr))
		return
	}
	all, healthy := s.voters()
	if healthy < all/2+1 {
		set(false, etcdv1.ReasonQuorumLost, fmt.Sprintf("Only %d of %d voting members are healthy; a quorum needs %d", healthy, all, all/2+1))
		return
	}
	msg := fmt.Sprintf("%d of %d voting members are healthy", healthy, all)
	if n := resources.Replicas(c); n%2 == 0 {
		msg += fmt.Sprintf("; note: %d members tolerate no more failures than %d, prefer an odd replica count", n, n-1)
	}
	set(true, etcdv1.ReasonQuorumHealthy, msg)
}

func setProgressing(s *scope) {
	c := s.cluster
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionProgressing, ok, reason, msg)
	}
	active := len(s.active())
	switch {
	case s.waiting != "":
		set(true, s.waiting, s.waitingMsg)
	case s.progress != "" && s.progress != etcdv1.ReasonReplacingMembers && s.replacementStep() != "":
		// Scaling adds and promotes the member that replaces another.
		set(true, etcdv1.ReasonReplacingMembers, s.replacementStep()+": "+s.progressMsg)
	case s.progress != "":
		set(true, s.progress, s.progressMsg)
	case !s.formed && c.Status.ClusterID == "":
		set(true, etcdv1.ReasonBootstrapping, "Starting the initial members together")
	case s.suspending:
		set(false, etcdv1.ReasonSuspending, "No membership change runs: the cluster is being suspended (see the Suspended condition)")
	case active < s.desired || len(s.members) != active:
		set(true, etcdv1.ReasonScalingUp, fmt.Sprintf("%d of %d members", active, s.desired))
	case active > s.desired:
		set(true, etcdv1.ReasonScalingDown, fmt.Sprintf("%d of %d members", active, s.desired))
	default:
		set(false, etcdv1.ReasonConverged, fmt.Sprintf("The cluster has the %d members its spec asks for", s.desired))
	}
}

func setDegraded(s *scope) {
	c := s.cluster
	set := func(ok bool, reason, msg string) {
		kube.Set(&c.Status.Conditions, c.Generation, etcdv1.ConditionDegraded, ok, reason, msg)
	}
	switch {
	case len(s.undecodable) > 0:
		set(true, etcdv1.ReasonMemberUndecodable, fmt.Sprintf("EtcdMember %s cannot be decoded by the operator (a value an older CRD accepted; see its Undecodable event): the cluster makes no membership change, rollout or recovery until it is fixed (kubectl edit) or deleted", strings.Join(s.undecodable, ", ")))
		return
	case len(s.foreign) > 0:
		set(true, etcdv1.ReasonNameConflict, fmt.Sprintf("%s already exist and are not this cluster's: the operator leaves them as they are, and clients may not reach the members through them. Delete or rename them, or create the cluster under another name", strings.Join(s.foreign, ", ")))
		return
	case podTrouble(s, etcdv1.ReasonPodRejected) != "":
		set(true, etcdv1.ReasonPodRejected, podTrouble(s, etcdv1.ReasonPodRejected))
		return
	case podTrouble(s, etcdv1.ReasonUnschedulable) != "":
		set(true, etcdv1.ReasonUnschedulable, podTrouble(s, etcdv1.ReasonUnschedulable))
		return
	case !s.formed && s.restoringBackup():
		set(true, etcdv1.ReasonRestoringBackup, c.Status.Recovery.Message)
		return
	case !s.formed && c.Status.ClusterID == "":
		set(false, etcdv1.ReasonBootstrapping, "The cluster is starting")
		return
	case !s.formed:
		set(true, etcdv1.ReasonEtcdError, fmt.Sprintf("etcd does not answer: %v", s.etcdErr))
		return
	}
	var sick []string
	for _, ms := range c.Status.Members {
		if !ms.Healthy {
			sick = append(sick, ms.Name)
		}
	}
	alarm := func(t string) string {
		var names []string
		for _, a := range c.Status.Alarms {
			if a.Type == t {
				names = append(names, cmp.Or(a.Member, a.MemberID))
			}
		}
		return strings.Join(names, ", ")
	}
	switch {
	case alarm(etcd.AlarmCorrupt) != "":
		set(true, etcdv1.ReasonCorrupt, fmt.Sprintf("etcd raised a CORRUPT alarm for %s: its data differs from the others'; it is replaced and the alarm cleared, and etcd takes no writes until then", alarm(etcd.AlarmCorrupt)))
	case alarm(etcd.AlarmNoSpace) != "":
		set(true, etcdv1.ReasonNoSpace, fmt.Sprintf("etcd raised a NOSPACE alarm for %s: the database reached its quota and etcd takes no writes; the operator compacts the history, defragments every member and clears the alarm (see status.maintenance). If it comes back, raise spec.storage.size (the default quota follows it) or spec.options.quotaBackendBytes", alarm(etcd.AlarmNoSpace)))
	case s.stuck != "":
		set(true, etcdv1.ReasonRolloutStuck, s.stuck)
	case s.replaceStuck != "":
		set(true, etcdv1.ReasonReplacementStuck, s.replaceStuck)
	case len(sick) > 0:
		set(true, etcdv1.ReasonMembersUnhealthy, fmt.Sprintf("Members %s do not answer; see kubectl describe etcdmember", strings.Join(sick, ", ")))
	case s.etcdErr != nil:
		set(true, etcdv1.ReasonEtcdError, s.etcdErr.Error())
	default:
		set(false, etcdv1.ReasonMembersHealthy, fmt.Sprintf("All %d members are healthy", len(c.Status.Members)))
	}
}

// setRegistered says whether etcd knows the member, which lets the member
// controller start its Pod.
func setRegistered(s *scope, m *etcdv1.EtcdMember) {
	set := func(ok bool, reason, msg string) {
		kube.Set(&m.Status.Conditions, m.Generation, etcdv1.ConditionRegistered, ok, reason, msg)
	}
	initial := m.Spec.InitialClusterState == etcdv1.InitialClusterStateNew
	switch {
	case initial && m.Status.MemberID == "" && s.cluster.Status.ClusterID == "" && meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionRegistered) == nil:
		// An initial member of a cluster not formed yet is in the initial
		// cluster by construction and may start without the condition
		// (the member controller's registered): it is set with the member
		// ID etcd gives, in one write.
		return
	case initial && (m.Status.MemberID != "" || s.cluster.Status.ClusterID == ""):
		set(true, etcdv1.ReasonInitialMember, "The member is one of the initial members of the cluster")
	case m.Status.MemberID != "":
		set(true, etcdv1.ReasonMemberAdded, fmt.Sprintf("etcd knows the member as %s", m.Status.MemberID))
	default:
		set(false, etcdv1.ReasonAwaitingAdd, "Waiting to be added to etcd as a learner")
	}
}

// podTrouble is what the member controller says (its Ready condition for
// the member's current generation, with the given reason) of the first
// member whose Pod the API server refuses or the scheduler cannot place,
// "" when none.
func podTrouble(s *scope, reason string) string {
	for _, m := range s.members {
		c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady)
		if c != nil && c.Reason == reason && c.ObservedGeneration == m.Generation {
			return fmt.Sprintf("Member %s: %s", m.Name, c.Message)
		}
	}
	return ""
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// setAlarms copies etcd's alarms into the status.
func setAlarms(s *scope) {
	if !s.alarmsKnown {
		return
	}
	c := s.cluster
	c.Status.Alarms = nil
	for _, a := range s.alarms {
		ca := etcdv1.ClusterAlarm{Type: a.Type, MemberID: etcd.FormatID(a.MemberID)}
		for _, m := range s.members {
			if m.Status.MemberID == ca.MemberID {
				ca.Member = m.Name
			}
		}
		c.Status.Alarms = append(c.Status.Alarms, ca)
	}
}
