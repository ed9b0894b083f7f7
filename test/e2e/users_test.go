//go:build e2e

package e2e

// A tenant control plane as the proof of EtcdUser: two real kube-apiservers
// (the local cluster's own binary, run on the test machine) share one
// Raftsman cluster, each as its own EtcdUser limited to its own prefix.
// Each creates objects; neither user's certificate reaches the other's
// prefix (checked with etcdctl); both keep serving through a rolling etcd
// upgrade, and every object acknowledged before and during it is there
// after.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// maxServingGap is the longest a tenant's API server may go without one
// acknowledged write during the rolling upgrade: a member restarting
// breaks its connections, which etcd's client opens again at once.
const maxServingGap = 30 * time.Second

func TestTenantControlPlanes(t *testing.T) {
	parallel(t)
	f := features.New("tenant control planes").
		Assess("two kube-apiservers on one cluster, each limited to its prefix, serve through a rolling upgrade", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			apiserver := localBinary(t, "kubernetes-"+kubeVersion(t), "kube-apiserver")
			etcdctl := localBinary(t, "etcd-v"+etcdVersion, "etcdctl")
			k := mustKube(t, cfg)
			ns := namespaceOf(ctx)
			c := newCluster(ns, "tenants", 3)
			c.Spec.Version, c.Spec.Auth.Enabled = etcdOldVersion, true
			if err := k.c.Create(ctx, c); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKeyFromObject(c)
			waitConverged(ctx, t, k, key, 3, 3*time.Minute)
			// The members' serving certificate names 127.0.0.1: the API
			// servers and etcdctl reach the client Service through a local
			// forwarder and check the certificate as they would in the cluster.
			endpoint := "https://" + k.forwardToService(ctx, t, ns, resources.ClientServiceName(c.Name))
			tenants := map[string]*tenantAPIServer{}
			creds := map[string]map[string][]byte{}
			for _, name := range []string{"a", "b"} {
				creds[name] = k.readyUser(ctx, t, ns, c.Name, "tenant-"+name, "/tenants/"+name+"/")
				tenants[name] = startTenantAPIServer(ctx, t, apiserver, endpoint, "/tenants/"+name, creds[name])
			}
			for name, ta := range tenants {
				ta.mustCreate(ctx, t, "before-upgrade-"+name)
			}
			checkIsolation(ctx, t, etcdctl, endpoint, creds)
			rollingUpgradeWhileServing(ctx, t, k, key, tenants)
			checkIsolation(ctx, t, etcdctl, endpoint, creds)
			return ctx
		}).Feature()
	testenv.Test(t, f)
}

// readyUser creates an EtcdUser with read-write access to prefix, waits
// for it to be Ready and returns its Secret's data.
func (k *kube) readyUser(ctx context.Context, t *testing.T, ns, cluster, name, prefix string) map[string][]byte {
	t.Helper()
	u := &etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: etcdv1.EtcdUserSpec{
		ClusterName: cluster, Permissions: []etcdv1.KeyPermission{{Prefix: prefix, Access: etcdv1.KeyAccessReadWrite}}}}
	if err := k.c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 2*time.Minute, name+" Ready", func() (bool, error) {
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(u), u); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(u.Status.Conditions, etcdv1.ConditionReady)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != u.Generation {
			return false, fmt.Errorf("Ready = %+v", cond)
		}
		return true, nil
	})
	return k.secretData(ctx, t, ns, u.Status.SecretName)
}

// checkIsolation: with its own certificate, each tenant reads and writes
// its prefix and is refused the other's and every key outside its own.
func checkIsolation(ctx context.Context, t *testing.T, etcdctl, endpoint string, creds map[string]map[string][]byte) {
	t.Helper()
	for name, other := range map[string]string{"a": "b", "b": "a"} {
		run := etcdctlAs(t, etcdctl, endpoint, creds[name])
		if out, err := run(ctx, "get", "/tenants/"+name+"/", "--prefix", "--keys-only"); err != nil || !strings.Contains(out, "/tenants/"+name+"/configmaps/") {
			t.Errorf("tenant %s cannot list its own ConfigMaps: %v: %s", name, err, out)
		}
		for _, args := range [][]string{
			{"get", "/tenants/" + other + "/", "--prefix", "--keys-only"},
			{"put", "/tenants/" + other + "/intruder", "x"},
			{"del", "/tenants/" + other + "/", "--prefix"},
			{"get", "/", "--prefix", "--keys-only"},
			{"user", "list"},
		} {
			out, err := run(ctx, args...)
			if err == nil || !strings.Contains(out, "permission denied") {
				t.Errorf("tenant %s: etcdctl %s: want permission denied, got %v: %s", name, strings.Join(args, " "), err, out)
			}
		}
	}
}

