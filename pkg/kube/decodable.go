package kube

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// Decodable is c for the controllers: an EtcdCluster, EtcdMember or
// EtcdBackup the operator could decode only in part (its metadata; see
// etcdv1.UndecodableAnnotation) is not found by Get and left out of List.
// A controller thus never acts on a stand-in without its spec, and one such
// object never stops the others of its namespace or shard; the undecodable
// controller reports it.
func Decodable(c client.Client) client.Client {
	return decodable{Client: c, reader: decodableReader{Reader: c}}
}

// DecodableReader is Decodable for a reader (the API reader).
func DecodableReader(r client.Reader) client.Reader { return decodableReader{Reader: r} }

// decodable is a client whose reads go through decodableReader.
type decodable struct {
	client.Client
	reader decodableReader
}

func (d decodable) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return d.reader.Get(ctx, key, obj, opts...)
}

func (d decodable) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return d.reader.List(ctx, list, opts...)
}

// WithUndecodable is a List option of Decodable: the list keeps the
// objects decoded in part (metadata only, marked), for a controller that
// must know they exist without acting on their spec.
var WithUndecodable client.ListOption = withUndecodable{}

type withUndecodable struct{}

func (withUndecodable) ApplyToList(*client.ListOptions) {}

type decodableReader struct{ client.Reader }

func (d decodableReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := d.Reader.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	return notFoundIfUndecodable(obj)
}

func (d decodableReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := d.Reader.List(ctx, list, opts...); err != nil {
		return err
	}
	if slices.Contains(opts, WithUndecodable) {
		return nil
	}
	return dropUndecodable(list)
}

// ours says whether obj is of a kind that may decode in part.
func ours(obj runtime.Object) bool {
	switch obj.(type) {
	case *etcdv1.EtcdCluster, *etcdv1.EtcdMember, *etcdv1.EtcdBackup,
		*etcdv1.EtcdClusterList, *etcdv1.EtcdMemberList, *etcdv1.EtcdBackupList:
		return true
	}
	return false
}

func notFoundIfUndecodable(obj client.Object) error {
	if !ours(obj) || etcdv1.Undecodable(obj) == "" {
		return nil
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: etcdv1.GroupVersion.Group, Resource: obj.GetObjectKind().GroupVersionKind().Kind}, obj.GetName())
}

func dropUndecodable(list client.ObjectList) error {
	if !ours(list) {
		return nil
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, it := range items {
		if o, ok := it.(client.Object); ok && etcdv1.Undecodable(o) != "" {
			continue
		}
		kept = append(kept, it)
	}
	if len(kept) == len(items) {
		return nil
	}
	return meta.SetList(list, kept)
}
