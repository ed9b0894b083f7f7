package resources

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func ports(names ...string) []corev1.ServicePort {
	all := map[string]int32{"client": etcdv1.ClientPort, "peer": etcdv1.PeerPort, "metrics": etcdv1.MetricsPort}
	out := make([]corev1.ServicePort, 0, len(names))
	for _, n := range names {
		out = append(out, corev1.ServicePort{Name: n, Port: all[n], TargetPort: intstr.FromString(n), Protocol: corev1.ProtocolTCP})
	}
	return out
}

// PeerService is the headless Service behind the members' DNS names. It
// publishes members before they are ready: peers must find each other to
// become ready at all.
func PeerService(c *etcdv1.EtcdCluster) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: PeerServiceName(c.Name), Namespace: c.Namespace, Labels: ObjectLabels(c)},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 ClusterLabels(c.Name),
			Ports:                    ports("client", "peer"),
		},
	}
}

// ClientService load-balances clients over the ready members.
//
// With servingOnly, it selects only the Pods whose serving label is
// "true", so that a drained member gets no new connections. The cluster
// controller turns it on once every member Pod carries the label: Pods
// made by an operator before the label existed get it from the member
// controller, and until then the Service selects them all.
func ClientService(c *etcdv1.EtcdCluster, servingOnly bool) *corev1.Service {
	sel := ClusterLabels(c.Name)
	if servingOnly {
		sel[etcdv1.ServingLabel] = "true"
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ClientServiceName(c.Name), Namespace: c.Namespace, Labels: ObjectLabels(c)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports:    ports("client", "metrics"),
		},
	}
}

// PDB lets voluntary disruptions (a drain) take down one member at a time
// of the cluster's voters.
func PDB(c *etcdv1.EtcdCluster, voters int) *policyv1.PodDisruptionBudget {
	// One member down at a time: etcd keeps its quorum, and a drain moves
	// the members one by one. Before etcd listed any voter, spec.replicas
	// stands in for them.
	if voters <= 0 {
		voters = int(Replicas(c))
	}
	minAvailable := intstr.FromInt32(int32(max(voters-1, 0)))
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: PDBName(c.Name), Namespace: c.Namespace, Labels: ObjectLabels(c)},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			// The cluster's labels alone: the shard label of the Pods
			// follows the cluster's shard, and a selector with it would
			// select nothing for a while after a move.
			Selector: &metav1.LabelSelector{MatchLabels: ClusterLabels(c.Name)},
		},
	}
}
