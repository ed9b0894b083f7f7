package cluster

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// view is what one pass knows of a cluster: the EtcdCluster (as the pass
// has changed its status so far), its members, and what etcd said of them.
// newScope fills the Kubernetes side, observeEtcd the etcd side. Every
// query a decision makes is a method below, and none of them writes.
type view struct {
	cluster *etcdv1.EtcdCluster
	// desired is how many members the spec asks for.
	desired int

	// members are the cluster's EtcdMembers, oldest first.
	members []*etcdv1.EtcdMember
	// undecodable names the cluster's EtcdMembers the operator cannot
	// decode (holdForUndecodable).
	undecodable []string

	// formed: etcd answered a member list, so the cluster exists.
	formed    bool
	clusterID uint64
	etcdList  []etcd.Member
	// health of each member by etcd member ID; leader is the leader's ID.
	// carried are the members whose health a light look carried over from
	// their last answer (polls.lightLook) rather than asked this pass.
	health  map[uint64]etcd.Status
	carried map[uint64]bool
	leader  uint64
	// alarms are etcd's alarms, when alarmsKnown (etcd listed them).
	alarms      []etcd.Alarm
	alarmsKnown bool
	// quorumLost: the cluster formed once, and etcd did not answer a
	// member list (recoverQuorum decides what to do).
	quorumLost bool
	// reachable are the members that answered their status request while
	// etcd had no quorum, with what each said.
	reachable map[string]etcd.Status

	// servingOnly: the client Service selects on the serving label, so a
	// drained member gets no new connections.
	servingOnly bool
	// suspending: spec.suspend asks to stop the members; changes under way
	// end but none starts. suspended: the data controller said Suspended
	// for this generation, so the members' Pods stop and nothing is done.
	suspending, suspended bool
	// defragging names the member whose defragmentation runs beside the
	// workers now: it may not answer until it ends, which is no reason
	// to stop the run that started it.
	defragging string
}

// active are the members that are not being removed.
func (v *view) active() []*etcdv1.EtcdMember {
	out := make([]*etcdv1.EtcdMember, 0, len(v.members))
	for _, m := range v.members {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m)
		}
	}
	return out
}

// allHealthyVoters: every active member is a voter etcd knows and answered
// (or is being defragmented beside the workers: it answers again after).
func (v *view) allHealthyVoters() bool {
	return v.healthyVotersBut(nil)
}

// healthyVotersBut is allHealthyVoters for every active member but except,
// which need be no more than a member etcd lists.
func (v *view) healthyVotersBut(except *etcdv1.EtcdMember) bool {
	for _, m := range v.active() {
		em, ok := v.inEtcd(m)
		if m == except && ok {
			continue
		}
		if !ok || em.IsLearner || (!v.healthy(em.ID) && m.Name != v.defragging) {
			return false
		}
	}
	return len(v.active()) == len(v.etcdList)
}

func (v *view) allSettled() bool {
	return !slices.ContainsFunc(v.active(), func(m *etcdv1.EtcdMember) bool { return !v.settled(m) })
}

func (v *view) anyMemberReady() bool {
	return slices.ContainsFunc(v.members, func(m *etcdv1.EtcdMember) bool {
		return kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation)
	})
}

// canDefragNow: a defragmentation may go on: every member a healthy voter,
// as many as the spec asks for, no rollout or recovery, not suspending.
func (v *view) canDefragNow() bool {
	return v.formed && !v.suspending && v.allHealthyVoters() && len(v.active()) == v.desired &&
		v.cluster.Status.Rollout == nil && !recovering(v.cluster)
}

// caughtUp says whether the member's applied index is within caughtUpLag
// of the leader's committed index, both read in this pass.
func (v *view) caughtUp(em etcd.Member) bool {
	st, ok := v.health[em.ID]
	if !ok {
		return false
	}
	if em.ID == v.leader {
		return true
	}
	lst, ok := v.health[v.leader]
	if !ok || st.Leader == 0 {
		return false
	}
	return st.RaftAppliedIndex+caughtUpLag >= lst.RaftIndex
}

