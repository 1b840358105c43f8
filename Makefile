# dbtune scratch-operator

# Tools run through `go tool` from their own modfile, so they never enter the product's module graph.
GO_TOOL ?= go tool -modfile=hack/tools/go.mod
CONTROLLER_GEN ?= $(GO_TOOL) controller-gen
KUSTOMIZE ?= $(GO_TOOL) kustomize
GOLANGCI_LINT ?= $(GO_TOOL) golangci-lint

# Real kube-apiserver and etcd (and, for end-to-end work, the rest of a control plane), built from the
# Go module proxy by hack/k8s-binaries.sh and cached under bin/k8s/.
K8S_BINARIES ?= hack/k8s-binaries.sh
# What the test suites need: envtest's kube-apiserver and etcd, kubectl for client-side apply, and
# the rest of a control plane (controller-manager, scheduler, kwok) for the local-cluster tests.
K8S_TEST_BINARIES ?= all

# One package at a time: several suites start API servers, a control plane or MariaDB servers, and
# two cores are shared by all of them. go test's own vet pass is off: make lint runs govet with every
# analyzer on the same packages, and the pass re-reads every dependency from source on a cold cache.
# Test binaries carry no DWARF (-w): stack traces come from the symbol table, and linking is faster.
GOTEST_FLAGS ?= -count=1 -p 1 -timeout 30m -vet=off -ldflags=-w
export GOWORK = off

# One build configuration for everything built here (tests, tools, the images' binaries, the
# Kubernetes binaries of hack/k8s-binaries.sh): static, without cgo, with paths trimmed. The
# packages they share (client-go, api, apimachinery and below) then compile once, not once per
# configuration; hack/k8s/kubernetes selects the same versions of them as go.mod. The binaries'
# versions come from -X flags, not from the checkout (-buildvcs=false). The compiler writes no DWARF:
# every link here drops it (-w), and without it a cold build of kube-apiserver (huge pages on) took
# 0.8 of the time (docs/development.md); set GOFLAGS=-gcflags=all=-dwarf=true for a debugger.
export CGO_ENABLED = 0
export GOFLAGS += -trimpath -buildvcs=false -gcflags=all=-dwarf=false

.PHONY: all
all: build

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "\nUsage:\n  make \033[36m<target>\033[0m\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) } ' $(MAKEFILE_LIST)

##@ Development

.PHONY: generate
generate: ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...

.PHONY: manifests
manifests: ## Generate CRDs (config/crd/bases) and RBAC roles (config/rbac) from the code's markers, and the Helm chart's copies.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=dbtune-scratch-operator paths="./controllers/..." output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=dbtune-node-agent paths="./node-agent/probectl/...;./node-agent/readaheadctl/...;./node-agent/nodeprofile/...;./node-agent/scratchusage/..." output:rbac:artifacts:config=config/rbac/node-agent
	$(MAKE) chart-files

# The Helm chart reads the CRDs, the generated roles and the alerts from copies in its files/
# (a chart cannot reach outside its directory); test/helm fails when they differ from config/.
HELM_CHART := config/helm/dbtune-scratch-operator

