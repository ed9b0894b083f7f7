package v1alpha1_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

// The start of each CEL rule's message: a refused request must say which
// field is wrong, so each case checks that the message reached the user.
const (
	msgVersion          = "spec.version must be an etcd release like 3.6.16"
	msgProbeEndpoints   = "spec.version 3.5 must be 3.5.11 or later"
	msgQuorumLossAfter  = "spec.recovery.quorumLossAfter must be a duration like 5m"
	msgBackupMember     = "spec.member must name an EtcdMember of the cluster"
	msgExperimental37   = "spec.options.extraArgs cannot set experimental- flags with etcd 3.7 or later"
	msgStorageClass     = "spec.storage.storageClassName cannot change once set"
	msgSizeShrink       = "spec.storage.size may grow but never shrink"
	msgSizeFormat       = "spec.storage.size must be a size like 1Gi or 512Mi"
	msgMedium           = "spec.storage.medium cannot change"
	msgStorageClassName = "spec.storage.storageClassName must name a StorageClass"
	msgShrinkDatabase   = "spec.storage.size may change only to a size whose default quota"
	msgElection         = "spec.options.electionTimeoutMillis must be at least 5 times spec.options.heartbeatIntervalMillis"
	msgOwnedFlag        = "spec.options.extraArgs cannot set a flag the operator owns"
	msgTypedFlag        = "spec.options.extraArgs cannot set a flag that has a typed field in spec.options"
	msgLeadingDashes    = "spec.options.extraArgs keys are flag names without leading dashes"
	msgClusterName      = "spec.clusterName cannot change"
	msgPeerURL          = "spec.peerURL cannot change"
	msgNoBackToNew      = "spec.initialClusterState cannot go back to New"
	msgUnsupported      = "Unsupported value"
	msgRequired         = "Required value"
	msgAtLeastOne       = "should be greater than or equal to 1"
	msgAtMostNine       = "should be less than or equal to 9"
	msgAtMost64Args     = "must have at most 64 items"
	msgAtLeastZero      = "should be greater than or equal to 0"
	msgHeartbeatRange   = "spec.options.heartbeatIntervalMillis"
	msgElectionRange    = "spec.options.electionTimeoutMillis"
	msgTLSDisabled      = "spec.tls.disabled cannot change on an existing cluster"
	msgTLSPeer          = "spec.tls.peer cannot change on an existing cluster"
	msgTLSClient        = "spec.tls.client's source cannot change on an existing cluster"
	msgTLSMutual        = "spec.tls.client.mutual cannot change on an existing cluster"
	msgOneSource        = "set at most one of operator, secretRef and certManager"
	msgRenewBefore      = "spec.tls.renewBefore must be shorter than spec.tls.certificateLifetime"
	msgLifetime         = "spec.tls.certificateLifetime must be at least 1m"
	msgDisabledSource   = "spec.tls.disabled: true cannot be combined with certificate sources"
	msgAuthNeedsMTLS    = "spec.auth.enabled needs TLS with client certificates"
	msgSuspendMemory    = "spec.suspend cannot be set on a cluster with spec.storage.medium Memory"
	msgBootstrap        = "spec.bootstrap cannot change"
	msgOneDest          = "a backup destination is exactly one of s3 or pvc"
	msgOneRestore       = "spec.bootstrap.restore names exactly one of backupName or source"
	msgEndpoint         = "spec.s3.endpoint must be a URL"
	msgPVCPath          = "spec.pvc.path is a relative folder"

	msgMaxAge              = "spec.backup.retention.maxAge must be a duration like 168h"
	msgLifetimeFormat      = "spec.tls.certificateLifetime must be a duration like 2160h"
	msgRenewBeforeFormat   = "spec.tls.renewBefore must be a duration like 720h"
	msgRetentionRevision   = "spec.options.autoCompactionRetention must be a whole number of revisions"
	msgRetentionPeriodic   = "spec.options.autoCompactionRetention must be whole hours like 24"
	msgSchedule            = "must be a cron expression of 5 fields"
	msgQuotaVolume         = "must be less than spec.storage.size"
	msgMinFreeBytes        = "spec.maintenance.defrag.minFreeBytes must be a whole number of bytes"
	msgEveryMinimum        = "@every must be at least 1m"
	msgSecretName          = "name must name a Secret"
	msgClaimName           = "spec.pvc.claimName must name a PersistentVolumeClaim"
	msgIssuerName          = "issuerRef.name must name a cert-manager issuer"
	msgRestoreBackupName   = "spec.bootstrap.restore.backupName must name an EtcdBackup"
	msgClusterNameLength   = "metadata.name of an EtcdCluster is at most 35 characters: the final backup before a suspend"
	msgClusterNameDNS      = "metadata.name of an EtcdCluster must be a DNS-1035 label"
	msgBackupName          = "metadata.name of an EtcdBackup must be a DNS-1123 label"
	msgBackupClusterName   = "spec.clusterName must name an EtcdCluster"
	msgLabelKeys           = "spec.podTemplate.metadata.labels keys must be label keys"
	msgAnnotationKeys      = "spec.podTemplate.metadata.annotations keys must be annotation keys"
	msgOperatorLabels      = "spec.podTemplate.metadata.labels cannot set labels under etcd.raftsman.io/"
	msgOperatorAnnotations = "spec.podTemplate.metadata.annotations cannot set annotations under etcd.raftsman.io/"
	msgNodeSelector        = "spec.podTemplate.nodeSelector keys must be label keys"
	msgTolerationNoKey     = "spec.podTemplate.tolerations: a toleration without a key must have operator Exists"
	msgTolerationExists    = "spec.podTemplate.tolerations: a toleration with operator Exists has no value"
	msgTolerationSeconds   = "spec.podTemplate.tolerations: tolerationSeconds needs effect NoExecute"
	msgTolerationKey       = "spec.podTemplate.tolerations key must be a taint key"
	msgPriorityClass       = "spec.podTemplate.priorityClassName must name a PriorityClass"
	msgTLSMinVersion       = "spec.options.extraArgs tls-min-version must be TLS1.2 or TLS1.3"
	msgTLSMaxVersion       = "spec.options.extraArgs tls-max-version must be TLS1.2, TLS1.3 or empty"
	msgTLSMinAboveMax      = "spec.options.extraArgs tls-min-version TLS1.3 is above tls-max-version TLS1.2"
	msgCipherSuitesTLS13   = "spec.options.extraArgs cipher-suites cannot be set with tls-min-version TLS1.3"
	msgCipherSuites        = "spec.options.extraArgs cipher-suites must be a comma-separated list of Go's cipher suite names"
	msgRenewBeforeMinimum  = "spec.tls.renewBefore must be at least 1m"
	msgBucket              = "spec.s3.bucket must be an S3 bucket name"
	msgNotAllowedFlag      = "spec.options.extraArgs may set only the etcd flags on the allowlist (see docs/configuration.md"
	msgTooLong             = "Too long"
)

// ownedFlags are the etcd flags the operator sets itself; the extraArgs rule
// must refuse every one of them. pkg/resources checks that the list covers
// every flag the Pod builder sets.
var ownedFlags = etcdv1.OwnedExtraArgs

// refusedFlags are real etcd flags (of 3.5, 3.6 or 3.7) that change a
// member's identity, membership, durability or security, or that make etcd
// do something else than serve; none is on the allowlist.
var refusedFlags = []string{
	"unsafe-no-fsync", "strict-reconfig-check", "max-learners", "experimental-max-learners",
	"enable-pprof", "enable-v2", "experimental-enable-v2v3", "v2-deprecation",
	"experimental-peer-skip-client-san-verification", "peer-skip-client-san-verification",
	"auth-token", "bcrypt-cost", "host-whitelist", "cors", "client-crl-file", "peer-crl-file",
	"peer-cert-allowed-cn", "client-cert-allowed-hostname", "self-signed-cert-validity",
	"client-cert-file", "client-key-file", "peer-client-cert-file", "peer-client-key-file",
	"discovery-endpoints", "discovery-token", "discovery-proxy", "discovery-fallback", "discovery-srv-name",
	"proxy", "proxy-refresh-interval", "socket-reuse-port", "socket-reuse-address", "version",
	"experimental-flag-1", "no-such-flag",
}

func TestEnvValidation(t *testing.T) {
	c := startEnv(t)
	t.Run("EtcdCluster", func(t *testing.T) { t.Parallel(); testClusterValidation(t, c) })
	t.Run("EtcdMember", func(t *testing.T) { t.Parallel(); testMemberValidation(t, c) })
	t.Run("RequiredFields", func(t *testing.T) { t.Parallel(); testRequiredFields(t, c) })
	t.Run("Defaults", func(t *testing.T) { t.Parallel(); testDefaults(t, c) })
	t.Run("MinimalManifests", func(t *testing.T) { t.Parallel(); testMinimalManifests(t, c) })
	t.Run("EtcdBackup", func(t *testing.T) { t.Parallel(); testBackupValidation(t, c) })
	t.Run("EtcdUser", func(t *testing.T) { t.Parallel(); testUserValidation(t, c) })
	t.Run("OldSchemaObjectsRefused", func(t *testing.T) { t.Parallel(); testOldSchemaObjectsRefused(t, c) })
	t.Run("ShrinkHoldsTheDatabase", func(t *testing.T) { t.Parallel(); testShrinkHoldsTheDatabase(t, c) })
}