// defragOrder names the members to defragment (those ok accepts, every
// one when ok is nil): followers by name, the leader last.
func (v *view) defragOrder(ok func(etcd.Status) bool) []string {
	var followers []string
	leader := ""
	for _, m := range v.active() {
		em, in := v.inEtcd(m)
		st, healthy := v.health[em.ID]
		if !in || !healthy || (ok != nil && !ok(st)) {
			continue
		}
		if em.ID == v.leader {
			leader = m.Name
			continue
		}
		followers = append(followers, m.Name)
	}
	slices.Sort(followers)
	if leader != "" {
		followers = append(followers, leader)
	}
	return followers
}

// downgradeEnabled says whether etcd reports a downgrade under way, and to
// which version. etcd 3.5 members do not report it, so any member that
// does counts.
func (v *view) downgradeEnabled() (bool, string) {
	for _, st := range v.health {
		if st.Downgrade.Enabled {
			return true, st.Downgrade.TargetVersion
		}
	}
	return false, ""
}

// formatsNot names the members whose data format (storage version) etcd
// does not report as ok: those that do not answer count as not ok when
// unanswered is set. Members of 3.5 report none, which counts as ok.
func (v *view) formatsNot(ok func(minor int) bool, unanswered bool) []string {
	var out []string
	for _, m := range v.active() {
		em, listed := v.inEtcd(m)
		if !listed {
			continue
		}
		st, answered := v.health[em.ID]
		switch {
		case !answered:
			if unanswered {
				out = append(out, m.Name)
			}
		case st.StorageVersion != "" && !ok(minorNum(st.StorageVersion)):
			out = append(out, fmt.Sprintf("%s (%s)", m.Name, minorOf(st.StorageVersion)))
		}
	}
	return out
}

func (v *view) hasAlarm(typ string) bool {
	return v.alarmsKnown && slices.ContainsFunc(v.alarms, func(a etcd.Alarm) bool { return a.Type == typ })
}

func (v *view) hasMember(name string) bool {
	return slices.ContainsFunc(v.members, func(m *etcdv1.EtcdMember) bool { return m.Name == name })
}

// healthy says whether the etcd member answered its status request.
func (v *view) healthy(id uint64) bool {
	_, ok := v.health[id]
	return ok
}

// inEtcd returns the etcd member of an EtcdMember, if etcd lists it.
func (v *view) inEtcd(m *etcdv1.EtcdMember) (etcd.Member, bool) {
	return findByPeerURL(v.etcdList, m.Spec.PeerURL)
}

// initialCluster is etcd's member list as this pass saw it, with the
// member name at peerURL added: the --initial-cluster of a member joining.
func (v *view) initialCluster(name, peerURL string) string {
	pairs := [][2]string{}
	for _, em := range v.etcdList {
		if em.Name != "" && len(em.PeerURLs) > 0 && !slices.Contains(em.PeerURLs, peerURL) {
			pairs = append(pairs, [2]string{em.Name, em.PeerURLs[0]})
		}
	}
	return resources.InitialCluster(append(pairs, [2]string{name, peerURL}))
}

func (v *view) isLeader(m *etcdv1.EtcdMember) bool {
	em, ok := v.inEtcd(m)
	return ok && em.ID == v.leader
}

// learnerCannotJoin says why a learner that has not started yet never
// will, "" while it may: its --initial-cluster is not etcd's member list
// any more (a member was removed or added since it was written, and etcd
// refuses a joining member whose list differs: "member count is
// unequal"), or its container keeps exiting (the member controller's
// Ready reason PodFailing, for the member's generation). Such a learner is
// removed and added again at once, with the member list of that moment,
// rather than after the learner timeout.
func (v *view) learnerCannotJoin(m *etcdv1.EtcdMember, em etcd.Member) string {
	if em.Started() {
		return ""
	}
	// A prepared joiner takes its list from etcd as it starts (pkg/agent,
	// join): the one in its spec only names whom it asks.
	if want := v.initialCluster(m.Name, m.Spec.PeerURL); want != m.Spec.InitialCluster && !resources.JoinsGated(m, true) {
		return fmt.Sprintf("cannot join: its --initial-cluster %q is not etcd's member list %q any more", m.Spec.InitialCluster, want)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); c != nil && c.Reason == etcdv1.ReasonPodFailing &&
		c.ObservedGeneration == m.Generation && time.Since(c.LastTransitionTime.Time) >= learnerFailingFor {
		return "cannot start: " + c.Message
	}
	return ""
}

