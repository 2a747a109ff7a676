#!/usr/bin/env bash
# build.sh builds the real components that the test environment runs:
# kube-apiserver, kube-controller-manager (for its clusterrole-aggregation
# controller), etcd, kubectl, source-controller, kustomize-controller and
# helm-controller, and promtool, which checks the shipped alert rules and
# dashboard.
#
# Download sites for envtest binaries are unreachable here, so every binary is
# compiled from the Go module proxy through a throwaway wrapper module;
# helm-controller, which the proxy does not serve, from its source tarball in
# ../shared/third_party (see build_helm_controller). Each
# binary is cached by name and version in a per-user cache directory and
# linked into bin/, so a fresh clone on the same machine (CI's) reuses it and
# a second run takes seconds.
#
# Usage: hack/testbin/build.sh [component...]
#   components: kube-apiserver kube-controller-manager etcd kubectl source-controller
#               kustomize-controller helm-controller promtool
#               source-controller-latest kustomize-controller-latest (the newest
#               Flux, into bin/flux-latest/, built with Go 1.27)
#               kube-1.35 kube-1.34 ... (etcd, kube-apiserver and
#               kube-controller-manager of a previous Kubernetes minor, into
#               bin/kube-<minor>/; KUBE_MATRIX_MINORS)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"

cache="${REFLUX_TESTBIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/reflux/testbin}"
bindir="${root}/bin"
mkdir -p "${cache}" "${bindir}"

# Never let a toolchain switch sneak in: the machine's Go is the one we build with.
export GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:-} -mod=mod"
export CGO_ENABLED=0

log() { printf '[testbin] %s\n' "$*" >&2; }

# link NAME PATH [DIR]: point DIR/NAME (bin/NAME by default) at a cached
# binary.
link() {
  local dir="${3:-${bindir}}"
  mkdir -p "${dir}"
  ln -sfn "$2" "${dir}/$1"
  log "${dir#"${root}/"}/$1 -> $2"
}

# wrapper DIR: start an empty wrapper module in DIR.
wrapper() {
  rm -rf "$1"
  mkdir -p "$1"
  (cd "$1" && go mod init reflux.dev/testbin-wrapper >/dev/null 2>&1)
}

# staging_replaces VERSION: print `-replace` flags mapping every k8s.io staging
# module that k8s.io/kubernetes VERSION points at ./staging to its published
# v0.Y.Z release. The list comes from kubernetes' own go.mod, so a new staging
# module in a later release is picked up without editing this script.
staging_replaces() {
  local version="$1" modfile staging
  modfile="$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')"
  staging="v0.${version#v1.}"
  grep -E '=> \./staging/src/' "${modfile}" | awk '{print $1}' | while read -r m; do
    printf -- '-replace=%s=%s@%s\n' "${m}" "${m}" "${staging}"
  done
}

# build_kube NAME PKG [VERSION LINKDIR]: build a Kubernetes command at
# VERSION (KUBERNETES_VERSION by default) and link it into LINKDIR (bin/).
build_kube() {
  local name="$1" pkg="$2" version="${3:-${KUBERNETES_VERSION}}" linkdir="${4:-${bindir}}"
  local dest="${cache}/${name}-${version}/${name}"
  if [[ -x "${dest}" ]]; then link "${name}" "${dest}" "${linkdir}"; return; fi
  log "building ${name} ${version} (several minutes cold)"
  local w="${cache}/.wrap-${name}-${version}"
  wrapper "${w}"
  (
    cd "${w}"
    # shellcheck disable=SC2046
    go mod edit $(staging_replaces "${version}")
    go get "k8s.io/kubernetes@${version}"
    printf 'package tools\n\nimport _ "%s"\n' "${pkg}" > tools.go
    sed -i '1s/^/\/\/go:build tools\n\n/' tools.go
    mkdir -p "$(dirname "${dest}")"
    go build -trimpath -ldflags='-s -w' -o "${dest}.tmp" "${pkg}"
    mv "${dest}.tmp" "${dest}"
  )
  rm -rf "${w}"
  link "${name}" "${dest}" "${linkdir}"
}

