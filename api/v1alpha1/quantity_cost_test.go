package v1alpha1_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
)

// maxQuantityRuleCost bounds the runtime cost, in the API server's CEL cost
// units, of one request's rules over a spec whose quantities are as costly
// as a user can write them: a hundredth of what the API server allows one
// rule (celconfig.PerCallLimit). The cost is counted by CEL itself, so it
// does not depend on the machine; the time each case takes is logged only.
const maxQuantityRuleCost = celconfig.PerCallLimit / 100

// TestQuantityRulesWorstCase runs the API server's CEL validator on every
// rule of the EtcdCluster CRD with the quantity fields (spec.storage.size,
// spec.maintenance.defrag.minFreeBytes, with spec.options.quotaBackendBytes
// and an old object for the rules that compare) set to the costliest
// inputs: the longest text the bounded pattern lets through to quantity(),
// and text it stops (a long exponent, a megabyte of digits) that parsed
// would cost seconds. Each must stay under maxQuantityRuleCost.
func TestQuantityRulesWorstCase(t *testing.T) {
	t.Parallel()
	crd := readCRD(t, "etcdclusters")
	internal := &apiextensions.JSONSchemaProps{}
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, internal, nil); err != nil {
		t.Fatal(err)
	}
	ss, err := structuralschema.NewStructural(internal)
	if err != nil {
		t.Fatal(err)
	}
	validator := cel.NewValidator(ss, true, celconfig.PerCallLimit)

	object := func(size, minFree string) map[string]any {
		return map[string]any{
			"apiVersion": "etcd.raftsman.io/v1alpha1", "kind": "EtcdCluster",
			"metadata": map[string]any{"name": "demo", "namespace": "default"},
			"spec": map[string]any{
				"version":     "3.6.16",
				"storage":     map[string]any{"size": size},
				"options":     map[string]any{"quotaBackendBytes": int64(1 << 20)},
				"maintenance": map[string]any{"defrag": map[string]any{"minFreeBytes": minFree}},
				"tls":         map[string]any{"client": map[string]any{}},
			},
		}
	}
	inputs := []struct {
		name, text string
		// refused: the text is refused for both fields; accepted: for
		// both. Neither: the longest texts the pattern lets through to
		// quantity(), which the rules refuse or not by their value.
		refused, accepted bool
	}{
		{name: "a usual size", text: "2Gi", accepted: true},
		{name: "longest parsed, fraction and binary suffix", text: "99999999999999.9999999Ei"},
		{name: "longest parsed, 18 digits and an exponent", text: "999999999999999999e99"},
		{name: "longest parsed, 24 digits", text: strings.Repeat("9", 18) + ".99999"},
		{name: "a long negative exponent", text: "1e-4000000", refused: true},
		{name: "a long exponent", text: "1e" + strings.Repeat("9", 1000), refused: true},
		{name: "a megabyte of digits", text: strings.Repeat("9", 1<<20), refused: true},
		{name: "a fractional exponent", text: "1e1.5", refused: true},
		{name: "negative", text: "-1Gi", refused: true},
	}
	for _, in := range inputs {
		for _, oldToo := range []bool{false, true} {
			name := in.name
			if oldToo {
				name += ", updating a cluster of the same"
			}
			t.Run(name, func(t *testing.T) {
				obj := object(in.text, in.text)
				var old any
				if oldToo {
					old = object(in.text, in.text)
				}
				start := time.Now()
				errs, remaining := validator.Validate(t.Context(), field.NewPath(""), ss, obj, old, celconfig.RuntimeCELCostBudget)
				took := time.Since(start)
				cost := celconfig.RuntimeCELCostBudget - remaining
				t.Logf("%q (%d characters): cost %d, %v, %d errors", trim(in.text), len(in.text), cost, took, len(errs))
				if cost > maxQuantityRuleCost {
					t.Errorf("the rules cost %d for %q, over %d", cost, trim(in.text), maxQuantityRuleCost)
				}
				for _, e := range errs {
					if e.Type == field.ErrorTypeInvalid && strings.Contains(e.Detail, "cost") {
						t.Errorf("a rule ran out of budget: %v", e)
					}
				}
				sizeRefused, minFreeRefused := false, false
				for _, e := range errs {
					switch {
					case strings.HasPrefix(e.Detail, "spec.storage.size must be a size"):
						sizeRefused = true
					case strings.HasPrefix(e.Detail, "spec.maintenance.defrag.minFreeBytes must be"):
						minFreeRefused = true
					}
				}
				if in.accepted && len(errs) > 0 {
					t.Errorf("%q refused: %v", trim(in.text), errs)
				}
				if in.refused && (!sizeRefused || !minFreeRefused) {
					t.Errorf("%q not refused as a storage size and minFreeBytes: %v", trim(in.text), errs)
				}
			})
		}
	}
}

func trim(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
