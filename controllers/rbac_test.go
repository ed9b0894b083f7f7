package controllers_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// rbacObject is any RBAC object of a manifest: a role has Rules, a binding
// RoleRef and Subjects.
type rbacObject struct {
	Kind              string `json:"kind"`
	metav1.ObjectMeta `json:"metadata"`
	Rules             []rbacv1.PolicyRule `json:"rules"`
	RoleRef           rbacv1.RoleRef      `json:"roleRef"`
	Subjects          []rbacv1.Subject    `json:"subjects"`
}

func readRBAC(t *testing.T, path string) []rbacObject {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && path != "../config/rbac/role.yaml" {
		t.Skipf("%s is not rendered (make dist)", path)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []rbacObject
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		o := rbacObject{}
		if err := yaml.Unmarshal(doc, &o); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		switch o.Kind {
		case "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
			out = append(out, o)
		}
	}
}

// TestGeneratedRolesReachOnlyWhatIsNeeded checks the roles generated from
// the +kubebuilder:rbac markers: no non-resource URL (the operator does not
// read its own metrics), Leases only in the Role of the operator's
// namespace, cluster-scoped kinds only in raftsman-cluster-scope and
// namespaced kinds only outside it, so that a RoleBinding of
// raftsman-manager grants everything the operator needs in a namespace.
func TestGeneratedRolesReachOnlyWhatIsNeeded(t *testing.T) {
	t.Parallel()
	clusterScoped := []string{"storageclasses", "tokenreviews", "subjectaccessreviews"}
	roles := map[string]bool{}
	for _, o := range readRBAC(t, "../config/rbac/role.yaml") {
		roles[o.Kind+"/"+o.Name] = true
		for _, r := range o.Rules {
			if len(r.NonResourceURLs) > 0 {
				t.Errorf("%s %s grants non-resource URLs %v", o.Kind, o.Name, r.NonResourceURLs)
			}
			if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") {
				t.Errorf("%s %s has a wildcard: %+v", o.Kind, o.Name, r)
			}
			for _, res := range r.Resources {
				switch {
				case res == "leases" && (o.Kind != "Role" || o.Name != "raftsman-own-namespace" || o.Namespace != "raftsman-system"):
					t.Errorf("Leases in %s %s/%s; want them only in Role raftsman-system/raftsman-own-namespace", o.Kind, o.Namespace, o.Name)
				case slices.Contains(clusterScoped, res) && o.Name != "raftsman-cluster-scope":
					t.Errorf("cluster-scoped %s in %s %s; want it in raftsman-cluster-scope", res, o.Kind, o.Name)
				case !slices.Contains(clusterScoped, res) && o.Name == "raftsman-cluster-scope":
					t.Errorf("namespaced %s in raftsman-cluster-scope: bound cluster-wide in both installs", res)
				}
			}
		}
	}
	for _, want := range []string{"ClusterRole/raftsman-manager", "ClusterRole/raftsman-cluster-scope", "Role/raftsman-own-namespace"} {
		if !roles[want] {
			t.Errorf("no %s in config/rbac/role.yaml; have %v", want, roles)
		}
	}
}

// TestInstallsBindTheManagerWhereTheyShould: the cluster-wide install binds
// raftsman-manager with a ClusterRoleBinding; the namespaced one only with
// RoleBindings, and no ClusterRoleBinding of the operator's account but
// raftsman-cluster-scope's.
func TestInstallsBindTheManagerWhereTheyShould(t *testing.T) {
	t.Parallel()
	clusterBound := func(objs []rbacObject) []string {
		var out []string
		for _, o := range objs {
			if o.Kind == "ClusterRoleBinding" && slices.ContainsFunc(o.Subjects, func(s rbacv1.Subject) bool { return s.Name == "raftsman" }) {
				out = append(out, o.RoleRef.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := clusterBound(readRBAC(t, "../dist/install.yaml")), []string{"raftsman-cluster-scope", "raftsman-manager"}; !slices.Equal(got, want) {
		t.Errorf("dist/install.yaml binds cluster-wide %v, want %v", got, want)
	}
	namespaced := readRBAC(t, "../dist/install-namespaced.yaml")
	if got, want := clusterBound(namespaced), []string{"raftsman-cluster-scope"}; !slices.Equal(got, want) {
		t.Errorf("dist/install-namespaced.yaml binds cluster-wide %v, want %v", got, want)
	}
	roleBound := 0
	for _, o := range namespaced {
		if o.Kind == "RoleBinding" && o.RoleRef.Kind == "ClusterRole" && o.RoleRef.Name == "raftsman-manager" {
			roleBound++
		}
	}
	if roleBound == 0 {
		t.Errorf("dist/install-namespaced.yaml binds raftsman-manager in no namespace")
	}
}
