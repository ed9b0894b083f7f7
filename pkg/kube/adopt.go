package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// LegacyStatusManager is the field manager of the status merge patches of
// earlier versions (named after the binary's user agent): one manager for
// every controller's fields.
const LegacyStatusManager = "raftsman"

// adoptAttempts bounds the retries of one object written meanwhile.
const adoptAttempts = 3

// AdoptLegacyStatus hands the status fields an earlier version wrote by
// merge patch over to the controllers that own them now. Until then a field
// a controller stops applying would stay, co-owned by the old manager: a
// recovery or rollout ended would still be in the status. For each object
// with a status entry of LegacyStatusManager, each owner applies its own
// fields as they are (taking them over, changing no value), then that entry
// is removed. Every write is made against the resource version just read,
// so that a value written meanwhile is never replaced by an older one.
//
// It runs when the operator starts, before any controller, and reads past
// any cache. Objects are read as unstructured: one that the operator cannot
// decode is adopted like any other. One that fails stops no other: the
// errors are returned with how many objects were adopted.
func AdoptLegacyStatus(ctx context.Context, c client.Client, namespaces []string) (int, error) {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	kinds := make([]string, 0, len(etcdv1.StatusFields))
	for k := range etcdv1.StatusFields {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	adopted, errs := 0, []error(nil)
	for _, ns := range namespaces {
		for _, kind := range kinds {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(etcdv1.GroupVersion.WithKind(kind + "List"))
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				errs = append(errs, fmt.Errorf("list %s: %w", kind, err))
				continue
			}
			for i := range list.Items {
				u := &list.Items[i]
				if !hasLegacyStatus(u) {
					continue
				}
				if err := adoptOne(ctx, c, kind, u); err != nil {
					errs = append(errs, err)
					continue
				}
				adopted++
			}
		}
	}
	return adopted, errors.Join(errs...)
}

func hasLegacyStatus(u *unstructured.Unstructured) bool {
	return slices.ContainsFunc(u.GetManagedFields(), isLegacyStatus)
}

func isLegacyStatus(e metav1.ManagedFieldsEntry) bool {
	return e.Manager == LegacyStatusManager && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "status"
}

// adoptOne adopts the status of one object, read again when it was written
// meanwhile.
func adoptOne(ctx context.Context, c client.Client, kind string, u *unstructured.Unstructured) error {
	var err error
	for range adoptAttempts {
		if err = adoptAt(ctx, c, kind, u); err == nil || !(apierrors.IsConflict(err) || apierrors.IsInvalid(err)) {
			break
		}
		fresh := &unstructured.Unstructured{}
		fresh.SetGroupVersionKind(u.GroupVersionKind())
		if gerr := c.Get(ctx, client.ObjectKeyFromObject(u), fresh); gerr != nil {
			return client.IgnoreNotFound(gerr)
		}
		u = fresh
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("adopt the status of %s %s/%s: %w", kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// adoptAt makes each owner apply its fields of u as they are, then drops
// the legacy entry, all at u's resource version and the ones that follow.
func adoptAt(ctx context.Context, c client.Client, kind string, u *unstructured.Unstructured) error {
	status, _ := u.Object["status"].(map[string]any)
	rv := u.GetResourceVersion()
	fields := u.GetManagedFields()
	for _, owner := range statusOwners(kind) {
		want, _ := ownedFields(kind, owner, status, false)
		if len(want) == 0 {
			continue
		}
		ac := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": u.GetAPIVersion(),
			"kind":       kind,
			"metadata":   map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "resourceVersion": rv},
			"status":     want,
		}}
		if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(ac),
			client.FieldOwner(etcdv1.FieldManager(owner)), client.ForceOwnership); err != nil {
			return err
		}
		rv, fields = ac.GetResourceVersion(), ac.GetManagedFields()
	}
	kept := slices.DeleteFunc(slices.Clone(fields), isLegacyStatus)
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
		{"op": "replace", "path": "/metadata/managedFields", "value": kept},
	})
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(u.GroupVersionKind())
	obj.SetNamespace(u.GetNamespace())
	obj.SetName(u.GetName())
	return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
}

// statusOwners are the controllers that own a status field or condition of
// kind, in a fixed order.
func statusOwners(kind string) []string {
	var owners []string
	for _, o := range etcdv1.StatusFields[kind] {
		owners = append(owners, o)
	}
	for _, o := range etcdv1.Owners[kind] {
		owners = append(owners, o)
	}
	slices.Sort(owners)
	return slices.Compact(owners)
}