# build_etcd [VERSION LINKDIR]: build etcd at VERSION (ETCD_VERSION by
# default) and link it into LINKDIR (bin/).
build_etcd() {
  local version="${1:-${ETCD_VERSION}}" linkdir="${2:-${bindir}}"
  local dest="${cache}/etcd-${version}/etcd"
  if [[ -x "${dest}" ]]; then link etcd "${dest}" "${linkdir}"; return; fi
  log "building etcd ${version}"
  local w="${cache}/.wrap-etcd-${version}"
  wrapper "${w}"
  (
    cd "${w}"
    go get "go.etcd.io/etcd/server/v3@${version}" "go.etcd.io/etcd/api/v3@${version}" \
      "go.etcd.io/etcd/client/pkg/v3@${version}" "go.etcd.io/etcd/client/v3@${version}" \
      "go.etcd.io/etcd/pkg/v3@${version}"
    mkdir -p "$(dirname "${dest}")"
    go build -trimpath -ldflags='-s -w' -o "${dest}.tmp" go.etcd.io/etcd/server/v3
    mv "${dest}.tmp" "${dest}"
  )
  rm -rf "${w}"
  link etcd "${dest}" "${linkdir}"
}

# build_kube_minor MINOR: build etcd, kube-apiserver and
# kube-controller-manager of a previous Kubernetes minor (KUBE_<minor>_VERSION
# and KUBE_<minor>_ETCD_VERSION) into bin/kube-MINOR/, which
# `make test-kube-matrix` points internal/testenv at
# (REFLUX_TESTENV_KUBE_DIR). kube-controller-manager is built per version
# too: it may not be newer than the apiserver it talks to.
build_kube_minor() {
  local minor="$1" kv ev
  kv="KUBE_${minor//./_}_VERSION"
  ev="KUBE_${minor//./_}_ETCD_VERSION"
  if [[ -z "${!kv:-}" || -z "${!ev:-}" ]]; then
    log "kube-${minor}: pin ${kv} and ${ev} in hack/testbin/versions.env"
    exit 2
  fi
  local linkdir="${bindir}/kube-${minor}"
  build_etcd "${!ev}" "${linkdir}"
  build_kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${!kv}" "${linkdir}"
  build_kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "${!kv}" "${linkdir}"
}

