// How many steps the engine asks a chip for in one call (docs/spec/dut-protocol.md §5).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>

namespace lockstep::engine {

/// Sizes the engine's chip calls: steps per stream of one teacher_forced_batch /
/// free_running_batch call, from 1 to `limit` (docs/spec/dut-protocol.md §5). A call is made
/// larger while one takes under min(0.1 s, deadline / 512) and smaller past min(0.5 s,
/// deadline / 128), so that a chip under test whose --dut-timeout (`deadline`) bounds each call
/// can slow down about 128 times from one call to the next before a call outlasts it. With a
/// deadline the first call holds about 64 stream-steps in all (64 steps of one stream, 2 of each
/// of 32), without one 64 steps a stream. A smaller call is not made when halving did not make
/// calls faster (a chip whose time is mostly a fixed latency per request: halving again would
/// only collapse it to one step a request; found by an outside tester).
///
/// `limit`: the most steps a stream per call (>= 1; 0 is read as 1); `deadline_s`: seconds within
/// which a call must be answered (ChipBackend::answer_deadline_s(), 0: none); `streams`: streams
/// in the first call. Never throws.
class CallSizer {
 public:
  CallSizer(std::uint32_t limit, double deadline_s, std::size_t streams)
      : limit_(std::max<std::uint32_t>(1, limit)),
        grow_below_(deadline_s > 0 ? std::min(0.1, deadline_s / 512) : 0.1),
        shrink_above_(deadline_s > 0 ? std::min(0.5, deadline_s / 128) : 0.5) {
    std::uint32_t first = 64;
    if (deadline_s > 0 && streams > 1)
      first = static_cast<std::uint32_t>(std::max<std::size_t>(1, 64 / std::min<std::size_t>(streams, 64)));
    steps_ = std::min(limit_, first);
  }
  /// Steps per stream of the next call.
  std::uint32_t steps() const { return steps_; }
  /// The last call took `seconds` (with the reference's work beside it); its longest stream ran
  /// `ran` steps (0: steps()). A call cut short (ran < steps(): the run's end, a checkpoint or a
  /// snapshot boundary) counts as ran steps' time scaled up to steps() for growing, and is not
  /// kept as the time of steps() (a short call read as a full one made calls grow past what the
  /// chip had shown it could answer in time).
  void took(double seconds, std::uint32_t ran = 0) {
    if (ran > 0 && ran < steps_) {
      if (seconds * steps_ / ran < grow_below_ && steps_ < limit_) steps_ = std::min(limit_, steps_ * 2);
      else if (seconds > shrink_above_ && steps_ > 1) steps_ /= 2;
      return;
    }
    took_at_[steps_] = seconds;
    if (seconds < grow_below_ && steps_ < limit_) {
      steps_ = std::min(limit_, steps_ * 2);
    } else if (seconds > shrink_above_ && steps_ > 1) {
      // the last call at twice this size, which was halved to this one: when this one took about
      // as long, time is not in the steps, and halving again would not help either
      const auto twice = took_at_.find(steps_ * 2);
      if (twice == took_at_.end() || seconds < 0.75 * twice->second) steps_ /= 2;
    }
  }

 private:
  std::uint32_t limit_;
  double grow_below_, shrink_above_;
  std::uint32_t steps_ = 64;
  std::map<std::uint32_t, double> took_at_;  // the last call's time at each size
};

}  // namespace lockstep::engine
