#!/usr/bin/env bash
# bench.sh runs every Go benchmark in the module and writes the results, with
# the command that produced them and the machine they ran on, to
# bench/results.md. Targets are checked by reading the numbers, never by a
# timed test: these machines are noisy.
#
# Usage: hack/bench.sh [benchtime]   (default 1x; e.g. 10x or 5s)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

benchtime="${1:-1x}"
out="bench/results.md"
mkdir -p bench
raw="$(mktemp)"
trap 'rm -f "${raw}" "${raw}.md"' EXIT

# -timeout bounds each package's benchmark binary. e2e/bench runs its
# benchmarks one after another: BenchmarkScale takes about 25 minutes on 2
# cores, BenchmarkSideBySide about 20 (kustomize-controller alone needs
# minutes for the 10,000-object cases), BenchmarkFleet (a hub and three
# spokes) and BenchmarkLiveChange a few each, and
# each case gives its waits up to 30 minutes, so a stalled case is
# reported, not killed.
cmd=(go test -run '^$' -bench . -benchmem -benchtime "${benchtime}" -timeout 180m ./...)
echo "+ ${cmd[*]}" >&2
"${cmd[@]}" | tee "${raw}"

{
  echo "# Benchmark results"
  echo
  echo "Produced by \`make bench\` (\`hack/bench.sh ${benchtime}\`), which ran:"
  echo
  echo '```sh'
  echo "${cmd[*]}"
  echo '```'
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "- go: $(go env GOVERSION), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
  echo
  echo '```'
  grep -E '^(Benchmark|goos|goarch|pkg|cpu|ok|PASS|FAIL)' "${raw}" || true
  echo '```'
  echo
  grep -E 'requests per change by kind|hold seen:|scale case|fleet case|side-by-side case|audit flood' "${raw}" | sed 's/^ */    /' || true
  cat hack/bench-notes.md
  # Every section between <!-- name:begin --> and <!-- name:end --> is
  # its own run, written out with the command and load that measured it
  # (hack/bench-compare.sh's before/after, make soak's, BenchmarkFleet's,
  # and the hand-run ones): keep them all, in order. This run's figures
  # are in the block above.
  if [[ -f "${out}" ]]; then
    awk '/^<!-- [a-z0-9-]+:begin -->$/ { keep = 1; print "" } keep { print } /^<!-- [a-z0-9-]+:end -->$/ { keep = 0 }' "${out}"
  fi
} > "${raw}.md"
mv "${raw}.md" "${out}"
echo "wrote ${out}" >&2
