package kube

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

func TestOwnedStatus(t *testing.T) {
	t.Parallel()
	cond := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "R"}
	}
	full := &etcdv1.EtcdCluster{Status: etcdv1.EtcdClusterStatus{
		ObservedGeneration: 2, Replicas: 3, ClusterID: "c0ffee",
		TLS:     &etcdv1.TLSStatus{CASecretName: "ca"},
		Restore: &etcdv1.RestoreStatus{},
		Conditions: []metav1.Condition{
			cond(etcdv1.ConditionAvailable), cond(etcdv1.ConditionTLSReady), cond(etcdv1.ConditionBackupReady),
		},
	}}
	for _, tt := range []struct {
		name       string
		kind       string
		controller string
		obj        func() any
		wantKeys   []string
		wantConds  []string
		wantErr    string
	}{
		{name: "cluster", kind: "EtcdCluster", controller: "cluster",
			wantKeys:  []string{"clusterID", "conditions", "observedGeneration", "readyReplicas", "replicas"},
			wantConds: []string{etcdv1.ConditionAvailable}},
		{name: "tls", kind: "EtcdCluster", controller: "tls",
			wantKeys: []string{"conditions", "tls"}, wantConds: []string{etcdv1.ConditionTLSReady}},
		{name: "backup", kind: "EtcdCluster", controller: "backup",
			wantKeys: []string{"conditions", "restore"}, wantConds: []string{etcdv1.ConditionBackupReady}},
		{name: "a controller with nothing of its own", kind: "EtcdCluster", controller: "member", wantKeys: []string{}},
		{name: "a condition with no owner", kind: "EtcdCluster", controller: "cluster",
			obj: func() any {
				c := full.DeepCopy()
				c.Status.Conditions = append(c.Status.Conditions, cond("Unowned"))
				return c
			},
			wantErr: `condition "Unowned" has no owner`},
		{name: "a kind with no owners", kind: "Pod", controller: "cluster", wantErr: "no status owners"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obj := full.DeepCopy()
			if tt.obj != nil {
				obj = tt.obj().(*etcdv1.EtcdCluster)
			}
			got, err := OwnedStatus(tt.kind, tt.controller, obj)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			keys := []string{}
			for k := range got {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !reflect.DeepEqual(keys, tt.wantKeys) {
				t.Errorf("fields = %v, want %v", keys, tt.wantKeys)
			}
			var conds []string
			list, _ := got["conditions"].([]any)
			for _, c := range list {
				conds = append(conds, c.(map[string]any)["type"].(string))
			}
			if !reflect.DeepEqual(conds, tt.wantConds) {
				t.Errorf("conditions = %v, want %v", conds, tt.wantConds)
			}
		})
	}
}

func TestWrittenBehind(t *testing.T) {
	t.Parallel()
	obj := func(uid, rv string) *etcdv1.EtcdCluster {
		return &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{UID: types.UID("u" + uid), ResourceVersion: rv}}
	}
	for _, tt := range []struct {
		name    string
		wrote   string
		read    string
		uid     string
		behind  bool
		forgets bool
	}{
		{name: "nothing written", read: "5"},
		{name: "numbers compare as numbers, not text", wrote: "10", read: "9", behind: true},
		{name: "cache caught up", wrote: "10", read: "10", forgets: true},
		{name: "cache past the write", wrote: "10", read: "12", forgets: true},
		{name: "another object of the same name", wrote: "10", read: "3", uid: "other"},
		{name: "a version that does not compare", wrote: "10", read: "x", forgets: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w Written
			if tt.wrote != "" {
				w.Record(obj("", "1"), tt.wrote)
			}
			if got := w.Behind(obj(tt.uid, tt.read)); got != tt.behind {
				t.Fatalf("Behind = %t, want %t", got, tt.behind)
			}
			if tt.forgets && len(w.rv) != 0 {
				t.Errorf("still remembers %v once the cache caught up", w.rv)
			}
		})
	}
	var none *Written
	if none.Behind(obj("", "1")) {
		t.Error("a nil Written says behind")
	}
	none.Record(obj("", "1"), "2")
}
