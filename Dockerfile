# Artifact image: Go toolchain, the repository built (fgn on PATH, SIMD build), JupyterLab with
# the GoNB kernel opening notebooks/ on 0.0.0.0:8888, and the CUDA PJRT plugin for go-xla.
#
#   docker build -t fgn .
#   docker run --rm -p 8888:8888 fgn                                  # JupyterLab
#   docker run --rm --gpus all fgn fgn verify --profile full            # the whole artifact on the GPU
#   docker run --rm fgn fgn verify --profile quick                      # kick the tires on the CPU
#
# docker/entrypoint.sh selects GOMLX_BACKEND=xla:cuda when a GPU is visible and the pure-Go
# backend otherwise; pass -e GOMLX_BACKEND=... to choose yourself.
# The shared install steps (apt packages, goimports/gopls, GoNB) are .ci/install.sh, which CI
# runs too. No Docker engine runs in CI: experiments/artifact's tests lint this file.
FROM golang:1.27.4-bookworm

ARG JUPYTERLAB_VERSION=4.4.7
# jax-cuda13-pjrt wheel version the CUDA PJRT plugin is taken from (pypi.org, sha256-checked).
ARG JAX_PJRT_VERSION=0.8.0

# GOTOOLCHAIN is go.mod's toolchain line, the base image's Go: the image's go.env says local, and
# JupyterLab's GoNB kernel and every go command then build with exactly this toolchain.
ENV DEBIAN_FRONTEND=noninteractive \
    GOTOOLCHAIN=go1.27.4 \
    GOEXPERIMENT=simd \
    GOMLX_NO_AUTO_INSTALL=1 \
    PATH=/opt/jupyter/bin:/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# JupyterLab in its own virtual environment (pip: image only, CI has no pip access).
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv /opt/jupyter \
 && /opt/jupyter/bin/pip install --no-cache-dir "jupyterlab==${JUPYTERLAB_VERSION}"

WORKDIR /src/fgn
COPY go.mod go.sum ./
RUN go mod download
COPY . .

# Shared with CI: apt packages, gopls, goimports, GoNB and its kernel registration.
RUN bash .ci/install.sh

# The fgn binary (SIMD build, from ENV) and the CUDA PJRT plugin, installed explicitly: go-xla's
# auto-install skips it when no GPU is visible, as during a build.
RUN go build -o /usr/local/bin/fgn ./cmd/fgn \
 && go run ./cmd/pjrt-install -plugin cuda13 -version "${JAX_PJRT_VERSION}" -path /usr/local/lib/go-xla

EXPOSE 8888
ENTRYPOINT ["/src/fgn/docker/entrypoint.sh"]
CMD ["jupyter", "lab", "--ip=0.0.0.0", "--port=8888", "--no-browser", "--allow-root", "--notebook-dir=/src/fgn/notebooks"]
