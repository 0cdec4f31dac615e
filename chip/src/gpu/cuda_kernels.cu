// The CUDA executor's kernel: one thread block per stream runs whole steps of step_math.hpp
// (every layer, the unembedding and the argmax) without returning to the host, so a step is one
// launch for any number of streams, and n free-running steps are one launch too (docs/cuda.md).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <new>
#include <stdexcept>
#include <string>

#include "cuda_rt.hpp"

namespace lockstep::chip::gpu {

namespace {

constexpr unsigned kMaxThreads = 1024;

/// One thread block as the group of step_math.hpp.
struct DeviceGroup {
  std::uint32_t* off;
  std::uint32_t* aux;
  std::uint32_t* wsum;
  __device__ std::uint32_t rank() const { return threadIdx.x; }
  __device__ std::uint32_t size() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
  __device__ static void add(float* p, float v) { atomicAdd(p, v); }
  __device__ static std::uint32_t fetch_or(std::uint32_t* p, std::uint32_t v) { return atomicOr(p, v); }
  __device__ static std::uint32_t fetch_inc(std::uint32_t* p) { return atomicAdd(p, 1u); }
  __device__ static void max_u64(unsigned long long* p, unsigned long long v) { atomicMax(p, v); }
  __device__ static void min_u32(std::uint32_t* p, std::uint32_t v) { atomicMin(p, v); }
  __device__ std::uint32_t* scan_off() const { return off; }
  __device__ std::uint32_t* scan_aux() const { return aux; }
  // Block-wide exclusive prefix sum (blockDim.x a multiple of 32). The caller synchronises
  // before the next call (balanced_for does), so wsum is not overwritten while being read.
  __device__ std::uint32_t exclusive_scan(std::uint32_t v, std::uint32_t& total) const {
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    std::uint32_t x = v;
    for (unsigned o = 1; o < 32; o <<= 1) {
      const std::uint32_t y = __shfl_up_sync(0xFFFFFFFFu, x, o);
      if (lane >= o) x += y;
    }
    if (lane == 31) wsum[warp] = x;
    __syncthreads();
    if (warp == 0) {
      std::uint32_t w = lane < nw ? wsum[lane] : 0u;
      for (unsigned o = 1; o < 32; o <<= 1) {
        const std::uint32_t y = __shfl_up_sync(0xFFFFFFFFu, w, o);
        if (lane >= o) w += y;
      }
      if (lane < nw) wsum[lane] = w;
    }
    __syncthreads();
    total = wsum[nw - 1];
    return (warp ? wsum[warp - 1] : 0u) + x - v;
  }
};

/// Bytes of dynamic shared memory for the per-head vectors of a chip with `max_heads` heads in a
/// layer (beta, heads, readers, head_reads: 4 bytes each a head), or 0 when they do not fit the
/// budget (they then stay in the stream's device memory).
std::size_t head_smem_bytes(std::uint32_t max_heads) {
  constexpr std::size_t kBudget = 16 * 1024;  // with the 8.4 KB static: well under the 48 KB default
  const std::size_t b = static_cast<std::size_t>(max_heads) * 16u;
  return b <= kBudget ? b : 0;
}

// Launch bounds: up to 1,024 threads, at least one block an SM (run() sizes its blocks for at
// most 64 registers a thread: one block of 1,024 threads an SM, four of 256 or eight of 128).
// Without the minimum, ptxas (CUDA 13, sm_90) cut the kernel to 32 registers and spilled; with
// it: 52 registers, no spills.
__global__ void __launch_bounds__(kMaxThreads, 1)
    step_kernel(ChipView C, const StreamView* streams, const std::uint32_t* ids, const std::uint32_t* inputs,
                std::uint32_t* outputs, std::uint32_t n_steps, int free_run, int record, int heads_shared) {
  __shared__ std::uint32_t off[kMaxThreads], aux[kMaxThreads], wsum[32];
  __shared__ Counters c;
  __shared__ std::uint32_t next_tok;
  // the stream's buffers, read from shared memory rather than held in registers (raw storage:
  // a __shared__ variable gets no constructor; thread 0 copy-constructs it below)
  __shared__ alignas(alignof(StreamView)) unsigned char s_raw[sizeof(StreamView)];
  StreamView& s = *reinterpret_cast<StreamView*>(s_raw);
  extern __shared__ std::uint32_t head_smem[];  // (4 * max_heads) when heads_shared
  DeviceGroup g{off, aux, wsum};
  const std::uint32_t b = blockIdx.x;
  // ids, inputs and outputs are mapped host memory: one thread reads them and shares the values
  if (threadIdx.x == 0) {
    ::new (static_cast<void*>(s_raw)) StreamView(streams[ids[b]]);
    next_tok = free_run ? inputs[b] : inputs[static_cast<std::size_t>(b) * n_steps];
    if (heads_shared) {  // the layer's small per-head vectors in shared memory
      const std::uint32_t H = C.max_heads;
      s.beta = reinterpret_cast<float*>(head_smem);
      s.heads = head_smem + H;
      s.readers = head_smem + 2 * H;
      s.head_reads = head_smem + 3 * H;
    }
  }
  __syncthreads();
  if (heads_shared)
    for (std::uint32_t i = threadIdx.x; i < C.max_heads; i += blockDim.x) s.head_reads[i] = 0u;  // zero between uses
  std::uint32_t tok = next_tok;
  for (std::uint32_t t = 0; t < n_steps; ++t) {
    if (threadIdx.x == 0) c = Counters{};
    __syncthreads();
    const std::uint32_t out = step_stream(g, C, s, c, tok, record && t + 1 == n_steps);
    if (threadIdx.x == 0) {
      outputs[static_cast<std::size_t>(b) * n_steps + t] = out;
      next_tok = free_run ? out : (t + 1 < n_steps ? inputs[static_cast<std::size_t>(b) * n_steps + t + 1] : 0u);
    }
    __syncthreads();
    tok = next_tok;  // written again after step_stream's synchronisations: every thread has read it
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

}  // namespace

namespace rt {

bool device_available(std::string& why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    why = std::string("no CUDA device (CUDA runtime: ") + cudaGetErrorString(e) + ")";
    // The runtime says "driver version is insufficient" also when there is no driver at all (no
    // libcuda.so.1): say which (found by an outside tester: a machine without a GPU was pointed
    // at a driver upgrade).
    if (e == cudaErrorInsufficientDriver) {
      void* libcuda = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
      if (!libcuda) libcuda = ::dlopen("libcuda.so.1", RTLD_LAZY);
      if (!libcuda) why = "no CUDA device (no NVIDIA driver: libcuda.so.1 is not installed)";
      else ::dlclose(libcuda);
    }
    cudaGetLastError();
    return false;
  }
  if (n == 0) {
    why = "no CUDA device (CUDA runtime: none found)";
    return false;
  }
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  if (p.major < 7) {
    why = "no usable CUDA device (" + std::string(p.name) + " is older than sm_70)";
    return false;
  }
  return true;
}

std::string device_name() {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  return std::string(p.name) + " (sm_" + std::to_string(p.major * 10 + p.minor) + ")";
}

void* dev_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 16), "cudaMalloc");
  check(cudaMemset(p, 0, bytes ? bytes : 16), "cudaMemset");
  return p;
}
void dev_free(void* p) noexcept { cudaFree(p); }
void to_device(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
}
void to_host(void* dst, const void* src, std::size_t bytes) {
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
}
void* host_alloc(std::size_t bytes) {
  void* p = nullptr;
  check(cudaHostAlloc(&p, bytes ? bytes : 16, cudaHostAllocMapped), "cudaHostAlloc");
  return p;
}
void host_free(void* p) noexcept { cudaFreeHost(p); }

