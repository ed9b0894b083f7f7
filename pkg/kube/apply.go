package kube

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// ApplyStatus writes the status fields and conditions controller owns
// (etcdv1.StatusFields, etcdv1.Owners) by server-side apply with the
// controller's own field manager, when they differ from base. Another
// controller's fields are neither sent nor changed, so two controllers
// writing one object's status never conflict and need no lock; a field of
// its own the controller no longer sets is removed. It returns the resource
// version written ("" when nothing changed), which Written records.
func ApplyStatus(ctx context.Context, c client.Client, controller string, base, obj client.Object) (string, error) {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return "", fmt.Errorf("status of %s: %w", obj.GetName(), err)
	}
	want, err := OwnedStatus(gvk.Kind, controller, obj)
	if err != nil {
		return "", err
	}
	have, err := OwnedStatus(gvk.Kind, controller, base)
	if err != nil {
		return "", err
	}
	if reflect.DeepEqual(want, have) {
		return "", nil
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata":   map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()},
		"status":     want,
	}}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
		client.FieldOwner(etcdv1.FieldManager(controller)), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("apply status of %s: %w", obj.GetName(), err)
	}
	return u.GetResourceVersion(), nil
}

// OwnedStatus is the part of obj's status that controller owns, as the
// JSON the API server stores: its fields, and its conditions alone. A field
// or condition type with no owner in the tables is an error: it would never
// be written.
func OwnedStatus(kind, controller string, obj client.Object) (map[string]any, error) {
	if _, ok := etcdv1.StatusFields[kind]; !ok {
		return nil, fmt.Errorf("status of %s %s: the kind has no status owners", kind, obj.GetName())
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("status of %s %s: %w", kind, obj.GetName(), err)
	}
	status, _ := u["status"].(map[string]any)
	out, err := ownedFields(kind, controller, status, true)
	if err != nil {
		return nil, fmt.Errorf("status of %s %s: %w", kind, obj.GetName(), err)
	}
	return out, nil
}

// ownedFields is the part of status controller owns. strict: a field or
// condition type with no owner is an error; else it is left out (an older
// version's field, left to nobody).
func ownedFields(kind, controller string, status map[string]any, strict bool) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range status {
		if k == "conditions" {
			list, _ := v.([]any)
			var mine []any
			for _, c := range list {
				cm, _ := c.(map[string]any)
				t, _ := cm["type"].(string)
				owner, ok := etcdv1.Owners[kind][t]
				if !ok && strict {
					return nil, fmt.Errorf("condition %q has no owner in conditions.go", t)
				}
				if owner == controller {
					mine = append(mine, c)
				}
			}
			if len(mine) > 0 {
				out[k] = mine
			}
			continue
		}
		owner, ok := etcdv1.StatusFields[kind][k]
		if !ok && strict {
			return nil, fmt.Errorf("field %q has no owner in conditions.go", k)
		}
		if owner == controller {
			out[k] = v
		}
	}
	return out, nil
}

// AddFinalizer adds finalizer to obj, by server-side apply of that one
// entry: finalizers are a set, so the write needs no lock and removes no
// other's. The apply is recorded in obj (finalizers, resource version). An
// apply creates an object that is gone, but not this one: every Raftsman
// kind requires a spec, which it does not send.
func AddFinalizer(ctx context.Context, c client.Client, controller string, obj client.Object, finalizer string) error {
	if controllerutil.ContainsFinalizer(obj, finalizer) {
		return nil
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return fmt.Errorf("add finalizer to %s: %w", obj.GetName(), err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata": map[string]any{
			"name": obj.GetName(), "namespace": obj.GetNamespace(),
			"finalizers": []any{finalizer},
		},
	}}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(etcdv1.FieldManager(controller))); err != nil {
		return fmt.Errorf("add finalizer to %s: %w", obj.GetName(), err)
	}
	controllerutil.AddFinalizer(obj, finalizer)
	obj.SetResourceVersion(u.GetResourceVersion())
	return nil
}

// Written remembers the resource version of a controller's last write to
// each object, so that a pass does not decide from a cached copy older than
// what the controller itself wrote: the write's own watch event brings the
// object back once the cache has it. An object the cache has caught up with
// is forgotten, so the map holds only writes in flight (and the few of
// objects deleted before their cache caught up).
type Written struct {
	mu sync.Mutex
	rv map[types.UID]string
}

// Record notes that the controller wrote obj at resource version rv (the
// object's own when rv is "").
func (w *Written) Record(obj client.Object, rv string) {
	if rv == "" {
		rv = obj.GetResourceVersion()
	}
	if w == nil || rv == "" || obj.GetUID() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv == nil {
		w.rv = map[types.UID]string{}
	}
	w.rv[obj.GetUID()] = rv
}

// Behind says whether the copy of obj is older than the controller's last
// write to it. A resource version that does not compare counts as current.
func (w *Written) Behind(obj client.Object) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.rv[obj.GetUID()]
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), last)
	if err != nil || cmp >= 0 {
		delete(w.rv, obj.GetUID())
		return false
	}
	return true
}
