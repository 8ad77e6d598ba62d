# Steward's build. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION ?= v2.15.0
HELM_VERSION ?= v3.22.0
CONTROLLER_GEN ?= $(LOCALBIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT ?= $(LOCALBIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
HELM ?= $(LOCALBIN)/helm-$(HELM_VERSION)
# promtool checks and unit-tests the chart's alert rules (test/monitoring).
PROMETHEUS_VERSION ?= v0.316.0
PROMTOOL ?= $(LOCALBIN)/promtool-$(PROMETHEUS_VERSION)
# kube-score grades the chart's manifests (test/e2e TestHelmChartKubeScore).
KUBE_SCORE_VERSION ?= v1.20.0
KUBE_SCORE ?= $(LOCALBIN)/kube-score-$(KUBE_SCORE_VERSION)
CHART ?= charts/steward
# The control-plane binaries: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl and kwok (see hack/kube-bins.sh).
KUBE_BINS = $(shell hack/kube-bins.sh)
KUBECTL ?= kubectl
# The flags of every build of the steward binary: static (CGO_ENABLED=0),
# stripped and without local paths, as the Dockerfile builds it.
STEWARD_BUILD_FLAGS = -trimpath -ldflags="-s -w"
# VERSION tags the operator's image: the Helm chart's appVersion.
VERSION ?= $(shell sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$$/\1/p' $(CHART)/Chart.yaml)
IMG ?= ghcr.io/steward-dev/steward:$(VERSION)
IMAGES_DIR ?= $(LOCALBIN)/images
# The real-node suite, the longest package, took 54 min on a loaded
# machine: its limit leaves room for the load, not for a hang.
GO_TEST_FLAGS ?= -timeout 80m
# How long each fuzz test runs: FUZZTIME in make fuzz, FUZZTIME_TEST in make test.
FUZZTIME ?= 5m
FUZZTIME_TEST ?= 5s

.PHONY: all
all: build

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and the webhook configuration from the code's markers, for kustomize and the Helm chart.
	$(CONTROLLER_GEN) rbac:roleName=steward-manager crd webhook paths=./... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	rm -f $(CHART)/crds/*.yaml && cp config/crd/bases/*.yaml $(CHART)/crds/
	hack/rbac-rules.sh $(CHART)/files

.PHONY: argocd-snippet
argocd-snippet: ## Write config/argocd/argocd-cm-health.yaml from the chart's Argo CD health script.
	hack/argocd-snippet.sh

.PHONY: monitoring
monitoring: $(HELM) ## Write config/prometheus and config/grafana from the Helm chart's ServiceMonitor, PrometheusRule and dashboard.
	HELM=$(HELM) hack/monitoring.sh

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -s -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: lint
lint: lint-go lint-chart ## Run golangci-lint and helm lint.

.PHONY: lint-go
lint-go: $(GOLANGCI_LINT) ## Run golangci-lint (LINT_TIMEOUT overrides the configured 10m).
	$(GOLANGCI_LINT) run $(if $(LINT_TIMEOUT),--timeout $(LINT_TIMEOUT)) ./...

.PHONY: lint-chart
lint-chart: $(HELM) ## Run helm lint on the chart.
	$(HELM) lint --strict $(CHART)

.PHONY: verify
verify: generate manifests argocd-snippet monitoring ## Fail when generated files or formatting are out of date.
	@test -z "$$(gofmt -s -l $$(git ls-files '*.go'))" || { gofmt -s -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	@git diff --exit-code -- api config $(CHART) || { echo "generated files are out of date: run make generate manifests"; exit 1; }
	@test -z "$$(git status --porcelain -- api config $(CHART))" || { git status --porcelain -- api config $(CHART); echo "untracked generated files"; exit 1; }

.PHONY: test
# test builds the operator first: the end-to-end tests and the benchmark
# build it again, and find it in the build cache instead of compiling it
# while other packages' tests run.
test: kube-bins $(HELM) $(PROMTOOL) $(KUBE_SCORE) azurite build real-node ## Run all tests: unit, envtest, end to end on local clusters with fake and, as root, real nodes.
	KUBEBUILDER_ASSETS=$(KUBE_BINS) HELM=$(HELM) PROMTOOL=$(PROMTOOL) KUBE_SCORE=$(KUBE_SCORE) GO_TEST_FLAGS="$(GO_TEST_FLAGS)" FUZZTIME=$(FUZZTIME_TEST) hack/test.sh

.PHONY: test-servers
test-servers: ## Install PostgreSQL, MariaDB, Redis and memcached from Debian's packages for the tests (needs root or sudo).
	hack/test-servers.sh

.PHONY: azurite
azurite: ## Install Azurite, the Azure Storage emulator of the backup store tests, into bin/azurite (needs npm).
	hack/azurite.sh >/dev/null

.PHONY: fuzz
fuzz: ## Run every fuzz test for FUZZTIME each (not part of make test).
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: bench
bench: kube-bins build ## Run the scale benchmark on a local cluster (not part of make test).
	KUBEBUILDER_ASSETS=$(KUBE_BINS) go run ./test/bench $(BENCH_ARGS)

.PHONY: bench-failover
bench-failover: kube-bins build real-node ## As root: measure the write gaps of failovers and switchovers on real nodes, PostgreSQL and MariaDB (about 18 min; not part of make test).
	STEWARD_REQUIRE_REAL_NODE=1 STEWARD_FAILOVER_ROUNDS=5 STEWARD_FAILOVER_REPORT=$(LOCALBIN)/failover KUBEBUILDER_ASSETS=$(KUBE_BINS) \
		go test ./test/e2e/realnode -run '^Test(Postgres|MariaDB)Failover$$' -count=1 -timeout 60m
	@for f in $(LOCALBIN)/failover/failover-*.txt; do echo "== $$f"; cat "$$f"; done

##@ Running

.PHONY: build
build: plugin ## Build the steward binary (static and stripped, as in the image) and the kubectl plugin.
	CGO_ENABLED=0 go build $(STEWARD_BUILD_FLAGS) -o $(LOCALBIN)/steward ./cmd/steward

.PHONY: plugin
plugin: ## Build the kubectl plugin bin/kubectl-steward (with bin on PATH: kubectl steward).
	CGO_ENABLED=0 go build $(STEWARD_BUILD_FLAGS) -o $(LOCALBIN)/kubectl-steward ./cmd/kubectl-steward

.PHONY: run
run: ## Run the operator against the current kubeconfig.
	go run ./cmd/steward --leader-elect=false

.PHONY: install
install: ## Install the CRDs into the current kubeconfig's cluster.
	$(KUBECTL) apply --server-side -k config/crd

.PHONY: uninstall
uninstall: ## Remove the CRDs (and with them every Steward object) from the cluster.
	$(KUBECTL) delete --ignore-not-found -k config/crd

.PHONY: demo
demo: kube-bins build $(HELM) node-packages ## Start a local cluster (real nodes where the machine allows), run Steward, apply the samples, wait, show the data plane, stop.
	KUBEBUILDER_ASSETS=$(KUBE_BINS) HELM=$(HELM) go run ./hack/demo $(DEMO_ARGS)

.PHONY: dev
dev: kube-bins build $(HELM) node-packages ## Like demo, but keep the cluster and operator running until Ctrl-C.
	KUBEBUILDER_ASSETS=$(KUBE_BINS) HELM=$(HELM) go run ./hack/demo --keep $(DEMO_ARGS)

.PHONY: real-node
real-node: ## As root with apt: install what real nodes run on and build the images they run; elsewhere nothing (tests on real nodes then skip).
	@if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then \
		hack/node-packages.sh && $(MAKE) --no-print-directory images; \
	else echo "real-node: not root with apt: tests on real nodes will skip (STEWARD_REQUIRE_REAL_NODE=1 makes them fail)"; fi

.PHONY: node-packages
node-packages: ## As root: install containerd, runc, the CNI plugins, iptables and conntrack from Debian's packages for real nodes (elsewhere: nothing).
	@if [ "$$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then hack/node-packages.sh || echo "node-packages: not installed; the local cluster will use fake nodes"; fi

##@ Images

.PHONY: image
image: build ## Build the operator's image without Docker: bin/images/steward.tar, named IMG (ghcr.io/steward-dev/steward:<chart appVersion>).
	go run ./hack/images -o $(IMAGES_DIR) -steward-binary $(LOCALBIN)/steward -steward-image $(IMG) steward

.PHONY: images
images: build ## Build the engines' images from Debian's packages, the pause image and the operator's, without Docker, into bin/images.
	go run ./hack/images -o $(IMAGES_DIR) -steward-binary $(LOCALBIN)/steward -steward-image $(IMG)

.PHONY: docker-build
docker-build: ## Build the operator's image with Docker, tagged IMG.
	docker build -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push IMG with Docker.
	docker push $(IMG)

.PHONY: kind-load
kind-load: image ## Load bin/images/steward.tar into the kind cluster.
	kind load image-archive $(IMAGES_DIR)/steward.tar

##@ Tools

.PHONY: kube-bins
kube-bins: ## Find or build the control-plane binaries (cached in bin/k8s).
	@hack/kube-bins.sh >/dev/null

$(CONTROLLER_GEN):
	GOBIN=$(LOCALBIN)/.tmp go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(LOCALBIN)/.tmp/controller-gen $@

$(HELM):
	GOBIN=$(LOCALBIN)/.tmp go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(LOCALBIN)/.tmp/helm $@

# Without the service discovery plugins, which promtool's rule checks and
# tests do not use: a third of the build.
$(PROMTOOL):
	GOBIN=$(LOCALBIN)/.tmp go install -tags remove_all_sd github.com/prometheus/prometheus/cmd/promtool@$(PROMETHEUS_VERSION)
	mv $(LOCALBIN)/.tmp/promtool $@

$(KUBE_SCORE):
	GOBIN=$(LOCALBIN)/.tmp go install github.com/zegl/kube-score/cmd/kube-score@$(KUBE_SCORE_VERSION)
	mv $(LOCALBIN)/.tmp/kube-score $@

$(GOLANGCI_LINT):
	GOBIN=$(LOCALBIN)/.tmp go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(LOCALBIN)/.tmp/golangci-lint $@
