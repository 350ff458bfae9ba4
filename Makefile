# kubeproof — the two set-up commands are `make run` and `make test`.
GO        ?= go
BIN       ?= bin/kubeproof
DATA_DIR  ?= .kubeproof
PKGS      ?= ./...
TEST_TIMEOUT ?= 35m
FUZZTIME  ?= 10m
BENCH_OUT ?= bench/results/latest

.PHONY: all build run test lint fmt vet unit race model tlc bench bench-compare bench-smoke lin fuzz props e2e clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/kubeproof

# The main job: the whole pipeline on an embedded etcd, data in ./.kubeproof.
run: build
	$(BIN) up --data-dir $(DATA_DIR)

# Every test: formatting and vet, unit and integration tests (the kubectl and
# client-go acceptance tests, the short linearizability scenarios, every fuzz
# target's seed corpus, the benchmark smoke tests), then the model checker's
# standard configurations.
test: lint unit model

unit:
	$(GO) test -timeout $(TEST_TIMEOUT) $(PKGS)

# The packages that are race-clean (session 16), under the race detector.
# Not part of make test (its time budget); the scheduler's and kubelet's
# tests rely on fakeclient.CopyingWatches for it.
RACE_PKGS ?= ./impl/scheduler/... ./impl/controller/... ./impl/kubelet/... ./impl/apiserver/... ./impl/storage/... ./impl/intern ./impl/fakeclient
race:
	$(GO) test -race -count=1 -p 1 -timeout 15m $(RACE_PKGS)

lint: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

# The syntax of spec/*.tla with the TLA+ grammar (tree-sitter-tlaplus, installed
# into spec/tsparse/node_modules by npm when missing; go test ./spec runs the
# same check), then the model checker on every standard configuration of
# spec/*.cfg, ending with a summary table.
model: build
	@test -d spec/tsparse/node_modules || npm ci --prefix spec/tsparse --ignore-scripts --legacy-peer-deps --no-audit --no-fund
	node spec/tsparse/check.mjs
	$(BIN) model check --progress-interval 30s

# TLC on every spec/*.cfg beside the Go checker's counts, when TLA2TOOLS
# points at a tla2tools.jar (it cannot be installed here; without it this
# says so and succeeds).
tlc: build
	KUBEPROOF=$(abspath $(BIN)) sh spec/tlc.sh

# Real pods on containerd + runc + CNI (e2e/cri; issue 9). Needs root: without
# it one SKIP line (a failure with CI=true). make test runs it too, via ./...
e2e:
	$(GO) test -count=1 -timeout 15m -v ./e2e/cri/...

# The long linearizability scenarios.
lin:
	LIN_LONG=1 $(GO) test -timeout 60m -run . -v ./linearizability/ 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS|summary|scenario)' || true

# A long property-test campaign of the whole pipeline against the model
# (PROPS_DURATION, default 1h), with a progress line and a closing summary, then the
# mutation catalog (PROPS_MUTANTS=name,... for a subset).
props:
	PROPS_DURATION=$${PROPS_DURATION:-1h} PROPS_CHECKS=$${PROPS_CHECKS:-5} PROPS_STEPS=$${PROPS_STEPS:-25} \
		$(GO) test ./e2e/props/ -run 'TestPipelineProperties|TestMutantsAreCaught|TestCrashPoints|TestEtcdMemberLoss' -count=1 -v -timeout 0

# Every fuzz target in turn for FUZZTIME each, with a summary table.
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash fuzz/run.sh

# The default benchmark workloads, results (JSON and Markdown) in $(BENCH_OUT).
bench: build
	$(BIN) bench --out $(BENCH_OUT) writes updates watch-fanout apiserver-memory scheduling-basic-500 scheduling-basic-5000 scheduling:Preemption/500Nodes startup node-memory checkers

# Repeated runs compared with the committed baseline; fails on a regression.
bench-compare: build
	$(BIN) bench --repeat 3 --out $(BENCH_OUT) --compare bench/baselines/2026-11-21 writes scheduling-basic-500 scheduling:Preemption/500Nodes startup

# A quick run of every benchmark path so the suite cannot rot (the bench
# package's tests; `make unit` runs them too).
bench-smoke:
	$(GO) test -count=1 ./bench/...

clean:
	rm -rf bin
