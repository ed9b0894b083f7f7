package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// observeEtcd asks etcd for its members and each member for its health,
// through the Observer: a pass whose answer is not there yet ends here,
// deciding nothing, and the answer's arrival brings the cluster back.
func (r *Reconciler) observeEtcd(ctx context.Context, s *scope) (ctrl.Result, error) {
	if len(s.members) == 0 || (s.cluster.Status.ClusterID == "" && !s.anyMemberReady()) {
		// While bootstrapping, etcd cannot answer before a member is ready
		// (readiness needs a quorum); that member's Ready condition wakes us.
		return ctrl.Result{}, nil
	}
	cli, err := r.etcdClient(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.client = cli
	// MemberList needs a quorum and waits for one until its deadline. Once
	// the last pass found the quorum lost, a member that answers does so
	// in milliseconds, so each look of a recovery need not wait the full
	// etcd timeout to learn it is still lost.
	req := lookRequest{client: cli, members: map[string]string{}, listTimeout: r.Options.EtcdTimeout,
		statusTimeout: r.Options.StatusTimeout, etcdTimeout: r.Options.EtcdTimeout, noneReady: !s.anyMemberReady()}
	if a := meta.FindStatusCondition(s.cluster.Status.Conditions, etcdv1.ConditionAvailable); a != nil && (a.Reason == etcdv1.ReasonQuorumLost || a.Reason == etcdv1.ReasonRestoringBackup) {
		req.listTimeout = min(req.listTimeout, 2*r.Options.StatusTimeout)
	}
	for _, m := range s.active() {
		req.members[m.Name] = m.Spec.ClientURL
	}
	if r.Options.CalmHealthInterval > r.Options.HealthInterval {
		req.only, req.onlyURL, req.carried, _ = r.polls.lightLook(&s.view, time.Now(), lightLookMaxAge(len(s.active()), r.Options.CalmHealthInterval))
	}
	o, ok := r.Observer.observe(ctx, s.cluster, req)
	if !ok {
		s.observing = true
		return ctrl.Result{RequeueAfter: r.observeWaitRetry()}, nil
	}
	r.takeObservation(ctx, s, o)
	return ctrl.Result{}, nil
}

// lightLookMaxAge is how old the last answer of a member may be for a light
// look to carry it over: a calm cluster of n members asks each in turn
// every n polls, CalmHealthInterval apart; one more poll of slack.
func lightLookMaxAge(n int, calm time.Duration) time.Duration {
	return time.Duration(n+1) * calm
}

// observeWaitRetry is how soon a pass that found no answer yet comes back
// should the answer's wake-up be lost: after the longest a look can take.
func (r *Reconciler) observeWaitRetry() time.Duration {
	return 2*r.Options.EtcdTimeout + r.Options.StatusTimeout
}

// takeObservation records what a look found on the scope.
func (r *Reconciler) takeObservation(ctx context.Context, s *scope, o observation) {
	s.etcdErr = o.panics
	if o.listErr != nil {
		s.etcdErr = errors.Join(o.listErr, o.panics)
		if s.cluster.Status.ClusterID == "" {
			// Still bootstrapping: the members' Pods becoming ready wake us.
			return
		}
		ctrl.LoggerFrom(ctx).Info("etcd does not answer", "error", o.listErr.Error())
		r.reportQuorumLoss(s, o.reachable)
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Membership changes wait until etcd answers again: %v", o.listErr)
		s.quorumLost = true
		return
	}
	s.formed, s.clusterID, s.etcdList = true, o.clusterID, o.list
	if s.cluster.Status.ClusterID == "" {
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "Bootstrapped", "Bootstrap", "etcd cluster %s formed with %d members", etcd.FormatID(o.clusterID), len(o.list))
	}
	s.cluster.Status.ClusterID = etcd.FormatID(o.clusterID)
	s.health, s.carried, s.leader = o.health, o.carried, o.leader
	recordDBSizes(s)
	if o.alarmsErr != nil {
		// The alarms the status showed last stay: an alarm is cleared only
		// by etcd saying so.
		ctrl.LoggerFrom(ctx).Info("etcd did not list its alarms", "error", o.alarmsErr.Error())
	} else {
		s.alarms, s.alarmsKnown = o.alarms, true
	}
	recordMembers(s, o.list)
}

// recordMembers records what etcd says of each EtcdMember: its ID and
// role. A member added before a crash is recognised here by its peer URL.
func recordMembers(s *scope, list []etcd.Member) {
	for _, m := range s.members {
		if em, ok := findByPeerURL(list, m.Spec.PeerURL); ok {
			m.Status.MemberID = etcd.FormatID(em.ID)
			m.Status.Role = etcdv1.RoleVoter
			if em.IsLearner {
				m.Status.Role = etcdv1.RoleLearner
			}
		}
	}
}

// etcdClient is the cluster's etcd client. Learners answer most requests
// with "rpc not supported for learner": the client talks to the members
// that vote (as etcd said last), or to all while none is known to.
func (r *Reconciler) etcdClient(ctx context.Context, s *scope) (etcd.Client, error) {
	endpoints := make([]string, 0, len(s.members))
	for _, m := range s.members {
		if m.Status.Role != etcdv1.RoleLearner {
			endpoints = append(endpoints, m.Spec.ClientURL)
		}
	}
	if len(endpoints) == 0 {
		for _, m := range s.members {
			endpoints = append(endpoints, m.Spec.ClientURL)
		}
	}
	creds, err := r.creds.Load(ctx, r.Client, r.APIReader, s.cluster)
	if err != nil {
		return nil, err
	}
	return r.Etcd.Get(ctx, client.ObjectKeyFromObject(s.cluster).String(), endpoints, creds)
}

func findByPeerURL(list []etcd.Member, peerURL string) (etcd.Member, bool) {
	for _, em := range list {
		if slices.Contains(em.PeerURLs, peerURL) {
			return em, true
		}
	}
	return etcd.Member{}, false
}

func (r *Reconciler) etcdCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.Options.EtcdTimeout)
}

// reportQuorumLoss names, once etcd has no quorum, the members gone (and
// what their EtcdMember says) and the raft index and revision each member
// that answered on its own holds (reachable, asked by the look): what a
// person needs to choose where to recover from. A Warning event marks the
// loss once.
func (r *Reconciler) reportQuorumLoss(s *scope, reachable map[string]etcd.Status) {
	var answered, gone []string
	s.reachable = map[string]etcd.Status{}
	for _, m := range s.active() {
		st, ok := reachable[m.Name]
		if !ok {
			why := "does not answer"
			if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); c != nil && c.Status != "True" {
				why = c.Message
			}
			gone = append(gone, fmt.Sprintf("%s (%s)", m.Name, why))
			continue
		}
		s.reachable[m.Name] = st
		answered = append(answered, fmt.Sprintf("%s (raft index %d, revision %d)", m.Name, st.RaftIndex, st.Revision))
	}
	s.quorumReport = fmt.Sprintf("members gone: %s; reachable: %s", orNone(gone), orNone(answered))
	if prev := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionAvailable); prev == nil || prev.Reason != etcdv1.ReasonQuorumLost {
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, "QuorumLost", "Observe", "etcd has no quorum: %s", s.quorumReport)
	}
}
