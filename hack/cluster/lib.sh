# shellcheck shell=bash
# Settings and helpers shared by up.sh, down.sh and images.sh. Sourced, not run.
#
# Where things live:
#   _output/bin/<name>-<version>/   built binaries (build cache, kept by down.sh)
#   _output/images/                 image tarballs (cache, kept by down.sh)
#   _output/cluster/                pids/, logs/, pki/, config/ and the admin kubeconfig
#   /var/lib/raftsman-cluster/      runtime state: etcd data, kubelet and containerd roots,
#                                   CNI IPAM, provisioned volumes
#   /run/raftsman-cluster/          containerd socket and state, runc state
# Runtime state sits outside the checkout: the kubelet and containerd need short socket
# paths, and the cluster is one per machine (it owns cni0, 10.96.0.10 and fixed ports).
# down.sh removes all of it except the two caches.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/hack/cluster/versions.sh"

OUT=$root/_output
BIN_DIR=$OUT/bin
IMAGE_DIR=$OUT/images
KUBE_BIN=$BIN_DIR/kubernetes-$KUBE_VERSION
ETCD_BIN=$BIN_DIR/etcd-v$ETCD_VERSION
KUBECTL=$KUBE_BIN/kubectl
CRICTL=$BIN_DIR/crictl-$CRICTL_VERSION/crictl

CLUSTER_DIR=$OUT/cluster
PID_DIR=$CLUSTER_DIR/pids
LOG_DIR=$CLUSTER_DIR/logs
PKI_DIR=$CLUSTER_DIR/pki
CONF_DIR=$CLUSTER_DIR/config
ADMIN_KUBECONFIG=$CLUSTER_DIR/kubeconfig

STATE_DIR=/var/lib/raftsman-cluster
RUN_DIR=/run/raftsman-cluster
CONTAINERD_SOCK=$RUN_DIR/containerd.sock
# Which checkout started the cluster now on this machine.
OWNER_FILE=$RUN_DIR/owner

NODE_NAME=raftsman-node
CLUSTER_DOMAIN=cluster.local
POD_CIDR=10.244.0.0/24
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
DNS_IP=10.96.0.10
# Control-plane etcd listens on loopback ports away from etcd's defaults (so etcd
# processes that tests start on the host do not collide with it), below the NodePort
# range (kube-proxy catches NodePorts on every local address, 127.0.0.1 included) and
# below the ephemeral port range.
ETCD_CLIENT_PORT=12379
ETCD_PEER_PORT=12380
APISERVER_PORT=6443

# Start order; down.sh stops in reverse.
COMPONENTS=(containerd etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy coredns local-path-provisioner)

# Debian packages the cluster needs on the host.
PACKAGES=(containerd runc containernetworking-plugins iptables busybox-static openssl iproute2 util-linux)
CNI_BIN_DIR=/usr/lib/cni
BUSYBOX=/bin/busybox

log() { printf '[%6ss] %s\n' "$(elapsed)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
_t0=${EPOCHREALTIME/./}
elapsed() { local us=$((${EPOCHREALTIME/./} - _t0)); printf '%d.%d' $((us / 1000000)) $((us / 100000 % 10)); }

require_root() { [ "$(id -u)" = 0 ] || die "must run as root (it starts containerd and the kubelet)"; }

kubectl() { "$KUBECTL" --kubeconfig "$ADMIN_KUBECONFIG" "$@"; }
crictl() {
  # A config file of its own, or crictl warns about a missing /etc/crictl.yaml.
  [ -d "$RUN_DIR" ] && [ ! -f "$RUN_DIR/crictl.yaml" ] && printf 'runtime-endpoint: unix://%s\nimage-endpoint: unix://%s\ntimeout: 10\n' "$CONTAINERD_SOCK" "$CONTAINERD_SOCK" > "$RUN_DIR/crictl.yaml"
  "$CRICTL" --config "$RUN_DIR/crictl.yaml" --runtime-endpoint "unix://$CONTAINERD_SOCK" --image-endpoint "unix://$CONTAINERD_SOCK" --timeout 10s "$@"
}
ctr() { timeout 60 ctr --address "$CONTAINERD_SOCK" -n k8s.io "$@"; }

# install_packages installs whatever of PACKAGES is missing, refreshing the package
# lists once and only when something is missing.
install_packages() {
  local missing=() p
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d exit 101 keeps the packages' own init scripts from starting a system
  # containerd: this cluster runs its own instance.
  local policy=/usr/sbin/policy-rc.d created=
  if [ ! -e $policy ]; then printf '#!/bin/sh\nexit 101\n' > $policy; chmod +x $policy; created=1; fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ -n "$created" ] && rm -f $policy
  return 0
}

