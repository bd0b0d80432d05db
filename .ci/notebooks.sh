#!/usr/bin/env bash
# Executes every GoNB notebook in notebooks/ headlessly and fails on any failed cell, then checks
# that the committed notebooks carry the outputs the code produces now (see notebooks/README.md).
#
# On a fresh Debian machine (root, apt, Go installed) it first installs Debian's jupyter-nbconvert
# and the Jupyter client, and GoNB, gopls and goimports at pinned versions.
#
#   .ci/notebooks.sh            execute and check
#   .ci/notebooks.sh --update   execute and write the outputs into the committed notebooks
set -euo pipefail
cd "$(dirname "$0")/.."

GONB_VERSION=v0.11.4
GOPLS_VERSION=v0.23.0
# goimports from the golang.org/x/tools version that gopls v0.23.0 requires.
XTOOLS_VERSION=v0.47.1-0.20260707181000-a299dadba899

update=false
case "${1:-}" in
  "") ;;
  --update) update=true ;;
  *) echo "usage: $0 [--update]" >&2; exit 2 ;;
esac

if ! command -v jupyter-nbconvert >/dev/null 2>&1; then
  echo "== apt: jupyter-nbconvert"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends jupyter-nbconvert jupyter-client python3-nbclient >/dev/null
fi

GOBIN_DIR="$(go env GOPATH)/bin"
export PATH="$GOBIN_DIR:$PATH"

# install_tool PACKAGE VERSION installs a Go command at an exact version, built with the
# dependency versions of its own go.mod. It resolves it in a scratch module rather than with
# `go install pkg@version`, which also lists the module's versions for deprecation notices and
# fails behind proxies that refuse listings.
install_tool() {
  local pkg=$1 version=$2 dir
  dir=$(mktemp -d)
  (cd "$dir" && go mod init tools >/dev/null 2>&1 &&
    go get "$pkg@$version" >/dev/null 2>&1 &&
    GOFLAGS=-buildvcs=false go install "$pkg") || { echo "installing $pkg@$version failed" >&2; rm -rf "$dir"; return 1; }
  rm -rf "$dir"
}
echo "== GoNB $GONB_VERSION, gopls $GOPLS_VERSION, goimports (x/tools $XTOOLS_VERSION)"
install_tool github.com/janpfeifer/gonb "$GONB_VERSION"
install_tool golang.org/x/tools/gopls "$GOPLS_VERSION"
install_tool golang.org/x/tools/cmd/goimports "$XTOOLS_VERSION"
gonb --install >/dev/null 2>&1
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
else
  go run ./notebooks/nbcheck -repo . -executed "$out" -committed notebooks
fi
