package backup

import (
	"testing"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
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

func testCluster() *etcdv1.EtcdCluster {
	c := &etcdv1.EtcdCluster{}
	c.Name, c.Namespace, c.Generation = "demo", "ns", 7
	return c
}
