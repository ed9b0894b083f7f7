package cluster

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crsource "sigs.k8s.io/controller-runtime/pkg/source"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// wakeups bring back a cluster whose work beside the workers ended (a
// long call, a look at etcd): the pass that takes its result.
type wakeups chan event.TypedGenericEvent[*etcdv1.EtcdCluster]

func newWakeups() wakeups { return make(wakeups, 1024) }

// source is the controller's source of these wake-ups.
func (w wakeups) source() crsource.Source {
	return crsource.Channel(w, &handler.TypedEnqueueRequestForObject[*etcdv1.EtcdCluster]{})
}

// wake enqueues the cluster. A full channel drops the wake-up: the pass
// that started the work comes back by its own requeue anyway.
func (w wakeups) wake(key types.NamespacedName) {
	c := &etcdv1.EtcdCluster{}
	c.Namespace, c.Name = key.Namespace, key.Name
	select {
	case w <- event.TypedGenericEvent[*etcdv1.EtcdCluster]{Object: c}:
	default:
	}
}