// etcdctlAs runs etcdctl with a user's certificate.
func etcdctlAs(t *testing.T, etcdctl, endpoint string, creds map[string][]byte) func(context.Context, ...string) (string, error) {
	t.Helper()
	dir := writeCreds(t, creds)
	return func(ctx context.Context, args ...string) (string, error) {
		all := append([]string{"--endpoints=" + endpoint, "--command-timeout=10s",
			"--cert=" + filepath.Join(dir, pki.CertKey), "--key=" + filepath.Join(dir, pki.KeyKey), "--cacert=" + filepath.Join(dir, pki.CAKey)}, args...)
		out, err := exec.CommandContext(ctx, etcdctl, all...).CombinedOutput()
		return string(out), err
	}
}

// rollingUpgradeWhileServing moves the cluster to the suite's etcd version
// while each tenant writes a ConfigMap every 200 ms, then checks that
// neither stopped serving for long and that every acknowledged write is
// there.
func rollingUpgradeWhileServing(ctx context.Context, t *testing.T, k *kube, key client.ObjectKey, tenants map[string]*tenantAPIServer) {
	t.Helper()
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, ta := range tenants {
		wg.Add(1)
		go func() { defer wg.Done(); ta.writeUntil(wctx) }()
	}
	c := getCluster(ctx, t, k, key)
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Version = etcdVersion
	if err := k.c.Patch(ctx, c, patch); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(ctx, t, rollBound, "the upgrade to "+etcdVersion, func() (bool, error) {
		ok, err := k.converged(ctx, key, 3, c)
		if !ok || c.Status.Version != etcdVersion {
			return false, fmt.Errorf("converged %t, version %s: %v", ok, c.Status.Version, err)
		}
		return true, nil
	})
	t.Logf("rolled to %s in %.1fs", etcdVersion, time.Since(start).Seconds())
	stop()
	wg.Wait()
	for name, ta := range tenants {
		t.Logf("tenant %s: %d writes acknowledged, %d failed, longest gap %.1fs", name, len(ta.acked), ta.failed, ta.gap.Seconds())
		if ta.gap > maxServingGap || len(ta.acked) == 0 {
			t.Errorf("tenant %s stopped serving for %.1fs during the upgrade", name, ta.gap.Seconds())
		}
		ta.mustCreate(ctx, t, "after-upgrade-"+name)
		for _, cm := range append(ta.acked, "before-upgrade-"+name) {
			if _, err := ta.cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, cm, metav1.GetOptions{}); err != nil {
				t.Errorf("tenant %s lost ConfigMap %s: %v", name, cm, err)
			}
		}
	}
}

// tenantAPIServer is one kube-apiserver process this test started.
type tenantAPIServer struct {
	cs *kubernetes.Clientset
	// acked are the ConfigMaps writeUntil created; failed counts the
	// writes refused; gap is the longest time without an acknowledged one.
	acked  []string
	failed int
	gap    time.Duration
}

func (ta *tenantAPIServer) create(ctx context.Context, name string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"written": time.Now().UTC().Format(time.RFC3339Nano)}}
	_, err := ta.cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func (ta *tenantAPIServer) mustCreate(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	waitFor(ctx, t, time.Minute, "ConfigMap "+name, func() (bool, error) {
		err := ta.create(ctx, name)
		return err == nil, err
	})
}

