#!/usr/bin/env bash
# `make test-kube-matrix` (issue 23 §5): the smoke, drift and journey suites
# once per previous Kubernetes minor (KUBE_MATRIX_MINORS in
# hack/testbin/versions.env), each against its own etcd, kube-apiserver and
# kube-controller-manager in bin/kube-<minor>/ (make testbin-kube-matrix).
# The Flux controllers and kubectl stay those of `make test`. Every minor runs
# even when an earlier one fails; the summary at the end names each result.
#
# internal/testenv refuses an apiserver of another minor than
# REFLUX_TESTENV_KUBE_VERSION, so a suite that passes ran against it; with
# TEST_FLAGS=-v each suite also logs the apiserver it started.
#
# Usage: hack/test-kube-matrix.sh [minor...]   (default: KUBE_MATRIX_MINORS;
# KUBE_MATRIX_PACKAGES, TEST_TIMEOUT and TEST_FLAGS from make)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=testbin/versions.env
source hack/testbin/versions.env

timeout="${TEST_TIMEOUT:-40m}"
# shellcheck disable=SC2206 # word splitting is the point: flags and package patterns
flags=(${TEST_FLAGS:-})
# shellcheck disable=SC2206
packages=(${KUBE_MATRIX_PACKAGES:-./e2e ./e2e/drift ./e2e/journey})
minors=("$@")
# shellcheck disable=SC2206
[[ ${#minors[@]} -gt 0 ]] || minors=(${KUBE_MATRIX_MINORS})

summary=()
status=0
for minor in "${minors[@]}"; do
  var="KUBE_${minor//./_}_VERSION"
  version="${!var:?${var} is not pinned in hack/testbin/versions.env}"
  echo "=== Kubernetes ${version} (bin/kube-${minor}): ${packages[*]}"
  start=${SECONDS}
  result=ok
  REFLUX_TESTENV_KUBE_DIR="${PWD}/bin/kube-${minor}" REFLUX_TESTENV_KUBE_VERSION="${version}" \
    go test "${packages[@]}" -count=1 -timeout "${timeout}" "${flags[@]}" || { result=FAIL; status=1; }
  summary+=("Kubernetes ${version}: ${result} ($(((SECONDS - start) / 60)) min)")
done

echo
echo "=== test-kube-matrix ($(date -u +%Y-%m-%dT%H:%MZ); ${packages[*]})"
printf '%s\n' "${summary[@]}"
exit "${status}"
