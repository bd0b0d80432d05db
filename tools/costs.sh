#!/usr/bin/env bash
# Measures the costs ARTIFACT.md states and rewrites its "Costs" section (between the markers
# <!-- tools/costs.sh: begin --> and <!-- tools/costs.sh: end -->): the README's two commands on a
# fresh clone of this checkout's HEAD with an empty Go build cache (everything compiles, as on a
# new machine) and again with the cache they left, the smoke profile, and fgn verify --profile
# quick. Each command runs as ARTIFACT.md writes it, from the clone's root; its wall time and the
# 1-minute load before and after it are recorded, with the machine (CPU model and vector flags).
# The Go module cache is shared with this machine's (downloading modules is not timed).
#
#   bash tools/costs.sh            # about 15 minutes on a quiet 2-core machine
#
# Run it when nothing else loads the machine: the load is recorded, not subtracted.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/.ci/toolchain.sh"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
git clone --quiet "$repo" "$work/fgn"
revision=$(git -C "$work/fgn" rev-parse --short HEAD)
export GOCACHE="$work/gocache" GOFLAGS=-modcacherw
cd "$work/fgn"

load() { cut -d' ' -f1 /proc/loadavg; }

# duration SECONDS prints "7 min 37 s" or "58 s".
duration() {
  local s=$1
  if [ "$s" -ge 60 ]; then echo "$((s / 60)) min $((s % 60)) s"; else echo "$s s"; fi
}

rows=()
# measure WHAT CACHE COMMAND runs COMMAND with bash from the clone's root and adds a table row.
measure() {
  local what=$1 cache=$2 command=$3 l0 l1 t0 t1
  echo "costs: $command (build cache: $cache)" >&2
  l0=$(load)
  t0=$(date +%s)
  bash -c "$command" >"$work/log" 2>&1 || { tail -40 "$work/log" >&2; echo "costs: $command failed" >&2; exit 1; }
  t1=$(date +%s)
  l1=$(load)
  rows+=("| $what | \`$command\` | $cache | $(duration $((t1 - t0))) | $l0-$l1 |")
}

# targets prints the reproduce log's "done in" times of its three targets.
targets() {
  { grep -o '^\[[0-9]/[0-9]\] [^:]*: done in [0-9hms]*' "$work/log" || true; } |
    sed 's/^\[[0-9]\/[0-9]\] //; s/: done in / /' | paste -sd ';' | sed 's/;/; /g'
}

main_job='GOTOOLCHAIN=go1.27.4 GOEXPERIMENT=simd go run ./cmd/fgn reproduce'
tests='GOTOOLCHAIN=go1.27.4 go test ./...'
measure "README's main job (quick profile)" "empty: compiles the SIMD build" "$main_job"
cold_targets=$(targets)
rm -rf results
measure "the same, on an empty results/" "warm" "$main_job"
warm_targets=$(targets)
measure "README's tests" "holds the SIMD build only: compiles the default build and the tests" "$tests"
measure "the same, again" "warm" "$tests -count=1"
rm -rf results
measure "the smoke profile (CI's)" "warm" "GOEXPERIMENT=simd go run ./cmd/fgn reproduce --profile smoke"
measure "kick the tires: every claim without the Cars196 data" "warm" "GOEXPERIMENT=simd go run ./cmd/fgn verify --profile quick"
verify_summary=$(grep -E -o '^[0-9]+ passed, [0-9]+ failed[^.]*' "$work/log" | head -1 || true)

cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
flags=$(grep -o 'avx[0-9a-z_]*' /proc/cpuinfo | sort -u | paste -sd ' ')
section=$(cat <<EOF
Measured by \`bash tools/costs.sh\` (which rewrites this section) on a fresh clone of commit
$revision, $(date -u +%Y-%m-%d); each command run as written from the clone's root.

- machine: $cpu, $(nproc) logical CPUs; vector flags: $flags
- Go: $GOTOOLCHAIN, $(awk '$1 == "github.com/gomlx/gomlx" { print "gomlx " $2 }' go.mod), $(awk '$1 == "github.com/gomlx/compute" { print "compute " $2 }' go.mod) (go.mod), pure-Go backend
- build cache: "empty" is an empty \`GOCACHE\`, as on a new machine; "warm" holds what the rows above compiled. The Go module cache was filled beforehand (downloads are not timed).

| what | command | build cache | wall time | 1-minute load (before-after) |
|---|---|---|---|---|
$(printf '%s\n' "${rows[@]}")

Inside the main job, per target (fgn reproduce's log): empty cache: $cold_targets; warm: $warm_targets.
fgn verify --profile quick: $verify_summary.
EOF
)
printf '%s\n' "$section" >"$work/section"
awk -v file="$work/section" '
  /<!-- tools\/costs.sh: begin -->/ { print; while ((getline line < file) > 0) print line; skip = 1; next }
  /<!-- tools\/costs.sh: end -->/ { skip = 0 }
  !skip { print }
' "$repo/ARTIFACT.md" >"$work/ARTIFACT.md"
grep -q '<!-- tools/costs.sh: end -->' "$work/ARTIFACT.md" || { echo "costs: ARTIFACT.md has no costs markers" >&2; exit 1; }
cp "$work/ARTIFACT.md" "$repo/ARTIFACT.md"
echo "costs: rewrote the Costs section of $repo/ARTIFACT.md" >&2
