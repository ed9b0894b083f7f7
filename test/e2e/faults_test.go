//go:build e2e

package e2e

// Faults the robustness scenarios inject. The tests run on the node of the
// local cluster, as root, so they reach each member's etcd process and
// network namespace directly, as a node-level fault would.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	failpointsImage = "raftsman:failpoints"
	failpointPort   = 8079
)

// operatorPods lists the operator's Pods.
func (k *kube) operatorPods(ctx context.Context) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	err := k.c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabels{"app.kubernetes.io/name": "raftsman"})
	return pods.Items, err
}

// setOperatorImage runs the operator Deployment with image and, for the
// failpoints build, the address of its failpoint endpoint; it waits until
// one Pod of that image is ready.
func (k *kube) setOperatorImage(ctx context.Context, t *testing.T, image string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := k.c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "raftsman"}, d); err != nil {
			return err
		}
		ct := &d.Spec.Template.Spec.Containers[0]
		ct.Image = image
		env := ct.Env[:0]
		for _, e := range ct.Env {
			if e.Name != "RAFTSMAN_FAILPOINT_ADDR" {
				env = append(env, e)
			}
		}
		if image == failpointsImage {
			env = append(env, corev1.EnvVar{Name: "RAFTSMAN_FAILPOINT_ADDR", Value: fmt.Sprintf(":%d", failpointPort)})
		}
		ct.Env = env
		return k.c.Update(ctx, d)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, 3*time.Minute, "the operator running "+image, func() (bool, error) {
		pods, err := k.operatorPods(ctx)
		if err != nil {
			return false, err
		}
		ready := 0
		for _, p := range pods {
			if p.DeletionTimestamp != nil || p.Spec.Containers[0].Image != image {
				return false, nil
			}
			if podReady(&p) {
				ready++
			}
		}
		return ready == 1, nil
	})
}

// useFailpointOperator runs the failpoints build of the operator until t
// ends.
func (k *kube) useFailpointOperator(ctx context.Context, t *testing.T) {
	t.Helper()
	k.setOperatorImage(ctx, t, failpointsImage)
	t.Cleanup(func() { k.setOperatorImage(context.Background(), t, "raftsman:dev") })
}

// waitOperatorReady waits for a ready operator Pod.
func (k *kube) waitOperatorReady(ctx context.Context, t *testing.T) {
	t.Helper()
	waitFor(ctx, t, availableBound, "a ready operator Pod", func() (bool, error) {
		pods, err := k.operatorPods(ctx)
		for _, p := range pods {
			if p.DeletionTimestamp == nil && podReady(&p) {
				return true, nil
			}
		}
		return false, err
	})
}

// armFailpoint makes the operator die the next time it passes name. The
// operator may just be starting again after the last point: it waits for
// a ready Pod.
func (k *kube) armFailpoint(ctx context.Context, name string) error {
	// A container that died several times in a row restarts after the
	// kubelet's back-off, which grows to minutes.
	var lastErr error
	err := poll(ctx, availableBound, func() (bool, error) {
		lastErr = k.armOnce(ctx, name)
		return lastErr == nil, nil
	})
	if err != nil {
		return fmt.Errorf("%w: %v; operator Pods: %s", err, lastErr, k.describeOperator(ctx))
	}
	return nil
}

// describeOperator says in one line how the operator's Pods are.
func (k *kube) describeOperator(ctx context.Context) string {
	pods, err := k.operatorPods(ctx)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			state := "running"
			if w := cs.State.Waiting; w != nil {
				state = w.Reason
			}
			out = append(out, fmt.Sprintf("%s ready=%v restarts=%d %s", p.Name, cs.Ready, cs.RestartCount, state))
		}
	}
	return strings.Join(out, "; ")
}

// disarmFailpoint disarms a point that was not reached.
func (k *kube) disarmFailpoint(ctx context.Context, name string) error {
	return k.failpointRequest(ctx, http.MethodDelete, name, "")
}

func (k *kube) armOnce(ctx context.Context, name string) error {
	return k.failpointRequest(ctx, http.MethodPut, name, "panic")
}

func (k *kube) failpointRequest(ctx context.Context, method, name, body string) error {
	pods, err := k.operatorPods(ctx)
	if err != nil {
		return err
	}
	for _, p := range pods {
		if p.DeletionTimestamp != nil || !podReady(&p) || p.Status.PodIP == "" {
			continue
		}
		url := fmt.Sprintf("http://%s:%d/failpoints/%s", p.Status.PodIP, failpointPort, name)
		req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s %s: %s", method, name, resp.Status)
		}
		return nil
	}
	return fmt.Errorf("no ready operator Pod for failpoint %s", name)
}

// operatorRestarts is how often the operator's container restarted.
func (k *kube) operatorRestarts(ctx context.Context) (int32, error) {
	pods, err := k.operatorPods(ctx)
	if err != nil {
		return 0, err
	}
	var n int32
	for _, p := range pods {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n, nil
}

// operatorLog is the log of the operator container's current or previous
// run.
func (k *kube) operatorLog(ctx context.Context, previous bool) (string, error) {
	pods, err := k.operatorPods(ctx)
	if err != nil {
		return "", err
	}
	if len(pods) == 0 {
		return "", fmt.Errorf("no operator Pod")
	}
	raw, err := k.cs.CoreV1().Pods(operatorNamespace).GetLogs(pods[0].Name, &corev1.PodLogOptions{Container: "manager", Previous: previous}).Do(ctx).Raw()
	return string(raw), err
}

// etcdPID finds the etcd process of a member on this node by its --name.
func etcdPID(member string) (int, error) {
	want := []byte("--name=" + member + "\x00")
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.HasPrefix(cmd, []byte("/usr/local/bin/etcd\x00")) || !bytes.Contains(cmd, want) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err == nil && strings.Contains(string(stat), ") Z ") {
			continue // a zombie, reaped late
		}
		return pid, nil
	}
	return 0, fmt.Errorf("no etcd process of member %s on this node", member)
}

// partitionRule drops the member's peer traffic both ways; client traffic
// still reaches it, as when a member loses its peers but not its clients.
var partitionRule = [][]string{
	{"INPUT", "-p", "tcp", "--dport", "2380", "-j", "DROP"},
	{"OUTPUT", "-p", "tcp", "--dport", "2380", "-j", "DROP"},
}

// partition cuts a member off from its peers with packet rules inside its
// network namespace; heal removes them.
func partition(ctx context.Context, member string) error { return peerRules(ctx, member, "-I") }
func heal(ctx context.Context, member string) error      { return peerRules(ctx, member, "-D") }

func peerRules(ctx context.Context, member, op string) error {
	pid, err := etcdPID(member)
	if err != nil {
		return err
	}
	for _, r := range partitionRule {
		args := append([]string{"-t", strconv.Itoa(pid), "-n", "iptables", "-w", op}, r...)
		if out, err := exec.CommandContext(ctx, "nsenter", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("nsenter %v: %v: %s", args, err, out)
		}
	}
	return nil
}

// pause stops a member's etcd process (SIGSTOP), resume lets it go on.
func pause(member string) (int, error) {
	pid, err := etcdPID(member)
	if err != nil {
		return 0, err
	}
	return pid, syscall.Kill(pid, syscall.SIGSTOP)
}

func resume(pid int) error { return syscall.Kill(pid, syscall.SIGCONT) }
