package plugin

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// diagnosticsObjects are sample's objects with containers in its Pods
// (etcd in sample-aaaaa restarted once), an agent Pod of a backup, volumes
// (one kept from a deleted member), Services, events, the operator, and
// objects of no concern to sample.
func diagnosticsObjects(t *testing.T) []client.Object {
	c := cluster()
	c.UID = "cluster-uid"
	objs := []client.Object{c}
	for _, o := range sampleObjects(t)[1:] {
		if p, ok := o.(*corev1.Pod); ok {
			p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
			p.Spec.Containers = []corev1.Container{{Name: "etcd"}}
			if p.Name == "sample-aaaaa" {
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", RestartCount: 1}}
			}
		}
		objs = append(objs, o)
	}
	b := backup("nightly", "sample", -time.Hour, etcdv1.ConditionComplete, "SnapshotStored", "")
	b.UID = "backup-uid"
	meta := func(name string, labels map[string]string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	of := map[string]string{etcdv1.ClusterLabel: "sample"}
	agent := &corev1.Pod{ObjectMeta: meta("nightly-agent", map[string]string{etcdv1.NameLabel: "raftsman-agent"}),
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "agent"}}}}
	agent.OwnerReferences = []metav1.OwnerReference{{APIVersion: "etcd.raftsman.io/v1alpha1", Kind: "EtcdBackup", Name: "nightly", UID: "backup-uid"}}
	event := func(name, kind, about string) *corev1.Event {
		return &corev1.Event{ObjectMeta: meta(name, nil), InvolvedObject: corev1.ObjectReference{Kind: kind, Name: about, Namespace: ns},
			Reason: "Test", Message: "about " + about, LastTimestamp: metav1.NewTime(testNow)}
	}
	operator := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "raftsman-x1", Namespace: defaultOperatorNamespace,
		Labels: map[string]string{etcdv1.NameLabel: "raftsman"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager"}}}}
	return append(objs, b, agent, operator, operatorDeployment(),
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("data-sample-aaaaa", of)},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("data-sample-zzzzz", map[string]string{etcdv1.RetainedFromLabel: "sample"})},
		&corev1.PersistentVolumeClaim{ObjectMeta: meta("unrelated-data", nil)},
		&corev1.Service{ObjectMeta: meta("sample", of)},
		event("e1", "Pod", "sample-aaaaa"), event("e2", "Pod", "unrelated"), event("e3", "EtcdCluster", "sample"), event("e4", "Service", "sample-aaaaa"))
}

// readArchive is the files of a tar.gz by name, without the top folder.
func readArchive(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		top, name, _ := strings.Cut(h.Name, "/")
		if top != "raftsman-diagnostics-prod-sample-20260102-030405" {
			t.Errorf("%s is not under the archive's folder", h.Name)
		}
		files[name] = string(data)
	}
}

