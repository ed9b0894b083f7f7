//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/e2e-framework/pkg/envconf"
	"sigs.k8s.io/e2e-framework/pkg/features"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// TestCalmClusterPollAsksOneMember checks, on etcd's own request counters,
// that once a poll has found a 3-member cluster calm its next polls ask the
// member list and one member's status, not every member's (polls.go,
// lightLook). The operator polls a calm cluster about 1m after it formed (a
// look at every member, which counts it calm) and 2m after that: the test
// waits up to 5 minutes for a look that asked fewer statuses than members.
func TestCalmClusterPollAsksOneMember(t *testing.T) {
	f := features.New("calm polls").
		Assess("a calm 3-member cluster's poll asks the member list and one member's status", func(ctx context.Context, t *testing.T, cfg *envconf.Config) context.Context {
			k := mustKube(t, cfg)
			key, _ := runningCluster(ctx, t, k, "calm", 3)
			start, err := k.lookCalls(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("etcd's counters when the cluster converged: %d member lists, %d statuses", start.memberList, start.status)
			var last calls
			waitFor(ctx, t, 5*time.Minute, "a poll that asked one member's status", func() (bool, error) {
				now, err := k.lookCalls(ctx, key)
				if err != nil {
					return false, err
				}
				lists, statuses := now.memberList-start.memberList, now.status-start.status
				if lists != last.memberList || statuses != last.status {
					t.Logf("since then: %d member lists, %d statuses", lists, statuses)
				}
				last = calls{memberList: lists, status: statuses}
				// Every look asks the member list once; a full look asks
				// three statuses, a light one one. Any light look leaves
				// fewer than three statuses per list.
				return lists > 0 && statuses < 3*lists, fmt.Errorf("%d member lists and %d statuses since the cluster converged", lists, statuses)
			})
			return ctx
		}).Feature()
	testEach(t, f)
}

// calls are the member list and status requests etcd served, summed over
// the members.
type calls struct{ memberList, status int }

// lookCalls reads grpc_server_handled_total of each member of the cluster
// from its metrics port.
func (k *kube) lookCalls(ctx context.Context, key client.ObjectKey) (calls, error) {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.InNamespace(key.Namespace), client.MatchingLabels{etcdv1.ClusterLabel: key.Name}); err != nil {
		return calls{}, err
	}
	var out calls
	for _, p := range pods.Items {
		if p.Status.PodIP == "" {
			return calls{}, fmt.Errorf("pod %s has no IP", p.Name)
		}
		c, err := memberCalls(ctx, "http://"+p.Status.PodIP+":2381/metrics")
		if err != nil {
			return calls{}, fmt.Errorf("pod %s: %w", p.Name, err)
		}
		out.memberList += c.memberList
		out.status += c.status
	}
	return out, nil
}

func memberCalls(ctx context.Context, url string) (calls, error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return calls{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return calls{}, err
	}
	defer resp.Body.Close()
	var out calls
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "grpc_server_handled_total{") {
			continue
		}
		fields := strings.Fields(line)
		n, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.Contains(line, `grpc_method="MemberList"`):
			out.memberList += int(n)
		case strings.Contains(line, `grpc_method="Status"`):
			out.status += int(n)
		}
	}
	return out, sc.Err()
}
