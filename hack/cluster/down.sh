#!/usr/bin/env bash
# Stops the local cluster and removes everything it wrote (make cluster-down): its
# processes (only those named in our PID files), pods and containers, mounts, cni0,
# the iptables rules of kube-proxy, the kubelet and the CNI plugins, the DNS address on
# lo, changed sysctls and all state. Keeps the build caches (_output/bin, _output/images)
# and the component logs. Also used by up.sh to clear what a killed run left behind,
# so every step copes with a half-dead cluster.
#
#   down.sh [--quiet]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_root
quiet=
[ "${1:-}" = --quiet ] && quiet=1
say() { [ -n "$quiet" ] || log "$@"; }

# Refuse to pull a cluster from under another checkout that still runs it.
owner=$(cat "$OWNER_FILE" 2>/dev/null || true)
if [ -n "$owner" ] && [ "$owner" != "$root" ]; then
  for f in "$owner"/_output/cluster/pids/*.pid; do
    [ -f "$f" ] || continue
    read -r pid start < "$f" || continue
    pid_running "$pid" "$start" && die "the cluster on this machine runs from $owner; use $owner/hack/cluster/down.sh"
  done
fi

# Add-ons that run beside the cluster as host processes (cert-manager.sh).
ADDONS=(cert-manager)

# Remember every process named in a PID file, to check at the end that none lives.
declare -A recorded=()
for c in "${COMPONENTS[@]}" "${ADDONS[@]}"; do
  [ -f "$PID_DIR/$c.pid" ] && recorded[$c]=$(cat "$PID_DIR/$c.pid")
done

# 1. The add-ons, the kubelet and the controllers first, so nothing recreates what we
# remove.
STOP_TIMEOUT=10 stop "${ADDONS[@]}" kubelet kube-controller-manager kube-scheduler local-path-provisioner coredns kube-proxy

# 2. Every pod sandbox, through our containerd while it still runs.
if running containerd; then
  say "removing pods"
  crictl rmp --all --force >/dev/null 2>&1 || say "crictl rmp failed; leftover containers are killed below"
fi
# The apiserver before etcd: without its storage it hangs in its graceful shutdown,
# so if etcd is already gone there is no point in waiting for it.
apiserver_timeout=10
running etcd || apiserver_timeout=1
STOP_TIMEOUT=10 stop containerd
STOP_TIMEOUT=$apiserver_timeout stop kube-apiserver
STOP_TIMEOUT=10 stop etcd

# 3. Containers that outlived a killed containerd. A containerd started on the same
# state reconnects to their shims and removes them properly (network namespaces, CNI
# IPAM, mounts); failing that, kill each container's init process (its PID is in the
# task's bundle dir) and the shim that is its parent.
shopt -s nullglob
tasks() { echo "$RUN_DIR"/containerd/io.containerd.runtime.v2.task/*/*/; }
# Shims listen on sockets under /run/containerd/s; a killed one leaves its socket.
shim_sockets=()
for t in $(tasks); do
  a=$(cat "$t/address" 2>/dev/null || true)
  case ${a#unix://} in /run/containerd/s/*) shim_sockets+=("${a#unix://}") ;; esac
done
if [ -n "$(tasks)" ] && [ -f "$CONF_DIR/containerd.toml" ] && [ -x "$CRICTL" ]; then
  say "starting containerd again to remove the pods it left"
  start containerd containerd --config "$CONF_DIR/containerd.toml" --log-level warn
  for _ in $(seq 50); do crictl info >/dev/null 2>&1 && break; sleep 0.2; done
  crictl rmp --all --force >/dev/null 2>&1 || say "crictl rmp failed"
  stop containerd
fi
started_near() { # started_near PID FILE: the process started within 10s of FILE's mtime
  local info hz btime start mtime
  info=$(proc_info "$1") || return 1
  set -- $info "$2"
  [ "$1" = Z ] && return 1
  hz=$(getconf CLK_TCK)
  btime=$(awk '$1 == "btime" {print $2}' /proc/stat)
  start=$((btime + $2 / hz))
  mtime=$(stat -c %Y "$3")
  [ $((start - mtime)) -le 10 ] && [ $((mtime - start)) -le 10 ]
}
left=($(tasks))
if [ ${#left[@]} -gt 0 ]; then
  say "killing ${#left[@]} leftover container(s) and their shims"
  for t in "${left[@]}"; do
    f=$t/init.pid
    if [ -f "$f" ] && pid=$(cat "$f") && started_near "$pid" "$f"; then
      shim=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
      kill -KILL "$pid" 2>/dev/null || true
      case $(readlink "/proc/$shim/exe" 2>/dev/null) in
        */containerd-shim-runc-v2) kill -KILL "$shim" 2>/dev/null || true ;;
      esac
    fi
  done
  sleep 0.5
fi
for s in "${shim_sockets[@]}"; do
  [ -S "$s" ] && ! grep -q " $s\$" /proc/net/unix && rm -f "$s"
done

# 4. Mounts: container root filesystems, pod network namespaces, kubelet volumes.
# Deepest first; lazily if busy.
our_mounts() {
  awk '{print $5}' /proc/self/mountinfo | while read -r m; do
    m=$(printf '%b' "${m//\\/\\0}")  # mountinfo escapes spaces etc. as \040
    case $m in "$STATE_DIR"|"$STATE_DIR"/*|"$RUN_DIR"|"$RUN_DIR"/*) echo "$m" ;; esac
  done | awk '{print length, $0}' | sort -rn | cut -d' ' -f2-
}
for pass in 1 2 3; do
  mapfile -t mounts < <(our_mounts)
  [ ${#mounts[@]} -eq 0 ] && break
  [ $pass = 1 ] && say "unmounting ${#mounts[@]} mount(s)"
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
done

# 5. Network: the bridge, the DNS address, and iptables rules. Every chain that
# kube-proxy, the kubelet and the CNI plugins add is named KUBE-* or CNI-*; a table is
# rewritten (atomically, by *-restore) only if it holds any.
ip link show cni0 >/dev/null 2>&1 && { say "removing cni0"; ip link del cni0; }
ip -4 addr show dev lo | grep -q " $DNS_IP/32 " && ip addr del "$DNS_IP/32" dev lo
for ipt in iptables ip6tables; do
  command -v "$ipt-save" >/dev/null || continue
  rules=$("$ipt-save" 2>/dev/null) || continue
  if grep -qE 'KUBE-|CNI-' <<<"$rules"; then
    say "removing KUBE-*/CNI-* rules from $ipt"
    grep -vE 'KUBE-|CNI-' <<<"$rules" | "$ipt-restore"
  fi
done

# 6. Pod cgroups the kubelet made (cgroupfs driver: /kubepods in each hierarchy).
for c in /sys/fs/cgroup/*/kubepods; do
  find "$c" -depth -type d -exec rmdir {} + 2>/dev/null || true
done

# 7. Sysctls up.sh or the kubelet changed.
if [ -f "$RUN_DIR/sysctl.saved" ]; then
  while read -r k v; do sysctl -q -w "$k=$v" 2>/dev/null || true; done < "$RUN_DIR/sysctl.saved"
fi

# 8. State. --one-file-system: never descend into something still mounted.
if [ -n "$(our_mounts)" ]; then
  die "still mounted, not removing state: $(our_mounts | head -5 | tr '\n' ' ')"
fi
for l in /var/log/containers/*.log; do
  [ -L "$l" ] && case $(readlink "$l") in "$STATE_DIR"/*) rm -f "$l" ;; esac
done
rmdir /var/log/containers 2>/dev/null || true
rm -rf --one-file-system "$STATE_DIR" "$RUN_DIR"
rm -rf "$PID_DIR" "$PKI_DIR" "$CONF_DIR" "$ADMIN_KUBECONFIG"
rmdir /run/containerd/s /run/containerd 2>/dev/null || true

# 9. Check that nothing we started still runs.
alive=()
for c in "${!recorded[@]}"; do
  pid_running ${recorded[$c]} && alive+=("$c(${recorded[$c]%% *})")
done
[ ${#alive[@]} -eq 0 ] || die "still running: ${alive[*]}"
if [ -z "$quiet" ]; then
  log "cluster down: ${#recorded[@]} process(es) from PID files, none running; state removed"
fi
