#!/usr/bin/env bash
# Builds real Kubernetes binaries (kube-apiserver, etcd, ...) from source
# through the Go module proxy, using the wrapper modules under hack/k8s/.
#
# Usage:
#   hack/k8s-binaries.sh               build the envtest set: kube-apiserver, etcd
#   hack/k8s-binaries.sh all           also kube-controller-manager, kube-scheduler,
#                                      kubectl and kwok (with kwok-stages.yaml)
#   hack/k8s-binaries.sh node          a real node: kubelet, and containerd,
#                                      containerd-shim-runc-v2 and ctr (not in all)
#   hack/k8s-binaries.sh NAME...       build only the named binaries
#   hack/k8s-binaries.sh --print-dir   print the output directory, build nothing
#   hack/k8s-binaries.sh --print-containerd-dir
#                                      print containerd's directory, build nothing
#
# Binaries that already exist in their output directory are not rebuilt. The
# Kubernetes output directory is printed on stdout at the end, so that
#   KUBEBUILDER_ASSETS=$(hack/k8s-binaries.sh)
# works. Progress goes to stderr.
set -euo pipefail

# Pinned versions. When bumping, also update the matching wrapper module under
# hack/k8s/ (see hack/k8s/README.md); the script refuses to build on mismatch.
KUBERNETES_VERSION=v1.37.2
ETCD_VERSION=v3.7.3
KWOK_VERSION=v0.8.0
CONTAINERD_VERSION=v2.4.2

ROOT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODULES_DIR="${ROOT_DIR}/hack/k8s"
BIN_DIR="${ROOT_DIR}/bin/k8s/k8s-${KUBERNETES_VERSION}-etcd-${ETCD_VERSION}-kwok-${KWOK_VERSION}"
# containerd has a folder of its own beside BIN_DIR, keyed by its own version, so
# that the control-plane folder keeps its name (and its cache) whatever
# containerd is pinned to. kubelet is a Kubernetes binary and goes in BIN_DIR.
CONTAINERD_DIR="${ROOT_DIR}/bin/k8s/containerd-${CONTAINERD_VERSION}"

ENVTEST_SET=(kube-apiserver etcd)
ALL_SET=(kube-apiserver etcd kube-controller-manager kube-scheduler kubectl kwok)
# A real node is a separate set, not part of all: it takes minutes to build
# and only the real-node tests need it.
CONTAINERD_SET=(containerd containerd-shim-runc-v2 ctr)
NODE_SET=(kubelet "${CONTAINERD_SET[@]}")

export GOWORK=off
export CGO_ENABLED=0
# The Makefile's build configuration (static, paths trimmed, no DWARF: every binary here is linked
# with -s -w), so that the packages the tests share with these binaries compile once.
GO_BUILD_FLAGS=(-mod=readonly -trimpath -buildvcs=false -gcflags=all=-dwarf=false)

usage() {
	sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
}

log() {
	echo "k8s-binaries: $*" >&2
}

die() {
	log "error: $*"
	exit 1
}

# module_version DIR MODULE prints the version of MODULE selected by the
# wrapper module in DIR.
module_version() {
	(cd "$1" && go list -mod=readonly -m -f '{{.Version}}' "$2")
}

# check_pin DIR MODULE WANT fails when the wrapper module in DIR does not
# select WANT for MODULE, so a version bumped in only one place is caught.
check_pin() {
	local got
	got="$(module_version "$1" "$2")" || die "cannot read ${2} from ${1}/go.mod"
	[[ "${got}" == "$3" ]] ||
		die "${1#"${ROOT_DIR}/"}/go.mod selects ${2} ${got}, this script pins ${3}; update one of them"
}

TMP_DIRS=()
cleanup() {
	local d
	for d in "${TMP_DIRS[@]+"${TMP_DIRS[@]}"}"; do
		rm -rf "${d}"
	done
}
trap cleanup EXIT
# Make sure the EXIT trap also runs when interrupted or terminated.
trap 'exit 130' INT
trap 'exit 143' TERM

# new_tmp_dir [DIR] creates a scratch directory next to the outputs in DIR
# (default BIN_DIR; same file system, so the final mv is an atomic rename) and
# stores it in TMP.
new_tmp_dir() {
	TMP="$(mktemp -d "${1:-${BIN_DIR}}/.build.XXXXXX")"
	TMP_DIRS+=("${TMP}")
}

