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
  # hack/bench-compare.sh's before/after section and make soak's are
  # their own runs: keep them. So is the fleet section, BenchmarkFleet's
  # figures written out with the run that measured them; this run's are
  # in the block above.
  if [[ -f "${out}" ]]; then
    sed -n '/^<!-- before-after:begin -->$/,/^<!-- before-after:end -->$/p' "${out}" | sed '1s/^/\n/'
    sed -n '/^<!-- fleet:begin -->$/,/^<!-- fleet:end -->$/p' "${out}" | sed '1s/^/\n/'
    sed -n '/^<!-- soak:begin -->$/,/^<!-- soak:end -->$/p' "${out}" | sed '1s/^/\n/'
  fi
} > "${raw}.md"
mv "${raw}.md" "${out}"
echo "wrote ${out}" >&2
