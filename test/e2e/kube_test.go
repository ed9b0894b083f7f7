//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/internal/manifest"
	"github.com/raftsman/raftsman/internal/scrape"
)

// kube is a typed client and a clientset for the cluster under test.
type kube struct {
	c  client.Client
	cs kubernetes.Interface
}

func newKube(cfg *envconf.Config) (*kube, error) {
	rc := cfg.Client().RESTConfig()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &kube{c: c, cs: cs}, nil
}

func mustKube(t *testing.T, cfg *envconf.Config) *kube {
	t.Helper()
	k, err := newKube(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// applyFile server-side applies a manifest, like kubectl apply --server-side.
func (k *kube) applyFile(ctx context.Context, path string) error {
	return manifest.ApplyFile(ctx, k.c, path, "raftsman-e2e")
}

const operatorNamespace = "raftsman-system"

// restartOperator replaces the operator's Pods so that they run the image
// just built, and waits for the new one to be ready.
func (k *kube) restartOperator(ctx context.Context) error {
	if err := k.c.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(operatorNamespace),
		client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}, client.GracePeriodSeconds(0)); err != nil {
		return err
	}
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		pods := &corev1.PodList{}
		if err := k.c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && podReady(&p) {
				return true, nil
			}
		}
		return false, nil
	})
}

// metricsReaderManifest is the service account Prometheus scrapes the
// operator with (config/prometheus), allowed to get /metrics and nothing
// else; the tests scrape with it too. The operator's own account may not.
const (
	metricsReaderManifest = "config/prometheus/metrics-reader.yaml"
	metricsReader         = "raftsman-metrics-reader"
)

// operatorMetrics scrapes the operator's /metrics as Prometheus would: over
// HTTPS with the token of the metrics reader's service account.
func (k *kube) operatorMetrics(ctx context.Context) (string, error) {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"}); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) {
			return scrape.Operator(ctx, k.cs, &p, operatorNamespace, metricsReader)
		}
	}
	return "", fmt.Errorf("no ready operator Pod")
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// poll calls fn every 200 ms until it is done, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, fn func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		done, err := fn()
		if done {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("timed out after %v: %w", timeout, last)
			}
			return fmt.Errorf("timed out after %v", timeout)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitFor fails the test when fn is not done within timeout.
