// Package resources builds the Kubernetes objects of an etcd cluster from the
// API objects: pure functions, no client, no I/O.
package resources

import (
	"fmt"
	"strings"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// PeerServiceName is the headless Service that gives each member its DNS name.
func PeerServiceName(cluster string) string { return cluster + "-peer" }

// ClientServiceName is the Service clients connect to.
func ClientServiceName(cluster string) string { return cluster }

// PDBName is the PodDisruptionBudget of the cluster's Pods.
func PDBName(cluster string) string { return cluster }

// PVCName is the data volume claim of a member.
func PVCName(member string) string { return "data-" + member }

// MemberHost is the stable DNS name of a member.
func MemberHost(cluster, member, namespace, domain string) string {
	return fmt.Sprintf("%s.%s.%s.svc.%s", member, PeerServiceName(cluster), namespace, strings.TrimSuffix(domain, "."))
}

// PeerURL is the URL other members reach the member at.
func PeerURL(cluster, member, namespace, domain string) string {
	return fmt.Sprintf("http://%s:%d", MemberHost(cluster, member, namespace, domain), etcdv1.PeerPort)
}

// ClientURL is the URL clients reach the member at.
func ClientURL(cluster, member, namespace, domain string) string {
	return fmt.Sprintf("http://%s:%d", MemberHost(cluster, member, namespace, domain), etcdv1.ClientPort)
}

// ClusterLabels select every Pod of a cluster.
func ClusterLabels(cluster string) map[string]string {
	return map[string]string{
		etcdv1.NameLabel:      "etcd",
		etcdv1.InstanceLabel:  cluster,
		etcdv1.ManagedByLabel: "raftsman",
		etcdv1.ClusterLabel:   cluster,
	}
}

// MemberLabels are the labels of a member's Pod and PVC.
func MemberLabels(cluster, member string) map[string]string {
	l := ClusterLabels(cluster)
	l[etcdv1.MemberLabel] = member
	return l
}

// InitialCluster writes etcd's --initial-cluster from name and peer URL pairs.
func InitialCluster(pairs [][2]string) string {
	parts := make([]string, 0, len(pairs))
	for _, p := range pairs {
		parts = append(parts, p[0]+"="+p[1])
	}
	return strings.Join(parts, ",")
}

// Replicas is the desired member count; 3 when unset, like the CRD default.
func Replicas(c *etcdv1.EtcdCluster) int32 {
	if c.Spec.Replicas == nil {
		return 3
	}
	return *c.Spec.Replicas
}

// Image is the etcd image of a cluster: the override, or repository:v<version>.
func Image(c *etcdv1.EtcdCluster, repository string) string {
	if c.Spec.Image != "" {
		return c.Spec.Image
	}
	return fmt.Sprintf("%s:v%s", repository, c.Spec.Version)
}