// legacyOptions: the cluster's members were made before the operator
// filled in default options (resources.MemberOptions): one has no quota.
func (v *view) legacyOptions() bool {
	return slices.ContainsFunc(v.members, func(m *etcdv1.EtcdMember) bool { return m.Spec.Options.QuotaBackendBytes == nil })
}

// lost says whether a member can never run again: its data is gone, its Pod
// was lost with its node, or etcd no longer lists a member it did list
// (removed behind the operator's back).
func (v *view) lost(m *etcdv1.EtcdMember) bool {
	if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); c != nil && (c.Reason == etcdv1.ReasonDataLost || c.Reason == etcdv1.ReasonPodLost) && c.ObservedGeneration == m.Generation {
		return true
	}
	if !v.formed {
		return false
	}
	_, listed := v.inEtcd(m)
	return !listed && (m.Status.MemberID != "" || m.Spec.InitialClusterState == etcdv1.InitialClusterStateNew)
}

// memberByID is the active EtcdMember etcd knows by id.
func (v *view) memberByID(id uint64) *etcdv1.EtcdMember {
	for _, m := range v.active() {
		if em, ok := v.inEtcd(m); ok && em.ID == id {
			return m
		}
	}
	return nil
}

func (v *view) memberNamed(name string) *etcdv1.EtcdMember {
	i := slices.IndexFunc(v.active(), func(m *etcdv1.EtcdMember) bool { return m.Name == name })
	if i < 0 {
		return nil
	}
	return v.active()[i]
}

// nearQuota says whether a member's database is close to its quota.
func (v *view) nearQuota() bool {
	for _, m := range v.active() {
		em, ok := v.inEtcd(m)
		q := resources.EffectiveQuota(m.Spec.Options.QuotaBackendBytes)
		if st, healthy := v.health[em.ID]; ok && healthy && st.DBSize*100 >= q*nearQuota {
			return true
		}
	}
	return false
}

// pickVictim chooses the member whose removal hurts least: one etcd does not
// know yet, a learner, an unhealthy member, a follower, the leader last; the
// newest among equals.
func (v *view) pickVictim(active []*etcdv1.EtcdMember) *etcdv1.EtcdMember {
	rank := func(m *etcdv1.EtcdMember) int {
		em, ok := v.inEtcd(m)
		switch {
		case !ok:
			return 0
		case em.IsLearner:
			return 1
		case !v.healthy(em.ID):
			return 2
		case em.ID != v.leader:
			return 3
		}
		return 4
	}
	victim := active[len(active)-1]
	for i := len(active) - 1; i >= 0; i-- {
		if rank(active[i]) < rank(victim) {
			victim = active[i]
		}
	}
	return victim
}

// recovering says whether a recovery is under way (not Done).
func (v *view) recovering() bool {
	rs := v.cluster.Status.Recovery
	return rs != nil && rs.Phase != etcdv1.RecoveryDone
}

// removalKeepsQuorum says whether removing em leaves a quorum of healthy
// voters among the voters that remain.
func (v *view) removalKeepsQuorum(em etcd.Member) bool {
	if em.IsLearner {
		return true
	}
	all, healthy := v.voters()
	if v.healthy(em.ID) {
		healthy--
	}
	all--
	return all > 0 && healthy >= all/2+1
}

// restoringBackup says whether a restore from a backup is under way and
// its new cluster has not answered yet (phase Restoring).
func (v *view) restoringBackup() bool {
	rs := v.cluster.Status.Recovery
	return rs != nil && rs.Phase == etcdv1.RecoveryRestoring
}

// runningVersions are the versions the active members run, as etcd last
// reported them (a member that does not answer now keeps the version the
// status last showed for it).
func (v *view) runningVersions() []string {
	last := lastVersions(v.cluster)
	var out []string
	for _, m := range v.active() {
		em, ok := v.inEtcd(m)
		if !ok {
			continue
		}
		if st, ok := v.health[em.ID]; ok && st.Version != "" {
			out = append(out, st.Version)
		} else if v := last[m.Name]; v != "" {
			out = append(out, v)
		}
	}
	return out
}

