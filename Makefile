# Raftsman. `make demo` runs the operator on the local cluster; `make test` runs every test.
SHELL := /usr/bin/env bash
export GOTOOLCHAIN := local

BIN := $(CURDIR)/bin
CONTROLLER_GEN_VERSION := v0.23.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
IMG ?= raftsman:dev

-include hack/cluster/cluster.mk
KUBE_VERSION := $(shell bash -c 'source hack/cluster/versions.sh; echo $$KUBE_VERSION')
KUBECTL := $(CURDIR)/_output/bin/kubernetes-$(KUBE_VERSION)/kubectl
# helm, for the chart's tests and releases (make helm); defined here, before the rules that need it.
HELM_VERSION := $(shell bash -c 'source hack/cluster/versions.sh; echo $$HELM_VERSION')
HELM := $(CURDIR)/_output/bin/helm-$(HELM_VERSION)/helm
# The etcd after ETCD_VERSION, for upgrade tests (3.5 -> 3.6 -> 3.7): exported, so the
# tests read it with os.Getenv("ETCD_NEXT_VERSION"); its image is on the local cluster.
export ETCD_NEXT_VERSION := $(shell bash -c 'source hack/cluster/versions.sh; echo $$ETCD_NEXT_VERSION')
export ETCD_OLD_VERSION := $(shell bash -c 'source hack/cluster/versions.sh; echo $$ETCD_OLD_VERSION')

.PHONY: robustness s3-server all build generate manifests dist docs verify-generated unit envtest e2e test demo bench fmt vet rules bench-scale

all: build

$(CONTROLLER_GEN):
	mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

generate: $(CONTROLLER_GEN) ## deepcopy functions
	$(CONTROLLER_GEN) object paths=./api/...

manifests: $(CONTROLLER_GEN) ## CRDs, RBAC and the Grafana dashboards' ConfigMaps
	$(CONTROLLER_GEN) crd rbac:roleName=raftsman-manager paths=./api/... paths=./controllers/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	bash hack/grafana/configmaps.sh

$(KUBECTL):
	bash hack/cluster/build.sh kubernetes

dist: manifests $(KUBECTL) ## one file per install: every namespace (install.yaml), some namespaces (install-namespaced.yaml)
	mkdir -p dist
	$(KUBECTL) kustomize config/default > dist/install.yaml
	$(KUBECTL) kustomize config/namespaced > dist/install-namespaced.yaml
	go run ./hack/chartgen -kubectl $(KUBECTL) -default dist/install.yaml -namespaced dist/install-namespaced.yaml -out charts/raftsman

docs: ## docs/api.md, the API reference, from the Go types and comments of api/v1alpha1
	go run ./hack/apidocs -dir api/v1alpha1 -out docs/api.md -kinds EtcdCluster,EtcdBackup,EtcdMember,EtcdUser

verify-generated: generate manifests dist docs ## fails when generated files (both installs in dist/, the chart, docs/api.md) are not committed, or a relative link in a Markdown file is broken
	@if [ -n "$$(git status --porcelain -- api config dist charts docs/api.md)" ]; then \
		git status --short -- api config dist charts docs/api.md; git diff -- api config dist charts docs/api.md | head -40; \
		echo "generated files differ: run 'make generate manifests dist docs' and commit"; exit 1; fi
	go run ./hack/mdlinks

build: plugin
	CGO_ENABLED=0 go build -o _output/bin/raftsman ./cmd/raftsman

# The plugin's version (kubectl raftsman version): VERSION for a release, else git describe.
PLUGIN_VERSION ?= $(or $(VERSION),$(shell git describe --tags --always --dirty 2>/dev/null))

.PHONY: plugin
plugin: ## the kubectl plugin and kubectl's completion script for it: with _output/bin on PATH, kubectl raftsman status <cluster>
	CGO_ENABLED=0 go build -ldflags "-X github.com/raftsman/raftsman/internal/plugin.version=$(PLUGIN_VERSION)" \
		-o _output/bin/kubectl-raftsman ./cmd/kubectl-raftsman
	_output/bin/kubectl-raftsman completion kubectl > _output/bin/kubectl_complete-raftsman
	chmod +x _output/bin/kubectl_complete-raftsman

fmt:
	gofmt -l -w $$(git ls-files '*.go')

vet:
	go vet ./...
	go vet -tags e2e ./test/...

unit: ## unit tests: no cluster, no API server (envtest suites skip themselves)
	go test -count=1 ./...

envtest: envtest-assets ## controller and validation suites against a real kube-apiserver
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go test -count=1 -run TestEnv ./api/... ./controllers/...

s3-server: ## build the S3 server (versitygw) the backup tests store snapshots in; cached under _output
	bash hack/s3/versitygw.sh build >/dev/null

