package resources

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func TestDefaultQuota(t *testing.T) {
	t.Parallel()
	const mi, gi = int64(1) << 20, int64(1) << 30
	tests := []struct {
		size, want int64
	}{
		{size: 128 * mi, want: 32 * mi},           // half reserved
		{size: 1 * gi, want: 320 * mi},            // 384Mi reserved
		{size: 8 * gi, want: (8*gi - 384*mi) / 2}, // 3.8Gi
		{size: 20 * gi, want: 8 * gi},             // capped
	}
	for _, tt := range tests {
		got := DefaultQuota(tt.size)
		if got != tt.want {
			t.Errorf("DefaultQuota(%d) = %d, want %d", tt.size, got, tt.want)
		}
		// The database and a second copy of it fit beside the reserve.
		if 2*got > tt.size-min(tt.size/2, walReserve) {
			t.Errorf("DefaultQuota(%d) = %d leaves no room for a copy and the WAL", tt.size, got)
		}
	}
}

// TestMemberOptionsLegacy: a cluster whose members predate the defaults
// keeps the spec's options as they are (etcd's own defaults).
func TestMemberOptionsLegacy(t *testing.T) {
	t.Parallel()
	c := &etcdv1.EtcdCluster{Spec: etcdv1.EtcdClusterSpec{Storage: etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))}, Options: etcdv1.EtcdOptions{SnapshotCount: ptr.To(int64(5))}}}
	o := MemberOptions(c, true)
	if o.QuotaBackendBytes != nil || o.AutoCompactionMode != "" || o.AutoCompactionRetention != "" || o.SnapshotCount == nil || *o.SnapshotCount != 5 {
		t.Errorf("MemberOptions(legacy) = %+v, want the spec's options alone", o)
	}
}

func TestMemberOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		opts                 etcdv1.EtcdOptions
		size                 string
		wantQuota            int64
		wantMode, wantRetain string
	}{
		{name: "defaults", size: "1Gi", wantQuota: 320 << 20, wantMode: "periodic", wantRetain: "1h"},
		{name: "no size is the default size", wantQuota: 320 << 20, wantMode: "periodic", wantRetain: "1h"},
		{name: "quota kept", size: "1Gi", opts: etcdv1.EtcdOptions{QuotaBackendBytes: ptr.To(int64(100))}, wantQuota: 100, wantMode: "periodic", wantRetain: "1h"},
		{name: "revision mode alone", size: "1Gi", opts: etcdv1.EtcdOptions{AutoCompactionMode: "revision"}, wantQuota: 320 << 20, wantMode: "revision", wantRetain: "10000"},
		{name: "periodic mode alone", size: "1Gi", opts: etcdv1.EtcdOptions{AutoCompactionMode: "periodic"}, wantQuota: 320 << 20, wantMode: "periodic", wantRetain: "1h"},
		{name: "retention alone is etcd's periodic mode", size: "1Gi", opts: etcdv1.EtcdOptions{AutoCompactionRetention: "24"}, wantQuota: 320 << 20, wantMode: "", wantRetain: "24"},
		{name: "compaction off", size: "1Gi", opts: etcdv1.EtcdOptions{AutoCompactionRetention: "0"}, wantQuota: 320 << 20, wantMode: "", wantRetain: "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &etcdv1.EtcdCluster{Spec: etcdv1.EtcdClusterSpec{Options: tt.opts}}
			if tt.size != "" {
				c.Spec.Storage.Size = ptr.To(resource.MustParse(tt.size))
			}
			before := c.DeepCopy()
			o := MemberOptions(c, false)
			if o.QuotaBackendBytes == nil || *o.QuotaBackendBytes != tt.wantQuota || o.AutoCompactionMode != tt.wantMode || o.AutoCompactionRetention != tt.wantRetain {
				t.Errorf("MemberOptions = quota %d, mode %q, retention %q; want %d, %q, %q", ptr.Deref(o.QuotaBackendBytes, -1), o.AutoCompactionMode, o.AutoCompactionRetention, tt.wantQuota, tt.wantMode, tt.wantRetain)
			}
			if c.Spec.Options.QuotaBackendBytes != before.Spec.Options.QuotaBackendBytes && before.Spec.Options.QuotaBackendBytes == nil {
				t.Errorf("MemberOptions changed the cluster's spec")
			}
		})
	}
}

func TestMaxLearners(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version string
		limit   int32
		want    int32
	}{
		{"3.5.35", 4, 0}, // 3.5 has no --max-learners
		{"3.6.16", 4, 4},
		{"3.7.0", 4, 4},
		{"3.6.16", 1, 0}, // etcd's default: the flag left out
		{"3.6.16", 0, 0},
	}
	for _, tt := range tests {
		if got := MaxLearners(tt.version, tt.limit); got != tt.want {
			t.Errorf("MaxLearners(%s, %d) = %d, want %d", tt.version, tt.limit, got, tt.want)
		}
		m := member(etcdv1.InitialClusterStateExisting, etcdv1.EtcdOptions{}, etcdv1.StorageSpec{})
		m.Spec.Version, m.Spec.MaxLearners = tt.version, MaxLearners(tt.version, tt.limit)
		has := slices.Contains(EtcdArgs(m, true), fmt.Sprintf("--max-learners=%d", tt.want))
		if has != (tt.want > 0) || (tt.want == 0 && slices.ContainsFunc(EtcdArgs(m, true), func(a string) bool { return strings.HasPrefix(a, "--max-learners") })) {
			t.Errorf("%s, limit %d: etcd's args %q", tt.version, tt.limit, EtcdArgs(m, true))
		}
	}
}
