package plugin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// testNow is the clock of every test.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const ns = "prod"

// fakeEtcd answers for each member Pod from a table; a Pod missing from
// it does not answer.
type fakeEtcd struct {
	mu       sync.Mutex
	statuses map[string]memberStatus
	alarms   []alarm
	moved    []string // "leaderPod->id"
	members  []listedMember
	// compacted are "pod:revision[:physical]", disarmed "pod:type:id".
	compacted, disarmed []string
	// snapshot is the data a snapshot streams; etcd appends its sha256,
	// which badSnapshot damages.
	snapshot    []byte
	badSnapshot bool
}

func (f *fakeEtcd) MemberList(ctx context.Context, pod string) ([]listedMember, error) {
	if _, err := f.Status(ctx, pod); err != nil {
		return nil, err
	}
	return f.members, nil
}

func (f *fakeEtcd) Compact(ctx context.Context, pod string, revision int64, physical bool) error {
	if _, err := f.Status(ctx, pod); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := fmt.Sprintf("%s:%d", pod, revision)
	if physical {
		c += ":physical"
	}
	f.compacted = append(f.compacted, c)
	return nil
}

func (f *fakeEtcd) DisarmAlarm(ctx context.Context, pod string, a alarm) error {
	if _, err := f.Status(ctx, pod); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.disarmed = append(f.disarmed, fmt.Sprintf("%s:%s:%x", pod, a.Type, a.MemberID))
	f.alarms = slices.DeleteFunc(f.alarms, func(x alarm) bool { return x == a })
	return nil
}

func (f *fakeEtcd) Snapshot(ctx context.Context, pod string, w io.Writer) (snapshotInfo, error) {
	if _, err := f.Status(ctx, pod); err != nil {
		return snapshotInfo{}, err
	}
	sum := sha256.Sum256(f.snapshot)
	if f.badSnapshot {
		sum[0]++
	}
	if _, err := w.Write(append(slices.Clone(f.snapshot), sum[:]...)); err != nil {
		return snapshotInfo{}, err
	}
	return snapshotInfo{Revision: 1234, Version: "3.6.16"}, nil
}

func (f *fakeEtcd) Status(_ context.Context, pod string) (memberStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.statuses[pod]
	if !ok {
		return memberStatus{}, errors.New("context deadline exceeded")
	}
	return st, nil
}

func (f *fakeEtcd) Alarms(_ context.Context, pod string) ([]alarm, error) {
	if _, err := f.Status(context.Background(), pod); err != nil {
		return nil, err
	}
	return f.alarms, nil
}

func (f *fakeEtcd) MoveLeader(_ context.Context, leaderPod string, to uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.moved = append(f.moved, fmt.Sprintf("%s->%x", leaderPod, to))
	return nil
}

// testEnv is an env on a fake API server holding objs, with etcd faked.
type testEnvironment struct {
	*env
	etcdFake *fakeEtcd
	out, err *bytes.Buffer
	// logErrs fail the logs of "pod/container[/previous]".
	logErrs map[string]error
}

func newTestEnv(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) *testEnvironment {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&etcdv1.EtcdCluster{}, &etcdv1.EtcdBackup{}).
		WithInterceptorFuncs(funcs).Build()
	te := &testEnvironment{etcdFake: &fakeEtcd{statuses: map[string]memberStatus{}, members: sampleEtcdMembers(),
		snapshot: bytes.Repeat([]byte("etcd"), 2048)}, out: &bytes.Buffer{}, err: &bytes.Buffer{}, logErrs: map[string]error{}}
	te.env = &env{
		c:         c,
		namespace: ns,
		streams:   Streams{In: strings.NewReader(""), Out: te.out, ErrOut: te.err},
		now:       func() time.Time { return testNow },
		etcd: func(context.Context, *etcdv1.EtcdCluster) (etcdAccess, error) {
			return te.etcdFake, nil
		},
		forward: func(_ context.Context, pod string, _ int) (string, func(), error) {
			// Each Pod its own port, by the last letter of its name.
			return fmt.Sprintf("127.0.0.1:%d", 10000+int(pod[len(pod)-1])), func() {}, nil
		},
		pollInterval: time.Millisecond,
		logs: func(_ context.Context, namespace, pod string, opts *corev1.PodLogOptions) ([]byte, error) {
			key := pod + "/" + opts.Container
			if opts.Previous {
				key += "/previous"
			}
			if err := te.logErrs[key]; err != nil {
				return nil, err
			}
			return []byte(fmt.Sprintf("log of %s/%s\n", namespace, key)), nil
		},
	}
	return te
}

// sampleEtcdMembers is etcd's member list of sample.
func sampleEtcdMembers() []listedMember {
	var out []listedMember
	for _, m := range []struct {
		name string
		id   uint64
	}{{"sample-aaaaa", 0xa1}, {"sample-bbbbb", 0xb2}, {"sample-ccccc", 0xc3}} {
		out = append(out, listedMember{ID: m.id, Name: m.name, PeerURLs: []string{"https://" + m.name + ".sample-peer.prod.svc:2380"}})
	}
	return out
}

// run runs the plugin's command line on the test env.
func (te *testEnvironment) run(args ...string) error {
	cmd := newRoot(te.streams, func() (*env, error) { return te.env, nil })
	cmd.SetArgs(args)
	return cmd.ExecuteContext(context.Background())
}

