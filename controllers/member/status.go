package member

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// setReadyCondition turns what the reconcile saw into the Ready condition.
func setReadyCondition(s *scope) {
	m := s.member
	set := func(ok bool, reason, msg string) {
		kube.Set(&m.Status.Conditions, m.Generation, etcdv1.ConditionReady, ok, reason, msg)
	}
	switch {
	case m.Spec.Fenced && s.pod == nil:
		set(false, etcdv1.ReasonFenced, "The member is fenced: its Pod is stopped and stays stopped, its volume kept, while the cluster controller recovers the quorum from another member")
	case m.Spec.Fenced:
		set(false, etcdv1.ReasonFencing, fmt.Sprintf("The member is fenced: Pod %s is stopping, and the cluster controller forces no other member until it is gone", s.pod.Name))
	case s.dataLost && s.podLost:
		set(false, etcdv1.ReasonPodLost, "The member's Pod is lost with its node and the cluster controller replaces the member: "+s.dataRefused)
	case s.dataLost && s.dataRefused != "":
		set(false, etcdv1.ReasonDataLost, "The member is lost and the cluster controller replaces it: "+s.dataRefused)
	case s.dataLost:
		set(false, etcdv1.ReasonDataLost, "The member's data volume is gone; the cluster controller replaces the member with a new one")
	case !m.DeletionTimestamp.IsZero():
		set(false, etcdv1.ReasonPodNotReady, "The member is being removed from the cluster")
	case s.suspended:
		set(false, etcdv1.ReasonSuspended, "The cluster is suspended: the member's Pod is stopped and its volume kept")
	case !s.registered && s.pod != nil && s.pod.DeletionTimestamp.IsZero():
		set(false, etcdv1.ReasonWaitingForRegistration, fmt.Sprintf("Pod %s is prepared: its etcd starts once the cluster controller has added the member to etcd", s.pod.Name))
	case !s.registered:
		set(false, etcdv1.ReasonWaitingForRegistration, "Waiting for the cluster controller to register the member in etcd before starting its Pod")
	case s.waitingForTLS:
		set(false, etcdv1.ReasonWaitingForTLS, "The first Pod waits for the cluster's TLSReady condition: its certificates are not ready")
	case s.podRefused != "":
		running := "it has no Pod"
		if s.pod != nil && s.pod.DeletionTimestamp.IsZero() {
			running = fmt.Sprintf("Pod %s keeps running on the previous spec", s.pod.Name)
		}
		set(false, etcdv1.ReasonPodRejected, fmt.Sprintf("The API server refuses the member's Pod as the cluster's spec builds it (%s): %s. Change the EtcdCluster's spec so that a Pod is valid (or set it back)", running, s.podRefused))
	case s.restarting || (s.pod != nil && !resources.PodUpToDate(m, s.pod)):
		set(false, etcdv1.ReasonRestarting, fmt.Sprintf("Pod %s restarts to take the member's new spec", s.member.Name))
	case podReady(s.pod):
		set(true, etcdv1.ReasonPodReady, "etcd answers its readiness check")
	case podFailing(s.pod) != "":
		set(false, etcdv1.ReasonPodFailing, fmt.Sprintf("Pod %s cannot run etcd: %s", s.member.Name, podFailing(s.pod)))
	case unschedulable(s.pod) != "":
		set(false, etcdv1.ReasonUnschedulable, fmt.Sprintf("Pod %s cannot be scheduled: %s", s.member.Name, unschedulable(s.pod)))
	default:
		// One message from creation to ready, naming no passing detail
		// (like ContainerCreating): each change would be one more write,
		// and kubectl describe pod has the details.
		set(false, etcdv1.ReasonPodNotReady, fmt.Sprintf("Pod %s is starting or etcd does not pass its readiness check yet; a learner stays not ready until it is promoted", s.member.Name))
	}
}

// setServingCondition says whether the member's Pod is in the client
// Service: its serving label is "true". The cluster controller
// defragments a drained member only once this is False.
func setServingCondition(s *scope) {
	m := s.member
	set := func(ok bool, reason, msg string) {
		kube.Set(&m.Status.Conditions, m.Generation, etcdv1.ConditionServing, ok, reason, msg)
	}
	p := s.pod
	switch {
	case p == nil || !p.DeletionTimestamp.IsZero():
		set(false, etcdv1.ReasonPodNotReady, "The member has no running Pod")
	case p.Labels[etcdv1.ServingLabel] == "false":
		set(false, etcdv1.ReasonDrained, fmt.Sprintf("Pod %s is out of the client Service (spec.drained): the cluster controller is defragmenting the member", p.Name))
	case m.Spec.Drained:
		set(true, etcdv1.ReasonInClientService, fmt.Sprintf("Pod %s is still in the client Service; its serving label is being turned off", p.Name))
	default:
		set(true, etcdv1.ReasonInClientService, fmt.Sprintf("Pod %s is in the client Service when ready", p.Name))
	}
}

// podFailing says what keeps the etcd container of p from running, when
// the kubelet reports a state that lasts (an image it cannot pull, a
// container that keeps exiting), or "" while it may still start.
func podFailing(p *corev1.Pod) string {
	if p == nil || !p.DeletionTimestamp.IsZero() {
		return ""
	}
	for _, cs := range p.Status.ContainerStatuses {
		w := cs.State.Waiting
		if cs.Name != "etcd" || w == nil {
			continue
		}
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
			"CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff":
			msg := w.Reason
			if w.Message != "" {
				msg += ": " + w.Message
			}
			if t := cs.LastTerminationState.Terminated; t != nil {
				msg += fmt.Sprintf(" (last exit code %d", t.ExitCode)
				if t.Message != "" {
					msg += ": " + t.Message
				}
				msg += ")"
			}
			return msg
		}
	}
	return ""
}

// unschedulable is the scheduler's message for a Pod it found no node for,
// "" otherwise.
func unschedulable(p *corev1.Pod) string {
	if p == nil || !p.DeletionTimestamp.IsZero() || p.Spec.NodeName != "" {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	if p == nil || !p.DeletionTimestamp.IsZero() {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setVolumeRetainedCondition reports, once the member's cluster is deleted
// with spec.deletionPolicy Retain, whether its PVC outlives it. The cluster
// controller releases the member only when it is True.
func setVolumeRetainedCondition(s *scope) {
	m := s.member
	if m.Spec.DeletionPolicy != etcdv1.DeletionPolicyRetain {
		return
	}
	set := func(ok bool, reason, msg string) {
		kube.Set(&m.Status.Conditions, m.Generation, etcdv1.ConditionVolumeRetained, ok, reason, msg)
	}
	switch s.volume {
	case volumeReleased:
		set(true, etcdv1.ReasonVolumeReleased, fmt.Sprintf("PVC %s is kept after the member goes, labelled %s=%s", resources.PVCName(m.Name), etcdv1.RetainedFromLabel, m.Spec.ClusterName))
	case volumeNone:
		set(true, etcdv1.ReasonNoVolume, "The member has no PVC to keep")
	default:
		set(false, etcdv1.ReasonReleasingVolume, fmt.Sprintf("Releasing PVC %s from the member so that it outlives the cluster", resources.PVCName(m.Name)))
	}
}
