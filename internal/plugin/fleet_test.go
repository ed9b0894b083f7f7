package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// otherCluster is a cluster of namespace dev in a rolling update, with a
// NOSPACE alarm.
func otherCluster() *etcdv1.EtcdCluster {
	c := cluster()
	c.Name, c.Namespace, c.Labels = "other", "dev", nil
	c.CreationTimestamp = metav1.NewTime(testNow.Add(-48 * time.Hour))
	c.Status.ReadyReplicas, c.Status.Version = 2, "3.6.15"
	for i, cond := range c.Status.Conditions {
		if cond.Type == etcdv1.ConditionProgressing {
			c.Status.Conditions[i].Status, c.Status.Conditions[i].Reason = metav1.ConditionTrue, etcdv1.ReasonRollingUpdate
		}
	}
	c.Status.Alarms = []etcdv1.ClusterAlarm{{Type: "NOSPACE", MemberID: "b2", Member: "other-bbbbb"}}
	return c
}

// operatorDeployment is the operator as the installs make it.
func operatorDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "raftsman", Namespace: defaultOperatorNamespace,
			Labels: map[string]string{etcdv1.NameLabel: "raftsman", "app.kubernetes.io/version": "v1.2.3"}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "manager", Image: "raftsman:v1.2.3"}}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 1},
	}
}

// forbidAllNamespaces refuses lists across namespaces, as a namespaced
// user's permissions do.
func forbidAllNamespaces() interceptor.Funcs {
	return interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
		o := &client.ListOptions{}
		o.ApplyOptions(opts)
		if o.Namespace == "" {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "list"}, "", errors.New("not in every namespace"))
		}
		return c.List(ctx, list, opts...)
	}}
}

// undecodable plays the API types' decoding of a cluster whose spec
// cannot be decoded: sample comes with its metadata and the annotation.
func undecodable() interceptor.Funcs {
	mark := func(c *etcdv1.EtcdCluster) {
		if c.Name == "sample" {
			*c = etcdv1.EtcdCluster{ObjectMeta: c.ObjectMeta}
			c.Annotations = map[string]string{etcdv1.UndecodableAnnotation: `spec.storage.size: quantities must match "1e1.5"`}
		}
	}
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if cl, ok := obj.(*etcdv1.EtcdCluster); ok {
				mark(cl)
			}
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			if l, ok := list.(*etcdv1.EtcdClusterList); ok {
				for i := range l.Items {
					mark(&l.Items[i])
				}
			}
			return nil
		},
	}
}