// testShrinkHoldsTheDatabase: a smaller spec.storage.size is refused when
// the default quota it brings would be below a member's database as the
// status reports it; an explicit quota is checked against the size alone.
func testShrinkHoldsTheDatabase(t *testing.T, c client.Client) {
	for _, tc := range []struct {
		name    string
		dbSize  int64
		quota   bool
		to      string
		wantErr []string
	}{
		// 1Gi: quota (1Gi - 384Mi) / 2 = 320Mi; 512Mi: (512Mi - 256Mi) / 2 = 128Mi.
		{name: "the database fits", dbSize: 300 << 20, to: "1Gi"},
		{name: "the database does not fit", dbSize: 300 << 20, to: "512Mi", wantErr: []string{msgShrinkDatabase}},
		{name: "the database as large as the quota", dbSize: 128 << 20, to: "512Mi", wantErr: []string{msgShrinkDatabase}},
		{name: "a quota of its own", dbSize: 300 << 20, quota: true, to: "1Gi"},
		{name: "no size reported", to: "512Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := &etcdv1.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: newNamespace(t, c)},
				Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16", Storage: etcdv1.StorageSpec{Size: ptr.To(resource.MustParse("2Gi"))}},
			}
			if tc.quota {
				obj.Spec.Options.QuotaBackendBytes = ptr.To(int64(512 << 20))
			}
			if err := c.Create(t.Context(), obj); err != nil {
				t.Fatal(err)
			}
			status := fmt.Sprintf(`{"status":{"members":[{"name":"demo-a","healthy":true,"dbSize":%d},{"name":"demo-b","healthy":true,"dbSize":%d}]}}`, tc.dbSize/2, tc.dbSize)
			if err := c.Status().Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(status))); err != nil {
				t.Fatal(err)
			}
			err := c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"storage":{"size":"`+tc.to+`"}}}`)))
			checkErr(t, err, tc.wantErr)
		})
	}
}

// validationCase is one request against the API server. The object is
// created with spec; when patch is set, the create must succeed and the JSON
// merge patch is the request under test. No wantErr means it must succeed.
type validationCase[S any] struct {
	name    string
	objName string // the object's name; "demo" or "demo-a" when empty
	spec    func(*S)
	patch   string
	status  bool // the patch goes to the status subresource
	wantErr []string
}

// flagValue is a value etcd accepts for a flag of the allowlist: the TLS
// flags have rules on their values, the others take "1" here.
func flagValue(flag string) string {
	switch flag {
	case "tls-min-version", "tls-max-version":
		return "TLS1.2"
	case "cipher-suites":
		return "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
	}
	return "1"
}

func testClusterValidation(t *testing.T, c client.Client) {
	quantity := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	size := func(s string) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) { sp.Storage.Size = quantity(s) }
	}
	options := func(o etcdv1.EtcdOptions) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) { sp.Options = o }
	}
	extraArgs := func(kv ...string) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) {
			sp.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{}
			for i := 0; i+1 < len(kv); i += 2 {
				sp.Options.ExtraArgs[kv[i]] = etcdv1.ExtraArgValue(kv[i+1])
			}
		}
	}
	// manyArgs sets n flags of the allowlist, and made-up ones beyond it:
	// n over 64 is refused for its count whatever else is wrong.
	manyArgs := func(n int) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) {
			sp.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{}
			for i := range n {
				k := fmt.Sprintf("made-up-flag-%d", i)
				if i < len(etcdv1.AllowedExtraArgs) {
					k = etcdv1.AllowedExtraArgs[i]
				}
				sp.Options.ExtraArgs[k] = etcdv1.ExtraArgValue(flagValue(k))
			}
		}
	}
	if len(etcdv1.AllowedExtraArgs) < 64 {
		t.Errorf("the 64 extra args case needs 64 allowed flags, the allowlist has %d", len(etcdv1.AllowedExtraArgs))
	}
	version := func(v string) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) { sp.Version = v }
	}
	replicas := func(n int32) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) { sp.Replicas = &n }
	}
	memory := func(sp *etcdv1.EtcdClusterSpec) { sp.Storage.Medium = etcdv1.StorageMediumMemory }
	class := func(sp *etcdv1.EtcdClusterSpec) { sp.Storage.StorageClassName = ptr.To("fast") }

	tlsSpec := func(f func(*etcdv1.TLSSpec)) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) { f(&sp.TLS) }
	}
	userSecret := &corev1.LocalObjectReference{Name: "mine"}
	issuer := &etcdv1.CertManagerSource{IssuerRef: etcdv1.IssuerRef{Name: "ca"}}
	duration := func(s string) *metav1.Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Duration{Duration: d}
	}

	s3dest := etcdv1.BackupDestination{S3: &etcdv1.S3Destination{Endpoint: "https://s3.example.com", Bucket: "bkt", CredentialsSecretRef: corev1.LocalObjectReference{Name: "c"}}}
	restoreFrom := func(name string) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) {
			sp.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: name}}
		}
	}

	type tc = validationCase[etcdv1.EtcdClusterSpec]
	cases := []tc{
		// spec.tls and spec.auth
		{name: "tls disabled", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Disabled = true })},
		{name: "tls turned off later", patch: `{"spec":{"tls":{"disabled":true}}}`, wantErr: []string{msgTLSDisabled}},
		{name: "tls turned on later", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Disabled = true }), patch: `{"spec":{"tls":{"disabled":false}}}`, wantErr: []string{msgTLSDisabled}},
		{name: "tls disabled with a source", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Disabled = true; t.Peer = &etcdv1.TLSSource{SecretRef: userSecret} }), wantErr: []string{msgDisabledSource}},
		{name: "peer from a user Secret", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Peer = &etcdv1.TLSSource{SecretRef: userSecret} })},
		{name: "peer with two sources", spec: tlsSpec(func(t *etcdv1.TLSSpec) {
			t.Peer = &etcdv1.TLSSource{SecretRef: userSecret, CertManager: issuer}
		}), wantErr: []string{msgOneSource}},
		{name: "client with two sources", spec: tlsSpec(func(t *etcdv1.TLSSpec) {
			t.Client.Operator = &etcdv1.OperatorTLSSource{}
			t.Client.SecretRef = userSecret
		}), wantErr: []string{msgOneSource}},
		{name: "client from cert-manager", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Client.CertManager = issuer })},
		{name: "peer source changes", patch: `{"spec":{"tls":{"peer":{"secretRef":{"name":"mine"}}}}}`, wantErr: []string{msgTLSPeer}},
		{name: "peer Secret renamed", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Peer = &etcdv1.TLSSource{SecretRef: userSecret} }),
			patch: `{"spec":{"tls":{"peer":{"secretRef":{"name":"other"}}}}}`, wantErr: []string{msgTLSPeer}},
		{name: "peer operator source written out", patch: `{"spec":{"tls":{"peer":{"operator":{}}}}}`},
		{name: "client source changes", patch: `{"spec":{"tls":{"client":{"certManager":{"issuerRef":{"name":"ca"}}}}}}`, wantErr: []string{msgTLSClient}},
		{name: "client mutual turned off", patch: `{"spec":{"tls":{"client":{"mutual":false}}}}`, wantErr: []string{msgTLSMutual}},
		{name: "lifetime changes", patch: `{"spec":{"tls":{"certificateLifetime":"720h","renewBefore":"24h"}}}`},
		{name: "renewBefore as long as the lifetime", spec: tlsSpec(func(t *etcdv1.TLSSpec) {
			t.CertificateLifetime, t.RenewBefore = duration("24h"), duration("24h")
		}), wantErr: []string{msgRenewBefore}},
		{name: "renewBefore longer than the default lifetime", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.RenewBefore = duration("3000h") }), wantErr: []string{msgRenewBefore}},
		{name: "lifetime under a minute", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.CertificateLifetime = duration("30s") }), wantErr: []string{msgLifetime}},
		{name: "lifetime not a duration", patch: `{"spec":{"tls":{"certificateLifetime":"a year"}}}`, wantErr: []string{"spec.tls.certificateLifetime"}},
		{name: "auth on", spec: func(sp *etcdv1.EtcdClusterSpec) { sp.Auth.Enabled = true }},
		{name: "auth turned on later", patch: `{"spec":{"auth":{"enabled":true}}}`},
		{name: "auth without TLS", spec: func(sp *etcdv1.EtcdClusterSpec) { sp.Auth.Enabled = true; sp.TLS.Disabled = true }, wantErr: []string{msgAuthNeedsMTLS}},
		{name: "auth without client certificates", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Auth.Enabled = true
			sp.TLS.Client.Mutual = ptr.To(false)
		}, wantErr: []string{msgAuthNeedsMTLS}},

		{name: "minimal spec", spec: nil},
		// Pod template: what the API server checks in a Pod, checked here.
		{name: "pod labels, annotations, node selector, tolerations, priority class", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"team":"a","example.com/tier":"db"},"annotations":{"example.com/note":"free text: any characters"}},"nodeSelector":{"kubernetes.io/os":"linux"},"tolerations":[{"key":"dedicated","operator":"Equal","value":"etcd","effect":"NoSchedule"},{"operator":"Exists"},{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":30}],"priorityClassName":"system-cluster-critical"}}}`},
		{name: "label value with a space", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"team":"a b"}}}}}`, wantErr: []string{"spec.podTemplate.metadata.labels.team", "should match"}},
		{name: "label value of 64 characters", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"team":"` + strings.Repeat("a", 64) + `"}}}}}`, wantErr: []string{"spec.podTemplate.metadata.labels.team", "Too long"}},
		{name: "label key with two slashes", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"a/b/c":"x"}}}}}`, wantErr: []string{msgLabelKeys}},
		{name: "label key name of 64 characters", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"` + strings.Repeat("a", 64) + `":"x"}}}}}`, wantErr: []string{msgLabelKeys}},
		{name: "label key prefix of 254 characters", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"` + strings.Repeat("a", 254) + `/x":"x"}}}}}`, wantErr: []string{msgLabelKeys}},
		{name: "the operator's label", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"etcd.raftsman.io/cluster":"other"}}}}}`, wantErr: []string{msgOperatorLabels}},
		{name: "the operator's selector label", patch: `{"spec":{"podTemplate":{"metadata":{"labels":{"app.kubernetes.io/instance":"other"}}}}}`, wantErr: []string{msgOperatorLabels}},
		{name: "the operator's annotation", patch: `{"spec":{"podTemplate":{"metadata":{"annotations":{"etcd.raftsman.io/pod-spec-hash":"x"}}}}}`, wantErr: []string{msgOperatorAnnotations}},
		{name: "annotation key with a space", patch: `{"spec":{"podTemplate":{"metadata":{"annotations":{"a b":"x"}}}}}`, wantErr: []string{msgAnnotationKeys}},
		{name: "annotation value over 3072 characters", patch: `{"spec":{"podTemplate":{"metadata":{"annotations":{"a":"` + strings.Repeat("x", 3073) + `"}}}}}`, wantErr: []string{"spec.podTemplate.metadata.annotations.a", "Too long"}},
		{name: "node selector key with a space", patch: `{"spec":{"podTemplate":{"nodeSelector":{"a b":"x"}}}}`, wantErr: []string{msgNodeSelector}},
		{name: "node selector value with a slash", patch: `{"spec":{"podTemplate":{"nodeSelector":{"disk":"a/b"}}}}`, wantErr: []string{"spec.podTemplate.nodeSelector.disk", "should match"}},
		{name: "toleration without a key, operator Equal", patch: `{"spec":{"podTemplate":{"tolerations":[{"value":"x"}]}}}`, wantErr: []string{msgTolerationNoKey}},
		{name: "toleration Exists with a value", patch: `{"spec":{"podTemplate":{"tolerations":[{"key":"k","operator":"Exists","value":"x"}]}}}`, wantErr: []string{msgTolerationExists}},
		{name: "tolerationSeconds without NoExecute", patch: `{"spec":{"podTemplate":{"tolerations":[{"key":"k","operator":"Exists","effect":"NoSchedule","tolerationSeconds":5}]}}}`, wantErr: []string{msgTolerationSeconds}},
		{name: "toleration with an unknown effect", patch: `{"spec":{"podTemplate":{"tolerations":[{"key":"k","operator":"Exists","effect":"NoRun"}]}}}`, wantErr: []string{"spec.podTemplate.tolerations[0].effect", msgUnsupported}},
		{name: "toleration with an unknown operator", patch: `{"spec":{"podTemplate":{"tolerations":[{"key":"k","operator":"In"}]}}}`, wantErr: []string{"spec.podTemplate.tolerations[0].operator", msgUnsupported}},
		{name: "toleration key with a space", patch: `{"spec":{"podTemplate":{"tolerations":[{"key":"a b","operator":"Exists"}]}}}`, wantErr: []string{msgTolerationKey}},
		{name: "priority class with capitals", patch: `{"spec":{"podTemplate":{"priorityClassName":"High"}}}`, wantErr: []string{msgPriorityClass}},
		// TLS flags, as etcd checks them at start.
		{name: "TLS 1.3 only", spec: extraArgs("tls-min-version", "TLS1.3")},
		{name: "TLS 1.2 to 1.3 with cipher suites", spec: extraArgs("tls-min-version", "TLS1.2", "tls-max-version", "TLS1.3", "cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")},
		{name: "no TLS maximum", spec: extraArgs("tls-max-version", "")},
		{name: "TLS 1.1", spec: extraArgs("tls-min-version", "TLS1.1"), wantErr: []string{msgTLSMinVersion}},
		{name: "TLS maximum 1.0", spec: extraArgs("tls-max-version", "TLS1.0"), wantErr: []string{msgTLSMaxVersion}},
		{name: "TLS minimum above maximum", spec: extraArgs("tls-min-version", "TLS1.3", "tls-max-version", "TLS1.2"), wantErr: []string{msgTLSMinAboveMax}},
		{name: "cipher suites with TLS 1.3 only", spec: extraArgs("tls-min-version", "TLS1.3", "cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"), wantErr: []string{msgCipherSuitesTLS13}},
		{name: "an unknown cipher suite", spec: extraArgs("cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_MADE_UP"), wantErr: []string{msgCipherSuites}},
		{name: "cipher suites with spaces", spec: extraArgs("cipher-suites", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"), wantErr: []string{msgCipherSuites}},
		{name: "extra arg value over 1024 characters", spec: extraArgs("log-outputs", strings.Repeat("x", 1025)), wantErr: []string{"spec.options.extraArgs.log-outputs", "Too long"}},
		{name: "renewBefore under a minute", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.RenewBefore = duration("30s") }), wantErr: []string{msgRenewBeforeMinimum}},
		// S3 names.
		{name: "S3 bucket with capitals", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"http://s3","bucket":"My-Bucket","credentialsSecretRef":{"name":"c"}}}}}}`, wantErr: []string{msgBucket}},
		{name: "S3 bucket with two dots", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"http://s3","bucket":"a..b","credentialsSecretRef":{"name":"c"}}}}}}`, wantErr: []string{msgBucket}},
		{name: "S3 bucket like an IP address", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"http://s3","bucket":"192.168.5.4","credentialsSecretRef":{"name":"c"}}}}}}`, wantErr: []string{msgBucket}},
		{name: "S3 bucket of 64 characters", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"http://s3","bucket":"` + strings.Repeat("b", 64) + `","credentialsSecretRef":{"name":"c"}}}}}}`, wantErr: []string{"spec.backup.destination.s3.bucket", "Too long"}},
		{name: "S3 bucket with dots and a region", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"http://s3","bucket":"etcd.backups-1","region":"eu-west-1","credentialsSecretRef":{"name":"c"}}}}}}`},
		{name: "S3 region with a slash", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"http://s3","bucket":"bkt","region":"eu/west","credentialsSecretRef":{"name":"c"}}}}}}`, wantErr: []string{"spec.backup.destination.s3.region", "should match"}},

		// spec.deletionPolicy
		{name: "deletion policy Retain", patch: `{"spec":{"deletionPolicy":"Retain"}}`},
		{name: "deletion policy back to Delete", spec: func(sp *etcdv1.EtcdClusterSpec) { sp.DeletionPolicy = etcdv1.DeletionPolicyRetain }, patch: `{"spec":{"deletionPolicy":"Delete"}}`},
		{name: "unknown deletion policy", patch: `{"spec":{"deletionPolicy":"Orphan"}}`, wantErr: []string{"spec.deletionPolicy", msgUnsupported}},

		// spec.recovery
		{name: "automatic quorum recovery after 5m", patch: `{"spec":{"recovery":{"quorumLoss":"Automatic","quorumLossAfter":"5m"}}}`},
		{name: "quorum recovery after 1h30m", patch: `{"spec":{"recovery":{"quorumLossAfter":"1h30m"}}}`},
		{name: "unknown quorum loss policy", patch: `{"spec":{"recovery":{"quorumLoss":"Always"}}}`, wantErr: []string{"spec.recovery.quorumLoss", msgUnsupported}},
		{name: "quorum loss after days", patch: `{"spec":{"recovery":{"quorumLossAfter":"1d"}}}`, wantErr: []string{"spec.recovery.quorumLossAfter", msgQuorumLossAfter}},
		{name: "quorum loss after a bare number", patch: `{"spec":{"recovery":{"quorumLossAfter":"300"}}}`, wantErr: []string{"spec.recovery.quorumLossAfter", msgQuorumLossAfter}},
		{name: "quorum loss after 10s", patch: `{"spec":{"recovery":{"quorumLossAfter":"10s"}}}`, wantErr: []string{"spec.recovery.quorumLossAfter", msgQuorumLossAfter}},
		// spec.options.quotaBackendBytes below the volume; spec.maintenance
		{name: "quota below the volume", patch: `{"spec":{"storage":{"size":"1Gi"},"options":{"quotaBackendBytes":536870912}}}`},
		{name: "quota 0, etcd's own 2 GiB, above the volume", patch: `{"spec":{"options":{"quotaBackendBytes":0}}}`, wantErr: []string{msgQuotaVolume}},
		{name: "quota 0, etcd's own 2 GiB, below the volume", patch: `{"spec":{"storage":{"size":"4Gi"},"options":{"quotaBackendBytes":0}}}`},
		{name: "quota at the volume size", patch: `{"spec":{"storage":{"size":"1Gi"},"options":{"quotaBackendBytes":1073741824}}}`, wantErr: []string{msgQuotaVolume}},
		{name: "quota above the volume size", patch: `{"spec":{"options":{"quotaBackendBytes":8589934592}}}`, wantErr: []string{msgQuotaVolume}},
		{name: "defrag schedule and thresholds", patch: `{"spec":{"maintenance":{"defrag":{"schedule":"0 3 * * sun","minFreePercent":30,"minFreeBytes":"10Mi"}}}}`},
		{name: "defrag disabled", patch: `{"spec":{"maintenance":{"defrag":{"disabled":true}}}}`},
		{name: "defrag schedule not cron", patch: `{"spec":{"maintenance":{"defrag":{"schedule":"weekly"}}}}`, wantErr: []string{"spec.maintenance.defrag.schedule", msgSchedule}},
		{name: "defrag every 10s", patch: `{"spec":{"maintenance":{"defrag":{"schedule":"@every 10s"}}}}`, wantErr: []string{"spec.maintenance.defrag.schedule", msgEveryMinimum}},
		{name: "defrag percent 0", patch: `{"spec":{"maintenance":{"defrag":{"minFreePercent":0}}}}`, wantErr: []string{"spec.maintenance.defrag.minFreePercent", "should be greater than or equal to 1"}},
		{name: "defrag percent 101", patch: `{"spec":{"maintenance":{"defrag":{"minFreePercent":101}}}}`, wantErr: []string{"spec.maintenance.defrag.minFreePercent", "should be less than or equal to 100"}},
		{name: "defrag bytes fractional", patch: `{"spec":{"maintenance":{"defrag":{"minFreeBytes":"100m"}}}}`, wantErr: []string{msgMinFreeBytes}},
		{name: "defrag bytes negative", patch: `{"spec":{"maintenance":{"defrag":{"minFreeBytes":"-1Mi"}}}}`, wantErr: []string{msgMinFreeBytes}},
		{name: "defrag bytes with a long exponent", patch: `{"spec":{"maintenance":{"defrag":{"minFreeBytes":"1e-4000000"}}}}`, wantErr: []string{"spec.maintenance.defrag.minFreeBytes", msgMinFreeBytes}},
		{name: "defrag bytes with a fractional exponent", patch: `{"spec":{"maintenance":{"defrag":{"minFreeBytes":"1e1.5"}}}}`, wantErr: []string{msgMinFreeBytes}},
		{name: "quorum loss after out of Go's range", patch: `{"spec":{"recovery":{"quorumLossAfter":"99999999999h"}}}`, wantErr: []string{"spec.recovery.quorumLossAfter"}},

		// spec.suspend, spec.backup, spec.bootstrap
		{name: "suspend", patch: `{"spec":{"suspend":true}}`},
		{name: "suspend a memory cluster", spec: memory, patch: `{"spec":{"suspend":true}}`, wantErr: []string{msgSuspendMemory}},
		{name: "backup to S3", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Backup = &etcdv1.ClusterBackupSpec{Schedule: "@hourly", Destination: s3dest}
		}},
		{name: "backup to a PVC", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"pvc":{"claimName":"b","path":"etcd/x"}}}}}`},
		{name: "backup to two places", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"pvc":{"claimName":"b"},"s3":{"endpoint":"http://s3","bucket":"bkt","credentialsSecretRef":{"name":"c"}}}}}}`, wantErr: []string{msgOneDest}},
		{name: "backup to nowhere", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{}}}}`, wantErr: []string{msgOneDest}},
		{name: "S3 endpoint without a scheme", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"s3.example.com","bucket":"bkt","credentialsSecretRef":{"name":"c"}}}}}}`, wantErr: []string{msgEndpoint}},
		{name: "PVC path escaping its folder", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"pvc":{"claimName":"b","path":"../etc"}}}}}`, wantErr: []string{msgPVCPath}},
		{name: "restore from a backup", spec: restoreFrom("b1")},
		{name: "restore from a key", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{Source: &etcdv1.RestoreSource{BackupDestination: s3dest, Key: "ns/c/b.db"}}}
		}},
		{name: "restore from both", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Bootstrap = &etcdv1.BootstrapSpec{Restore: &etcdv1.RestoreSpec{BackupName: "b1", Source: &etcdv1.RestoreSource{BackupDestination: s3dest, Key: "k"}}}
		}, wantErr: []string{msgOneRestore}},
		{name: "restore source changes", spec: restoreFrom("b1"), patch: `{"spec":{"bootstrap":{"restore":{"backupName":"b2"}}}}`, wantErr: []string{msgBootstrap}},
		{name: "restore added later", patch: `{"spec":{"bootstrap":{"restore":{"backupName":"b2"}}}}`, wantErr: []string{msgBootstrap}},
		{name: "restore removed later", spec: restoreFrom("b1"), patch: `{"spec":{"bootstrap":null}}`, wantErr: []string{msgBootstrap}},
		{name: "restored cluster scales", spec: restoreFrom("b1"), patch: `{"spec":{"replicas":5}}`},

		// spec.version
		{name: "version 3.5.11, the first with /livez and /readyz", spec: version("3.5.11")},
		{name: "version 3.5.100", spec: version("3.5.100")},
		{name: "version 3.5.10 lacks the probe endpoints", spec: version("3.5.10"), wantErr: []string{"spec.version", msgProbeEndpoints}},
		{name: "version 3.5.0 lacks the probe endpoints", spec: version("3.5.0"), wantErr: []string{msgProbeEndpoints}},
		{name: "version 3.5.9 lacks the probe endpoints", spec: version("3.5.9"), wantErr: []string{msgProbeEndpoints}},
		{name: "minor upgrade", spec: version("3.5.35"), patch: `{"spec":{"version":"3.6.16"}}`},
		{name: "minor downgrade", spec: version("3.7.3"), patch: `{"spec":{"version":"3.6.16"}}`},
		{name: "patch downgrade", spec: version("3.6.16"), patch: `{"spec":{"version":"3.6.11"}}`},
		{name: "upgrade that skips a minor", spec: version("3.5.35"), patch: `{"spec":{"version":"3.7.3"}}`,
			wantErr: []string{"spec.version cannot go from 3.5.35 to 3.7.3 in one step", "Set 3.6.x first"}},
		{name: "downgrade that skips a minor", spec: version("3.7.3"), patch: `{"spec":{"version":"3.5.35"}}`,
			wantErr: []string{"spec.version cannot go from 3.7.3 to 3.5.35 in one step", "Set 3.6.x first"}},
		{name: "upgrade that skips two minors", spec: version("3.6.16"), patch: `{"spec":{"version":"3.9.0"}}`,
			wantErr: []string{"spec.version cannot go from 3.6.16 to 3.9.0 in one step", "Set 3.7.x first"}},
		{name: "experimental flag on 3.7", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Version = "3.7.3"
			sp.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{"experimental-corrupt-check-time": "5m"}
		}, wantErr: []string{msgExperimental37}},
		{name: "experimental flag on 3.6", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Version = "3.6.16"
			sp.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{"experimental-corrupt-check-time": "5m"}
		}},
		{name: "upgrade to 3.7 with an experimental flag", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Version = "3.6.16"
			sp.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{"experimental-corrupt-check-time": "5m"}
		}, patch: `{"spec":{"version":"3.7.3"}}`, wantErr: []string{msgExperimental37}},
		{name: "3.7 with the new flag name", spec: func(sp *etcdv1.EtcdClusterSpec) {
			sp.Version = "3.7.3"
			sp.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{"corrupt-check-time": "5m"}
		}},
		{name: "version 3.9 with a long patch number", spec: version("3.9.123")},
		{name: "version with a leading v", spec: version("v3.6.16"), wantErr: []string{"spec.version", msgVersion}},
		{name: "version 3.4", spec: version("3.4.27"), wantErr: []string{msgVersion}},
		{name: "version 4.0", spec: version("4.0.0"), wantErr: []string{msgVersion}},
		{name: "version without patch number", spec: version("3.6"), wantErr: []string{msgVersion}},
		{name: "pre-release version", spec: version("3.6.16-rc.0"), wantErr: []string{msgVersion}},
		{name: "empty version", spec: version(""), wantErr: []string{msgVersion}},
		{name: "version changes to another release", patch: `{"spec":{"version":"3.6.11"}}`},
		{name: "version changes to an invalid one", patch: `{"spec":{"version":"latest"}}`, wantErr: []string{msgVersion}},

		// spec.replicas
		{name: "one replica", spec: replicas(1)},
		{name: "nine replicas", spec: replicas(9)},
		{name: "even replicas", spec: replicas(4)},
		{name: "zero replicas", spec: replicas(0), wantErr: []string{"spec.replicas", msgAtLeastOne}},
		{name: "negative replicas", spec: replicas(-1), wantErr: []string{"spec.replicas", msgAtLeastOne}},
		{name: "ten replicas", spec: replicas(10), wantErr: []string{"spec.replicas", msgAtMostNine}},
		{name: "scale to five", patch: `{"spec":{"replicas":5}}`},
		{name: "scale to ten", patch: `{"spec":{"replicas":10}}`, wantErr: []string{"spec.replicas", msgAtMostNine}},

		// spec.storage.size
		{name: "size below 128Mi", spec: size("64Mi"), wantErr: []string{"spec.storage.size", msgSizeFormat, "at least 128Mi"}},
		{name: "size 0", spec: size("0"), wantErr: []string{msgSizeFormat}},
		{name: "size negative", spec: size("-1Gi"), wantErr: []string{msgSizeFormat}},
		{name: "size 128Mi", spec: size("128Mi")},
		{name: "size with a fractional exponent Go cannot read", patch: `{"spec":{"storage":{"size":"1e1.5"}}}`, wantErr: []string{"spec.storage.size", msgSizeFormat}},
		{name: "size with a long exponent", patch: `{"spec":{"storage":{"size":"1e-4000000"}}}`, wantErr: []string{msgSizeFormat}},
		{name: "size of 25 characters", patch: `{"spec":{"storage":{"size":"1000000000000000000000000"}}}`, wantErr: []string{msgSizeFormat}},
		{name: "size with an exponent", patch: `{"spec":{"storage":{"size":"2e9"}}}`},
		{name: "resources of a made-up name", patch: `{"spec":{"resources":{"requests":{"gpu":"1"}}}}`, wantErr: []string{"spec.resources.requests may name cpu, memory"}},
		{name: "resources of a reserved domain", patch: `{"spec":{"resources":{"limits":{"kubernetes.io/x":"1"}}}}`, wantErr: []string{"spec.resources.limits may name"}},
		{name: "resources, 9 of them", patch: `{"spec":{"resources":{"limits":{"a.io/1":"1","a.io/2":"1","a.io/3":"1","a.io/4":"1","a.io/5":"1","a.io/6":"1","a.io/7":"1","a.io/8":"1","a.io/9":"1"}}}}`, wantErr: []string{"spec.resources.limits", "must have at most 8 items"}},
		{name: "resources with a fractional exponent Go cannot read", patch: `{"spec":{"resources":{"requests":{"cpu":"1e1.5"}}}}`, wantErr: []string{"spec.resources.requests.cpu", "should match"}},
		{name: "resources with a long exponent", patch: `{"spec":{"resources":{"limits":{"memory":"1e-4000000"}}}}`, wantErr: []string{"spec.resources.limits.memory"}},
		{name: "resources negative", patch: `{"spec":{"resources":{"requests":{"memory":"-1Gi"}}}}`, wantErr: []string{"spec.resources.requests.memory", "should match"}},
		{name: "resources as numbers and micro units", patch: `{"spec":{"resources":{"requests":{"cpu":"250u","memory":268435456},"limits":{"cpu":2,"memory":"1.5Gi"}}}}`},
		{name: "resources as usual", patch: `{"spec":{"resources":{"requests":{"cpu":"100m","memory":"256Mi"},"limits":{"memory":1073741824,"example.com/fpga":"1"}}}}`},
		{name: "size grows", spec: size("1Gi"), patch: `{"spec":{"storage":{"size":"2Gi"}}}`},
		// A smaller size replaces the members (TestEnvShrinkHoldsTheDatabase
		// checks the database against it).
		{name: "size shrinks", spec: size("2Gi"), patch: `{"spec":{"storage":{"size":"1Gi"}}}`},
		{name: "size unchanged", spec: size("1Gi"), patch: `{"spec":{"storage":{"size":"1Gi"}}}`},
		{name: "size written in other units", spec: size("1Gi"), patch: `{"spec":{"storage":{"size":"1024Mi"}}}`},
		{name: "size shrinks in other units", spec: size("2Gi"), patch: `{"spec":{"storage":{"size":"2000Mi"}}}`},
		{name: "size grows from decimal to binary units", spec: size("1G"), patch: `{"spec":{"storage":{"size":"1Gi"}}}`},
		{name: "size shrinks from binary to decimal units", spec: size("1Gi"), patch: `{"spec":{"storage":{"size":"1G"}}}`},
		{name: "size as an integer, grows", spec: size("1Gi"), patch: `{"spec":{"storage":{"size":2147483648}}}`},
		{name: "size as an integer, shrinks", spec: size("2Gi"), patch: `{"spec":{"storage":{"size":1073741824}}}`},
		{name: "size removed falls back to the smaller default", spec: size("2Gi"), patch: `{"spec":{"storage":{"size":null}}}`},

		// spec.storage.storageClassName
		{name: "storage class set", spec: class},
		// The PVC's class would be refused by the API server only when a
		// member's volume is made, stopping a replacement half way.
		{name: "storage class not a name", patch: `{"spec":{"storage":{"storageClassName":"Fast_SSD"}}}`, wantErr: []string{"spec.storage.storageClassName", msgStorageClassName}},
		{name: "storage class too long", patch: `{"spec":{"storage":{"storageClassName":"` + strings.Repeat("a", 254) + `"}}}`, wantErr: []string{"spec.storage.storageClassName", "Too long"}},
		{name: "storage class with dots", patch: `{"spec":{"storage":{"storageClassName":"ssd.example.com"}}}`},
		{name: "storage class set later", patch: `{"spec":{"storage":{"storageClassName":"fast"}}}`},
		{name: "storage class unchanged", spec: class, patch: `{"spec":{"storage":{"storageClassName":"fast"},"replicas":5}}`},
		// Another class replaces the members; none leaves them be.
		{name: "storage class changes", spec: class, patch: `{"spec":{"storage":{"storageClassName":"slow"}}}`},
		{name: "storage class removed", spec: class, patch: `{"spec":{"storage":{"storageClassName":null}}}`},

		// spec.storage.medium
		{name: "memory medium", spec: memory},
		{name: "unknown medium", spec: func(sp *etcdv1.EtcdClusterSpec) { sp.Storage.Medium = "Disk" }, wantErr: []string{"spec.storage.medium", msgUnsupported}},
		// Another medium replaces the members.
		{name: "medium changes to memory", patch: `{"spec":{"storage":{"medium":"Memory"}}}`},
		{name: "medium changes from memory", spec: memory, patch: `{"spec":{"storage":{"medium":null}}}`},
		{name: "storage of a memory cluster removed", spec: memory, patch: `{"spec":{"storage":null}}`},
		{name: "medium unchanged", spec: memory, patch: `{"spec":{"storage":{"medium":"Memory"},"replicas":1}}`},

		// spec.options.extraArgs
		{name: "extra arg log-level", spec: extraArgs("log-level", "debug")},
		{name: "several extra args", spec: extraArgs("log-level", "debug", "experimental-initial-corrupt-check", "true", "max-txn-ops", "256")},
		{name: "extra arg with leading dashes", spec: extraArgs("--log-level", "debug"), wantErr: []string{msgLeadingDashes}},
		{name: "extra arg with a leading dash", spec: extraArgs("-log-level", "debug"), wantErr: []string{msgLeadingDashes}},
		{name: "owned flag with leading dashes", spec: extraArgs("--name", "x"), wantErr: []string{msgLeadingDashes}},
		{name: "owned flag among others", spec: extraArgs("log-level", "debug", "data-dir", "/tmp"), wantErr: []string{msgOwnedFlag}},
		{name: "owned flag added later", patch: `{"spec":{"options":{"extraArgs":{"initial-cluster-state":"new"}}}}`, wantErr: []string{msgOwnedFlag}},
		{name: "64 extra args", spec: manyArgs(64)},
		{name: "65 extra args", spec: manyArgs(65), wantErr: []string{"spec.options.extraArgs", msgAtMost64Args}},

		// spec.options ranges and enums
		{name: "quota of zero on the default 1Gi volume", spec: options(etcdv1.EtcdOptions{QuotaBackendBytes: ptr.To[int64](0)}), wantErr: []string{msgQuotaVolume}},
		{name: "negative quota", spec: options(etcdv1.EtcdOptions{QuotaBackendBytes: ptr.To[int64](-1)}), wantErr: []string{"spec.options.quotaBackendBytes", msgAtLeastZero}},
		{name: "periodic compaction", spec: options(etcdv1.EtcdOptions{AutoCompactionMode: "periodic", AutoCompactionRetention: "1h"})},
		{name: "revision compaction", spec: options(etcdv1.EtcdOptions{AutoCompactionMode: "revision", AutoCompactionRetention: "1000"})},
		{name: "unknown compaction mode", spec: options(etcdv1.EtcdOptions{AutoCompactionMode: "hourly"}), wantErr: []string{"spec.options.autoCompactionMode", msgUnsupported}},
		{name: "snapshot count of one", spec: options(etcdv1.EtcdOptions{SnapshotCount: ptr.To[int64](1)})},
		{name: "snapshot count of zero", spec: options(etcdv1.EtcdOptions{SnapshotCount: ptr.To[int64](0)}), wantErr: []string{"spec.options.snapshotCount", msgAtLeastOne}},
		{name: "max request bytes of zero", spec: options(etcdv1.EtcdOptions{MaxRequestBytes: ptr.To[int32](0)}), wantErr: []string{"spec.options.maxRequestBytes", msgAtLeastOne}},
		{name: "heartbeat below 10ms", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](9)}), wantErr: []string{msgHeartbeatRange, "greater than or equal to 10"}},
		{name: "heartbeat above 5s", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](5001), ElectionTimeoutMillis: ptr.To[int32](50000)}), wantErr: []string{msgHeartbeatRange, "less than or equal to 5000"}},
		{name: "election timeout below 50ms", spec: options(etcdv1.EtcdOptions{ElectionTimeoutMillis: ptr.To[int32](49), HeartbeatIntervalMillis: ptr.To[int32](10)}), wantErr: []string{msgElectionRange, "greater than or equal to 50"}},
		{name: "election timeout above 50s", spec: options(etcdv1.EtcdOptions{ElectionTimeoutMillis: ptr.To[int32](50001)}), wantErr: []string{msgElectionRange, "less than or equal to 50000"}},

		// election timeout >= 5 * heartbeat
		{name: "election timeout exactly 5 heartbeats", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](100), ElectionTimeoutMillis: ptr.To[int32](500)})},
		{name: "largest heartbeat with its election timeout", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](5000), ElectionTimeoutMillis: ptr.To[int32](25000)})},
		{name: "election timeout just under 5 heartbeats", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](100), ElectionTimeoutMillis: ptr.To[int32](499)}), wantErr: []string{msgElection}},
		{name: "election timeout lowered under 5 heartbeats", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](200), ElectionTimeoutMillis: ptr.To[int32](2000)}),
			patch: `{"spec":{"options":{"electionTimeoutMillis":999}}}`, wantErr: []string{msgElection}},
		{name: "heartbeat alone within etcd's default election timeout", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](200)})},
		{name: "election timeout alone above 5 default heartbeats", spec: options(etcdv1.EtcdOptions{ElectionTimeoutMillis: ptr.To[int32](500)})},
		// etcd refuses to start when 5*heartbeat > election timeout, and
		// fills an unset one with its default (100 ms, 1000 ms): a spec that
		// sets only one of them can still be one etcd never starts with.
		{name: "heartbeat alone beyond etcd's default election timeout", spec: options(etcdv1.EtcdOptions{HeartbeatIntervalMillis: ptr.To[int32](300)}), wantErr: []string{msgElection}},
		{name: "election timeout alone under 5 default heartbeats", spec: options(etcdv1.EtcdOptions{ElectionTimeoutMillis: ptr.To[int32](400)}), wantErr: []string{msgElection}},
	}
	// What is parsed later is refused at admission, in the parser's terms.
	backup := func(sched, extra string) string {
		return fmt.Sprintf(`{"spec":{"backup":{"schedule":%q,%s"destination":{"pvc":{"claimName":"b"}}}}}`, sched, extra)
	}
	s3 := func(endpoint, extra string) string {
		return fmt.Sprintf(`{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":%q,"bucket":"bkt","credentialsSecretRef":{"name":"c"}%s}}}}}`, endpoint, extra)
	}
	retention := func(mode, value string) func(*etcdv1.EtcdClusterSpec) {
		return func(sp *etcdv1.EtcdClusterSpec) {
			sp.Options.AutoCompactionMode, sp.Options.AutoCompactionRetention = mode, value
		}
	}
	const maxAgePath, schedulePath, endpointPath = "spec.backup.retention.maxAge", "spec.backup.schedule", "spec.backup.destination.s3.endpoint"
	cases = append(cases, []tc{
		// durations
		{name: "maxAge in hours", patch: backup("@daily", `"retention":{"maxAge":"168h"},`)},
		{name: "maxAge in hours and minutes", patch: backup("@daily", `"retention":{"maxAge":"1h30m"},`)},
		{name: "maxAge in days", patch: backup("@daily", `"retention":{"maxAge":"7d"},`), wantErr: []string{maxAgePath, msgMaxAge}},
		{name: "maxAge beyond Go's durations", patch: backup("@daily", `"retention":{"maxAge":"99999999999h"},`), wantErr: []string{maxAgePath, msgMaxAge}},
		{name: "maxAge negative", patch: backup("@daily", `"retention":{"maxAge":"-1h"},`), wantErr: []string{maxAgePath}},
		{name: "lifetime beyond Go's durations", patch: `{"spec":{"tls":{"certificateLifetime":"99999999999h"}}}`, wantErr: []string{"spec.tls.certificateLifetime", msgLifetimeFormat}},
		{name: "renewBefore beyond Go's durations", patch: `{"spec":{"tls":{"renewBefore":"2562048h"}}}`, wantErr: []string{"spec.tls.renewBefore", msgRenewBeforeFormat}},
		{name: "renewBefore in days", patch: `{"spec":{"tls":{"renewBefore":"30d"}}}`, wantErr: []string{"spec.tls.renewBefore", msgRenewBeforeFormat}},

		// spec.options.autoCompactionRetention, as etcd parses it
		{name: "periodic retention in hours", spec: retention("periodic", "24")},
		{name: "periodic retention as a duration", spec: retention("periodic", "1h30m")},
		{name: "retention in hours without a mode", spec: retention("", "5")},
		{name: "retention as a duration without a mode", spec: retention("", "30m")},
		{name: "largest periodic retention in hours", spec: retention("periodic", "2562047")},
		{name: "revision retention", spec: retention("revision", "1000")},
		{name: "revision retention of zero", spec: retention("revision", "0")},
		{name: "revision retention as a duration", spec: retention("revision", "1h"), wantErr: []string{"spec.options", msgRetentionRevision}},
		{name: "revision retention negative", spec: retention("revision", "-5"), wantErr: []string{msgRetentionRevision}},
		{name: "periodic retention in days", spec: retention("periodic", "7d"), wantErr: []string{"spec.options", msgRetentionPeriodic}},
		{name: "periodic retention negative", spec: retention("periodic", "-1"), wantErr: []string{msgRetentionPeriodic}},
		{name: "periodic retention hours overflow", spec: retention("periodic", "2562048"), wantErr: []string{msgRetentionPeriodic}},
		{name: "periodic retention duration overflow", spec: retention("periodic", "99999999999h"), wantErr: []string{msgRetentionPeriodic}},
		{name: "retention words", spec: retention("", "a day"), wantErr: []string{msgRetentionPeriodic}},

		// spec.backup.schedule, as schedule.Parse parses it
		{name: "schedule of 5 fields", patch: backup("0 3 * * *", "")},
		{name: "schedule with names, ranges and steps", patch: backup("*/15 9-17 * jan-jun MON-FRI", "")},
		{name: "schedule every 1h30m", patch: backup("@every 1h30m", "")},
		{name: "schedule in UTC", patch: backup("CRON_TZ=UTC 0 * * * *", "")},
		{name: "schedule in words", patch: backup("every day", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule minute 60", patch: backup("60 * * * *", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule of 4 fields", patch: backup("* * * *", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule of 6 fields", patch: backup("0 * * * * *", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule range backwards", patch: backup("5-1 * * * *", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule day of week 7", patch: backup("0 0 * * 7", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule every 7 days", patch: backup("@every 7d", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule in another time zone", patch: backup("CRON_TZ=Europe/Berlin 0 * * * *", ""), wantErr: []string{schedulePath, msgSchedule}},
		{name: "schedule every 30 seconds", patch: backup("@every 30s", ""), wantErr: []string{schedulePath, msgEveryMinimum}},

		// S3 endpoints, as the agent parses them
		{name: "S3 endpoint with a port", patch: s3("http://minio:9000", "")},
		{name: "S3 endpoint with a slash", patch: s3("https://s3.eu-west-1.amazonaws.com/", "")},
		{name: "S3 endpoint by IPv4 address", patch: s3("http://10.0.0.1:9000", "")},
		{name: "S3 endpoint with a path", patch: s3("https://s3.example.com/bucket", ""), wantErr: []string{endpointPath, msgEndpoint}},
		{name: "S3 endpoint with a query", patch: s3("https://s3.example.com?x=1", ""), wantErr: []string{endpointPath, msgEndpoint}},
		{name: "S3 endpoint with a user", patch: s3("https://user:pw@s3.example.com", ""), wantErr: []string{endpointPath, msgEndpoint}},
		{name: "S3 endpoint with a fragment", patch: s3("https://s3.example.com#x", ""), wantErr: []string{endpointPath, msgEndpoint}},
		{name: "S3 endpoint over ftp", patch: s3("ftp://s3.example.com", ""), wantErr: []string{endpointPath, msgEndpoint}},
		{name: "S3 endpoint without a host", patch: s3("https://", ""), wantErr: []string{endpointPath, msgEndpoint}},
		{name: "S3 endpoint port out of range", patch: s3("https://s3.example.com:65536", ""), wantErr: []string{endpointPath, msgEndpoint}},

		// references name what they refer to
		{name: "S3 credentials Secret without a name", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"s3":{"endpoint":"http://s3","bucket":"bkt","credentialsSecretRef":{}}}}}}`,
			wantErr: []string{"spec.backup.destination.s3.credentialsSecretRef", "spec.s3.credentialsSecretRef." + msgSecretName}},
		{name: "S3 CA Secret without a name", patch: s3("http://s3", `,"caSecretRef":{}`), wantErr: []string{"spec.backup.destination.s3.caSecretRef", "spec.s3.caSecretRef." + msgSecretName}},
		{name: "S3 CA Secret with an invalid name", patch: s3("http://s3", `,"caSecretRef":{"name":"My_CA"}`), wantErr: []string{"spec.s3.caSecretRef." + msgSecretName}},
		{name: "S3 CA Secret", patch: s3("http://s3", `,"caSecretRef":{"name":"my-ca.v1"}`)},
		{name: "peer Secret without a name", patch: `{"spec":{"tls":{"peer":{"secretRef":{}}}}}`, wantErr: []string{"spec.tls.peer.secretRef", "spec.tls.peer.secretRef." + msgSecretName}},
		{name: "client Secret without a name", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Client.SecretRef = &corev1.LocalObjectReference{} }),
			wantErr: []string{"spec.tls.client.secretRef", "spec.tls.client.secretRef." + msgSecretName}},
		{name: "trusted CA Secret without a name", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Client.TrustedCASecretRef = &corev1.LocalObjectReference{} }),
			wantErr: []string{"spec.tls.client.trustedCASecretRef", "spec.tls.client.trustedCASecretRef." + msgSecretName}},
		{name: "trusted CA Secret", spec: tlsSpec(func(t *etcdv1.TLSSpec) { t.Client.TrustedCASecretRef = userSecret })},
		{name: "trusted CA Secret without client certificates", spec: tlsSpec(func(t *etcdv1.TLSSpec) {
			t.Client.TrustedCASecretRef = userSecret
			t.Client.Mutual = ptr.To(false)
		}), wantErr: []string{"spec.tls.client.trustedCASecretRef needs spec.tls.client.mutual"}},
		{name: "root credentials Secret without a name", spec: func(sp *etcdv1.EtcdClusterSpec) { sp.Auth.RootCredentialsSecretRef = &corev1.LocalObjectReference{} },
			wantErr: []string{"spec.auth.rootCredentialsSecretRef", "spec.auth.rootCredentialsSecretRef." + msgSecretName}},
		{name: "root credentials Secret", spec: func(sp *etcdv1.EtcdClusterSpec) { sp.Auth.RootCredentialsSecretRef = userSecret }},
		{name: "issuer with an invalid name", spec: tlsSpec(func(t *etcdv1.TLSSpec) {
			t.Client.CertManager = &etcdv1.CertManagerSource{IssuerRef: etcdv1.IssuerRef{Name: "My Issuer"}}
		}), wantErr: []string{"spec.tls.client.certManager.issuerRef.name", msgIssuerName}},
		{name: "PVC with an invalid name", patch: `{"spec":{"backup":{"schedule":"@daily","destination":{"pvc":{"claimName":"Backups"}}}}}`,
			wantErr: []string{"spec.backup.destination.pvc.claimName", msgClaimName}},
		{name: "restore from a backup with an invalid name", spec: restoreFrom("b.1"), wantErr: []string{"spec.bootstrap.restore.backupName", msgRestoreBackupName}},
		{name: "restore from a backup with a long name", spec: restoreFrom(strings.Repeat("b", 64)), wantErr: []string{"spec.bootstrap.restore.backupName", msgTooLong}},

		// metadata.name
		{name: "name of 35 characters", objName: "c" + strings.Repeat("x", 34)},
		{name: "name of 36 characters", objName: "c" + strings.Repeat("x", 35), wantErr: []string{msgClusterNameLength}},
		{name: "name with a dot", objName: "demo.prod", wantErr: []string{msgClusterNameDNS}},
		{name: "name starting with a digit", objName: "1demo", wantErr: []string{msgClusterNameDNS}},
		{name: "name ending in -peer", objName: "demo-peer", wantErr: []string{"metadata.name of an EtcdCluster cannot end in -peer"}},
		{name: "name with -peer inside", objName: "demo-peers"},

		// spec.options.extraArgs keys and values
		{name: "extra arg key with a value after =", spec: extraArgs("data-dir=/x", ""), wantErr: []string{msgLeadingDashes}},
		{name: "extra arg key in upper case", spec: extraArgs("Log-Level", "debug"), wantErr: []string{msgLeadingDashes}},
		{name: "extra arg value of 1024 characters", spec: extraArgs("log-outputs", strings.Repeat("x", 1024))},
	}...)
	for _, f := range etcdv1.AllowedExtraArgs {
		cases = append(cases, tc{name: "allowed flag " + f, spec: extraArgs(f, flagValue(f))})
	}
	for _, f := range refusedFlags {
		cases = append(cases, tc{name: "refused flag " + f, spec: extraArgs(f, "1"), wantErr: []string{"spec.options.extraArgs", msgNotAllowedFlag}})
	}
	for _, f := range ownedFlags {
		cases = append(cases,
			tc{name: "owned flag " + f, spec: extraArgs(f, "x"), wantErr: []string{msgOwnedFlag}})
	}
	// A flag given both ways would silently override its typed field.
	for _, f := range []string{"quota-backend-bytes", "auto-compaction-mode", "auto-compaction-retention", "snapshot-count", "heartbeat-interval", "election-timeout", "max-request-bytes"} {
		cases = append(cases,
			tc{name: "typed flag " + f, spec: extraArgs(f, "1"), wantErr: []string{msgTypedFlag}})
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, c)
			name := "demo"
			if tc.objName != "" {
				name = tc.objName
			}
			obj := &etcdv1.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec:       etcdv1.EtcdClusterSpec{Version: "3.6.16"},
			}
			if tc.spec != nil {
				tc.spec(&obj.Spec)
			}
			runCase(t, c, obj, tc.patch, tc.status, tc.wantErr)
		})
	}
}

func testMemberValidation(t *testing.T, c client.Client) {
	state := func(s etcdv1.InitialClusterState) func(*etcdv1.EtcdMemberSpec) {
		return func(sp *etcdv1.EtcdMemberSpec) { sp.InitialClusterState = s }
	}
	existing := state(etcdv1.InitialClusterStateExisting)

	type tc = validationCase[etcdv1.EtcdMemberSpec]
	cases := []tc{
		{name: "new member"},
		{name: "existing member", spec: existing},
		{name: "unknown initial cluster state", spec: state("Joining"), wantErr: []string{"spec.initialClusterState", msgUnsupported}},
		{name: "lower-case initial cluster state", spec: state("new"), wantErr: []string{"spec.initialClusterState", msgUnsupported}},

		{name: "cluster name changes", patch: `{"spec":{"clusterName":"other"}}`, wantErr: []string{msgClusterName}},
		{name: "peer URL changes", patch: `{"spec":{"peerURL":"http://elsewhere:2380"}}`, wantErr: []string{msgPeerURL}},
		{name: "client URL changes", patch: `{"spec":{"clientURL":"http://elsewhere:2379"}}`},
		{name: "version changes", patch: `{"spec":{"version":"3.6.17","image":"quay.io/coreos/etcd:v3.6.17"}}`},
		{name: "new becomes existing", patch: `{"spec":{"initialClusterState":"Existing"}}`},
		{name: "existing stays existing", spec: existing, patch: `{"spec":{"initialClusterState":"Existing","version":"3.6.17"}}`},
		{name: "existing goes back to new", spec: existing, patch: `{"spec":{"initialClusterState":"New"}}`, wantErr: []string{msgNoBackToNew}},

		// The member shares the storage rules of the cluster.
		{name: "member size shrinks", spec: func(sp *etcdv1.EtcdMemberSpec) { q := resource.MustParse("2Gi"); sp.Storage.Size = &q },
			patch: `{"spec":{"storage":{"size":"1Gi"}}}`, wantErr: []string{msgSizeShrink}},
		{name: "member storage class changes", spec: func(sp *etcdv1.EtcdMemberSpec) { sp.Storage.StorageClassName = ptr.To("fast") },
			patch: `{"spec":{"storage":{"storageClassName":"slow"}}}`, wantErr: []string{msgStorageClass}},
		{name: "member medium changes", patch: `{"spec":{"storage":{"medium":"Memory"}}}`, wantErr: []string{msgMedium}},
		{name: "member storage class set once", patch: `{"spec":{"storage":{"storageClassName":"fast"}}}`},
		{name: "member extra arg owned", spec: func(sp *etcdv1.EtcdMemberSpec) {
			sp.Options.ExtraArgs = map[string]etcdv1.ExtraArgValue{"listen-client-urls": "http://0.0.0.0:1"}
		},
			wantErr: []string{msgOwnedFlag}},

		// status
		{name: "status role learner", status: true, patch: `{"status":{"role":"Learner","memberID":"1001"}}`},
		{name: "status role leader", status: true, patch: `{"status":{"role":"Leader"}}`, wantErr: []string{"status.role", msgUnsupported}},
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t, c)
			peer := "http://demo-a.demo-peer." + ns + ".svc.cluster.local:2380"
			obj := &etcdv1.EtcdMember{
				ObjectMeta: metav1.ObjectMeta{Name: "demo-a", Namespace: ns},
				Spec: etcdv1.EtcdMemberSpec{
					ClusterName:         "demo",
					Version:             "3.6.16",
					Image:               "quay.io/coreos/etcd:v3.6.16",
					InitialClusterState: etcdv1.InitialClusterStateNew,
					InitialCluster:      "demo-a=" + peer,
					ClusterToken:        "token",
					PeerURL:             peer,
					ClientURL:           "http://demo-a.demo-peer." + ns + ".svc.cluster.local:2379",
				},
			}
			if tc.spec != nil {
				tc.spec(&obj.Spec)
			}
			runCase(t, c, obj, tc.patch, tc.status, tc.wantErr)
		})
	}
}

func testBackupValidation(t *testing.T, c client.Client) {
	clusterName := func(n string) func(*etcdv1.EtcdBackupSpec) {
		return func(sp *etcdv1.EtcdBackupSpec) { sp.ClusterName = n }
	}
	type tc = validationCase[etcdv1.EtcdBackupSpec]
	cases := []tc{
		{name: "backup"},
		{name: "name of 63 characters", objName: "b" + strings.Repeat("x", 62)},
		{name: "name of 64 characters", objName: "b" + strings.Repeat("x", 63), wantErr: []string{msgBackupName}},
		{name: "name with a dot", objName: "b.1", wantErr: []string{msgBackupName}},
		{name: "cluster name with a dot", spec: clusterName("demo.prod"), wantErr: []string{"spec.clusterName", msgBackupClusterName}},
		{name: "cluster name of 36 characters", spec: clusterName("c" + strings.Repeat("x", 35)), wantErr: []string{"spec.clusterName", msgTooLong}},
		{name: "spec changes", patch: `{"spec":{"clusterName":"other"}}`, wantErr: []string{"an EtcdBackup's spec cannot change"}},
		{name: "a named member", spec: func(sp *etcdv1.EtcdBackupSpec) { sp.Member = "demo-abcde" }},
		{name: "a member name with a dot", spec: func(sp *etcdv1.EtcdBackupSpec) { sp.Member = "demo.abcde" }, wantErr: []string{"spec.member", msgBackupMember}},
		{name: "a member name of 64 characters", spec: func(sp *etcdv1.EtcdBackupSpec) { sp.Member = "m" + strings.Repeat("x", 63) }, wantErr: []string{"spec.member", msgTooLong}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := "b1"
			if tc.objName != "" {
				name = tc.objName
			}
			obj := &etcdv1.EtcdBackup{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: newNamespace(t, c)},
				Spec: etcdv1.EtcdBackupSpec{ClusterName: "demo", Destination: etcdv1.BackupDestination{
					PVC: &etcdv1.PVCDestination{ClaimName: "backups"},
				}},
			}
			if tc.spec != nil {
				tc.spec(&obj.Spec)
			}
			runCase(t, c, obj, tc.patch, tc.status, tc.wantErr)
		})
	}
}

// testOldSchemaObjectsRefused creates objects the CRDs accepted before they
// validated what the operator parses later. Each one, once stored, made the
// operator fail to decode the list behind its cache, or crash-looped etcd,
// or broke a derived name; each is refused now with a message that says
// what to write instead.
func testOldSchemaObjectsRefused(t *testing.T, c client.Client) {
	spec := func(extra map[string]any) map[string]any {
		s := map[string]any{"version": "3.6.16"}
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	backup := func(sched string, extra map[string]any) map[string]any {
		b := map[string]any{"schedule": sched, "destination": map[string]any{"pvc": map[string]any{"claimName": "b"}}}
		for k, v := range extra {
			b[k] = v
		}
		return spec(map[string]any{"backup": b})
	}
	extraArgs := func(k, v string) map[string]any {
		return spec(map[string]any{"options": map[string]any{"extraArgs": map[string]any{k: v}}})
	}
	cases := []struct {
		name    string
		objName string
		spec    map[string]any
		wantErr []string
	}{
		{name: "maxAge in days", spec: backup("@daily", map[string]any{"retention": map[string]any{"maxAge": "7d"}}),
			wantErr: []string{"spec.backup.retention.maxAge", msgMaxAge}},
		{name: "extra arg key with its value", spec: extraArgs("data-dir=/x", ""), wantErr: []string{"spec.options.extraArgs", msgLeadingDashes}},
		{name: "unsafe-no-fsync", spec: extraArgs("unsafe-no-fsync", "true"), wantErr: []string{"spec.options.extraArgs", msgNotAllowedFlag}},
		{name: "strict-reconfig-check", spec: extraArgs("strict-reconfig-check", "false"), wantErr: []string{"spec.options.extraArgs", msgNotAllowedFlag}},
		{name: "credentials Secret reference without a name", spec: spec(map[string]any{"backup": map[string]any{
			"schedule": "@daily", "destination": map[string]any{"s3": map[string]any{
				"endpoint": "https://s3.example.com", "bucket": "bkt", "credentialsSecretRef": map[string]any{},
			}},
		}}), wantErr: []string{"spec.backup.destination.s3.credentialsSecretRef", msgSecretName}},
		{name: "cluster name of 60 characters", objName: "c" + strings.Repeat("x", 59), spec: spec(nil), wantErr: []string{msgClusterNameLength}},
		{name: "cluster name with dots", objName: "etcd.prod.example", spec: spec(nil), wantErr: []string{msgClusterNameDNS}},
		{name: "schedule in words", spec: backup("every day", nil), wantErr: []string{"spec.backup.schedule", msgSchedule}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := &unstructured.Unstructured{Object: map[string]any{"spec": tc.spec}}
			u.SetGroupVersionKind(etcdv1.GroupVersion.WithKind("EtcdCluster"))
			u.SetName("demo")
			if tc.objName != "" {
				u.SetName(tc.objName)
			}
			u.SetNamespace(newNamespace(t, c))
			checkErr(t, c.Create(t.Context(), u), tc.wantErr)
		})
	}
}

// runCase creates obj and, with a patch, applies it; the last request must
// fail with every wantErr in its message, or succeed without wantErr.
func runCase(t *testing.T, c client.Client, obj client.Object, patch string, status bool, wantErr []string) {
	t.Helper()
	err := c.Create(t.Context(), obj)
	if patch != "" {
		if err != nil {
			t.Fatalf("create before the update: %v", err)
		}
		p := client.RawPatch(types.MergePatchType, []byte(patch))
		if status {
			err = c.Status().Patch(t.Context(), obj, p)
		} else {
			err = c.Patch(t.Context(), obj, p)
		}
	}
	checkErr(t, err, wantErr)
}

func checkErr(t *testing.T, err error, wantErr []string) {
	t.Helper()
	switch {
	case len(wantErr) == 0 && err != nil:
		t.Fatalf("want success, got %v", err)
	case len(wantErr) == 0:
		return
	case err == nil:
		t.Fatalf("want an error with %q, the request succeeded", wantErr)
	case !apierrors.IsInvalid(err):
		t.Fatalf("want an Invalid error, got %v", err)
	}
	for _, w := range wantErr {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err.Error(), w)
		}
	}
}

// testRequiredFields sends objects without a required field, which the typed
// client cannot express.
func testRequiredFields(t *testing.T, c client.Client) {
	memberSpec := map[string]any{
		"clusterName": "demo", "version": "3.6.16", "image": "quay.io/coreos/etcd:v3.6.16",
		"initialClusterState": "New", "initialCluster": "demo-a=http://demo-a:2380", "clusterToken": "token",
		"peerURL": "http://demo-a:2380", "clientURL": "http://demo-a:2379",
	}
	without := func(m map[string]any, key string) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if k != key {
				out[k] = v
			}
		}
		return out
	}
	type tc struct {
		name    string
		kind    string
		spec    map[string]any // nil: no spec at all
		wantErr []string
	}
	cases := []tc{
		{name: "cluster without spec", kind: "EtcdCluster", wantErr: []string{"spec", msgRequired}},
		{name: "cluster without version", kind: "EtcdCluster", spec: map[string]any{"replicas": int64(3)}, wantErr: []string{"spec.version", msgRequired}},
		{name: "member without spec", kind: "EtcdMember", wantErr: []string{"spec", msgRequired}},
	}
	for _, f := range []string{"clusterName", "version", "image", "initialClusterState", "initialCluster", "clusterToken", "peerURL", "clientURL"} {
		cases = append(cases, tc{name: "member without " + f, kind: "EtcdMember", spec: without(memberSpec, f), wantErr: []string{"spec." + f, msgRequired}})
	}
	cases = append(cases, tc{name: "complete member", kind: "EtcdMember", spec: memberSpec})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u := &unstructured.Unstructured{Object: map[string]any{}}
			u.SetGroupVersionKind(etcdv1.GroupVersion.WithKind(tc.kind))
			u.SetName("demo-a")
			u.SetNamespace(newNamespace(t, c))
			if tc.spec != nil {
				u.Object["spec"] = tc.spec
			}
			checkErr(t, c.Create(t.Context(), u), tc.wantErr)
		})
	}
}

// testDefaults checks what the API server fills in.
// testMinimalManifests: manifests that leave out every optional part (no
// options, storage or tls objects at all, as kubectl sends them; Go
// clients always send the structs) are accepted: no rule may read a field
// of an absent object.
func testMinimalManifests(t *testing.T, c client.Client) {
	ns := newNamespace(t, c)
	for i, spec := range []map[string]any{
		{"version": "3.6.16"},
		{"version": "3.7.3"},
		{"version": "3.5.35", "replicas": int64(1)},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": etcdv1.GroupVersion.String(), "kind": "EtcdCluster",
			"metadata": map[string]any{"name": fmt.Sprintf("minimal-%d", i), "namespace": ns},
			"spec":     spec,
		}}
		if err := c.Create(t.Context(), u); err != nil {
			t.Errorf("create %v: %v", spec, err)
		}
	}
}

func testDefaults(t *testing.T, c client.Client) {
	type tc struct {
		name  string
		spec  etcdv1.EtcdClusterSpec
		check func(*testing.T, *etcdv1.EtcdCluster)
	}
	cases := []tc{
		{name: "replicas and size", spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}, check: func(t *testing.T, got *etcdv1.EtcdCluster) {
			if got.Spec.Replicas == nil || *got.Spec.Replicas != 3 {
				t.Errorf("spec.replicas = %v, want the default 3", got.Spec.Replicas)
			}
			if got.Spec.Storage.Size == nil || got.Spec.Storage.Size.Cmp(resource.MustParse("1Gi")) != 0 {
				t.Errorf("spec.storage.size = %v, want the default 1Gi", got.Spec.Storage.Size)
			}
			if got.Spec.Storage.Medium != etcdv1.StorageMediumDefault {
				t.Errorf("spec.storage.medium = %q, want empty", got.Spec.Storage.Medium)
			}
			if got.Spec.DeletionPolicy != etcdv1.DeletionPolicyDelete {
				t.Errorf("spec.deletionPolicy = %q, want the default Delete", got.Spec.DeletionPolicy)
			}
		}},
		{name: "size of a memory cluster", spec: etcdv1.EtcdClusterSpec{Version: "3.6.16", Storage: etcdv1.StorageSpec{Medium: etcdv1.StorageMediumMemory}},
			check: func(t *testing.T, got *etcdv1.EtcdCluster) {
				if got.Spec.Storage.Size == nil || got.Spec.Storage.Size.Cmp(resource.MustParse("1Gi")) != 0 {
					t.Errorf("spec.storage.size = %v, want the default 1Gi", got.Spec.Storage.Size)
				}
			}},
		{name: "tls on with mutual client certificates", spec: etcdv1.EtcdClusterSpec{Version: "3.6.16"}, check: func(t *testing.T, got *etcdv1.EtcdCluster) {
			if got.Spec.TLS.Disabled || !got.Spec.TLS.Client.IsMutual() || got.Spec.TLS.Client.Mutual == nil {
				t.Errorf("spec.tls = %+v, want TLS on and client.mutual defaulted to true", got.Spec.TLS)
			}
			if l := got.Spec.TLS.CertificateLifetime; l == nil || l.Duration != 2160*time.Hour {
				t.Errorf("spec.tls.certificateLifetime = %v, want the default 2160h", l)
			}
			if got.Spec.Auth.Enabled {
				t.Errorf("spec.auth.enabled defaulted to true")
			}
		}},
		{name: "replicas given are kept", spec: etcdv1.EtcdClusterSpec{Version: "3.6.16", Replicas: ptr.To[int32](5)},
			check: func(t *testing.T, got *etcdv1.EtcdCluster) {
				if *got.Spec.Replicas != 5 {
					t.Errorf("spec.replicas = %d, want 5", *got.Spec.Replicas)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: newNamespace(t, c)}, Spec: tc.spec}
			if err := c.Create(t.Context(), obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			got := &etcdv1.EtcdCluster{}
			if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
				t.Fatalf("get: %v", err)
			}
			tc.check(t, got)
		})
	}
}
