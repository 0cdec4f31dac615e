// Mutants of a compiled chip (docs/quality.md, "Mutation score"): deliberate faults planted in
// a copy of a chip at weight, bias, activation, head and initialiser sites, and the mutation
// score of a test corpus (`lockstep mutate`). The generator knows the chip format only (no ISA):
// its sites come from an activity profile of a workload on the unmodified chip (the tokens it
// consumes and produces, the MLP units that fire, the heads that write).
//
// The same generator plants the faults of tests/engine/planted_faults_test.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/chip/backend.hpp"
#include "lockstep/chip/chip.hpp"
#include "lockstep/engine/engine.h"

namespace lockstep::mutate {

/// splitmix64: the same choices on every platform.
struct SplitMix64 {
  std::uint64_t s;
  std::uint64_t next() {
    std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform-ish in [0, n) (0 when n == 0).
  std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
  /// An element of a non-empty container (std::set iterates in order, so choices are stable).
  template <class C>
  auto pick(const C& c) {
    auto it = c.begin();
    std::advance(it, below(c.size()));
    return *it;
  }
};

/// What a workload exercises on the unmodified chip: where faults are worth planting.
struct ActivityProfile {
  std::set<std::uint32_t> consumed, produced;                     ///< token ids fed / predicted
  std::map<int, std::set<std::uint32_t>> live_units, dead_units;  ///< by layer: plain-MLP units
                                                                  ///< that fired (and have an
                                                                  ///< output) / never fired
  std::map<int, std::set<std::uint32_t>> live_heads;              ///< by layer: heads with beta != 0
  std::map<int, std::set<std::uint32_t>> written_dims;            ///< by layer: rows of W2 of live units