e2e: cluster-up images cert-manager-up dist s3-server $(HELM) ## end-to-end tests on the local cluster
	KUBECONFIG=$(KUBECONFIG_LOCAL) go test -count=1 -tags e2e -timeout 50m -parallel $(E2E_PARALLEL) -v ./test/e2e/...

rules: ## the PrometheusRule and the Grafana dashboards' queries checked with Prometheus's own parser and query engine (a module of its own)
	cd test/rules && go test -count=1 ./...

.PHONY: grafana-metrics
grafana-metrics: ## config/grafana/metrics.txt, the metrics the dashboards may name: a real etcd's scrape and the operator's registry
	bash hack/cluster/build.sh etcd
	go run ./hack/grafana/metrics -out config/grafana/metrics.txt \
		-etcd _output/bin/etcd-v$$(bash -c 'source hack/cluster/versions.sh; echo $$ETCD_VERSION')/etcd

E2E_PARALLEL ?= 4
test: ## everything: generated files, vet, rules, release, unit and envtest, e2e (E2E_PARALLEL at once); prints each phase's time
	E2E_PARALLEL=$(E2E_PARALLEL) bash hack/test.sh

demo: cluster-up images dist ## local cluster, operator, a 3-member cluster Available
	bash hack/demo.sh

# The operator's real etcd client against an etcd simulator (a process of its
# own, a TLS listener per member on loopback); the last measurement splits the
# shards over -replicas processes (4). BENCH_SCALE_FLAGS='-etcd=fake' for the
# in-memory fake etcd, '-clusters 100 -hung 20 -idle 2m -idle-after 0' for a
# quick run, '-clusters 10000 -hung 500' for a fleet of 10,000 (about an hour
# and 16 GiB of memory on 2 CPUs). Each process raises its open-file limit to
# what the fleet needs; where the hard limit cannot be raised (no
# CAP_SYS_RESOURCE), the simulator is spread over as many processes as it asks.
BENCH_SCALE_FLAGS ?=
bench-scale: envtest-assets ## 1000 clusters in envtest, 200 of them hung while others scale, the real etcd client against an etcd simulator, the shards over 4 replicas; writes its section of bench/RESULTS.md
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) go run ./test/benchscale -out bench/RESULTS.md $(BENCH_SCALE_FLAGS)

ROUNDS ?= 4
robustness: cluster-up images cert-manager-up dist s3-server ## ROUNDS rounds of every robustness scenario with random fault timing; writes bench/ROBUSTNESS.md
	RAFTSMAN_ROBUSTNESS_ROUNDS=$(ROUNDS) RAFTSMAN_ROBUSTNESS_REPORT=$(CURDIR)/bench/ROBUSTNESS.md KUBECONFIG=$(KUBECONFIG_LOCAL) \
		go test -count=1 -tags e2e -timeout 150m -v -run '^TestRobustness' ./test/e2e/...

bench: cluster-up images dist
	KUBECONFIG=$(KUBECONFIG_LOCAL) go run ./test/bench -out bench/RESULTS.md

# --- Helm chart and releases -------------------------------------------------
# charts/raftsman is generated by `make dist` (hack/chartgen); test/chart checks it
# against dist/ and config/ (part of `go test ./...`, skipped without helm).
# Where `make release` names the operator's image; nothing is pushed.
IMAGE_REPO ?= ghcr.io/raftsman/raftsman
RELEASE_DIR ?= $(CURDIR)/_output/release/$(VERSION)

.PHONY: helm chart-test release release-test

$(HELM):
	bash hack/cluster/build.sh helm

helm: $(HELM) ## build helm into _output/bin/helm-<version>/ (once)

chart-test: $(HELM) $(KUBECTL) ## helm lint, and the chart rendered against dist/ and config/
	go test -count=1 ./hack/chartgen/ ./test/chart/

release: $(KUBECTL) $(HELM) ## VERSION=vX.Y.Z [IMAGE_REPO=...]: image as an OCI archive, installs and chart pinned to its digest, in _output/release/VERSION/; pushes nothing
	@[ -n "$(VERSION)" ] || { echo "usage: make release VERSION=vX.Y.Z [IMAGE_REPO=$(IMAGE_REPO)]" >&2; exit 1; }
	KUBECTL=$(KUBECTL) HELM=$(HELM) IMAGE_REPO=$(IMAGE_REPO) RELEASE_DIR=$(RELEASE_DIR) bash hack/release.sh $(VERSION)

release-test: $(KUBECTL) $(HELM) ## make release VERSION=v0.0.0-test twice (another IMAGE_REPO): same digest, named by its installs and chart
	HELM=$(HELM) go test -count=1 -tags release -timeout 15m -v ./test/release/
