# Beamer: build, test and demo. Everything runs as root (BPF, namespaces).

GO ?= go
BIN := bin/beamer
LAB_BIN := bin/beamer-lab
BPF_SOURCES := $(wildcard bpf/*.c bpf/include/*.h bpf/strategy/*.h bpf/bench/*.h bpf/bench/*.c bpf/probe/*.c)
BPF_OBJECTS := pkg/dataplane/mux_bpfel.o pkg/dataplane/agent_bpfel.o pkg/dataplane/hashprobe_bpfel.o pkg/dataplane/gue6probe_bpfel.o pkg/dataplane/vipstats_bpfel.o
# The benchmark builds of the mux and agent: the research wing's (dpbench), not in the beamer binary.
BENCH_OBJECTS := research/bench/dpbench/muxbench_bpfel.o research/bench/dpbench/agentbench_bpfel.o

.PHONY: all setup generate generate-api check-generated build test fuzz demo deb clean

all: build

# Installs missing Debian packages and Go modules (idempotent).
setup:
	@scripts/setup.sh

# Compiles the eBPF programs with clang and writes their Go bindings.
$(BPF_OBJECTS) &: $(BPF_SOURCES) pkg/dataplane/generate.go
	cd pkg/dataplane && $(GO) generate ./...

$(BENCH_OBJECTS) &: $(BPF_SOURCES) research/bench/dpbench/generate.go
	cd research/bench/dpbench && $(GO) generate ./...

generate: $(BPF_OBJECTS) $(BENCH_OBJECTS)

# The management API's Go code from its schema (pkg/controlplane/mgmtapi/proto).
generate-api:
	GO=$(GO) scripts/gen-mgmtapi.sh

# The committed objects and bindings are what bpf/ compiles to, the API's
# code what its schema generates (CI runs it).
check-generated:
	@GO=$(GO) scripts/check-generated.sh

# Two binaries: beamer, the product (mux, agent, controller, ctl; what the
# Debian package ships), and beamer-lab, the research wing (demo, lab, sim,
# bench), which runs the beamer beside it. beamer says the version
# scripts/version.sh gives (`beamer version`).
build: generate
	$(GO) build -buildvcs=auto -ldflags "-X github.com/beamer-lb/beamer/cmd/internal/beamercli.version=$$(scripts/version.sh)" -o $(BIN) ./cmd/beamer
	$(GO) build -buildvcs=auto -o $(LAB_BIN) ./cmd/beamer-lab

# The test command (README, .ci/run): vet, then every test. Privileged tests
# run for real as root; CI=true makes them fail rather than skip without it.
test: setup check-generated generate
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) fuzz

# Every Go fuzz target for a few seconds (FUZZTIME=2s each), seeds first.
fuzz:
	@GO=$(GO) scripts/fuzz.sh

# The main job: a working load balancer in a namespace lab.
demo: setup build
	$(LAB_BIN) demo

# The Debian package dist/beamer_VERSION_amd64.deb (nfpm, a Go module pinned in
# packaging/nfpm/go.mod; packaging/nfpm.yaml): the binary, systemd units,
# /etc/default files, maintainer scripts, man pages, completions, examples.
deb:
	@GO=$(GO) scripts/deb.sh

# The generated eBPF objects are committed: `make generate` remakes them.
clean:
	rm -rf bin dist
