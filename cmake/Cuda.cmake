# Optional CUDA support.
#
# Result: LOCKSTEP_HAVE_CUDA (ON/OFF, also in the cache for inspection).
# CUDA is enabled only when LOCKSTEP_CUDA is ON *and* check_language(CUDA) can
# build a test project with nvcc; any failure leaves LOCKSTEP_HAVE_CUDA OFF with a
# message, and nothing else in the tree may require CUDA.  Code that uses CUDA
# must be guarded with `if(LOCKSTEP_HAVE_CUDA)`.
#
# nvcc is often not on PATH (e.g. /usr/local/cuda/bin/nvcc).  We point the CUDACXX
# environment variable at it rather than setting CMAKE_CUDA_COMPILER, because
# check_language() skips its test when CMAKE_CUDA_COMPILER is already defined and
# enable_language() failures are fatal.
set(LOCKSTEP_HAVE_CUDA OFF)
if(LOCKSTEP_CUDA AND DEFINED CMAKE_CUDA_COMPILER AND CMAKE_CUDA_COMPILER
   AND NOT EXISTS "${CMAKE_CUDA_COMPILER}")
  # check_language() trusts a preset compiler and enable_language() would then
  # fail the whole configure: fall back instead.
  message(STATUS "CUDA disabled: CMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER} does not exist")
elseif(LOCKSTEP_CUDA)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(LOCKSTEP_NVCC nvcc HINTS /usr/local/cuda/bin NO_CACHE)
    if(LOCKSTEP_NVCC)
      set(ENV{CUDACXX} "${LOCKSTEP_NVCC}")
    endif()
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # sm_90 (H100/H200) machine code plus compute_90 PTX for newer GPUs to JIT.
    set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual")
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    # C++17 for device code: CMake 3.25 does not know nvcc 13's C++20 flags
    # (CUDA_STANDARD 20 fails at generate time).
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(LOCKSTEP_HAVE_CUDA ON)
    message(STATUS "CUDA enabled: ${CMAKE_CUDA_COMPILER} (${CMAKE_CUDA_COMPILER_VERSION}), "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES}")
  else()
    message(STATUS "CUDA disabled: no working nvcc found (set CUDACXX or "
                   "CMAKE_CUDA_COMPILER, or -DLOCKSTEP_CUDA=OFF to skip the check)")
  endif()
elseif(NOT LOCKSTEP_CUDA)
  message(STATUS "CUDA disabled: LOCKSTEP_CUDA=OFF")
endif()
set(LOCKSTEP_HAVE_CUDA ${LOCKSTEP_HAVE_CUDA} CACHE INTERNAL "Whether the CUDA language is enabled")
