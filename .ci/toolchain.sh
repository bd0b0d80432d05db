# Sourced by the CI scripts (.ci/run, .ci/install.sh, .ci/notebooks.sh, .ci/browser.sh): every go
# command they run, and the GoNB kernel .ci/install.sh registers, uses the toolchain of go.mod's
# toolchain line, in the build each command names: a GOEXPERIMENT inherited from the caller is
# dropped (the commands that use the SIMD build say GOEXPERIMENT=simd themselves).
# Machines of this kind (CI's, a newcomer's, the golang base image) set GOTOOLCHAIN=local in Go's
# go.env, under which a module declaring a newer Go than the installed one fails to build; an
# explicit GOTOOLCHAIN=goX.Y.Z overrides it and downloads that toolchain through the module proxy.
GOTOOLCHAIN=$(awk '$1 == "toolchain" { print $2 }' "$(dirname "${BASH_SOURCE[0]}")/../go.mod")
[ -n "$GOTOOLCHAIN" ] || { echo "go.mod has no toolchain line" >&2; exit 1; }
export GOTOOLCHAIN
unset GOEXPERIMENT
