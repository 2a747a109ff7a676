# reflux Makefile. `make demo` and `make test` are the two commands the
# README promises a newcomer; keep them true.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

# Build flags shared with the Dockerfile: keep them identical.
GO_BUILD_FLAGS ?= -trimpath -ldflags "-s -w"
export CGO_ENABLED ?= 0
# The machine's Go is the one we build with.
export GOTOOLCHAIN := local
# Every go command compiles with -trimpath, as the binaries are built: the
# build, go vet and the tests then share one compile of each dependency
# instead of one each (the race detector's is the one other). On a cold
# cache that is minutes of CI on 2 cores.
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

CACHE_DIR ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/reflux
CONTROLLER_GEN_VERSION ?= v0.21.0
CONTROLLER_GEN := $(CACHE_DIR)/tools/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen

TEST_TIMEOUT ?= 40m
TEST_FLAGS ?=
BENCH_TIME ?= 1x

.PHONY: all
all: build

##@ Build

.PHONY: build
build: ## Build the reflux binary into bin/.
	go build $(GO_BUILD_FLAGS) -o bin/reflux .

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy, CRDs and RBAC with controller-gen.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=reflux-manager paths=./controllers/... output:rbac:artifacts:config=config/rbac

.PHONY: verify-generate
verify-generate: generate ## Fail if generated files are out of date.
	@git diff --exit-code -- api config || { echo "generated files are stale: run 'make generate' and commit"; exit 1; }

$(CONTROLLER_GEN):
	GOBIN=$(dir $@) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)

.PHONY: fmt
fmt: ## Run gofmt.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet and check formatting.
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...

##@ Test environment

.PHONY: testbin
testbin: ## Build kube-apiserver, kube-controller-manager, etcd, the real Flux controllers (helm-controller from ../shared/third_party), promtool and Gitea (cached).
	hack/testbin/build.sh etcd kube-apiserver kube-controller-manager source-controller kustomize-controller helm-controller promtool
	hack/testbin/gitea.sh
	@if ! command -v kubectl >/dev/null; then hack/testbin/build.sh kubectl; fi

# The Kubernetes minors before the pinned one, which test-kube-matrix runs
# against: etcd, kube-apiserver and kube-controller-manager of each, pinned
# as KUBE_<minor>_* in versions.env.
KUBE_MATRIX_MINORS ?= $(shell sed -n 's/^KUBE_MATRIX_MINORS="\(.*\)"/\1/p' hack/testbin/versions.env)

.PHONY: testbin-kube-matrix
testbin-kube-matrix: testbin ## Build etcd, kube-apiserver and kube-controller-manager of the previous Kubernetes minors (versions.env KUBE_MATRIX_MINORS) into bin/kube-<minor>/ (cached).
	hack/testbin/build.sh $(addprefix kube-,$(KUBE_MATRIX_MINORS))

.PHONY: testbin-flux-latest
testbin-flux-latest: testbin ## Build the newest Flux controllers (versions.env FLUX_LATEST_*) into bin/flux-latest/ (cached; Go 1.27 for them only).
	hack/testbin/build.sh source-controller-latest kustomize-controller-latest

##@ Test

.PHONY: test
test: testbin vet build ## Run every package once: the engine's (RACE_PACKAGES) under -race (needs gcc), the rest, journeys included, without.
	RACE_PACKAGES="$(RACE_PACKAGES)" TEST_TIMEOUT="$(TEST_TIMEOUT)" TEST_FLAGS="$(TEST_FLAGS)" hack/test.sh

# The race detector needs cgo; these are the packages whose goroutines
# share state: the reconcilers, the wiring between them and the engine
# (cmd/manager), the engine and its queues, and write-back. make test runs
# them under it (hack/test.sh) and the rest without.
RACE_PACKAGES ?= ./controllers/... ./cmd/manager/... ./reverse/...
# The journeys through them, which test-race runs under it too, with the
# reflux binary built with -race (the harness fails a suite whose reflux
# reports a race). They are left out of make test: under -race they take
# two to four times as long, and with the race build of reflux they cost a
# cold CI run about 15 of its minutes on 2 cores.
RACE_JOURNEYS ?= ./e2e/drift/... ./e2e/livepath/... ./e2e/journey/... ./e2e/tenancy/... ./e2e/profiles/... ./e2e/pullrequest/... ./e2e/fleet/... ./e2e/helmlive/...

.PHONY: test-race
test-race: testbin build ## Run the engine's packages, the journeys through it and the short soak under the race detector.
	RACE_PACKAGES="$(RACE_PACKAGES) $(RACE_JOURNEYS)" TEST_TIMEOUT="$(TEST_TIMEOUT)" TEST_FLAGS="$(TEST_FLAGS)" hack/test.sh race
	$(MAKE) soak-short

# The suites that pin down what reflux expects of Flux: the smoke journey
# and Flux's own behaviour (e2e), the faithful build (e2e/faithful) and the
# drift engine (e2e/drift). test-flux-latest runs them against the newest
# Flux; etcd and kube-apiserver stay the pinned ones.
FLUX_LATEST_PACKAGES ?= ./e2e ./e2e/faithful ./e2e/drift

