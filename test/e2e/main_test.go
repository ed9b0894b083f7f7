//go:build e2e

// Package e2e holds the end-to-end tests: real etcd Pods on a real cluster.
// With KUBECONFIG unset they bring up the project's local cluster; with
// KUBECONFIG set they run against that cluster, which must already have the
// images the tests use (the etcd image and raftsman:dev) and cert-manager.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
)

var testenv env.Environment

// repoRoot is the repository's top folder (the tests run in test/e2e).
var repoRoot = func() string {
	d, _ := filepath.Abs("../..")
	return d
}()

func TestMain(m *testing.M) {
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		cmd := exec.Command("make", "-C", repoRoot, "cluster-up", "images", "cert-manager-up")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "local cluster:", err)
			os.Exit(1)
		}
		kubeconfig = filepath.Join(repoRoot, "_output/cluster/kubeconfig")
	}
	var err error
	if s3srv, err = startS3(); err != nil {
		fmt.Fprintln(os.Stderr, "S3 server:", err)
		os.Exit(1)
	}
	testenv = env.NewWithConfig(envconf.NewWithKubeConfig(kubeconfig))
	testenv.Setup(installOperator, deleteLeftovers)
	testenv.BeforeEachTest(createNamespace)
	testenv.AfterEachTest(deleteNamespace)
	code := testenv.Run(m)
	s3srv.stop()
	os.Exit(code)
}

// deleteLeftovers deletes the test namespaces a killed run left behind
// (their clusters would run beside this run's), clusters first so that
// the operator handles their finalizers. It does not wait for them.
func deleteLeftovers(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	k, err := newKube(cfg)
	if err != nil {
		return ctx, err
	}
	list := &corev1.NamespaceList{}
	if err := k.c.List(ctx, list); err != nil {
		return ctx, err
	}
	for _, ns := range list.Items {
		if ns.Labels[testNamespaceLabel] == "" && !leftoverName.MatchString(ns.Name) {
			continue
		}
		fmt.Printf("deleting namespace %s, left by an earlier run\n", ns.Name)
		_ = k.c.DeleteAllOf(ctx, &etcdv1.EtcdCluster{}, client.InNamespace(ns.Name))
		if err := k.c.Delete(ctx, &ns); client.IgnoreNotFound(err) != nil {
			return ctx, err
		}
	}
	return ctx, nil
}

// leftoverName is the name of a test namespace made before they were
// labelled testNamespaceLabel.
var leftoverName = regexp.MustCompile(`^e2e-[a-z0-9]{6}$`)

// installOperator applies dist/install.yaml and the account the tests read
// the operator's metrics with, and waits for the operator, restarting it so
// that it runs the image just built.
func installOperator(ctx context.Context, cfg *envconf.Config) (context.Context, error) {
	k, err := newKube(cfg)
	if err != nil {
		return ctx, err
	}
	for _, f := range []string{"dist/install.yaml", metricsReaderManifest} {
		if err := k.applyFile(ctx, filepath.Join(repoRoot, f)); err != nil {
			return ctx, err
		}
	}
	if err := k.restartOperator(ctx); err != nil {
		return ctx, err
	}
	return ctx, nil
}
