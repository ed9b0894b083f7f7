#!/usr/bin/env bash
# make demo: installs the operator on the local cluster with dist/install.yaml,
# creates the sample 3-member etcd cluster and waits until it is Available.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/hack/cluster/versions.sh"
export KUBECONFIG=${KUBECONFIG:-$root/_output/cluster/kubeconfig}
kubectl() { "$root/_output/bin/kubernetes-$KUBE_VERSION/kubectl" "$@"; }

start=$(date +%s.%N)
kubectl apply --server-side --force-conflicts -f "$root/dist/install.yaml"
# The image tag stays raftsman:dev; restart so the operator runs the image just built.
kubectl -n raftsman-system rollout restart deployment/raftsman
kubectl -n raftsman-system rollout status deployment/raftsman --timeout=180s

applied=$(date +%s.%N)
kubectl apply -f "$root/config/samples/etcdcluster.yaml"
kubectl wait etcdcluster/sample --for=condition=Available --timeout=300s
done_at=$(date +%s.%N)
awk -v s="$start" -v a="$applied" -v d="$done_at" \
  'BEGIN { printf "sample cluster Available %.1fs after kubectl apply (operator install %.1fs)\n", d - a, a - s }'
kubectl get etcd,etcdmember -o wide
# TLS is on by default: the members' peer and client URLs are https, with
# certificates from the cluster's own CA (names in status.tls).
kubectl wait etcdcluster/sample --for=condition=TLSReady --timeout=60s
kubectl get etcdmember -l etcd.raftsman.io/cluster=sample \
  -o custom-columns=MEMBER:.metadata.name,PEER:.spec.peerURL,CLIENT:.spec.clientURL,SECRETS:.spec.tls
echo "client certificate for etcdctl: Secret $(kubectl get etcd sample -o jsonpath='{.status.tls.clientSecretName}') (tls.crt, tls.key, ca.crt)"
