package user

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func TestSetReady(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		scope      scope
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
	}{
		{name: "a reason wins", scope: scope{reason: etcdv1.ReasonAuthDisabled, msg: "set spec.auth.enabled", applied: true},
			wantStatus: metav1.ConditionFalse, wantReason: etcdv1.ReasonAuthDisabled, wantInMsg: "spec.auth.enabled"},
		{name: "not applied yet", scope: scope{}, wantStatus: metav1.ConditionFalse, wantReason: etcdv1.ReasonWaitingForCluster},
		{name: "applied", scope: scope{applied: true}, wantStatus: metav1.ConditionTrue, wantReason: etcdv1.ReasonRolesApplied, wantInMsg: `"/a/" (ReadWrite), "/s/" (Read)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := tt.scope
			s.user = &etcdv1.EtcdUser{ObjectMeta: metav1.ObjectMeta{Name: "u", Generation: 3}, Spec: etcdv1.EtcdUserSpec{
				Permissions: []etcdv1.KeyPermission{{Prefix: "/a/", Access: etcdv1.KeyAccessReadWrite}, {Prefix: "/s/"}}}}
			setReady(&s)
			c := meta.FindStatusCondition(s.user.Status.Conditions, etcdv1.ConditionReady)
			if c == nil || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.ObservedGeneration != 3 || !strings.Contains(c.Message, tt.wantInMsg) {
				t.Errorf("Ready = %+v", c)
			}
		})
	}
}
