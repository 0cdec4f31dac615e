// CudaExecutor: host side (streams, resets, checkpoints, probes); the step itself is
// step_math.hpp run by cuda_kernels.cu. Compiled only with CUDA (LOCKSTEP_HAVE_CUDA).
#include "lockstep/chip/cuda_executor.hpp"

#include <xxhash.h>

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "cuda_rt.hpp"
#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/gpu/chip_image.hpp"

namespace lockstep::chip {

namespace {

// Runs a CUDA call and turns its runtime_error into a one-line UsageError-free message.
template <class F>
auto cuda(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("cuda backend: ") + e.what());
  }
}

struct DevBuf {
  void* p = nullptr;
  DevBuf() = default;
  explicit DevBuf(std::size_t n) : p(gpu::rt::dev_alloc(n)) {}
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  DevBuf(DevBuf&& o) noexcept : p(o.p) { o.p = nullptr; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p, o.p);
    return *this;
  }
  ~DevBuf() {
    if (p) gpu::rt::dev_free(p);
  }
};

struct HostBuf {
  std::uint32_t* p = nullptr;
  std::size_t n = 0;
  void ensure(std::size_t want) {
    if (want <= n) return;
    if (p) gpu::rt::host_free(p);
    p = nullptr;
    p = static_cast<std::uint32_t*>(gpu::rt::host_alloc(want * 4));
    n = want;
  }
  ~HostBuf() {
    if (p) gpu::rt::host_free(p);
  }
};

struct Stream {
  DevBuf mem;
  gpu::StreamView view;
  std::uint64_t steps = 0;
  bool probes_valid = false;
};
}  // namespace

struct CudaExecutor::Impl {
  std::shared_ptr<const Chip> chip;
  std::unique_ptr<gpu::ChipImage> image;
  DevBuf arena;
  gpu::ChipView view;
  std::unique_ptr<gpu::StreamLayout> layout;
  std::vector<Stream> streams;
  DevBuf views;  // device array of StreamView
  HostBuf ids, inputs, outputs;
  std::uint64_t fingerprint = 0;
  bool record = false;

  Stream& stream(StreamId id) {
    if (id >= streams.size()) throw UsageError("stream " + std::to_string(id) + " out of range");
    return streams[id];
  }
  const Stream& stream(StreamId id) const {
    if (id >= streams.size()) throw UsageError("stream " + std::to_string(id) + " out of range");
    return streams[id];
  }
  void upload_views() {
    std::vector<gpu::StreamView> v;
    for (const Stream& s : streams) v.push_back(s.view);
    views = DevBuf(std::max<std::size_t>(v.size(), 1) * sizeof(gpu::StreamView));
    if (!v.empty()) gpu::rt::to_device(views.p, v.data(), v.size() * sizeof(gpu::StreamView));
  }
  // Validates, fills the pinned buffers and launches; returns outputs (n_blocks * n_steps).
  std::vector<Token> launch(std::span<const StreamId> ids_in, std::span<const Token> in, std::size_t n_steps,
                            bool free_run) {
    if (!chip) throw UsageError("CudaExecutor: no chip loaded");
    const std::size_t b = ids_in.size();
    std::vector<std::uint8_t> seen(streams.size(), 0);
    for (StreamId id : ids_in) {
      stream(id);
      if (seen[id]++) throw UsageError("step_batch: stream " + std::to_string(id) + " listed twice");
    }
    for (Token t : in)
      if (t >= chip->config.vocab_size)
        throw UsageError("step_batch: token " + std::to_string(t) + " outside vocabulary of " +
                         std::to_string(chip->config.vocab_size));
    if (b == 0 || n_steps == 0) return {};
    if (n_steps > 0xFFFFFFFFu || b > 0x7FFFFFFFu) throw UsageError("CudaExecutor: batch too large");
    cuda([&] {
      ids.ensure(b);
      inputs.ensure(in.size());
      outputs.ensure(b * n_steps);
      return 0;
    });
    std::memcpy(ids.p, ids_in.data(), b * 4);
    std::memcpy(inputs.p, in.data(), in.size() * 4);
    gpu::rt::Launch l;
    l.chip = view;
    l.streams = static_cast<const gpu::StreamView*>(views.p);
    l.ids = ids.p;
    l.inputs = inputs.p;
    l.outputs = outputs.p;
    l.n_blocks = static_cast<std::uint32_t>(b);
    l.n_steps = static_cast<std::uint32_t>(n_steps);
    l.free_run = free_run;
    l.record = record;
    cuda([&] {
      gpu::rt::run(l);
      return 0;
    });
    for (StreamId id : ids_in) {
      streams[id].steps += n_steps;
      streams[id].probes_valid = record;
    }
    return std::vector<Token>(outputs.p, outputs.p + b * n_steps);
  }
};

bool cuda_compiled() { return true; }

bool cuda_available(std::string* why) {
  std::string w;
  bool ok = false;
  try {
    ok = gpu::rt::device_available(w);
  } catch (const std::exception& e) {
    w = std::string("no CUDA device (") + e.what() + ")";
  }
  if (!ok && why) *why = w;
  return ok;
}

std::unique_ptr<ChipBackend> make_cuda_executor(std::shared_ptr<const Chip> chip, std::size_t num_streams) {
  return std::make_unique<CudaExecutor>(std::move(chip), num_streams);
}

CudaExecutor::CudaExecutor(std::shared_ptr<const Chip> chip, std::size_t num_streams)
    : impl_(std::make_unique<Impl>()) {
  std::string why;
  if (!cuda_available(&why)) throw UsageError("cuda backend: " + why);
  load(std::move(chip));
  set_num_streams(num_streams);
}

