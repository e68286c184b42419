# The gateway's two everyday commands are `make run` and `make test`. The repository holds
# two Go modules: the gateway (this directory: the planes, shared/, gatewayctl and their
# helpers) and deploy/ (tools such as the provider simulator, benchmarks and chaos run, and
# the tests that need heavy dependencies); targets run in both where it matters.
GO        ?= go
BIN       ?= bin
BINARIES  := dataplane controlplane gatewayctl
# --version prints the module version and VCS revision; the toolchain stamps the revision
# itself in a clone, and the link flag carries it where it cannot (a git worktree).
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILDFLAGS := -buildvcs=auto -ldflags '-X github.com/sekgate/gateway/internal/version.linkedRevision=$(REVISION)'
GOBUILD   := $(GO) build $(BUILDFLAGS)
# TOOLBUILD builds the deploy module's commands (./cmd/NAME there) into $(BIN).
TOOLBUILD := $(GO) build -C deploy $(BUILDFLAGS) -o $(abspath $(BIN))/

.PHONY: docs test-needs test-short all build run run-fleet test test-race vet check-imports fuzz bench bench-short bench-routing bench-ingest bench-ingest-short chaos chaos-short images clean console-screenshots

all: build

## build: the production binaries and the provider simulator (make run's upstream) into $(BIN).
build:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/ $(addprefix ./cmd/,$(BINARIES))
	$(TOOLBUILD) ./cmd/simulator

## run: local Postgres under .data/, control plane, data plane, simulator and a demo account.
run: build
	@exec env BIN=$(BIN) deploy/local/run.sh

## run-fleet: a fleet on one host: Postgres and the control plane under .data/fleet/, data
## planes se-sto (SE; two nodes sharing a pool of two simulators), eu-fra (DE) and us-any
## (US, a simulator each), a demo account per residency; .data/fleet.env lists each node's
## base URL. Ports differ from make run's.
run-fleet: build
	@exec env BIN=$(BIN) deploy/local/run-fleet.sh

## test: every test of both modules, including real-Postgres control-plane tests and the
## import boundary, then the planes' packages again under the race detector.
test: test-needs vet check-imports
	$(GO) test -count=1 -timeout 12m ./...
	$(GO) test -C deploy -count=1 -timeout 12m ./...
	$(GO) test -race -count=1 -timeout 12m ./dataplane/... ./controlplane/... ./shared/...

## images: container images of dataplane, controlplane and gatewayctl (static binaries FROM
## scratch) with podman, buildah or docker, whichever is installed; no registry access.
images:
	@GO=$(GO) deploy/images/build.sh

## console-screenshots: the console's browser tests, saving their screenshots to docs/console
## for the README.
console-screenshots:
	CONSOLE_SCREENSHOTS=docs/console $(GO) test -C deploy -count=1 -run 'TestConsole_Browser|TestConsole_LiveCharts|TestConsole_BudgetsAndAlerts|TestConsole_Tokens' ./conformance/

## test-needs: one line naming what make test needs that this machine lacks (.ci/run installs it).
test-needs:
	@deploy/local/test-needs.sh

## test-short: the inner loop: go test -short in both modules; tests that start a process
## (Postgres, binaries, a browser, stripe-mock) skip themselves (about two minutes).
test-short: vet
	$(GO) test -short -count=1 -timeout 5m ./...
	$(GO) test -C deploy -short -count=1 -timeout 5m ./...

test-race:
	$(GO) test -race -count=1 -timeout 20m ./...
	$(GO) test -C deploy -race -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...
	$(GO) vet -C deploy ./...

## check-imports: the import boundary, as Go tests (internal/deptest and each production
## binary's TestDeps): the data plane never reaches controlplane/ or pgx, nothing imports
## cmd/, no production binary reaches a tool or a heavy module, and go.mod lists none.
check-imports:
	$(GO) test -count=1 -run '^(TestDeps|TestNothingImportsCmd|TestGoModLight|TestHeavyLines|TestViolations)$$' ./cmd/... ./internal/deptest/

