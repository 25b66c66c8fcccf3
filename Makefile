# ccmlab: run `make help` for the targets.
SHELL := /bin/bash
# pipefail: `make bench` tees each benchmark run; a failing run must still fail the target.
.SHELLFLAGS := -o pipefail -c
GO ?= go
BIN := bin/ccmlab
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# No -trimpath: the build then shares its compile cache with `make test`,
# which matters when Kubernetes takes minutes to compile on 2 cores.
# component-base's version variables, as Kubernetes' release builds set them,
# so `kubectl version` reports the embedded apiserver (and the embedded
# kubectl) as the k8s.io/kubernetes version in go.mod. Builds without these
# flags (go run, go test) get the same values at start from the build info
# (lab/controlplane/version.go).
KUBE_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes 2>/dev/null)
KUBE_VERSION_PARTS := $(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))
KUBE_PKG := k8s.io/component-base/version
KUBE_LDFLAGS := -X $(KUBE_PKG).gitVersion=$(KUBE_VERSION) -X $(KUBE_PKG).gitMajor=$(word 1,$(KUBE_VERSION_PARTS)) -X $(KUBE_PKG).gitMinor=$(word 2,$(KUBE_VERSION_PARTS)) -X $(KUBE_PKG).gitCommit=
LDFLAGS := -s -w -X main.version=$(VERSION) $(KUBE_LDFLAGS)
# Packages whose code holds concurrency; they run under the race detector.
# Not exercises/: its tests play whole exercises, where nodes join while
# Services sync, and that is a data race inside the upstream Service
# controller (k8s.io/cloud-provider v0.37.2; see controllers/units.go), not
# in ccmlab. The packages below keep nodes still while Services sync under
# -race, and say so where they do.
RACE_PKGS := ./lab/cloud/... ./server/... ./controllers/... ./lab/kubelet/... ./lab/dataplane/... ./lab/flow/... ./classroom/... ./lab/history/... ./internal/podlog/... ./internal/gctune/...
# Of those, the two whose tests change under -race (raceEnabled: nodes hold
# still while Services sync) run in the plain pass too; the others run only
# under -race, which is the same tests with the detector on.
BOTH_PASSES := /controllers$$|/lab/flow$$
# The plain pass's longest packages, first: go test starts packages in the
# order it is given them, and these three take 5 to 7 minutes each, so the
# short ones fill the other core around them instead of leaving one of the
# long ones to run alone at the end.
SLOW_PKGS := ./exercises ./cmd/ccmlab ./web/e2e
# No DWARF from the compiler: nothing here reads it (stack traces and race
# reports use the symbol table), and leaving it out cut compile time by 15%
# (k8s.io/api and Kubernetes' pkg/apis on an empty cache, 2 cores: 207 s ->
# 177 s). Exported, so every go command make runs, and the `go build` of
# ccmlab that some tests run, compile with the same flags and share one cache.
# A plain `go test` outside make compiles with the default flags instead.
export GOFLAGS := $(strip $(GOFLAGS) -gcflags=all=-dwarf=false)
CHROMIUM ?= $(shell command -v chromium || command -v chromium-browser || command -v google-chrome || true)

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build bin/ccmlab
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ccmlab

.PHONY: run
run: build ## Start the lab (embedded control plane, no Docker, no flags)
	./$(BIN)

.PHONY: generate
generate: ## Regenerate templ components
	$(GO) tool templ generate

.PHONY: lint
lint: ## gofmt, go vet, staticcheck, go.mod/go.sum tidy
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_templ.go$$')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# The fast tier builds with -tags=unit: compile that file set too, so a
	@# unit test that leans on a helper of an integration-only file fails
	@# here. go list -export compiles the test packages without linking;
	@# `go vet -tags=unit` did the same but redid vet's facts for every
	@# dependency, Kubernetes included (3 minutes on a cold cache).
	@$(GO) list -e -test -export -tags=unit -f '{{with .Error}}{{.}}{{end}}' ./... | { ! grep .; }
	$(GO) tool staticcheck ./...
	@# -diff prints what tidy would change and changes nothing.
	@$(GO) mod tidy -diff || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

.PHONY: verify
verify: lint ## lint + generated files are current
	@if [ -n "$$(git ls-files '*.templ')" ]; then \
		$(GO) tool templ generate >/dev/null && git diff --exit-code -- '*_templ.go' || { echo "templ output is stale: run make generate"; exit 1; }; \
	fi

.PHONY: browser
browser: ## Install Debian's chromium for the browser tests if it is missing
	@if command -v chromium >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium for the browser tests"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-ipafont-gothic >/dev/null; \
	else \
		echo "chromium is missing: browser tests will skip (under CI=true they fail). Install it with: sudo apt-get install chromium"; \
	fi

