package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

const (
	msgUserRoot        = "metadata.name of an EtcdUser cannot be root"
	msgUserName        = "metadata.name of an EtcdUser must be a DNS-1123 label"
	msgUserAllKeys     = "set spec.allowAllKeys: true to mean it"
	msgUserCluster     = "spec.clusterName cannot change"
	msgUserPassword    = "spec.password cannot change"
	msgUserClusterName = "spec.clusterName must name an EtcdCluster"
)

// testUserValidation: an EtcdUser is never root, its prefixes are bounded
// and cover every key only when asked, and its cluster and password
// setting are fixed once it exists.
func testUserValidation(t *testing.T, c client.Client) {
	perms := func(p ...etcdv1.KeyPermission) func(*etcdv1.EtcdUserSpec) {
		return func(sp *etcdv1.EtcdUserSpec) { sp.Permissions = p }
	}
	rw := func(prefix string) etcdv1.KeyPermission {
		return etcdv1.KeyPermission{Prefix: prefix, Access: etcdv1.KeyAccessReadWrite}
	}
	many := make([]etcdv1.KeyPermission, 17)
	for i := range many {
		many[i] = rw(fmt.Sprintf("/p%d/", i))
	}
	type tc = validationCase[etcdv1.EtcdUserSpec]
	cases := []tc{
		{name: "user"},
		{name: "named root", objName: "root", wantErr: []string{msgUserRoot}},
		{name: "name of 64 characters", objName: "u" + strings.Repeat("x", 63), wantErr: []string{msgUserName}},
		{name: "name with a dot", objName: "tenant.a", wantErr: []string{msgUserName}},
		{name: "no permission", spec: perms(), wantErr: []string{"spec.permissions"}},
		{name: "17 permissions", spec: perms(many...), wantErr: []string{"spec.permissions", "must have at most 16 items"}},
		{name: "a prefix twice", spec: perms(rw("/a/"), rw("/a/")), wantErr: []string{"Duplicate value"}},
		{name: "a prefix of 257 bytes", spec: perms(rw("/" + strings.Repeat("x", 256))), wantErr: []string{msgTooLong}},
		{name: "unknown access", spec: perms(etcdv1.KeyPermission{Prefix: "/a/", Access: "Write"}), wantErr: []string{msgUnsupported}},
		{name: "prefix /", spec: perms(rw("/")), wantErr: []string{msgUserAllKeys}},
		{name: "empty prefix", spec: perms(rw("")), wantErr: []string{msgUserAllKeys}},
		{name: "prefix / with allowAllKeys", spec: func(sp *etcdv1.EtcdUserSpec) {
			sp.Permissions = []etcdv1.KeyPermission{rw("/")}
			sp.AllowAllKeys = true
		}},
		{name: "empty prefix with allowAllKeys", spec: func(sp *etcdv1.EtcdUserSpec) { sp.Permissions = []etcdv1.KeyPermission{rw("")}; sp.AllowAllKeys = true }},
		{name: "cluster name with a dot", spec: func(sp *etcdv1.EtcdUserSpec) { sp.ClusterName = "demo.prod" }, wantErr: []string{msgUserClusterName}},
		{name: "cluster changes", patch: `{"spec":{"clusterName":"other"}}`, wantErr: []string{msgUserCluster}},
		{name: "password turned on", patch: `{"spec":{"password":true}}`, wantErr: []string{msgUserPassword}},
		{name: "prefixes change", patch: `{"spec":{"permissions":[{"prefix":"/b/","access":"Read"}]}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "tenant-a"
			if tc.objName != "" {
				name = tc.objName
			}
			obj := &etcdv1.EtcdUser{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: newNamespace(t, c)},
				Spec:       etcdv1.EtcdUserSpec{ClusterName: "demo", Permissions: []etcdv1.KeyPermission{rw("/tenants/a/")}},
			}
			if tc.spec != nil {
				tc.spec(&obj.Spec)
			}
			runCase(t, c, obj, tc.patch, tc.status, tc.wantErr)
		})
	}
}
