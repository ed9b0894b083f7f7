#!/usr/bin/env bash
# cert-manager on the local cluster (make cert-manager-up / make cert-manager-down):
# its CRDs, namespace cert-manager, and its controller as a host process beside the
# cluster's own (PID file pids/cert-manager.pid, log logs/cert-manager.log), with the
# admin kubeconfig. No webhook (the CRDs' schemas validate on their own) and no
# cainjector. The controller is built by `build.sh cert-manager`.
#
#   cert-manager.sh up     apply the CRDs, create the namespace, start the controller and
#                          wait until a self-signed Certificate gets its Secret (in a
#                          scratch namespace, deleted afterwards). Idempotent: seconds
#                          when the controller already runs and answers /livez.
#   cert-manager.sh down   stop the controller. CRDs, namespace and resources stay; the
#                          next `up` carries on with them. down.sh stops it too.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
require_root

CM_DIR=$BIN_DIR/cert-manager-$CERT_MANAGER_VERSION
CM_BIN=$CM_DIR/cert-manager-controller
CM_NAMESPACE=cert-manager
# Loopback only: /metrics and /livez (upstream's ports).
CM_METRICS=127.0.0.1:9402
CM_HEALTHZ=127.0.0.1:9403

# (busybox wget's own -T timeout segfaults in the static build.)
livez() { timeout 5 "$BUSYBOX" wget -q -O /dev/null "http://$CM_HEALTHZ/livez"; }

# apply_crds applies the CRDs server-side (the Issuer CRDs are too large for the
# annotation of a client-side apply) and waits until they are served.
apply_crds() {
  kubectl apply --server-side --force-conflicts -f "$CM_DIR/crds" >/dev/null
  local f names=()
  for f in "$CM_DIR"/crds/*.yaml; do
    f=${f##*/}
    f=${f%.yaml}
    names+=("crd/${f#*_}.${f%%_*}")
  done
  kubectl wait --for condition=Established --timeout 30s "${names[@]}" >/dev/null
}

# smoke_test: a self-signed Issuer and a Certificate in a scratch namespace; done when
# the Certificate's Secret appears.
smoke_test() {
  local ns=cert-manager-check-$$
  scratch_ns=$ns
  kubectl create namespace "$ns" >/dev/null
  kubectl -n "$ns" apply -f - >/dev/null <<EOF
apiVersion: cert-manager.io/v1
kind: Issuer
metadata:
  name: selfsigned
spec:
  selfSigned: {}
---
apiVersion: cert-manager.io/v1
kind: Certificate
metadata:
  name: check
spec:
  secretName: check-tls
  commonName: check.$ns.svc
  dnsNames: [check.$ns.svc]
  issuerRef:
    name: selfsigned
    kind: Issuer
EOF
  secret_ok() { [ -n "$(kubectl -n "$ns" get secret check-tls -o 'jsonpath={.data.tls\.crt}' 2>/dev/null)" ]; }
  wait_for cert-manager 60 "a self-signed Certificate's Secret" secret_ok
  kubectl delete namespace "$ns" --wait=false >/dev/null
  scratch_ns=
}

up() {
  [ -x "$CM_BIN" ] || die "no $CM_BIN; run: make cert-manager-up (or build.sh cert-manager)"
  [ -f "$ADMIN_KUBECONFIG" ] && kubectl get --raw /readyz >/dev/null 2>&1 \
    || die "the local cluster is not up (make cluster-up)"
  apply_crds
  kubectl get namespace "$CM_NAMESPACE" >/dev/null 2>&1 || kubectl create namespace "$CM_NAMESPACE" >/dev/null
  if running cert-manager && livez; then
    log "cert-manager $CERT_MANAGER_VERSION already up"
    return 0
  fi
  stop cert-manager  # one that runs but does not answer
  local t0=${EPOCHREALTIME/./}
  log "starting cert-manager $CERT_MANAGER_VERSION controller"
  start cert-manager "$CM_BIN" --kubeconfig "$ADMIN_KUBECONFIG" \
    --cluster-resource-namespace "$CM_NAMESPACE" \
    --leader-elect --leader-election-namespace "$CM_NAMESPACE" \
    --metrics-listen-address "$CM_METRICS" --healthz-listen-address "$CM_HEALTHZ" --v 2
  wait_for cert-manager 30 "cert-manager /livez" livez
  scratch_ns=
  trap '[ -z "$scratch_ns" ] || kubectl delete namespace "$scratch_ns" --wait=false >/dev/null 2>&1 || true' EXIT
  smoke_test
  log "cert-manager up: a Certificate issued $(( (${EPOCHREALTIME/./} - t0) / 1000 ))ms after the start"
}

down() {
  if running cert-manager; then
    stop cert-manager
    log "cert-manager stopped"
  else
    rm -f "$PID_DIR/cert-manager.pid"
    log "cert-manager was not running"
  fi
}

case ${1:-} in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
