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
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// goneForSure asks the API server, not the cache, whether a Secret is gone.
// Its metadata is enough to know.
func (r *Reconciler) goneForSure(ctx context.Context, namespace, name string) bool {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return apierrors.IsNotFound(r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, m))
}

// ownSecret reads a Secret of the cluster: nil when the cache has none of
// that name. The cache holds Secrets' metadata only: the data comes from
// the API server, once per pass, and the resourceVersion the cache showed
// is noted for the next pass (steady.go). A Secret of an earlier cluster
// of the same name, which the garbage collector has not deleted yet, is an
// error: using it would tie this cluster to certificates about to vanish.
func (r *Reconciler) ownSecret(ctx context.Context, s *scope, name string) (*corev1.Secret, error) {
	if sec, ok := s.secrets[name]; ok {
		return sec, nil
	}
	c := s.cluster
	key := client.ObjectKey{Namespace: c.Namespace, Name: name}
	m, err := kube.SecretMeta(ctx, r.Client, key)
	if err != nil {
		return nil, err
	}
	if m == nil {
		s.readSecret(name, "", nil)
		return nil, nil
	}
	if err := earlierCluster(c, m, name); err != nil {
		return nil, err
	}
	sec := &corev1.Secret{}
	switch err := r.APIReader.Get(ctx, key, sec); {
	case apierrors.IsNotFound(err):
		// Deleted since the cache saw it; the deletion brings a pass.
		sec = nil
	case err != nil:
		return nil, fmt.Errorf("get secret %s: %w", name, err)
	default:
		if err := earlierCluster(c, sec, name); err != nil {
			return nil, err
		}
	}
	s.readSecret(name, m.ResourceVersion, sec)
	return sec, nil
}

// earlierCluster is an error when obj belongs to another EtcdCluster than
// c (an earlier one of the same name).
func earlierCluster(c *etcdv1.EtcdCluster, obj metav1.Object, name string) error {
	if owner := metav1.GetControllerOf(obj); owner != nil && owner.Kind == "EtcdCluster" && owner.UID != c.UID {
		return fmt.Errorf("secret %s belongs to an earlier EtcdCluster %s; waiting for the garbage collector to delete it", name, owner.Name)
	}
	return nil
}

// readSecret records a Secret this pass read (nil: absent) and the
// resourceVersion the cache showed of it ("" for none).
func (s *scope) readSecret(name, rv string, sec *corev1.Secret) {
	if s.secrets == nil {
		s.secrets, s.seen = map[string]*corev1.Secret{}, map[string]string{}
	}
	s.secrets[name], s.seen[name] = sec, rv
}

// writeSecret creates a Secret owned by the cluster, or updates its data
// when it differs; an unchanged Secret costs no write.
func (r *Reconciler) writeSecret(ctx context.Context, s *scope, name string, typ corev1.SecretType, data map[string][]byte, extra map[string]string) error {
	c := s.cluster
	have, err := r.ownSecret(ctx, s, name)
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
		s.acted = true
		if err := r.Create(ctx, sec); err != nil {
			// AlreadyExists too: the cache has not seen the Secret yet, and
			// what it holds is not what this pass meant to write.
			return fmt.Errorf("create secret %s: %w", name, err)
		}
		s.secrets[name] = sec
		return nil
	}
	if equalData(have.Data, data) {
		return nil
	}
	upd := have.DeepCopy()
	upd.Data = data
	s.acted = true
	if err := r.Update(ctx, upd); err != nil {
		return fmt.Errorf("update secret %s: %w", name, err)
	}
	s.secrets[name] = upd
	return nil
}

func equalData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}
