package robustness

import (
	"fmt"
	"slices"
)

// OpKind names the etcd call an Operation made.
type OpKind string

const (
	// OpGet is a linearizable range over exactly one key.
	OpGet OpKind = "get"
	// OpPut writes a value that no other operation in the history writes.
	OpPut OpKind = "put"
	// OpDelete deletes one key.
	OpDelete OpKind = "delete"
	// OpTxn is a compare-and-set: compare one key's mod revision or value, put a
	// new value when it holds, read the key when it does not.
	OpTxn OpKind = "txn"
	// OpRange reads every key of the prefix; only the final read is one.
	OpRange OpKind = "range"
)

// CompareTarget is what an OpTxn compares.
type CompareTarget string

const (
	CompareModRevision CompareTarget = "mod_revision"
	CompareValue       CompareTarget = "value"
)

// Request is what a client asked for.
type Request struct {
	Kind  OpKind `json:"kind"`
	Key   string `json:"key,omitempty"`
	Value string `json:"value,omitempty"`
	// Compare, ExpectedModRevision and ExpectedValue describe an OpTxn's guard.
	Compare             CompareTarget `json:"compare,omitempty"`
	ExpectedModRevision int64         `json:"expectedModRevision,omitempty"`
	ExpectedValue       string        `json:"expectedValue,omitempty"`
}

// KV is a key's value and the revision that last wrote it.
type KV struct {
	Value       string `json:"value"`
	ModRevision int64  `json:"modRevision"`
}

// Response is what etcd answered. Revision is the response header's revision.
type Response struct {
	Revision int64 `json:"revision"`
	// Found and KV are the key read by an OpGet, or by an OpTxn whose compare failed.
	Found bool `json:"found,omitempty"`
	KV    KV   `json:"kv,omitzero"`
	// Deleted is an OpDelete's count of deleted keys.
	Deleted int64 `json:"deleted,omitempty"`
	// Succeeded says whether an OpTxn's compare held.
	Succeeded bool `json:"succeeded,omitempty"`
	// KVs is an OpRange's result.
	KVs map[string]KV `json:"kvs,omitempty"`
}

// Operation is one call as the client saw it. Call and Return are nanoseconds
// since the traffic's start, from the monotonic clock.
type Operation struct {
	Client   int      `json:"client"`
	Call     int64    `json:"call"`
	Return   int64    `json:"return"`
	Request  Request  `json:"request"`
	Response Response `json:"response"`
	// Indeterminate marks a write whose outcome the client could not learn
	// (timeout, lost connection, Unavailable ...). Response is then empty and
	// Return is only when the client gave up: the write may take effect later.
	Indeterminate bool   `json:"indeterminate,omitempty"`
	Error         string `json:"error,omitempty"`
}

// IsWrite reports whether the operation may change the store.
func (o Operation) IsWrite() bool {
	return o.Request.Kind == OpPut || o.Request.Kind == OpDelete || o.Request.Kind == OpTxn
}

// Acked reports whether etcd acknowledged that the operation changed the store,
// at Response.Revision.
func (o Operation) Acked() bool {
	if o.Indeterminate {
		return false
	}
	switch o.Request.Kind {
	case OpPut:
		return true
	case OpTxn:
		return o.Response.Succeeded
	case OpDelete:
		return o.Response.Deleted > 0
	}
	return false
}

// writesValue reports whether the operation, if it took effect, put Request.Value.
func (o Operation) writesValue() bool {
	return o.Request.Kind == OpPut || o.Request.Kind == OpTxn
}

func (o Operation) String() string {
	r := o.Request
	var in string
	switch r.Kind {
	case OpGet, OpDelete:
		in = fmt.Sprintf("%s(%s)", r.Kind, r.Key)
	case OpPut:
		in = fmt.Sprintf("put(%s, %s)", r.Key, r.Value)
	case OpTxn:
		if r.Compare == CompareValue {
			in = fmt.Sprintf("txn(%s value==%q ? put %s)", r.Key, r.ExpectedValue, r.Value)
		} else {
			in = fmt.Sprintf("txn(%s mod==%d ? put %s)", r.Key, r.ExpectedModRevision, r.Value)
		}
	case OpRange:
		in = "range(prefix)"
	}
	if o.Indeterminate {
		if o.Error == "" {
			return in + " -> unknown"
		}
		return in + " -> unknown (" + o.Error + ")"
	}
	return in + " -> " + describeResponse(r.Kind, o.Response)
}

func describeResponse(kind OpKind, resp Response) string {
	switch kind {
	case OpGet:
		if !resp.Found {
			return fmt.Sprintf("missing @%d", resp.Revision)
		}
		return fmt.Sprintf("%s mod %d @%d", resp.KV.Value, resp.KV.ModRevision, resp.Revision)
	case OpDelete:
		return fmt.Sprintf("deleted %d @%d", resp.Deleted, resp.Revision)
	case OpTxn:
		if resp.Succeeded {
			return fmt.Sprintf("ok @%d", resp.Revision)
		}
		if !resp.Found {
			return fmt.Sprintf("failed, missing @%d", resp.Revision)
		}
		return fmt.Sprintf("failed, %s mod %d @%d", resp.KV.Value, resp.KV.ModRevision, resp.Revision)
	case OpRange:
		return fmt.Sprintf("%s @%d", describeKVs(resp.KVs), resp.Revision)
	}
	return fmt.Sprintf("ok @%d", resp.Revision)
}

func describeKVs(kvs map[string]KV) string {
	keys := make([]string, 0, len(kvs))
	for k := range kvs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s := "{"
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s=%s@%d", k, kvs[k].Value, kvs[k].ModRevision)
	}
	return s + "}"
}

// History is everything a traffic run recorded.
type History struct {
	// Prefix is the key prefix the traffic wrote under; the checker assumes
	// nothing else wrote to the etcd cluster during the run (see the package doc).
	Prefix string `json:"prefix"`
	// StartRevision and Initial are the store's revision and the prefix's keys
	// read before the first operation.
	StartRevision int64         `json:"startRevision"`
	Initial       map[string]KV `json:"initial,omitempty"`
	Operations    []Operation   `json:"operations"`
	// FailedReads counts reads that returned an error; they are not recorded.
	FailedReads int `json:"failedReads"`
	// RejectedWrites counts writes refused with an error that proves they were
	// not applied (InvalidArgument, PermissionDenied, Unauthenticated); they are
	// not recorded either.
	RejectedWrites int `json:"rejectedWrites"`
	// Clients is how many workers ran; Operation.Client is below it.
	Clients int `json:"clients"`
}

// FinalState is a linearizable read of the whole prefix after the traffic stopped.
// Check places it after every completed operation.
type FinalState struct {
	Revision int64         `json:"revision"`
	KVs      map[string]KV `json:"kvs"`
}
