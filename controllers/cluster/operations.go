package cluster

import (
	"context"
	"fmt"
	"slices"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/kube"
)

// Operations. Once a pass has made the cluster's objects and observed etcd,
// the cluster's operations may change it: each first decides, from the view
// alone, whether it has anything to do this pass (a decision), and one
// arbiter (arbitrate) asks them in this order and lets the first that has
// something to do act:
//
//  1. quorum recovery: while etcd has no quorum nothing else can change it,
//     and a recovery under way owns the members until it ends. It is the
//     only operation that runs before the certificates of the current
//     spec.tls are issued: a lost quorum may be what keeps the tls
//     controller from finishing them.
//  2. removal: a member being deleted leaves etcd first. Until it does, it
//     counts as a voter that may not answer, and its Pod and PVC stay.
//  3. healing: a member that lost its data or its place in etcd, or that
//     etcd reports corrupt, is replaced before anything else changes: it
//     counts against the quorum every later change needs.
//  4. version: the plan to spec.version (etcd's downgrade, the snapshots a
//     3.7 upgrade needs). It goes before scaling so that a member added
//     meanwhile gets a version the running members accept.
//  5. scaling, one member at a time: scale in, or a new member added as a
//     learner and promoted. It goes before the rollout (rollout.go says why).
//  6. replacement: a member on storage the spec no longer asks for is
//     replaced by a new member, one at a time (replacement.go). It goes
//     before the rollout, which would restart members that are to go, and
//     lets a rollout or a defragmentation under way end first.
//  7. rollout: the spec to one member at a time.
//  8. maintenance: defragmentation and NOSPACE repair, last, and only while
//     nothing above moves (canDefragNow).
//
// An operation acts by running its steps; a step that changes something or
// has to wait ends the pass (a requeue or an error), and the operations
// after it wait for a later pass. An operation whose steps find nothing to
// do after all lets the next one be asked. A recovery that regrows the
// cluster hands the new members to scaling: it says so and lets scaling act.
type opKind string

const (
	opRecovery    opKind = "QuorumRecovery"
	opRemoval     opKind = "Removal"
	opHealing     opKind = "Healing"
	opVersion     opKind = "Version"
	opScaling     opKind = "Scaling"
	opReplacement opKind = "Replacement"
	opRollout     opKind = "Rollout"
	opMaintenance opKind = "Maintenance"
)

// decision is what an operation would do in a pass, decided from the view:
// act says it has something to do or to look at, why says what (or, when
// it does not act, why not).
type decision struct {
	act bool
	why string
}

// operation is one of the cluster's operations: how it decides, and the
// steps it acts with. certs: it waits for the certificates of the current
// spec.tls before it acts (TLSCurrent).
type operation struct {
	kind   opKind
	decide func(*view) decision
	steps  []kube.Step[*scope]
	certs  bool
}

// operations are the cluster's operations in the arbiter's order (above).
func (r *Reconciler) operations() []operation {
	return []operation{
		{kind: opRecovery, decide: decideRecovery, steps: []kube.Step[*scope]{r.recover}},
		{kind: opRemoval, decide: decideRemoval, steps: []kube.Step[*scope]{r.finishRemovals}, certs: true},
		{kind: opHealing, decide: decideHealing, steps: []kube.Step[*scope]{r.replaceLostMembers, r.replaceCorruptMembers}, certs: true},
		{kind: opVersion, decide: decideVersion, steps: []kube.Step[*scope]{r.prepareVersion}, certs: true},
		{kind: opScaling, decide: decideScaling, steps: []kube.Step[*scope]{r.scaleDown, r.scaleUp, r.addLearners, r.promoteLearners}, certs: true},
		{kind: opReplacement, decide: decideReplacement, steps: []kube.Step[*scope]{r.replaceStorage}, certs: true},
		{kind: opRollout, decide: decideRollout, steps: []kube.Step[*scope]{r.rollout}, certs: true},
		{kind: opMaintenance, decide: decideMaintenance, steps: []kube.Step[*scope]{r.maintain}, certs: true},
	}
}

// arbitrate is the step that lets the operations act: it asks each, in
// order, for its decision, and runs the steps of the ones that have
// something to do until one of them ends the pass, which it records in
// s.acted.
func (r *Reconciler) arbitrate(ops []operation) kube.Step[*scope] {
	return func(ctx context.Context, s *scope) (ctrl.Result, error) {
		certsChecked := false
		for _, op := range ops {
			if op.certs && !certsChecked {
				// Every operation after the recovery waits for the
				// certificates of this spec.tls, whether it acts or not.
				certsChecked = true
				if res, err := r.waitForTLS(false)(ctx, s); err != nil || !res.IsZero() {
					return res, err
				}
			}
			d := op.decide(&s.view)
			if !d.act {
				continue
			}
			if res, err := kube.Run(ctx, s, op.steps...); err != nil || !res.IsZero() {
				s.acted = op.kind
				ctrl.LoggerFrom(ctx).V(1).Info("Operation acted", "operation", op.kind, "why", d.why)
				return res, err
			}
		}
		return ctrl.Result{}, nil
	}
}

