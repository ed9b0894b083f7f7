package testenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/yaml"
)

// TypeConverters are the type converters a fake client needs to apply
// Raftsman's kinds as the API server does: from the CRDs' own schemas, so
// that a list of conditions (listType map, keyed by type) is merged entry by
// entry between field managers, not replaced whole. Without them the fake
// deduces a schema in which every list is atomic, and a controller applying
// its conditions would remove another's. Kubernetes' own kinds come after,
// from client-go.
func TypeConverters(t testing.TB) []managedfields.TypeConverter {
	t.Helper()
	dir, err := crdDir()
	if err != nil {
		t.Fatal(err)
	}
	crd, err := crdTypeConverter(dir)
	if err != nil {
		t.Fatal(err)
	}
	return []managedfields.TypeConverter{
		crd,
		clientgoapplyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
		managedfields.NewDeducedTypeConverter(),
	}
}

// crdTypeConverter builds one type converter from every CRD in dir. Each
// version's OpenAPI schema becomes a definition named after its kind and
// tagged with its group, version and kind, which is how the converter finds
// the schema of an object.
func crdTypeConverter(dir string) (managedfields.TypeConverter, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	defs := map[string]*spec.Schema{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(raw, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			j, err := json.Marshal(v.Schema.OpenAPIV3Schema)
			if err != nil {
				return nil, err
			}
			s := &spec.Schema{}
			if err := json.Unmarshal(j, s); err != nil {
				return nil, fmt.Errorf("%s %s: %w", f, v.Name, err)
			}
			s.AddExtension("x-kubernetes-group-version-kind", []any{map[string]any{
				"group": crd.Spec.Group, "version": v.Name, "kind": crd.Spec.Names.Kind,
			}})
			defs[fmt.Sprintf("%s.%s.%s", crd.Spec.Group, v.Name, crd.Spec.Names.Kind)] = s
		}
	}
	return managedfields.NewTypeConverter(defs, true)
}