# install_from TMP NAME... moves built files into the output directory.
install_from() {
	install_into "${BIN_DIR}" "$@"
}

# install_into DIR TMP NAME... moves built files into DIR.
install_into() {
	local dir="$1" tmp="$2" name
	shift 2
	for name in "$@"; do
		chmod 0755 "${tmp}/${name}"
		mv -f "${tmp}/${name}" "${dir}/${name}"
	done
}

build_kubernetes() {
	local dir="${MODULES_DIR}/kubernetes" name pkgs=() date
	check_pin "${dir}" k8s.io/kubernetes "${KUBERNETES_VERSION}"
	for name in "$@"; do
		pkgs+=("k8s.io/kubernetes/cmd/${name}")
	done
	log "building $* (k8s.io/kubernetes ${KUBERNETES_VERSION}), this takes a few minutes on a cold cache…"

	# Stamp the release version the way the Kubernetes build does, so that
	# --version and kubectl version report it. The build date is the module's
	# publication time, which keeps the binaries reproducible.
	local ver="${KUBERNETES_VERSION#v}" ldflags="-s -w" pkg
	local major="${ver%%.*}" minor="${ver#*.}"
	minor="${minor%%.*}"
	date="$(cd "${dir}" && go list -mod=readonly -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes)"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X ${pkg}.gitVersion=${KUBERNETES_VERSION}"
		ldflags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
		ldflags+=" -X ${pkg}.gitCommit= -X ${pkg}.buildDate=${date}"
	done

	new_tmp_dir
	# With several packages, -o DIR/ names each binary after its package.
	(cd "${dir}" && go build "${GO_BUILD_FLAGS[@]}" -ldflags="${ldflags}" -o "${TMP}/" "${pkgs[@]}")
	install_from "${TMP}" "$@"
}

build_etcd() {
	local dir="${MODULES_DIR}/etcd"
	check_pin "${dir}" go.etcd.io/etcd/server/v3 "${ETCD_VERSION}"
	log "building etcd (go.etcd.io/etcd/server/v3 ${ETCD_VERSION}), this takes a minute or two on a cold cache…"
	new_tmp_dir
	(cd "${dir}" && go build "${GO_BUILD_FLAGS[@]}" -ldflags="-s -w" -o "${TMP}/etcd" go.etcd.io/etcd/server/v3)
	install_from "${TMP}" etcd
}

build_kwok() {
	local dir="${MODULES_DIR}/kwok"
	check_pin "${dir}" sigs.k8s.io/kwok "${KWOK_VERSION}"
	log "building kwok (sigs.k8s.io/kwok ${KWOK_VERSION}), this takes a minute or two on a cold cache…"
	new_tmp_dir
	(cd "${dir}" && go build "${GO_BUILD_FLAGS[@]}" -ldflags="-s -w" -o "${TMP}/kwok" sigs.k8s.io/kwok/cmd/kwok)
	install_from "${TMP}" kwok
}

# build_containerd NAME... builds containerd commands into CONTAINERD_DIR in one
# go build, so that the code they share compiles once. Without cgo the btrfs
# snapshotter drops out and devmapper is skipped at run time, which a test node
# does not miss; the binaries are static, like the others here.
build_containerd() {
	local dir="${MODULES_DIR}/containerd" name pkgs=() pkg="github.com/containerd/containerd/v2"
	check_pin "${dir}" "${pkg}" "${CONTAINERD_VERSION}"
	for name in "$@"; do
		pkgs+=("${pkg}/cmd/${name}")
	done
	log "building $* (${pkg} ${CONTAINERD_VERSION}), this takes a few minutes on a cold cache…"
	# Stamp the version the way containerd's Makefile does, so --version reports it.
	local ldflags="-s -w -X ${pkg}/version.Version=${CONTAINERD_VERSION}"
	ldflags+=" -X ${pkg}/version.Package=github.com/containerd/containerd -X ${pkg}/version.Revision="
	new_tmp_dir "${CONTAINERD_DIR}"
	(cd "${dir}" && go build "${GO_BUILD_FLAGS[@]}" -ldflags="${ldflags}" -o "${TMP}/" "${pkgs[@]}")
	install_into "${CONTAINERD_DIR}" "${TMP}" "$@"
}

