// Package failpoint marks the points in the operator where a test may make
// it fail: between the steps of a membership change, where a crash is most
// likely to leave something half done. The robustness tests kill the
// operator at each of them and check that the next one to run finishes the
// change without losing a write.
//
// In normal builds Hit does nothing and costs nothing. Built with the tag
// "failpoints", the operator listens on RAFTSMAN_FAILPOINT_ADDR for
//
//	PUT /failpoints/<name>    body "panic": the next Hit of <name> ends the process
//	DELETE /failpoints/<name> disarms it
//	GET /failpoints           lists the armed ones and how often each point was hit
//
// and arms the points named in RAFTSMAN_FAILPOINTS ("name=panic,...") at
// start. An armed point fires once: the process dies and its replacement
// starts with nothing armed, which is what a crash looks like.
package failpoint

// Names of the points, in the order a membership change passes them.
const (
	// AfterJoinerCreate: a scale by more than one made the EtcdMember of
	// one new member (its Pod is prepared), not yet those of the others.
	AfterJoinerCreate = "afterJoinerCreate"
	// BeforeMemberAdd: the EtcdMember (the intent) exists, etcd does not
	// know the member yet.
	BeforeMemberAdd = "beforeMemberAdd"
	// AfterMemberAdd: etcd added the learner, its ID is not yet recorded.
	AfterMemberAdd = "afterMemberAdd"
	// BeforePromote: the learner caught up, MemberPromote not yet called.
	BeforePromote = "beforePromote"
	// AfterPromote: etcd promoted the learner, the status does not say so.
	AfterPromote = "afterPromote"
	// BeforeReplacedRemoval: a member replaced onto new storage is to go
	// (the member that replaces it is a healthy voter, or it is down and
	// goes first); its EtcdMember is not yet deleted.
	BeforeReplacedRemoval = "beforeReplacedRemoval"
	// BeforeMoveLeader: the leader is to be removed; leadership not moved.
	BeforeMoveLeader = "beforeMoveLeader"
	// BeforeMemberRemove: the EtcdMember is being deleted, etcd still has it.
	BeforeMemberRemove = "beforeMemberRemove"
	// AfterMemberRemove: etcd removed the member, its finalizer is still on.
	AfterMemberRemove = "afterMemberRemove"
)

// All lists every point.
var All = []string{AfterJoinerCreate, BeforeMemberAdd, AfterMemberAdd, BeforePromote, AfterPromote, BeforeReplacedRemoval, BeforeMoveLeader, BeforeMemberRemove, AfterMemberRemove}
