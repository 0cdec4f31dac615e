// `lockstep ref PROGRAM.elf`: runs a guest on the reference model (ref/).
//
// Output: the guest's console passes through (fd 1 -> stdout, fd 2 ->
// stderr) and a one-line report goes to stderr.  With --json, stdout carries
// only the summary object: status, steps (trace tokens produced),
// mismatches (0), then program, end ("exit" | "trap" | "step_limit" | "self_loop"),
// exit_status or trap_code + trap_name + pc (+ word, the instruction word, and address, the
// effective address of a faulting or misaligned load/store or the buffer of a faulting write),
// instructions_retired (completed instructions: one a step limit cut is not counted), stdout,
// stderr (the console bytes as text, invalid UTF-8 replaced by U+FFFD: the
// first ConsoleHead::kLimit (1 MiB) bytes of each), stdout_bytes, stderr_bytes (how
// many the guest wrote) and stdout_truncated, stderr_truncated.  Without
// --json the console is streamed as the guest writes it and nothing of it
// is kept, so a guest that writes without end runs in constant memory.
//
// Status and exit code: a guest that exits (with any status) or reaches the step limit the
// user asked for is "exact" (exit code 0): those are results, reported in "end". A guest that
// ends in a trap is "error" with exit code 2, as in `run` (a crashed guest must not pass a CI
// job), unless --allow-trap says the trap is its expected end; so is one that can never end.
// SIGINT/SIGTERM ends it early: "interrupted" (end "interrupted"), exit code 3.  Bad input
// (unreadable or malformed ELF, image outside RAM, missing signature symbols) is "error" with
// exit code 2 and one line on stderr.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/app.h"
#include "cli/commands.h"
#include "lockstep/engine/check.h"
#include "lockstep/reports/files.h"
#include "lockstep/format/elf.h"
#include "lockstep/format/tokens.h"
#include "lockstep/format/trace_file.h"
#include "lockstep/ref/encoding.h"
#include "lockstep/ref/loop_watch.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/trap_access.h"

