package v1alpha1

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

// TestUndecodableObjectsDecodeWithTheirMetadata: a list holding one object
// Go cannot decode (a quantity the CRD's pattern let through) decodes, the
// others whole and that one with its metadata and the reason; an object
// with no metadata to speak of still fails.
func TestUndecodableObjectsDecodeWithTheirMetadata(t *testing.T) {
	t.Parallel()
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	decode := func(t *testing.T, s string, into runtime.Object) error {
		t.Helper()
		_, _, err := codecs.UniversalDeserializer().Decode([]byte(s), nil, into)
		return err
	}
	const good = `{"apiVersion":"etcd.raftsman.io/v1alpha1","kind":"EtcdCluster","metadata":{"name":"good","namespace":"a"},"spec":{"version":"3.6.16","resources":{"requests":{"cpu":"1"}}}}`
	const bad = `{"apiVersion":"etcd.raftsman.io/v1alpha1","kind":"EtcdCluster","metadata":{"name":"bad","namespace":"b","labels":{"x":"y"}},"spec":{"version":"3.6.16","resources":{"requests":{"cpu":"1e1.5"}}}}`

	t.Run("list", func(t *testing.T) {
		l := &EtcdClusterList{}
		if err := decode(t, `{"apiVersion":"etcd.raftsman.io/v1alpha1","kind":"EtcdClusterList","metadata":{},"items":[`+good+`,`+bad+`]}`, l); err != nil {
			t.Fatalf("the list fails to decode: %v", err)
		}
		if len(l.Items) != 2 {
			t.Fatalf("%d items, want 2", len(l.Items))
		}
		if why := Undecodable(&l.Items[0]); why != "" || l.Items[0].Spec.Resources.Requests["cpu"] != "1" {
			t.Errorf("the good item: undecodable %q, spec %+v", why, l.Items[0].Spec)
		}
		b := l.Items[1]
		if why := Undecodable(&b); !strings.Contains(why, "cannot decode bad") || !strings.Contains(why, "quantities") {
			t.Errorf("the bad item's reason = %q", why)
		}
		if b.Namespace != "b" || b.Labels["x"] != "y" || b.Spec.Version != "" {
			t.Errorf("the bad item = %+v, want its metadata and nothing else", b)
		}
	})
	t.Run("member and backup", func(t *testing.T) {
		m := &EtcdMember{}
		if err := decode(t, `{"apiVersion":"etcd.raftsman.io/v1alpha1","kind":"EtcdMember","metadata":{"name":"m"},"spec":{"storage":{"size":"1e1.5"}}}`, m); err != nil || Undecodable(m) == "" {
			t.Errorf("member: err %v, undecodable %q", err, Undecodable(m))
		}
		bk := &EtcdBackup{}
		if err := decode(t, `{"apiVersion":"etcd.raftsman.io/v1alpha1","kind":"EtcdBackup","metadata":{"name":"b"},"spec":{"clusterName":7}}`, bk); err != nil || Undecodable(bk) == "" {
			t.Errorf("backup: err %v, undecodable %q", err, Undecodable(bk))
		}
	})
	t.Run("no metadata", func(t *testing.T) {
		if err := decode(t, `{"apiVersion":"etcd.raftsman.io/v1alpha1","kind":"EtcdCluster","metadata":7}`, &EtcdCluster{}); err == nil {
			t.Error("an object without metadata decoded")
		}
	})
}
