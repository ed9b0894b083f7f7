#!/usr/bin/env bash
# Starts the local single-node Kubernetes cluster (make cluster-up): containerd, a
# control-plane etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
# kube-proxy, CoreDNS and local-path-provisioner, all as host processes built from
# source. Writes the admin kubeconfig to _output/cluster/kubeconfig.
#
# Idempotent: when every component runs and the node is Ready it only loads the base
# images containerd lacks (say an etcd version new in versions.sh) and returns.
# Otherwise it clears whatever an earlier run left (down.sh) and starts afresh.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_root

other_owner_check() {
  local owner
  owner=$(cat "$OWNER_FILE" 2>/dev/null) || return 0
  [ "$owner" = "$root" ] && return 0
  local f pid start
  for f in "$owner"/_output/cluster/pids/*.pid; do
    [ -f "$f" ] || continue
    read -r pid start < "$f" || continue
    if pid_running "$pid" "$start"; then
      die "the cluster on this machine runs from $owner; stop it with $owner/hack/cluster/down.sh first"
    fi
  done
}

cluster_healthy() {
  [ "$(cat "$OWNER_FILE" 2>/dev/null)" = "$root" ] || return 1
  local c
  for c in "${COMPONENTS[@]}"; do running "$c" || return 1; done
  node_ready
}

node_ready() {
  [ "$(kubectl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# node_ip prints the IPv4 address of the interface holding the default route, else
# the first global IPv4 address. Pods reach the apiserver there (via 10.96.0.1).
node_ip() {
  local dev ip
  dev=$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit }}')
  if [ -n "$dev" ]; then
    ip=$(ip -4 -o addr show dev "$dev" scope global | awk '{split($4, a, "/"); print a[1]; exit}')
  fi
  [ -n "${ip:-}" ] || ip=$(ip -4 -o addr show scope global | awk '$2 != "cni0" {split($4, a, "/"); print a[1]; exit}')
  [ -n "$ip" ] || die "found no global IPv4 address for the node"
  echo "$ip"
}

# --- certificates and kubeconfigs --------------------------------------------------
# One CA signs everything (serving, client, cluster-signing). ECDSA P-256 keys are
# fast to make, so a cold start makes fresh ones.

cert() { # cert NAME CN ORG client|server [SANS]
  local name=$1 cn=$2 org=$3 usage=$4 sans=${5:-} subj ext
  subj="/CN=$cn"
  [ -n "$org" ] && subj="/O=$org$subj"
  ext="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=$([ "$usage" = server ] && echo serverAuth,clientAuth || echo clientAuth)"
  [ -n "$sans" ] && ext+="
subjectAltName=$sans"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$PKI_DIR/$name.key" -subj "$subj" 2>/dev/null \
  | openssl x509 -req -CA "$PKI_DIR/ca.crt" -CAkey "$PKI_DIR/ca.key" -days 3650 \
    -set_serial "0x$(openssl rand -hex 16)" -extfile <(echo "$ext") -out "$PKI_DIR/$name.crt" 2>/dev/null
}

make_pki() {
  mkdir -p "$PKI_DIR"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
    -subj /CN=raftsman-local-ca -keyout "$PKI_DIR/ca.key" -out "$PKI_DIR/ca.crt" 2>/dev/null
  cert apiserver kube-apiserver "" server "DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.$CLUSTER_DOMAIN,DNS:localhost,DNS:$NODE_NAME,IP:127.0.0.1,IP:$API_SERVICE_IP,IP:$NODE_IP"
  cert apiserver-kubelet-client kube-apiserver-kubelet-client system:masters client
  # The apiserver's identity towards aggregated API servers (metrics-server and the like).
  cert front-proxy-client front-proxy-client "" client
  cert admin kubernetes-admin system:masters client
  cert controller-manager system:kube-controller-manager "" client
  cert scheduler system:kube-scheduler "" client
  cert kubelet "system:node:$NODE_NAME" system:nodes client
  cert kube-proxy system:kube-proxy "" client
  cert coredns raftsman:coredns "" client
  cert local-path-provisioner raftsman:local-path-provisioner "" client
  # Service-account token signing key pair.
  openssl ecparam -name prime256v1 -genkey -noout -out "$PKI_DIR/sa.key"
  openssl ec -in "$PKI_DIR/sa.key" -pubout -out "$PKI_DIR/sa.pub" 2>/dev/null
  chmod 600 "$PKI_DIR"/*.key
}

kubeconfig() { # kubeconfig FILE CERTNAME: credentials embedded, so the file can be copied
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: raftsman-local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$PKI_DIR/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 "$PKI_DIR/$2.crt")
    client-key-data: $(base64 -w0 "$PKI_DIR/$2.key")
contexts:
- name: raftsman-local
  context:
    cluster: raftsman-local
    user: $2
current-context: raftsman-local
EOF
  chmod 600 "$1"
}

# --- component configuration -------------------------------------------------------

write_configs() {
  mkdir -p "$CONF_DIR" "$CONF_DIR/cni" "$STATE_DIR/local-path"
  local c
  for c in controller-manager scheduler kubelet kube-proxy coredns local-path-provisioner; do
    kubeconfig "$CONF_DIR/$c.kubeconfig" "$c"
  done
  kubeconfig "$ADMIN_KUBECONFIG" admin

  cat > "$CONF_DIR/containerd.toml" <<EOF
version = 2
root = "$STATE_DIR/containerd"
state = "$RUN_DIR/containerd"
# Snapshotters this machine cannot use only add noise to the log.
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$CONTAINERD_SOCK"

[plugins."io.containerd.internal.v1.opt"]
  path = "$STATE_DIR/containerd-opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # REQUIRED here: without CAP_SYS_RESOURCE runc cannot give the pause container its
  # oom_score_adj of -998, and every sandbox fails ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  # Keep pod network namespaces under our state dir, so down.sh finds exactly ours.
  netns_mounts_under_state_dir = true
  disable_apparmor = true

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$RUN_DIR/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "$CNI_BIN_DIR"
    conf_dir = "$CONF_DIR/cni"
EOF

  # Bridge cni0 with host-local IPAM; containerd sets up lo itself. hairpinMode lets a
  # pod reach itself through a Service IP.
  cat > "$CONF_DIR/cni/10-raftsman.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "raftsman",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$STATE_DIR/cni/networks"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF

  cat > "$CONF_DIR/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
# The machine has cgroup v1 only; from 1.35 on this defaults to true.
failCgroupV1: false
failSwapOn: false
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $PKI_DIR/ca.crt
authorization:
  mode: Webhook
clusterDomain: $CLUSTER_DOMAIN
clusterDNS: [$DNS_IP]
healthzBindAddress: 127.0.0.1
healthzPort: 10248
podLogsDir: $STATE_DIR/pod-logs
volumePluginDir: $STATE_DIR/kubelet-plugins
serializeImagePulls: false
# Local images cannot be pulled again: never garbage-collect them, and evict only
# when the machine is really out of memory or disk.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
# A container that keeps exiting restarts after at most 2 s rather than the
# default back-off (10 s doubling up to 5 min): the tests kill the operator
# at its failpoints several times in a row, and wait for etcd Pods that
# crash on purpose. Only the wait between restarts changes.
featureGates:
  KubeletCrashLoopBackOffMax: true
crashLoopBackOff:
  maxContainerRestartPeriod: 2s
EOF

  # conntrack settings of 0 leave the host's conntrack sysctls as they are.
  cat > "$CONF_DIR/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: $CONF_DIR/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
clusterCIDR: $CLUSTER_CIDR
bindAddress: 0.0.0.0
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF

  # CoreDNS: no cache and ttl 0, so a recreated pod's new IP is seen at once; an
  # explicit upstream (not 10.96.0.10 itself) and no loop plugin.
  local upstream
  upstream=$(awk '$1 == "nameserver" && $2 != "'"$DNS_IP"'" && $2 !~ /^127\./ && $2 != "::1" {printf " %s", $2}' /etc/resolv.conf)
  cat > "$CONF_DIR/Corefile" <<EOF
.:53 {
    bind $DNS_IP
    errors
    kubernetes $CLUSTER_DOMAIN in-addr.arpa ip6.arpa {
        kubeconfig $CONF_DIR/coredns.kubeconfig
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 0
    }
$([ -n "$upstream" ] && echo "    forward .$upstream")
}
EOF

  cat > "$CONF_DIR/local-path-config.json" <<EOF
{"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["$STATE_DIR/local-path"]}]}
EOF
  cat > "$CONF_DIR/local-path-helper-pod.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: helper-pod
spec:
  priorityClassName: system-node-critical
  tolerations:
  - key: node.kubernetes.io/disk-pressure
    operator: Exists
    effect: NoSchedule
  containers:
  - name: helper-pod
    image: $BUSYBOX_IMAGE
    imagePullPolicy: IfNotPresent
EOF
}

# set_sysctls saves the values it changes (down.sh puts them back) and enables
# forwarding and iptables on bridged traffic, which Service routing between pods needs.
# The kubelet sets a few more (vm.overcommit_memory, kernel.panic...): saved too.
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  net.ipv4.conf.all.route_localnet vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
set_sysctls() {
  local k v
  for k in "${SYSCTLS[@]}"; do
    v=$(sysctl -n "$k" 2>/dev/null) && echo "$k $v"
  done > "$RUN_DIR/sysctl.saved"
  sysctl -q -w net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1 net.bridge.bridge-nf-call-ip6tables=1
}

# --- main --------------------------------------------------------------------------

other_owner_check
if cluster_healthy; then
  # A cluster started before an etcd version was added to versions.sh gets its image now.
  import_missing_base_images || die "loading the base images into containerd failed"
  log "cluster already up; KUBECONFIG=$ADMIN_KUBECONFIG"
  exit 0
fi

install_packages
log "building binaries (cached under _output/bin)"
"$root/hack/cluster/build.sh" all
log "building images"
build_base_images
images=(pause "etcd-v$ETCD_VERSION" "etcd-v$ETCD_OLD_VERSION" "etcd-v$ETCD_NEXT_VERSION" busybox)
# The cluster does not depend on the operator: if its code is missing or does not
# build right now, start without its image; `make images` loads it later.
if build_operator_image; then
  images+=(raftsman)
else
  log "WARNING: no $OPERATOR_IMAGE image this time (make images builds and loads it)"
fi

log "clearing what an earlier run left"
"$root/hack/cluster/down.sh" --quiet

# Keep the previous run's logs for a post-mortem.
if compgen -G "$LOG_DIR/*.log" >/dev/null; then
  rm -rf "$LOG_DIR/previous" && mkdir -p "$LOG_DIR/previous" && mv "$LOG_DIR"/*.log "$LOG_DIR/previous/"
fi
mkdir -p "$PID_DIR" "$LOG_DIR" "$STATE_DIR" "$RUN_DIR"
echo "$root" > "$OWNER_FILE"
t_start=${EPOCHREALTIME/./}

NODE_IP=$(node_ip)
log "node $NODE_NAME at $NODE_IP; writing certificates and configuration"
make_pki
write_configs
set_sysctls
ip addr add "$DNS_IP/32" dev lo

log "starting containerd and etcd"
start containerd containerd --config "$CONF_DIR/containerd.toml" --log-level warn
start etcd "$ETCD_BIN/etcd" --name control-plane --data-dir "$STATE_DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
  --initial-cluster "control-plane=http://127.0.0.1:$ETCD_PEER_PORT" \
  --unsafe-no-fsync --log-level warn
wait_for containerd 30 "the containerd socket" crictl info
# Images load while the control plane starts. No pod runs before up.sh returns, and
# it returns only once they are in.
import_images "${images[@]}" &
import_pid=$!
wait_for etcd 30 "etcd health" "$ETCD_BIN/etcdctl" --endpoints "http://127.0.0.1:$ETCD_CLIENT_PORT" endpoint health

log "starting kube-apiserver"
start kube-apiserver "$KUBE_BIN/kube-apiserver" \
  --etcd-servers "http://127.0.0.1:$ETCD_CLIENT_PORT" \
  --bind-address 0.0.0.0 --secure-port "$APISERVER_PORT" --advertise-address "$NODE_IP" \
  --tls-cert-file "$PKI_DIR/apiserver.crt" --tls-private-key-file "$PKI_DIR/apiserver.key" \
  --client-ca-file "$PKI_DIR/ca.crt" \
  --kubelet-client-certificate "$PKI_DIR/apiserver-kubelet-client.crt" \
  --kubelet-client-key "$PKI_DIR/apiserver-kubelet-client.key" \
  --kubelet-preferred-address-types InternalIP,Hostname \
  --service-account-issuer "https://kubernetes.default.svc.$CLUSTER_DOMAIN" \
  --service-account-key-file "$PKI_DIR/sa.pub" --service-account-signing-key-file "$PKI_DIR/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" \
  --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --requestheader-client-ca-file "$PKI_DIR/ca.crt" --requestheader-allowed-names front-proxy-client \
  --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
  --requestheader-extra-headers-prefix X-Remote-Extra- \
  --proxy-client-cert-file "$PKI_DIR/front-proxy-client.crt" --proxy-client-key-file "$PKI_DIR/front-proxy-client.key" \
  --allow-privileged=true --profiling=false --v=1
wait_for kube-apiserver 60 "kube-apiserver /readyz" kubectl get --raw /readyz

log "applying add-ons (RBAC for DNS and storage, default StorageClass)"
kubectl apply -f "$root/hack/cluster/manifests/addons.yaml" >/dev/null

log "starting controller-manager, scheduler, kubelet, kube-proxy, CoreDNS, local-path-provisioner"
start kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
  --kubeconfig "$CONF_DIR/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$CONF_DIR/controller-manager.kubeconfig" \
  --authorization-kubeconfig "$CONF_DIR/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false \
  --cluster-signing-cert-file "$PKI_DIR/ca.crt" --cluster-signing-key-file "$PKI_DIR/ca.key" \
  --root-ca-file "$PKI_DIR/ca.crt" --service-account-private-key-file "$PKI_DIR/sa.key" \
  --use-service-account-credentials --allocate-node-cidrs --cluster-cidr "$CLUSTER_CIDR" \
  --node-cidr-mask-size 24 --service-cluster-ip-range "$SERVICE_CIDR" --v=1
start kube-scheduler "$KUBE_BIN/kube-scheduler" \
  --kubeconfig "$CONF_DIR/scheduler.kubeconfig" \
  --authentication-kubeconfig "$CONF_DIR/scheduler.kubeconfig" \
  --authorization-kubeconfig "$CONF_DIR/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --v=1
start kubelet "$KUBE_BIN/kubelet" --config "$CONF_DIR/kubelet.yaml" \
  --kubeconfig "$CONF_DIR/kubelet.kubeconfig" --root-dir "$STATE_DIR/kubelet" \
  --cert-dir "$STATE_DIR/kubelet/pki" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v=1
start kube-proxy "$KUBE_BIN/kube-proxy" --config "$CONF_DIR/kube-proxy.yaml" --v=1
start coredns "$BIN_DIR/coredns-$COREDNS_VERSION/coredns" -conf "$CONF_DIR/Corefile"
start local-path-provisioner "$BIN_DIR/local-path-provisioner-$LOCAL_PATH_VERSION/local-path-provisioner" \
  --debug start --kubeconfig "$CONF_DIR/local-path-provisioner.kubeconfig" \
  --config "$CONF_DIR/local-path-config.json" --helper-pod-file "$CONF_DIR/local-path-helper-pod.yaml" \
  --namespace local-path-storage --service-account-name local-path-provisioner-service-account \
  --provisioner-name rancher.io/local-path

dns_ok() { "$BUSYBOX" nslookup "kubernetes.default.svc.$CLUSTER_DOMAIN" "$DNS_IP" 2>/dev/null | grep -Eq "^Address:[[:space:]]+$API_SERVICE_IP\$"; }
sa_ok() { kubectl -n default get serviceaccount default; }
sc_ok() { kubectl get storageclass local-path -o 'jsonpath={.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}' | grep -qx true; }

wait_for kubelet 60 "node $NODE_NAME Ready" node_ready
t_ready=${EPOCHREALTIME/./}
log "node Ready"
wait_for kube-controller-manager 60 "the default ServiceAccount" sa_ok
log "default ServiceAccount present"
wait_for coredns 30 "DNS answers on $DNS_IP" dns_ok
log "DNS answers"
wait_for "" 10 "the default StorageClass" sc_ok
wait $import_pid || die "loading images into containerd failed"
log "images loaded"
for c in "${COMPONENTS[@]}"; do
  running "$c" || fail_with_log "$c" "$c is not running"
done
t_end=${EPOCHREALTIME/./}
log "cluster up: node Ready $(( (t_ready - t_start) / 1000 ))ms and usable $(( (t_end - t_start) / 1000 ))ms after the cleanup"
log "KUBECONFIG=$ADMIN_KUBECONFIG"