# --- processes -------------------------------------------------------------------
# A PID file holds "PID STARTTIME" (field 22 of /proc/PID/stat), so a recycled PID is
# never mistaken for ours. A zombie counts as dead: PID 1 here reaps slowly and
# `kill -0` would still succeed on it.

# proc_info PID prints "STATE STARTTIME", or fails if there is no such process.
proc_info() {
  local s
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }  # drop "pid (comm) ", comm may hold spaces
  set -- $s
  echo "$1 ${20}"
}

# pid_running PID STARTTIME: true if that very process exists and is not a zombie.
pid_running() {
  local info
  info=$(proc_info "$1") || return 1
  set -- $info "$2"
  [ "$1" != Z ] && [ "$1" != X ] && [ "$2" = "$3" ]
}

# running NAME: true if the process from NAME's PID file runs.
running() {
  local f=$PID_DIR/$1.pid pid start
  [ -f "$f" ] || return 1
  read -r pid start < "$f" || return 1
  pid_running "$pid" "$start"
}

pid_of() { local pid _; read -r pid _ < "$PID_DIR/$1.pid" 2>/dev/null && echo "$pid"; }

# start NAME CMD ARGS...: runs CMD detached in its own session (so neither a ^C nor
# the caller's process group takes it down), logging to logs/NAME.log.
start() {
  local name=$1; shift
  mkdir -p "$PID_DIR" "$LOG_DIR"
  setsid nohup "$@" >> "$LOG_DIR/$name.log" 2>&1 < /dev/null &
  local pid=$! info
  info=$(proc_info $pid) || die "$name exited at once: $(tail -n 20 "$LOG_DIR/$name.log")"
  set -- $info
  echo "$pid $2" > "$PID_DIR/$name.pid"
}

