package kube

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReaderSet holds the caches of the shards a process runs now. The metric
// collectors, registered once per process, read every cache in it; a
// shard's cache joins when its controllers start and leaves when they stop.
type ReaderSet struct {
	mu      sync.Mutex
	next    int
	readers map[int]client.Reader
}

// Caches are the caches of the running shards of this process.
var Caches = &ReaderSet{}

// Add adds a reader; remove takes it out again.
func (s *ReaderSet) Add(r client.Reader) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readers == nil {
		s.readers = map[int]client.Reader{}
	}
	id := s.next
	s.next++
	s.readers[id] = r
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.readers, id)
	}
}

// All returns the readers in the set.
func (s *ReaderSet) All() []client.Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]client.Reader, 0, len(s.readers))
	for _, r := range s.readers {
		out = append(out, r)
	}
	return out
}

var _ client.Reader = (*ReaderSet)(nil)

// Get reads the object from the first cache that has it.
func (s *ReaderSet) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	for _, r := range s.All() {
		if err := r.Get(ctx, key, obj, opts...); !apierrors.IsNotFound(err) {
			return err
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{}, key.Name)
}

// List lists from every cache into one list. A cache that cannot answer (a
// shard starting or stopping) is left out: its objects are reported by the
// replica that holds the shard, and one shard must not fail a whole scrape.
func (s *ReaderSet) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var items []runtime.Object
	for _, r := range s.All() {
		part := list.DeepCopyObject().(client.ObjectList)
		if err := r.List(ctx, part, opts...); err != nil {
			continue
		}
		objs, err := meta.ExtractList(part)
		if err != nil {
			return err
		}
		items = append(items, objs...)
	}
	return meta.SetList(list, items)
}
