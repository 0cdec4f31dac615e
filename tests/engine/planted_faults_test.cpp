// Planted faults (issue 10, acceptance): deliberate corruptions of the built
// RV32 chip must be caught by the harness at exactly the first step where the
// corrupted chip's token stream differs from the reference's, with the layer
// attribution naming the first probe point that sees the fault; a fault that
// changes no token must give "no divergence".
//
// For each fault kind (the mutation generator's, mutate::mutant_kinds() in
// mutate/) a target (an embedding column, an MLP unit that fires in
// the guest, a memory head that writes, an initialiser...) is chosen from a
// seeded generator (LOCKSTEP_FAULT_SEED, printed with every failure) over an
// activity profile of the guest on the unmodified chip.  A copy of the chip is
// corrupted in memory; then, for teacher-forced and free-running mode:
//
//   1. the test finds the first differing step by itself, running the
//      corrupted chip on a plain CpuExecutor and comparing with the reference
//      trace (the oracle; no engine code involved);
//   2. the engine runs the same check through engine::run_check (what
//      `lockstep run` uses) and must report exactly that step, or no
//      divergence when the oracle found none;
//   3. the attribution is checked against a differential oracle: the original
//      and the corrupted chip are replayed teacher-forced to the divergent step
//      with probe recording on, and the first probe point (execution order)
//      whose convention fields (docs/engine.md §3) differ between the two is
//      the one the harness must name.  Independently, it must never name a
//      point before the corrupted sublayer (nothing before it can change), and
//      when the corrupted sublayer is itself a probe point whose convention
//      fields see the fault, it must name that sublayer.
//
// Why a fault in layer L usually shows at another layer: the built chip's
// probe map has convention fields (kind/payload of the input and next token)
// only after the embedding and after layer 17's MLP (next_kind,
// next_payload_lo/hi); its other probe fields (rd, class, alu_a, ...) are
// internal and cannot be derived from the reference's tokens, so the engine
// ignores them.  A fault in layers 0..17 is therefore first visible in layer
// 17's next-token fields.  Layer 18's MLP writes next_payload_lo/hi after that
// probe point, so a fault there (or an upstream fault that shows only through
// layer 18) leaves every probed field agreeing: the engine then says
// "unprobed", naming layer 18 (mlp) as the first unprobed writer, rather than
// blaming the unembedding; an unembedding fault gets the same answer for the
// same reason (the probe map cannot separate layer 18 from the unembedding).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/mutate/mutants.h"
#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/engine/check.h"
#include "lockstep/engine/engine.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/tokens.h"
#include "test_guest.h"

