package plugin

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/etcd"
	"github.com/raftsman/raftsman/pkg/pki"
	"github.com/raftsman/raftsman/pkg/resources"
)

// etcdTimeout bounds each call to one member: a member that does not answer
// within it is shown as unreachable rather than holding the whole screen.
const etcdTimeout = 5 * time.Second

// forwardFunc opens a port-forward to port of a Pod of the env's namespace
// and returns the local address (127.0.0.1:<port>) and how to close it.
type forwardFunc func(ctx context.Context, pod string, port int) (string, func(), error)

// forwarder carries local connections to a Pod's port through the API
// server, like kubectl port-forward: members are seldom reachable from
// where the plugin runs, the API server always is.
type forwarder struct {
	rest      *rest.Config
	cs        kubernetes.Interface
	namespace string
}

// Forward implements forwardFunc: websocket first, SPDY when the API server
// does not take it, as kubectl does.
func (f *forwarder) Forward(ctx context.Context, pod string, port int) (string, func(), error) {
	u := f.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(f.namespace).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(f.rest)
	if err != nil {
		return "", nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	if ws, err := portforward.NewSPDYOverWebsocketDialer(u, f.rest); err == nil {
		dialer = portforward.NewFallbackDialer(ws, dialer, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
	}
	// The forwarder reports a closed connection as an error through the
	// context's logger; a CLI has nowhere useful to print it.
	ctx, cancel := context.WithCancel(logr.NewContext(ctx, logr.Discard()))
	ready := make(chan struct{})
	pf, err := portforward.NewOnAddressesWithContext(ctx, dialer, []string{"127.0.0.1"},
		[]string{"0:" + strconv.Itoa(port)}, ready, io.Discard, io.Discard)
	if err != nil {
		cancel()
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return "", nil, fmt.Errorf("port-forward to pod %s: %w", pod, err)
	case <-ctx.Done():
		cancel()
		return "", nil, ctx.Err()
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) == 0 {
		cancel()
		return "", nil, fmt.Errorf("port-forward to pod %s: no local port (%v)", pod, err)
	}
	stop := func() {
		cancel()
		<-done
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), stop, nil
}

// memberStatus is what one member says of itself (etcd's Status call).
type memberStatus struct {
	ID, Leader          uint64
	Version             string
	DBSize, DBSizeInUse int64
	DBSizeQuota         int64 // 0 when etcd does not say (before 3.6)
	RaftTerm, RaftIndex uint64
	RaftAppliedIndex    uint64
	// Revision is the key-value store's revision the member answered at.
	Revision       int64
	IsLearner      bool
	Errors         []string
	StorageVersion string
	// DowngradeTarget is the version an enabled downgrade goes to.
	DowngradeTarget string
}

// alarm is one of etcd's active alarms.
type alarm struct {
	MemberID uint64
	Type     string
}

// listedMember is a member as etcd's member list has it.
type listedMember struct {
	ID         uint64
	Name       string
	PeerURLs   []string
	ClientURLs []string
	IsLearner  bool
}

// snapshotInfo is what etcd said of a snapshot it streamed.
type snapshotInfo struct {
	// Revision is the revision the snapshot holds at least.
	Revision int64
	// Version is the etcd version that made it ("" before 3.6).
	Version string
}

// etcdAccess asks a cluster's members, each through its Pod, what etcd says
// of itself. Its only changes are MoveLeader, Compact and DisarmAlarm, which
// the operator tolerates (see the verbs); no membership call exists.
type etcdAccess interface {
	Status(ctx context.Context, pod string) (memberStatus, error)
	Alarms(ctx context.Context, pod string) ([]alarm, error)
	MoveLeader(ctx context.Context, leaderPod string, to uint64) error
	MemberList(ctx context.Context, pod string) ([]listedMember, error)
	Compact(ctx context.Context, pod string, revision int64, physical bool) error
	DisarmAlarm(ctx context.Context, pod string, a alarm) error
	// Snapshot streams a snapshot of the member's database into w.
	Snapshot(ctx context.Context, pod string, w io.Writer) (snapshotInfo, error)
}

// podEtcd is etcdAccess through port-forwards.
type podEtcd struct {
	forward forwardFunc
	cluster *etcdv1.EtcdCluster
	tls     *tls.Config // nil when the cluster runs without TLS
}

// newPodEtcd reads the cluster's client certificate from the Secret in
// status.tls; it never leaves the plugin's memory.
func newPodEtcd(ctx context.Context, c client.Reader, forward forwardFunc, cl *etcdv1.EtcdCluster) (*podEtcd, error) {
	p := &podEtcd{forward: forward, cluster: cl}
	if cl.Spec.TLS.Disabled {
		return p, nil
	}
	creds, err := clientCredentials(ctx, c, cl)
	if err != nil {
		return nil, err
	}
	if p.tls, err = creds.TLSConfig(); err != nil {
		return nil, fmt.Errorf("secret %s: %w", cl.Status.TLS.ClientSecretName, err)
	}
	return p, nil
}

// clientCredentials reads the client certificate the operator keeps for
// users (common name root) and the CA of the serving certificate.
func clientCredentials(ctx context.Context, c client.Reader, cl *etcdv1.EtcdCluster) (etcd.Credentials, error) {
	if cl.Status.TLS == nil || cl.Status.TLS.ClientSecretName == "" {
		return etcd.Credentials{}, fmt.Errorf("etcdcluster %s has no status.tls.clientSecretName yet: its certificates are not issued (see its TLSReady condition)", cl.Name)
	}
	sec := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: cl.Namespace, Name: cl.Status.TLS.ClientSecretName}, sec); err != nil {
		return etcd.Credentials{}, fmt.Errorf("client certificate: secret %s: %w", cl.Status.TLS.ClientSecretName, err)
	}
	creds := etcd.Credentials{CertPEM: sec.Data[pki.CertKey], KeyPEM: sec.Data[pki.KeyKey], CAPEM: sec.Data[pki.CAKey]}
	if len(creds.CertPEM) == 0 || len(creds.KeyPEM) == 0 || len(creds.CAPEM) == 0 {
		return etcd.Credentials{}, fmt.Errorf("secret %s lacks %s, %s or %s", sec.Name, pki.CertKey, pki.KeyKey, pki.CAKey)
	}
	return creds, nil
}

