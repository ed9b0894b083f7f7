package etcd

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

func TestMapError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   error
		want error
	}{
		{rpctypes.ErrGRPCUnhealthy, ErrNotYet},
		{rpctypes.ErrGRPCMemberNotEnoughStarted, ErrNotYet},
		{rpctypes.ErrGRPCLearnerNotReady, ErrNotYet},
		{rpctypes.ErrGRPCTooManyLearners, ErrNotYet},
		{rpctypes.ErrGRPCNoLeader, ErrNotYet},
		{rpctypes.ErrGRPCMemberNotFound, ErrMemberNotFound},
		{rpctypes.ErrGRPCPeerURLExist, ErrPeerURLExists},
		{rpctypes.ErrGRPCMemberNotLearner, ErrNotLearner},
		{fmt.Errorf("dial: %w", context.DeadlineExceeded), ErrUnreachable},
	}
	for _, tt := range tests {
		if got := mapError(tt.in); !errors.Is(got, tt.want) {
			t.Errorf("mapError(%v) = %v, want it to wrap %v", tt.in, got, tt.want)
		}
	}
	if mapError(nil) != nil {
		t.Error("mapError(nil) != nil")
	}
	other := errors.New("permission denied")
	if got := mapError(other); got != other {
		t.Errorf("an unknown error must pass unchanged, got %v", got)
	}
}