// settled says whether a member runs its current spec and is a healthy,
// caught-up voter.
func (v *view) settled(m *etcdv1.EtcdMember) bool {
	em, ok := v.inEtcd(m)
	return ok && !em.IsLearner && v.healthy(em.ID) && v.caughtUp(em) &&
		kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation)
}

// successor is the healthy voter, other than id and for which ok holds
// (any, when ok is nil), that is furthest ahead: the highest applied index.
func (v *view) successor(id uint64, ok func(etcd.Member) bool) (etcd.Member, bool) {
	var best etcd.Member
	var index uint64
	for _, em := range v.etcdList {
		st, healthy := v.health[em.ID]
		if em.ID == id || em.IsLearner || !healthy || (ok != nil && !ok(em)) {
			continue
		}
		if best.ID == 0 || st.RaftAppliedIndex > index {
			best, index = em, st.RaftAppliedIndex
		}
	}
	return best, best.ID != 0
}

// unsettledWhy says, for messages, what a member that is not settled shows.
func (v *view) unsettledWhy(m *etcdv1.EtcdMember) string {
	em, ok := v.inEtcd(m)
	switch {
	case !ok:
		return "etcd does not list it"
	case em.IsLearner:
		return "it is a learner"
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != m.Generation {
		if c != nil && c.ObservedGeneration == m.Generation {
			return c.Message
		}
		return "its Pod has not started on its new spec yet"
	}
	if !v.healthy(em.ID) {
		return "etcd does not answer its status request"
	}
	if st, lst := v.health[em.ID], v.health[v.leader]; !v.caughtUp(em) {
		if _, ok := v.health[v.leader]; !ok {
			return "no leader answers, so it cannot be seen to be caught up"
		}
		return fmt.Sprintf("it has applied index %d, the leader has committed %d", st.RaftAppliedIndex, lst.RaftIndex)
	}
	return "it is settled"
}

// voters counts the voting members and the healthy ones.
func (v *view) voters() (all, healthy int) {
	for _, em := range v.etcdList {
		if !em.IsLearner {
			all++
			if v.healthy(em.ID) {
				healthy++
			}
		}
	}
	return all, healthy
}

// volumeConflict is what the scheduler says of a Pod whose volume is bound
// to a node or zone the Pod may not run on.
const volumeConflict = "volume node affinity conflict"

// outdatedStorage says why m's volume is not what spec.storage asks for,
// so that m is replaced by a member on a new volume (replacement.go):
// another medium, another StorageClass, a smaller size, or a volume the
// member's Pod cannot follow (its scheduling changed to nodes or zones the
// volume cannot reach, and the scheduler says so). "" when it is.
// A larger size is not among them (syncStorage grows the volume online),
// nor a Memory member's size (the rollout restarts it with the new one),
// nor a StorageClass the spec leaves out (the running volumes stay).
func (v *view) outdatedStorage(m *etcdv1.EtcdMember) string {
	want, have := v.cluster.Spec.Storage, m.Spec.Storage
	if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); c != nil && c.ObservedGeneration == m.Generation &&
		c.Reason == etcdv1.ReasonUnschedulable && strings.Contains(c.Message, volumeConflict) {
		return fmt.Sprintf("its volume cannot follow its Pod: %s", c.Message)
	}
	switch {
	case want.Medium != have.Medium:
		return fmt.Sprintf("its data is on %s, spec.storage asks for %s", mediumName(have.Medium), mediumName(want.Medium))
	case want.Medium == etcdv1.StorageMediumMemory:
		return ""
	case want.StorageClassName != nil && (have.StorageClassName == nil || *have.StorageClassName != *want.StorageClassName):
		return fmt.Sprintf("its volume is of StorageClass %s, spec.storage asks for %s", className(have.StorageClassName), *want.StorageClassName)
	case want.Size != nil && have.Size != nil && have.Size.Cmp(*want.Size) > 0:
		return fmt.Sprintf("its volume is of %s, spec.storage asks for %s", have.Size, want.Size)
	}
	return ""
}

