package robustness

import (
	"fmt"
	"hash/fnv"
	"maps"

	"github.com/anishathalye/porcupine"
)

// The model keeps the store's global revision and does not partition by key.
//
// Every response carries the header revision, and etcd's revisions order all
// writes to all keys. Checking them is what catches a member that serves a read
// from an old state whose value happens to be the current one, or two writes
// that got the same revision on different members. A per-key partition would
// have to drop that check. Keeping one state is affordable because the revision
// pins most operations: a write's response revision says exactly where it goes
// in the order and a read's says exactly which state it saw, so porcupine rarely
// has more than a handful of candidates at each step. Only indeterminate writes
// stay open to the end; Check resolves most of them from the watch first.
//
// States are immutable: a write copies the map. The key space of a run is small
// (tens of keys), so the copy is cheap next to the search.

// modelState is etcd's KV as seen through one prefix.
type modelState struct {
	Revision int64
	KVs      map[string]KV
}

// modelOutput is an Operation's response as the model sees it; Unknown stands
// for an indeterminate write, which the model accepts whatever it did.
type modelOutput struct {
	Unknown  bool
	Response Response
}

func newModelState(revision int64, kvs map[string]KV) modelState {
	if kvs == nil {
		kvs = map[string]KV{}
	}
	return modelState{Revision: revision, KVs: kvs}
}

func (s modelState) put(key, value string) modelState {
	kvs := maps.Clone(s.KVs)
	kvs[key] = KV{Value: value, ModRevision: s.Revision + 1}
	return modelState{Revision: s.Revision + 1, KVs: kvs}
}

func (s modelState) delete(key string) modelState {
	kvs := maps.Clone(s.KVs)
	delete(kvs, key)
	return modelState{Revision: s.Revision + 1, KVs: kvs}
}

// compare follows etcd's applyCompare: a missing key compares as a zero
// KeyValue (mod revision 0), except that a value compare on a missing key
// always fails.
func (s modelState) compare(r Request) bool {
	kv, ok := s.KVs[r.Key]
	switch r.Compare {
	case CompareValue:
		return ok && kv.Value == r.ExpectedValue
	default:
		return kv.ModRevision == r.ExpectedModRevision
	}
}

// step applies req to s and reports whether resp is what etcd could have
// answered. An unknown output is always accepted: porcupine may linearize the
// write anywhere after its call, including after every other operation, which
// is the same as it never having happened.
func (s modelState) step(req Request, out modelOutput) (bool, modelState) {
	resp := out.Response
	switch req.Kind {
	case OpGet:
		kv, found := s.KVs[req.Key]
		ok := out.Unknown || (resp.Revision == s.Revision && resp.Found == found && (!found || resp.KV == kv))
		return ok, s
	case OpRange:
		ok := out.Unknown || (resp.Revision == s.Revision && maps.Equal(resp.KVs, s.KVs))
		return ok, s
	case OpPut:
		next := s.put(req.Key, req.Value)
		return out.Unknown || resp.Revision == next.Revision, next
	case OpDelete:
		if _, found := s.KVs[req.Key]; !found {
			// etcd does not advance the revision for a delete that removed nothing.
			return out.Unknown || (resp.Deleted == 0 && resp.Revision == s.Revision), s
		}
		next := s.delete(req.Key)
		return out.Unknown || (resp.Deleted == 1 && resp.Revision == next.Revision), next
	case OpTxn:
		if s.compare(req) {
			next := s.put(req.Key, req.Value)
			return out.Unknown || (resp.Succeeded && resp.Revision == next.Revision), next
		}
		// The else branch only reads, so the revision stays.
		kv, found := s.KVs[req.Key]
		ok := out.Unknown || (!resp.Succeeded && resp.Revision == s.Revision && resp.Found == found && (!found || resp.KV == kv))
		return ok, s
	}
	return false, s
}

func (s modelState) hash() uint64 {
	// XOR of per-key hashes does not depend on map order.
	h := uint64(s.Revision) * 0x9e3779b97f4a7c15
	for k, kv := range s.KVs {
		f := fnv.New64a()
		_, _ = fmt.Fprintf(f, "%s\x00%s\x00%d", k, kv.Value, kv.ModRevision)
		h ^= f.Sum64()
	}
	return h
}

func (s modelState) equal(o modelState) bool {
	return s.Revision == o.Revision && maps.Equal(s.KVs, o.KVs)
}

// kvModel is etcd's KV for the operations the traffic makes, starting from the
// state read before the first operation.
func kvModel(startRevision int64, initial map[string]KV) porcupine.Model {
	return porcupine.Model{
		Init: func() any { return newModelState(startRevision, maps.Clone(initial)) },
		Step: func(state, input, output any) (bool, any) {
			return state.(modelState).step(input.(Request), output.(modelOutput))
		},
		Equal: func(a, b any) bool { return a.(modelState).equal(b.(modelState)) },
		Hash:  func(state any) uint64 { return state.(modelState).hash() },
		DescribeOperation: func(input, output any) string {
			req, out := input.(Request), output.(modelOutput)
			op := Operation{Request: req, Response: out.Response, Indeterminate: out.Unknown}
			return op.String()
		},
		DescribeState: func(state any) string {
			s := state.(modelState)
			return fmt.Sprintf("rev %d %s", s.Revision, describeKVs(s.KVs))
		},
		DescribeOperationMetadata: func(info any) string {
			if info == nil {
				return ""
			}
			return fmt.Sprint(info)
		},
	}
}
