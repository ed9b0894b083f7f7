#!/usr/bin/env bash
# Rebuilds the operator binary (./cmd/raftsman) and its image, raftsman:dev (and
# raftsman:failpoints, the same built with failpoints for the robustness tests), and loads
# them into the running local cluster's containerd (make images). Takes seconds.
# Also loads the base images (pause, etcd, busybox) if containerd lacks any of them.
# Pods already running keep the image they started with: restart them to pick up
# the new one.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_root
running containerd || die "the local cluster is not running (make cluster-up)"

build_operator_image || die "building the operator image failed"
build_failpoints_image || die "building the failpoints image failed"
import_images raftsman raftsman-failpoints
log "imported $OPERATOR_IMAGE ($(tar -xOf "$IMAGE_DIR/raftsman.tar" manifest.json | sed 's/.*"Config":"\([^"]*\)".*/\1/'))"

# Base images, in case containerd lost them or a version was added since cluster-up.
import_missing_base_images || die "loading the base images into containerd failed"