void run(const Launch& l) {
  if (l.n_blocks == 0 || l.n_steps == 0) return;
  // One block per stream. The kernel uses at most 64 registers a thread (launch bounds), so an
  // SM holds one block of 1024 threads, four of 256 or eight of 128: latency (wide blocks) while
  // every stream has an SM of its own, throughput (more streams resident) beyond.
  static const int sms = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      n = 1;
    return n > 0 ? n : 1;
  }();
  const std::uint32_t per_sm = (l.n_blocks + static_cast<std::uint32_t>(sms) - 1) / static_cast<std::uint32_t>(sms);
  const unsigned threads = per_sm <= 1 ? kMaxThreads : per_sm <= 4 ? 256u : 128u;
  const std::uint32_t *ids = nullptr, *inputs = nullptr;
  std::uint32_t* outputs = nullptr;
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(const_cast<std::uint32_t**>(&ids)),
                                 const_cast<std::uint32_t*>(l.ids), 0), "cudaHostGetDevicePointer");
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(const_cast<std::uint32_t**>(&inputs)),
                                 const_cast<std::uint32_t*>(l.inputs), 0), "cudaHostGetDevicePointer");
  check(cudaHostGetDevicePointer(reinterpret_cast<void**>(&outputs), l.outputs, 0), "cudaHostGetDevicePointer");
  const std::size_t smem = head_smem_bytes(l.chip.max_heads);
  step_kernel<<<l.n_blocks, threads, smem>>>(l.chip, l.streams, ids, inputs, outputs, l.n_steps, l.free_run ? 1 : 0,
                                             l.record ? 1 : 0, smem != 0 ? 1 : 0);
  check(cudaGetLastError(), "step kernel launch");
  check(cudaDeviceSynchronize(), "step kernel");
}

}  // namespace rt
}  // namespace lockstep::chip::gpu
