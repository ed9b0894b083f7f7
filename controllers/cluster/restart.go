package cluster

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// restartForTrust restarts, one at a time, the members whose Pods started
// trusting other CAs than status.tls.trustRevision names (a CA rotation):
// etcd loads its trusted CAs only at start. A member restarts only while
// every member is Ready and healthy, so the quorum is never at risk; the
// leader goes last, since its restart costs an election. The member
// controller does the restart when the member's spec changes.
func (r *Reconciler) restartForTrust(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	if c.Spec.TLS.Disabled || c.Status.TLS == nil || c.Status.TLS.TrustRevision == "" || !s.formed {
		return ctrl.Result{}, nil
	}
	want := c.Status.TLS.TrustRevision
	var stale []*etcdv1.EtcdMember
	for _, m := range s.active() {
		if m.Spec.TLS != nil && m.Spec.TLS.TrustRevision != want {
			stale = append(stale, m)
		}
	}
	if len(stale) == 0 {
		return ctrl.Result{}, nil
	}
	s.progress, s.progressMsg = etcdv1.ReasonRestartingMembers, fmt.Sprintf("Restarting members one at a time to load new trusted CAs: %d to go", len(stale))
	for _, m := range s.active() {
		em, ok := s.inEtcd(m)
		if !ok || !s.healthy(em.ID) || !kube.IsTrue(m.Status.Conditions, etcdv1.ConditionReady, m.Generation) {
			s.progressMsg += fmt.Sprintf("; waiting for %s to be ready and healthy", m.Name)
			// The member's Ready condition wakes us; the requeue covers
			// its health, which etcd has no watch for.
			return ctrl.Result{RequeueAfter: r.Options.RetryInterval * 5}, nil
		}
	}
	slices.SortStableFunc(stale, func(a, b *etcdv1.EtcdMember) int {
		return boolInt(s.isLeader(a)) - boolInt(s.isLeader(b))
	})
	m := stale[0]
	ctrl.LoggerFrom(ctx).Info("Restarting a member to load new trusted CAs", "member", m.Name, "trustRevision", want)
	m.Spec.TLS.TrustRevision = want
	if err := r.Update(ctx, m); err != nil {
		return ctrl.Result{}, fmt.Errorf("restart member %s: %w", m.Name, err)
	}
	s.memberBases[m.Name] = m.DeepCopy()
	r.Recorder.Eventf(c, m, corev1.EventTypeNormal, "MemberRestarting", "Restart", "Restarting member %s to load new trusted CAs", m.Name)
	return ctrl.Result{}, nil
}

func (s *scope) isLeader(m *etcdv1.EtcdMember) bool {
	em, ok := s.inEtcd(m)
	return ok && em.ID == s.leader
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
