#!/usr/bin/env bash
# Runs every notebook in a real browser, as a reader would (tools/nbbrowser): Debian's classic
# Jupyter Notebook serves a temporary copy of this checkout on a free loopback port with a
# random token, and headless Chromium (the system's, driven by go-rod) clears each notebook, runs
# all cells, checks the page and saves it; nbcheck then compares the saved notebooks with the
# checkout's. Full-page screenshots go to results/browser/ (git-ignored).
#
# Fails, naming notebook and cell, on a JavaScript exception, an image that did not load,
# unrendered math, a cell that did not run, an error output, an output kind missing against the
# committed notebook, a panic or failed check in the text, or outputs that differ from the
# committed ones. The server, its kernels and the browser are stopped by their PIDs on every
# exit path, and the checkout is left unchanged.
#
#   .ci/browser.sh              all notebooks
#   .ci/browser.sh 07           only the notebooks whose name contains 07
set -euo pipefail
cd "$(dirname "$0")/.."
source .ci/toolchain.sh
repo=$(pwd)

# The install steps shared with CI and the Dockerfile, with the classic Notebook and chromium.
bash .ci/install.sh --browser
export PATH="$(go env GOPATH)/bin:$PATH"
jupyter kernelspec list 2>/dev/null | grep -q gonb || { echo "the gonb kernel is not installed" >&2; exit 1; }

work=$(mktemp -d)
server_pid=
driver_pid=
cleanup() {
  # The driver closes the browser itself when signalled; the PID file covers a driver killed hard.
  if [ -n "$driver_pid" ] && kill -0 "$driver_pid" 2>/dev/null; then
    kill -TERM "$driver_pid" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 "$driver_pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$driver_pid" 2>/dev/null || true
  fi
  # The notebook server shuts its kernels down on SIGTERM; kernels run in sessions of their own,
  # so each is signalled by its PID (its process group: GoNB and the cell programs it started).
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kernels=$(pgrep -P "$server_pid" || true)
    kill -TERM "$server_pid" 2>/dev/null || true
    for _ in $(seq 20); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$server_pid" 2>/dev/null || true
    for pid in $kernels; do kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; done
  fi
  if [ -s "$work/browser.pid" ]; then
    browser_pid=$(cat "$work/browser.pid")
    kill -KILL -- "-$browser_pid" 2>/dev/null || kill -KILL "$browser_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== tools/nbbrowser: vet, tests and build of the driver"
(cd tools/nbbrowser && go vet ./... && go test ./... && go build -o "$work/nbbrowser" .)

status_before=$(git status --porcelain)
# A copy of the checkout (tracked files as they are in the work tree, and untracked ones that are
# not ignored) for the server to serve and the front end to save into.
mkdir "$work/repo"
git ls-files -z --cached --others --exclude-standard |
  tar --null --files-from=- --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$work/repo"
mkdir "$work/committed" "$work/executed"
cp "$work/repo"/notebooks/*"${1:-}"*.ipynb "$work/committed/"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
token=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
root_flag=()
[ "$(id -u)" = 0 ] && root_flag=(--allow-root)
# The kernel builds the cells in the copy (its first cell points go.work at the notebooks' parent).
jupyter notebook --no-browser --ip=127.0.0.1 --port="$port" --port-retries=0 \
  --NotebookApp.token="$token" --notebook-dir="$work/repo/notebooks" "${root_flag[@]}" \
  >"$work/server.log" 2>&1 &
server_pid=$!
up=false
for _ in $(seq 120); do
  if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1])' \
    "http://127.0.0.1:$port/api/status?token=$token" 2>/dev/null; then
    up=true; break
  fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.5
done
$up || { cat "$work/server.log" >&2; echo "the notebook server did not start on port $port" >&2; exit 1; }

shots="$repo/results/browser"
start=$(date +%s)
rc=0
# In the background and waited for, so that a signal to this script runs its trap at once.
"$work/nbbrowser" -server "http://127.0.0.1:$port" -token "$token" \
  -served "$work/repo/notebooks" -committed "$work/committed" -out "$work/executed" \
  -screenshots "$shots" -browser-pid "$work/browser.pid" &
driver_pid=$!
wait "$driver_pid" || rc=$?
driver_pid=
echo "browser check of the notebooks: $(( $(date +%s) - start )) s, screenshots in results/browser/"

if ls "$work/executed"/*.ipynb >/dev/null 2>&1; then
  go run ./notebooks/nbcheck -repo "$work/repo" -executed "$work/executed" -committed "$work/committed" || rc=1
fi

status_after=$(git status --porcelain)
if [ "$status_after" != "$status_before" ]; then
  echo "the browser check changed the checkout:" >&2
  diff <(echo "$status_before") <(echo "$status_after") >&2 || true
  rc=1
fi
exit "$rc"
