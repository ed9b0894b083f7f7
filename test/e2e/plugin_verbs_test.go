//go:build e2e

package e2e

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// pluginReadVerbs: version names the plugin and the operator; status -o
// json parses and holds the members etcd answered for; status -A and list
// -A show the cluster; members lists the voters etcd lists; alarm list
// finds none.
func pluginReadVerbs(ctx context.Context, t *testing.T, p *pluginRunner, cluster string) {
	t.Helper()
	out := p.must(ctx, t, "version")
	if len(matching(out, `^kubectl-raftsman \S+`)) != 1 || len(matching(out, `^operator: \S+/\S+, image \S+.*, \d+ of \d+ ready$`)) == 0 {
		t.Errorf("version:\n%s", out)
	}
	var doc struct {
		Name    string `json:"name"`
		Leader  string `json:"leader"`
		Members []struct {
			Name    string `json:"name"`
			Healthy bool   `json:"healthy"`
			Etcd    *struct {
				DBSize int64 `json:"dbSize"`
			} `json:"etcd"`
		} `json:"members"`
		Alarms []any `json:"alarms"`
	}
	out = p.must(ctx, t, "status", cluster, "-o", "json")
	if err := json.NewDecoder(strings.NewReader(out)).Decode(&doc); err != nil {
		t.Fatalf("status -o json: %v", err)
	}
	if doc.Name != cluster || doc.Leader == "" || len(doc.Members) != 3 || doc.Alarms == nil || len(doc.Alarms) != 0 {
		t.Errorf("status -o json: %+v", doc)
	}
	for _, m := range doc.Members {
		if !m.Healthy || m.Etcd == nil || m.Etcd.DBSize <= 0 {
			t.Errorf("status -o json: member %+v", m)
		}
	}
	fleet := `^` + regexp.QuoteMeta(p.ns) + ` +` + cluster + ` +3/3 +` + regexp.QuoteMeta(etcdVersion) + ` +True +False +none +`
	for _, args := range [][]string{{"status", "-A"}, {"list", "-A"}} {
		if out := p.must(ctx, t, args...); len(matching(out, fleet)) != 1 {
			t.Errorf("%s has no line %s", strings.Join(args, " "), fleet)
		}
	}
	out = p.must(ctx, t, "members", cluster)
	if rows := matching(out, `^`+cluster+`-\S+ +[0-9a-f]+ +Voter +\*? +https://\S+ +Ready +yes$`); len(rows) != 3 {
		t.Errorf("members shows %d ready voters, want 3", len(rows))
	}
	if out := p.must(ctx, t, "alarm", "list", cluster); !strings.Contains(out, "No alarm on "+cluster+".") {
		t.Errorf("alarm list: %s", out)
	}
}

