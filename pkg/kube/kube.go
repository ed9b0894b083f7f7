// Package kube holds the few Kubernetes helpers every controller uses: the
// step runner, the status apply, and condition lookups.
package kube

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Step is one step of a reconcile. A step that is not done returns a
// non-zero Result (or relies on a watch and says so on the scope); a step
// that failed returns a wrapped error.
type Step[S any] func(ctx context.Context, s S) (ctrl.Result, error)

// Run runs the steps in order and stops at the first error or the first
// step that asks to be called again.
func Run[S any](ctx context.Context, s S, steps ...Step[S]) (ctrl.Result, error) {
	for _, step := range steps {
		res, err := step(ctx, s)
		if err != nil || !res.IsZero() {
			return res, err
		}
	}
	return ctrl.Result{}, nil
}

// IsTrue reports whether the condition is True for the object's current
// generation; a condition of an older generation counts as Unknown.
func IsTrue(conds []metav1.Condition, t string, generation int64) bool {
	c := meta.FindStatusCondition(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
}

// Find is the condition of type t when it is for the object's current
// generation, else nil (a stale condition counts as Unknown).
func Find(conds []metav1.Condition, t string, generation int64) *metav1.Condition {
	c := meta.FindStatusCondition(conds, t)
	if c == nil || c.ObservedGeneration != generation {
		return nil
	}
	return c
}

// Set sets a condition for the given generation.
func Set(conds *[]metav1.Condition, generation int64, t string, status bool, reason, message string) {
	s := metav1.ConditionFalse
	if status {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: generation})
}
