package user

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

func TestUserCollector(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(time.Unix(1800000000, 0))
	u := &etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Namespace: "ns"},
		Status: etcdv1.EtcdUserStatus{NotAfter: &at, Conditions: []metav1.Condition{{Type: etcdv1.ConditionReady, Status: metav1.ConditionFalse, Reason: etcdv1.ReasonAuthDisabled}}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(u).Build()
	col := userCollector{reader: c}
	want := `
# HELP raftsman_etcduser_certificate_expiry_timestamp_seconds When an EtcdUser's client certificate expires (status.notAfter), in seconds since the epoch.
# TYPE raftsman_etcduser_certificate_expiry_timestamp_seconds gauge
raftsman_etcduser_certificate_expiry_timestamp_seconds{name="tenant-a",namespace="ns"} 1.8e+09
# HELP raftsman_etcduser_status_condition Conditions of an EtcdUser: 1 for the current status of each condition type, 0 for the others.
# TYPE raftsman_etcduser_status_condition gauge
raftsman_etcduser_status_condition{name="tenant-a",namespace="ns",reason="AuthDisabled",status="False",type="Ready"} 1
raftsman_etcduser_status_condition{name="tenant-a",namespace="ns",reason="AuthDisabled",status="True",type="Ready"} 0
raftsman_etcduser_status_condition{name="tenant-a",namespace="ns",reason="AuthDisabled",status="Unknown",type="Ready"} 0
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if err := c.Delete(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col); n != 0 {
		t.Errorf("%d series left after the user was deleted", n)
	}
}
