// Builds without CUDA: the CUDA executor's factory says so in one line.
#include "lockstep/chip/cuda_executor.hpp"

namespace lockstep::chip {

bool cuda_compiled() { return false; }

bool cuda_available(std::string* why) {
  if (why) *why = "this build has no CUDA support (configure where nvcc works)";
  return false;
}

std::unique_ptr<ChipBackend> make_cuda_executor(std::shared_ptr<const Chip>, std::size_t) {
  throw UsageError("cuda backend: this build has no CUDA support (configure where nvcc works)");
}

}  // namespace lockstep::chip
