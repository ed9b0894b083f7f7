package kube

import (
	"encoding/json"
	"net"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// clusterSecrets are the four Secrets the tls controller writes for a
// cluster of the default spec (CA, peer, serving and client certificates),
// as the API server stores them: labels, owner, managedFields.
func clusterSecrets(t *testing.T) []*corev1.Secret {
	t.Helper()
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns", UID: "cluster-uid",
		Labels: map[string]string{etcdv1.ShardLabel: "shard-0"}}}
	now := time.Now()
	ca, err := pki.NewCA("demo.ns etcd CA", 10*365*24*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(cn string, usage pki.Usage, hosts []string) *pki.KeyPair {
		kp, err := pki.Issue(ca, pki.Request{CommonName: cn, DNSNames: hosts, IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, Usage: usage, Lifetime: 90 * 24 * time.Hour}, now)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	peer := issue("etcd-peer", pki.UsagePeer, resources.PeerHosts(c, "cluster.local"))
	server := issue("etcd-server", pki.UsageServer, resources.ServerHosts(c, "cluster.local"))
	client := issue("root", pki.UsageClient, nil)
	secret := func(name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
		return &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "secret-uid", ResourceVersion: "123456", CreationTimestamp: created,
				Labels:          resources.ObjectLabels(c),
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "etcd.raftsman.io/v1alpha1", Kind: "EtcdCluster", Name: "demo", UID: c.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "raftsman-tls", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &created, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:ca.crt":{},"f:tls.crt":{},"f:tls.key":{}},"f:metadata":{"f:labels":{".":{},"f:app.kubernetes.io/instance":{},"f:app.kubernetes.io/managed-by":{},"f:app.kubernetes.io/name":{},"f:etcd.raftsman.io/cluster":{},"f:etcd.raftsman.io/shard":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"cluster-uid\"}":{}}},"f:type":{}}`)}}},
			},
			Type: typ, Data: data,
		}
	}
	return []*corev1.Secret{
		secret(resources.CASecretName("demo"), corev1.SecretTypeOpaque, map[string][]byte{pki.CertKey: ca.CertPEM, pki.KeyKey: ca.KeyPEM}),
		secret(resources.PeerTLSSecretName("demo"), corev1.SecretTypeTLS, map[string][]byte{pki.CertKey: peer.CertPEM, pki.KeyKey: peer.KeyPEM, pki.CAKey: ca.CertPEM}),
		secret(resources.ServerTLSSecretName("demo"), corev1.SecretTypeTLS, map[string][]byte{pki.CertKey: server.CertPEM, pki.KeyKey: server.KeyPEM, pki.CAKey: ca.CertPEM, "source-ca.crt": ca.CertPEM}),
		secret(resources.ClientTLSSecretName("demo"), corev1.SecretTypeTLS, map[string][]byte{pki.CertKey: client.CertPEM, pki.KeyKey: client.KeyPEM, pki.CAKey: ca.CertPEM}),
	}
}

// TestSecretMetadataSize measures what a cluster's four Secrets cost in the
// cache before (whole, without managedFields) and now (their metadata as a
// metadata watch brings it, made lean), and what the operator keeps of
// them besides: the client certificate, key and CA the cluster and user
// controllers keep between passes (credentials.Cache).
func TestSecretMetadataSize(t *testing.T) {
	secrets := clusterSecrets(t)
	transform := cacheTransform(t, &corev1.Secret{})
	heap := heapPerObject
	whole := heap(func() any {
		out := make([]any, 0, len(secrets))
		for _, s := range secrets {
			c := s.DeepCopy()
			c.ManagedFields = nil
			out = append(out, c)
		}
		return out
	})
	metadata := heap(func() any {
		out := make([]any, 0, len(secrets))
		for _, s := range secrets {
			m := &metav1.PartialObjectMetadata{TypeMeta: s.TypeMeta, ObjectMeta: *s.ObjectMeta.DeepCopy()}
			lean, err := transform(m)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, lean)
		}
		return out
	})
	client := secrets[3].Data
	credentials := heap(func() any {
		return [3][]byte{append([]byte(nil), client[pki.CertKey]...), append([]byte(nil), client[pki.KeyKey]...), append([]byte(nil), client[pki.CAKey]...)}
	})
	size := 0
	for _, s := range secrets {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		size += len(b)
	}
	t.Logf("a cluster's 4 Secrets: JSON %d bytes; heap in the cache %d bytes whole, %d as metadata (%.0f%% less); the client credentials kept besides %d bytes",
		size, whole, metadata, 100*(1-float64(metadata)/float64(whole)), credentials)
	if metadata >= whole {
		t.Errorf("the Secrets' metadata (%d bytes) is not smaller than the Secrets (%d bytes)", metadata, whole)
	}
}
