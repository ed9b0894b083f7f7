package tls

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// goneForSure asks the API server, not the cache, whether a Secret is gone.
func (r *Reconciler) goneForSure(ctx context.Context, namespace, name string) bool {
	return apierrors.IsNotFound(r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{}))
}

// ownSecret reads a Secret of the cluster from the cache: nil when absent.
// A Secret of an earlier cluster of the same name, which the garbage
// collector has not deleted yet, is an error: using it would tie this
// cluster to certificates about to vanish.
func (r *Reconciler) ownSecret(ctx context.Context, c *etcdv1.EtcdCluster, name string) (*corev1.Secret, error) {
	sec := &corev1.Secret{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, sec); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	}
	if owner := metav1.GetControllerOf(sec); owner != nil && owner.Kind == "EtcdCluster" && owner.UID != c.UID {
		return nil, fmt.Errorf("secret %s belongs to an earlier EtcdCluster %s; waiting for the garbage collector to delete it", name, owner.Name)
	}
	return sec, nil
}

// writeSecret creates a Secret owned by the cluster, or updates its data
// when it differs; an unchanged Secret costs no write.
func (r *Reconciler) writeSecret(ctx context.Context, c *etcdv1.EtcdCluster, name string, typ corev1.SecretType, data map[string][]byte, extra map[string]string) error {
	have, err := r.ownSecret(ctx, c, name)
	if err != nil {
		return err
	}
	if have == nil {
		sec := &corev1.Secret{Type: typ, Data: data}
		sec.Name, sec.Namespace = name, c.Namespace
		sec.Labels = resources.ObjectLabels(c)
		maps.Copy(sec.Labels, extra)
		if err := controllerutil.SetControllerReference(c, sec, r.Scheme()); err != nil {
			return fmt.Errorf("own secret %s: %w", name, err)
		}
		if err := r.Create(ctx, sec); err != nil {
			// AlreadyExists too: the cache has not seen the Secret yet, and
			// what it holds is not what this pass meant to write.
			return fmt.Errorf("create secret %s: %w", name, err)
		}
		return nil
	}
	if equalData(have.Data, data) {
		return nil
	}
	have.Data = data
	if err := r.Update(ctx, have); err != nil {
		return fmt.Errorf("update secret %s: %w", name, err)
	}
	return nil
}

func equalData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}
