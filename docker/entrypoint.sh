#!/bin/sh
# Entry point of the artifact image: picks the backend when GOMLX_BACKEND is unset — the CUDA PJRT
# plugin installed at build time when a GPU is visible (docker run --gpus all), otherwise the
# pure-Go backend — then runs the command (JupyterLab by default).
if [ -z "${GOMLX_BACKEND:-}" ] && [ -e /dev/nvidiactl ]; then
  export GOMLX_BACKEND=xla:cuda
fi
exec "$@"