namespace lockstep::cli {
namespace {

/// The most console bytes per fd that --json keeps (and reports in "stdout"/"stderr").
// The trap's instruction word and, for a load/store fault or misaligned access, its address, from
// the state the trap left (isa.md §6: a trap changes no register, so x[rs1] is still the base).
struct TrapPlace {
  std::optional<std::uint32_t> word;
  std::optional<ref::TrapAccess> access;
  std::string reason;  // ref::trap_reason
  std::string text() const {
    char buf[32] = "";
    if (word) std::snprintf(buf, sizeof buf, " (word 0x%08x)", *word);
    return buf + (access ? ref::describe(*access) : std::string()) + reason;
  }
};

TrapPlace trap_place(const ref::Machine& m) {
  TrapPlace p;
  try {
    p.word = m.read_word(m.pc());
  } catch (const std::out_of_range&) {
    return p;  // the fetch itself faulted: no word
  }
  p.access = ref::trap_access(m);
  p.reason = ref::trap_reason(m);
  return p;
}

struct RefOptions {
  std::string program;
  std::uint64_t max_steps = std::numeric_limits<std::uint64_t>::max();
  std::string trace;
  std::string signature;
  bool allow_trap = false;  ///< a trap is the guest's expected end: exact, exit 0
};

// The signature region [begin_signature, end_signature) of `image`; InputError (one line) when the
// ELF has no such symbols or the region is not a whole number of words inside RAM. Checked before
// the run, so that a wrong ELF costs no run.
std::pair<std::uint32_t, std::uint32_t> signature_region(const format::GuestImage& image) {
  const auto b = image.symbols.find("begin_signature"), e = image.symbols.find("end_signature");
  if (b == image.symbols.end() || e == image.symbols.end()) {
    throw InputError("--signature: the ELF has no begin_signature/end_signature symbols");
  }
  if (b->second % 4 != 0) {  // isa.md §3 (found by an outside tester: words were read at 0x11001)
    char at[16];
    std::snprintf(at, sizeof at, "0x%08x", b->second);
    throw InputError(std::string("--signature: begin_signature (") + at + ") is not a multiple of 4 (isa.md §3)");
  }
  if (e->second < b->second) throw InputError("--signature: end_signature lies before begin_signature");
  if ((e->second - b->second) % 4 != 0) {
    throw InputError("--signature: [begin_signature, end_signature) is not a whole number of words");
  }
  if (e->second > b->second && (b->second < ref::kRamBase || e->second > ref::kRamEnd)) {
    throw InputError("--signature: the signature region is not inside RAM");
  }
  return {b->second, e->second};
}

void write_signature(const ref::Machine& m, const format::GuestImage& image, const std::string& path) {
  const auto [begin, end] = signature_region(image);
  std::ostringstream out;
  for (std::uint32_t a = begin; a < end; a += 4) {
    std::uint32_t w;
    try {
      w = m.read_word(a);
    } catch (const std::out_of_range&) {
      throw InputError("--signature: the signature region is not inside RAM");
    }
    char line[16];
    std::snprintf(line, sizeof line, "%08x\n", w);
    out << line;
  }
  try {
    reports::write_file_text(path, out.str());
  } catch (const std::runtime_error& e) {
    throw InputError(std::string("--signature: ") + e.what());
  }
}

// Whether `path` names the file `fd` has open, or the file `other` (found by an outside tester:
// `ref --trace G.elf G.elf` replaced the guest with its trace and reported success).
bool is_file_of_fd(const std::string& path, int fd) {
  struct stat a{}, b{};
  return ::stat(path.c_str(), &a) == 0 && ::fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
bool same_file(const std::string& path, const std::string& other) {
  struct stat a{}, b{};
  return ::stat(path.c_str(), &a) == 0 && ::stat(other.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The files ref writes are never its guest, each other, or its own stdout or stderr, and the
// trace is a file it can seek in (its header is written last, trace.md §6).
void check_output_paths(const RefOptions& opt) {
  auto check = [&](const char* option, const std::string& path) {
    if (path.empty()) return;
    if (same_file(path, opt.program))
      throw InputError(std::string(option) + " " + path + " is the guest " + opt.program +
                       " itself: writing it would destroy the guest; give another file");
    if (is_file_of_fd(path, 1) || is_file_of_fd(path, 2))
      throw InputError(std::string(option) + " " + path + " is where this command's " +
                       (is_file_of_fd(path, 1) ? "stdout" : "stderr") +
                       " goes: the guest's output and the file would be mixed; give another file");
    struct stat st{};
    if (std::string(option) == "--trace" && ::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
      throw InputError("--trace " + path + " is " +
                       (S_ISDIR(st.st_mode) ? std::string("a directory") : std::string("not a regular file (a pipe, a terminal or a device)")) +
                       ": the trace's header is written last, by seeking back to the start (trace.md §6); give a file");
  };
  check("--trace", opt.trace);
  check("--signature", opt.signature);
  if (!opt.trace.empty() && !opt.signature.empty() && (opt.trace == opt.signature || same_file(opt.trace, opt.signature)))
    throw InputError("--trace and --signature name one file, " + opt.trace + ": give two");
}

void run_ref(const RefOptions& opt, Context& ctx, const std::atomic<bool>* stop) {
  check_output_paths(opt);
  format::GuestImage image;
  ref::Machine m;
  try {
    image = format::read_elf_file(opt.program);
    if (!opt.signature.empty()) (void)signature_region(image);
    m.load(image);
  } catch (const format::FormatError& e) {
    throw InputError(e.what());
  } catch (const ref::LoadError& e) {
    throw InputError(std::string(e.what()) + " (in " + opt.program + ")");
  }

  // The console: streamed (plain) or its head kept (--json); never all of it in memory.
  ConsoleHead out_head, err_head;
  char last_err = '\n', last_any = '\n';  // the last byte written to fd 2, to either fd
  auto emit = [&](int fd, std::string_view b) {
    if (b.empty()) return;
    if (ctx.options.json) {
      (fd == 1 ? out_head : err_head).add(b);
      return;
    }
    if (fd == 1) {
      std::cout.write(b.data(), static_cast<std::streamsize>(b.size()));
    } else {
      std::cout.flush();  // keep the order of fd 1 and fd 2 bytes on a shared terminal
      std::cerr.write(b.data(), static_cast<std::streamsize>(b.size()));
      last_err = b.back();
    }
    last_any = b.back();
  };
  // The bytes of the write ecall executed last are held until the next one: a step limit may cut
  // that instruction's tokens, and the bytes whose OUT/ERR tokens are not in the trace are then
  // never written, as `run` and the trace have it (trace.md §1: tokens a step limit cuts off are
  // not part of the trace; found by an outside tester: `ref --steps 100` printed all 65,535 bytes
  // of a write whose 8 first OUT tokens were in the trace).
  // Without a step limit every instruction is delivered whole, and nothing is held. With one, the
  // held bytes are also written after each slice of the run that leaves no token pending.
  int held_fd = 1;
  std::string held;
  const bool limited = opt.max_steps != std::numeric_limits<std::uint64_t>::max();
  m.set_console_sink([&](int fd, std::string_view b) {
    if (!limited) return emit(fd, b);
    emit(held_fd, held);
    held_fd = fd;
    held.assign(b);
  });

  std::unique_ptr<format::TraceFileWriter> trace;
  ref::RunResult r{ref::Stop::kStepLimit, 0, 0};
  bool interrupted = false;
  bool self_loop = false;  // stopped at a loop (no --max-steps): the guest could never end
  std::uint64_t loop_period = 0;  // its instructions (1: a jump to itself)
  const bool unlimited = opt.max_steps == std::numeric_limits<std::uint64_t>::max();
  try {
    if (!opt.trace.empty()) trace = std::make_unique<format::TraceFileWriter>(opt.trace);  // streamed: constant memory
    // Without a step limit, instruction by instruction with the engine's checks before each
    // (engine.cpp execute(): a jump to itself just executed, then ref::LoopWatch), so that a guest
    // that can never exit stops at the very step `lockstep run` stops at, with the same trace and
    // digest (found by an outside tester: ref stopped a jump to itself after 4,194,304 steps, run
    // after 8).
    if (unlimited) {
      ref::LoopWatch watch;
      std::optional<std::uint32_t> last_pc;  // of the instruction executed last
      for (std::uint64_t k = 1; m.status() == ref::Status::kRunning; ++k) {
        if ((k & 0xFFFF) == 0 && stop && stop->load()) {
          interrupted = true;
          break;
        }
        if (last_pc && *last_pc == m.pc() && m.jumps_to_itself()) {
          self_loop = true;
          loop_period = 1;
          break;
        }
        if (watch.repeats(m)) {
          self_loop = true;
          loop_period = watch.period();
          break;
        }
        last_pc = m.pc();
        const auto t = m.step();
        if (t.empty()) break;
        if (trace) trace->append(t);
      }
      r.stop = m.status() == ref::Status::kExited    ? ref::Stop::kExit
               : m.status() == ref::Status::kTrapped ? ref::Stop::kTrap
                                                     : ref::Stop::kStepLimit;
    } else {
      // With one, in slices, so that SIGINT/SIGTERM (stop) ends the run between two of them.
      constexpr std::uint64_t kSlice = 1u << 22;
      std::uint64_t left = opt.max_steps;
      while (left > 0) {
        if (stop && stop->load()) {
          interrupted = true;
          break;
        }
        const std::uint64_t n = std::min(left, kSlice);
        r = trace ? m.run(n, [&](std::span<const std::uint32_t> t) { trace->append(t); }) : m.run(n);
        left -= r.steps;
        if (r.stop != ref::Stop::kStepLimit) break;
        if (left > 0 && m.save().pending.empty()) {
          emit(held_fd, held);
          held.clear();
        }
      }
    }
  } catch (const format::FormatError& e) {
    throw InputError(e.what());
  }
  if (opt.max_steps == 0) r.stop = ref::Stop::kStepLimit;
  {
    // The held write's bytes whose tokens are still pending (a step limit cut its instruction).
    std::size_t cut = 0;
    for (std::uint32_t t : m.save().pending) {
      const auto k = format::kind_of(t);
      if (k && (k->kind == static_cast<std::uint32_t>(format::Kind::OUT) ||
                k->kind == static_cast<std::uint32_t>(format::Kind::ERR)))
        ++cut;
    }
    held.resize(held.size() - std::min(cut, held.size()));
    emit(held_fd, held);
    held.clear();
  }
  const char* end = interrupted                    ? "interrupted"
                    : self_loop                  ? "self_loop"
                    : r.stop == ref::Stop::kExit ? "exit"
                    : r.stop == ref::Stop::kTrap ? "trap"
                                                 : "step_limit";

  ctx.summary.add_steps(m.steps());
  ctx.summary.set("program", opt.program);
  ctx.summary.set("end", end);
  if (self_loop) ctx.summary.set("loop_period", loop_period);
  if (r.stop == ref::Stop::kExit) ctx.summary.set("exit_status", m.exit_status());
  const TrapPlace place = r.stop == ref::Stop::kTrap ? trap_place(m) : TrapPlace{};
  if (r.stop == ref::Stop::kTrap) {
    ctx.summary.set("trap_code", m.trap_code());
    ctx.summary.set("trap_name", std::string(format::trap_name(m.trap_code())));
    ctx.summary.set("pc", m.pc());
    if (place.word) ctx.summary.set("word", *place.word);
    if (place.access) ctx.summary.set("address", place.access->address);
    if (place.access && place.access->end) ctx.summary.set("record_end", *place.access->end);
    // what the text says after the pc (the access, a jump's target), as one line (found by an
    // outside tester: a misaligned jump's target was only in the text)
    ctx.summary.set("trap_text", place.text().empty() ? std::string() : place.text().substr(1));
  }
  if (self_loop) {  // where the guest loops, as the text says (found by an outside tester)
    ctx.summary.set("pc", m.pc());
    ctx.summary.set("word", m.read_word(m.pc()));
  }
  // isa.md §6: retired means completed; an instruction the step limit cut is not counted.
  ctx.summary.set("instructions_retired", m.instructions_completed());
  ctx.summary.set("trace_version", trace_spec_version());

  if (!opt.trace.empty()) {
    nlohmann::json header = {{"trace_version", trace_spec_version()},
                             {"vocab_size", format::vocab_size()},
                             {"program", std::filesystem::path(opt.program).filename().string()},
                             {"end", end}};
    if (r.stop == ref::Stop::kExit) header["exit_status"] = m.exit_status();
    if (r.stop == ref::Stop::kTrap) header["trap_code"] = m.trap_code();
    try {
      trace->finish(header);
    } catch (const format::FormatError& e) {
      throw InputError(e.what());
    }
    ctx.summary.set("trace", opt.trace);
  }
  if (!opt.signature.empty()) {
    write_signature(m, image, opt.signature);
    ctx.summary.set("signature", opt.signature);
  }

  if (ctx.options.json) {
    out_head.record(ctx.summary, "stdout");
    err_head.record(ctx.summary, "stderr");
  } else {
    std::cout << std::flush;
  }
  std::string line = "lockstep ref: " + std::filesystem::path(opt.program).filename().string() + ": ";
  if (r.stop == ref::Stop::kExit) {
    line += "exit " + std::to_string(m.exit_status());
  } else if (r.stop == ref::Stop::kTrap) {
    char pc[16];
    std::snprintf(pc, sizeof pc, "0x%08x", m.pc());
    line += "trap " + std::to_string(m.trap_code()) + " " + std::string(format::trap_name(m.trap_code())) + " at pc " + pc +
            place.text() + engine::trap_build_hint(image, m.trap_code());
  } else if (self_loop) {
    line += ref::describe_loop(m.pc(), m.read_word(m.pc()), loop_period) + " and can never exit: stopped";
  } else if (interrupted) {
    line += "interrupted";
  } else {
    line += "step limit reached";
  }
  line += ", " + std::to_string(m.instructions_completed()) + " instructions retired, " + std::to_string(m.steps()) +
          " trace steps";  // always plural: scripts parse this line (tests/guests/run_process.cpp does)
  // The report starts a line of its own (guests.md: the last stderr line is the report), also
  // after guest output that did not end in a newline (found by an outside tester).
  const bool shared_terminal = ::isatty(1) && ::isatty(2);
  if (last_err != '\n' || (shared_terminal && last_any != '\n')) line.insert(0, "\n");
  std::cerr << line << "\n" << std::flush;
  // The guest's fd 2 is part of its output, as fd 1 is (found by an outside tester: with stderr
  // on a full disk the run exited 0, its stderr bytes lost)
  if (!std::cerr) {
    std::cerr.clear();
    throw InputError("cannot write stderr (the guest's output to fd 2 and this report are incomplete)");
  }
  if (interrupted) throw Interrupted("after " + std::to_string(m.steps()) + " trace steps");
  if (r.stop == ref::Stop::kTrap && !opt.allow_trap) {
    throw InputError("the guest ended in trap " + std::to_string(m.trap_code()) + " " +
                     std::string(format::trap_name(m.trap_code())) +
                     ", not by the exit ecall; pass --allow-trap when the guest is meant to trap");
  }
  if (self_loop) {
    throw InputError(std::string("the guest can never exit (") +
                     (loop_period <= 1 ? "a jump to itself at its pc" : "a loop whose state repeats") +
                     "); end it with the exit ecall (isa.md §5), or pass --max-steps N");
  }
}

}  // namespace

void add_ref_command(CLI::App& app, Context& ctx) {
  auto opt = std::make_shared<RefOptions>();
  auto* cmd = app.add_subcommand("ref", "Run a guest ELF on the reference model (ref/)");
  cmd->add_option("program", opt->program, "Guest program (static ELF32 RISC-V executable)")->required();
  // Two names of one bound, each its own option so that an error names the one given (found by an
  // outside tester: --steps 0 was refused as "--max-steps: ...").
  auto* steps_opt = cmd->add_option("--steps", opt->max_steps, "Stop after this many trace steps (default: no limit; as in run)")
                        ->check(count_range(1, kMaxStepsOption));
  cmd->add_option("--max-steps", opt->max_steps, "The same as --steps")
      ->check(count_range(1, kMaxStepsOption))
      ->excludes(steps_opt);
  cmd->add_option("--trace", opt->trace, "Write the trace to FILE (trace.md §6 format)");
  cmd->add_flag("--allow-trap", opt->allow_trap,
                "A guest that ends in a trap is exact (exit 0); without it that is an error, exit 2");
  cmd->add_option("--signature", opt->signature,
                  "Write the words in [begin_signature, end_signature) to FILE, 8 hex digits a line");
  cmd->callback([opt, &ctx] {
    const std::atomic<bool>* stop = engine::install_stop_handlers();  // before any work
    ctx.stop = stop;
    run_ref(*opt, ctx, stop);
  });
}

}  // namespace lockstep::cli