namespace lockstep::engine {
namespace {

namespace fs = std::filesystem;
using chip::Chip;
using chip::LinearMap;
using chip::SparseMatrix;
using chip::Sublayer;

constexpr std::uint64_t kDefaultSeed = 0x10C5'7E9F'A017ull;

std::uint64_t seed() {
  if (const char* s = std::getenv("LOCKSTEP_FAULT_SEED")) return std::strtoull(s, nullptr, 0);
  return kDefaultSeed;
}

using Rng = mutate::SplitMix64;

// ------------------------------------------------------------ guests

std::optional<Guest> find_guest(const std::string& name) {
  std::vector<fs::path> dirs;
  if (const char* e = std::getenv("LOCKSTEP_GUEST_DIR")) dirs.emplace_back(e);
  dirs.push_back(fs::path(LOCKSTEP_BINARY_DIR) / "guests");
  dirs.push_back(fs::path(LOCKSTEP_SOURCE_DIR) / "build" / "guests");
  for (const fs::path& d : dirs)
    if (fs::exists(d / (name + ".elf"))) return read_guest(d / (name + ".elf"));
  return std::nullopt;
}

// ------------------------------------------------------------ probe points

// Position of a sublayer in execution order: embedding, layer l memory,
// layer l MLP, ..., unembedding.
struct Pos {
  int layer = -1;
  int sub = 0;  // 0 embed, 1 memory, 2 mlp, 3 unembedding
  auto operator<=>(const Pos&) const = default;
  std::string text() const {
    if (sub == 0) return "embedding";
    if (sub == 3) return "unembedding";
    return "layer " + std::to_string(layer) + (sub == 1 ? " (memory)" : " (mlp)");
  }
};

Pos pos_of(int layer, Sublayer after) {
  return after == Sublayer::Embed ? Pos{-1, 0} : Pos{layer, after == Sublayer::Memory ? 1 : 2};
}

// Convention field names (docs/engine.md §3): [in_|next_](kind|payload)[suffix].
bool convention_field(const std::string& name) {
  std::string rest = name;
  if (rest.rfind("next_", 0) == 0) rest = rest.substr(5);
  else if (rest.rfind("in_", 0) == 0) rest = rest.substr(3);
  std::string suffix;
  if (rest.rfind("kind", 0) == 0) suffix = rest.substr(4);
  else if (rest.rfind("payload", 0) == 0) suffix = rest.substr(7);
  else return false;
  for (const char* s : {"", "_oh", "_bits", "_nib", "_nibbles", "_lo", "_hi"})
    if (suffix == s) return !(rest.rfind("kind", 0) == 0 && (suffix == "_lo" || suffix == "_hi"));
  return false;
}

struct ConventionPoint {
  Pos pos;
  int layer;
  Sublayer after;
  std::vector<std::string> fields;
};

// Residual dimensions each sublayer writes (heads' o maps, MLP w2, with biases).
std::map<Pos, std::vector<bool>> written_by(const Chip& c) {
  std::map<Pos, std::vector<bool>> w;
  auto mark = [&](std::vector<bool>& d, const LinearMap& m) {
    for (std::uint32_t r : m.w.row_idx) d[r] = true;
    for (std::uint32_t r = 0; r < m.bias.size(); ++r)
      if (m.bias[r] != 0.0f) d[r] = true;
  };
  for (int l = 0; l < static_cast<int>(c.layers.size()); ++l) {
    auto& mem = w[Pos{l, 1}];
    mem.assign(c.config.d_model, false);
    for (const chip::Head& h : c.layers[l].heads) mark(mem, h.o);
    auto& mlp = w[Pos{l, 2}];
    mlp.assign(c.config.d_model, false);
    if (c.layers[l].mlp.kind != chip::MlpKind::None) mark(mlp, c.layers[l].mlp.w2);
  }
  return w;
}

// The convention fields the harness can compare with the reference (docs/engine.md §3): a
// next-token field only where it is final (no later sublayer writes into it), an input-token
// field only where no sublayer has written into it yet.
std::vector<ConventionPoint> convention_points(const Chip& c) {
  const auto written = written_by(c);
  auto writes = [&](const Pos& s, const chip::Field& f) {
    for (std::uint32_t d = f.offset; d < f.offset + f.width; ++d)
      if (written.at(s)[d]) return true;
    return false;
  };
  std::vector<ConventionPoint> out;
  for (const chip::ProbePoint& p : c.config.probes) {
    ConventionPoint cp{pos_of(p.layer, p.after), p.layer, p.after, {}};
    for (const std::string& name : p.fields) {
      const chip::Field* f = c.find_field(name);
      if (!f || !convention_field(name)) continue;
      bool ok = true;
      for (const auto& [s, dims] : written)
        if (name.rfind("next_", 0) == 0 ? (cp.pos < s && writes(s, *f)) : (s <= cp.pos && writes(s, *f))) ok = false;
      if (ok) cp.fields.push_back(name);
    }
    if (!cp.fields.empty()) out.push_back(cp);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.pos < b.pos; });
  return out;
}

// ------------------------------------------------------------ activity profile

// What the guest exercises on the unmodified chip (teacher-forced): the
// tokens consumed and produced, the MLP units that fire, the heads whose beta
// is positive, and the residual dimensions the MLPs write.
struct Profile : mutate::ActivityProfile {
  std::vector<std::uint32_t> trace;  // t_1..t_N
};

std::vector<float> pre_activation(const LinearMap& m, const std::vector<float>& x) {
  std::vector<float> y = m.bias;
  y.resize(m.w.rows, 0.0f);
  for (std::uint32_t c = 0; c < m.w.cols; ++c) {
    if (x[c] == 0.0f) continue;
    for (std::uint32_t i = m.w.col_ptr[c]; i < m.w.col_ptr[c + 1]; ++i) y[m.w.row_idx[i]] += m.w.values[i] * x[c];
  }
  return y;
}

Profile profile(const Chip& original, const Guest& g) {
  Profile p;
  p.trace = testing::reference_trace(g);
  p.consumed.insert(format::kStartToken);
  for (std::size_t i = 0; i + 1 < p.trace.size(); ++i) p.consumed.insert(p.trace[i]);
  p.produced.insert(p.trace.begin(), p.trace.end());
  // A copy whose probe map records every field at every point.
  auto probed = std::make_shared<Chip>(original);
  std::vector<std::string> all;
  for (const chip::Field& f : original.config.fields) all.push_back(f.name);
  probed->config.probes.clear();
  probed->config.probes.push_back({-1, Sublayer::Embed, all});
  for (int l = 0; l < static_cast<int>(original.layers.size()); ++l) {
    probed->config.probes.push_back({l, Sublayer::Memory, all});
    probed->config.probes.push_back({l, Sublayer::Mlp, all});
  }
  chip::CpuExecutor ex(probed, 1);
  ex.reset(0, to_chip_image(g.image));
  ex.set_probe_recording(true);
  const std::uint32_t D = original.config.d_model;
  auto residual = [&](int layer, Sublayer after) {
    std::vector<float> x(D, 0.0f);
    for (const chip::Field& f : original.config.fields) {
      const auto v = ex.probe(0, layer, after, f.name);
      std::copy(v.begin(), v.end(), x.begin() + f.offset);
    }
    return x;
  };
  std::map<int, std::set<std::uint32_t>> fired;
  std::uint32_t in = format::kStartToken;
  for (std::uint32_t t : p.trace) {
    ex.step(0, in);
    in = t;
    std::vector<float> x = residual(-1, Sublayer::Embed);
    for (int l = 0; l < static_cast<int>(original.layers.size()); ++l) {
      const chip::Layer& L = original.layers[static_cast<std::size_t>(l)];
      for (std::uint32_t h = 0; h < L.heads.size(); ++h) {
        float beta = pre_activation(L.heads[h].beta, x)[0];
        if (L.heads[h].beta.act == chip::Activation::Relu) beta = std::max(beta, 0.0f);
        if (beta != 0.0f) p.live_heads[l].insert(h);
      }
      x = residual(l, Sublayer::Memory);
      if (L.mlp.kind == chip::MlpKind::Relu) {
        const auto pre = pre_activation(L.mlp.w1, x);
        for (std::uint32_t j = 0; j < pre.size(); ++j)
          if (pre[j] > 0.0f) fired[l].insert(j);
      }
      x = residual(l, Sublayer::Mlp);
    }
  }
  for (int l = 0; l < static_cast<int>(original.layers.size()); ++l) {
    const chip::Mlp& m = original.layers[static_cast<std::size_t>(l)].mlp;
    if (m.kind != chip::MlpKind::Relu) continue;
    for (std::uint32_t j = 0; j < m.hidden; ++j) {
      if (fired[l].count(j)) {
        if (m.w2.w.col_ptr[j + 1] > m.w2.w.col_ptr[j]) p.live_units[l].insert(j);
        for (std::uint32_t i = m.w2.w.col_ptr[j]; i < m.w2.w.col_ptr[j + 1]; ++i) p.written_dims[l].insert(m.w2.w.row_idx[i]);
      } else {
        p.dead_units[l].insert(j);
      }
    }
  }
  return p;
}

// ------------------------------------------------------------ faults

// The fault kinds are the mutation generator's (mutate/, mutate::mutant_kinds()).
struct Fault {
  std::string kind;
  std::string target;  // what exactly was corrupted
  Pos site;            // the corrupted sublayer
  std::shared_ptr<Chip> chip;
};

const std::vector<mutate::MutantKind>& fault_kinds() { return mutate::mutant_kinds(); }

// ------------------------------------------------------------ the oracle

// First step (1-based) where the chip's stream differs from the trace, or 0.
std::uint64_t first_difference(std::shared_ptr<const Chip> c, const Guest& g, const std::vector<std::uint32_t>& trace,
                               Mode mode) {
  chip::CpuExecutor ex(c, 1);
  ex.reset(0, to_chip_image(g.image));
  std::uint32_t in = format::kStartToken;
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const std::uint32_t out = ex.step(0, in);
    if (out != trace[i]) return i + 1;
    in = mode == Mode::kForced ? trace[i] : out;  // equal here anyway
  }
  return 0;
}

