package resources_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/resources"
)

// TestDerivedNamesOfLongestNames builds every name the operator makes from
// an EtcdCluster or EtcdBackup name of the longest length the CRDs accept,
// and checks each against what Kubernetes requires of it. A new derived name
// that does not fit must lower the limit (api/v1alpha1/limits.go and the
// markers) or get shorter; add it here.
//
// The names made in controllers/data and controllers/backup are written
// out here as they are there (they are not exported): scheduled backups
// <cluster>-YYYYMMDD-HHMM (data/schedule.go), the final backup
// <cluster>-suspend-<generation> (data/suspend.go), <cluster>-restore-check
// (data/restore.go), agent Pods <backup>-snapshot and <backup>-delete
// (backup/reconcile.go).
func TestDerivedNamesOfLongestNames(t *testing.T) {
	t.Parallel()
	cluster := "c" + strings.Repeat("x", etcdv1.MaxClusterNameLength-1)
	namespace := strings.Repeat("n", validation.DNS1123LabelMaxLength)
	member := cluster + "-abcde" // controllers/cluster: <cluster>-<5 random characters>
	c := &etcdv1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster, Namespace: namespace}}
	m := &etcdv1.EtcdMember{ObjectMeta: metav1.ObjectMeta{Name: member, Namespace: namespace}, Spec: etcdv1.EtcdMemberSpec{ClusterName: cluster}}

	scheduled := fmt.Sprintf("%s-%s", cluster, time.Date(9999, 12, 31, 23, 59, 0, 0, time.UTC).Format("20060102-1504"))
	suspend := fmt.Sprintf("%s-suspend-%d", cluster, int64(math.MaxInt64))
	backup := "b" + strings.Repeat("x", etcdv1.MaxBackupNameLength-1)

	dns1035 := func(s string) []string { return validation.IsDNS1035Label(s) }
	label := func(s string) []string { return validation.IsDNS1123Label(s) }
	subdomain := func(s string) []string { return validation.IsDNS1123Subdomain(s) }
	value := func(s string) []string { return validation.IsValidLabelValue(s) }

	type check struct {
		what  string
		name  string
		valid []func(string) []string
	}
	checks := []check{
		{"cluster name (a Service, and label values)", cluster, []func(string) []string{dns1035, value}},
		{"client Service", resources.ClientServiceName(cluster), []func(string) []string{dns1035}},
		{"peer Service", resources.PeerServiceName(cluster), []func(string) []string{dns1035}},
		{"PodDisruptionBudget", resources.PDBName(cluster), []func(string) []string{subdomain}},
		{"member (EtcdMember, Pod and its hostname, label value)", member, []func(string) []string{label, value}},
		{"member PVC", resources.PVCName(member), []func(string) []string{subdomain}},
		{"member DNS name", resources.MemberHost(cluster, member, namespace, "cluster.local"), []func(string) []string{subdomain}},
		{"CA Secret", resources.CASecretName(cluster), []func(string) []string{subdomain}},
		{"peer TLS Secret", resources.PeerTLSSecretName(cluster), []func(string) []string{subdomain}},
		{"server TLS Secret", resources.ServerTLSSecretName(cluster), []func(string) []string{subdomain}},
		{"client TLS Secret", resources.ClientTLSSecretName(cluster), []func(string) []string{subdomain}},
		{"root credentials Secret", resources.RootCredentialsSecretName(cluster), []func(string) []string{subdomain}},
		{"restore check Pod", cluster + "-restore-check", []func(string) []string{subdomain}},
		{"scheduled backup (EtcdBackup, label value)", scheduled, []func(string) []string{label, value}},
		{"final backup before a suspend (EtcdBackup, label value)", suspend, []func(string) []string{label, value}},
		{"longest EtcdBackup name (label value)", backup, []func(string) []string{label, value}},
		{"snapshot Pod", backup + "-snapshot", []func(string) []string{subdomain}},
		{"delete Pod", backup + "-delete", []func(string) []string{subdomain}},
	}
	for _, purpose := range []string{"peer", "server", "client"} {
		checks = append(checks, check{"cert-manager Certificate " + purpose, resources.CertManagerName(cluster, purpose), []func(string) []string{subdomain}})
	}
	for _, host := range resources.ServerHosts(c, "cluster.local") {
		checks = append(checks, check{"certificate name " + host, strings.TrimPrefix(host, "*."), []func(string) []string{subdomain}})
	}
	for k, v := range resources.ClusterLabels(cluster) {
		checks = append(checks, check{"cluster label " + k, v, []func(string) []string{value}})
	}
	for k, v := range resources.MemberLabels(m) {
		checks = append(checks, check{"member label " + k, v, []func(string) []string{value}})
	}

	for _, ch := range checks {
		for _, valid := range ch.valid {
			if errs := valid(ch.name); len(errs) > 0 {
				t.Errorf("%s %q (%d characters): %s", ch.what, ch.name, len(ch.name), strings.Join(errs, "; "))
			}
		}
	}

	// The limit is the tightest it can be: one more character breaks the
	// final backup's name.
	if errs := validation.IsValidLabelValue(fmt.Sprintf("%sx-suspend-%d", cluster, int64(math.MaxInt64))); len(errs) == 0 {
		t.Errorf("MaxClusterNameLength %d could be larger; the doc comment says why it is what it is", etcdv1.MaxClusterNameLength)
	}
}
