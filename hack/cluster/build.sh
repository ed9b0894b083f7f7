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

build_go_install() { # build_go_install NAME PKG VERSION BIN
  local name=$1 pkg=$2 v=$3 bin=$4 dir="$out/bin/$1-$3"
  have "$dir" "$bin" && return 0
  echo "building $name $v"
  local t0=$SECONDS
  mkdir -p "$dir"
  GOBIN="$dir" CGO_ENABLED=0 GOFLAGS= go install -trimpath -ldflags "-s -w" "$pkg@$v"
  echo "  $name built in $((SECONDS - t0))s"
}

what=${1:-all}
case $what in
  kubernetes) build_kubernetes ;;
  etcd) build_etcd "$ETCD_VERSION"; build_etcd "$ETCD_OLD_VERSION" ;;
  # What envtest needs (KUBEBUILDER_ASSETS): kube-apiserver, kubectl and etcd.
  envtest) build_etcd "$ETCD_VERSION"; build_kubernetes kube-apiserver kubectl ;;
  all)
    build_etcd "$ETCD_VERSION"
    build_etcd "$ETCD_OLD_VERSION"
    build_kubernetes
    build_go_install coredns github.com/coredns/coredns "$COREDNS_VERSION" coredns
    build_go_install local-path-provisioner github.com/rancher/local-path-provisioner "$LOCAL_PATH_VERSION" local-path-provisioner
    build_go_install crictl sigs.k8s.io/cri-tools/cmd/crictl "$CRICTL_VERSION" crictl
    ;;
  *) echo "usage: $0 [all|kubernetes|etcd|envtest]" >&2; exit 2 ;;
esac