// Probe values of every convention point at step n (teacher-forced).
std::vector<std::vector<std::vector<float>>> probe_at(std::shared_ptr<const Chip> c, const Guest& g,
                                                      const std::vector<std::uint32_t>& trace, std::uint64_t n,
                                                      const std::vector<ConventionPoint>& points) {
  chip::CpuExecutor ex(c, 1);
  ex.reset(0, to_chip_image(g.image));
  std::uint32_t in = format::kStartToken;
  for (std::uint64_t i = 1; i < n; ++i) {
    ex.step(0, in);
    in = trace[i - 1];
  }
  ex.set_probe_recording(true);
  ex.step(0, in);
  std::vector<std::vector<std::vector<float>>> out;
  for (const ConventionPoint& p : points) {
    out.emplace_back();
    for (const std::string& f : p.fields) out.back().push_back(ex.probe(0, p.layer, p.after, f));
  }
  return out;
}

struct Tally {
  int faults = 0, runs = 0, diverged = 0, exact = 0, at_site = 0, attributed = 0;
  std::size_t candidates = 0;  // summed over the attributed runs
  std::map<std::string, int> statuses;
};

// Runs one fault in one mode through the engine and checks it.
void check_fault(const Fault& f, const Guest& g, const Profile& p, std::shared_ptr<const Chip> original,
                 const std::vector<ConventionPoint>& points, bool covered, Mode mode, Tally& tally) {
  SCOPED_TRACE("fault " + f.kind + " [" + f.target + "], mode " + std::string(to_string(mode)) + ", guest " + g.name);
  const std::uint64_t expect_step = first_difference(f.chip, g, p.trace, mode);

  chip::CpuExecutor backend(f.chip, 1);
  CheckRequest req;
  req.the_case.guest_name = g.name;
  req.the_case.guest_path = g.path;
  req.the_case.mode = mode;
  req.backend = &backend;
  req.options.classify_window = 64;
  std::ostringstream err;
  const CheckOutcome out = run_check(req, err);
  const RunResult& r = out.result;
  ASSERT_EQ(r.streams.size(), 1u);
  const StreamResult& s = r.streams[0];
  ++tally.runs;
  std::cout << "[ fault    ] " << to_string(mode) << " " << f.kind << ": " << f.target << " -> ";
  if (expect_step == 0) {
    ++tally.exact;
    std::cout << "no token changed; harness: " << (s.divergence ? "divergence at step " + std::to_string(s.divergence->step) : "exact") << "\n";
    EXPECT_FALSE(s.divergence.has_value()) << "cried wolf: " << s.divergence->to_text();
    EXPECT_EQ(r.mismatches, 0u);
    EXPECT_EQ(s.steps, p.trace.size());
    EXPECT_EQ(s.chip_digest, s.digest);
    return;
  }
  ++tally.diverged;
  ASSERT_TRUE(s.divergence.has_value()) << "the stream differs at step " << expect_step << " but the harness reports no divergence";
  const Divergence& d = *s.divergence;
  EXPECT_EQ(d.step, expect_step) << d.to_text();
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(d.expected, p.trace[expect_step - 1]);
  EXPECT_EQ(d.fault == FaultClass::kNotReproduced, false) << d.fault_text;

  // The attribution: the first convention probe point where the corrupted
  // chip's fields differ from the original chip's at that step.
  const auto good = probe_at(original, g, p.trace, expect_step, points);
  const auto bad = probe_at(f.chip, g, p.trace, expect_step, points);
  std::optional<std::size_t> first;
  for (std::size_t i = 0; i < points.size() && !first; ++i)
    if (good[i] != bad[i]) first = i;
  const Attribution& a = d.attribution;
  tally.statuses[a.status]++;
  // The fields the engine compared are exactly the comparable ones (a skipped
  // field says why), up to the one that disagreed.
  for (const ProbeCheck& c : a.checks) {
    bool comparable = false;
    for (const ConventionPoint& cp : points)
      if (cp.layer == (c.layer < 0 ? cp.layer : c.layer) && cp.pos == pos_of(c.layer, c.after == "embed" ? Sublayer::Embed : c.after == "memory" ? Sublayer::Memory : Sublayer::Mlp))
        comparable = comparable || std::find(cp.fields.begin(), cp.fields.end(), c.field) != cp.fields.end();
    EXPECT_EQ(c.skipped.empty(), comparable) << "layer " << c.layer << " " << c.after << " field " << c.field << ": " << c.skipped;
  }
  Pos named{a.layer, a.sublayer == "memory" ? 1 : a.sublayer == "mlp" ? 2 : a.status == "embedding" ? 0 : 3};
  if (a.status == "embedding") named = {-1, 0};
  std::cout << "step " << d.step << " " << d.field << " " << d.expected_text << " -> " << d.actual_text << "; attribution "
            << a.status << ": " << a.text << "\n";
  if (first) {
    const ConventionPoint& cp = points[*first];
    EXPECT_EQ(a.status, cp.pos.sub == 0 ? "embedding" : "layer") << a.text;
    EXPECT_EQ(named, cp.pos) << "expected " << cp.pos.text() << ", harness: " << a.text;
    // Independently of the oracle: never a point before the corrupted
    // sublayer (for an initialiser: the memory block of its layer), since
    // nothing before it can change.
    EXPECT_GE(named, f.site) << "blames " << named.text() << " before the corrupted " << f.site.text() << ": " << a.text;
    // The last agreeing probe point is one before the first disagreeing one (found by an outside
    // tester: it named the disagreeing point itself when another of its fields agreed)
    EXPECT_NE(a.last_agreeing, a.first_disagreeing) << a.text;
  } else {
    // Every comparable field agrees with the original chip's: the wrong token
    // comes from after the last probe point that sees it.  "unembedding" when
    // the compared next-token fields show every dimension the unembedding
    // reads in its final form, else "unprobed" (naming the last writer).
    EXPECT_TRUE(a.status == (covered ? "unembedding" : "unprobed")) << a.text;
  }
  if (named == f.site || (a.status == "unembedding" && f.site.sub == 3)) ++tally.at_site;
  // The interval (docs/engine.md §3): the corrupted sublayer is always among the candidates,
  // which the built chip's dataflow narrows (issue 27 item 5).
  EXPECT_TRUE(a.dataflow_known);
  EXPECT_NE(std::find(a.candidates.begin(), a.candidates.end(), f.site.text()), a.candidates.end())
      << "the corrupted " << f.site.text() << " is not among the candidates: " << a.text;
  tally.candidates += a.candidates.size();
  ++tally.attributed;
}

