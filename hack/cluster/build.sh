#!/usr/bin/env bash
# Builds every binary the local cluster needs from the Go module proxy into
# _output/bin/<name>-<version>/. A folder that already holds its binaries is
# left alone, so a warm run costs seconds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/hack/cluster/versions.sh"
out="$root/_output"
mkdir -p "$out/bin" "$out/build"
export GOFLAGS=-mod=mod GOTOOLCHAIN=local

have() { # have DIR BIN...
  local d=$1; shift
  for b in "$@"; do [ -x "$d/$b" ] || return 1; done
}

build_kubernetes() { # build_kubernetes [BIN...], default all six
  local v=$KUBE_VERSION dir="$out/bin/kubernetes-$KUBE_VERSION"
  local bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
  [ $# -gt 0 ] && bins=("$@")
  have "$dir" "${bins[@]}" && return 0
  echo "building kubernetes $v (several minutes on a cold cache)"
  local mod="$out/build/kubernetes-$v" staging=v0${v#v1}
  mkdir -p "$mod" "$dir"
  local gomod
  gomod=$(cd "$mod" && go mod download -json "k8s.io/kubernetes@$v" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  {
    echo "module localbuild/kubernetes"
    echo "go 1.24"
    echo "require k8s.io/kubernetes $v"
    sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9.-]*\) => ./staging/src/.*#replace \1 => \1 '"$staging"'#p' "$gomod"
  } > "$mod/go.mod"
  local minor=${v#v1.}; minor=${minor%%.*}
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$v -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$v -X k8s.io/component-base/version.gitTreeState=clean"
  for b in "${bins[@]}"; do
    [ -x "$dir/$b" ] && continue
    local t0=$SECONDS
    (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$dir/$b.tmp" "k8s.io/kubernetes/cmd/$b")
    mv "$dir/$b.tmp" "$dir/$b"
    echo "  $b built in $((SECONDS - t0))s"
  done
}

build_etcd() { # build_etcd VERSION
  local v=$1 dir="$out/bin/etcd-v$1"
  have "$dir" etcd etcdctl etcdutl && return 0
  echo "building etcd v$v"
  local t0=$SECONDS
  local mod="$out/build/etcd-v$v"
  mkdir -p "$mod/cmd/etcd" "$dir"
  cat > "$mod/go.mod" <<MOD
module localbuild/etcd
go 1.24
require (
	go.etcd.io/etcd/server/v3 v$v
	go.etcd.io/etcd/etcdctl/v3 v$v
	go.etcd.io/etcd/etcdutl/v3 v$v
)
MOD
  cat > "$mod/cmd/etcd/main.go" <<'SRC'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
SRC
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/etcd" ./cmd/etcd \
    && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/etcdctl" go.etcd.io/etcd/etcdctl/v3 \
    && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/etcdutl" go.etcd.io/etcd/etcdutl/v3)
  echo "  etcd v$v built in $((SECONDS - t0))s"
}

build_go_install() { # build_go_install NAME PKG VERSION BIN [LDFLAGS]
  local name=$1 pkg=$2 v=$3 bin=$4 ldflags=${5:-} dir="$out/bin/$1-$3"
  have "$dir" "$bin" && return 0
  echo "building $name $v"
  local t0=$SECONDS
  mkdir -p "$dir"
  GOBIN="$dir" CGO_ENABLED=0 GOFLAGS= go install -trimpath -ldflags "-s -w $ldflags" "$pkg@$v"
  echo "  $name built in $((SECONDS - t0))s"
}

# build_cert_manager builds cert-manager's controller and copies its CRDs (plain
# controller-gen YAML in the module's deploy/crds) to crds/. Upstream's command is a
# nested module (controller-binary, tied to the main one by a replace) that the
# module proxy does not serve, and its configuration API imports the Venafi client,
# whose module versions the proxy refuses; so a small main package, below, wires the
# controller from the cert-manager module's own packages, without the Venafi issuer.
build_cert_manager() {
  local v=$CERT_MANAGER_VERSION dir="$out/bin/cert-manager-$CERT_MANAGER_VERSION"
  have "$dir" cert-manager-controller && [ -f "$dir/crds/cert-manager.io_certificates.yaml" ] && return 0
  echo "building cert-manager $v"
  local t0=$SECONDS mod="$out/build/cert-manager-$v" src gomod
  mkdir -p "$mod/cmd/controller" "$dir/crds"
  local info
  info=$(cd "$mod" && go mod download -json "github.com/cert-manager/cert-manager@$v")
  src=$(sed -n 's/.*"Dir": "\(.*\)",/\1/p' <<<"$info")
  gomod=$(sed -n 's/.*"GoMod": "\(.*\)",/\1/p' <<<"$info")
  [ -d "$src/deploy/crds" ] || { echo "no deploy/crds in cert-manager $v" >&2; return 1; }
  if grep -l '{{' "$src"/deploy/crds/*.yaml; then
    echo "the CRDs of cert-manager $v are templates, not plain YAML" >&2; return 1
  fi
  rm -f "$dir"/crds/*.yaml
  install -m 644 "$src"/deploy/crds/*.yaml "$dir/crds/"
  printf 'module localbuild/cert-manager\n\ngo %s\n\nrequire github.com/cert-manager/cert-manager %s\n' \
    "$(sed -n 's/^go //p' "$gomod")" "$v" > "$mod/go.mod"
  rm -f "$mod/go.sum"
  cat > "$mod/cmd/controller/main.go" <<'SRC'
// The cert-manager controller, wired from the cert-manager module's packages:
// upstream's command is a nested module that cannot be fetched by module path, and
// its configuration API pulls in the Venafi client, whose module versions are not
// served. So: every control loop and issuer type except Venafi, upstream's flag
// names and defaults for the flags kept, leader election on a Lease, /metrics and
// /livez.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/cert-manager/cert-manager/pkg/controller"
	"github.com/cert-manager/cert-manager/pkg/healthz"
	dnsutil "github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/util"
	logf "github.com/cert-manager/cert-manager/pkg/logs"
	"github.com/cert-manager/cert-manager/pkg/util"
	utilfeature "github.com/cert-manager/cert-manager/pkg/util/feature"

	// Control loops register themselves; issuer types too.
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	_ "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/gateways"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/ingresses"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/vault"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/acme"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/vault"
	_ "github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/vault"
)

// The loops that '*' stands for: upstream's default set less Venafi.
var defaultControllers = []string{
	"issuers", "clusterissuers", "certificates-metrics", "ingress-shim", "orders", "challenges",
	"certificaterequests-issuer-acme", "certificaterequests-approver", "certificaterequests-issuer-ca",
	"certificaterequests-issuer-selfsigned", "certificaterequests-issuer-vault",
	"certificates-trigger", "certificates-issuing", "certificates-key-manager",
	"certificates-request-manager", "certificates-readiness", "certificates-revision-manager",
}

// Loops on cluster-scoped resources, off when --namespace is set.
var clusterScoped = []string{"clusterissuers", "certificatesigningrequests-issuer-acme",
	"certificatesigningrequests-issuer-ca", "certificatesigningrequests-issuer-selfsigned",
	"certificatesigningrequests-issuer-vault"}

type options struct {
	controller.ContextOptions
	controllers                    []string
	workers                        int
	leaderElect                    bool
	leaderNamespace                string
	leaseDuration, renewDeadline   time.Duration
	retryPeriod, healthzTimeout    time.Duration
	metricsAddress, healthzAddress string
	solverCPU, solverMemory        string
	solverCPULimit, solverMemLimit string
	dns01RecursiveOnly             bool
	featureGates                   map[string]bool
	logging                        logsapi.LoggingConfiguration
}

func parse(args []string) (*options, error) {
	o := &options{}
	c := &o.ContextOptions
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "kubeconfig file; in-cluster configuration if empty")
	fs.StringVar(&c.APIServerHost, "master", "", "API server address, overrides the kubeconfig's")
	fs.Float32Var(&c.KubernetesAPIQPS, "kube-api-qps", 20, "client QPS when the API server lacks Priority and Fairness")
	fs.IntVar(&c.KubernetesAPIBurst, "kube-api-burst", 50, "client burst when the API server lacks Priority and Fairness")
	fs.StringVar(&c.Namespace, "namespace", "", "watch only this namespace; all if empty")
	fs.StringVar(&c.ClusterResourceNamespace, "cluster-resource-namespace", "kube-system", "namespace of the Secrets that ClusterIssuers use")
	fs.BoolVar(&c.ClusterIssuerAmbientCredentials, "cluster-issuer-ambient-credentials", true, "ClusterIssuers may use ambient credentials")
	fs.BoolVar(&c.IssuerAmbientCredentials, "issuer-ambient-credentials", false, "Issuers may use ambient credentials")
	fs.BoolVar(&c.EnableOwnerRef, "enable-certificate-owner-ref", false, "make each Certificate the owner of its Secret")
	fs.StringSliceVar(&c.CopiedAnnotationPrefixes, "copied-annotation-prefixes",
		[]string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"}, "annotations copied from Certificates to CertificateRequests and Orders")
	fs.DurationVar(&c.CertificateRequestMinimumBackoffDuration, "certificate-request-minimum-backoff-duration", time.Hour, "first backoff after a failed issuance")
	fs.DurationVar(&c.CertificateRequestMaximumBackoffDuration, "certificate-request-maximum-backoff-duration", 32*time.Hour, "longest backoff after failed issuances")
	fs.IntVar(&c.MaxConcurrentChallenges, "max-concurrent-challenges", 60, "ACME challenges processed at once")
	fs.StringVar(&c.HTTP01SolverImage, "acme-http01-solver-image", "quay.io/jetstack/cert-manager-acmesolver:"+util.AppVersion, "ACME HTTP-01 solver image")
	fs.StringVar(&o.solverCPU, "acme-http01-solver-resource-request-cpu", "10m", "")
	fs.StringVar(&o.solverMemory, "acme-http01-solver-resource-request-memory", "64Mi", "")
	fs.StringVar(&o.solverCPULimit, "acme-http01-solver-resource-limits-cpu", "100m", "")
	fs.StringVar(&o.solverMemLimit, "acme-http01-solver-resource-limits-memory", "64Mi", "")
	fs.BoolVar(&c.ACMEHTTP01SolverRunAsNonRoot, "acme-http01-solver-run-as-non-root", true, "")
	fs.StringSliceVar(&c.DNS01Nameservers, "dns01-recursive-nameservers", nil, "host:port nameservers for DNS-01 self checks")
	fs.BoolVar(&o.dns01RecursiveOnly, "dns01-recursive-nameservers-only", false, "DNS-01 self checks use only the recursive nameservers")
	fs.DurationVar(&c.DNS01CheckRetryPeriod, "dns01-check-retry-period", 10*time.Second, "")
	fs.StringVar(&c.DefaultIssuerKind, "default-issuer-kind", "Issuer", "ingress-shim's default issuer kind")
	fs.StringVar(&c.DefaultIssuerGroup, "default-issuer-group", "cert-manager.io", "ingress-shim's default issuer group")
	fs.StringVar(&c.DefaultIssuerName, "default-issuer-name", "", "ingress-shim's default issuer")
	fs.StringSliceVar(&c.DefaultAutoCertificateAnnotations, "auto-certificate-annotations", []string{"kubernetes.io/tls-acme"}, "")
	fs.BoolVar(&c.EnableGatewayAPI, "enable-gateway-api", false, "watch Gateway API resources (add the gateway-shim controller)")
	fs.StringSliceVar(&o.controllers, "controllers", []string{"*"}, "control loops: '*' is the default set, 'name' adds one, '-name' drops one")
	fs.IntVar(&o.workers, "concurrent-workers", 5, "workers per control loop")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "run the control loops only while holding the leader Lease")
	fs.StringVar(&o.leaderNamespace, "leader-election-namespace", "kube-system", "namespace of the leader Lease")
	fs.DurationVar(&o.leaseDuration, "leader-election-lease-duration", 60*time.Second, "")
	fs.DurationVar(&o.renewDeadline, "leader-election-renew-deadline", 40*time.Second, "")
	fs.DurationVar(&o.retryPeriod, "leader-election-retry-period", 15*time.Second, "")
	fs.DurationVar(&o.healthzTimeout, "healthz-leader-election-timeout", 20*time.Second, "")
	fs.StringVar(&o.metricsAddress, "metrics-listen-address", "0.0.0.0:9402", "address of /metrics; '0' turns it off")
	fs.StringVar(&o.healthzAddress, "healthz-listen-address", "0.0.0.0:9403", "address of /livez; '0' turns it off")
	fs.Var(cliflag.NewMapStringBool(&o.featureGates), "feature-gates", "A=true,B=false; known:\n"+strings.Join(utilfeature.DefaultFeatureGate.KnownFeatures(), "\n"))
	logsapi.SetRecommendedLoggingConfiguration(&o.logging)
	logf.AddFlags(&o.logging, fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(o.featureGates); err != nil {
		return nil, err
	}
	if err := logf.ValidateAndApply(&o.logging); err != nil {
		return nil, err
	}
	for _, q := range []struct {
		s   string
		dst *resource.Quantity
	}{{o.solverCPU, &c.HTTP01SolverResourceRequestCPU}, {o.solverMemory, &c.HTTP01SolverResourceRequestMemory},
		{o.solverCPULimit, &c.HTTP01SolverResourceLimitsCPU}, {o.solverMemLimit, &c.HTTP01SolverResourceLimitsMemory}} {
		v, err := resource.ParseQuantity(q.s)
		if err != nil {
			return nil, err
		}
		*q.dst = v
	}
	if len(c.DNS01Nameservers) == 0 {
		c.DNS01Nameservers = dnsutil.RecursiveNameservers
	}
	c.DNS01CheckAuthoritative = !o.dns01RecursiveOnly
	c.GatewayAPIExtraProtocols = sets.New[string]()
	return o, nil
}

// enabled expands --controllers.
func (o *options) enabled() ([]string, error) {
	on := sets.New[string]()
	for _, c := range o.controllers {
		switch {
		case c == "*":
			on.Insert(defaultControllers...)
			if o.EnableGatewayAPI {
				on.Insert("gateway-shim")
			}
		case !strings.HasPrefix(c, "-"):
			on.Insert(c)
		}
	}
	for _, c := range o.controllers {
		if strings.HasPrefix(c, "-") {
			on.Delete(c[1:])
		}
	}
	if o.Namespace != "" {
		on.Delete(clusterScoped...)
	}
	for c := range on {
		if _, ok := controller.Known()[c]; !ok {
			return nil, fmt.Errorf("unknown controller %q", c)
		}
	}
	return sets.List(on), nil
}

// serve runs an HTTP server on addr until ctx ends; "0" or "" turns it off.
func serve(ctx context.Context, g *errgroup.Group, addr string, newServer func(net.Listener) *http.Server) error {
	if addr == "" || addr == "0" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := newServer(ln)
	g.Go(func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		return srv.Close()
	})
	return nil
}

func run(ctx context.Context, o *options) error {
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	names, err := o.enabled()
	if err != nil {
		return err
	}
	logf.FromContext(ctx).Info("starting cert-manager controller", "version", util.AppVersion, "controllers", names)
	factory, err := controller.NewContextFactory(ctx, o.ContextOptions)
	if err != nil {
		return err
	}
	cctx, err := factory.Build()
	if err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)

	health := healthz.NewServer(o.healthzTimeout)
	if o.healthzAddress != "" && o.healthzAddress != "0" {
		ln, err := net.Listen("tcp", o.healthzAddress)
		if err != nil {
			return err
		}
		g.Go(func() error { return health.Start(gctx, ln) })
	}
	cm := cctx.SharedInformerFactory
	cctx.Metrics.SetupACMECollector(cm.Acme().V1().Challenges().Lister())
	cctx.Metrics.SetupCertificateCollector(cm.Certmanager().V1().Certificates().Lister())
	cctx.Metrics.SetupIssuerCollector(cm.Certmanager().V1().Issuers().Lister())
	if o.Namespace == "" {
		cctx.Metrics.SetupClusterIssuerCollector(cm.Certmanager().V1().ClusterIssuers().Lister())
	}
	if err := serve(gctx, g, o.metricsAddress, cctx.Metrics.NewServer); err != nil {
		return err
	}

	loops := func(ctx context.Context) error {
		lg, lctx := errgroup.WithContext(ctx)
		for _, name := range names {
			loop, err := controller.Known()[name](factory)
			if err != nil {
				return fmt.Errorf("controller %s: %w", name, err)
			}
			lg.Go(func() error { return loop.Run(o.workers, lctx) })
		}
		// Informers start once every loop has asked for the ones it needs.
		cctx.KubeSharedInformerFactory.Start(lctx.Done())
		cctx.SharedInformerFactory.Start(lctx.Done())
		cctx.HTTP01ResourceMetadataInformersFactory.Start(lctx.Done())
		if o.EnableGatewayAPI {
			cctx.GWShared.Start(lctx.Done())
		}
		return lg.Wait()
	}
	if !o.leaderElect {
		g.Go(func() error { return loops(gctx) })
		return g.Wait()
	}

	host, err := os.Hostname()
	if err != nil {
		return err
	}
	le, err := factory.Build("leader-election")
	if err != nil {
		return err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.leaderNamespace, "cert-manager-controller",
		le.Client.CoreV1(), le.Client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: host + "-external-cert-manager-controller", EventRecorder: le.Recorder})
	if err != nil {
		return err
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.leaseDuration,
		RenewDeadline:   o.renewDeadline,
		RetryPeriod:     o.retryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        health.LeaderHealthzAdaptor,
		Callbacks: leaderelection.LeaderCallbacks{
			// ctx ends when the lease is lost or on shutdown.
			OnStartedLeading: func(ctx context.Context) { g.Go(func() error { return loops(ctx) }) },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return err
	}
	health.LeaderHealthzAdaptor.SetLeaderElection(elector)
	g.Go(func() error {
		elector.Run(gctx)
		if gctx.Err() == nil {
			return errors.New("lost the leader Lease")
		}
		return nil
	})
	return g.Wait()
}

func main() {
	logf.InitLogs()
	o, err := parse(os.Args[1:])
	if errors.Is(err, pflag.ErrHelp) {
		return
	}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err = run(ctx, o)
		stop()
	}
	logf.FlushLogs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}
SRC
  (cd "$mod" && CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$v" \
    -o "$dir/cert-manager-controller.tmp" ./cmd/controller)
  mv "$dir/cert-manager-controller.tmp" "$dir/cert-manager-controller"
  echo "  cert-manager $v built in $((SECONDS - t0))s"
}

what=${1:-all}
case $what in
  kubernetes) build_kubernetes ;;
  etcd) build_etcd "$ETCD_VERSION"; build_etcd "$ETCD_OLD_VERSION"; build_etcd "$ETCD_NEXT_VERSION" ;;
  cert-manager) build_cert_manager ;;
  # helm's own release build sets its version the same way (helm version prints it).
  helm) build_go_install helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION" helm \
    "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" ;;
  # What envtest needs (KUBEBUILDER_ASSETS): kube-apiserver, kubectl and etcd.
  envtest) build_etcd "$ETCD_VERSION"; build_kubernetes kube-apiserver kubectl ;;
  all)
    build_etcd "$ETCD_VERSION"
    build_etcd "$ETCD_OLD_VERSION"
    build_etcd "$ETCD_NEXT_VERSION"
    build_kubernetes
    build_go_install coredns github.com/coredns/coredns "$COREDNS_VERSION" coredns
    build_go_install local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_VERSION" local-path-provisioner
    build_go_install crictl sigs.k8s.io/cri-tools/cmd/crictl "$CRICTL_VERSION" crictl
    build_cert_manager
    ;;
  *) echo "usage: $0 [all|kubernetes|etcd|envtest|cert-manager|helm]" >&2; exit 2 ;;
esac
