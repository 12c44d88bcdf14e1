# mpiguard — admission policies and runtime templates for MPI TrainJobs.
# Everything the tests need is built from the Go module proxy, but for MPICH's
# Hydra, sshd and Open MPI, installed from Debian's packages: `make test` on a
# fresh clone is enough. `make help` lists the targets.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

GO            ?= go
BIN           ?= bin
# The image docker-build tags and deploy installs. No mpiguard image is
# published, so there is no default: the targets that need it refuse to run
# without it (require_img), as an image no registry has would leave the
# fail-closed webhooks refusing every TrainJob create.
IMG           ?=
CACHE         ?= $(or $(MPIGUARD_CACHE),$(HOME)/.cache/mpiguard)
export MPIGUARD_CACHE := $(CACHE)
# The real control plane for integration tests (built from source, cached by version).
KUBE_VERSION  ?= v1.36.2
ETCD_VERSION  ?= v3.6.16
export KUBE_VERSION ETCD_VERSION
CONTROLPLANE   = $(CACHE)/controlplane/k8s-$(KUBE_VERSION)-etcd-$(ETCD_VERSION)
# Kueue for the kueue suite: the version go.mod pins (its API types), built
# from the module proxy into $(CACHE)/kueue-<version> (test/kueue/build.sh).
KUEUE_VERSION ?= $(shell $(GO) list -m -f '{{.Version}}' sigs.k8s.io/kueue)
export KUEUE_VERSION
# KWOK plays the kubelet of the fake GPU nodes where `make run`'s jobs (and
# the suites' that ask for running pods) run: its controller built from the
# Go module proxy into $(CACHE)/kwok-<version>, with its stages
# (test/kwok/build.sh).
KWOK_VERSION  ?= v0.8.0
export KWOK_VERSION
# Integration suites run one after another: each starts its own apiserver, and
# the machine has 2 cores.
TEST_TIMEOUT  ?= 40m

CONTROLLER_GEN = $(GO) tool controller-gen
# mpiguard's own packages: third_party/ is another module (a go.mod replace)
# whose packages controller-gen must not load.
GEN_PATHS = ./api/...;./cmd/...;./internal/...;./networkpolicies/...;./runtimes/...;./webhooks/...
# The Volcano API module (go.mod) whose Queue and PodGroup CRDs the envtest suites install.
VOLCANO_APIS = volcano.sh/apis
# Its CRDs are copied into config/crd/openreports by `make manifests`.
OPENREPORTS_MODULE = github.com/openreports/reports-api
KUSTOMIZE      = $(GO) tool kustomize
# mpiguard's Helm chart: config/default as a chart (config/helm/chart_test.go).
HELM_CHART     = config/helm/mpiguard
GOLANGCI_LINT  = $(GO) tool -modfile=test/tools/lint.mod golangci-lint
OPA            = $(GO) tool opa
# The engine's policy sandbox (internal/engine/capabilities.go) for the opa CLI;
# regenerate: go test ./internal/engine -run TestCapabilitiesFile -update
OPA_CAPABILITIES = test/tools/opa-capabilities.json

UNIT_PKGS        = $$($(GO) list ./... | grep -v -e /test/integration -e /test/load)
INTEGRATION_PKGS = ./test/integration/...

# promtool for the alert rules' unit tests (config/prometheus/rules_test.go,
# which pins the same version): Prometheus' module (v3.x is tagged v0.3xx.y),
# built without service discovery plugins into the cache, once per version.
PROMTOOL_VERSION ?= v0.316.0
PROMTOOL          = $(CACHE)/promtool-$(PROMTOOL_VERSION)/promtool

# gator, Gatekeeper's offline tester, for make bench-peers: built from the Go
# module proxy into $(CACHE)/gator-<version> (test/gator/build.sh).
GATOR_VERSION ?= v3.23.1
export GATOR_VERSION

# Fuzz targets (package:FuzzName), run one after another: go test -fuzz takes
# one target per run, and the machine has 2 cores. docs/reliability.md says
# what each checks and records the runs.
FUZZTIME         ?= 60s
# Each input that finds new coverage is minimized for at most this long; at
# go's default (60s) a 60-second run of the slower targets spent nearly all of
# it minimizing instead of fuzzing.
FUZZMINIMIZETIME ?= 1s
FUZZ_TARGETS = \
  internal/render:FuzzRender \
  internal/render:FuzzRenderKnobs \
  internal/engine:FuzzDecide \
  internal/engine:FuzzDecideRandomRequest \
  internal/engine:FuzzObjectCounts \
  internal/engine:FuzzParseParameters \
  runtimes/constraints:FuzzParseConstraints \
  internal/check:FuzzReadDocuments \
  internal/check:FuzzCheck \
  internal/reservations/store:FuzzReadReservation

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
	  /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } \
	  /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: fmt
