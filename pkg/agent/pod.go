package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodResult is the Result of an agent Pod that ended, read from its
// termination message; false while the Pod runs. A Pod that ended without
// a readable result, or failed after writing a success, has a failed
// Result that says why.
func PodResult(p *corev1.Pod) (Result, bool) {
	if p == nil || (p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed) {
		return Result{}, false
	}
	var msg string
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			msg = t.Message
		}
	}
	res, err := ParseResult(msg)
	if err != nil {
		res = Result{Error: fmt.Sprintf("the agent Pod ended (%s: %s) without a result", p.Status.Phase, p.Status.Message), Reason: ReasonFailed}
	}
	if p.Status.Phase == corev1.PodFailed && res.Error == "" {
		res.Error, res.Reason = fmt.Sprintf("the agent Pod failed: %s %s", p.Status.Reason, p.Status.Message), ReasonFailed
	}
	return res, true
}