// strip_final_probe: check a copy of the chip whose probe map lacks its last
// point with next-token fields (as the RV32 chip's map did while layer 18/19
// still wrote the payload after layer 17's probe): the engine must then skip
// the fields that are not final where probed and say "unprobed" rather than
// blame the unembedding.
void run_suite(const std::vector<std::string>& only, const std::vector<std::string>& guest_names,
               bool strip_final_probe = false) {
  const std::uint64_t sd = seed();
  SCOPED_TRACE("LOCKSTEP_FAULT_SEED=" + std::to_string(sd));
  std::cout << "[ seed     ] LOCKSTEP_FAULT_SEED=" << sd << "\n";
  ASSERT_TRUE(have_built_chip()) << "this build has no RV32 chip (chip/rv32)";
  const auto t0 = std::chrono::steady_clock::now();
  const LoadedChip loaded = load_chip_or_built("");
  auto original = std::const_pointer_cast<Chip>(loaded.chip);
  if (strip_final_probe) {
    original = std::make_shared<Chip>(*loaded.chip);
    auto& probes = original->config.probes;
    std::optional<std::size_t> last;
    for (std::size_t i = 0; i < probes.size(); ++i)
      for (const std::string& f : probes[i].fields)
        if (f.rfind("next_", 0) == 0 && convention_field(f) &&
            (!last || pos_of(probes[*last].layer, probes[*last].after) < pos_of(probes[i].layer, probes[i].after)))
          last = i;
    ASSERT_TRUE(last.has_value());
    std::cout << "[ probes   ] without the probe point " << pos_of(probes[*last].layer, probes[*last].after).text() << "\n";
    probes.erase(probes.begin() + static_cast<std::ptrdiff_t>(*last));
  }
  const auto points = convention_points(*original);
  ASSERT_FALSE(points.empty()) << "the chip's probe map has no convention field";
  // Whether the compared next-token fields show every dimension the unembedding reads.
  bool covered = true;
  for (std::uint32_t c = 0; c < original->unembed.w.cols; ++c) {
    if (original->unembed.w.col_ptr[c + 1] == original->unembed.w.col_ptr[c]) continue;
    bool shown = false;
    for (const ConventionPoint& cp : points)
      for (const std::string& name : cp.fields) {
        const chip::Field* fl = original->find_field(name);
        shown = shown || (name.rfind("next_", 0) == 0 && c >= fl->offset && c < fl->offset + fl->width);
      }
    covered = covered && shown;
  }
  std::cout << "[ probes   ] compared convention fields:";
  for (const ConventionPoint& cp : points) {
    std::cout << " " << cp.pos.text() << ":";
    for (const std::string& name : cp.fields) std::cout << " " << name;
  }
  std::cout << (covered ? "; they show everything the unembedding reads\n" : "; the unembedding reads more\n");
  Tally tally;
  for (const std::string& gname : guest_names) {
    std::optional<Guest> g = find_guest(gname);
    if (!g) {
      // Without a RISC-V toolchain: the in-memory loop guest (tests/engine/test_guest.h).
      std::cout << "[ guest    ] " << gname << ".elf not built: using the in-memory loop guest\n";
      g = testing::make_loop_guest(20, "loop20");
      const fs::path p = fs::path(LOCKSTEP_BINARY_DIR) / "test-tmp" / "planted" / "loop20.elf";
      fs::create_directories(p.parent_path());
      format::write_elf_file(p, g->image);
      g->path = p;
    }
    const Profile prof = profile(*original, *g);
    std::size_t units = 0;
    for (const auto& [l, s] : prof.live_units) units += s.size();
    std::cout << "[ guest    ] " << g->name << ": " << prof.trace.size() << " steps, " << units << " live MLP units in "
              << prof.live_units.size() << " layers, heads writing in " << prof.live_heads.size() << " layers\n";
    // The unmodified chip must be exact (else the suite proves nothing).
    ASSERT_EQ(first_difference(original, *g, prof.trace, Mode::kFree), 0u) << "the built chip itself diverges on " << g->name;
    Rng rng{sd ^ std::hash<std::string>{}(gname)};
    for (const mutate::MutantKind& k : fault_kinds()) {
      Rng r{rng.next()};  // one stream per kind: a subset makes the same choices
      if (!only.empty() && std::find(only.begin(), only.end(), k.name) == only.end()) continue;
      std::optional<Fault> f;
      try {
        mutate::Mutant m = k.make(*original, prof, r);
        f = Fault{m.kind, m.target, Pos{m.layer, m.sublayer}, m.chip};
        f->chip->validate();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "fault kind " << k.name << " could not be planted: " << e.what();
        continue;
      }
      ++tally.faults;
      for (Mode m : {Mode::kForced, Mode::kFree}) check_fault(*f, *g, prof, original, points, covered, m, tally);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "[ summary  ] " << tally.faults << " faults, " << tally.runs << " runs: " << tally.diverged
            << " changed a token (all caught at the first differing step unless reported above), " << tally.exact
            << " changed none; attribution at the corrupted sublayer " << tally.at_site << "; statuses:";
  for (const auto& [s, n] : tally.statuses) std::cout << " " << s << " " << n;
  std::cout << "; mean candidate sublayers "
            << (tally.attributed ? static_cast<double>(tally.candidates) / tally.attributed : 0.0) << " of "
            << loaded.chip->layers.size() * 2 + 2 << "; " << secs << " s\n";
  if (only.empty()) {
    EXPECT_GE(fault_kinds().size(), 20u);
  }
}

#ifdef LOCKSTEP_PLANTED_FULL
TEST(PlantedFaults, EveryKindOnHelloAndFd2) { run_suite({}, {"hello", "fd2"}); }
TEST(PlantedFaults, EveryKindOnHelloWithoutTheFinalProbePoint) { run_suite({}, {"hello"}, true); }
#else
TEST(PlantedFaults, FastSubsetOnHello) {
  run_suite({"embed.flip_sign", "unembed.bias", "mlp.drop_unit", "head.beta_zero", "init.off_by_one_byte", "mlp.dead_unit"},
            {"hello"});
}
TEST(PlantedFaults, WithoutTheFinalProbePoint) { run_suite({"head.beta_zero", "unembed.flip_sign"}, {"hello"}, true); }
#endif

}  // namespace
}  // namespace lockstep::engine