// TestDiagnostics: the archive holds the cluster's objects and events,
// the status, etcd's view, every container's log (and the previous one of
// a restarted container), the operator's, a README listing what is in it
// and what failed; never a Secret's data.
func TestDiagnostics(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "d.tar.gz")
	te := newTestEnv(t, interceptor.Funcs{}, diagnosticsObjects(t)...)
	te.etcdFake.statuses = healthyEtcd()
	te.logErrs["sample-ccccc/etcd"] = errors.New("container etcd is not running")
	if err := te.run("diagnostics", "sample", "-f", file); err != nil {
		t.Fatalf("%v: %s", err, te.err)
	}
	if want := "diagnostics of prod/sample written to " + file + ": 24 files; 1 things not collected, listed in README.txt\n"; te.out.String() != want {
		t.Errorf("output %q, want %q", te.out.String(), want)
	}
	files := readArchive(t, file)
	for _, name := range []string{"README.txt", "objects/etcdcluster.yaml", "objects/etcdmembers.yaml", "objects/etcdbackups.yaml",
		"objects/pods.yaml", "objects/persistentvolumeclaims.yaml", "objects/services.yaml", "objects/events.yaml", "objects/secrets.txt",
		"status.txt", "status.json", "etcd/endpoint-status.json", "etcd/alarms.json", "etcd/member-list.json",
		"logs/sample-aaaaa/init.log", "logs/sample-aaaaa/etcd.log", "logs/sample-aaaaa/etcd.previous.log", "logs/sample-bbbbb/etcd.log",
		"logs/nightly-agent/agent.log", "operator/deployments.yaml", "operator/pods.yaml", "operator/logs/raftsman-system.raftsman-x1/manager.log"} {
		if _, ok := files[name]; !ok {
			t.Errorf("no %s in the archive", name)
		}
	}
	contains := map[string][]string{
		"README.txt":                          {"Raftsman diagnostics of EtcdCluster prod/sample\nCollected 2026-01-02T03:04:05Z", "  objects/etcdcluster.yaml ", "Not collected:\n  logs/sample-ccccc/etcd.log: container etcd is not running\n"},
		"objects/etcdcluster.yaml":            {"kind: List", "kind: EtcdCluster", "apiVersion: etcd.raftsman.io/v1alpha1"},
		"objects/pods.yaml":                   {"name: nightly-agent", "name: sample-ccccc"},
		"objects/persistentvolumeclaims.yaml": {"name: data-sample-aaaaa", "name: data-sample-zzzzz"},
		"objects/events.yaml":                 {"about sample-aaaaa", "about sample\n"},
		"objects/secrets.txt":                 {"clientSecretName: sample-client-tls", "caSecretName: sample-ca"},
		"status.txt":                          {"Cluster:  prod/sample, created 60m ago"},
		"logs/sample-aaaaa/etcd.previous.log": {"log of prod/sample-aaaaa/etcd/previous"},
	}
	for name, wants := range contains {
		for _, want := range wants {
			if !strings.Contains(files[name], want) {
				t.Errorf("%s has no %q:\n%s", name, want, files[name])
			}
		}
	}
	for name, data := range files {
		for _, bad := range []string{"PRIVATE KEY", "BEGIN CERTIFICATE", "managedFields", "unrelated"} {
			if strings.Contains(data, bad) {
				t.Errorf("%s has %q", name, bad)
			}
		}
	}
	if n := strings.Count(files["objects/events.yaml"], "involvedObject:"); n != 2 {
		t.Errorf("%d events in objects/events.yaml, want those about Pod sample-aaaaa and EtcdCluster sample", n)
	}
	if _, ok := files["logs/sample-bbbbb/etcd.previous.log"]; ok {
		t.Error("a previous log of a container that never restarted")
	}
	var rows []memberListRow
	if err := json.Unmarshal([]byte(files["etcd/member-list.json"]), &rows); err != nil || len(rows) != 3 {
		t.Errorf("etcd/member-list.json: %v, %+v", err, rows)
	}
}

// TestDiagnosticsNotes: what cannot be collected is noted in README.txt,
// and the archive is still written.
func TestDiagnosticsNotes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "existing.tar.gz")
	if err := os.WriteFile(existing, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	readme := func(file string, wants ...string) func(*testing.T, *testEnvironment) {
		return func(t *testing.T, _ *testEnvironment) {
			got := readArchive(t, file)["README.txt"]
			for _, want := range wants {
				if !strings.Contains(got, want) {
					t.Errorf("README.txt has no %q:\n%s", want, got)
				}
			}
		}
	}
	runVerbCases(t, []verbCase{
		{name: "no operator Pod where allowed", args: []string{"diagnostics", "sample", "-f", filepath.Join(dir, "a.tar.gz"), "--operator-namespace", "ops"},
			funcs: forbidAllNamespaces(),
			check: readme(filepath.Join(dir, "a.tar.gz"), "operator/pods.yaml and the operator's logs: no Pod labelled app.kubernetes.io/name=raftsman in namespace ops")},
		{name: "etcd not asked", args: []string{"diagnostics", "sample", "-f", filepath.Join(dir, "b.tar.gz"), "--no-etcd"},
			check: func(t *testing.T, _ *testEnvironment) {
				files := readArchive(t, filepath.Join(dir, "b.tar.gz"))
				if _, ok := files["etcd/member-list.json"]; ok || !strings.Contains(files["status.json"], `"etcdNote": "not asked (--no-etcd)"`) {
					t.Errorf("--no-etcd asked etcd: %s", files["status.json"])
				}
			}},
		{name: "events not allowed", args: []string{"diagnostics", "sample", "-f", filepath.Join(dir, "c.tar.gz")},
			funcs: interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if _, ok := list.(*corev1.EventList); ok {
					return errors.New("events are forbidden")
				}
				return c.List(ctx, list, opts...)
			}},
			check: readme(filepath.Join(dir, "c.tar.gz"), "objects/events.yaml: events are forbidden")},
		{name: "a cluster that cannot be decoded", args: []string{"diagnostics", "sample", "-f", filepath.Join(dir, "d.tar.gz")}, funcs: undecodable(),
			check: readme(filepath.Join(dir, "d.tar.gz"), "status.txt: etcdcluster prod/sample cannot be decoded", "  objects/etcdcluster.yaml ")},
		{name: "over a file", args: []string{"diagnostics", "sample", "-f", existing}, wantErr: "existing.tar.gz exists: remove it or name another file with -f"},
	})
}