# write_kwok_stages collects the Stage objects kwok needs (it exits with "no
# stages found" without them) from the module source: nodes become Ready at
# once and keep a heartbeat, pods become Running at once.
write_kwok_stages() {
	local dir="${MODULES_DIR}/kwok" src f files=()
	check_pin "${dir}" sigs.k8s.io/kwok "${KWOK_VERSION}"
	log "writing kwok-stages.yaml (sigs.k8s.io/kwok ${KWOK_VERSION})"
	src="$(cd "${dir}" && go mod download -json sigs.k8s.io/kwok >/dev/null && go list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/kwok)"
	[[ -n "${src}" && -d "${src}/kustomize/stage" ]] || die "kwok module source not found"
	for f in "${src}/kustomize/stage/node/fast/node-initialize.yaml" \
		"${src}/kustomize/stage/node/heartbeat/node-heartbeat.yaml" \
		"${src}"/kustomize/stage/pod/fast/*.yaml; do
		[[ -f "${f}" ]] || die "missing ${f#"${src}/"} in sigs.k8s.io/kwok ${KWOK_VERSION}"
		# The pod folder also holds a kustomization.yaml; keep Stage objects only.
		grep -q '^kind: Stage$' "${f}" && files+=("${f}")
	done
	new_tmp_dir
	{
		echo "# Stage objects for kwok, from sigs.k8s.io/kwok ${KWOK_VERSION} kustomize/stage."
		echo "# Generated by hack/k8s-binaries.sh."
		for f in "${files[@]}"; do
			echo "---"
			echo "# ${f#"${src}/"}"
			cat "${f}"
		done
	} >"${TMP}/kwok-stages.yaml"
	chmod 0644 "${TMP}/kwok-stages.yaml"
	mv -f "${TMP}/kwok-stages.yaml" "${BIN_DIR}/kwok-stages.yaml"
}

main() {
	local targets=() arg
	if [[ $# -eq 0 ]]; then
		targets=("${ENVTEST_SET[@]}")
	fi
	for arg in "$@"; do
		case "${arg}" in
		--print-dir)
			[[ $# -eq 1 ]] || die "--print-dir takes no other arguments"
			echo "${BIN_DIR}"
			return 0
			;;
		--print-containerd-dir)
			[[ $# -eq 1 ]] || die "--print-containerd-dir takes no other arguments"
			echo "${CONTAINERD_DIR}"
			return 0
			;;
		-h | --help)
			usage
			return 0
			;;
		all) targets+=("${ALL_SET[@]}") ;;
		node) targets+=("${NODE_SET[@]}") ;;
		kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | kubelet | etcd | kwok | \
			containerd | containerd-shim-runc-v2 | ctr)
			targets+=("${arg}")
			;;
		*)
			usage
			die "unknown binary '${arg}' (known: ${ALL_SET[*]} ${NODE_SET[*]}; sets: all, node)"
			;;
		esac
	done

	command -v go >/dev/null || die "go is not on PATH"
	mkdir -p "${BIN_DIR}"

	# Keep the targets that are not built yet, once each.
	local kube=() ctrd=() etcd=0 kwok=0 stages=0 seen=" " t
	for t in "${targets[@]}"; do
		[[ "${seen}" == *" ${t} "* ]] && continue
		seen+="${t} "
		case "${t}" in
		kwok)
			[[ -x "${BIN_DIR}/kwok" ]] || kwok=1
			[[ -s "${BIN_DIR}/kwok-stages.yaml" ]] || stages=1
			;;
		etcd) [[ -x "${BIN_DIR}/etcd" ]] || etcd=1 ;;
		containerd | containerd-shim-runc-v2 | ctr)
			[[ -x "${CONTAINERD_DIR}/${t}" ]] || ctrd+=("${t}")
			;;
		*) [[ -x "${BIN_DIR}/${t}" ]] || kube+=("${t}") ;;
		esac
	done

	if [[ ${#kube[@]} -gt 0 ]]; then build_kubernetes "${kube[@]}"; fi
	if [[ ${etcd} -eq 1 ]]; then build_etcd; fi
	if [[ ${kwok} -eq 1 ]]; then build_kwok; fi
	if [[ ${stages} -eq 1 ]]; then write_kwok_stages; fi
	if [[ ${#ctrd[@]} -gt 0 ]]; then
		mkdir -p "${CONTAINERD_DIR}"
		build_containerd "${ctrd[@]}"
	fi

	echo "${BIN_DIR}"
}

main "$@"