CudaExecutor::~CudaExecutor() = default;

void CudaExecutor::load(std::shared_ptr<const Chip> chip) {
  if (!chip) throw UsageError("CudaExecutor::load: null chip");
  chip->validate();
  Impl& I = *impl_;
  I.streams.clear();
  I.chip = std::move(chip);
  const std::string cfg = config_json(*I.chip);
  I.fingerprint = XXH3_64bits(cfg.data(), cfg.size());
  I.image = std::make_unique<gpu::ChipImage>(*I.chip);
  cuda([&] {
    I.arena = DevBuf(I.image->bytes());
    const std::vector<std::uint8_t> bytes = I.image->relocated(reinterpret_cast<std::uintptr_t>(I.arena.p), I.view);
    gpu::rt::to_device(I.arena.p, bytes.data(), bytes.size());
    I.layout = std::make_unique<gpu::StreamLayout>(I.view);
    I.upload_views();
    return 0;
  });
}

const Chip& CudaExecutor::chip() const {
  if (!impl_->chip) throw UsageError("CudaExecutor: no chip loaded");
  return *impl_->chip;
}

void CudaExecutor::set_num_streams(std::size_t n) {
  Impl& I = *impl_;
  if (!I.chip) throw UsageError("CudaExecutor: no chip loaded");
  cuda([&] {
    const std::size_t old = I.streams.size();
    I.streams.resize(n);
    for (std::size_t i = old; i < n; ++i) {
      I.streams[i].mem = DevBuf(I.layout->bytes);
      I.streams[i].view = I.layout->at(reinterpret_cast<std::uintptr_t>(I.streams[i].mem.p));
    }
    I.upload_views();
    return 0;
  });
}

std::size_t CudaExecutor::num_streams() const { return impl_->streams.size(); }

void CudaExecutor::reset(StreamId id, const GuestImage& image) {
  Stream& s = impl_->stream(id);
  std::vector<float> st(impl_->chip->state_size(), 0.0f);
  apply_initialisers(*impl_->chip, image, st);
  cuda([&] {
    gpu::rt::to_device(s.view.state, st.data(), st.size() * 4);
    return 0;
  });
  s.steps = 0;
  s.probes_valid = false;
}

void CudaExecutor::step_batch(std::span<const StreamId> ids, std::span<const Token> inputs, std::span<Token> out) {
  if (ids.size() != inputs.size() || ids.size() != out.size())
    throw UsageError("step_batch: streams, inputs and outputs differ in length");
  const std::vector<Token> r = impl_->launch(ids, inputs, 1, false);
  std::copy(r.begin(), r.end(), out.begin());
}

std::vector<Token> CudaExecutor::free_run_batch(std::span<const StreamId> ids, std::span<const Token> firsts,
                                                std::size_t n) {
  if (ids.size() != firsts.size()) throw UsageError("free_run_batch: streams and first tokens differ in length");
  return impl_->launch(ids, firsts, n, true);
}

std::vector<Token> CudaExecutor::forced_batch(std::span<const StreamId> ids, std::span<const Token> inputs,
                                              std::size_t n) {
  if (inputs.size() != ids.size() * n) throw UsageError("forced_batch: inputs must hold n tokens per stream");
  return impl_->launch(ids, inputs, n, false);
}

std::vector<float> CudaExecutor::state(StreamId id) const {
  const Stream& s = impl_->stream(id);
  std::vector<float> st(impl_->chip->state_size());
  cuda([&] {
    gpu::rt::to_host(st.data(), s.view.state, st.size() * 4);
    return 0;
  });
  return st;
}

std::uint64_t CudaExecutor::hash(StreamId id) const {
  const std::vector<float> st = state(id);
  return XXH3_64bits(st.data(), st.size() * sizeof(float));
}

std::vector<std::uint8_t> CudaExecutor::save(StreamId id) const {
  return encode_checkpoint(impl_->fingerprint, impl_->stream(id).steps, state(id));
}

void CudaExecutor::restore(StreamId id, const std::vector<std::uint8_t>& bytes) {
  Stream& s = impl_->stream(id);
  const DecodedCheckpoint d = decode_checkpoint(bytes, impl_->fingerprint, impl_->chip->state_size());
  cuda([&] {
    gpu::rt::to_device(s.view.state, d.state.data(), d.state.size() * 4);
    return 0;
  });
  s.steps = d.steps;
  s.probes_valid = false;
}

std::uint64_t CudaExecutor::steps(StreamId id) const { return impl_->stream(id).steps; }

void CudaExecutor::set_probe_recording(bool on) { impl_->record = on; }

std::vector<float> CudaExecutor::probe(StreamId id, int layer, Sublayer after, const std::string& field) const {
  const Stream& s = impl_->stream(id);
  if (!s.probes_valid) throw UsageError("probe: recording was off during the last step (or no step yet)");
  const auto [i, f] = find_probe(chip(), layer, after, field);
  std::vector<float> v(chip().find_field(field)->width);
  cuda([&] {
    gpu::rt::to_host(v.data(), s.view.probes + impl_->image->probe_offset(i, f), v.size() * 4);
    return 0;
  });
  return v;
}

void CudaExecutor::set_audit(bool on) {
  if (on) throw UsageError("the cuda backend has no numerics audit mode (use the cpu backend)");
}

std::optional<AuditViolation> CudaExecutor::audit_violation(StreamId id) const {
  impl_->stream(id);
  return std::nullopt;
}

std::string CudaExecutor::device() const {
  return cuda([] { return gpu::rt::device_name(); });
}

}  // namespace lockstep::chip