// cluster is a converged 3-member cluster "sample" with TLS.
func cluster() *etcdv1.EtcdCluster {
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: 2,
			LastTransitionTime: metav1.NewTime(testNow.Add(-10 * time.Minute))}
	}
	return &etcdv1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "sample", Namespace: ns, Generation: 2,
			CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour)),
			Labels:            map[string]string{"team": "a", etcdv1.ShardLabel: "3"}},
		Spec: etcdv1.EtcdClusterSpec{Replicas: ptr.To[int32](3), Version: "3.6.16"},
		Status: etcdv1.EtcdClusterStatus{
			ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, ClusterID: "cafe", Version: "3.6.16",
			Conditions: []metav1.Condition{
				cond(etcdv1.ConditionTLSReady, metav1.ConditionTrue, "CertificatesReady", "ok"),
				cond(etcdv1.ConditionDegraded, metav1.ConditionFalse, etcdv1.ReasonMembersHealthy, "Every member is healthy"),
				cond(etcdv1.ConditionAvailable, metav1.ConditionTrue, etcdv1.ReasonQuorumHealthy, "3 of 3 voters healthy"),
				cond(etcdv1.ConditionProgressing, metav1.ConditionFalse, etcdv1.ReasonConverged, "3 members"),
			},
			TLS: &etcdv1.TLSStatus{
				ClientSecretName: "sample-client-tls", ServerSecretName: "sample-server-tls", CASecretName: "sample-ca",
				CANotAfter: ptr.To(metav1.NewTime(testNow.Add(10 * 365 * 24 * time.Hour))),
				RenewAt:    ptr.To(metav1.NewTime(testNow.Add(60 * 24 * time.Hour))),
			},
			Members: []etcdv1.ClusterMemberStatus{
				{Name: "sample-aaaaa", ID: "a1", Role: etcdv1.RoleVoter, Version: "3.6.16", Healthy: true, Leader: true},
				{Name: "sample-bbbbb", ID: "b2", Role: etcdv1.RoleVoter, Version: "3.6.16", Healthy: true},
				{Name: "sample-ccccc", ID: "c3", Role: etcdv1.RoleVoter, Version: "3.6.16", Healthy: true},
			},
		},
	}
}

func memberPod(member string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: member, Namespace: ns,
			Labels: map[string]string{etcdv1.ClusterLabel: "sample", etcdv1.MemberLabel: member}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

func etcdMember(name, id string) *etcdv1.EtcdMember {
	return &etcdv1.EtcdMember{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{etcdv1.ClusterLabel: "sample"}},
		Spec:       etcdv1.EtcdMemberSpec{ClusterName: "sample"},
		Status:     etcdv1.EtcdMemberStatus{MemberID: id, Role: etcdv1.RoleVoter},
	}
}

// tlsSecrets are the client and serving Secrets of sample, issued by a
// test CA: the client certificate expires in 90 days, the serving one in
// 30. loopback says whether the serving certificate covers 127.0.0.1.
func tlsSecrets(t *testing.T, loopback bool) []client.Object {
	t.Helper()
	ca, err := pki.NewCA("test-ca", 365*24*time.Hour, testNow)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := pki.Issue(ca, pki.Request{CommonName: "root", Usage: pki.UsageClient, Lifetime: 90 * 24 * time.Hour}, testNow)
	if err != nil {
		t.Fatal(err)
	}
	req := pki.Request{CommonName: "etcd-server", Usage: pki.UsageServer, Lifetime: 30 * 24 * time.Hour,
		DNSNames: resources.PeerHosts(cluster(), "cluster.local")}
	if loopback {
		req.IPs = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	srv, err := pki.Issue(ca, req, testNow)
	if err != nil {
		t.Fatal(err)
	}
	secret := func(name string, kp *pki.KeyPair) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Data: map[string][]byte{pki.CertKey: kp.CertPEM, pki.KeyKey: kp.KeyPEM, pki.CAKey: ca.CertPEM}}
	}
	return []client.Object{secret("sample-client-tls", cl), secret("sample-server-tls", srv)}
}

// healthy is the fake etcd of sample's three members, aaaaa leading.
func healthyEtcd() map[string]memberStatus {
	st := func(id uint64) memberStatus {
		return memberStatus{ID: id, Leader: 0xa1, Version: "3.6.16", DBSize: 20480, DBSizeInUse: 16384, DBSizeQuota: 2 << 30, RaftTerm: 4, RaftIndex: 1234}
	}
	return map[string]memberStatus{"sample-aaaaa": st(0xa1), "sample-bbbbb": st(0xb2), "sample-ccccc": st(0xc3)}
}

// sampleObjects are sample, its members and their Pods, all ready.
func sampleObjects(t *testing.T) []client.Object {
	objs := []client.Object{cluster()}
	for _, m := range []struct{ name, id string }{{"sample-aaaaa", "a1"}, {"sample-bbbbb", "b2"}, {"sample-ccccc", "c3"}} {
		objs = append(objs, etcdMember(m.name, m.id), memberPod(m.name, true))
	}
	return append(objs, tlsSecrets(t, true)...)
}
