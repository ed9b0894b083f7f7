# Local single-node Kubernetes cluster built from source. Included by the root Makefile.
#
#   make cluster-up       start it (idempotent; seconds when already up), as root
#   make cluster-down     stop it and remove its state; keeps the build caches
#   make images           rebuild ./cmd/raftsman, its image raftsman:dev, and load it into
#                         the running cluster (fails if either is missing; cluster-up
#                         itself only warns and starts without the operator image)
#   make cluster-build    build (or reuse) the cluster's binaries only
#   make envtest-assets   kube-apiserver, etcd and kubectl for envtest
#   make cert-manager-up  cert-manager's CRDs and controller on the running cluster (builds
#                         it first; idempotent); make cert-manager-down stops the controller
#
# Use the cluster with KUBECONFIG=$(KUBECONFIG_LOCAL); tests of controllers against a
# bare apiserver use KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS).

CLUSTER_SCRIPTS := $(CURDIR)/hack/cluster
KUBECONFIG_LOCAL := $(CURDIR)/_output/cluster/kubeconfig
ENVTEST_ASSETS := $(CURDIR)/_output/envtest

.PHONY: cluster-up cluster-down images cluster-build envtest-assets cert-manager-build cert-manager-up cert-manager-down

cluster-up:
	bash $(CLUSTER_SCRIPTS)/up.sh

cluster-down:
	bash $(CLUSTER_SCRIPTS)/down.sh

images:
	bash $(CLUSTER_SCRIPTS)/images.sh

cluster-build:
	bash $(CLUSTER_SCRIPTS)/build.sh all

# envtest looks for kube-apiserver, etcd and kubectl in KUBEBUILDER_ASSETS.
envtest-assets:
	bash $(CLUSTER_SCRIPTS)/envtest-assets.sh $(ENVTEST_ASSETS)

cert-manager-build:
	bash $(CLUSTER_SCRIPTS)/build.sh cert-manager

cert-manager-up: cert-manager-build
	bash $(CLUSTER_SCRIPTS)/cert-manager.sh up

cert-manager-down:
	bash $(CLUSTER_SCRIPTS)/cert-manager.sh down