fmt: ## gofmt the Go code and opa fmt the Rego policies.
	gofmt -w $$(git ls-files '*.go')
	@rego=$$(git ls-files 'policies/*.rego'); if [ -n "$$rego" ]; then $(OPA) fmt --v1-compatible -w $$rego; fi

.PHONY: vet
vet: ## go vet.
	$(GO) vet ./...

.PHONY: lint
lint: ## golangci-lint, gofmt check and Rego strict check.
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GOLANGCI_LINT) run ./...
	@if [ -n "$$(git ls-files 'policies/*.rego')" ]; then $(OPA) check --strict --v1-compatible --ignore '*.yaml' --capabilities $(OPA_CAPABILITIES) policies; fi

.PHONY: manifests
manifests: ## Generate CRDs, RBAC and webhook configurations from kubebuilder markers.
	$(CONTROLLER_GEN) rbac:roleName=manager crd webhook paths="$(GEN_PATHS)" \
	  output:crd:artifacts:config=config/crd/bases \
	  output:rbac:artifacts:config=config/rbac \
	  output:webhook:artifacts:config=config/webhook
	@# The openreports.io Report CRDs audit writes, from the pinned module (never edited by hand).
	@dir=$$($(GO) list -m -f '{{.Dir}}' $(OPENREPORTS_MODULE)) && mkdir -p config/crd/openreports && \
	  for f in openreports.io_reports.yaml openreports.io_clusterreports.yaml; do install -m 0644 "$$dir/config/crd/$$f" config/crd/openreports/; done
	@# Volcano's Queue and PodGroup CRDs for the envtest suites: volcano.sh/apis
	@# ships none, so they are generated from its pinned types with the pinned
	@# controller-gen, as Volcano's own Makefile generates the CRDs it installs.
	$(CONTROLLER_GEN) crd paths=$(VOLCANO_APIS)/pkg/apis/scheduling/v1beta1 output:crd:dir=test/framework/crds/volcano
	@# The Helm chart's copies (Helm reads no file outside the chart, and installs
	@# crds/ verbatim); config/helm/chart_test.go fails when they are stale.
	@rm -f $(HELM_CHART)/crds/*.yaml && install -m 0644 config/crd/bases/*.yaml config/crd/openreports/*.yaml $(HELM_CHART)/crds/
	@install -m 0644 config/rbac/role.yaml $(HELM_CHART)/files/role.yaml
	@install -m 0644 config/rbac/personas.yaml $(HELM_CHART)/files/personas.yaml
	@install -m 0644 config/prometheus/rule.yaml $(HELM_CHART)/files/prometheusrule.yaml
	@install -m 0644 config/grafana/mpiguard.json $(HELM_CHART)/files/grafana-dashboard.json

.PHONY: generate
generate: ## Generate deepcopy code for mpiguard's API types.
	$(CONTROLLER_GEN) object paths="$(GEN_PATHS)"

.PHONY: verify
verify: generate manifests ## Regenerate everything and fail if the tree changed.
	@git diff --exit-code -- config '*.go' || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- config)" || { git status --porcelain -- config; echo "untracked generated files: commit them"; exit 1; }

##@ Build

.PHONY: build
build: ## Build bin/mpiguard (every subcommand) and bin/mpiguard-check (the check subcommand only: smaller, starts faster).
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/mpiguard ./cmd/mpiguard
	CGO_ENABLED=0 $(GO) build -trimpath -tags checkonly -o $(BIN)/mpiguard-check ./cmd/mpiguard

.PHONY: docker-build
docker-build: ## Build the container image (needs a Docker engine).
	$(require_img)
	docker build -t $(IMG) .

.PHONY: controlplane
controlplane: ## Build kube-apiserver, kube-controller-manager, kube-scheduler and etcd from source into the cache (once per version).
	@bash test/controlplane/build.sh >/dev/null

.PHONY: kwok
kwok: ## Build KWOK's controller (KWOK_VERSION) from the Go module proxy into the cache, with its stages (once per version).
	@bash test/kwok/build.sh >/dev/null

.PHONY: kueue
kueue: ## Build Kueue's manager (the version go.mod pins) from the Go module proxy into the cache (once per version).
	@bash test/kueue/build.sh >/dev/null

##@ Deploy

KUBECTL       ?= kubectl
# server: deploy and undeploy only ask the apiserver whether it would accept
# every object, changing nothing (test/integration/install runs them so).
DRY_RUN       ?= none
DEPLOY_CONFIG ?= config/default

# install_yaml builds an overlay of DEPLOY_CONFIG (a folder of this repository),
# written to a temporary folder under the ignored bin/ (kustomize takes only
# relative paths to a base), that sets the Deployment's image to IMG (plus the
# patches in $(1)): no tracked file changes, so `make verify` stays clean.
IMAGE_PATCH = '- patch: '"'"'{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mpiguard-controller", "namespace": "mpiguard-system"}, "spec": {"template": {"spec": {"containers": [{"name": "mpiguard", "image": "$(IMG)"}]}}}}'"'"
define install_yaml
mkdir -p bin; tmp=$$(mktemp -d bin/install.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
printf '%s\n' 'resources:' '- ../../$(DEPLOY_CONFIG)' 'patches:' \
  $(if $(IMG),$(IMAGE_PATCH)) \
  $(1) >"$$tmp/kustomization.yaml"; \
$(KUSTOMIZE) build "$$tmp"
endef
# require_img stops a target that installs or builds the image unless IMG was
# set (make stops before running anything).
require_img = $(if $(strip $(IMG)),,$(error IMG is not set: no mpiguard image is published, and one no registry has would leave the fail-closed webhooks refusing every TrainJob create; build and push an image, then run: make $@ IMG=registry.example.com/mpiguard:v0.1.0))
# undeploy keeps the openreports.io CRDs: other tools (Kyverno, Policy Reporter)
# may share them, and deleting a CRD deletes every Report of every tool.
KEEP_SHARED_CRDS = $(foreach crd,reports.openreports.io clusterreports.openreports.io, \
  '- patch: '"'"'{"$$patch": "delete", "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "$(crd)"}}'"'")

.PHONY: install-yaml
install-yaml: ## Print what deploy applies: DEPLOY_CONFIG (config/default) with the image IMG (required).
	$(require_img)
	@$(call install_yaml)

.PHONY: deploy
deploy: ## Install mpiguard with image IMG (required) on the cluster kubectl points at (needs the Trainer and cert-manager).
	$(require_img)
	@echo "kustomize build $(DEPLOY_CONFIG) with image $(IMG) | $(KUBECTL) apply --server-side --dry-run=$(DRY_RUN)" >&2
	@$(call install_yaml) | $(KUBECTL) apply --server-side --dry-run=$(DRY_RUN) -f -

.PHONY: deploy-openshift
deploy-openshift: ## Install on OpenShift with image IMG (required; config/openshift: service CA, OpenShift DNS, ServiceMonitor).
	$(require_img)
	@$(MAKE) --no-print-directory deploy DEPLOY_CONFIG=config/openshift

.PHONY: undeploy
undeploy: ## Remove what deploy installed (mpiguard's CRDs and their objects too; not the shared openreports.io CRDs).
	@echo "kustomize build $(DEPLOY_CONFIG) | $(KUBECTL) delete --ignore-not-found --dry-run=$(DRY_RUN)" >&2
	@$(call install_yaml,$(KEEP_SHARED_CRDS)) | $(KUBECTL) delete --ignore-not-found --dry-run=$(DRY_RUN) -f -

.PHONY: undeploy-openshift
undeploy-openshift: ## Remove what deploy-openshift installed.
	@$(MAKE) --no-print-directory undeploy DEPLOY_CONFIG=config/openshift

##@ Test

.PHONY: test
test: vet test-rego test-unit test-integration ## Everything: Rego tests, Go unit tests and envtest integration suites.

.PHONY: test-rego
test-rego: ## Rego unit tests (OPA's tester) over policies/.
	@if [ -n "$$(git ls-files 'policies/*.rego')" ]; then $(OPA) test --v1-compatible --ignore '*.yaml' --capabilities $(OPA_CAPABILITIES) -v policies | tail -n 3; else echo "no Rego policies yet"; fi

.PHONY: test-unit
test-unit: hydra mpi promtool ## Go unit tests (no apiserver).
	MPIGUARD_PROMTOOL=$(PROMTOOL) MPIGUARD_REQUIRE_HYDRA=1 MPIGUARD_REQUIRE_REAL_MPI=1 $(GO) test -count=1 $(UNIT_PKGS)
	$(GO) test -count=1 -tags checkonly ./cmd/mpiguard

.PHONY: promtool
promtool: ## Build Prometheus' promtool (PROMTOOL_VERSION) from the Go module proxy into the cache, for the alert rules' tests.
	@if [ ! -x $(PROMTOOL) ]; then \
	  echo "building promtool $(PROMTOOL_VERSION) into $(dir $(PROMTOOL)) (cold: a few minutes on 2 cores)"; \
	  cd "$$(mktemp -d)" && GOWORK=off GOFLAGS= GOBIN=$(dir $(PROMTOOL)) $(GO) install -tags remove_all_sd github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION); \
	fi

.PHONY: hydra
hydra: ## Install MPICH's Hydra (Debian's mpich): the Hydra runtimes' launcher test runs it.
	@if ! command -v mpiexec.hydra >/dev/null; then \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing Debian's mpich (MPICH's Hydra) for runtimes/catalog's launcher test"; \
	  apt="$$sudo env DEBIAN_FRONTEND=noninteractive apt-get -q -y"; \
	  $$apt install --no-install-recommends mpich >/dev/null || { $$apt update >/dev/null && $$apt install --no-install-recommends mpich >/dev/null; }; \
	fi

.PHONY: mpi
mpi: ## Install Debian's openssh-server, openmpi-bin and iproute2: test/mpi runs the curated runtimes' pods with them (as root).
	@if [ ! -x /usr/sbin/sshd ] || ! command -v mpirun.openmpi >/dev/null || ! command -v ip >/dev/null; then \
	  sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  echo "installing Debian's openssh-server, openmpi-bin and iproute2 for test/mpi (MPI ranks over real SSH)"; \
	  apt="$$sudo env DEBIAN_FRONTEND=noninteractive apt-get -q -y"; pkgs="openssh-server openmpi-bin iproute2"; \
	  $$apt install --no-install-recommends $$pkgs >/dev/null || { $$apt update >/dev/null && $$apt install --no-install-recommends $$pkgs >/dev/null; }; \
	fi

.PHONY: test-integration
test-integration: controlplane kueue kwok ## envtest integration suites against a real kube-apiserver + etcd.
	KUBEBUILDER_ASSETS=$(CONTROLPLANE) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p 1 $(INTEGRATION_PKGS) $(GINKGO_ARGS)

.PHONY: test-multikueue
test-multikueue: controlplane kueue ## Only the MultiKueue suite (also in test-integration): two control planes, manager and worker, with real Kueue MultiKueue between them.
	KUBEBUILDER_ASSETS=$(CONTROLPLANE) $(GO) test -count=1 -timeout 15m -v ./test/integration/multikueue/ $(GINKGO_ARGS)

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME (60s) each, one after another; a failing input lands in the package's testdata/fuzz/.
	@failed=; for t in $(FUZZ_TARGETS); do \
	  pkg=./$${t%%:*}; name=$${t##*:}; corpus=$$pkg/testdata/fuzz/$$name; log=$$(mktemp); \
	  echo "== $$name ($$pkg, $(FUZZTIME))"; \
	  before=$$( (ls $$corpus 2>/dev/null || true) | wc -l); \
	  if ! $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) $$pkg 2>&1 | tee $$log; then \
	    if [ "$$( (ls $$corpus 2>/dev/null || true) | wc -l)" = "$$before" ] && grep -q '^    context deadline exceeded$$' $$log; then \
	      echo "$$name: no failing input, only Go 1.26's race at the end of -fuzztime (go.dev/issue/75804): not a finding"; \
	    else failed="$$failed $$name"; fi; \
	  fi; \
	  rm -f $$log; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz targets failed:$$failed"; exit 1; fi

.PHONY: bench
bench: bench-go bench-webhook ## All benchmarks: Go micro-benchmarks and the webhook load test (results: docs/performance.md).

.PHONY: bench-go
bench-go: ## Go micro-benchmarks (render, policy evaluation, ...).
	$(GO) test -run '^$$' -bench . -benchmem -count 1 $(UNIT_PKGS)

.PHONY: bench-webhook
bench-webhook: controlplane ## Load generator: AdmissionReviews/s and latency against the real TLS webhook endpoint (LOAD_RATE, default 2000/s; HTTP2=true: server with --enable-http2).
	GOGC=$${GOGC:-400} MPIGUARD_LOAD_RATE=$(or $(LOAD_RATE),2000) MPIGUARD_LOAD_HTTP2=$(HTTP2) KUBEBUILDER_ASSETS=$(CONTROLPLANE) $(GO) test -count=1 -run '^$$' -bench Webhook -benchtime 1x -timeout 10m ./test/load

# The load benchmarks through the apiserver, each run once from a test binary
# built once (compare two builds by running their binaries alternately;
# docs/performance.md).
LOAD_TEST ?= bin/load.test

.PHONY: load-test-binary
load-test-binary:
	$(GO) test -c -o $(LOAD_TEST) ./test/load/

.PHONY: bench-burst
bench-burst: controlplane load-test-binary ## BenchmarkBurstCreate once: a burst of BURST_JOBS (500) creates with mpiguard (2 replicas), unselected, the apiserver by itself and the floor; exact or it fails.
	cd test/load && MPIGUARD_BURST_JOBS=$(or $(BURST_JOBS),500) $(abspath $(LOAD_TEST)) -test.run '^$$' -test.bench BurstCreate -test.benchtime 1x -test.timeout 60m -test.v

.PHONY: bench-sequential
bench-sequential: controlplane load-test-binary ## BenchmarkSequentialCreate once: reserving, unselected, alone and the floor; SEQ_NODES=5000 creates that many Nodes first.
	cd test/load && MPIGUARD_SEQ_NODES=$(SEQ_NODES) $(abspath $(LOAD_TEST)) -test.run '^$$' -test.bench SequentialCreate -test.benchtime 1x -test.timeout 90m -test.v

.PHONY: bench-specification
bench-specification: controlplane load-test-binary ## BenchmarkSpecificationSubmit once: 50 TrainJobs of 100 Workers from 50 users, 2 replicas, a quota for 30; exact or it fails.
	cd test/load && $(abspath $(LOAD_TEST)) -test.run '^$$' -test.bench SpecificationSubmit -test.benchtime 1x -test.timeout 30m -test.v

.PHONY: gator
gator: ## Build Gatekeeper's gator (GATOR_VERSION) from the Go module proxy into the cache (once per version).
	@bash test/gator/build.sh >/dev/null

.PHONY: bench-peers
bench-peers: gator ## mpiguard check (check-only and full builds) vs gator test and an OPA floor on the same generated 1,000-TrainJob corpus: wall, CPU and peak RSS, medians of PEERS_ROUNDS (5) alternating rounds.
	$(GO) run ./test/load/peers -gator $$(bash test/gator/build.sh) -rounds $(or $(PEERS_ROUNDS),5)

.PHONY: bench-networkpolicies
bench-networkpolicies: controlplane ## Scale run: NETPOL_JOBS (1000) MPI TrainJobs -> NetworkPolicies on a real apiserver (and a baseline with the controller off); prints time to converge and memory.
	@for baseline in false true; do \
	  log=$$(mktemp); \
	  if KUBEBUILDER_ASSETS=$(CONTROLPLANE) MPIGUARD_NETPOL_SCALE=$(or $(NETPOL_JOBS),1000) MPIGUARD_NETPOL_SCALE_BASELINE=$$baseline \
	    $(GO) test -count=1 -v -timeout 20m ./test/integration/networkpolicies/ -ginkgo.label-filter=scale >$$log 2>&1; \
	  then grep -a -A7 'NetworkPolicies scale' $$log | sed -n '1,8p'; rm -f $$log; \
	  else tail -n 60 $$log; rm -f $$log; exit 1; fi; \
	done

##@ Run

.PHONY: run
run: controlplane kwok ## Start a local cluster where jobs run (KWOK nodes), mpiguard serving on it, and show it at work (Ctrl-C stops everything).
	CGO_ENABLED=0 $(GO) build -o $(BIN)/mpiguard-dev ./cmd/mpiguard-dev
	KUBEBUILDER_ASSETS=$(CONTROLPLANE) exec $(BIN)/mpiguard-dev