## fuzz: run each fuzz target of both modules for FUZZTIME (default 20s each).
FUZZTIME ?= 20s
fuzz:
	@for dir in . deploy; do \
	  for pkg in $$($(GO) list -C $$dir ./...); do \
	    for f in $$($(GO) test -C $$dir -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	      echo "== $$pkg $$f"; $(GO) test -C $$dir -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	    done; \
	  done; \
	done

## bench: the performance benchmark (simulator directly, a bare fasthttp proxy and the data
## plane, same load, same run); results, summary and plot in bench-results/.
## bench-short: the same in under two minutes.
BENCH_OUT ?= bench-results
BENCH_TOOLS := simulator bareproxy benchrun
bench:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/ ./cmd/dataplane ./cmd/controlplane
	$(TOOLBUILD) $(addprefix ./cmd/,$(BENCH_TOOLS))
	$(BIN)/benchrun --bin $(BIN) --out $(BENCH_OUT)

bench-short:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/ ./cmd/dataplane ./cmd/controlplane
	$(TOOLBUILD) $(addprefix ./cmd/,$(BENCH_TOOLS))
	$(BIN)/benchrun --short --bin $(BIN) --out $(BENCH_OUT)

## bench-ingest: usage ingest at fleet scale: simulated nodes post usage batches over the
## node API into one control plane and a throwaway Postgres, per node count and batch size,
## each scenario on empty records, then one on empty and on pre-filled records (table size);
## records/s, CPU per 1,000 records, batch latency and storage growth in bench-results/.
## bench-ingest-short: the same, fewer and shorter scenarios (about a minute). make test runs a
## toy-scale smoke of it (deploy/tools/benchingest TestSmoke).
bench-ingest:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/ ./cmd/controlplane
	$(TOOLBUILD) ./cmd/benchingest
	$(BIN)/benchingest --bin $(BIN) --out $(BENCH_OUT)

bench-ingest-short:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/ ./cmd/controlplane
	$(TOOLBUILD) ./cmd/benchingest
	$(BIN)/benchingest --short --bin $(BIN) --out $(BENCH_OUT)

## bench-routing: routing policies against four vLLM-like simulator replicas behind a node
## (NODES=N: N nodes of one deployment behind a round-robin balancer), the same Poisson
## arrivals replayed per policy, six workloads (docs/routing.md); TTFT, end-to-end time,
## prefix-cache hits, errors and 429s in bench-results/routing.{json,md,svg}
## (routing-Nnodes.* for N > 1), each request in bench-results/samples[-Nnodes]/.
## BENCH_SECONDS=S replays S seconds of arrivals per run (default 24, the first 6 s
## warming the caches; 12 takes half the time, 36 steadies the bursts).
NODES ?= 1
BENCH_SECONDS ?= 24
bench-routing:
	@mkdir -p $(BIN)
	$(TOOLBUILD) ./cmd/benchrouting
	$(BIN)/benchrouting --out $(BENCH_OUT) --nodes $(NODES) --seconds $(BENCH_SECONDS) --samples

## chaos: the real binaries and Postgres under steady mixed load with a hostile upstream,
## through a control-plane kill, a data-plane kill, a Postgres restart and a hostile-upstream
## kill; prints requests, records and money per scenario and fails on any inexact figure.
## chaos-short: the same at small scale (also run by make test as a Go test).
CHAOS_TOOLS := simulator chaos
chaos:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/ ./cmd/dataplane ./cmd/controlplane
	$(TOOLBUILD) $(addprefix ./cmd/,$(CHAOS_TOOLS))
	$(BIN)/chaos --bin $(BIN)

chaos-short:
	@mkdir -p $(BIN)
	$(GOBUILD) -o $(BIN)/ ./cmd/dataplane ./cmd/controlplane
	$(TOOLBUILD) $(addprefix ./cmd/,$(CHAOS_TOOLS))
	$(BIN)/chaos --short --bin $(BIN)

clean:
	rm -rf $(BIN)

## docs: regenerate docs/configuration.md's flag tables from the binaries' flags.
docs:
	UPDATE_DOCS=1 $(GO) test -C deploy -count=1 -run TestConfigurationReference ./docs
