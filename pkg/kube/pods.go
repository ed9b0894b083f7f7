package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DeletePod deletes a Pod (an agent's, done with) if the cache shows it, so
// that a quiet object costs no API write.
func DeletePod(ctx context.Context, c client.Client, namespace, name string) error {
	p := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
		return client.IgnoreNotFound(err)
	}
	if err := c.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete pod %s: %w", name, err)
	}
	return nil
}