# The fast tier: -short makes cptest.Main start no control plane and skips
# every test that needs one, the ccmlab binary or a browser. The test
# binaries of the packages that embed Kubernetes are still linked, which is
# most of its time.
.PHONY: test-unit
test-unit: ## Run the tests that need no control plane, binary or browser (-short)
	@# cmd/ccmlab and web/e2e hold only binary and browser tests, which all
	@# skip under -short: leaving them out saves linking two large binaries.
	@# -ldflags=-w: no DWARF in those test binaries, which cuts linking
	@# (measured 63 s -> 54 s for the whole tier on 2 cores, warm cache).
	@# -tags=unit: test files that bring up a control plane or a lab carry
	@# `//go:build !unit` (internal/layers checks it), so this tier neither
	@# compiles nor links them: 12 of the 15 test binaries that held
	@# kube-apiserver no longer do (app, app/sim and lab/controlplane must).
	$(GO) test -tags=unit -short -count=1 -ldflags=-w $$($(GO) list ./... | grep -v -e '/cmd/ccmlab$$' -e '/web/e2e$$')

# Students' laptops: the binary must build for macOS (arm64 and amd64);
# Linux-only calls sit behind build tags with a fallback (classroom's
# Pdeathsig, the low-port mode's 127/8 addresses).
CROSS_TARGETS := darwin/arm64 darwin/amd64

.PHONY: cross
cross: ## Cross-compile ccmlab for macOS (arm64, amd64)
	@for t in $(CROSS_TARGETS); do \
		echo "go build ./cmd/ccmlab for $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build -o /dev/null ./cmd/ccmlab || exit 1; \
	done

# make test type-checks ccmlab for both macOS targets from source
# (internal/crosscheck) instead of compiling it: the same files and type
# errors as the cross build, without compiling all of Kubernetes once more
# per target (about 1,200 CPU-seconds each on an empty cache, against about
# 50 for the type-check; CI has 2 cores and 45 minutes). make cross builds.
.PHONY: cross-test
cross-test:
	@$(GO) build -o bin/crosscheck ./internal/crosscheck
	@for t in $(CROSS_TARGETS); do \
		./bin/crosscheck -os $${t%/*} -arch $${t#*/} ./cmd/ccmlab || exit 1; \
	done

.PHONY: test
test: browser cross-test ## Run every test (integration and browser tests included)
	@# The race build needs nothing from lint or the plain pass, only the CPU
	@# they leave idle (module downloads, single-threaded links, tests that
	@# wait on a condition), so it starts first, at the lowest priority:
	@# under nice 19 it gets next to no CPU a busy core has to give. It
	@# builds and caches the race test binaries; -exec /bin/true runs none.
	@# The plain pass: every package but those that run only under -race.
	@# -vet=off: make lint vetted every package, tests included, with more
	@# analyzers; go test's own vet set would redo its facts for every
	@# dependency, Kubernetes included. -ldflags=-w: no DWARF in the test
	@# binaries, which cuts the linking of some 30 binaries that embed
	@# kube-apiserver (stack traces and race reports need no DWARF).
	@# Then the race pass, one package at a time: each starts a control
	@# plane, and under the race detector two of them at once on 2 cores
	@# starve the controllers' timing. -vet=off there too: under -race vet
	@# would redo its analysis of every dependency, one at a time.
	@racelog=$$(mktemp); \
	nice -n 19 $(GO) test -race -vet=off -ldflags=-w -count=1 -run '^$$' -exec /bin/true $(RACE_PKGS) >$$racelog 2>&1 & racepid=$$!; \
	trap 'kill $$racepid 2>/dev/null; rm -f $$racelog' EXIT; \
	$(MAKE) --no-print-directory verify && \
	pkgs=$$({ $(GO) list $(SLOW_PKGS); $(GO) list ./... | grep -vxF -f <($(GO) list $(SLOW_PKGS)); } | grep -vxF -f <($(GO) list $(RACE_PKGS) | grep -vE '$(BOTH_PASSES)')) && \
	$(GO) test -count=1 -vet=off -ldflags=-w -timeout 30m $$pkgs && \
	echo "waiting for the race build" && { wait $$racepid; rc=$$?; grep -v '^ok' $$racelog; test $$rc -eq 0; } && \
	$(GO) test -count=1 -race -vet=off -ldflags=-w -p 1 -timeout 40m $(RACE_PKGS)

# KWOK, the baseline of the per-node cost budget, built from its Go module at
# a pinned version, with the stage files that module ships.
KWOK_VERSION := v0.8.0
BENCH_DIR := $(CURDIR)/bin/bench
BENCH_OUT := $(BENCH_DIR)/bench.txt

