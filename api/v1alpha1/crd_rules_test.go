package v1alpha1_test

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"sigs.k8s.io/yaml"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// These tests need no API server: they read the generated CRDs and check
// them against the Go code that parses the same fields later.

const crdDir = "../../config/crd/bases"

func readCRD(t *testing.T, plural string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(crdDir, etcdv1.GroupVersion.Group+"_"+plural+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(b, crd); err != nil {
		t.Fatalf("%s: %v", plural, err)
	}
	return crd
}

// schemaAt walks from a CRD's root schema down the given properties.
func schemaAt(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition, path ...string) apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := *crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, p := range path {
		next, ok := s.Properties[p]
		if !ok {
			t.Fatalf("%s: no property %s", crd.Name, strings.Join(path, "."))
		}
		s = next
	}
	return s
}

// ruleWith returns the one rule of s whose message starts with prefix.
func ruleWith(t *testing.T, s apiextensionsv1.JSONSchemaProps, prefix string) string {
	t.Helper()
	var found []string
	for _, r := range s.XValidations {
		if strings.HasPrefix(r.Message, prefix) {
			found = append(found, r.Rule)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one rule with a message starting %q, found %d", prefix, len(found))
	}
	return found[0]
}

// celStrings are the single-quoted string literals of a CEL expression
// whose contents need no unescaping (the rules avoid backslashes).
func celStrings(t *testing.T, rule string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`'([^'\\]*)'`).FindAllStringSubmatch(rule, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestCRDsPassAPIServerValidation runs the API server's own checks of a CRD,
// CEL compilation and its cost estimate included: a rule estimated too
// expensive makes the API server refuse the whole CRD.
func TestCRDsPassAPIServerValidation(t *testing.T) {
	t.Parallel()
	for _, plural := range []string{"etcdclusters", "etcdmembers", "etcdbackups"} {
		t.Run(plural, func(t *testing.T) {
			t.Parallel()
			crd := readCRD(t, plural)
			apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
			internal := &apiextensions.CustomResourceDefinition{}
			if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(crd, internal, nil); err != nil {
				t.Fatal(err)
			}
			if errs := crdvalidation.ValidateCustomResourceDefinition(t.Context(), internal); len(errs) > 0 {
				for _, e := range errs {
					t.Error(e)
				}
			}
		})
	}
}

// TestExtraArgsListsMatchCRD: the lists of flags in the markers of
// spec.options.extraArgs are the Go lists, so that neither can change alone.
func TestExtraArgsListsMatchCRD(t *testing.T) {
	t.Parallel()
	for _, plural := range []string{"etcdclusters", "etcdmembers"} {
		extra := schemaAt(t, readCRD(t, plural), "spec", "options", "extraArgs")
		owned := celStrings(t, ruleWith(t, extra, "spec.options.extraArgs cannot set a flag the operator owns"))
		typed := celStrings(t, ruleWith(t, extra, "spec.options.extraArgs cannot set a flag that has a typed field"))
		if !slices.Equal(owned, etcdv1.OwnedExtraArgs) {
			t.Errorf("%s: owned flags in the CRD %q, in OwnedExtraArgs %q", plural, owned, etcdv1.OwnedExtraArgs)
		}
		if !slices.Equal(typed, etcdv1.TypedExtraArgs) {
			t.Errorf("%s: typed flags in the CRD %q, in TypedExtraArgs %q", plural, typed, etcdv1.TypedExtraArgs)
		}
		// The allowlist rule: the key pattern, then owned, typed and
		// allowed flags in that order.
		all := celStrings(t, ruleWith(t, extra, "spec.options.extraArgs may set only"))
		want := slices.Concat([]string{"^[a-z0-9][a-z0-9-]*$"}, etcdv1.OwnedExtraArgs, etcdv1.TypedExtraArgs, etcdv1.AllowedExtraArgs)
		if !slices.Equal(all, want) {
			t.Errorf("%s: the allowlist rule's strings are\n%q\nwant\n%q", plural, all, want)
		}
	}
	key := regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	seen := map[string]bool{}
	for _, f := range slices.Concat(etcdv1.AllowedExtraArgs, etcdv1.OwnedExtraArgs, etcdv1.TypedExtraArgs) {
		if !key.MatchString(f) {
			t.Errorf("flag %q does not match the key pattern", f)
		}
		if seen[f] {
			t.Errorf("flag %q is in more than one list, or twice", f)
		}
		seen[f] = true
	}
}

// TestNameLimitsMatchCRD: the length limits in the markers are the Go
// constants.
func TestNameLimitsMatchCRD(t *testing.T) {
	t.Parallel()
	cluster := readCRD(t, "etcdclusters")
	root := schemaAt(t, cluster)
	if r := ruleWith(t, root, "metadata.name of an EtcdCluster is at most"); !strings.Contains(r, "<= "+strconv.Itoa(etcdv1.MaxClusterNameLength)) {
		t.Errorf("cluster name rule %q does not use MaxClusterNameLength %d", r, etcdv1.MaxClusterNameLength)
	}
	backups := readCRD(t, "etcdbackups")
	if r := ruleWith(t, schemaAt(t, backups), "metadata.name of an EtcdBackup"); !strings.Contains(r, "<= "+strconv.Itoa(etcdv1.MaxBackupNameLength)) {
		t.Errorf("backup name rule %q does not use MaxBackupNameLength %d", r, etcdv1.MaxBackupNameLength)
	}
	if s := schemaAt(t, backups, "spec", "clusterName"); s.MaxLength == nil || *s.MaxLength != etcdv1.MaxClusterNameLength {
		t.Errorf("spec.clusterName of an EtcdBackup: maxLength %v, want MaxClusterNameLength %d", s.MaxLength, etcdv1.MaxClusterNameLength)
	}
	if s := schemaAt(t, cluster, "spec", "bootstrap", "restore", "backupName"); s.MaxLength == nil || *s.MaxLength != etcdv1.MaxBackupNameLength {
		t.Errorf("spec.bootstrap.restore.backupName: maxLength %v, want MaxBackupNameLength %d", s.MaxLength, etcdv1.MaxBackupNameLength)
	}
	extra := schemaAt(t, cluster, "spec", "options", "extraArgs")
	if v := extra.AdditionalProperties; v == nil || v.Schema == nil || v.Schema.MaxLength == nil || *v.Schema.MaxLength != etcdv1.MaxExtraArgValueLength {
		t.Errorf("spec.options.extraArgs values: not bounded by MaxExtraArgValueLength %d", etcdv1.MaxExtraArgValueLength)
	}
}

// TestCipherSuitesRuleMatchesGo: the cipher suites spec.options.extraArgs
// accepts are the names Go's crypto/tls knows, secure and insecure, the
// names etcd looks its --cipher-suites up in.
func TestCipherSuitesRuleMatchesGo(t *testing.T) {
	t.Parallel()
	extra := schemaAt(t, readCRD(t, "etcdclusters"), "spec", "options", "extraArgs")
	strs := celStrings(t, ruleWith(t, extra, "spec.options.extraArgs cipher-suites must be"))
	var names []string
	for _, c := range tls.CipherSuites() {
		names = append(names, c.Name)
	}
	for _, c := range tls.InsecureCipherSuites() {
		names = append(names, c.Name)
	}
	alt := strings.Join(names, "|")
	want := "^(" + alt + ")(,(" + alt + "))*$"
	if !slices.Contains(strs, want) {
		t.Errorf("the cipher-suites rule's pattern is not built from Go's names; its strings: %q\nwant %q", strs, want)
	}
}
