#!/bin/bash
# Regenerates, in one quiet window, the tables of BENCHMARKS.md that bench/peer.py writes but its
# plain peer table: the convolutions direct and lowered (--conv), small products' layouts
# (--layout), the model zoo's cost with the CNN's PyTorch peer (--zoo) and the large-class step
# against its peer (--scale), each on the CPU's widest vector kernels and, on an AVX-512 machine,
# again on AVX2 kernels (--avx2). RUNS (default 5) is the
# number of runs of every cell (bench/peer.py --runs). Prints each mode's duration.
# Usage, from anywhere: bash bench/regenerate.sh   (or RUNS=3 bash bench/regenerate.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-5}
widths=("")
if grep -qw avx512f /proc/cpuinfo; then
	widths+=("--avx2")
fi
for mode in --conv --layout --zoo --scale; do
	for width in "${widths[@]}"; do
		start=$(date +%s)
		/usr/bin/python3 bench/peer.py $mode $width --runs "$runs"
		echo "bench/regenerate.sh: bench/peer.py $mode $width --runs $runs took $(($(date +%s) - start)) s" >&2
	done
done
