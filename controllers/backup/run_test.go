package backup

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/agent"
)

func TestPickMember(t *testing.T) {
	t.Parallel()
	voter := func(name string, healthy, leader bool) etcdv1.ClusterMemberStatus {
		return etcdv1.ClusterMemberStatus{Name: name, Role: etcdv1.RoleVoter, Healthy: healthy, Leader: leader}
	}
	learner := etcdv1.ClusterMemberStatus{Name: "demo-learner", Role: etcdv1.RoleLearner, Healthy: true}
	tests := []struct {
		name    string
		members []etcdv1.ClusterMemberStatus
		want    string
		wantOK  bool
	}{
		{
			name:    "healthy follower over the leader",
			members: []etcdv1.ClusterMemberStatus{voter("demo-a", true, true), voter("demo-b", true, false), voter("demo-c", true, false)},
			want:    "demo-b", wantOK: true,
		},
		{
			name:    "unhealthy follower skipped",
			members: []etcdv1.ClusterMemberStatus{voter("demo-a", false, false), voter("demo-b", true, true), voter("demo-c", true, false)},
			want:    "demo-c", wantOK: true,
		},
		{
			name:    "leader when alone",
			members: []etcdv1.ClusterMemberStatus{voter("demo-a", true, true)},
			want:    "demo-a", wantOK: true,
		},
		{
			name:    "leader when the followers are down",
			members: []etcdv1.ClusterMemberStatus{voter("demo-a", false, false), voter("demo-b", true, true)},
			want:    "demo-b", wantOK: true,
		},
		{
			name:    "learners skipped",
			members: []etcdv1.ClusterMemberStatus{learner, voter("demo-a", true, true)},
			want:    "demo-a", wantOK: true,
		},
		{
			name:    "only a learner",
			members: []etcdv1.ClusterMemberStatus{learner},
		},
		{
			name:    "no healthy voter",
			members: []etcdv1.ClusterMemberStatus{voter("demo-a", false, true), voter("demo-b", false, false)},
		},
		{name: "no members"},
	}
	t.Run("status of an older generation", func(t *testing.T) {
		t.Parallel()
		c := testCluster()
		c.Status.Members, c.Status.ObservedGeneration = []etcdv1.ClusterMemberStatus{voter("demo-a", true, false)}, c.Generation-1
		if got, ok := pickMember(c); ok {
			t.Errorf("pickMember = %q from members the cluster controller listed for an older spec; want none until it observed this one", got)
		}
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := testCluster()
			c.Status.Members, c.Status.ObservedGeneration = tt.members, c.Generation
			before := append([]etcdv1.ClusterMemberStatus(nil), tt.members...)
			got, ok := pickMember(c)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("pickMember = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
			for i := range before {
				if c.Status.Members[i] != before[i] {
					t.Errorf("pickMember changed status.members[%d] to %+v", i, c.Status.Members[i])
				}
			}
		})
	}
}

func agentPod(phase corev1.PodPhase, message string) *corev1.Pod {
	p := &corev1.Pod{}
	p.Name = "nightly-snapshot"
	p.Status.Phase = phase
	p.Status.Reason, p.Status.Message = "DeadlineExceeded", "Pod was active too long"
	state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
		state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: message}}
	}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: state}}
	return p
}

func TestPodResult(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	tests := []struct {
		name       string
		pod        *corev1.Pod
		wantDone   bool
		want       agent.Result
		wantErrHas []string
	}{
		{name: "no pod", pod: nil},
		{name: "pending", pod: agentPod(corev1.PodPending, "")},
		{name: "running", pod: agentPod(corev1.PodRunning, "")},
		{
			name:     "succeeded",
			pod:      agentPod(corev1.PodSucceeded, `{"key":"ns/demo/x.db","uri":"s3://b/ns/demo/x.db","size":100,"sha256":"`+sum+`","revision":5,"etcdVersion":"3.6.1"}`),
			wantDone: true,
			want:     agent.Result{Key: "ns/demo/x.db", URI: "s3://b/ns/demo/x.db", Size: 100, SHA256: sum, Revision: 5, EtcdVersion: "3.6.1"},
		},
		{
			name:     "failed with the agent's error",
			pod:      agentPod(corev1.PodFailed, `{"error":"sha256 differs","reason":"ChecksumMismatch","key":"k"}`),
			wantDone: true,
			want:     agent.Result{Error: "sha256 differs", Reason: agent.ReasonChecksumMismatch, Key: "k"},
		},
		{
			name:       "succeeded without a readable result",
			pod:        agentPod(corev1.PodSucceeded, "panic: oops"),
			wantDone:   true,
			want:       agent.Result{Reason: agent.ReasonFailed},
			wantErrHas: []string{"without a result", string(corev1.PodSucceeded)},
		},
		{
			name:       "failed without a message",
			pod:        agentPod(corev1.PodFailed, ""),
			wantDone:   true,
			want:       agent.Result{Reason: agent.ReasonFailed},
			wantErrHas: []string{"without a result", "Pod was active too long"},
		},
		{
			name:       "failed phase beats a success result",
			pod:        agentPod(corev1.PodFailed, `{"key":"k","size":3}`),
			wantDone:   true,
			want:       agent.Result{Reason: agent.ReasonFailed, Key: "k", Size: 3},
			wantErrHas: []string{"the agent Pod failed", "DeadlineExceeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, done := podResult(tt.pod)
			if done != tt.wantDone {
				t.Fatalf("done = %v, want %v", done, tt.wantDone)
			}
			if !done {
				if got != (agent.Result{}) {
					t.Errorf("result of an unfinished pod = %+v, want zero", got)
				}
				return
			}
			if len(tt.wantErrHas) > 0 {
				if got.Error == "" {
					t.Fatalf("result %+v has no error", got)
				}
				for _, s := range tt.wantErrHas {
					if !strings.Contains(got.Error, s) {
						t.Errorf("error %q does not contain %q", got.Error, s)
					}
				}
				got.Error = ""
			}
			if got != tt.want {
				t.Errorf("result = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestScheduleInterval(t *testing.T) {
	t.Parallel()
	from := time.Date(2025, 3, 1, 10, 0, 30, 0, time.UTC)
	tests := []struct {
		expr   string
		want   time.Duration
		wantOK bool
	}{
		{expr: "* * * * *", want: time.Minute, wantOK: true},
		{expr: "0 * * * *", want: time.Hour, wantOK: true},
		{expr: "@daily", want: 24 * time.Hour, wantOK: true},
		{expr: "@every 6h", want: 6 * time.Hour, wantOK: true},
		{expr: "not a schedule"},
		{expr: "61 * * * *"},
		{expr: ""},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			t.Parallel()
			got, ok := scheduleInterval(tt.expr, from)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("scheduleInterval(%q) = %v, %v; want %v, %v", tt.expr, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