// pluginSnapshot: snapshot saves a file whose sha256 the plugin prints,
// which etcdutl, when there is one, restores (it checks etcd's checksum in
// it) and finds keys and a revision in.
func pluginSnapshot(ctx context.Context, t *testing.T, p *pluginRunner, cluster string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, cluster+".db")
	out := p.must(ctx, t, "snapshot", cluster, file)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if len(data) < 4096 || !strings.Contains(out, fmt.Sprintf("(%d bytes), sha256 %s", len(data), hex.EncodeToString(sum[:]))) {
		t.Fatalf("%s holds %d bytes, sha256 %x; snapshot said:\n%s", file, len(data), sum, out)
	}
	etcdutl := localEtcdTool("etcdutl")
	if etcdutl == "" {
		t.Log("no etcdutl here: the snapshot's size and sha256 are checked, not its restore")
		return
	}
	cmd := exec.CommandContext(ctx, etcdutl, "snapshot", "restore", file, "--data-dir", filepath.Join(dir, "restored"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	var st struct {
		Revision int64 `json:"revision"`
		TotalKey int   `json:"totalKey"`
	}
	out2, err := exec.CommandContext(ctx, etcdutl, "snapshot", "status", file, "-w", "json").Output()
	if err != nil || json.Unmarshal(out2, &st) != nil || st.Revision <= 0 || st.TotalKey <= 0 {
		t.Fatalf("etcdutl snapshot status: %v, %+v\n%s", err, st, out2)
	}
}

// pluginMaintenance: compact refuses without a terminal or --yes, then
// compacts the history etcd has; alarm disarm finds nothing to disarm;
// defrag --wait has the operator defragment every member for the request.
func pluginMaintenance(ctx context.Context, t *testing.T, k *kube, p *pluginRunner, key client.ObjectKey, cli *clientv3.Client) {
	t.Helper()
	for i := range 20 {
		if _, err := cli.Put(ctx, fmt.Sprintf("plugin/history/%d", i), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := p.run(ctx, "compact", key.Name, "--keep", "10"); err == nil || !strings.Contains(out, "pass --yes") {
		t.Fatalf("compact without --yes and without a terminal: %v\n%s", err, out)
	}
	out := p.must(ctx, t, "compact", key.Name, "--keep", "10", "--yes", "--physical")
	if len(matching(out, `compacted up to revision \d+ \(of \d+\)`)) != 1 {
		t.Fatalf("compact: %s", out)
	}
	if _, err := cli.Get(ctx, "plugin/greeting", clientv3.WithRev(2)); err == nil || !strings.Contains(err.Error(), "compacted") {
		t.Errorf("a read at revision 2 after compact: %v, want it compacted", err)
	}
	if out := p.must(ctx, t, "alarm", "disarm", key.Name); !strings.Contains(out, "No NOSPACE alarm on "+key.Name) {
		t.Errorf("alarm disarm: %s", out)
	}
	out = p.must(ctx, t, "defrag", key.Name, "--yes", "--wait", "--timeout", "5m")
	if len(matching(out, `^  `+key.Name+`-\S+: .* -> .* given back\) in `)) != 3 {
		t.Errorf("defrag --wait does not show 3 members defragmented:\n%s", out)
	}
	c := getCluster(ctx, t, k, key)
	requested := 0
	for _, m := range c.Status.Maintenance.Members {
		if m.Reason == etcdv1.DefragForRequest {
			requested++
		}
	}
	if c.Status.Maintenance.LastRequest != c.Annotations[etcdv1.DefragAnnotation] || requested != 3 {
		t.Errorf("status.maintenance after defrag: %+v, annotation %q", c.Status.Maintenance, c.Annotations[etcdv1.DefragAnnotation])
	}
}

// pluginDiagnostics: the archive holds the objects, status, etcd's view,
// each member's etcd log, the operator's Pods and logs, and no key.
func pluginDiagnostics(ctx context.Context, t *testing.T, p *pluginRunner, cluster string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "diagnostics.tar.gz")
	p.must(ctx, t, "diagnostics", cluster, "-f", file)
	files := untar(t, file)
	want := []string{"README.txt", "objects/etcdcluster.yaml", "objects/etcdmembers.yaml", "objects/pods.yaml", "objects/events.yaml",
		"objects/services.yaml", "objects/persistentvolumeclaims.yaml", "objects/secrets.txt", "status.txt", "status.json",
		"etcd/member-list.json", "etcd/endpoint-status.json", "operator/deployments.yaml", "operator/pods.yaml"}
	operatorLogs := 0
	for name, data := range files {
		if strings.HasPrefix(name, "operator/logs/") && strings.HasSuffix(name, "/manager.log") {
			operatorLogs++
		}
		if strings.Contains(data, "PRIVATE KEY") {
			t.Errorf("%s holds a private key", name)
		}
	}
	for _, m := range archivedMembers(t, files) {
		want = append(want, "logs/"+m+"/"+resources.EtcdContainer+".log")
	}
	for _, name := range want {
		if _, ok := files[name]; !ok {
			t.Errorf("the diagnostics archive has no %s; README.txt:\n%s", name, files["README.txt"])
		}
	}
	if operatorLogs == 0 || !strings.Contains(files["objects/events.yaml"], "reason: ") {
		t.Errorf("%d operator logs, events:\n%s", operatorLogs, files["objects/events.yaml"])
	}
}

// archivedMembers are the member names in the archive's member list.
func archivedMembers(t *testing.T, files map[string]string) []string {
	t.Helper()
	var rows []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(files["etcd/member-list.json"]), &rows); err != nil || len(rows) != 3 {
		t.Errorf("etcd/member-list.json: %v, %+v", err, rows)
	}
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	return names
}

// untar is the files of a tar.gz by name, below its top folder.
func untar(t *testing.T, file string) map[string]string {
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
		_, name, _ := strings.Cut(h.Name, "/")
		files[name] = string(data)
	}
}

// pluginCompletion: with the script completion kubectl writes on PATH,
// kubectl's own completion of "kubectl raftsman status" lists the cluster.
func pluginCompletion(ctx context.Context, t *testing.T, p *pluginRunner, cluster string) {
	t.Helper()
	script := p.must(ctx, t, "completion", "kubectl")
	if err := os.WriteFile(filepath.Join(p.dir, "kubectl_complete-raftsman"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := p.kubectl(ctx, "__complete", "raftsman", "--kubeconfig", p.cfg.KubeconfigFile(), "-n", p.ns, "status", "")
	if err != nil || len(matching(out, `^`+cluster+`$`)) != 1 {
		t.Errorf("kubectl __complete raftsman status: %v\n%s", err, out)
	}
}

// pluginRotateCA: rotate-ca --wait has the operator replace the CA: the
// new one expires later, the request is recorded, the members restarted
// and the plugin reaches them with the new certificates.
func pluginRotateCA(ctx context.Context, t *testing.T, k *kube, p *pluginRunner, key client.ObjectKey) {
	t.Helper()
	before := getCluster(ctx, t, k, key).Status.TLS.CANotAfter
	p.must(ctx, t, "rotate-ca", key.Name, "--yes", "--wait", "--timeout", "10m")
	c := getCluster(ctx, t, k, key)
	if tls := c.Status.TLS; tls.CARotationRequest != c.Annotations[etcdv1.RotateCAAnnotation] || tls.CARotation != "" ||
		before == nil || tls.CANotAfter == nil || !tls.CANotAfter.After(before.Time) {
		t.Errorf("status.tls after rotate-ca: %+v (CA expired at %v before)", tls, before)
	}
	waitConverged(ctx, t, k, key, 3, 5*time.Minute)
	statusLeader(ctx, t, p, key.Name, 3)
}
