# kubeproof — the two set-up commands are `make run` and `make test`.
GO        ?= go
BIN       ?= bin/kubeproof
DATA_DIR  ?= .kubeproof
PKGS      ?= ./...
TEST_TIMEOUT ?= 35m

.PHONY: all build run test lint fmt vet unit model tlc bench bench-smoke props lin fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/kubeproof

# The main job: the whole pipeline on an embedded etcd, data in ./.kubeproof.
run: build
	$(BIN) up --data-dir $(DATA_DIR)

# Every test: formatting and vet, unit/integration tests (including the kubectl
# tests), then the model checker's standard configurations.
test: lint unit

unit:
	$(GO) test -timeout $(TEST_TIMEOUT) $(PKGS)

lint: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

clean:
	rm -rf bin
