package cluster

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/credentials"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// observeEtcd asks etcd for its members and each member for its health.
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
	// in milliseconds, so each pass of a recovery need not wait the full
	// etcd timeout to learn it is still lost.
	timeout := r.Options.EtcdTimeout
	if a := meta.FindStatusCondition(s.cluster.Status.Conditions, etcdv1.ConditionAvailable); a != nil && (a.Reason == etcdv1.ReasonQuorumLost || a.Reason == etcdv1.ReasonRestoringBackup) {
		timeout = min(timeout, 2*r.Options.StatusTimeout)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	id, list, err := cli.MemberList(tctx)
	if err != nil {
		s.etcdErr = err
		if s.cluster.Status.ClusterID == "" {
			// Still bootstrapping: the members' Pods becoming ready wake us.
			return ctrl.Result{}, nil
		}
		ctrl.LoggerFrom(ctx).Info("etcd does not answer", "error", err.Error())
		r.reportQuorumLoss(ctx, s)
		s.waiting, s.waitingMsg = etcdv1.ReasonQuorumLost, fmt.Sprintf("Membership changes wait until etcd answers again: %v", err)
		s.quorumLost = true
		return ctrl.Result{}, nil
	}
	s.formed, s.clusterID, s.etcdList = true, id, list
	if s.cluster.Status.ClusterID == "" {
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "Bootstrapped", "Bootstrap", "etcd cluster %s formed with %d members", etcd.FormatID(id), len(list))
	}
	s.cluster.Status.ClusterID = etcd.FormatID(id)

	r.askHealth(tctx, s, list)
	recordDBSizes(s)
	r.observeAlarms(ctx, s)
	recordMembers(s, list)
	return ctrl.Result{}, nil
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
	creds, err := credentials.Load(ctx, r.Client, s.cluster)
	if err != nil {
		return nil, err
	}
	return r.Etcd.Get(ctx, client.ObjectKeyFromObject(s.cluster).String(), endpoints, creds)
}

// askHealth asks every member etcd lists for its status, all at once, each
// bounded by the status timeout; one that does not answer is not healthy.
func (r *Reconciler) askHealth(ctx context.Context, s *scope, list []etcd.Member) {
	cli := s.client
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, em := range list {
		if len(em.ClientURLs) == 0 {
			continue
		}
		wg.Go(func() {
			// A panic here would end the process, not the pass (the
			// controller recovers only the reconcile's own goroutine):
			// the member counts as not answering, and the pass says why.
			defer func() {
				if p := recover(); p != nil {
					ctrl.LoggerFrom(ctx).Error(fmt.Errorf("%v", p), "Panic in a member status call", "member", em.Name, "stack", string(debug.Stack()))
					mu.Lock()
					defer mu.Unlock()
					s.etcdErr = errors.Join(s.etcdErr, fmt.Errorf("status of member %s: panic: %v", em.Name, p))
				}
			}()
			sctx, cancel := context.WithTimeout(ctx, r.Options.StatusTimeout)
			defer cancel()
			st, err := cli.Status(sctx, em.ClientURLs[0])
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			s.health[em.ID] = st
			if st.Leader != 0 && !st.IsLearner {
				s.leader = st.Leader
			}
		})
	}
	wg.Wait()
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

// observeAlarms asks etcd for its alarms. A failure leaves the alarms the
// status showed last: an alarm is cleared only by etcd saying so.
func (r *Reconciler) observeAlarms(ctx context.Context, s *scope) {
	tctx, cancel := r.etcdCtx(ctx)
	defer cancel()
	alarms, err := s.client.Alarms(tctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("etcd did not list its alarms", "error", err.Error())
		return
	}
	s.alarms, s.alarmsKnown = alarms, true
}

// reportQuorumLoss asks each member that etcd cannot reach through its
// quorum for its own status, so that the status names the members gone (and
// what their EtcdMember says) and the raft index and revision each
// reachable member holds: what a person needs to choose where to recover
// from. A Warning event marks the loss once.
func (r *Reconciler) reportQuorumLoss(ctx context.Context, s *scope) {
	var reachable, gone []string
	s.reachable = map[string]etcd.Status{}
	for _, m := range s.active() {
		tctx, cancel := context.WithTimeout(ctx, r.Options.StatusTimeout)
		st, err := s.client.Status(tctx, m.Spec.ClientURL)
		cancel()
		if err != nil {
			why := "does not answer"
			if c := meta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); c != nil && c.Status != "True" {
				why = c.Message
			}
			gone = append(gone, fmt.Sprintf("%s (%s)", m.Name, why))
			continue
		}
		s.reachable[m.Name] = st
		reachable = append(reachable, fmt.Sprintf("%s (raft index %d, revision %d)", m.Name, st.RaftIndex, st.Revision))
	}
	s.quorumReport = fmt.Sprintf("members gone: %s; reachable: %s", orNone(gone), orNone(reachable))
	if prev := meta.FindStatusCondition(s.base.Status.Conditions, etcdv1.ConditionAvailable); prev == nil || prev.Reason != etcdv1.ReasonQuorumLost {
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, "QuorumLost", "Observe", "etcd has no quorum: %s", s.quorumReport)
	}
}