# build_flux NAME VERSION ARTIFACT TOOLCHAIN LINKDIR: build a Flux controller
# with Go TOOLCHAIN ("local" is the machine's), keep its CRDs beside it, and
# link both into LINKDIR. ARTIFACT pins github.com/fluxcd/pkg/artifact to a
# version whose zip the proxy serves.
build_flux() {
  local name="$1" version="$2" artifact="$3" toolchain="$4" linkdir="$5"
  local dir="${cache}/${name}-${version}"
  local dest="${dir}/${name}"
  mkdir -p "${linkdir}"
  if [[ -x "${dest}" && -d "${dir}/crd" ]]; then
    link_flux "${linkdir}" "${name}" "${dir}"
    return
  fi
  log "building ${name} ${version} with Go ${toolchain} (a few minutes cold)"
  local w="${cache}/.wrap-${name}-${version}"
  wrapper "${w}"
  (
    cd "${w}"
    # Only this subshell may switch toolchains, and only for a controller
    # that needs a newer Go than the machine's (Flux v1.10+ needs 1.27).
    export GOTOOLCHAIN="${toolchain}"
    # The controllers' own replace directives, plus the artifact pin the proxy
    # forces on us.
    go mod edit \
      -replace=github.com/opencontainers/go-digest=github.com/opencontainers/go-digest@v1.0.1-0.20220411205349-bde1400a84be \
      -replace=sigs.k8s.io/kustomize/api=sigs.k8s.io/kustomize/api@v0.21.1 \
      -replace=sigs.k8s.io/kustomize/kyaml=sigs.k8s.io/kustomize/kyaml@v0.21.1 \
      -replace=gopkg.in/yaml.v3=gopkg.in/yaml.v3@v3.0.1 \
      -replace=github.com/fluxcd/pkg/artifact=github.com/fluxcd/pkg/artifact@${artifact}
    fetching "${name}" "${version}" go get "github.com/fluxcd/${name}@${version}" "github.com/fluxcd/${name}/api@${version}"
    printf '//go:build tools\n\npackage tools\n\nimport _ "github.com/fluxcd/%s"\n' "${name}" > tools.go
    # No `go mod tidy`: it walks the controllers' test dependencies, some of
    # which the proxy refuses (helmtestserver). -mod=mod fills go.sum for
    # exactly what the build needs.
    mkdir -p "${dir}"
    fetching "${name}" "${version}" go build -trimpath -ldflags='-s -w' -o "${dest}.tmp" "github.com/fluxcd/${name}"
    mv "${dest}.tmp" "${dest}"
    # CRDs come from the module itself, never from the network.
    local src
    src="$(go list -m -f '{{.Dir}}' "github.com/fluxcd/${name}")"
    rm -rf "${dir}/crd"
    mkdir -p "${dir}/crd"
    cp "${src}"/config/crd/bases/*.yaml "${dir}/crd/"
    chmod -R u+w "${dir}/crd"
  )
  rm -rf "${w}"
  link_flux "${linkdir}" "${name}" "${dir}"
}

# fetching NAME VERSION CMD...: run a go command that downloads NAME
# VERSION's dependencies. When it fails, name the modules the proxy refused,
# the usual reason a newer Flux does not build here: the proxy serves a
# module's go.mod but not every zip the build needs.
fetching() {
  local name="$1" version="$2" err refused
  shift 2
  err="$(mktemp)"
  if "$@" 2> >(tee "${err}" >&2); then
    rm -f "${err}"
    return
  fi
  wait # for tee
  refused="$(grep -oE '[[:alnum:]./_-]+@v[^:[:space:]]+: reading [^[:space:]]+: (403|404|410)' "${err}" |
    sed 's/: reading.*//' | sort -u | tr '\n' ' ')"
  rm -f "${err}"
  if [[ -n "${refused}" ]]; then
    log "${name} ${version} does not build here: the module proxy refuses ${refused}"
    log "pin a version whose dependencies it serves in hack/testbin/versions.env"
  fi
  return 1
}

# link_flux LINKDIR NAME DIR: point LINKDIR/NAME and LINKDIR/NAME-crd at a
# cached controller and its CRDs.
link_flux() {
  ln -sfn "$3/$2" "$1/$2"
  ln -sfn "$3/crd" "$1/$2-crd"
  log "$1/$2 -> $3/$2"
}

# build_helm_controller: build helm-controller from its source tarball.
# The module proxy serves only github.com/fluxcd/helm-controller/api, not the
# controller itself, so build_flux cannot fetch it by module path; the
# tarball's own module (with its replace directives) is built in place
# instead. Recipe and provenance: ../shared/third_party/README.md.
#
# Built after source-controller and kustomize-controller, as `make testbin`
# does, it reuses their downloads and many of their compiled packages: 1m33s
# in a cold CI run, against about 15 minutes built alone.
build_helm_controller() {
  local name=helm-controller version="${HELM_CONTROLLER_VERSION}"
  local dir="${cache}/${name}-${version}"
  local dest="${dir}/${name}"
  if [[ -x "${dest}" && -d "${dir}/crd" ]]; then
    link_flux "${bindir}" "${name}" "${dir}"
    return
  fi
  # CI checks shared/ out beside the clone.
  local third_party="${REFLUX_THIRD_PARTY:-$(dirname "${root}")/shared/third_party}"
  local tarball="${third_party}/${name}-${version}.tar.gz"
  if [[ ! -f "${tarball}" ]]; then
    log "${name} ${version}: no source tarball at ${tarball}"
    log "the module proxy does not serve ${name}; put its tarball there, or point REFLUX_THIRD_PARTY at the directory holding it"
    exit 1
  fi
  log "building ${name} ${version} from ${tarball} (minutes cold)"
  local w="${cache}/.wrap-${name}-${version}"
  rm -rf "${w}"
  mkdir -p "${w}"
  tar -xzf "${tarball}" -C "${w}"
  local src="${w}/${name}-${version}"
  if [[ ! -f "${src}/go.mod" ]]; then
    log "${tarball} does not hold ${name}-${version}/go.mod"
    exit 1
  fi
  (
    cd "${src}"
    # The proxy refuses the zip of the chartutil the tarball asks for
    # (v1.27.1); v1.27.2 is served and builds.
    go mod edit -require=github.com/fluxcd/pkg/chartutil@${HELM_CONTROLLER_CHARTUTIL_VERSION}
    # No `go mod tidy`, as in build_flux: it also fetches the modules of
    # helm-controller's tests, which the binary never needs. -mod=mod fills
    # go.sum for exactly what the build needs.
    mkdir -p "${dir}"
    fetching "${name}" "${version}" go build -trimpath -ldflags='-s -w' -o "${dest}.tmp" .
    mv "${dest}.tmp" "${dest}"
    rm -rf "${dir}/crd"
    mkdir -p "${dir}/crd"
    cp config/crd/bases/*.yaml "${dir}/crd/"
  )
  rm -rf "${w}"
  link_flux "${bindir}" "${name}" "${dir}"
}

# build_flux_latest NAME VERSION: build the newest Flux controller into
# bin/flux-latest/, which `make test-flux-latest` points internal/testenv at
# (REFLUX_TESTENV_FLUX_DIR). etcd and kube-apiserver stay the pinned ones.
build_flux_latest() {
  build_flux "$1" "$2" "${FLUX_LATEST_ARTIFACT_VERSION}" "${FLUX_LATEST_GO_TOOLCHAIN}" "${bindir}/flux-latest"
}

# build_promtool: build promtool at the Prometheus version whose PromQL parser
# reflux's own tests use (go.mod), so the rules check and the dashboard check
# read PromQL the same way. Built rather than taken from Debian (2.42): that
# package needs root, brings the server with it, and lags the parser by a
# major version.
build_promtool() {
  local dest="${cache}/promtool-${PROMETHEUS_VERSION}/promtool"
  if [[ -x "${dest}" ]]; then link promtool "${dest}"; return; fi
  log "building promtool ${PROMETHEUS_VERSION} (a few minutes cold)"
  local w="${cache}/.wrap-promtool-${PROMETHEUS_VERSION}"
  wrapper "${w}"
  (
    cd "${w}"
    # Prometheus' own replace directive, which a wrapper does not inherit.
    go mod edit -replace=cloud.google.com/go=cloud.google.com/go@v0.123.0
    go get "github.com/prometheus/prometheus@${PROMETHEUS_VERSION}"
    mkdir -p "$(dirname "${dest}")"
    # remove_all_sd leaves out the service-discovery plugins (AWS, Azure,
    # GCE, Consul and a dozen more SDKs): most of promtool's cold build, and
    # nothing `check rules`, `test rules` or the dashboard check reads.
    go build -trimpath -tags remove_all_sd -ldflags='-s -w' -o "${dest}.tmp" github.com/prometheus/prometheus/cmd/promtool
    mv "${dest}.tmp" "${dest}"
  )
  rm -rf "${w}"
  link promtool "${dest}"
}

# Two builds of the same cache (a developer's shell and a test run, or two
# clones) must not share a wrapper directory: serialise on one lock.
exec 9>"${cache}/.lock"
if ! flock -n 9; then
  log "another build holds ${cache}/.lock; waiting for it"
  flock 9
fi

components=("$@")
if [[ ${#components[@]} -eq 0 ]]; then
  components=(etcd kube-apiserver kube-controller-manager kubectl source-controller kustomize-controller)
fi
for c in "${components[@]}"; do
  case "${c}" in
    kube-apiserver) build_kube kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver ;;
    kubectl) build_kube kubectl k8s.io/kubernetes/cmd/kubectl ;;
    kube-controller-manager) build_kube kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager ;;
    etcd) build_etcd ;;
    source-controller) build_flux source-controller "${SOURCE_CONTROLLER_VERSION}" "${FLUX_ARTIFACT_VERSION}" local "${bindir}" ;;
    kustomize-controller) build_flux kustomize-controller "${KUSTOMIZE_CONTROLLER_VERSION}" "${FLUX_ARTIFACT_VERSION}" local "${bindir}" ;;
    helm-controller) build_helm_controller ;;
    source-controller-latest) build_flux_latest source-controller "${FLUX_LATEST_SOURCE_CONTROLLER_VERSION}" ;;
    kustomize-controller-latest) build_flux_latest kustomize-controller "${FLUX_LATEST_KUSTOMIZE_CONTROLLER_VERSION}" ;;
    promtool) build_promtool ;;
    kube-[0-9]*.[0-9]*) build_kube_minor "${c#kube-}" ;;
    *) log "unknown component ${c}"; exit 2 ;;
  esac
done
