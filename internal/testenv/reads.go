package testenv

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reads counts the Gets and Lists that a client or reader serves, by the Go
// type of the object (or list) and its namespace: for tests that check what
// a controller's pass reads, such as a Secret read past the cache. Its zero
// value is ready to use.
type Reads struct {
	mu sync.Mutex
	n  map[readKey]int
}

type readKey struct{ typ, namespace string }

// Reader wraps next: every read it serves is counted.
func (r *Reads) Reader(next client.Reader) client.Reader {
	return countingReader{Reader: next, reads: r}
}

// Client wraps next: every read it serves is counted, the rest passes.
func (r *Reads) Client(next client.Client) client.Client {
	return countingClient{Client: next, reader: countingReader{Reader: next, reads: r}}
}

// Count is how many reads of objects of exemplar's type (Gets, or Lists
// when it is a list) in namespace were served.
func (r *Reads) Count(exemplar runtime.Object, namespace string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[readKey{fmt.Sprintf("%T", exemplar), namespace}]
}

func (r *Reads) add(obj runtime.Object, namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[readKey]int{}
	}
	r.n[readKey{fmt.Sprintf("%T", obj), namespace}]++
}

type countingReader struct {
	client.Reader
	reads *Reads
}

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.reads.add(obj, key.Namespace)
	return c.Reader.Get(ctx, key, obj, opts...)
}

func (c countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	c.reads.add(list, lo.Namespace)
	return c.Reader.List(ctx, list, opts...)
}

type countingClient struct {
	client.Client
	reader countingReader
}

func (c countingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

func (c countingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reader.List(ctx, list, opts...)
}
