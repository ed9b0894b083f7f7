// Package resources builds the Kubernetes objects of an etcd cluster from the
// API objects: pure functions, no client, no I/O.
package resources

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// Scheme is the URL scheme of a cluster's peer and client URLs.
func Scheme(c *etcdv1.EtcdCluster) string {
	if c.Spec.TLS.Disabled {
		return "http"
	}
	return "https"
}

// PeerURL is the URL other members reach the member at.
func PeerURL(c *etcdv1.EtcdCluster, member, domain string) string {
	return fmt.Sprintf("%s://%s:%d", Scheme(c), MemberHost(c.Name, member, c.Namespace, domain), etcdv1.PeerPort)
}

// ClientURL is the URL clients reach the member at.
func ClientURL(c *etcdv1.EtcdCluster, member, domain string) string {
	return fmt.Sprintf("%s://%s:%d", Scheme(c), MemberHost(c.Name, member, c.Namespace, domain), etcdv1.ClientPort)
}

// Secrets the tls controller keeps for a cluster.
func CASecretName(cluster string) string              { return cluster + "-ca" }
func PeerTLSSecretName(cluster string) string         { return cluster + "-peer-tls" }
func ServerTLSSecretName(cluster string) string       { return cluster + "-server-tls" }
func ClientTLSSecretName(cluster string) string       { return cluster + "-client-tls" }
func RootCredentialsSecretName(cluster string) string { return cluster + "-root-credentials" }

// UserSecretName is the Secret of an EtcdUser's credentials; the user
// controller writes it only when the EtcdUser owns it, so that a name
// shared with another cluster's Secret is a conflict, not a takeover.
func UserSecretName(cluster, user string) string { return cluster + "-user-" + user }

// UserRoleName is the etcd role the operator keeps for an EtcdUser, the
// user's only role.
func UserRoleName(user string) string { return "raftsman-user-" + user }

// CertManagerName names the cert-manager Certificate, and the Secret it
// writes, of one purpose (peer or server) of a cluster.
func CertManagerName(cluster, purpose string) string { return cluster + "-" + purpose + "-cm" }

// PeerHosts are the names the peer certificate must cover: every member's
// name under the headless Service, with and without the cluster domain.
func PeerHosts(c *etcdv1.EtcdCluster, domain string) []string {
	svc := fmt.Sprintf("%s.%s.svc", PeerServiceName(c.Name), c.Namespace)
	return []string{"*." + svc, "*." + svc + "." + strings.TrimSuffix(domain, ".")}
}

// ServerHosts are the names the serving certificate must cover: the members,
// the client Service in its short and full forms, and localhost (the IPs
// 127.0.0.1 and ::1 come with it).
func ServerHosts(c *etcdv1.EtcdCluster, domain string) []string {
	d := strings.TrimSuffix(domain, ".")
	svc := ClientServiceName(c.Name)
	return append(PeerHosts(c, domain),
		svc, svc+"."+c.Namespace, svc+"."+c.Namespace+".svc", svc+"."+c.Namespace+".svc."+d, "localhost")
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

// ObjectLabels are the labels of what the operator makes for a cluster:
// the cluster's labels and its shard. Selectors use ClusterLabels alone, so
// that a change of shard never changes what they select.
func ObjectLabels(c *etcdv1.EtcdCluster) map[string]string {
	return withShard(ClusterLabels(c.Name), c.Labels)
}

func withShard(l, from map[string]string) map[string]string {
	if s, ok := from[etcdv1.ShardLabel]; ok {
		l[etcdv1.ShardLabel] = s
	}
	return l
}

// MemberLabels are the labels of a member's Pod and PVC; the shard comes
// from the EtcdMember's labels.
func MemberLabels(m *etcdv1.EtcdMember) map[string]string {
	l := withShard(ClusterLabels(m.Spec.ClusterName), m.Labels)
	l[etcdv1.MemberLabel] = m.Name
	return l
}

// AgentLabels are the labels of an agent Pod working for owner: an
// EtcdBackup (whose name they carry), or the EtcdCluster whose snapshot it
// checks. The owner's shard keeps the Pod in that shard's cache.
func AgentLabels(owner metav1.Object) map[string]string {
	l := withShard(map[string]string{etcdv1.NameLabel: "raftsman-agent", etcdv1.ManagedByLabel: "raftsman"}, owner.GetLabels())
	if _, ok := owner.(*etcdv1.EtcdBackup); ok {
		l[etcdv1.BackupLabel] = owner.GetName()
	}
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
	return ImageFor(c.Spec.Version, repository)
}

// ImageFor is the etcd image of a version: <repository>:v<version>.
func ImageFor(version, repository string) string {
	return fmt.Sprintf("%s:v%s", repository, version)
}
