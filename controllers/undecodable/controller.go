package undecodable

import (
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// ControllerName names the controller, its logs and its events.
const ControllerName = "undecodable"

// Reconciler reports the undecodable objects of one kind.
type Reconciler struct {
	// Client reads the cache as it is, stand-ins included.
	client.Client
	Recorder events.EventRecorder
	// New makes an empty object of the kind.
	New func() client.Object
}

// SetupWithManager registers one controller per kind that may decode in
// part; only undecodable objects wake them.
func SetupWithManager(mgr ctrl.Manager, recorder events.EventRecorder) error {
	kinds := map[string]func() client.Object{
		"etcdcluster": func() client.Object { return &etcdv1.EtcdCluster{} },
		"etcdmember":  func() client.Object { return &etcdv1.EtcdMember{} },
		"etcdbackup":  func() client.Object { return &etcdv1.EtcdBackup{} },
	}
	for kind, newObj := range kinds {
		r := &Reconciler{Client: mgr.GetClient(), Recorder: recorder, New: newObj}
		err := ctrl.NewControllerManagedBy(mgr).
			Named(ControllerName+"-"+kind).
			For(newObj(), builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return etcdv1.Undecodable(o) != ""
			}))).
			Complete(r)
		if err != nil {
			return err
		}
	}
	return nil
}
