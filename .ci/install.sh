#!/usr/bin/env bash
# Install steps shared by the Dockerfile and CI (.ci/run): the apt packages the build needs, the
# Go tools GoNB uses (goimports, gopls) and the GoNB Jupyter kernel, all at pinned versions.
# Idempotent and fast when everything is present: each tool is rebuilt only when its version or
# toolchain differs, and the kernel registration is rewritten.
# JupyterLab itself (pip) and the CUDA PJRT plugin are installed by the Dockerfile only.
set -euo pipefail
# go.mod's toolchain: the Go tools are built with it (gopls must be at least as new as the Go
# version the notebooks' code declares) and the GoNB kernel runs go with it.
source "$(dirname "$0")/toolchain.sh"

GOPLS_VERSION=v0.23.0
# goimports is golang.org/x/tools/cmd/goimports at the x/tools version gopls v0.23.0 requires.
GOIMPORTS_VERSION=v0.47.1-0.20260707181000-a299dadba899
GONB_VERSION=v0.11.5

# installed_version BINARY MODULE_PATH prints the module version BINARY was built from ("" if none).
installed_version() {
  local bin
  bin=$(command -v "$1" 2>/dev/null) || return 0
  go version -m "$bin" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m { print $3 }'
}

# built_with BINARY prints the Go toolchain BINARY was built with ("" if none).
built_with() {
  local bin
  bin=$(command -v "$1" 2>/dev/null) || return 0
  go version "$bin" 2>/dev/null | awk '{ print $2 }'
}

# go_install BINARY MODULE PACKAGE VERSION installs PACKAGE@VERSION unless BINARY already is it,
# built with $GOTOOLCHAIN.
# It resolves the package in a scratch module rather than with `go install pkg@version`, which
# also lists the module's versions for deprecation notices and fails behind proxies that refuse
# listings (as CI's does); the command is still built with its own go.mod's dependency versions.
go_install() {
  if [ "$(installed_version "$1" "$2")" = "$4" ] && [ "$(built_with "$1")" = "$GOTOOLCHAIN" ]; then
    echo "install: $1 $4 ($GOTOOLCHAIN) present"
    return
  fi
  echo "install: $3@$4 with $GOTOOLCHAIN"
  local dir
  dir=$(mktemp -d)
  (cd "$dir" && go mod init tools >/dev/null 2>&1 && go get "$3@$4" >/dev/null 2>&1 &&
    GOFLAGS=-buildvcs=false go install "$3") || { echo "installing $3@$4 failed" >&2; rm -rf "$dir"; return 1; }
  rm -rf "$dir"
}

# cgo (go-xla's PJRT loader) needs a C compiler; jupyter-nbconvert, jupyter-client and
# python3-nbclient execute the notebooks headlessly; poppler-utils (pdftotext, pdffonts,
# pdftoppm) reads the figures' PDFs back in the tests of experiments/plot/plottest; the hunspell
# dictionaries are the word-identification task of data/words (words.Packages lists them; its
# tests need them). With --browser also the classic Notebook (jupyter-notebook) and chromium, which
# run them in a browser (.ci/browser.sh); the image, whose front end is JupyterLab, does without.
packages=(gcc libc6-dev ca-certificates git jupyter-nbconvert jupyter-client python3-nbclient poppler-utils
  hunspell-en-us hunspell-de-de hunspell-fr hunspell-es hunspell-it hunspell-pt-pt hunspell-nl hunspell-sv
  hunspell-da hunspell-no hunspell-pl hunspell-cs hunspell-sk hunspell-sl hunspell-hr hunspell-ro hunspell-hu
  hunspell-tr hunspell-lt hunspell-lv)
case "${1:-}" in
  "") ;;
  --browser) packages+=(jupyter-notebook chromium) ;;
  *) echo "usage: $0 [--browser]" >&2; exit 2 ;;
esac
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install: apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

export PATH="$(go env GOPATH)/bin:$PATH"
go_install gopls golang.org/x/tools/gopls golang.org/x/tools/gopls "$GOPLS_VERSION"
go_install goimports golang.org/x/tools golang.org/x/tools/cmd/goimports "$GOIMPORTS_VERSION"
go_install gonb github.com/janpfeifer/gonb github.com/janpfeifer/gonb "$GONB_VERSION"

# Register the GoNB kernel with Jupyter when Jupyter is there (gonb --install rewrites its
# kernel.json, pointing at the gonb just installed), with GOTOOLCHAIN in the kernel's environment
# so that the notebooks' cells build with go.mod's toolchain whoever starts Jupyter.
if command -v jupyter >/dev/null 2>&1; then
  echo "install: gonb --install, kernel environment GOTOOLCHAIN=$GOTOOLCHAIN"
  gonb --install >/dev/null
  spec=$(jupyter kernelspec list --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["kernelspecs"]["gonb"]["resource_dir"])')
  python3 - "$spec/kernel.json" "$GOTOOLCHAIN" <<'PY'
import json, sys
path, toolchain = sys.argv[1], sys.argv[2]
with open(path) as f:
    spec = json.load(f)
spec.setdefault("env", {})["GOTOOLCHAIN"] = toolchain
with open(path, "w") as f:
    json.dump(spec, f, indent=2)
PY
else
  echo "install: no jupyter on PATH; GoNB kernel not registered (the Dockerfile installs JupyterLab)"
fi