// dial connects a client to one member through a port-forward. The serving
// certificate is checked for the member's own name, which every serving
// certificate covers (yours from a secretRef too), not for 127.0.0.1.
func (p *podEtcd) dial(ctx context.Context, pod string) (*clientv3.Client, func(), error) {
	addr, stop, err := p.forward(ctx, pod, etcdv1.ClientPort)
	if err != nil {
		return nil, nil, err
	}
	cfg := clientv3.Config{
		Endpoints:   []string{"http://" + addr},
		DialTimeout: etcdTimeout,
		Logger:      zap.NewNop(),
	}
	if p.tls != nil {
		cfg.TLS = p.tls.Clone()
		cfg.TLS.ServerName = memberName(p.cluster, pod)
		cfg.Endpoints = []string{"https://" + addr}
	}
	cli, err := clientv3.New(cfg)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("etcd client for %s: %w", pod, err)
	}
	return cli, func() { _ = cli.Close(); stop() }, nil
}

// memberName is a member's name under the peer Service, without the
// cluster domain: covered by *.<cluster>-peer.<ns>.svc.
func memberName(c *etcdv1.EtcdCluster, member string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, resources.PeerServiceName(c.Name), c.Namespace)
}

// onMember runs fn with a client of one member, reached through a
// port-forward, within timeout.
func onMember[T any](ctx context.Context, p *podEtcd, pod string, timeout time.Duration, fn func(context.Context, *clientv3.Client) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cli, closeCli, err := p.dial(ctx, pod)
	if err != nil {
		var zero T
		return zero, err
	}
	defer closeCli()
	return fn(ctx, cli)
}

func (p *podEtcd) Status(ctx context.Context, pod string) (memberStatus, error) {
	return onMember(ctx, p, pod, etcdTimeout, func(ctx context.Context, cli *clientv3.Client) (memberStatus, error) {
		r, err := cli.Status(ctx, cli.Endpoints()[0])
		if err != nil {
			return memberStatus{}, err
		}
		st := memberStatus{
			ID: r.Header.MemberId, Leader: r.Leader, Version: r.Version,
			DBSize: r.DbSize, DBSizeInUse: r.DbSizeInUse, DBSizeQuota: r.DbSizeQuota,
			RaftTerm: r.RaftTerm, RaftIndex: r.RaftIndex, RaftAppliedIndex: r.RaftAppliedIndex, Revision: r.Header.Revision,
			IsLearner: r.IsLearner, Errors: r.Errors, StorageVersion: r.StorageVersion,
		}
		if d := r.DowngradeInfo; d != nil && d.Enabled {
			st.DowngradeTarget = d.TargetVersion
		}
		return st, nil
	})
}

func (p *podEtcd) Alarms(ctx context.Context, pod string) ([]alarm, error) {
	return onMember(ctx, p, pod, etcdTimeout, func(ctx context.Context, cli *clientv3.Client) ([]alarm, error) {
		r, err := cli.AlarmList(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]alarm, 0, len(r.Alarms))
		for _, a := range r.Alarms {
			out = append(out, alarm{MemberID: a.MemberID, Type: a.Alarm.String()})
		}
		return out, nil
	})
}

// MoveLeader must reach the leader itself: etcd refuses it elsewhere.
func (p *podEtcd) MoveLeader(ctx context.Context, leaderPod string, to uint64) error {
	_, err := onMember(ctx, p, leaderPod, 3*etcdTimeout, func(ctx context.Context, cli *clientv3.Client) (*clientv3.MoveLeaderResponse, error) {
		return cli.MoveLeader(ctx, to)
	})
	return err
}
