package controllers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/controllers/backup"
	"github.com/raftsman/raftsman/controllers/data"
)

// TestNoUndeclaredStatusReads: every status field has an owner, and a
// controller reads a status field another
// controller writes only through its accessor in api/v1alpha1
// (contracts.go), which checks the owner's condition for the current
// generation. A direct read of another's field in a controller's package
// fails here, with where it is.
func TestNoUndeclaredStatusReads(t *testing.T) {
	owner := map[string]string{} // Go field name -> "kind/owning controller"
	for kind, typ := range map[string]reflect.Type{
		"EtcdCluster": reflect.TypeFor[etcdv1.EtcdClusterStatus](),
		"EtcdMember":  reflect.TypeFor[etcdv1.EtcdMemberStatus](),
		"EtcdBackup":  reflect.TypeFor[etcdv1.EtcdBackupStatus](),
		"EtcdUser":    reflect.TypeFor[etcdv1.EtcdUserStatus](),
	} {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "conditions" {
				continue // conditions are the contract itself
			}
			o, ok := etcdv1.StatusFields[kind][name]
			if !ok {
				// It would never be written (kube.ApplyStatus refuses it).
				t.Errorf("%s status.%s has no owner in StatusFields", kind, name)
			}
			o = kind + "/" + o
			if prev, ok := owner[f.Name]; ok && prev != o {
				t.Fatalf("status field %s has two owners (%s, %s): the check by name cannot tell them apart", f.Name, prev, o)
			}
			owner[f.Name] = o
		}
	}
	// Each controller package, with the status it writes: kind and owner
	// name in StatusFields. The owner name is not always the package's:
	// controllers/data writes the cluster's status as "backup"
	// (data.StatusOwner), but an EtcdBackup's status is the backup
	// controller's alone.
	writes := map[string][]string{
		"cluster": {"EtcdCluster/cluster", "EtcdMember/cluster"},
		"member":  {"EtcdMember/member"},
		"tls":     {"EtcdCluster/tls"},
		"backup":  {"EtcdBackup/" + backup.ControllerName},
		"data":    {"EtcdCluster/" + data.StatusOwner},
		"user":    {"EtcdUser/user"},
	}
	dirs, err := filepath.Glob("*/controller.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if ctl := filepath.Dir(d); ctl != "undecodable" && writes[ctl] == nil {
			t.Errorf("controller package %s is not checked: add the status it writes to this test", ctl)
		}
	}
	var found []string
	for ctl, own := range writes {
		found = append(found, undeclaredReads(t, ctl, own, owner)...)
	}
	sort.Strings(found)
	for _, f := range found {
		t.Error(f)
	}
}

// undeclaredReads are the reads of X.Status.F in the package ctl of a field
// F whose owner (kind/controller) is not one of own.
func undeclaredReads(t *testing.T, ctl string, own []string, owner map[string]string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(ctl, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Errorf("package %s has no Go files", ctl)
	}
	var found []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			inner, ok := sel.X.(*ast.SelectorExpr)
			if !ok || inner.Sel.Name != "Status" {
				return true
			}
			if o, ok := owner[sel.Sel.Name]; ok && !slices.Contains(own, o) {
				found = append(found, fset.Position(sel.Pos()).String()+": "+ctl+" reads Status."+sel.Sel.Name+", which "+o+" writes")
			}
			return true
		})
	}
	return found
}