.PHONY: test-flux-latest
test-flux-latest: testbin-flux-latest build ## Run the smoke, faithful and drift suites against the newest Flux.
	REFLUX_TESTENV_FLUX_DIR=$(CURDIR)/bin/flux-latest \
	REFLUX_TESTENV_FLUX_VERSION=$$(sed -n 's/^FLUX_LATEST_KUSTOMIZE_CONTROLLER_VERSION=//p' hack/testbin/versions.env) go test $(FLUX_LATEST_PACKAGES) -count=1 -timeout $(TEST_TIMEOUT) $(TEST_FLAGS)

# Flux supports several Kubernetes minors at once: test-kube-matrix runs
# the smoke journey and Flux's own behaviour (e2e), the drift engine
# (e2e/drift) and the journeys (e2e/journey) once per previous minor,
# against its own etcd, kube-apiserver and kube-controller-manager; Flux
# stays the pinned one. It is not part of .ci/run, because of build time:
# each minor is one more build of all three (both minors took 7 min 40 s
# on 2 cores after make testbin had warmed the module and build caches;
# more from cold), and the suites run again per minor (3 minutes each).
KUBE_MATRIX_PACKAGES ?= ./e2e ./e2e/drift ./e2e/journey

.PHONY: test-kube-matrix
test-kube-matrix: testbin-kube-matrix build ## Run the smoke, drift and journey suites against each previous Kubernetes minor.
	KUBE_MATRIX_PACKAGES="$(KUBE_MATRIX_PACKAGES)" TEST_TIMEOUT="$(TEST_TIMEOUT)" TEST_FLAGS="$(TEST_FLAGS)" hack/test-kube-matrix.sh $(KUBE_MATRIX_MINORS)

.PHONY: bench
bench: testbin ## Run the benchmarks and write bench/results.md.
	hack/bench.sh $(BENCH_TIME)

# The soak (issue 22 §1, e2e/soak): two replicas of bin/reflux under the
# installed RBAC take live edits for SOAK_DURATION while a schedule drawn
# from SOAK_SEED (random unless set; the run prints it) kills, pauses and
# cuts them off. Its figures go to bench/results.md, between the soak
# markers, which make bench keeps. make soak-short runs a short variant
# (2 minutes, a few of each fault) under the race detector. make test-race
# runs it last, after the journeys rather than beside them: it checks
# invariants under faults, and the journeys' load on the same cores is a
# fault it does not schedule. It is kept out of make test, which CI runs:
# it passed 3 runs of 5 when written and 3 of 3 on e44811d, which is not
# yet every time.
SOAK_DURATION ?= 10m
SOAK_RATE ?= 20
SOAK_KUSTOMIZATIONS ?= 10
SOAK_OBJECTS ?= 5000
SOAK_KILLS ?= 20
# Two restarts, and a third after an etcd compaction: the forced watch
# expiry, which informers answer by listing again.
SOAK_RESTARTS ?= 3
SOAK_GIT_DOWN ?= 2m
SOAK_FORGE_ERRORS ?= 2m
SOAK_REVIEWS ?= merge,close,delete-branch,human-push
SOAK_FLUX_INTERVAL ?= 1m
SOAK_DRAIN ?= 10m

.PHONY: soak
soak: testbin build ## Run the 10-minute soak (faults under live edits) and write its figures to bench/results.md.
	SOAK_DURATION=$(SOAK_DURATION) SOAK_RATE=$(SOAK_RATE) SOAK_KUSTOMIZATIONS=$(SOAK_KUSTOMIZATIONS) \
	SOAK_OBJECTS=$(SOAK_OBJECTS) SOAK_KILLS=$(SOAK_KILLS) SOAK_RESTARTS=$(SOAK_RESTARTS) \
	SOAK_GIT_DOWN=$(SOAK_GIT_DOWN) SOAK_FORGE_ERRORS=$(SOAK_FORGE_ERRORS) SOAK_REVIEWS=$(SOAK_REVIEWS) \
	SOAK_FLUX_INTERVAL=$(SOAK_FLUX_INTERVAL) SOAK_DRAIN=$(SOAK_DRAIN) SOAK_RESULTS=$(CURDIR)/bench/results.md \
	go test ./e2e/soak -run '^TestSoak$$' -count=1 -v -timeout 90m $(TEST_FLAGS)

.PHONY: soak-short
soak-short: testbin build ## Run the 2-minute soak under the race detector, with reflux built with -race.
	SOAK_SHORT=1 RACE_PACKAGES=./e2e/soak/... TEST_TIMEOUT="$(TEST_TIMEOUT)" TEST_FLAGS="$(TEST_FLAGS)" hack/test.sh race

##@ Demo

.PHONY: demo
demo: testbin build ## Bring up a local cluster with real Flux, a git server, a sample app and reflux.
	go run ./hack/demo

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-16s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
