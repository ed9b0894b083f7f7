package controllers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1 "github.com/raftsman/raftsman/api/v1alpha1"
	"github.com/raftsman/raftsman/pkg/kube"
)

// ServeOptions are what the operator's own endpoints listen on.
type ServeOptions struct {
	// MetricsAddr is the metrics endpoint's address; "0" turns it off.
	MetricsAddr string
	// MetricsSecure serves metrics over HTTPS to clients whose token may
	// get /metrics; false serves plain HTTP to anyone.
	MetricsSecure bool
	// ProbeAddr is the address of the health and readiness endpoints.
	ProbeAddr string
}

// Run runs the operator until ctx ends: the replica's own manager, which
// serves metrics and probes and labels new clusters, and a manager for each
// shard it holds (SetupShards). Both kinds of cache see only the watched
// namespaces.
func Run(ctx context.Context, opts Options, shards ShardOptions, serve ServeOptions) error {
	log := ctrl.Log.WithName("setup")
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	if err := etcdv1.AddToScheme(scheme); err != nil {
		return fmt.Errorf("scheme: %w", err)
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("API server configuration: %w", err)
	}
	kube.CountWrites(cfg)
	if opts.Backup.AgentImage == "" {
		image, err := ownImage(ctx, cfg, scheme)
		if err != nil {
			return fmt.Errorf("find the operator's image for backup Pods (or set --agent-image): %w", err)
		}
		opts.Backup.AgentImage = image
	}
	if len(shards.WatchNamespaces) > 0 {
		log.Info("Watching only some namespaces", "namespaces", shards.WatchNamespaces)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsOptions(serve.MetricsAddr, serve.MetricsSecure),
		HealthProbeBindAddress: serve.ProbeAddr,
		Cache:                  RootCacheOptions(shards),
		NewCache:               kube.NewCache,
	})
	if err != nil {
		return fmt.Errorf("create the manager: %w", err)
	}
	if shards.Identity, err = os.Hostname(); err != nil {
		return fmt.Errorf("name this replica: %w", err)
	}
	if err := SetupShards(mgr, opts, shards); err != nil {
		return fmt.Errorf("set up the controllers: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add the readiness check: %w", err)
	}
	log.Info("Starting the manager")
	return mgr.Start(ctx)
}

// metricsOptions serve metrics securely by default: authenticated and
// authorized like any Kubernetes API, over HTTPS.
func metricsOptions(addr string, secure bool) metricsserver.Options {
	if !secure {
		return metricsserver.Options{BindAddress: addr}
	}
	return metricsserver.Options{BindAddress: addr, SecureServing: true, FilterProvider: filters.WithAuthenticationAndAuthorization}
}

// ownImage is the image of this operator's container, read from its Pod.
func ownImage(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme) (string, error) {
	name, namespace := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || namespace == "" {
		return "", errors.New("POD_NAME and POD_NAMESPACE are not set")
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return "", err
	}
	pod := &corev1.Pod{}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return "", fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	for _, ct := range pod.Spec.Containers {
		if ct.Name == "manager" {
			return ct.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container named manager", namespace, name)
}