func (ta *tenantAPIServer) writeUntil(ctx context.Context) {
	last := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("during-upgrade-%d", i)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := ta.create(wctx, name)
		cancel()
		now := time.Now()
		switch {
		case err == nil:
			ta.acked = append(ta.acked, name)
			last = now
		case ctx.Err() == nil:
			ta.failed++
		}
		ta.gap = max(ta.gap, now.Sub(last))
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startTenantAPIServer runs a kube-apiserver with the fewest flags that
// serve: etcd at endpoint under prefix with the user's certificate, a
// self-signed serving certificate, a generated service-account key, every
// request allowed. It is stopped, by its own process, when the test ends.
func startTenantAPIServer(ctx context.Context, t *testing.T, bin, endpoint, prefix string, creds map[string][]byte) *tenantAPIServer {
	t.Helper()
	dir := writeCreds(t, creds)
	saKey := writeServiceAccountKey(t, dir)
	// With the AlwaysAllow authorizer the API server turns anonymous
	// requests off: the test authenticates with a static token.
	token := "tenant-test-token"
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+",tenant-test,tenant-test,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := freeLocalPort(t)
	log, err := os.Create(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--etcd-servers="+endpoint, "--etcd-prefix="+prefix,
		"--etcd-certfile="+filepath.Join(dir, pki.CertKey), "--etcd-keyfile="+filepath.Join(dir, pki.KeyKey), "--etcd-cafile="+filepath.Join(dir, pki.CAKey),
		// Compaction is etcd's own (--auto-compaction-*): the API server's
		// would write a key outside its prefix.
		"--etcd-compaction-interval=0",
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port), "--cert-dir="+filepath.Join(dir, "serving"),
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--authorization-mode=AlwaysAllow", "--token-auth-file="+tokens, "--service-cluster-ip-range=10.96.0.0/24", "--endpoint-reconciler-type=none")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		_ = log.Close()
		if t.Failed() {
			if b, err := os.ReadFile(log.Name()); err == nil {
				t.Logf("kube-apiserver %s log (end):\n%s", prefix, lastLines(string(b), 30))
			}
		}
	})
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: fmt.Sprintf("https://127.0.0.1:%d", port), BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 2*time.Minute, "kube-apiserver "+prefix+" ready", func() (bool, error) {
		select {
		case <-exited:
			t.Fatalf("kube-apiserver %s exited before it was ready (its log follows)", prefix)
		default:
		}
		_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil, err
	})
	return &tenantAPIServer{cs: cs}
}

// writeCreds writes a user's Secret's data to files of a temporary folder.
func writeCreds(t *testing.T, creds map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{pki.CertKey, pki.KeyKey, pki.CAKey} {
		if err := os.WriteFile(filepath.Join(dir, k), creds[k], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeServiceAccountKey writes a new ECDSA key, which the API server
// takes both to sign and to check service-account tokens.
func writeServiceAccountKey(t *testing.T, dir string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// SEC 1 ("EC PRIVATE KEY"): the API server reads the public key for
	// --service-account-key-file from it, which it does not from PKCS #8.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// forwardToService listens on a local port and forwards each connection
// to the Service's cluster IP; it returns the local address. The
// listener closes when the test ends.
func (k *kube) forwardToService(ctx context.Context, t *testing.T, ns, name string) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatal(err)
	}
	target := net.JoinHostPort(svc.Spec.ClusterIP, fmt.Sprint(etcdv1.ClientPort))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go forward(conn, target)
		}
	}()
	return l.Addr().String()
}

func forward(conn net.Conn, target string) {
	defer conn.Close()
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, conn); done <- struct{}{} }()
	go func() { _, _ = io.Copy(conn, up); done <- struct{}{} }()
	<-done
}

func freeLocalPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// localBinary is a binary the project builds for the local cluster, under
// _output/bin/<dir>/.
func localBinary(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(repoRoot, "_output", "bin", dir, name)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is not built: make cluster-up builds it", path)
	}
	return path
}

// kubeVersion is the local cluster's Kubernetes version.
func kubeVersion(t *testing.T) string {
	t.Helper()
	if v := os.Getenv("KUBE_VERSION"); v != "" {
		return v
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, "hack", "cluster", "versions.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`KUBE_VERSION=\$\{KUBE_VERSION:-(v[0-9.]+)\}`).FindSubmatch(b)
	if m == nil {
		t.Fatal("no KUBE_VERSION in hack/cluster/versions.sh")
	}
	return string(m[1])
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