// recover is the quorum recovery, entered from here alone: it starts one
// while etcd has no quorum, or goes on with one under way (recovery.go),
// and ends it once the cluster is back at its size.
func (r *Reconciler) recover(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.quorumLost {
		return r.recoverQuorum(ctx, s)
	}
	if res, err := r.continueRecovery(ctx, s); err != nil || !res.IsZero() {
		return res, err
	}
	return r.finishRecovery(ctx, s)
}

func decideRecovery(v *view) decision {
	_, asked := v.cluster.Annotations[etcdv1.RecoverQuorumAnnotation]
	_, confirmed := v.cluster.Annotations[etcdv1.RecoverQuorumAcceptLossAnnotation]
	switch {
	case v.quorumLost && v.recovering():
		return decision{act: true, why: "etcd has no quorum; a recovery is under way"}
	case v.quorumLost:
		return decision{act: true, why: "etcd has no quorum"}
	case v.recovering():
		return decision{act: true, why: fmt.Sprintf("a recovery is under way (phase %s)", v.cluster.Status.Recovery.Phase)}
	case asked || confirmed:
		return decision{act: true, why: "a recovery was asked for while etcd has its quorum"}
	}
	return decision{why: "etcd has its quorum"}
}

func decideRemoval(v *view) decision {
	for _, m := range v.members {
		if !m.DeletionTimestamp.IsZero() && controllerutil.ContainsFinalizer(m, etcdv1.MemberFinalizer) {
			return decision{act: true, why: fmt.Sprintf("member %s is being deleted", m.Name)}
		}
	}
	return decision{why: "no member is being deleted"}
}

func decideHealing(v *view) decision {
	for _, m := range v.active() {
		if v.lost(m) {
			return decision{act: true, why: fmt.Sprintf("member %s lost its data or its place in etcd", m.Name)}
		}
	}
	if v.alarmsKnown && slices.ContainsFunc(v.alarms, func(a etcd.Alarm) bool { return a.Type == etcd.AlarmCorrupt }) {
		return decision{act: true, why: "etcd reports a CORRUPT alarm"}
	}
	return decision{why: "no member is lost or corrupt"}
}

func decideVersion(v *view) decision {
	if !v.formed {
		return decision{why: "etcd has not answered"}
	}
	return decision{act: true, why: "the members' versions are compared with spec.version"}
}

func decideScaling(v *view) decision {
	if !v.formed {
		return decision{why: "etcd has not answered"}
	}
	active := v.active()
	if len(active) != v.desired {
		return decision{act: true, why: fmt.Sprintf("%d members, spec.replicas is %d", len(active), v.desired)}
	}
	for _, m := range active {
		if em, ok := v.inEtcd(m); !ok {
			return decision{act: true, why: fmt.Sprintf("member %s is to be added to etcd", m.Name)}
		} else if em.IsLearner {
			return decision{act: true, why: fmt.Sprintf("member %s is a learner", m.Name)}
		}
	}
	return decision{why: fmt.Sprintf("%d voters, as spec.replicas asks", v.desired)}
}

func decideReplacement(v *view) decision {
	switch {
	case !v.formed:
		return decision{why: "etcd has not answered"}
	case v.suspending:
		return decision{why: "the cluster is being suspended"}
	}
	if n, o := v.replacing(); n != nil {
		return decision{act: true, why: fmt.Sprintf("member %s replaces %s", n.Name, o.Name)}
	}
	if o, _ := v.nextToReplace(); o != nil {
		return decision{act: true, why: fmt.Sprintf("member %s is to be replaced: %s", o.Name, v.outdatedStorage(o))}
	}
	return decision{why: "every member's storage is what spec.storage asks for"}
}

func decideRollout(v *view) decision {
	switch {
	case !v.formed:
		return decision{why: "etcd has not answered"}
	case v.suspending:
		return decision{why: "the cluster is being suspended"}
	}
	return decision{act: true, why: "each member's spec is compared with the cluster's"}
}

func decideMaintenance(v *view) decision {
	switch {
	case !v.formed:
		return decision{why: "etcd has not answered"}
	case v.suspending:
		return decision{why: "the cluster is being suspended"}
	}
	return decision{act: true, why: "the members' database sizes are compared with the defragmentation policy"}
}
