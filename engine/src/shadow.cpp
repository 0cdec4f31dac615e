#include "lockstep/engine/shadow.h"

#include <cstring>
#include <exception>
#include <functional>
#include <utility>

#include "lockstep/engine/check.h"

namespace lockstep::engine {

namespace {

constexpr char kMagic[8] = {'L', 'S', 'S', 'H', 'A', 'D', 'W', '1'};
constexpr std::size_t kHeader = sizeof(kMagic) + 1 + 8;  // magic, in-step flag, u64 LE chip under test's length

std::string what_of(std::exception_ptr p) {
  try {
    std::rethrow_exception(p);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an unknown error";
  }
}

}  // namespace

ShadowedBackend::ShadowedBackend(std::unique_ptr<chip::ChipBackend> dut, std::unique_ptr<chip::ChipBackend> shadow,
                                 std::string chip_file, std::string chip_hash)
    : dut_(std::move(dut)), shadow_(std::move(shadow)), chip_file_(std::move(chip_file)), chip_hash_(std::move(chip_hash)) {
  shadow_->set_num_streams(dut_->num_streams());
  grow(dut_->num_streams());
}

void ShadowedBackend::grow(std::size_t n) {
  if (in_step_.size() >= n) return;
  in_step_.resize(n, false);
  why_.resize(n, "the stream was never reset");
  last_.resize(n);
}

std::optional<chip::Token> ShadowedBackend::last_token(chip::StreamId s) const {
  return s < last_.size() ? last_[s] : std::nullopt;
}

std::string ShadowedBackend::out_of_step_why(chip::StreamId s) const {
  if (s >= why_.size()) return "no such stream";
  return in_step_[s] ? std::string() : why_[s];
}

void ShadowedBackend::out_of_step(chip::StreamId s, const std::string& why) {
  grow(s + 1);
  if (!in_step_[s]) return;  // the first reason stands
  in_step_[s] = false;
  why_[s] = why;
}

void ShadowedBackend::set_num_streams(std::size_t n) {
  dut_->set_num_streams(n);
  shadow_->set_num_streams(n);
  in_step_.assign(n, false);
  why_.assign(n, "the stream was never reset");
  last_.assign(n, std::nullopt);
}

void ShadowedBackend::reset(chip::StreamId s, const chip::GuestImage& image) {
  dut_->reset(s, image);
  grow(s + 1);
  last_[s].reset();
  try {
    shadow_->reset(s, image);
    in_step_[s] = true;
    why_[s].clear();
  } catch (...) {
    in_step_[s] = false;
    why_[s] = "the CPU executor could not reset the stream: " + what_of(std::current_exception());
  }
}

void ShadowedBackend::follow(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                             std::span<const chip::Token> inputs) {
  std::vector<chip::StreamId> ss;
  std::vector<std::uint32_t> cs;
  std::vector<chip::Token> in;
  std::uint32_t vocab = 0;
  try {
    vocab = shadow_->vocab_size();
  } catch (...) {
  }
  std::size_t at = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    const chip::StreamId s = streams[i];
    const std::uint32_t n = counts[i];
    grow(s + 1);
    bool ok = in_step_[s];
    for (std::uint32_t k = 0; ok && k < n; ++k) {
      if (inputs[at + k] >= vocab) {
        out_of_step(s, "input token id " + std::to_string(inputs[at + k]) + " is outside the chip file's vocabulary (" +
                           std::to_string(vocab) + ")");
        ok = false;
      }
    }
    if (ok && n > 0) {
      ss.push_back(s);
      cs.push_back(n);
      in.insert(in.end(), inputs.begin() + static_cast<std::ptrdiff_t>(at), inputs.begin() + static_cast<std::ptrdiff_t>(at + n));
    }
    at += n;
  }
  if (ss.empty()) return;
  std::vector<chip::Token> out(in.size(), 0);
  try {
    shadow_->teacher_forced_batch(ss, cs, in, out);
  } catch (...) {
    const std::string why = "the CPU executor failed: " + what_of(std::current_exception());
    for (chip::StreamId s : ss) out_of_step(s, why);
    return;
  }
  std::size_t end = 0;
  for (std::size_t i = 0; i < ss.size(); ++i) {
    end += cs[i];
    last_[ss[i]] = out[end - 1];
  }
}

void ShadowedBackend::dut_call(std::span<const chip::StreamId> streams, const std::function<void()>& call) {
  try {
    call();
  } catch (...) {
    for (chip::StreamId s : streams) out_of_step(s, "the chip under test failed during a step");
    throw;
  }
}

void ShadowedBackend::step_batch(std::span<const chip::StreamId> streams, std::span<const chip::Token> inputs,
                                 std::span<chip::Token> out) {
  dut_call(streams, [&] { dut_->step_batch(streams, inputs, out); });
  const std::vector<std::uint32_t> ones(streams.size(), 1);
  follow(streams, ones, inputs);
}

void ShadowedBackend::teacher_forced_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                                           std::span<const chip::Token> inputs, std::span<chip::Token> out) {
  dut_call(streams, [&] { dut_->teacher_forced_batch(streams, counts, inputs, out); });
  follow(streams, counts, inputs);
}

void ShadowedBackend::free_running_batch(std::span<const chip::StreamId> streams, std::span<const std::uint32_t> counts,
                                         std::span<const chip::Token> first, std::span<chip::Token> out) {
  dut_call(streams, [&] { dut_->free_running_batch(streams, counts, first, out); });
  // The shadow is fed what the chip under test was fed: its first token, then its own outputs.
  std::vector<chip::Token> inputs;
  inputs.reserve(out.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    for (std::uint32_t k = 0; k < counts[i]; ++k) inputs.push_back(k == 0 ? first[i] : out[at + k - 1]);
    at += counts[i];
  }
  follow(streams, counts, inputs);
}