.PHONY: kwok
kwok: ## Build KWOK (the per-node cost baseline) into bin/bench
	@mkdir -p $(BENCH_DIR)
	GOBIN=$(BENCH_DIR) $(GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)
	@dir=$$(cd $(BENCH_DIR) && $(GO) mod download -json sigs.k8s.io/kwok@$(KWOK_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	{ cat $$dir/kustomize/stage/node/fast/node-initialize.yaml; echo '---'; cat $$dir/kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml; } > $(BENCH_DIR)/kwok-stages.yaml

# Each line appends its benchmarks' output to $(BENCH_OUT); the last line
# prints the one budgets table from it (internal/benchtable holds the
# budgets). A new benchmark joins by a line here and a row in
# internal/benchtable/budgets.go.
.PHONY: bench
bench: build kwok ## Run the benchmarks and print the budgets table (about 55 minutes)
	@mkdir -p $(BENCH_DIR) && : > $(BENCH_OUT)
	@# Latency percentiles need many samples; whole-lab starts and
	@# convergence runs are expensive, so they run a few times inside.
	$(GO) test -run '^$$' -bench 'ServiceExternalIP|NodeInit|Fanout200|Burst100|MapRender' -benchtime 20x -timeout 30m ./controllers ./server/hub ./web/e2e | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'Upstream' -benchtime 20x -timeout 30m ./app/upstreamtest | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'APICalls' -benchtime 1s ./lab/cloud | tee -a $(BENCH_OUT)
	@# The real AWS Load Balancer Controller (issue 40 item 5): one lab per run.
	$(GO) test -run '^$$' -bench 'LBC/hostname' -benchtime 20x -timeout 30m ./app/lbctest | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'LBC/idle' -benchtime 1x -timeout 30m ./app/lbctest | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'Heartbeat' -benchtime 5x -timeout 30m ./lab/kubelet | tee -a $(BENCH_OUT)
	CCMLAB_KWOK=$(BENCH_DIR)/kwok CCMLAB_KWOK_STAGES=$(BENCH_DIR)/kwok-stages.yaml \
		$(GO) test -run '^$$' -bench 'ColdStart|Idle|NodeCost|ReplayStart|PodCommands' -benchtime 1x -timeout 30m ./cmd/ccmlab | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'Converge' -benchtime 1x -timeout 30m ./controllers | tee -a $(BENCH_OUT)
	@# Three runs of each scale run (the table takes the median), each with
	@# KWOK's baseline, at upstream's Lease timing: about 25 minutes.
	$(SCALE_ENV) $(GO) test -run '^$$' -bench 'Scale' -benchtime 1x -count 3 -timeout 90m ./app/apptest -args -lease=upstream | tee -a $(BENCH_OUT)
	$(GO) test -run '^$$' -bench 'ClassroomCapacity' -benchtime 1x -timeout 30m ./classroom | tee -a $(BENCH_OUT)
	@# A class of CCMLAB_CLASS_SIZE (default 50) run for real: about 10 minutes.
	$(GO) test -run '^$$' -bench 'ClassRun' -benchtime 1x -timeout 40m ./classroom | tee -a $(BENCH_OUT)
	@echo; $(GO) run ./internal/benchtable/cmd/benchtable $(BENCH_OUT)

# The scale runs compare their nodes per second with KWOK's on the same
# apiserver, and run at a kubelet's and kube-controller-manager's own Lease
# timing (10 s renewals, 50 s grace period) rather than the exercises' pace.
SCALE_ENV := CCMLAB_KWOK=$(BENCH_DIR)/kwok CCMLAB_KWOK_STAGES=$(BENCH_DIR)/kwok-stages.yaml

.PHONY: bench-scale
bench-scale: kwok ## Run the 100 and 1,000 nodes x Classic ELB Services runs on cloud-provider-aws three times, with KWOK's baseline and the AWS API bill (about 15 minutes)
	@mkdir -p $(BENCH_DIR)
	$(SCALE_ENV) $(GO) test -run '^$$' -bench 'ScaleAWS' -benchtime 1x -count 3 -timeout 60m ./app/apptest -args -lease=upstream | tee $(BENCH_DIR)/scale.txt
	@$(GO) run ./internal/benchtable/cmd/benchtable -scale $(BENCH_DIR)/scale.txt

.PHONY: conformance
conformance: build ## Run upstream's [Conformance] tests of [sig-network] Services and DNS (k8s.io/kubernetes v1.37.2) against a fresh lab (about 20 minutes; not part of test)
	GO=$(GO) conformance/run.sh

.PHONY: clean
clean: ## Remove build output (not the lab's data dir)
	rm -rf bin artifacts
