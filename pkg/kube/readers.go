package kube

import (
	"sync"

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
