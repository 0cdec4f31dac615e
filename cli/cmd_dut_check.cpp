// `lockstep dut-check --dut CMD`: the conformance checks of the chip-under-test protocol, one
// line each (docs/hook-up-your-chip.md, dut/include/lockstep/dut/conformance.h).
#include <iostream>

#include <algorithm>
#include <optional>
#include <cstdio>
#include <stdexcept>
#include <set>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "lockstep/format/tokens.h"
#include "cli/dut_options.h"
#include "lockstep/campaign/campaign.h"
#include "lockstep/dut/conformance.h"
#include "lockstep/engine/check.h"
#include "lockstep/engine/engine.h"
#include "lockstep/engine/guest.h"
#include "lockstep/progen/progen.h"
#include "lockstep/ref/machine.h"

namespace lockstep::cli {

namespace {
struct DutCheckArgs {
  dut::DutConfig dut;
  std::vector<std::string> guests;
  std::uint64_t steps = 2000, seed = 1;
  std::string ops;  // --ops: what the generated guests use (default: the scalar machine, and the vector unit)
};

// The golden model's first `steps` tokens of `image`, and for each the instruction that emits it
// ("pc 0x10074 mulhsu a0, a1, a2"), for the failure lines (found by an outside tester: a
// difference named only the program and the step).
std::vector<std::uint32_t> reference_tokens(const format::GuestImage& image, std::uint64_t steps,
                                            std::vector<std::string>* where = nullptr) {
  ref::Machine m;
  m.load(image);
  std::vector<std::uint32_t> out;
  while (out.size() < steps && m.active()) {
    const std::uint32_t pc = m.pc();
    std::string text;
    if (where) {
      char b[24];
      std::snprintf(b, sizeof b, "pc 0x%x ", pc);
      try {
        text = b + ref::disassemble(m.read_word(pc), pc);
      } catch (const std::out_of_range&) {
        text = b + std::string("<fetch fault>");
      }
    }
    const auto t = m.step();
    if (t.empty()) break;
    for (std::size_t i = 0; i < t.size() && out.size() < steps; ++i) {
      out.push_back(t[i]);
      if (where) where->push_back(text);
    }
  }
  return out;
}
// The reset probe (dut::ConformanceGuest::reset_probe): `addi xN, xN, 0` for x1..x31, each of
// which puts the register's value on the trace (0 after a reset); with `loads`, `lw` of the 64
// words of the generated programs' scratch area (campaign::kScratchBase, outside this image:
// 0 after a reset, where the guest before it stored); then the exit ecall (a7 = 93, a0 = 0).
dut::ConformanceGuest reset_probe(bool loads) {
  std::vector<std::uint32_t> code;
  for (std::uint32_t r = 1; r <= 31; ++r) code.push_back(r << 15 | r << 7 | 0x13);  // addi xr, xr, 0
  if (loads) {
    code.push_back((campaign::kScratchBase & 0xfffff000u) | 1u << 7 | 0x37);  // lui x1, scratch
    for (std::uint32_t k = 0; k < 64; ++k) code.push_back(4 * k << 20 | 1u << 15 | 2u << 12 | 2u << 7 | 0x03);  // lw x2, 4k(x1)
  }
  code.push_back(93u << 20 | 17u << 7 | 0x13);  // addi a7, x0, 93
  code.push_back(0x00000073u);                  // ecall
  dut::ConformanceGuest g;
  g.name = loads ? "reset-probe (registers, RAM)" : "reset-probe (registers)";
  const format::GuestImage image = progen::image_from_code(code);
  g.image = engine::to_chip_image(image);
  g.tokens = reference_tokens(image, 100000, &g.where);
  g.reset_probe = true;
  g.probe_reads = loads ? "every register 0, RAM outside its image 0" : "every register 0";
  return g;
}

// The second reset probe: `image`, a guest with vector-unit sections (vector.md section 2.1, VR and
// the memories it starts from), without them, so that it starts from the reset state's zeros and
// reads the vector memories where the guest's own run, earlier on the stream, left its values: a
// chip whose RESET leaves any of them (or a state layer no initialiser writes) fails it. It runs
// to its end, up to 20,000 steps (or `steps`, when more).
dut::ConformanceGuest sections_probe(format::GuestImage image, const std::string& name, std::uint64_t steps) {
  image.sections.clear();
  dut::ConformanceGuest g;
  g.name = name + " without its sections";
  g.image = engine::to_chip_image(image);
  // to its end (at most 20,000 steps, --steps if more): a generated program's first few hundred
  // steps set its registers and read no vector memory (a chip that kept VR passed at --steps 200)
  g.tokens = reference_tokens(image, std::max<std::uint64_t>(steps, 20000), &g.where);
  g.reset_probe = true;
  g.probe_reads = "the vector unit's memories 0 where " + name + " left values";
  return g;
}
}  // namespace

void add_dut_check_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<DutCheckArgs>();
  auto* cmd = app.add_subcommand("dut-check",
                                 "Conformance checks of a chip under test's protocol adapter (lockstep-dut/1), one "
                                 "line each");
  add_dut_options(cmd, args->dut);
  cmd->add_option("--guest", args->guests,
                  "Guest ELF to check with (repeatable; default: four generated programs, scalar and vector)");
  cmd->add_option("--steps", args->steps, "Steps per guest (2..100000)")
      ->check(count_range(2, 100000))  // before the generic check, so that 'abc' gets this range too
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the generated programs")->capture_default_str();
  cmd->add_option("--ops", args->ops,
                  "What the generated programs use, as lockstep fuzz --ops (e.g. rv32i, rv32im, "
                  "alu,load,store,branch, vector; default: two scalar programs and two vector ones): for a chip "
                  "that implements part of the machine");
  cmd->callback([&ctx, args, cmd] {
    // A stop keeps the checks done (docs/ci.md): a failed one is still a mismatch, exit 1.
    const std::atomic<bool>* stop = engine::install_stop_handlers();
    ctx.stop = stop;
    args->dut.stop = stop;
    if (!check_dut_options(cmd, args->dut, "", "")) throw UsageError("dut-check: give --dut 'COMMAND' or --dut-connect ADDRESS");
    std::vector<dut::ConformanceGuest> guests;
    if (!args->ops.empty() && !args->guests.empty()) throw UsageError("--ops chooses generated programs: leave out --guest");
    bool probe_loads = true;  // the reset probe reads RAM with lw unless --ops leaves lw out
    // the last guest with vector-unit sections, and its name: the second reset probe's
    std::optional<std::pair<format::GuestImage, std::string>> with_sections;
    if (args->guests.empty()) {
      std::vector<const ref::Encoding*> scalar = campaign::select_ops(""), vector = campaign::select_ops("vector");
      unsigned vew = campaign::kVewFuzzedModes, vfn = campaign::kVfnFuzzedFns, vred = campaign::kVredFuzzedModes;
      if (!args->ops.empty()) {
        std::vector<const ref::Encoding*> chosen;
        try {
          chosen = campaign::select_ops(args->ops, &vew, &vfn, &vred);
        } catch (const campaign::OpsError& e) {
          throw UsageError(e.what());
        }
        probe_loads = std::any_of(chosen.begin(), chosen.end(), [](const ref::Encoding* e) { return e->op == ref::Op::kLw; });
        scalar.clear();
        vector.clear();
        for (const ref::Encoding* e : chosen) (e->cls == ref::InsnClass::kVector ? vector : scalar).push_back(e);
        if (scalar.empty()) scalar = vector;  // four programs of what was chosen
        if (vector.empty()) vector = scalar;
      }
      for (std::uint64_t i = 0; i < 4; ++i) {
        const std::vector<const ref::Encoding*>& ops = i < 2 ? scalar : vector;
        const campaign::Program p = campaign::generate(campaign::program_seed(args->seed, i), i, ops, vew, vfn, vred);
        dut::ConformanceGuest g;
        g.name = (ops.front()->cls == ref::InsnClass::kVector ? "vector-" : "scalar-") + p.name;
        const format::GuestImage image = p.image();
        g.image = engine::to_chip_image(image);
        g.tokens = reference_tokens(image, args->steps, &g.where);
        if (!image.sections.empty()) with_sections = {image, g.name};
        guests.push_back(std::move(g));
      }
    } else {
      for (const std::string& path : args->guests) {
        engine::Guest g;
        try {
          g = engine::read_guest(path);
        } catch (const engine::CheckError& e) {
          throw InputError(e.what());
        }
        dut::ConformanceGuest c;
        c.name = g.name;
        c.image = engine::to_chip_image(g.image);
        c.tokens = reference_tokens(g.image, args->steps, &c.where);
        if (!g.image.sections.empty()) with_sections = {g.image, c.name};
        guests.push_back(std::move(c));
      }
      if (guests.size() < 2) {
        guests.push_back(guests.front());
        guests.back().copy = true;
      }
    }
    for (const auto& g : guests)
      if (g.tokens.size() < 2) throw InputError("guest " + g.name + " ends before its second token: use another");
    std::ostream& out = ctx.out();
    out << "lockstep dut-check: " << args->dut.describe() << ", "
        << (guests.back().copy ? "1 guest (run as two streams for the batch checks)"
                               : std::to_string(guests.size()) + " guests")
        << ", up to " << args->steps << " steps each, and " << (with_sections ? "two reset probes" : "a reset probe")
        << "\n"
        << std::flush;
    guests.push_back(reset_probe(probe_loads));  // run by its own check alone (not a guest of the others)
    if (with_sections) guests.push_back(sections_probe(with_sections->first, with_sections->second, args->steps));
    std::size_t pass = 0, fail = 0, skip = 0;
    bool stopped = false;
    const auto lines = dut::run_conformance(
        args->dut, guests,
        [&](const dut::CheckLine& l) {
          out << l.to_string() << "\n" << std::flush;
          (l.verdict == dut::CheckLine::Verdict::kPass ? pass : l.verdict == dut::CheckLine::Verdict::kFail ? fail : skip)++;
        },
        engine::probe_inconsistency, &stopped);
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& l : lines) {
      checks.push_back({{"check", l.name},
                        {"verdict", l.verdict == dut::CheckLine::Verdict::kPass   ? "pass"
                                    : l.verdict == dut::CheckLine::Verdict::kFail ? "fail"
                                                                                   : "skip"},
                        {"detail", l.detail}});
    }
    ctx.summary.set("checks", checks);
    ctx.summary.set("passed", pass);
    ctx.summary.set("failed", fail);
    ctx.summary.set("skipped", skip);
    // Which kinds of token the checks compared: a chip (or a --dut-vocab map) wrong on a kind the
    // guests never produce passes every check (found by an outside tester: --steps 300 saw no BR
    // token, and a map with BR(0) and BR(1) swapped passed).
    std::set<std::string_view> seen;
    for (const auto& g : guests)
      for (std::uint32_t t : g.tokens)
        if (const auto k = format::kind_of(t); k && !g.reset_probe) seen.insert(k->name);
    std::vector<std::string> unseen;
    for (const format::KindInfo& k : format::kinds())
      if (!seen.count(k.name)) unseen.emplace_back(k.name);
    // (not when the handshake failed: nothing was compared at all, and the error line says so)
    const bool handshake_failed = !lines.empty() && lines.front().verdict == dut::CheckLine::Verdict::kFail;
    if (handshake_failed) {
      // No token was compared: none of the kinds was (found by an outside tester: the guests'
      // kinds were reported as compared).
      std::vector<std::string> all;
      for (const format::KindInfo& k : format::kinds()) all.emplace_back(k.name);
      ctx.summary.set("token_kinds_compared", 0);
      ctx.summary.set("token_kinds_not_compared", all);
    } else if (stopped) {
      // Which kinds the checks done compared is not known: null, never the guests' whole count.
      ctx.summary.set("token_kinds_compared", nullptr);
      ctx.summary.set("token_kinds_not_compared", nullptr);
    } else {
      ctx.summary.set("token_kinds_compared", seen.size());
      ctx.summary.set("token_kinds_not_compared", unseen);
    }
    if (stopped) {
      // The checks done so far are kept in the summary; a failed one outranks the interruption
      // (status mismatch, exit 1), as in every command that compares (docs/ci.md).
      ctx.summary.add_mismatches(fail);
      out << "dut-check: " << pass << " passed, " << fail << " failed, " << skip << " skipped before the stop\n"
          << std::flush;
      throw Interrupted("dut-check was stopped by SIGINT, SIGTERM or SIGHUP after " + std::to_string(lines.size()) +
                        (lines.size() == 1 ? " check" : " checks") + " (" + std::to_string(pass) + " passed, " +
                        std::to_string(fail) + " failed, " + std::to_string(skip) +
                        " skipped); the others were not run");
    }
    if (!unseen.empty() && !handshake_failed) {
      std::string list;
      for (std::size_t i = 0; i < unseen.size() && i < 12; ++i) list += (i ? ", " : "") + unseen[i];
      if (unseen.size() > 12) list += ", ... (" + std::to_string(unseen.size() - 12) + " more)";
      out << "note: the guests' tokens are of " << seen.size() << " of the " << format::kinds().size()
          << " token kinds; never compared: " << list
          << ". A chip or vocabulary map wrong only on those passes these checks: raise --steps, or add --guest ELF"
          << " (lockstep run and fuzz compare every kind a guest produces)\n";
    }
    // The bad-frame checks send malformed frames and end sessions early on purpose: a chip that
    // logs those on its stderr answered as it should (found by an outside tester: a passing
    // dut-check of torch_chip.py left three "error:" lines there, unexplained).
    if (std::any_of(lines.begin(), lines.end(), [](const dut::CheckLine& l) {
          return l.name.rfind("bad frame", 0) == 0 && l.verdict == dut::CheckLine::Verdict::kPass;
        }))
      out << "note: the 'bad frame' checks send malformed frames and end sessions without BYE on purpose; error lines "
             "the chip wrote on stderr about them are its expected answers\n";
    out << "dut-check: " << pass << " passed, " << fail << " failed, " << skip << " skipped\n" << std::flush;
    // Exit codes as everywhere (docs/ci.md): a chip that cannot be started, reached or spoken to
    // (the handshake failed, nothing else was checked) is a broken job, exit 2; a failed check
    // is a finding about the chip, status "mismatch" and exit 1 ("mismatches" counts the failed
    // checks).
    if (handshake_failed)
      throw InputError("dut-check: the handshake failed, nothing was checked: " + lines.front().detail);
    ctx.summary.add_mismatches(fail);
  });
}

}  // namespace lockstep::cli
