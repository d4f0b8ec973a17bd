# `shardcheck smoke`. Included at the end of the top-level CMakeLists.txt.
#
# shardcheck_smoke: the torch-free part (layouts, patterns, verification, bandwidth math, reports,
# launcher, --plan reader, --weights reader); always built and unit-tested, so the static tool and
# its tests never need LibTorch.
file(GLOB smoke_lib_sources CONFIGURE_DEPENDS src/smoke/*.cpp)
add_library(shardcheck_smoke STATIC ${smoke_lib_sources})
target_include_directories(shardcheck_smoke PUBLIC src)
target_link_libraries(shardcheck_smoke PUBLIC shardcheck_core)
if(TARGET shardcheck_tests)
  target_link_libraries(shardcheck_tests PRIVATE shardcheck_smoke)
endif()
if(SHARDCHECK_BUILD_FUZZ)
  # fuzz_small_inputs reads --plan files; no harness needs the LibTorch runner.
  target_link_libraries(fuzz_small_inputs PRIVATE shardcheck_smoke)
  return()
endif()

# shardcheck-smoke: the runner, only when LibTorch is found (Debian's libtorch-dev: CPU + gloo; or a
# CUDA LibTorch given as -DTorch_DIR=<site-packages>/torch/share/cmake/Torch, which adds NCCL).
option(SHARDCHECK_WITH_TORCH "Build shardcheck-smoke when LibTorch is found" ON)
if(SHARDCHECK_WITH_TORCH)
  find_package(Torch QUIET)
endif()
set(SHARDCHECK_SMOKE_BUILT OFF)
if(Torch_FOUND)
  set(SHARDCHECK_SMOKE_BUILT ON)
  # The one translation unit that includes torch headers (~20-30 s to compile), kept apart so the
  # rest of the runner compiles at normal speed and without torch's include paths.
  add_library(shardcheck_smoke_c10d OBJECT src/smoke/c10d/c10d_comm.cpp)
  target_include_directories(shardcheck_smoke_c10d PRIVATE src include ${TORCH_INCLUDE_DIRS})
  target_link_libraries(shardcheck_smoke_c10d PRIVATE fmt::fmt-header-only torch)
  # Debian's Caffe2 target exports USE_C10D_GLOO; say it again for LibTorch builds that do not.
  target_compile_definitions(shardcheck_smoke_c10d PRIVATE USE_DISTRIBUTED USE_C10D_GLOO)
  if(TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
    # A CUDA LibTorch: ProcessGroupNCCL on cuda:LOCAL_RANK (needs the CUDA toolkit headers).
    find_package(CUDAToolkit REQUIRED)
    target_compile_definitions(shardcheck_smoke_c10d PRIVATE SHARDCHECK_SMOKE_NCCL USE_C10D_NCCL)
    target_link_libraries(shardcheck_smoke_c10d PRIVATE CUDA::cudart)
    set(smoke_cuda_libs CUDA::cudart)
    message(STATUS "shardcheck-smoke: LibTorch ${Torch_VERSION} with CUDA: gloo and NCCL")
  else()
    message(STATUS "shardcheck-smoke: LibTorch ${Torch_VERSION} (CPU): gloo")
  endif()
  add_executable(shardcheck-smoke src/smoke/tool/main.cpp $<TARGET_OBJECTS:shardcheck_smoke_c10d>)
  target_include_directories(shardcheck-smoke PRIVATE src)
  target_link_libraries(shardcheck-smoke PRIVATE shardcheck_smoke shardcheck_cli_flags shardcheck_core CLI11::CLI11 ${yaml_cpp}
                        ${TORCH_LIBRARIES} ${smoke_cuda_libs})
  install(TARGETS shardcheck-smoke COMPONENT smoke)
  if(SHARDCHECK_BUILD_TESTS)
    # Real gloo process groups on CPU: world sizes 1-4, --weights, the shifted shard, every fault.
    # Under ASan+UBSan (which runs clean with the uninstrumented Debian LibTorch) every rank starts
    # ~5x slower, so that build runs the quick subset: W=3 FSDP1/FSDP2, --weights, shift, two faults.
    set(smoke_quick "")
    if(SHARDCHECK_SANITIZE)
      set(smoke_quick --quick)
    endif()
    add_test(NAME smoke COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/tests/smoke/run_smoke_tests.py
             --binary $<TARGET_FILE:shardcheck> --source ${CMAKE_CURRENT_SOURCE_DIR}
             --work ${CMAKE_CURRENT_BINARY_DIR}/smoke-work ${smoke_quick})
    set_tests_properties(smoke PROPERTIES TIMEOUT 900)
    # No GPU here, but the CUDA toolkit headers are in the image: the NCCL branch must at least
    # compile from the same source (release build only; a sanitizer changes nothing for -fsyntax-only).
    set(SHARDCHECK_CUDA_INCLUDE "/usr/local/cuda/include" CACHE PATH "CUDA toolkit headers for the NCCL compile check")
    if(NOT SHARDCHECK_SANITIZE AND EXISTS "${SHARDCHECK_CUDA_INCLUDE}/cuda_runtime_api.h"
       AND EXISTS "/usr/include/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp")
      add_test(NAME smoke_nccl_compiles COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/tests/smoke/check_nccl_compiles.sh
               ${CMAKE_CURRENT_SOURCE_DIR} ${SHARDCHECK_CUDA_INCLUDE})
      set_tests_properties(smoke_nccl_compiles PROPERTIES ENVIRONMENT "CXX=${CMAKE_CXX_COMPILER}")
    endif()
  endif()
else()
  message(STATUS "shardcheck-smoke: LibTorch not found, not built (scripts/setup.sh installs libtorch-dev)")
endif()