func mediumName(m etcdv1.StorageMedium) string {
	if m == etcdv1.StorageMediumMemory {
		return "tmpfs (medium Memory)"
	}
	return "a PersistentVolumeClaim"
}

func className(name *string) string {
	if name == nil || *name == "" {
		return "(the default class)"
	}
	return *name
}

// replacing is the replacement under way, if any: the member made to
// replace another (ReplacesAnnotation) while that other is still active,
// and as long as the spec still asks for it (the other's storage outdated,
// its own not). One the spec no longer asks for is a member too many,
// which scaling removes.
func (v *view) replacing() (replacement, old *etcdv1.EtcdMember) {
	for _, m := range v.active() {
		name, ok := m.Annotations[etcdv1.ReplacesAnnotation]
		if !ok {
			continue
		}
		if o := v.memberNamed(name); o != nil && v.outdatedStorage(o) != "" && v.outdatedStorage(m) == "" {
			return m, o
		}
	}
	return nil, nil
}

// nextToReplace is the member on outdated storage to replace first:
// followers before the leader, the oldest first among equals. The second
// result counts the active members whose storage is what the spec asks
// for.
func (v *view) nextToReplace() (*etcdv1.EtcdMember, int) {
	var next *etcdv1.EtcdMember
	current := 0
	for _, m := range v.active() {
		switch {
		case v.outdatedStorage(m) == "":
			current++
		case next == nil || (v.isLeader(next) && !v.isLeader(m)):
			next = m
		}
	}
	return next, current
}

// databaseTooLarge says which member's database would not fit the quota a
// member with spec runs with, "" when every one fits (or etcd's own
// default quota applies).
func (v *view) databaseTooLarge(spec etcdv1.EtcdMemberSpec) string {
	q := spec.Options.QuotaBackendBytes
	if q == nil || *q <= 0 {
		return ""
	}
	for _, m := range v.active() {
		em, ok := v.inEtcd(m)
		if st, healthy := v.health[em.ID]; ok && healthy && st.DBSize >= *q {
			return fmt.Sprintf("the database of %s (%d bytes) does not fit the quota of the new volumes (%d bytes); compact and defragment it, or choose a larger spec.storage.size", m.Name, st.DBSize, *q)
		}
	}
	return ""
}

// replacementStep says, for Progressing, which member a replacement under
// way replaces and how far it is ("" when none is under way).
func (v *view) replacementStep() string {
	n, o := v.replacing()
	if n == nil {
		return ""
	}
	_, current := v.nextToReplace()
	return fmt.Sprintf("Replacing member %s (%d of %d) with %s", o.Name, current, resources.Replicas(v.cluster), n.Name)
}

// learnerSlots is how many learners etcd holds at once, and why: the
// --max-learners every member in etcd runs with, when every member to be
// added is a prepared joiner (one that takes the member list as it
// starts). etcd checks it on each member as it applies a membership
// change, so a second learner is added only when every member runs with
// room for it: each voter is Ready for its generation (its Pod runs its
// current spec) with that value, and each learner was made with it.
// Otherwise, and on etcd 3.5, one.
func (v *view) learnerSlots() (int, string) {
	for _, m := range v.active() {
		if em, ok := v.inEtcd(m); m.Spec.InitialClusterState == etcdv1.InitialClusterStateExisting && (!ok || em.IsLearner) && !resources.JoinsGated(m, true) {
			// Its --initial-cluster is fixed before its add: it must be the
			// member list of then, with no other learner coming after it.
			return 1, fmt.Sprintf("member %s joins with the member list of its spec, not behind the join gate", m.Name)
		}
	}
	slots := int32(math.MaxInt32)
	for _, em := range v.etcdList {
		m := v.memberByID(em.ID)
		switch {
		case m == nil:
			return 1, "a member in etcd has no EtcdMember"
		case m.Spec.MaxLearners <= 1:
			return 1, fmt.Sprintf("member %s runs with etcd's default --max-learners", m.Name)
		case !em.IsLearner && !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation):
			return 1, fmt.Sprintf("member %s may not run its current spec yet", m.Name)
		}
		slots = min(slots, m.Spec.MaxLearners)
	}
	if slots == math.MaxInt32 {
		return 1, "no member in etcd"
	}
	return int(slots), "--max-learners of every member"
}
