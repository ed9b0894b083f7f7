package controllers_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers"
	"github.com/raftsman/raftsman/controllers/tls"
	"github.com/raftsman/raftsman/internal/testenv"
	"github.com/raftsman/raftsman/pkg/etcd"
)

// TestEnvUndecodableObject: an EtcdCluster stored past validation (under a
// CRD whose schema let anything through, as an older CRD let "1e1.5"
// through as a quantity) that Go cannot decode sits in one namespace; the
// operator started after it still reconciles a cluster in another
// namespace, reports the bad one with a Warning event and does nothing
// for it.
func TestEnvUndecodableObject(t *testing.T) {
	cfg, scheme := testenv.Start(t)
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	nsBad := testenv.NewNamespace(t, admin, "tenant-bad-", nil)
	nsGood := testenv.NewNamespace(t, admin, "tenant-good-", nil)

	// Store the bad object under a schema that accepts any spec, then put
	// the real schema back.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	key := client.ObjectKey{Name: "etcdclusters." + etcdv1.GroupVersion.Group}
	if err := admin.Get(ctx, key, crd); err != nil {
		t.Fatal(err)
	}
	strict := crd.Spec.Versions[0].Schema.DeepCopy()
	loose := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = *loose
	crd.Spec.Versions[0].Schema.OpenAPIV3Schema.XValidations = nil
	if err := admin.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	bad := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(fmt.Sprintf(`{"apiVersion":"etcd.raftsman.io/v1alpha1","kind":"EtcdCluster","metadata":{"name":"bad","namespace":%q},"spec":{"version":"3.6.16","replicas":1,"storage":{"size":"1e1.5"}}}`, nsBad)), &bad.Object); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the bad cluster stored past the schema", func() error {
		return admin.Create(ctx, bad.DeepCopy())
	})
	if err := admin.Get(ctx, key, crd); err != nil {
		t.Fatal(err)
	}
	crd.Spec.Versions[0].Schema = strict
	if err := admin.Update(ctx, crd); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the real schema back", func() error {
		again := bad.DeepCopy()
		again.SetName("bad-again")
		if err := admin.Create(ctx, again); err == nil {
			_ = admin.Delete(ctx, again)
			return fmt.Errorf("a storage size of 1e1.5 is still accepted")
		}
		return nil
	})

	testenv.StartManager(t, cfg, scheme, func(mgr ctrl.Manager) error {
		opts := controllers.Options{Etcd: etcd.NewFakeFactory(), TLS: tls.DefaultOptions()}
		opts.Cluster = clusterOptions()
		return controllers.Setup(mgr, opts)
	})
	good := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: nsGood, Name: "good"},
		Spec: etcdv1.EtcdClusterSpec{Version: "3.6.16", Replicas: ptr.To[int32](1)}}
	if err := admin.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 60*time.Second, "the good cluster's member", func() error {
		ms := &etcdv1.EtcdMemberList{}
		if err := admin.List(ctx, ms, client.InNamespace(nsGood)); err != nil {
			return err
		}
		if len(ms.Items) != 1 {
			return fmt.Errorf("%d members", len(ms.Items))
		}
		return nil
	})
	testenv.Eventually(t, 30*time.Second, "a Warning event on the bad cluster", func() error {
		evs := &eventsv1.EventList{}
		if err := admin.List(ctx, evs, client.InNamespace(nsBad)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "Undecodable" && e.Regarding.Name == "bad" && e.Type == "Warning" && strings.Contains(e.Note, "cannot decode bad") {
				return nil
			}
		}
		return fmt.Errorf("no Undecodable event among %d", len(evs.Items))
	})
	got := &unstructured.Unstructured{}
	got.SetAPIVersion(etcdv1.GroupVersion.String())
	got.SetKind("EtcdCluster")
	if err := admin.Get(ctx, client.ObjectKey{Namespace: nsBad, Name: "bad"}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.GetFinalizers()) > 0 || got.Object["status"] != nil || len(got.GetAnnotations()) > 0 {
		t.Errorf("the bad cluster was acted on: finalizers %v, status %v, annotations %v", got.GetFinalizers(), got.Object["status"], got.GetAnnotations())
	}
	ms := &etcdv1.EtcdMemberList{}
	if err := admin.List(ctx, ms, client.InNamespace(nsBad)); err != nil {
		t.Fatal(err)
	}
	if len(ms.Items) != 0 {
		t.Errorf("%d members made for the bad cluster", len(ms.Items))
	}
}
