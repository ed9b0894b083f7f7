package cluster

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
	"github.com/raftsman/raftsman/pkg/resources"
)

// createOwned creates obj owned by the cluster; one that exists is fine
// if the cluster owns it, and recorded as foreign otherwise.
func (r *Reconciler) createOwned(ctx context.Context, s *scope, obj client.Object) error {
	if err := controllerutil.SetControllerReference(s.cluster, obj, r.Scheme()); err != nil {
		return fmt.Errorf("own %s: %w", obj.GetName(), err)
	}
	err := r.Create(ctx, obj)
	if err == nil || !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("create %T %s: %w", obj, obj.GetName(), err)
		}
		return nil
	}
	if r.APIReader == nil {
		return nil
	}
	// Not in the cache, yet there: another's, or ours not seen yet.
	have := obj.DeepCopyObject().(client.Object)
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), have); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.ownedOrForeign(have)
	return nil
}

// ownedOrForeign says whether the cluster owns obj, and records it as
// foreign when it does not: the operator never changes an object it does
// not own, whatever its name.
func (s *scope) ownedOrForeign(obj client.Object) bool {
	if metav1.IsControlledBy(obj, s.cluster) {
		return true
	}
	kind := strings.TrimPrefix(fmt.Sprintf("%T", obj), "*v1.")
	s.foreign = append(s.foreign, fmt.Sprintf("%s %s", kind, obj.GetName()))
	return false
}

// ensureServices creates the peer and client Services and keeps their
// selector and ports.
func (r *Reconciler) ensureServices(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.cluster
	for _, svc := range []struct {
		name string
		want func(have *corev1.Service) (*corev1.Service, error)
	}{
		{resources.PeerServiceName(c.Name), func(*corev1.Service) (*corev1.Service, error) { return resources.PeerService(c), nil }},
		{resources.ClientServiceName(c.Name), func(have *corev1.Service) (*corev1.Service, error) {
			var err error
			s.servingOnly, err = r.selectsServing(ctx, s, have)
			return resources.ClientService(c, s.servingOnly), err
		}},
	} {
		have := &corev1.Service{}
		err := r.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: svc.name}, have)
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("get service %s: %w", svc.name, err)
		}
		found := err == nil
		if !found {
			have = nil
		}
		want, err := svc.want(have)
		switch {
		case err != nil:
			return ctrl.Result{}, err
		case !found:
			if err := r.createOwned(ctx, s, want); err != nil {
				return ctrl.Result{}, err
			}
		case !s.ownedOrForeign(have):
		case !servicesMatch(have, want):
			// A patch of what changed, from the cache's lean copy (an
			// Update would send the fields the cache dropped as empty),
			// refused if the Service changed since that copy.
			patch := client.MergeFromWithOptions(have.DeepCopy(), client.MergeFromWithOptimisticLock{})
			have.Spec.Selector, have.Spec.Ports, have.Spec.PublishNotReadyAddresses = want.Spec.Selector, want.Spec.Ports, want.Spec.PublishNotReadyAddresses
			if err := r.Patch(ctx, have, patch); err != nil {
				return ctrl.Result{}, fmt.Errorf("update service %s: %w", want.Name, err)
			}
		}
	}
	return ctrl.Result{}, nil
}

// selectsServing says whether the client Service (have, nil before it
// exists) may select on the serving label: it does already, or every
// member Pod carries the label.
func (r *Reconciler) selectsServing(ctx context.Context, s *scope, have *corev1.Service) (bool, error) {
	if have != nil && have.Spec.Selector[etcdv1.ServingLabel] == "true" {
		return true, nil
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, kube.OfCluster(s.cluster.Namespace, s.cluster.Name, client.HasLabels{etcdv1.MemberLabel})...); err != nil {
		return false, fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods.Items {
		if _, ok := p.Labels[etcdv1.ServingLabel]; !ok {
			return false, nil
		}
	}
	return true, nil
}

func servicesMatch(have, want *corev1.Service) bool {
	if have.Spec.PublishNotReadyAddresses != want.Spec.PublishNotReadyAddresses || len(have.Spec.Ports) != len(want.Spec.Ports) {
		return false
	}
	for k, v := range want.Spec.Selector {
		if have.Spec.Selector[k] != v {
			return false
		}
	}
	for i, p := range want.Spec.Ports {
		h := have.Spec.Ports[i]
		if h.Name != p.Name || h.Port != p.Port || h.TargetPort != p.TargetPort {
			return false
		}
	}
	return len(have.Spec.Selector) == len(want.Spec.Selector)
}

// ensurePDB keeps a PodDisruptionBudget that lets one member go at a time
// (resources.PDB): it selects the cluster's Pods by the cluster's labels
// alone, so that it survives a move to another shard, and counts the
// voters etcd listed last, not spec.replicas.
func (r *Reconciler) ensurePDB(ctx context.Context, s *scope) (ctrl.Result, error) {
	voters := 0
	for _, ms := range s.cluster.Status.Members {
		if ms.Role == etcdv1.RoleVoter {
			voters++
		}
	}
	want := resources.PDB(s.cluster, voters)
	have := want.DeepCopy()
	err := r.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, r.createOwned(ctx, s, want)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get pdb: %w", err)
	case !s.ownedOrForeign(have):
	case have.Spec.MinAvailable == nil || *have.Spec.MinAvailable != *want.Spec.MinAvailable ||
		!equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector):
		have.Spec.MinAvailable, have.Spec.Selector = want.Spec.MinAvailable, want.Spec.Selector
		if err := r.Update(ctx, have); err != nil {
			return ctrl.Result{}, fmt.Errorf("update pdb: %w", err)
		}
	}
	return ctrl.Result{}, nil
}
