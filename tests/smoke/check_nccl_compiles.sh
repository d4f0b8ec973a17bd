#!/usr/bin/env bash
# The NCCL branch of the smoke runner (SHARDCHECK_SMOKE_NCCL) compiles from the same source as the
# gloo one: a syntax-and-template check against Debian's ProcessGroupNCCL.hpp and the CUDA toolkit
# headers of the machine image. No GPU and no CUDA LibTorch are needed, so this runs in CI; linking
# and running it need the GPU machine (docs/smoke.md "GPU / NCCL").
set -euo pipefail
src=${1:?usage: check_nccl_compiles.sh SOURCE_DIR [CUDA_INCLUDE_DIR]}
cuda=${2:-/usr/local/cuda/include}
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
# c10/cuda/impl/cuda_cmake_macros.h is generated at LibTorch build time; Debian's CPU package lacks it.
mkdir -p "$stub/c10/cuda/impl"
echo '#define C10_CUDA_BUILD_SHARED_LIBS' > "$stub/c10/cuda/impl/cuda_cmake_macros.h"
"${CXX:-g++}" -std=c++20 -fsyntax-only -DUSE_DISTRIBUTED -DUSE_C10D_GLOO -DUSE_C10D_NCCL -DSHARDCHECK_SMOKE_NCCL \
  -I"$src/src" -I"$src/include" -I/usr/include/torch/csrc/api/include -I"$stub" -I"$cuda" \
  "$src/src/smoke/c10d/c10d_comm.cpp"
echo "NCCL branch of src/smoke/c10d/c10d_comm.cpp compiles (syntax and templates) against $cuda"
