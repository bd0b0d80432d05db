#!/usr/bin/env bash
# Executes every GoNB notebook in notebooks/ headlessly and fails on any failed cell, then checks
# that the committed notebooks carry the outputs the code produces now (see notebooks/README.md).
#
# On a fresh Debian machine (root, apt, Go installed) it first runs .ci/install.sh (Debian's
# jupyter-nbconvert and the Jupyter client, GoNB, gopls and goimports at pinned versions).
#
#   .ci/notebooks.sh            execute and check
#   .ci/notebooks.sh --update   execute and write the outputs into the committed notebooks
#   .ci/notebooks.sh --simd     execute in the SIMD build (the Docker image's) and fail on any
#                               failed cell or check only: its kernels round differently from the
#                               default build the committed outputs come from
set -euo pipefail
cd "$(dirname "$0")/.."
# go.mod's toolchain for nbcheck and for the GoNB kernel nbconvert starts (it inherits the
# environment; .ci/install.sh also writes GOTOOLCHAIN into the kernel's kernel.json).
source .ci/toolchain.sh

update=false
simd=false
case "${1:-}" in
  "") ;;
  --update) update=true ;;
  --simd) simd=true; export GOEXPERIMENT=simd ;;
  *) echo "usage: $0 [--update | --simd]" >&2; exit 2 ;;
esac

# The install steps shared with CI and the Dockerfile: jupyter-nbconvert, GoNB, gopls, goimports.
bash .ci/install.sh
export PATH="$(go env GOPATH)/bin:$PATH"
jupyter kernelspec list 2>/dev/null | grep -q gonb || { echo "the gonb kernel is not installed" >&2; exit 1; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
suite_start=$(date +%s)
for nb in notebooks/*.ipynb; do
  start=$(date +%s)
  # --allow-errors: run every cell, so that one report lists all failures; nbcheck fails on them.
  if ! jupyter nbconvert --to notebook --execute --allow-errors \
      --ExecutePreprocessor.timeout=600 --output-dir "$out" "$nb" >"$out/$(basename "$nb").log" 2>&1; then
    cat "$out/$(basename "$nb").log" >&2
    echo "nbconvert could not execute $nb" >&2
    exit 1
  fi
  echo "executed $nb in $(( $(date +%s) - start )) s"
done
echo "suite executed in $(( $(date +%s) - suite_start )) s"

if $update; then
  go run ./notebooks/nbcheck -repo . -executed "$out" -committed notebooks -update
elif $simd; then
  go run ./notebooks/nbcheck -repo . -executed "$out"
else
  go run ./notebooks/nbcheck -repo . -executed "$out" -committed notebooks
fi
