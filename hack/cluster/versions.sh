# Versions of every component of the local cluster. Sourced by the other scripts.
# Built binaries are cached under _output/bin/<component>-<version>/ and never rebuilt.
KUBE_VERSION=${KUBE_VERSION:-v1.34.2}
# The default etcd version of the operator, and an older and a newer minor release for
# upgrade tests (ETCD_OLD_VERSION -> ETCD_VERSION -> ETCD_NEXT_VERSION).
ETCD_VERSION=${ETCD_VERSION:-3.6.16}
ETCD_OLD_VERSION=${ETCD_OLD_VERSION:-3.5.35}
ETCD_NEXT_VERSION=${ETCD_NEXT_VERSION:-3.7.3}
COREDNS_VERSION=${COREDNS_VERSION:-v1.12.4}
LOCAL_PATH_VERSION=${LOCAL_PATH_VERSION:-v0.0.30}
CRICTL_VERSION=${CRICTL_VERSION:-v1.34.0}
# cert-manager's controller and CRDs, run beside the cluster by cert-manager.sh.
CERT_MANAGER_VERSION=${CERT_MANAGER_VERSION:-v1.21.2}
# helm, for the chart's lint, render and e2e tests (charts/raftsman); not part of the cluster.
HELM_VERSION=${HELM_VERSION:-v3.22.0}
PAUSE_IMAGE=registry.k8s.io/pause:3.10
BUSYBOX_IMAGE=docker.io/library/busybox:local
ETCD_REPOSITORY=quay.io/coreos/etcd
# The operator's own image, built from ./cmd/raftsman by images.sh.
OPERATOR_IMAGE=${OPERATOR_IMAGE:-raftsman:dev}
# The operator with failpoints compiled in, for the robustness tests only.
FAILPOINTS_IMAGE=raftsman:failpoints
