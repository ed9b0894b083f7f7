package plugin

import (
	"context"
	"fmt"
	"io"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactTimeout bounds a compaction that waits until etcd has applied it
// to its database (--physical), which takes as long as the history is.
const compactTimeout = time.Minute

func (p *podEtcd) MemberList(ctx context.Context, pod string) ([]listedMember, error) {
	return onMember(ctx, p, pod, etcdTimeout, func(ctx context.Context, cli *clientv3.Client) ([]listedMember, error) {
		r, err := cli.MemberList(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]listedMember, 0, len(r.Members))
		for _, m := range r.Members {
			out = append(out, listedMember{ID: m.ID, Name: m.Name, PeerURLs: m.PeerURLs, ClientURLs: m.ClientURLs, IsLearner: m.IsLearner})
		}
		return out, nil
	})
}

func (p *podEtcd) Compact(ctx context.Context, pod string, revision int64, physical bool) error {
	var opts []clientv3.CompactOption
	if physical {
		opts = append(opts, clientv3.WithCompactPhysical())
	}
	_, err := onMember(ctx, p, pod, compactTimeout, func(ctx context.Context, cli *clientv3.Client) (*clientv3.CompactResponse, error) {
		return cli.Compact(ctx, revision, opts...)
	})
	return err
}

func (p *podEtcd) DisarmAlarm(ctx context.Context, pod string, a alarm) error {
	typ, ok := pb.AlarmType_value[a.Type]
	if !ok {
		return fmt.Errorf("unknown alarm type %q", a.Type)
	}
	_, err := onMember(ctx, p, pod, etcdTimeout, func(ctx context.Context, cli *clientv3.Client) (*clientv3.AlarmResponse, error) {
		return cli.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: pb.AlarmType(typ)})
	})
	return err
}

// Snapshot has no deadline of its own: a snapshot takes as long as the
// database is large, and the port-forward lives as long as ctx. Reaching
// the member has the client's DialTimeout.
func (p *podEtcd) Snapshot(ctx context.Context, pod string, w io.Writer) (snapshotInfo, error) {
	cli, closeCli, err := p.dial(ctx, pod)
	if err != nil {
		return snapshotInfo{}, err
	}
	defer closeCli()
	r, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return snapshotInfo{}, err
	}
	defer func() { _ = r.Snapshot.Close() }()
	info := snapshotInfo{Version: r.Version}
	if r.Header != nil {
		info.Revision = r.Header.Revision
	}
	if _, err := io.Copy(w, r.Snapshot); err != nil {
		return snapshotInfo{}, err
	}
	return info, nil
}