# stop NAME...: TERM, wait up to STOP_TIMEOUT seconds (default 10), then KILL, for
# exactly the processes in the PID files. Removes the PID files.
stop() {
  local name pid start waiting deadline
  local -A live=()
  for name in "$@"; do
    [ -f "$PID_DIR/$name.pid" ] || continue
    read -r pid start < "$PID_DIR/$name.pid" || true
    if [ -n "$pid" ] && pid_running "$pid" "$start"; then
      kill -TERM "$pid" 2>/dev/null || true
      live[$name]="$pid $start"
    fi
  done
  deadline=$((SECONDS + ${STOP_TIMEOUT:-10}))
  while :; do
    waiting=()
    for name in "${!live[@]}"; do
      pid_running ${live[$name]} && waiting+=("$name")
    done
    [ ${#waiting[@]} -eq 0 ] && break
    if [ $SECONDS -ge $deadline ]; then
      for name in "${waiting[@]}"; do
        log "$name did not stop on TERM, killing it"
        kill -KILL "${live[$name]%% *}" 2>/dev/null || true
      done
      sleep 0.5
      break
    fi
    sleep 0.1
  done
  for name in "$@"; do rm -f "$PID_DIR/$name.pid"; done
}

# wait_for NAME TIMEOUT DESCRIPTION CMD...: polls CMD until it succeeds. Fails early
# if component NAME died, and on failure prints the tail of NAME's log.
wait_for() {
  local name=$1 timeout=$2 what=$3; shift 3
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [ -n "$name" ] && [ -f "$PID_DIR/$name.pid" ] && ! running "$name"; then
      fail_with_log "$name" "$name died while waiting for $what"
    fi
    [ $SECONDS -ge $deadline ] && fail_with_log "$name" "timed out after ${timeout}s waiting for $what"
    sleep 0.2
  done
}

fail_with_log() {
  local name=$1 msg=$2
  log "ERROR: $msg"
  if [ -n "$name" ] && [ -f "$LOG_DIR/$name.log" ]; then
    echo "----- last lines of $LOG_DIR/$name.log -----" >&2
    tail -n 40 "$LOG_DIR/$name.log" >&2
    echo "-----" >&2
  fi
  exit 1
}

# --- images ----------------------------------------------------------------------

# build_tools builds the image packer and the pause binary from hack/imagebuild.
build_tools() {
  (cd "$root/hack/imagebuild" && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath -o "$BIN_DIR/imagebuild" . \
    && GOFLAGS=-buildvcs=false CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BIN_DIR/pause" ./pause)
}

# image NAME ARGS...: writes _output/images/NAME.tar with imagebuild ARGS, unless the
# tarball was built from the same arguments and the same input files already.
image() {
  local name=$1; shift
  local tar=$IMAGE_DIR/$name.tar key a
  # Contents, not mtimes: `go build -o` rewrites its output even when nothing changed.
  key=$( {
    echo "$*"
    sha256sum < "$BIN_DIR/imagebuild"
    local prev=
    for a in "$@"; do
      [ "$prev" = -file ] && sha256sum < "${a#*=}"
      prev=$a
    done
  } | sha256sum | cut -c1-64)
  if [ -f "$tar" ] && [ "$(cat "$tar.key" 2>/dev/null)" = "$key" ]; then return 0; fi
  mkdir -p "$IMAGE_DIR"
  rm -f "$tar.key"
  "$BIN_DIR/imagebuild" -o "$tar" "$@" || return 1
  echo "$key" > "$tar.key"
}

# build_base_images writes the tarballs of pause, etcd (all three versions) and busybox.
build_base_images() {
  build_tools
  image pause -tag "$PAUSE_IMAGE" -file "/pause=$BIN_DIR/pause" -entrypoint /pause -user 65535:65535
  local v d
  for v in "$ETCD_VERSION" "$ETCD_OLD_VERSION" "$ETCD_NEXT_VERSION"; do
    d=$BIN_DIR/etcd-v$v
    # Laid out like the upstream image: binaries in /usr/local/bin, a /tmp and /var/lib/etcd.
    image "etcd-v$v" -tag "$ETCD_REPOSITORY:v$v" \
      -file "/usr/local/bin/etcd=$d/etcd" -file "/usr/local/bin/etcdctl=$d/etcdctl" \
      -file "/usr/local/bin/etcdutl=$d/etcdutl" -dir /tmp:1777 -dir /var/lib/etcd:700 \
      -env PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -entrypoint /usr/local/bin/etcd
  done
  # busybox: the static binary plus a symlink for every applet it has (sh, mkdir, rm,
  # nslookup, wget, ...), for the provisioner's helper pods and for test clients.
  local links=() l
  for l in $("$BUSYBOX" --list-full); do
    [ "/$l" = /bin/busybox ] || links+=(-symlink "/$l=/bin/busybox")
  done
  image busybox -tag "$BUSYBOX_IMAGE" -file "/bin/busybox=$BUSYBOX" "${links[@]}" -dir /tmp:1777 \
    -env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -cmd sh
}

# build_operator_image builds the operator binary and its image. Fails (without
# exiting, so callers may go on without it) when ./cmd/raftsman is missing or does
# not build.
build_operator_image() {
  if [ ! -d "$root/cmd/raftsman" ]; then
    log "no ./cmd/raftsman package to build the operator image from"
    return 1
  fi
  # Built as make release builds it (-trimpath), so that either build finds
  # the packages the other compiled in Go's build cache.
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BIN_DIR/raftsman" ./cmd/raftsman \
    && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BIN_DIR/raftsman-gate" ./cmd/raftsman-gate) || return 1
  [ -x "$BIN_DIR/imagebuild" ] || build_tools || return 1
  image raftsman -tag "$OPERATOR_IMAGE" -file "/raftsman=$BIN_DIR/raftsman" -file "/raftsman-gate=$BIN_DIR/raftsman-gate" \
    -entrypoint /raftsman -user 65532:65532
}

# build_failpoints_image builds raftsman:failpoints, the operator built with the
# failpoints tag (pkg/failpoint), which only the robustness tests run.
build_failpoints_image() {
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -tags failpoints -o "$BIN_DIR/raftsman-failpoints" ./cmd/raftsman \
    && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BIN_DIR/raftsman-gate" ./cmd/raftsman-gate) || return 1
  image raftsman-failpoints -tag "$FAILPOINTS_IMAGE" -file "/raftsman=$BIN_DIR/raftsman-failpoints" -file "/raftsman-gate=$BIN_DIR/raftsman-gate" \
    -entrypoint /raftsman -user 65532:65532
}

# import_images NAME...: loads those tarballs into the cluster's containerd.
import_images() {
  local n
  for n in "$@"; do
    ctr images import "$IMAGE_DIR/$n.tar" >/dev/null || die "importing $n.tar into containerd failed"
  done
}

# import_missing_base_images loads the base images (pause, etcd, busybox) that the
# running containerd lacks: ones it lost, or an etcd version added to versions.sh after
# the cluster started. It builds the etcd binaries first (cached: instant unless a
# version is new).
import_missing_base_images() {
  local present pair missing=()
  present=$(ctr images ls -q) || return 1
  for pair in "pause=$PAUSE_IMAGE" "etcd-v$ETCD_VERSION=$ETCD_REPOSITORY:v$ETCD_VERSION" \
    "etcd-v$ETCD_OLD_VERSION=$ETCD_REPOSITORY:v$ETCD_OLD_VERSION" \
    "etcd-v$ETCD_NEXT_VERSION=$ETCD_REPOSITORY:v$ETCD_NEXT_VERSION" "busybox=$BUSYBOX_IMAGE"; do
    grep -qx "${pair#*=}" <<<"$present" || missing+=("${pair%%=*}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  "$root/hack/cluster/build.sh" etcd || return 1
  build_base_images || return 1
  import_images "${missing[@]}"
  log "imported ${missing[*]}"
}