func waitFor(ctx context.Context, t *testing.T, timeout time.Duration, what string, fn func() (bool, error)) {
	t.Helper()
	if err := poll(ctx, timeout, fn); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// parallel runs the test beside the other parallel ones, after every
// serial one has ended (go test -parallel bounds how many run at once): it
// works in namespaces of its own and leaves the operator's install as it
// is, so the one install serves them all.
func parallel(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// serial is for a test that needs the local cluster's operator to itself:
// it scales, restarts or rebuilds it, or installs another. go test runs the
// tests that do not call t.Parallel one at a time before the parallel ones
// start, so nothing else runs meanwhile. why is logged.
func serial(t *testing.T, why string) {
	t.Helper()
	t.Logf("runs alone: %s", why)
}

// testEach runs each feature as a parallel subtest of a parallel test,
// each in a namespace of its own.
func testEach(t *testing.T, feats ...features.Feature) {
	t.Helper()
	parallel(t)
	for _, f := range feats {
		t.Run(f.Name(), func(t *testing.T) {
			t.Parallel()
			testenv.Test(t, f)
		})
	}
}

type nsKey struct{}

// namespaceOf is the namespace of the running test.
func namespaceOf(ctx context.Context) string { return ctx.Value(nsKey{}).(string) }

// createNamespace gives each test its own namespace, enforcing the
// restricted Pod Security Standard so every Pod the operator makes is
// checked against it.
func createNamespace(ctx context.Context, cfg *envconf.Config, t *testing.T) (context.Context, error) {
	k, err := newKube(cfg)
	if err != nil {
		return ctx, err
	}
	name, err := k.newNamespace(ctx)
	if err != nil {
		return ctx, err
	}
	t.Logf("namespace %s", name)
	return context.WithValue(ctx, nsKey{}, name), nil
}

// newNamespace makes a namespace of a random name, marked as the tests'
// and enforcing the restricted Pod Security Standard.
func (k *kube) newNamespace(ctx context.Context) (string, error) {
	name := "e2e-" + utilrand.String(6)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		testNamespaceLabel:                   "true",
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	return name, k.c.Create(ctx, ns)
}

// testNamespaceLabel marks the namespaces the tests make, so that a run
// deletes those a killed one left behind.
const testNamespaceLabel = "e2e.raftsman.io/test-namespace"

func deleteNamespace(ctx context.Context, cfg *envconf.Config, t *testing.T) (context.Context, error) {
	k, err := newKube(cfg)
	if err != nil {
		return ctx, err
	}
	return ctx, k.removeNamespace(ctx, t, namespaceOf(ctx))
}

// removeNamespace deletes a test's namespace, its clusters first so that
// their finalizers are handled while the operator still sees them; what
// a person would look at is logged first when the test failed.
func (k *kube) removeNamespace(ctx context.Context, t *testing.T, ns string) error {
	if t.Failed() {
		k.dump(ctx, t, ns)
	}
	_ = k.c.DeleteAllOf(ctx, &etcdv1.EtcdCluster{}, client.InNamespace(ns))
	return client.IgnoreNotFound(k.c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
}

// dump logs what a person would look at when a test failed.
func (k *kube) dump(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	clusters := &etcdv1.EtcdClusterList{}
	if err := k.c.List(ctx, clusters, client.InNamespace(ns)); err == nil {
		for _, c := range clusters.Items {
			t.Logf("cluster %s: replicas %v status %+v", c.Name, ptr.Deref(c.Spec.Replicas, 0), c.Status)
		}
	}
	members := &etcdv1.EtcdMemberList{}
	if err := k.c.List(ctx, members, client.InNamespace(ns)); err == nil {
		for _, m := range members.Items {
			t.Logf("member %s: deleting=%v status %+v", m.Name, m.DeletionTimestamp != nil, m.Status)
		}
	}
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(ns)); err == nil {
		for _, p := range pods.Items {
			t.Logf("pod %s: phase %s ready %v ip %s", p.Name, p.Status.Phase, podReady(&p), p.Status.PodIP)
		}
	}
	evs, err := k.cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, e := range evs.Items {
			t.Logf("event %s %s/%s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	}
	opPods := &corev1.PodList{}
	if err := k.c.List(ctx, opPods, client.InNamespace(operatorNamespace)); err == nil {
		for _, p := range opPods.Items {
			logs, err := k.cs.CoreV1().Pods(operatorNamespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](60)}).Do(ctx).Raw()
			if err == nil {
				t.Logf("operator %s logs:\n%s", p.Name, logs)
			}
		}
	}
}

// restrictedContainer makes a container pass the restricted Pod Security
// Standard.
func restrictedContainer(c corev1.Container) corev1.Container {
	c.SecurityContext = &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To[int64](65532),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	c.ImagePullPolicy = corev1.PullIfNotPresent
	return c
}

// runPod runs a one-shot Pod to completion and returns its output.
func (k *kube) runPod(ctx context.Context, ns, image string, command ...string) (string, error) {
	return k.runPodSpec(ctx, ns, corev1.PodSpec{
		Containers: []corev1.Container{restrictedContainer(corev1.Container{Name: "run", Image: image, Command: command})},
	})
}

// runPodSpec runs a one-shot Pod with the given spec to completion and
// returns its output.
func (k *kube) runPodSpec(ctx context.Context, ns string, spec corev1.PodSpec) (string, error) {
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "run-", Namespace: ns}, Spec: spec}
	if err := k.c.Create(ctx, pod); err != nil {
		return "", err
	}
	defer func() { _ = k.c.Delete(context.Background(), pod) }()
	var phase corev1.PodPhase
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		p := &corev1.Pod{}
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(pod), p); err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, lerr := k.cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).Do(ctx).Raw()
	out := strings.TrimSpace(string(logs))
	switch {
	case err != nil:
		return out, fmt.Errorf("pod %s: %w", pod.Name, err)
	case lerr != nil:
		return "", lerr
	case phase == corev1.PodFailed:
		return out, fmt.Errorf("pod %s failed: %s", pod.Name, out)
	}
	return out, nil
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func ignoreAlreadyExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