.PHONY: chart-files
chart-files: ## Copy the CRDs, generated roles and alerts of config/ into the Helm chart's files/ (make manifests does it).
	rm -rf $(HELM_CHART)/files
	mkdir -p $(HELM_CHART)/files/crds $(HELM_CHART)/files/rbac
	cp config/crd/bases/*.yaml $(HELM_CHART)/files/crds/
	cp config/rbac/role.yaml $(HELM_CHART)/files/rbac/manager-role.yaml
	cp config/rbac/node-agent/role.yaml $(HELM_CHART)/files/rbac/node-agent-role.yaml
	cp config/prometheus/prometheusrule.yaml $(HELM_CHART)/files/prometheusrule.yaml

.PHONY: fmt
fmt: ## Run gofmt on the code.
	gofmt -l -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet.
	go vet ./...
	cd test/helm && go vet ./...
	cd test/gitops && go vet ./...

.PHONY: lint
lint: ## Run golangci-lint (config in .golangci.yml) on the product and on hack/images, test/helm and test/gitops, modules of their own.
	$(GOLANGCI_LINT) run ./...
	cd hack/images && go tool -modfile=../tools/go.mod golangci-lint run ./...
	cd test/helm && go tool -modfile=../../hack/tools/go.mod golangci-lint run ./...
	cd test/gitops && go tool -modfile=../../hack/tools/go.mod golangci-lint run ./...

.PHONY: lint-fix
lint-fix: ## Run golangci-lint and apply its fixes.
	$(GOLANGCI_LINT) run --fix ./...

.PHONY: check-generated
check-generated: generate manifests docs-api ## Fail when generated files (deepcopy, CRDs, RBAC, docs/api.md) are stale.
	@if [ -n "$$(git status --porcelain -- api config docs/api.md)" ]; then \
		echo "Generated files are stale; run 'make generate manifests docs-api' and commit:"; \
		git status --porcelain -- api config docs/api.md; git --no-pager diff --stat -- api config docs/api.md; exit 1; \
	fi

##@ Test

.PHONY: k8s-binaries
k8s-binaries: ## Build the Kubernetes binaries the tests need (cached in bin/k8s; up to 35 minutes when cold).
	$(K8S_BINARIES) $(K8S_TEST_BINARIES)

.PHONY: k8s-binaries-all
k8s-binaries-all: ## Also build kube-controller-manager, kube-scheduler, kubectl and kwok.
	$(K8S_BINARIES) all

.PHONY: k8s-binaries-node
k8s-binaries-node: ## Build a real node's kubelet, containerd, containerd-shim-runc-v2 and ctr (not part of k8s-binaries-all).
	$(K8S_BINARIES) node

# make test runs two lanes at once, each one package at a time: the module's packages, and the real
# node's tests (build tag realnode) followed by the modules of their own (test/helm, test/gitops,
# hack/images), which balance the two. Both lanes mostly wait (API servers, kubelet syncs,
# container starts, database servers): one after the other they kept the two cores a third busy.
# A third lane was tried and left: beside it, the tests that measure the machine (a throttled loop
# device's IOPS in test/cloudvolume) fell short of their targets. The real node changes the machine
# (kernel settings, cgroups, mounts, a bridge) until it restores it; the other packages' root tests
# keep to their own mounts, loop devices and cgroups, which it never looks at. As root the real node
# needs Debian's runc, containernetworking-plugins, busybox-static and mmdebstrap (.ci/run installs
# them); without root it skips.
.PHONY: test
test: ## Run every test: unit, envtest against a real API server, the root-only ones and a real node's.
	$(K8S_BINARIES) $(K8S_TEST_BINARIES) node
	@if [ "$$(id -u)" -eq 0 ] && command -v mmdebstrap >/dev/null; then $(MAKE) images-databases; \
	else echo "make test: not root or no mmdebstrap: the MariaDB 11.8 and MySQL 9.7 lanes skip (make images-databases)"; fi
	$(MAKE) -j2 test-module-packages test-realnode-then-modules

.PHONY: test-realnode-then-modules
test-realnode-then-modules: test-realnode
	$(MAKE) test-modules

.PHONY: test-packages
test-packages: test-module-packages test-modules ## Run every test but the real node's, one package at a time.

.PHONY: test-module-packages
test-module-packages: ## Run the tests of the module's packages (not the real node's, nor the modules of their own).
	KUBEBUILDER_ASSETS="$$($(K8S_BINARIES) --print-dir)" go test $(GOTEST_FLAGS) ./...

.PHONY: test-modules
test-modules: ## Run the tests of the modules of their own: test/helm, test/gitops and hack/images.
	cd test/helm && go test $(GOTEST_FLAGS) ./...
	cd test/gitops && go test $(GOTEST_FLAGS) ./...
	cd hack/images && go test $(GOTEST_FLAGS) ./...

.PHONY: test-compile
test-compile: ## Compile what make test will run, without running it (-export stores each package's compiled form in the build cache).
	go list -deps -test -export ./... >/dev/null
	go list -deps -test -export -tags realnode ./test/realnode/... >/dev/null
	cd test/helm && go list -deps -test -export ./... >/dev/null
	cd test/gitops && go list -deps -test -export ./... >/dev/null
	cd hack/images && go list -deps -test -export ./... >/dev/null

.PHONY: test-unit
test-unit: ## Run the unit tests only (no API server, no root).
	go test $(GOTEST_FLAGS) -short ./...
	cd test/helm && go test $(GOTEST_FLAGS) -short ./...
	cd test/gitops && go test $(GOTEST_FLAGS) -short ./...
	cd hack/images && go test $(GOTEST_FLAGS) -short ./...

.PHONY: test-realnode
test-realnode: ## Run the real-node tests: containerd and a kubelet beside the local control plane (as root).
	$(K8S_BINARIES) all node
	go test $(GOTEST_FLAGS) -tags realnode ./test/realnode/...

##@ Build

.PHONY: build
build: ## Build the manager, node-agent and kubectl-dbtune binaries into bin/.
	go build -o bin/manager .
	go build -o bin/node-agent ./node-agent
	$(MAKE) plugin

.PHONY: plugin
plugin: ## Build the kubectl plugin into bin/kubectl-dbtune; on PATH it runs as kubectl dbtune.
	go build -ldflags "-X main.version=$(VERSION) -X main.revision=$(REVISION)" -o bin/kubectl-dbtune ./api/kubectl-dbtune

##@ Demo

.PHONY: demo
demo: ## Start a local control plane with the operator and the samples, show what it did, leave it running.
	go build -o bin/demo ./test/demo
	bin/demo up

.PHONY: demo-down
demo-down: ## Stop everything make demo started and undo its changes to this machine.
	go build -o bin/demo ./test/demo
	bin/demo down

##@ Benchmarks

.PHONY: bench
bench: bench-mariadb bench-mysql bench-mariadb-cloud bench-probe bench-scratch-usage bench-readahead ## Run every benchmark (as root); JSON and PNG results under bin/bench/.

.PHONY: bench-mariadb
bench-mariadb: ## MariaDB with tmpdir on tmpfs vs on disk, side by side (as root; needs mariadb-server, sysbench).
	go run ./test/mariadb/bench -out bin/bench/mariadb -runs 5 -buffer-pool 256Mi -scratch-size 2Gi -bigsort-mib 0 -alter-mib 0

.PHONY: bench-mysql
bench-mysql: ## MySQL 9.7 (the test image of make images-databases) with tmpdir on tmpfs vs on disk, as bench-mariadb (as root).
	go run ./test/mariadb/bench -server mysql-sid -out bin/bench/mysql -runs 5 -buffer-pool 256Mi -scratch-size 2Gi -bigsort-mib 0 -alter-mib 0

.PHONY: bench-large-pages
bench-large-pages: ## MySQL 9.7 and MariaDB 11.8 temporary tables: the RAM volume with large pages, in the kubelet's 4 KiB pages, and the node's disk, at the default sort_buffer_size and at 2 MiB (as root; about 40 minutes).
	go run ./test/mariadb/bench -server mysql-sid -out bin/bench/large-pages/mysql -runs 5 -buffer-pool 256Mi -scratch-size 2Gi -bigsort-mib 0 -alter-mib 0
	go run ./test/mariadb/bench -server mysql-sid -out bin/bench/large-pages/mysql-sort-2m -runs 5 -buffer-pool 256Mi -scratch-size 2Gi -bigsort-mib 0 -alter-mib 0 -server-args --sort-buffer-size=2M
	go run ./test/mariadb/bench -server mariadb-sid -out bin/bench/large-pages/mariadb -runs 5 -buffer-pool 256Mi -scratch-size 2Gi -bigsort-mib 0 -alter-mib 0
	go run ./test/mariadb/bench -server mariadb-sid -out bin/bench/large-pages/mariadb-sort-2m -runs 5 -buffer-pool 256Mi -scratch-size 2Gi -bigsort-mib 0 -alter-mib 0 -server-args --sort-buffer-size=2M

.PHONY: bench-mariadb-cloud
bench-mariadb-cloud: ## MariaDB in a 4Gi pod on a gp3-shaped data volume: tmpdir in RAM, on the node's disk, on the volume; online ALTER (as root; about 15 minutes).
	go run ./test/mariadb/bench -out bin/bench/mariadb-cloudvolume -runs 3 -volume gp3

# The agent's idle cost needs an API server: the envtest binaries, when they are built (make
# k8s-binaries); without them that one figure is reported as not measured.
.PHONY: bench-reports
bench-reports: ## Report jobs staging temporary tables beside sysbench, buffer pool full, 2Gi pods on a gp3-shaped volume: MySQL 9.7 and MariaDB 11.8 images, tmpdir in RAM vs on the volume (as root; about 45 minutes).
	go run ./test/mariadb/bench -server mysql-sid -server-args=--temptable-max-ram=128M $(BENCH_REPORTS_FLAGS) -out bin/bench/reports
	go run ./test/mariadb/bench -server mariadb-sid $(BENCH_REPORTS_FLAGS) -out bin/bench/reports

BENCH_REPORTS_FLAGS = -volume gp3 -variants tmpfs,volume -workloads reports -reports-duration 150s -report-hold 45s -report-mib 160 -report-clients 2 -sysbench-table-size 1250000 -runs 3 -memory-limit 2Gi -buffer-pool 1Gi -scratch-size 512Mi -bigsort-mib 0 -alter-mib 0

.PHONY: bench-probe
bench-probe: ## The node agent's probes against fio, dd and hdparm, and the agent's own CPU and memory (as root; needs fio, hdparm).
	KUBEBUILDER_ASSETS="$${KUBEBUILDER_ASSETS:-$$($(K8S_BINARIES) --print-dir)}" go run ./test/bench/probe --out bin/bench/probe --runs 10

.PHONY: bench-scratch-usage
bench-scratch-usage: ## The node agent's sampling of 1 to 300 RAM volumes on a node: CPU, heap and scrape cost (as root; under a minute).
	go run ./test/bench/scratchusage -out bin/bench/scratchusage -runs 5

.PHONY: bench-readahead
bench-readahead: ## Block-device read-ahead from 128 KiB to 128 MiB on a gp3-shaped volume: backup, log and random reads, MariaDB full scans with fsync and O_DIRECT (as root; about 15 minutes).
	go run ./test/bench/readahead -out bin/bench/readahead

# Needs the local control plane (make k8s-binaries-all), not root. BENCH_SCALE_FLAGS narrows a quick
# run, for example -n 100,500 -runs 1 -background 0.1 -compare-at 0; go run ./test/bench/scale -h
# lists them all.
BENCH_SCALE_FLAGS ?=
.PHONY: bench-scale
bench-scale: ## The manager at fleet scale: 100 to 5000 StatefulSets beside 40 000 unrelated objects, against a bare client (local control plane; about an hour and a half).
	$(K8S_BINARIES) all
	go run ./test/bench/scale -out bin/bench/scale $(BENCH_SCALE_FLAGS)

.PHONY: bench-failover
bench-failover: ## Leader failover: two manager replicas, the leader SIGKILLed mid-injection and mid-revert of 1000 StatefulSets, 3 rounds of the default Lease (15s) and a short one (8s) in a seeded order (local control plane; about 10 minutes).
	$(K8S_BINARIES) all
	go run ./test/bench/scale -only failover -n 1000 -runs 3 -leases 15s,8s -out bin/bench/failover $(BENCH_FAILOVER_FLAGS)

.PHONY: bench-refusal
bench-refusal: ## How long a database is without its pod when its injected pods are refused and put back, against a pod deleted by hand: 10 rounds in a seeded order (local control plane; about 2 minutes).
	$(K8S_BINARIES) all
	go run ./test/bench/scale -only refusal -runs 10 -out bin/bench/refusal $(BENCH_REFUSAL_FLAGS)

.PHONY: bench-rollout
bench-rollout: ## Paced and unpaced rollouts of 1000 one-pod StatefulSets on kwok nodes, 2 rounds of each in a seeded order (local control plane; about 15 minutes).
	$(K8S_BINARIES) all
	go run ./test/bench/scale -only rollout -rollout 1000 -runs 2 -out bin/bench/rollout $(BENCH_ROLLOUT_FLAGS)

##@ Release

# The version compiled into both binaries (main.version), and the images' tag and
# org.opencontainers.image.version label. config/ deploys the "dev" tag; a release is built
# with VERSION=v$(RELEASE_VERSION).
VERSION ?= dev
# The product's version, which the next release will carry: the VERSION file.
RELEASE_VERSION := $(shell cat VERSION)
# Image names are $(IMAGE_REGISTRY)/scratch-operator and $(IMAGE_REGISTRY)/scratch-operator-node-agent.
IMAGE_REGISTRY ?= dbtune
PLATFORMS ?= linux/amd64,linux/arm64
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: images
images: ## Build OCI image tarballs of the manager and node agent into bin/images, with Go alone (no Docker).
	go -C hack/images run . -repo ../.. -out ../../bin/images -version $(VERSION) -registry $(IMAGE_REGISTRY) \
		-platforms $(PLATFORMS) -revision "$(REVISION)"

# Pushes with go-containerregistry, every platform at once, with the credentials of `docker login`
# ($DOCKER_CONFIG, credential helpers included); no Docker engine is needed. The registry must be
# named: the default, dbtune, is Docker Hub's namespace of the project, not yours.
.PHONY: images-push
images-push: ## Build the images and push them as $(IMAGE_REGISTRY)/scratch-operator[-node-agent]:$(VERSION): make images-push IMAGE_REGISTRY=registry.example.com/team VERSION=v0.1.0
	@if [ "$(origin IMAGE_REGISTRY)" = file ]; then \
		echo "make images-push: name the registry to push to, e.g. make images-push IMAGE_REGISTRY=registry.example.com/team"; exit 2; fi
	$(MAKE) images
	go -C hack/images run . -push -out ../../bin/images -version $(VERSION) -registry $(IMAGE_REGISTRY)

# The database test images: MariaDB from this machine's Debian release (the real node's database,
# test/realnode), and MariaDB and MySQL from Debian's development suite (sid: MariaDB 11.8, MySQL
# 9.7), which are also unpacked under bin/images/root for the real-server harness (test/mariadb).
# mmdebstrap installs them (root, apt-get install mmdebstrap); root file systems are cached in
# ~/.cache/dbtune/images (DBTUNE_IMAGES_CACHE), keyed by the package versions, and shared by every
# checkout: only the first build takes minutes, and a new upload to sid builds anew and says so.
.PHONY: images-mariadb
images-mariadb: ## Build the MariaDB test image of the real node (Debian packages, mmdebstrap) into bin/images/mariadb.tar (as root).
	go -C hack/images run . -database mariadb -out ../../bin/images

.PHONY: images-databases
images-databases: images-mariadb ## Also build the MariaDB 11.8 and MySQL 9.7 test images from Debian's development suite, unpacked for the harness (as root).
	go -C hack/images run . -database mariadb-sid,mysql-sid -unpack -out ../../bin/images

# The chart's version is RELEASE_VERSION when the images are tagged v$(RELEASE_VERSION), else its
# pre-release named after their tag (0.1.0-dev); its appVersion, and so its images' default tag, is
# VERSION. File times are the last commit's, so that the same sources give the same archive.
# The plugin's release artifacts: an archive per platform, SHA256SUMS and the krew manifest that
# installs them from the release's address (hack/plugin/dbtune.krew.yaml, filled in).
.PHONY: plugin-release
plugin-release: ## Build kubectl-dbtune's release archives (linux and darwin, amd64 and arm64), SHA256SUMS and krew manifest into bin/plugin.
	go run ./hack/plugin -out bin/plugin -version $(VERSION) -revision "$(REVISION)" -mtime "$$(git log -1 --format=%ct 2>/dev/null || echo 0)"

.PHONY: chart
chart: ## Package the Helm chart into bin/chart/dbtune-scratch-operator-<version>.tgz (version from VERSION; images tagged VERSION=dev).
	go -C test/helm run ./cmd/chart -chart ../../$(HELM_CHART) -out ../../bin/chart -version $(RELEASE_VERSION) \
		-image-tag $(VERSION) -mtime "$$(git log -1 --format=%ct 2>/dev/null || echo 0)"

.PHONY: docs-api
docs-api: ## Generate the API reference docs/api.md from the Go types' comments and markers.
	go run ./hack/apidocs -out docs/api.md ./api/v1alpha1

##@ Fuzzing

# make test runs the fuzz target's seeds, its corpus in test/admission/testdata/fuzz and a few hundred
# generated specs; this explores further. Every input costs several API server calls, so minimizing
# each new interesting input is capped at FUZZMINIMIZETIME (Go's default, 60s, would take most of the
# run); -timeout 0 because go test's default 10m would end a longer FUZZTIME.
.PHONY: fuzz
fuzz: k8s-binaries ## Fuzz ScratchVolume specs through the API server and the controller's planning (FUZZTIME=5m).
	KUBEBUILDER_ASSETS="$$($(K8S_BINARIES) --print-dir)" go test ./test/admission/ -run '^$$' -fuzz FuzzAdmittedSpecsArePlannedFaithfully \
		-fuzztime $${FUZZTIME:-5m} -fuzzminimizetime $${FUZZMINIMIZETIME:-10s} -timeout 0
