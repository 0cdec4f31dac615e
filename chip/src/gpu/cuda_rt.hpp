// Thin C++17 interface between the CUDA executor (cuda_executor.cpp, host compiler, C++20) and
// the one CUDA translation unit (cuda_kernels.cu, nvcc, C++17). Internal to chip/.
// Every function throws std::runtime_error with one line naming the CUDA call and its error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lockstep/chip/gpu/step_math.hpp"

namespace lockstep::chip::gpu::rt {

/// True when a CUDA device can be used; else false and `why` gets one line.
bool device_available(std::string& why);
/// Name and compute capability of the current device ("NVIDIA H200 (sm_90)").
std::string device_name();

void* dev_alloc(std::size_t bytes);  ///< cudaMalloc; zero-filled
void dev_free(void* p) noexcept;
void to_device(void* dst, const void* src, std::size_t bytes);
void to_host(void* dst, const void* src, std::size_t bytes);
void* host_alloc(std::size_t bytes);  ///< pinned, mapped host memory (the kernel reads/writes it)
void host_free(void* p) noexcept;

/// One launch: block b steps stream streams[ids[b]] n_steps times. Inputs: teacher-forced,
/// inputs[b * n_steps + t]; free-running (free_run), inputs[b] then its own outputs. Outputs:
/// outputs[b * n_steps + t]. Probes are recorded on the last step when `record`. ids, inputs and
/// outputs are host_alloc memory. Blocks synchronously until the kernel ends.
struct Launch {
  ChipView chip;
  const StreamView* streams = nullptr;  ///< device array
  const std::uint32_t* ids = nullptr;
  const std::uint32_t* inputs = nullptr;
  std::uint32_t* outputs = nullptr;
  std::uint32_t n_blocks = 0, n_steps = 1;
  bool free_run = false, record = false;
};
void run(const Launch& l);

}  // namespace lockstep::chip::gpu::rt
