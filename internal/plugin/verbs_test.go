package plugin

import (
	"context"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// verbCase is one command line of a verb against sample, its three members
// and their Pods, with etcd answering for each (healthyEtcd).
type verbCase struct {
	name    string
	args    []string
	cluster func(*etcdv1.EtcdCluster)
	extra   []client.Object
	// etcd changes the fake etcd before the run.
	etcd  func(*fakeEtcd)
	funcs interceptor.Funcs
	// tty: the user is at a terminal and answers stdin.
	tty     bool
	stdin   string
	wantErr string
	// wantOut and wantErrOut are in stdout and stderr; notOut is not in stdout.
	wantOut, wantErrOut []string
	notOut              []string
	check               func(t *testing.T, te *testEnvironment)
}

// runVerbCases runs each case on a test env of its own.
func runVerbCases(t *testing.T, cases []verbCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := cluster()
			if tt.cluster != nil {
				tt.cluster(c)
			}
			te := newTestEnv(t, tt.funcs, append(append([]client.Object{c}, sampleObjects(t)[1:]...), tt.extra...)...)
			te.etcdFake.statuses = healthyEtcd()
			if tt.etcd != nil {
				tt.etcd(te.etcdFake)
			}
			te.interactive = tt.tty
			te.streams.In = strings.NewReader(tt.stdin)
			err := te.run(tt.args...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v; stdout %s; stderr %s", err, te.out, te.err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one with %q; stdout %s", err, tt.wantErr, te.out)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(te.out.String(), w) {
					t.Errorf("stdout has no %q:\n%s", w, te.out)
				}
			}
			for _, w := range tt.wantErrOut {
				if !strings.Contains(te.err.String(), w) {
					t.Errorf("stderr has no %q:\n%s", w, te.err)
				}
			}
			for _, w := range tt.notOut {
				if strings.Contains(te.out.String(), w) {
					t.Errorf("stdout has %q:\n%s", w, te.out)
				}
			}
			if tt.check != nil {
				tt.check(t, te)
			}
		})
	}
}

// patchedThen plays the operator: once the cluster was patched, each read
// of it goes through change.
func patchedThen(change func(c *etcdv1.EtcdCluster)) interceptor.Funcs {
	patched := false
	return interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			patched = true
			return c.Patch(ctx, obj, patch, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			if cl, ok := obj.(*etcdv1.EtcdCluster); ok && patched {
				change(cl)
			}
			return nil
		},
	}
}
