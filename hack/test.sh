#!/usr/bin/env bash
# `make test`: every package once. The engine's packages (RACE_PACKAGES)
# run under the race detector when cgo can build it, and the rest without.
# `make test-race` passes the journeys in RACE_PACKAGES too, and runs only
# those. Without a C compiler every package runs without the race
# detector, and the script says so.
#
# Usage: hack/test.sh [race]   (TEST_TIMEOUT, TEST_FLAGS and RACE_PACKAGES
# from make); with "race", only RACE_PACKAGES, under the race detector.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

timeout="${TEST_TIMEOUT:-40m}"
# shellcheck disable=SC2206 # word splitting is the point: flags and package patterns
flags=(${TEST_FLAGS:-})
# shellcheck disable=SC2206
race_patterns=(${RACE_PACKAGES:?RACE_PACKAGES is set by the Makefile})

only_race=""
[[ "${1:-}" == race ]] && only_race=1

if [[ -z "${only_race}" ]] && ! command -v "$(CGO_ENABLED=1 go env CC)" >/dev/null; then
  echo "no C compiler ($(CGO_ENABLED=1 go env CC)): running every package without the race detector; install gcc for make test-race" >&2
  exec go test ./... -count=1 -timeout "${timeout}" "${flags[@]}"
fi

mapfile -t race < <(go list "${race_patterns[@]}")
declare -A is_race=()
for p in "${race[@]}"; do is_race[$p]=1; done
rest=()
if [[ -z "${only_race}" ]]; then
  while read -r p; do
    [[ -n "${is_race[$p]:-}" ]] || rest+=("$p")
  done < <(go list ./...)
fi

# A failing journey prints its reflux's whole log, and CI keeps only the
# tail of the output: the failures are repeated at the end, where the tail
# shows them.
log="$(mktemp)"
trap 'rm -f "${log}"' EXIT
summarize() {
  echo
  echo "=== failures (repeated from above) ==="
  grep -E -A 12 '^[[:space:]]*--- FAIL|^panic:|^FAIL[[:space:]]|^=== harness:' "${log}" | grep -v -E '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' | head -n 200 || true
}

status=0
if [[ ${#rest[@]} -gt 0 ]]; then
  go test "${rest[@]}" -count=1 -timeout "${timeout}" "${flags[@]}" 2>&1 | tee -a "${log}" || status=$?
fi
# Journeys under -race (make test-race) run reflux built with -race. Built
# here once: left to the harness, every suite would build it at the same
# time, each compiling the same dependencies with -race again (minutes
# each, cold).
if [[ -z "${REFLUX_E2E_BIN:-}" ]] && printf '%s\n' "${race[@]}" | grep -q '/e2e'; then
  CGO_ENABLED=1 go build -race -trimpath -ldflags "-s -w" -o bin/reflux-race .
  export REFLUX_E2E_BIN="${PWD}/bin/reflux-race"
fi
CGO_ENABLED=1 go test -race "${race[@]}" -count=1 -timeout "${timeout}" "${flags[@]}" 2>&1 | tee -a "${log}" || status=$?
[[ "${status}" -eq 0 ]] || summarize
exit "${status}"
