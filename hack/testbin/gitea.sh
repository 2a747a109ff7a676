#!/usr/bin/env bash
# gitea.sh builds the Gitea server the test environment runs as a real forge
# (issue 10: pull requests through fluxcd/go-git-providers).
#
# Like every other test binary it is compiled from the Go module proxy through
# a throwaway wrapper module and cached per user by version:
#
#   ${cache}/gitea-${GITEA_VERSION}/gitea      the binary
#   ${cache}/gitea-${GITEA_VERSION}/static/    options/, templates/, public/
#
# Without the `bindata` tag Gitea reads its templates and locale files from
# STATIC_ROOT_PATH at run time; copying them beside the binary keeps the cache
# whole even after `go clean -modcache`.
#
# Usage: hack/testbin/gitea.sh  (build.sh calls it for the `gitea` component)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
# shellcheck source=versions.env
source "${here}/versions.env"

cache="${REFLUX_TESTBIN_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/reflux/testbin}"
bindir="${root}/bin"
mkdir -p "${cache}" "${bindir}"

export GOTOOLCHAIN=local
export GOFLAGS="${GOFLAGS:-} -mod=mod"
# Gitea's sqlite driver (mattn/go-sqlite3) is cgo.
export CGO_ENABLED=1

log() { printf '[testbin] %s\n' "$*" >&2; }

dir="${cache}/gitea-${GITEA_VERSION}"
dest="${dir}/gitea"

link() {
  ln -sfn "${dest}" "${bindir}/gitea"
  ln -sfn "${dir}/static" "${bindir}/gitea-static"
  log "gitea -> ${dest}"
}

if [[ -x "${dest}" && -d "${dir}/static/options" ]]; then link; exit 0; fi

# A separate lock from build.sh's: build.sh holds its own while it calls us,
# and a developer may run this script alone.
exec 8>"${cache}/.lock-gitea"
if ! flock -n 8; then
  log "another build holds ${cache}/.lock-gitea; waiting for it"
  flock 8
  if [[ -x "${dest}" && -d "${dir}/static/options" ]]; then link; exit 0; fi
fi

log "building gitea ${GITEA_VERSION} (about 6 minutes and 1.2 GB of build cache cold)"
started=${SECONDS}
w="${cache}/.wrap-gitea-${GITEA_VERSION}"
rm -rf "${w}"
mkdir -p "${w}"
(
  cd "${w}"
  go mod init reflux.dev/testbin-wrapper >/dev/null 2>&1
  src="$(go mod download -json "code.gitea.io/gitea@${GITEA_VERSION}" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')"
  # Gitea's own replace directives: without them its dependencies resolve to
  # versions it does not build with. Read from its go.mod so a version bump
  # needs no edit here.
  grep -E '^replace ' "${src}/go.mod" | sed -E 's#^replace ([^ ]+) => ([^ ]+) ([^ ]+).*#-replace=\1=\2@\3#' \
    | xargs go mod edit
  # Start from Gitea's go.sum: the checksums it was released with.
  cp "${src}/go.sum" go.sum
  chmod u+w go.sum
  go mod edit -require="code.gitea.io/gitea@${GITEA_VERSION}"
  printf '//go:build tools\n\npackage tools\n\nimport _ "code.gitea.io/gitea"\n' > tools.go
  mkdir -p "${dir}"
  # main.Version: the Gitea SDK (and so go-git-providers) refuses a server
  # that reports "development".
  go build -trimpath -tags 'sqlite sqlite_unlock_notify' \
    -ldflags "-s -w -X main.Version=${GITEA_VERSION#v}" \
    -o "${dest}.tmp" code.gitea.io/gitea
  rm -rf "${dir}/static"
  mkdir -p "${dir}/static"
  cp -r "${src}/options" "${src}/templates" "${src}/public" "${dir}/static/"
  chmod -R u+w "${dir}/static"
  mv "${dest}.tmp" "${dest}"
)
rm -rf "${w}"
log "gitea ${GITEA_VERSION} built in $((SECONDS - started))s"
link