void ShadowedBackend::free_running_batch_expecting(std::span<const chip::StreamId> streams,
                                                   std::span<const std::uint32_t> counts,
                                                   std::span<const chip::Token> first,
                                                   std::span<const chip::Token> expected, std::span<chip::Token> out) {
  dut_call(streams, [&] { dut_->free_running_batch_expecting(streams, counts, first, expected, out); });
  // Each stream's entries are the chip under test's up to and including its first miss; the
  // shadow follows that far (the engine restores the stream before it runs on after a miss).
  std::vector<std::uint32_t> made(counts.begin(), counts.end());
  std::vector<chip::Token> inputs;
  inputs.reserve(out.size());
  std::size_t at = 0;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    std::uint32_t n = 0;
    while (n < counts[i]) {
      inputs.push_back(n == 0 ? first[i] : out[at + n - 1]);
      ++n;
      if (out[at + n - 1] != expected[at + n - 1]) break;
    }
    made[i] = n;
    at += counts[i];
  }
  follow(streams, made, inputs);
}

std::vector<std::uint8_t> ShadowedBackend::save(chip::StreamId s) const {
  std::vector<std::uint8_t> d = dut_->save(s);
  std::vector<std::uint8_t> sh;
  bool ok = in_step(s);
  if (ok) {
    try {
      sh = shadow_->save(s);
    } catch (...) {
      ok = false;  // restored later as out of step
      sh.clear();
    }
  }
  std::vector<std::uint8_t> out(kHeader);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  out[sizeof(kMagic)] = ok ? 1 : 0;
  const std::uint64_t n = d.size();
  for (int b = 0; b < 8; ++b) out[sizeof(kMagic) + 1 + static_cast<std::size_t>(b)] = static_cast<std::uint8_t>(n >> (8 * b));
  out.insert(out.end(), d.begin(), d.end());
  out.insert(out.end(), sh.begin(), sh.end());
  return out;
}

void ShadowedBackend::restore(chip::StreamId s, const std::vector<std::uint8_t>& bytes) {
  grow(s + 1);
  std::uint64_t n = 0;
  const bool joined = bytes.size() >= kHeader && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0;
  if (joined)
    for (int b = 0; b < 8; ++b) n |= static_cast<std::uint64_t>(bytes[sizeof(kMagic) + 1 + static_cast<std::size_t>(b)]) << (8 * b);
  if (!joined || n > bytes.size() - kHeader) {
    dut_->restore(s, bytes);
    in_step_[s] = false;
    why_[s] = "the stream was restored from a snapshot without the chip file's state (one written without --dut-chip)";
    last_[s].reset();
    return;
  }
  const auto begin = bytes.begin() + static_cast<std::ptrdiff_t>(kHeader);
  dut_->restore(s, std::vector<std::uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(n)));
  last_[s].reset();
  if (bytes[sizeof(kMagic)] == 0) {
    in_step_[s] = false;
    why_[s] = "the snapshot it was restored from was taken while the CPU executor was out of step";
    return;
  }
  try {
    shadow_->restore(s, std::vector<std::uint8_t>(begin + static_cast<std::ptrdiff_t>(n), bytes.end()));
    in_step_[s] = true;
    why_[s].clear();
  } catch (...) {
    in_step_[s] = false;
    why_[s] = "the CPU executor could not restore its part of the snapshot: " + what_of(std::current_exception());
  }
}

void ShadowedBackend::set_probe_recording(bool on) {
  if (dut_->capabilities().probes) dut_->set_probe_recording(on);
  try {
    shadow_->set_probe_recording(on);
  } catch (...) {
  }
}

std::unique_ptr<chip::ChipBackend> with_chip_file(std::unique_ptr<chip::ChipBackend> dut, const std::string& chip_file,
                                                  const std::string& named_by) {
  if (chip_file.empty()) return dut;
  LoadedChip loaded = load_chip_or_built(chip_file, named_by);
  std::unique_ptr<chip::ChipBackend> shadow = make_backend("cpu", loaded.chip);
  if (dut->capabilities().probes) {
    chip::ProbeMap mine, theirs;
    try {
      theirs = dut->probe_map();
    } catch (const std::exception&) {
      // The chip under test's probe map fails later too, where attribution says so.
    }
    mine = shadow->probe_map();
    for (const chip::ProbeMap::Field& f : theirs.fields) {
      const chip::ProbeMap::Field* g = mine.find(f.name);
      if (!g || g->width != f.width) {
        throw CheckError(named_by + " " + chip_file + ": the chip under test's probe field '" + f.name + "' (" +
                         std::to_string(f.width) + " values) is " +
                         (g ? "of " + std::to_string(g->width) + " values" : std::string("not a field")) +
                         " in the chip file: it does not run that chip file");
      }
    }
    for (const chip::ProbePoint& p : theirs.points) {
      for (const std::string& name : p.fields) {
        try {
          chip::find_probe(*loaded.chip, p.layer, p.after, name);
        } catch (const std::exception&) {
          throw CheckError(named_by + " " + chip_file + ": the chip under test probes field '" + name + "' " +
                           (p.after == chip::Sublayer::Embed
                                ? std::string("after the embedding")
                                : "after layer " + std::to_string(p.layer) + "'s " + chip::to_string(p.after)) +
                           ", where the chip file has no such probe: it does not run that chip file");
        }
      }
    }
  }
  return std::make_unique<ShadowedBackend>(std::move(dut), std::move(shadow), chip_file, loaded.hash);
}

}  // namespace lockstep::engine
