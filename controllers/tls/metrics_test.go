package tls

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func TestCertCollector(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(time.Unix(1800000000, 0))
	ca := metav1.NewTime(time.Unix(2000000000, 0))
	withTLS := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "ns"},
		Status: etcdv1.EtcdClusterStatus{TLS: &etcdv1.TLSStatus{NotAfter: &at, CANotAfter: &ca}}}
	plain := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "ns"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(withTLS, plain).Build()
	col := certCollector{reader: c}
	want := `
# HELP raftsman_etcdcluster_ca_expiry_timestamp_seconds When the operator's CA of an EtcdCluster expires (status.tls.caNotAfter), in seconds since the epoch.
# TYPE raftsman_etcdcluster_ca_expiry_timestamp_seconds gauge
raftsman_etcdcluster_ca_expiry_timestamp_seconds{name="demo",namespace="ns"} 2e+09
# HELP raftsman_etcdcluster_certificate_expiry_timestamp_seconds When the first of an EtcdCluster's certificates expires (status.tls.notAfter), in seconds since the epoch.
# TYPE raftsman_etcdcluster_certificate_expiry_timestamp_seconds gauge
raftsman_etcdcluster_certificate_expiry_timestamp_seconds{name="demo",namespace="ns"} 1.8e+09
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if err := c.Delete(context.Background(), withTLS); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col); n != 0 {
		t.Errorf("%d series left after the cluster was deleted", n)
	}
}
