//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// pluginRunner runs kubectl-raftsman the way users do: kubectl finds it on
// PATH and runs it for "kubectl raftsman".
type pluginRunner struct {
	cfg  *envconf.Config
	ns   string
	dir  string // the plugin's folder
	path string // PATH with the plugin's folder first
}

// buildPlugin builds cmd/kubectl-raftsman into a folder of its own.
func buildPlugin(ctx context.Context, t *testing.T, cfg *envconf.Config) *pluginRunner {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-raftsman"), "./cmd/kubectl-raftsman")
	cmd.Dir = repoRoot
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/kubectl-raftsman: %v\n%s", err, out)
	}
	return &pluginRunner{cfg: cfg, ns: namespaceOf(ctx), dir: dir, path: dir + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// run runs kubectl raftsman with args in the test's namespace and returns
// its output, stdout then stderr.
func (p *pluginRunner) run(ctx context.Context, args ...string) (string, error) {
	// kubectl takes no flags before a plugin's name: they go to the plugin.
	return p.kubectl(ctx, append([]string{"raftsman", "--kubeconfig", p.cfg.KubeconfigFile(), "-n", p.ns}, args...)...)
}

// kubectl runs kubectl with args and the plugin's folder first on PATH,
// and returns its output, stdout then stderr.
func (p *pluginRunner) kubectl(ctx context.Context, args ...string) (string, error) {
	bin := "kubectl"
	if m, _ := filepath.Glob(filepath.Join(repoRoot, "_output/bin/kubernetes-*/kubectl")); len(m) > 0 {
		bin = m[0]
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PATH="+p.path)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String() + stderr.String(), err
}

func (p *pluginRunner) must(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	start := time.Now()
	out, err := p.run(ctx, args...)
	if err != nil {
		t.Fatalf("kubectl raftsman %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("kubectl raftsman %s (%.1fs):\n%s", strings.Join(args, " "), time.Since(start).Seconds(), out)
	return out
}

// localEtcdctl is the etcdctl the local cluster was built with, or one on
// PATH; "" when there is none.
func localEtcdctl() string { return localEtcdTool("etcdctl") }

// localEtcdTool is etcdctl or etcdutl of the local cluster's etcd build,
// or one on PATH; "" when there is none.
func localEtcdTool(name string) string {
	if p := filepath.Join(repoRoot, "_output/bin/etcd-v"+etcdVersion, name); fileExists(p) {
		return p
	}
	p, _ := exec.LookPath(name)
	return p
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// matching are the lines of out that match re.
func matching(out, re string) [][]string {
	var got [][]string
	r := regexp.MustCompile(re)
	for _, l := range strings.Split(out, "\n") {
		if m := r.FindStringSubmatch(l); m != nil {
			got = append(got, m)
		}
	}
	return got
}

// statusLeader runs status until it shows n voters, each Ready and healthy
// with a database size from etcd, one leader starred and named, every
// member answering and no alarm, and returns that leader. A cluster the
// operator calls converged may still have a Pod whose readiness probe has
// not passed yet, so status is asked again for up to a minute.
func statusLeader(ctx context.Context, t *testing.T, p *pluginRunner, cluster string, n int) (string, string) {
	t.Helper()
	var leader, out string
	waitFor(ctx, t, time.Minute, "status of "+cluster+" to show "+fmt.Sprint(n)+" ready voters and a leader", func() (bool, error) {
		var err error
		out, err = p.run(ctx, "status", cluster)
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, out)
		}
		leader, err = checkStatus(out, cluster, n)
		return err == nil, err
	})
	t.Logf("kubectl raftsman status %s:\n%s", cluster, out)
	return leader, out
}

// checkStatus is the leader status output names, or what it lacks.
func checkStatus(out, cluster string, n int) (string, error) {
	rows := matching(out, `^(`+cluster+`-\S+) +[0-9a-f]+ +Voter +(\*?) +`+regexp.QuoteMeta(etcdVersion)+` +Ready +yes +(\d+\.\d [KMG]iB|\d+ B) +`)
	leaders := matching(out, `^Leader: +(`+cluster+`-\S+) \([0-9a-f]+\)$`)
	if len(rows) != n || len(leaders) != 1 {
		return "", fmt.Errorf("status shows %d ready voters with database sizes and %d leader lines, want %d and 1:\n%s", len(rows), len(leaders), n, out)
	}
	starred := 0
	for _, r := range rows {
		if r[2] == "*" {
			starred++
			if r[1] != leaders[0][1] {
				return "", fmt.Errorf("the starred member %s is not the leader %s:\n%s", r[1], leaders[0][1], out)
			}
		}
	}
	if starred != 1 || strings.Contains(out, "did not answer") || len(matching(out, `^Alarms: +none$`)) != 1 {
		return "", fmt.Errorf("want one leader, every member answering, no alarm:\n%s", out)
	}
	return leaders[0][1], nil
}

func getValue(ctx context.Context, t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	var resp *clientv3.GetResponse
	waitFor(ctx, t, time.Minute, "get "+key, func() (bool, error) {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		resp, err = cli.Get(c, key)
		return err == nil, err
	})
	if len(resp.Kvs) != 1 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// TestKubectlPlugin drives a 3-member cluster with nothing but the kubectl
// plugin, built from source and run through kubectl, and checks each verb
// against the cluster itself: status shows the members and leader etcd
// reports; etcdctl through the plugin's port-forwards writes a key the
// test's own client reads, and reads it back; move-leader moves the
// leadership etcd reports; version, status -o json, list -A, members and
// alarm list read what the cluster is; snapshot saves a snapshot etcdutl
// restores; compact compacts (and refuses without --yes), defrag has the
// operator defragment every member, alarm disarm finds nothing to do;
// diagnostics writes its archive; kubectl completes cluster names through
// kubectl_complete-raftsman; rotate-ca has the operator replace the CA;
// backup --wait completes into S3; restore --wait starts a new cluster with
// that key; suspend stops every Pod and resume brings the key back.
func TestKubectlPlugin(t *testing.T) {
	parallel(t)
	f := features.New("kubectl raftsman").
		Assess("every verb", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			p := buildPlugin(ctx, t, cfg)
			c := newCluster(ns, "plug", 3)
			// A schedule that never fires in the test: backup takes its destination.
			c.Spec.Backup = &etcdv1.ClusterBackupSpec{Schedule: "0 0 1 1 *", Destination: s3srv.destination(ctx, t, k, "plugin-test/")}
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			cli := etcdClient(ctx, t, k, key)

			leader, out := statusLeader(ctx, t, p, "plug", 3)
			for _, want := range []string{`^Certificates: +client +plug-client-tls +CN=root, expires `, `^Available +True +QuorumHealthy `,
				`^Version: +desired ` + regexp.QuoteMeta(etcdVersion) + `, running `} {
				if len(matching(out, want)) != 1 {
					t.Errorf("status has no line %s", want)
				}
			}

			if etcdctl := localEtcdctl(); etcdctl != "" {
				p.must(ctx, t, "etcdctl", "plug", "--etcdctl", etcdctl, "--", "put", "plugin/greeting", "hello")
				if v := getValue(ctx, t, cli, "plugin/greeting"); v != "hello" {
					t.Fatalf("plugin/greeting is %q after etcdctl put through the plugin, want hello", v)
				}
				out = p.must(ctx, t, "etcdctl", "plug", "--etcdctl", etcdctl, "--", "get", "plugin/greeting", "--print-value-only")
				if strings.TrimSpace(out) != "hello" {
					t.Fatalf("etcdctl get through the plugin: %q, want hello", out)
				}
				if out, err := p.run(ctx, "etcdctl", "plug", "--etcdctl", etcdctl, "--", "get"); err == nil {
					t.Fatalf("etcdctl get without a key succeeded: %s", out)
				}
			} else {
				t.Log("no etcdctl here: the etcdctl verb is not tried")
				if _, err := cli.Put(ctx, "plugin/greeting", "hello"); err != nil {
					t.Fatal(err)
				}
			}

			var follower string
			for _, m := range getCluster(ctx, t, k, key).Status.Members {
				if m.Name != leader {
					follower = m.Name
				}
			}
			p.must(ctx, t, "move-leader", "plug", "--to", follower)
			waitFor(ctx, t, 30*time.Second, follower+" leading", func() (bool, error) {
				st, err := cli.Status(ctx, cli.Endpoints()[0])
				if err != nil {
					return false, err
				}
				ids := memberIDs(ctx, t, cli)
				return st.Leader == ids[follower], fmt.Errorf("leader %x, %s is %x", st.Leader, follower, ids[follower])
			})
			waitFor(ctx, t, 30*time.Second, "status to show "+follower+" leading", func() (bool, error) {
				out, err := p.run(ctx, "status", "plug")
				got := matching(out, `^Leader: +(\S+) `)
				return err == nil && len(got) == 1 && got[0][1] == follower, fmt.Errorf("%v: %s", err, out)
			})

			// The verbs of an incident; rotate-ca last: the test's client
			// trusts the old CA only, and is not used after it.
			pluginReadVerbs(ctx, t, p, "plug")
			pluginSnapshot(ctx, t, p, "plug")
			pluginMaintenance(ctx, t, k, p, key, cli)
			pluginDiagnostics(ctx, t, p, "plug")
			pluginCompletion(ctx, t, p, "plug")
			pluginRotateCA(ctx, t, k, p, key)

			out = p.must(ctx, t, "backup", "plug", "--name", "plug-manual", "--wait")
			b := &etcdv1.EtcdBackup{}
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "plug-manual"}, b); err != nil {
				t.Fatal(err)
			}
			if !meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1.ConditionComplete) || !strings.Contains(out, "etcdbackup plug-manual Complete") ||
				b.Spec.Destination.S3 == nil || b.Spec.Destination.S3.Prefix != "plugin-test/" {
				t.Fatalf("backup %+v; output %s", b, out)
			}
			objs, err := s3srv.objects(ctx, "plugin-test/")
			if err != nil || objs["plugin-test/"+b.Status.Key].Size != b.Status.Size {
				t.Fatalf("S3 holds %v (%v), want %s of %d bytes", objs, err, b.Status.Key, b.Status.Size)
			}

			p.must(ctx, t, "restore", "plug", "--from", "plug-manual", "--to", "plug-restored", "--replicas", "1", "--wait", "--timeout", "5m")
			rkey := client.ObjectKey{Namespace: ns, Name: "plug-restored"}
			if v := getValue(ctx, t, etcdClient(ctx, t, k, rkey), "plugin/greeting"); v != "hello" {
				t.Fatalf("plugin/greeting is %q in the restored cluster, want hello", v)
			}
			statusLeader(ctx, t, p, "plug-restored", 1)

			p.must(ctx, t, "suspend", "plug", "--wait", "--timeout", "5m")
			waitFor(ctx, t, 2*time.Minute, "no etcd Pod of plug", func() (bool, error) {
				n := len(clusterPods(ctx, t, k, ns, "plug"))
				return n == 0, fmt.Errorf("%d Pods", n)
			})
			out = p.must(ctx, t, "status", "plug")
			if len(matching(out, `^Suspend: +spec\.suspend is true$`)) != 1 || len(matching(out, `^plug-\S+ .* none +`)) != 3 {
				t.Fatalf("status of the suspended cluster:\n%s", out)
			}
			p.must(ctx, t, "resume", "plug", "--wait", "--timeout", "5m")
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			if v := getValue(ctx, t, etcdClient(ctx, t, k, key), "plugin/greeting"); v != "hello" {
				t.Fatalf("plugin/greeting is %q after resume, want hello", v)
			}
			statusLeader(ctx, t, p, "plug", 3)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}
