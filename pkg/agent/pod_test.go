package agent

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

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
		want       Result
		wantErrHas []string
	}{
		{name: "no pod", pod: nil},
		{name: "pending", pod: agentPod(corev1.PodPending, "")},
		{name: "running", pod: agentPod(corev1.PodRunning, "")},
		{
			name:     "succeeded",
			pod:      agentPod(corev1.PodSucceeded, `{"key":"ns/demo/x.db","uri":"s3://b/ns/demo/x.db","size":100,"sha256":"`+sum+`","revision":5,"etcdVersion":"3.6.1"}`),
			wantDone: true,
			want:     Result{Key: "ns/demo/x.db", URI: "s3://b/ns/demo/x.db", Size: 100, SHA256: sum, Revision: 5, EtcdVersion: "3.6.1"},
		},
		{
			name:     "failed with the agent's error",
			pod:      agentPod(corev1.PodFailed, `{"error":"sha256 differs","reason":"ChecksumMismatch","key":"k"}`),
			wantDone: true,
			want:     Result{Error: "sha256 differs", Reason: ReasonChecksumMismatch, Key: "k"},
		},
		{
			name:       "succeeded without a readable result",
			pod:        agentPod(corev1.PodSucceeded, "panic: oops"),
			wantDone:   true,
			want:       Result{Reason: ReasonFailed},
			wantErrHas: []string{"without a result", string(corev1.PodSucceeded)},
		},
		{
			name:       "failed without a message",
			pod:        agentPod(corev1.PodFailed, ""),
			wantDone:   true,
			want:       Result{Reason: ReasonFailed},
			wantErrHas: []string{"without a result", "Pod was active too long"},
		},
		{
			name:       "failed phase beats a success result",
			pod:        agentPod(corev1.PodFailed, `{"key":"k","size":3}`),
			wantDone:   true,
			want:       Result{Reason: ReasonFailed, Key: "k", Size: 3},
			wantErrHas: []string{"the agent Pod failed", "DeadlineExceeded"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, done := PodResult(tt.pod)
			if done != tt.wantDone {
				t.Fatalf("done = %v, want %v", done, tt.wantDone)
			}
			if !done {
				if got != (Result{}) {
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