// TestStatusOutputAndFleet: status -o json|yaml, status -A and list, and
// version.
func TestStatusOutputAndFleet(t *testing.T) {
	t.Parallel()
	runVerbCases(t, []verbCase{
		{name: "status -o json", args: []string{"status", "sample", "-o", "json"},
			etcd: func(f *fakeEtcd) { f.alarms = []alarm{{MemberID: 0xb2, Type: "NOSPACE"}} },
			check: func(t *testing.T, te *testEnvironment) {
				var d statusDocument
				if err := json.Unmarshal(te.out.Bytes(), &d); err != nil {
					t.Fatalf("%v:\n%s", err, te.out)
				}
				m := d.Members
				switch {
				case d.Namespace != "prod" || d.Name != "sample" || d.Leader != "sample-aaaaa" || d.Replicas != 3 || d.ReadyVoters != 3:
					t.Errorf("cluster fields %+v", d)
				case len(m) != 3 || m[0].Etcd == nil || m[0].Etcd.DBSize != 20480 || m[0].Etcd.Quota != 2<<30 || !m[0].Leader || m[0].Pod != podReady:
					t.Errorf("members %+v", m)
				case len(d.Alarms) != 1 || d.Alarms[0].Member != "sample-bbbbb":
					t.Errorf("alarms %+v", d.Alarms)
				case len(d.Conditions) != 4 || d.Conditions[0].Type != etcdv1.ConditionAvailable || len(d.Certificates) != 3:
					t.Errorf("conditions %+v, certificates %+v", d.Conditions, d.Certificates)
				}
				for _, field := range []string{`"dbSizeInUse": 16384`, `"raftTerm": 4`, `"lastTransitionTime": "2026-01-02T02:54:05Z"`} {
					if !strings.Contains(te.out.String(), field) {
						t.Errorf("no %s in\n%s", field, te.out)
					}
				}
			}},
		{name: "status -o yaml --no-etcd", args: []string{"status", "sample", "-o", "yaml", "--no-etcd"},
			wantOut: []string{"name: sample\n", "etcdNote: not asked (--no-etcd)\n", "alarms: []\n"},
			check: func(t *testing.T, te *testEnvironment) {
				var d statusDocument
				if err := yaml.Unmarshal(te.out.Bytes(), &d); err != nil || len(d.Members) != 3 || d.Members[0].Etcd != nil {
					t.Errorf("%v, %+v", err, d)
				}
			}},
		{name: "status -o of another kind", args: []string{"status", "sample", "-o", "xml"}, wantErr: `--output "xml": want json or yaml`},
		{name: "status -A", args: []string{"status", "-A"}, extra: []client.Object{otherCluster()}, wantOut: []string{
			"NAMESPACE  NAME    READY  VERSION  AVAILABLE  PROGRESSING           ALARMS                  AGE\n",
			"dev        other   2/3    3.6.15   True       True (RollingUpdate)  NOSPACE on other-bbbbb  2d\n",
			"prod       sample  3/3    3.6.16   True       False                 none                    60m\n"}},
		{name: "status -A with a cluster", args: []string{"status", "-A", "sample"}, wantErr: "status -A shows every cluster: name none"},
		{name: "list: the namespace's", args: []string{"list"}, extra: []client.Object{otherCluster()},
			wantOut: []string{"NAME    READY  VERSION  AVAILABLE  PROGRESSING  ALARMS  AGE\nsample  3/3    3.6.16   True       False        none    60m\n"},
			notOut:  []string{"other"}},
		{name: "list of a stale cluster", args: []string{"list"}, cluster: func(c *etcdv1.EtcdCluster) { c.Generation = 3 },
			wantOut: []string{"sample  3/3    3.6.16   Unknown    Unknown"}},
		{name: "list -A -o json", args: []string{"list", "-A", "-o", "json"}, extra: []client.Object{otherCluster()},
			check: func(t *testing.T, te *testEnvironment) {
				var rows []fleetRow
				if err := json.Unmarshal(te.out.Bytes(), &rows); err != nil || len(rows) != 2 || rows[0].Name != "other" ||
					rows[0].ProgressingReason != etcdv1.ReasonRollingUpdate || len(rows[0].Alarms) != 1 || rows[1].Available != "True" {
					t.Errorf("%v, %+v", err, rows)
				}
			}},
		{name: "list with a cluster that cannot be decoded", args: []string{"list", "-A"}, extra: []client.Object{otherCluster()}, funcs: undecodable(),
			wantOut: []string{"prod       sample  -      -        Unknown    Unknown               none                    60m\n",
				"  prod/sample cannot be decoded: spec.storage.size: quantities must match \"1e1.5\"\n"}},
		{name: "status of a cluster that cannot be decoded", args: []string{"status", "sample"}, funcs: undecodable(),
			wantErr: "etcdcluster prod/sample cannot be decoded (spec.storage.size: quantities must match \"1e1.5\"): correct or delete it"},
		{name: "list -A not allowed", args: []string{"list", "-A"}, funcs: forbidAllNamespaces(), wantErr: "list etcdclusters: list is forbidden"},

		{name: "version --client", args: []string{"version", "--client"}, wantOut: []string{"kubectl-raftsman "}, notOut: []string{"operator"}},
		{name: "version", args: []string{"version"}, extra: []client.Object{operatorDeployment()},
			wantOut: []string{"operator: raftsman-system/raftsman, image raftsman:v1.2.3, version v1.2.3, 1 of 1 ready\n"}},
		{name: "version: the operator's namespace only", args: []string{"version"}, extra: []client.Object{operatorDeployment()},
			funcs: forbidAllNamespaces(), wantOut: []string{"operator: raftsman-system/raftsman, image"}},
		{name: "version: the operator elsewhere", args: []string{"version", "--operator-namespace", "ops"}, extra: []client.Object{operatorDeployment()},
			funcs: forbidAllNamespaces(), wantOut: []string{"operator: not found (no Deployment labelled app.kubernetes.io/name=raftsman in namespace ops)\n"}},
		{name: "version: no operator", args: []string{"version"},
			wantOut: []string{"operator: not found (no Deployment labelled app.kubernetes.io/name=raftsman in any namespace)\n"}},
	})
}

// TestVersionWithoutACluster: version says the plugin's version and why
// the operator's is unknown, and succeeds.
func TestVersionWithoutACluster(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cmd := newRoot(Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}, func() (*env, error) {
		return nil, errors.New("kubeconfig: no configuration")
	})
	cmd.SetArgs([]string{"version"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "kubectl-raftsman ") || !strings.Contains(out.String(), "operator: unknown (kubeconfig: no configuration)\n") {
		t.Errorf("output %q", out.String())
	}
}

func TestPluginVersion(t *testing.T) {
	old := version
	t.Cleanup(func() { version = old })
	version = "v9.8.7"
	if got := pluginVersion(); !strings.HasPrefix(got, "v9.8.7 (") || !strings.Contains(got, "go1.") {
		t.Errorf("pluginVersion() = %q", got)
	}
}