  /// The unit and head sets from a decision coverage record of the workload on `chip`
  /// (consumed/produced are left to the caller). Only plain (ReLU) MLPs get units.
  void add_decisions(const chip::Chip& chip, const chip::DecisionCoverage& cov);
};

/// One planted fault.
struct Mutant {
  std::string kind;     ///< e.g. "mlp.flip_sign_w1"
  std::string target;   ///< what exactly was corrupted, one line
  int layer = -1;       ///< the corrupted sublayer: layer (-1: embedding or unembedding)
  int sublayer = 0;     ///< 0 embedding, 1 memory block (heads, initialisers), 2 MLP, 3 unembedding
  std::shared_ptr<chip::Chip> chip;  ///< the corrupted copy (validated by the caller)
};

/// A fault kind: make() plants one fault of the kind at a site chosen with `rng` among those
/// the profile shows in use. Throws std::runtime_error (one line) when the chip or profile has
/// no site for it.
struct MutantKind {
  std::string name;
  std::function<Mutant(const chip::Chip&, const ActivityProfile&, SplitMix64&)> make;
};

/// The 26 kinds, in a fixed order: embed.{flip_sign,zero_column,zero_row,scale},
/// unembed.{zero_weight,flip_sign,bias}, mlp.{flip_sign_w1,zero_w1_row,drop_unit,dead_unit,
/// perturb_b1,perturb_b2,zero_w2_row,scale_w2,swap_fields}, head.{beta_zero,swap,k_activation,
/// q_activation,beta_activation,flip_sign_o,zero_v_row}, init.{wrong_address,off_by_one_byte,
/// const_value}.
const std::vector<MutantKind>& mutant_kinds();

/// The seed of mutant `index` of a run with seed `seed` (its site choices come from it alone).
std::uint64_t mutant_seed(std::uint64_t seed, std::uint64_t index);

// ------------------------------------------------------------------ mutation score

/// A workload: guests run teacher-forced through the engine, each for at most max_steps.
struct Workload {
  struct Part {
    std::vector<engine::Guest> guests;
    std::uint64_t max_steps = 0;
  };
  std::vector<Part> parts;
  std::size_t guests() const;
};

struct MutationOptions {
  std::uint64_t seed = 1;        ///< mutant i (i = first, first + 1, ...): kind kinds[i % kinds.size()], sites from mutant_seed(seed, i)
  std::uint64_t first = 0;       ///< index of the first mutant (repeat mutant K: first K, count 1)
  std::uint64_t count = 20;      ///< mutants
  std::vector<std::string> kinds;  ///< names of mutant_kinds() to use, in this order; empty: all, in mutant_kinds() order
  unsigned batch = 32;           ///< guests run together as streams
  std::string save_survivors;    ///< non-empty: each survivor's chip is written to DIR/mutant-<index>.chip
  /// Time budget (0: none). A mutant's corpus run may take timeout_factor times the unmodified
  /// chip's corpus run (wall clock, at least min_timeout_seconds); past it the mutant counts as
  /// caught ("timeout": the default suite would run past its test timeout; PIT and Stryker count
  /// a timed-out mutant as detected). Its oracle run gets the same multiple of the unmodified
  /// chip's oracle run; past that it counts as a survivor (whether it changes a token is not
  /// known, and the score is not raised on a guess).
  double timeout_factor = 0;
  double min_timeout_seconds = 30;
  /// Set (by SIGINT/SIGTERM) to stop: the mutant being scored is dropped, not counted, and
  /// run_mutants returns the mutants scored before it with MutationReport::interrupted set.
  const std::atomic<bool>* stop = nullptr;
};

/// One mutant's outcome.
struct MutantResult {
  std::uint64_t index = 0, seed = 0;
  std::string kind, target;
  bool planted = false;        ///< false: no site for the kind (`error` says why); not counted
  std::string error;
  bool caught = false;         ///< the corpus made the engine report a mismatch
  bool non_equivalent = false; ///< some token differs on the oracle workload (caught implies it)
  std::string caught_by;       ///< the first corpus guest with a mismatch
  std::string changed_in;      ///< the first oracle guest with a mismatch
  std::uint64_t changed_at = 0;  ///< the step of changed_in's first divergence (1-based, as the engine reports it)
  std::string saved;           ///< a survivor's chip file (MutationOptions::save_survivors)
  std::string save_error;      ///< why a survivor's chip could not be saved (the result stands)
  std::string timed_out;       ///< "corpus" or "oracle": that run went past its budget; empty: none did
  nlohmann::json to_json() const;
};

struct MutationReport {
  std::vector<MutantResult> mutants;
  std::uint64_t planted = 0, non_equivalent = 0, caught = 0;
  std::uint64_t timed_out = 0;  ///< mutants with MutantResult::timed_out set (counted in caught or as survivors)
  double corpus_seconds = 0, oracle_seconds = 0;  ///< the unmodified chip's runs (timeout_factor > 0; 0: not run)
  double seconds = 0;
  bool interrupted = false;  ///< MutationOptions::stop ended the run: `mutants` are those scored before it
  double score() const;  ///< caught / non_equivalent (1 when there is no non-equivalent mutant)
  nlohmann::json to_json() const;
};

/// The profile of `corpus` on `chip` (decision coverage of a CPU executor, tokens fed and
/// predicted teacher-forced). Throws std::runtime_error (one line) when the unmodified chip
/// itself mismatches on a corpus guest (the score would mean nothing).
ActivityProfile profile_workload(const std::shared_ptr<const chip::Chip>& chip, const Workload& corpus);

/// Coverage-guided distillation (as libFuzzer's -merge=1, over the chip's decision units):
/// runs `base`, then each guest of `pool` alone (teacher-forced, at most `max_steps` steps) on
/// `chip` with decision coverage, and returns the indices into `pool` of the guests that made
/// some MLP unit fire that neither `base` nor an earlier kept guest fired, in order. Throws
/// std::runtime_error (one line) when the unmodified chip mismatches on any of them. When `stop`
/// is raised it returns the indices kept so far (the caller sees the stop).
std::vector<std::size_t> distill_corpus(const std::shared_ptr<const chip::Chip>& chip, const Workload& base,
                                        const std::vector<engine::Guest>& pool, std::uint64_t max_steps,
                                        unsigned batch = 32, const std::atomic<bool>* stop = nullptr);

/// Plants `options.count` mutants of `chip` at sites of `profile` and runs each: first the
/// corpus (caught = the engine reports a mismatch in teacher-forced mode), then, when not
/// caught, the oracle (non-equivalent = a mismatch there); a caught mutant is non-equivalent.
/// `progress(result)` is called after each mutant. The unmodified chip first runs the corpus
/// and the oracle, timed (options.timeout_factor > 0 sets the budgets from those times); it
/// throws std::runtime_error (one line naming the workload, guest and step) when the unmodified
/// chip mismatches on either, and a stop during those runs returns a report with no mutant,
/// interrupted. Throws std::invalid_argument for an unknown kind name.
MutationReport run_mutants(const std::shared_ptr<const chip::Chip>& chip, const ActivityProfile& profile,
                           const Workload& corpus, const Workload& oracle, const MutationOptions& options,
                           const std::function<void(const MutantResult&)>& progress = {});

}  // namespace lockstep::mutate
