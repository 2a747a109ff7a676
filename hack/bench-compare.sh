#!/usr/bin/env bash
# bench-compare.sh compares BenchmarkLiveChange between the reflux binary
# of an earlier commit and the work tree's, in one run on one machine:
# the runs alternate (before, after, before, after, ...) so that load that
# comes and goes falls on both, and each run's one-minute load average is
# written beside its figures. It replaces the "Before and after" section of
# bench/results.md, which hack/bench.sh keeps when it rewrites the rest.
#
# Usage: hack/bench-compare.sh BEFORE [ROUNDS]   (default 2 rounds)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

before="${1:?usage: hack/bench-compare.sh BEFORE [ROUNDS]}"
rounds="${2:-2}"
out="bench/results.md"
begin='<!-- before-after:begin -->'
end='<!-- before-after:end -->'
work="$(mktemp -d)"
trap 'git worktree remove --force "${work}/src" >/dev/null 2>&1 || true; rm -rf "${work}"' EXIT

# Both binaries are built as make build builds reflux.
build() { (cd "$1" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$2" .); }
git worktree add -q --detach "${work}/src" "${before}"
build "${work}/src" "${work}/reflux-before"
build . "${work}/reflux-after"
before_rev="$(git rev-parse --short "${before}")"
after_rev="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!bench' || echo '+changes')"

cmd=(go test ./e2e/bench -run '^$' -bench '^BenchmarkLiveChange$' -benchtime 1x -count 1 -timeout 60m)
rows=()
for ((i = 1; i <= rounds; i++)); do
  for which in before after; do
    echo "+ REFLUX_E2E_BIN=reflux-${which} ${cmd[*]}" >&2
    load0="$(cut -d' ' -f1 /proc/loadavg)"
    line="$(REFLUX_E2E_BIN="${work}/reflux-${which}" "${cmd[@]}" | tee -a /dev/stderr | grep -E '^BenchmarkLiveChange' || true)"
    [[ -n "${line}" ]] || { echo "BenchmarkLiveChange failed for ${which}" >&2; exit 1; }
    # "<value> <unit>" pairs after the name and iteration count.
    metric() { awk -v u="$1" '{for (i = 3; i < NF; i++) if ($(i + 1) == u) print $i}' <<<"${line}"; }
    rows+=("| ${i} | ${which} | $(metric p50-ms) | $(metric p99-ms) | $(metric max-ms) | $(metric requests/change) | ${load0} | $(metric load-avg) |")
  done
done

section="$(
  echo "${begin}"
  echo "## Before and after: BenchmarkLiveChange"
  echo
  echo "Produced by \`hack/bench-compare.sh ${before} ${rounds}\` on $(date -u +%Y-%m-%dT%H:%M:%SZ),"
  echo "$(nproc) cores: before is ${before_rev}, after is ${after_rev}; each run is"
  echo
  echo '```sh'
  echo "REFLUX_E2E_BIN=<binary> ${cmd[*]}"
  echo '```'
  echo
  echo "| round | binary | p50-ms | p99-ms | max-ms | requests/change | load at start | load at end |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo "${end}"
)"
# Replace the section, or append it once.
if grep -qF "${begin}" "${out}"; then
  awk -v b="${begin}" -v e="${end}" -v s="${section}" '
    $0 == b { print s; skip = 1; next }
    $0 == e { skip = 0; next }
    !skip { print }' "${out}" >"${work}/results.md"
  cp "${work}/results.md" "${out}"
else
  printf '\n%s\n' "${section}" >>"${out}"
fi
echo "wrote ${out}" >&2
