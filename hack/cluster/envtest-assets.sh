#!/usr/bin/env bash
# Fills DIR (make's ENVTEST_ASSETS, default _output/envtest) with what envtest looks for
# in KUBEBUILDER_ASSETS: kube-apiserver, etcd and kubectl, as symlinks into the build
# cache. Builds only those three if they are missing.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
dir=${1:-$OUT/envtest}
"$root/hack/cluster/build.sh" envtest
mkdir -p "$dir"
ln -sfn "$KUBE_BIN/kube-apiserver" "$dir/kube-apiserver"
ln -sfn "$KUBE_BIN/kubectl" "$dir/kubectl"
ln -sfn "$ETCD_BIN/etcd" "$dir/etcd"
