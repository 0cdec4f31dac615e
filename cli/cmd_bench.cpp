// `lockstep bench`: Lockstep's speed figures measured in one run, each beside
// what it is compared with (docs/performance.md):
//
//   - the reference model on a guest ELF, untraced (instructions/s) and traced
//     (trace tokens/s), beside qemu-riscv32 running the same ELF in the same
//     run (wall time of `qemu-riscv32 ELF`, process start included), as a ratio;
//   - the chip file's size and load time;
//   - the chip's CPU executor free-running the guest alone: one stream, and B
//     streams of the same guest stepped together (total tokens/s), as a ratio
//     to the single stream;
//   - the harness's lock-step rate (reference and CPU executor, every step compared, as
//     `lockstep run ELF --mode free --steps N`) on the scalar guest and on the first N steps of
//     stories_vx, in the same run, and the story's rate over the scalar one;
//   - the CUDA executor when a device is present (one stream a launch per step, one stream and
//     --cuda-streams streams free-running in one launch), else one line saying why not;
//   - trace tokens per story token of stories_c and stories_vx on the
//     reference (when their real-model ELFs are built), and the wall time of
//     the reference-only story check (`lockstep story --reference-only`).
//
// The anchors (the original chip, a public compiled-transformer VM) are
// printed beside; they come from other machines, so only machine-independent
// counts (tokens per story token, checkpoint size) are given as ratios to them.
//
// Exit status: 0 measured, every token checked equal to the reference's; 1 when some
// measurement's tokens differ (status mismatch); 2 bad input (one line on stderr).
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <time.h>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "cli/dut_options.h"
#include "lockstep/dut/dut_backend.h"
#include "lockstep/chip/chip.hpp"
#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/cuda_executor.hpp"
#include "lockstep/engine/backend_factory.h"
#include "lockstep/engine/check.h"
#include "lockstep/engine/guest.h"
#include "lockstep/format/elf.h"
#include "lockstep/format/tokens.h"
#include "lockstep/ref/machine.h"

namespace lockstep::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

/// A first-difference step for the --json summary: the 1-based step, or null when the chip's
/// tokens agree with the reference's throughout (0 in the code).
ordered_json step_or_null(std::uint64_t step) { return step ? ordered_json(step) : ordered_json(nullptr); }

// The anchors (issue 12): figures of other chips on other machines.
constexpr double kOriginalTokensPerStoryToken = 53000;
constexpr double kOriginalTokensPerSecondL4 = 3300;
constexpr double kOriginalCheckpointBytes = 26.7e9;
constexpr double kPublicVmTokensPerSecondCpu = 30000;

struct BenchArgs {
  bool quick = false;
  bool cuda_only = false;  // the reference, the chip file and the CUDA executor alone
  std::string chip, guest;
  std::uint64_t steps = 0;    // 0: 20,000 (--quick) or 100,000
  std::uint64_t streams = 8;  // batched streams
  std::uint64_t cuda_streams = 0;  // 0: 1,024 (--quick: 256) streams of the batched CUDA run
  std::uint64_t lockstep_steps = 0;  // 0: 300,000 (--quick: 20,000) steps of each lock-step run
  dut::DutConfig dut;              // --dut: measure this chip under test too
};

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// CPU seconds this process has used: rates per CPU second stay meaningful when
// other work shares the cores (the wall-clock rates are then lower bounds).
double cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}


// The first of `names` found in the guest folders; empty when none is.
fs::path find_guest(const Context& ctx, const std::vector<std::string>& names, std::string* searched = nullptr) {
  for (const std::string& n : names) {
    for (const fs::path& d : ctx.guest_dirs()) {
      std::error_code ec;
      if (fs::is_regular_file(d / n, ec)) return d / n;
      if (searched) *searched += (searched->empty() ? "" : ", ") + (d / n).string();
    }
  }
  return {};
}

// The real-model build of story guest `name` ("stories_vx") into `g`; false with `why` (not
// built, only the synthetic-model build, unreadable) when there is none.
bool story_guest(const Context& ctx, const std::string& name, engine::Guest& g, std::string& why) {
  const fs::path real = find_guest(ctx, {name + ".elf"});
  if (real.empty()) {
    const fs::path synth = find_guest(ctx, {name + "_synthetic.elf"});
    why = synth.empty() ? name + ".elf not found (build the guests)"
                        : "the model was absent when the guests were built (only " + synth.filename().string() + ")";
    return false;
  }
  try {
    g = engine::read_guest(real);
  } catch (const engine::CheckError& e) {
    why = e.what();
    return false;
  }
  return true;
}

// Rewrites n_steps (offset 40) of the stories_c image header at symbol
// `stories_image` (guests/stories_c/image_c.h), as `lockstep story --tokens`
// does.  Returns false when the guest is not a resizable stories_c image.
bool set_story_tokens(format::GuestImage& image, std::int32_t tokens) {
  const auto sym = image.symbols.find("stories_image");
  if (sym == image.symbols.end()) return false;
  for (format::Segment& s : image.segments) {
    if (sym->second < s.vaddr || sym->second + 44 > s.vaddr + s.bytes.size()) continue;
    std::uint8_t* h = s.bytes.data() + (sym->second - s.vaddr);
    std::int32_t kv_len;
    std::memcpy(&kv_len, h + 36, 4);
    if (kv_len <= 1 || tokens < 1 || tokens >= kv_len) return false;
    std::memcpy(h + 40, &tokens, 4);
    return true;
  }
  return false;
}

// Story tokens the guest reported: the ids after its final "tokens:".
std::uint64_t story_tokens(const std::string& console) {
  const auto at = console.rfind("tokens:");
  if (at == std::string::npos) return 0;
  std::istringstream in(console.substr(at + 7));
  std::uint64_t n = 0;
  long id;
  while (in >> id) ++n;
  return n;
}

// `name` on $PATH, or empty.
fs::path on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return {};
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

// Runs `exe arg` with stdio on /dev/null; returns its exit status (or -1).
// Runs `exe arg` with no console; its exit status (128 + signal when killed), -1 when it could
// not be run, or kTimedOut when it ran `timeout_s` seconds (then it is killed). The child dies
// with this process (found by an outside tester: a hung qemu-riscv32 outlived a stopped bench).
constexpr int kTimedOut = -2;
int run_quiet(const fs::path& exe, const fs::path& arg, double timeout_s) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the bench ended before the prctl
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::execl(exe.c_str(), exe.c_str(), arg.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Waits on a pidfd (Linux 5.3), which wakes at the child's end: no polling delay in a figure
  // of milliseconds. Without one, a plain wait.
  if (const int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); pfd >= 0) {
    pollfd p{pfd, POLLIN, 0};
    int ready = 0;
    do {
      ready = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
    } while (ready < 0 && errno == EINTR);
    ::close(pfd);
    if (ready == 0) ::kill(pid, SIGKILL);
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid) return -1;
    if (ready == 0) return kTimedOut;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Calls `once` until `min_seconds` have passed (at least once, at most
// `max_runs` times); returns {runs, wall seconds}; `cpu` receives the CPU seconds.
std::pair<std::uint64_t, double> repeat(double min_seconds, std::uint64_t max_runs,
                                        const std::function<void()>& once, double* cpu = nullptr) {
  const double c0 = cpu_seconds();
  const auto t0 = Clock::now();
  std::uint64_t runs = 0;
  double s = 0;
  do {
    once();
    ++runs;
    s = seconds_since(t0);
  } while (s < min_seconds && runs < max_runs);
  if (cpu) *cpu = cpu_seconds() - c0;
  return {runs, s};
}

std::string si(double v, const char* unit) {
  char b[64];
  if (v >= 1e9) std::snprintf(b, sizeof b, "%.2f G %s", v / 1e9, unit);
  else if (v >= 1e6) std::snprintf(b, sizeof b, "%.2f M %s", v / 1e6, unit);
  else if (v >= 1e4) std::snprintf(b, sizeof b, "%.1f k %s", v / 1e3, unit);
  else std::snprintf(b, sizeof b, "%.1f %s", v, unit);
  return b;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// The human table: what | figure | beside it.
struct Table {
  std::vector<std::array<std::string, 3>> rows;
  void add(std::string what, std::string figure, std::string beside = "") {
    rows.push_back({std::move(what), std::move(figure), std::move(beside)});
  }
  void print(std::ostream& out) const {
    std::size_t w0 = 4, w1 = 6;
    for (const auto& r : rows) {
      w0 = std::max(w0, r[0].size());
      w1 = std::max(w1, r[1].size());
    }
    for (const auto& r : rows) {
      std::string line = r[0] + std::string(w0 - r[0].size() + 2, ' ') + r[1];
      if (!r[2].empty()) line += std::string(w1 - r[1].size() + 2, ' ') + r[2];
      out << line << '\n';
    }
    out << std::flush;
  }
};

void run_bench(const BenchArgs& args, Context& ctx) {
  const std::uint64_t chip_steps = args.steps ? args.steps : (args.quick ? 40000 : 200000);
  const double min_time = args.quick ? 0.3 : 1.0;
  std::ostream& out = ctx.out();
  Table table;
  ordered_json j;

  // ---------------------------------------------------------------- guest
  fs::path guest_path = args.guest;
  if (guest_path.empty()) {
    std::string searched;
    guest_path = find_guest(ctx, {"muldiv.elf", "crc32.elf"}, &searched);
    if (guest_path.empty()) {
      throw InputError("no directed guest found (searched " + searched +
                       "; build the guests, set LOCKSTEP_GUEST_DIR, or pass --guest ELF)");
    }
  }
  engine::Guest guest;
  try {
    guest = engine::read_guest(guest_path);
  } catch (const engine::CheckError& e) {
    throw InputError(e.what());
  }
  ref::Machine m;
  try {
    m.load(guest.image);
  } catch (const std::exception& e) {
    throw InputError(std::string("--guest: ") + e.what() + " (" + guest_path.string() + ")");
  }
  {
    char when[32];
    const std::time_t now = std::time(nullptr);
    std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    j["date"] = when;
    j["quick"] = args.quick;
    j["cpus"] = std::thread::hardware_concurrency();
    // How the CPU figures were measured: the executor's pipeline runs a step's layer halves on two
    // threads where this process may use two CPUs ($LOCKSTEP_CPU_THREADS decides when set).
    j["usable_cpus"] = chip::CpuExecutor::usable_cpus();
    j["cpu_pipelining"] = chip::CpuExecutor::default_pipelining();
    double load[3] = {0, 0, 0};
    if (::getloadavg(load, 3) >= 1) j["load_average"] = load[0];
    out << "lockstep bench" << (args.quick ? " --quick" : "") << ": " << when << ", "
        << std::thread::hardware_concurrency() << " CPUs (" << chip::CpuExecutor::usable_cpus()
        << " usable; CPU executor " << (chip::CpuExecutor::default_pipelining() ? "pipelined" : "not pipelined")
        << "), load average " << fmt("%.2f", load[0])
        << " (figures are lower bounds when other work shares the machine)\n";
  }
  j["guest"] = guest_path.string();

  const chip::GuestImage img = engine::to_chip_image(guest.image);  // the guest as every chip row resets it

  // The chip under test is started first: one that cannot be started or spoken to is an error
  // before minutes of other measurements, not after them (found by an outside tester).
  std::unique_ptr<dut::DutBackend> dut_backend;
  if (!args.dut.empty() && args.cuda_only)  // (found by an outside tester: --dut was silently ignored)
    throw InputError("--dut/--dut-connect: --cuda-only measures the CUDA executor alone; drop one of them");
  if (!args.dut.empty()) {
    try {
      dut_backend = std::make_unique<dut::DutBackend>(args.dut);
    } catch (const std::exception& e) {
      throw InputError(e.what());
    }
  }

  // ------------------------------------------------------------ reference
  // The figures are of whole runs of a guest that exits, at least as long as the chip's and the
  // lock-step rows run (found by an outside tester: a guest of 13 steps was "40000 steps, every
  // token equal", and one that never ends hung the bench with nothing printed).
  constexpr std::uint64_t kMaxGuestSteps = 200'000'000;
  m.run(kMaxGuestSteps);
  const std::uint64_t insns = m.instructions_retired(), tokens = m.steps();
  if (insns == 0 || tokens == 0) throw InputError("--guest: " + guest_path.string() + " retires no instruction");
  if (m.status() == ref::Status::kRunning)
    throw InputError("--guest: " + guest_path.string() + " does not exit within " + std::to_string(kMaxGuestSteps) +
                     " trace steps: the bench measures whole runs of a guest that exits");
  if (m.status() == ref::Status::kTrapped) {
    char pc[16];
    std::snprintf(pc, sizeof pc, "0x%08x", m.pc());
    throw InputError("--guest: " + guest_path.string() + " ends in trap " + std::to_string(m.trap_code()) + " " +
                     std::string(format::trap_name(m.trap_code())) + " at pc " + pc +
                     " after " + std::to_string(tokens) + " steps: the bench measures a guest that exits (lockstep ref shows the trap)");
  }
  const int guest_exit_status = static_cast<int>(m.exit_status());
  // The chip's rows (CPU, CUDA, protocol, chip under test) run --steps; the lock-step rows, not
  // under --cuda-only, --lockstep-steps (found by an outside tester: --cuda-only skipped the check).
  if (tokens < chip_steps || (!args.cuda_only && tokens < args.lockstep_steps)) {
    const bool chip_rows = tokens < chip_steps, lockstep_rows = !args.cuda_only && tokens < args.lockstep_steps;
    throw InputError("--guest: " + guest_path.string() + " exits after " + std::to_string(tokens) + " trace steps, fewer than " +
                     (chip_rows ? "the " + std::to_string(chip_steps) + " steps the chip's rows run and check (--steps)" : std::string()) +
                     (chip_rows && lockstep_rows ? " and " : "") +
                     (lockstep_rows ? "the " + std::to_string(args.lockstep_steps) + " steps of the lock-step rows (--lockstep-steps)"
                                    : std::string()) +
                     ": give a longer guest, or fewer steps");
  }
  // The chip under test answers its first steps now, before minutes of other measurements: one
  // that fails at its first real request fails the bench at once (found by an outside tester: a
  // chip that tripped after 100 steps failed the bench after every other row had been measured,
  // and they were lost). Its tokens are compared in its rows below.
  if (dut_backend) {
    try {
      dut_backend->set_num_streams(1);
      dut_backend->reset(0, img);
      const std::vector<chip::StreamId> one = {0};
      const std::vector<std::uint32_t> count = {static_cast<std::uint32_t>(std::min<std::uint64_t>(chip_steps, 1000))};
      const std::vector<chip::Token> start = {format::kStartToken};
      std::vector<chip::Token> got(count[0]);
      dut_backend->free_running_batch(one, count, start, got);
    } catch (const std::exception& e) {
      throw InputError(e.what());
    }
  }
  double untraced_cpu = 0, traced_cpu = 0;
  const auto untraced = repeat(min_time, 1000000, [&] {
    m.load(guest.image);
    m.run(~0ull);
  }, &untraced_cpu);
  std::uint32_t digest = 0;
  const auto traced = repeat(min_time, 1000000, [&] {
    m.load(guest.image);
    m.run(~0ull, [&](std::span<const std::uint32_t> t) {
      for (std::uint32_t x : t) digest = digest * 31 + x;  // consume every token
    });
  }, &traced_cpu);
  const double ref_ips = static_cast<double>(insns * untraced.first) / untraced.second;
  const double ref_run_s = untraced.second / static_cast<double>(untraced.first);
  const double ref_tps = static_cast<double>(tokens * traced.first) / traced.second;
  j["reference"] = {{"instructions", insns},
                    {"trace_tokens", tokens},
                    {"runs_untraced", untraced.first},
                    {"instructions_per_second", ref_ips},
                    {"seconds_per_run", ref_run_s},
                    {"runs_traced", traced.first},
                    {"trace_tokens_per_second", ref_tps},
                    {"instructions_per_cpu_second", static_cast<double>(insns * untraced.first) / untraced_cpu},
                    {"trace_tokens_per_cpu_second", static_cast<double>(tokens * traced.first) / traced_cpu},
                    {"instructions_per_second_traced", static_cast<double>(insns * traced.first) / traced.second},
                    {"token_digest", digest}};
  const std::string gname = guest_path.filename().string();
  table.add("guest", gname + ": " + std::to_string(insns) + " instructions, " + std::to_string(tokens) +
                         " trace tokens");

  // ----------------------------------------------------------------- qemu
  const fs::path qemu = on_path("qemu-riscv32");
  std::string qemu_beside = "qemu-riscv32 not found";
  if (args.cuda_only) {
    j["qemu"] = {{"skipped", "--cuda-only"}};
    qemu_beside = "qemu-riscv32 not run (--cuda-only)";
  } else if (qemu.empty()) {
    j["qemu"] = {{"found", false}, {"skipped", "qemu-riscv32 not found"}};
  } else {
    int rc = 0;
    // The guest's own exit status is qemu's when it runs right (found by an outside tester: a
    // guest that exits 7 was reported as a failed qemu run).
    const double qemu_timeout_s = std::max(60.0, 100 * ref_run_s);
    bool failed = false;
    const auto q = repeat(min_time, args.quick ? 20 : 200, [&] {
      if (failed) return;
      rc = run_quiet(qemu, guest_path, qemu_timeout_s);
      failed = rc != guest_exit_status;
    });
    if (failed) {
      const std::string why = rc == kTimedOut ? "qemu-riscv32 did not end within " + fmt("%.0f s", qemu_timeout_s)
                              : rc == -1      ? std::string("qemu-riscv32 could not be run")
                                              : "qemu-riscv32 exited " + std::to_string(rc) + ", the reference " +
                                               std::to_string(guest_exit_status);
      j["qemu"] = {{"found", true}, {"path", qemu.string()}, {"skipped", why}};
      qemu_beside = why;
    } else {
      const double q_run_s = q.second / static_cast<double>(q.first);
      const double q_ips = static_cast<double>(insns) / q_run_s;
      j["qemu"] = {{"found", true},
                   {"path", qemu.string()},
                   {"runs", q.first},
                   {"seconds_per_run", q_run_s},
                   {"instructions_per_second", q_ips},
                   {"reference_over_qemu", ref_ips / q_ips}};
      qemu_beside = "qemu-riscv32: " + si(q_ips, "instructions/s") + " (" + fmt("%.3f", q_run_s) +
                    " s a run, process start included); reference/qemu " + fmt("%.2fx", ref_ips / q_ips);
    }
  }
  table.add("reference, untraced",
            si(ref_ips, "instructions/s") + " (" +
                si(static_cast<double>(insns * untraced.first) / untraced_cpu, "per CPU second") + ")",
            qemu_beside);
  table.add("reference, traced",
            si(ref_tps, "trace tokens/s") + " (" +
                si(static_cast<double>(tokens * traced.first) / traced_cpu, "per CPU second") + ")",
            "(" + si(static_cast<double>(insns * traced.first) / traced.second, "instructions/s") +
                " traced; qemu-riscv32 has no trace)");

  // ------------------------------------------------------------ chip file
  // Without --chip: the built chip's file, as every other command loads it (a prebuilt one in a
  // build without the chip compiler; found by an outside tester: bench alone ignored it).
  fs::path chip_path = args.chip;
  if (std::error_code ec; chip_path.empty() && fs::is_regular_file(engine::built_chip_file(), ec))
    chip_path = engine::built_chip_file();
  if (chip_path.empty() && !ctx.executable().empty()) {
    const fs::path built = ctx.executable().parent_path().parent_path() / "chips" / "rv32.chip";
    std::error_code ec;
    if (fs::is_regular_file(built, ec)) chip_path = built;
  }
  std::shared_ptr<const chip::Chip> chip;
  ordered_json jc;
  const auto c0 = Clock::now();
  if (!chip_path.empty()) {
    try {
      chip = std::make_shared<const chip::Chip>(chip::load_chip(chip_path.string()));
    } catch (const std::exception& e) {
      throw InputError("--chip: " + std::string(e.what()));
    }
    const double load_s = seconds_since(c0);
    const auto bytes = fs::file_size(chip_path);
    jc["file"] = chip_path.string();
    jc["file_bytes"] = bytes;
    jc["load_seconds"] = load_s;
    jc["original_checkpoint_over_file"] = kOriginalCheckpointBytes / static_cast<double>(bytes);
    table.add("chip file", fmt("%.1f MB", bytes / 1e6) + ", loaded in " + fmt("%.3f s", load_s),
              "original: 26.7 GB checkpoint (" + fmt("%.0fx", kOriginalCheckpointBytes / bytes) + " ours)");
  } else {
    // The built chip's compiler, registered by main.cpp (cli/builtin_chip.h).
    const engine::BackendFactory& factory = engine::backend_factory();
    if (!factory.has_chip(engine::kBuiltChipName)) {
      throw InputError("no chip file found and no chip compiler in this build: pass --chip FILE");
    }
    chip = std::make_shared<const chip::Chip>(factory.compile_chip(engine::kBuiltChipName));
    const double compile_s = seconds_since(c0);
    jc["file"] = nullptr;
    jc["compile_seconds"] = compile_s;
    table.add("chip file", "none found (build rv32_chip_file or pass --chip); compiled in " + fmt("%.2f s", compile_s));
  }
  jc["layers"] = chip->layers.size();
  jc["d_model"] = chip->config.d_model;
  jc["vocab_size"] = chip->config.vocab_size;

  // ---------------------------------------------------------- chip speed
  // The reference's first tokens: the chip's free-running output is checked against them (a speed
  // of wrong tokens would mean nothing), outside the timed loops.
  std::vector<std::uint32_t> expect;
  m.load(guest.image);
  m.run(chip_steps, [&](std::span<const std::uint32_t> t) { expect.insert(expect.end(), t.begin(), t.end()); });
  // Steps (1-based) where `got` first differs from the reference; 0 when it agrees throughout.
  auto first_difference = [&](const std::vector<chip::Token>& got) -> std::uint64_t {
    const std::size_t n = std::min(got.size(), expect.size());
    for (std::size_t i = 0; i < n; ++i)
      if (got[i] != expect[i]) return i + 1;
    return 0;
  };
  auto agreement = [&](std::uint64_t diff) {
    return diff ? "the chip's token differs from the reference's at step " + std::to_string(diff)
                : std::string("every token equal to the reference's");
  };
  double single_tps = 0;
  if (args.cuda_only) jc["skipped"] = "--cuda-only";
  if (!args.cuda_only) {
  {
    chip::CpuExecutor ex(chip, 1);
    ex.reset(0, img);
    const double c0 = cpu_seconds();
    const auto t0 = Clock::now();
    const std::vector<chip::Token> toks = ex.free_running(0, format::kStartToken, chip_steps);
    const double s = seconds_since(t0), cpu = cpu_seconds() - c0;
    single_tps = static_cast<double>(toks.size()) / s;
    const std::uint64_t diff = first_difference(toks);
    jc["single"] = {{"streams", 1},
                    {"steps", toks.size()},
                    {"seconds", s},
                    {"tokens_per_second", single_tps},
                    {"tokens_per_cpu_second", static_cast<double>(toks.size()) / cpu},
                    {"agrees_with_reference", diff == 0},
                    {"first_difference_step", step_or_null(diff)}};
    table.add("chip, CPU executor, 1 stream", si(single_tps, "tokens/s") + " (" + std::to_string(toks.size()) +
                                                  " steps free-running; " +
                                                  si(static_cast<double>(toks.size()) / cpu, "per CPU second") +
                                                  "; " + agreement(diff) + ")",
              "anchors (other machines, not ratios): original ~3,300 tokens/s on an L4; public "
              "compiled-transformer VM ~30,000 on a CPU");
  }
  {
    const std::size_t b = args.streams;
    const std::uint64_t per = std::max<std::uint64_t>(chip_steps / b, 1);
    chip::CpuExecutor ex(chip, b);
    std::vector<chip::StreamId> ids(b);
    for (std::size_t i = 0; i < b; ++i) {
      ids[i] = static_cast<chip::StreamId>(i);
      ex.reset(ids[i], img);
    }
    std::vector<chip::Token> in(b, format::kStartToken), outt(b, 0);
    std::uint64_t diff = 0;  // first step where some stream differs from the reference
    const double c0 = cpu_seconds();
    const auto t0 = Clock::now();
    for (std::uint64_t n = 0; n < per; ++n) {
      ex.step_batch(ids, in, outt);
      if (diff == 0 && n < expect.size())
        for (chip::Token t : outt)
          if (t != expect[n]) diff = n + 1;
      in.swap(outt);
    }
    const double s = seconds_since(t0), cpu = cpu_seconds() - c0;
    const double tps = static_cast<double>(per * b) / s;
    jc["batched"] = {{"streams", b},
                     {"steps_per_stream", per},
                     {"seconds", s},
                     {"tokens_per_second", tps},
                     {"tokens_per_cpu_second", static_cast<double>(per * b) / cpu},
                     {"over_single", tps / single_tps},
                     {"agrees_with_reference", diff == 0},
                     {"first_difference_step", step_or_null(diff)}};
    table.add("chip, CPU executor, " + std::to_string(b) + " streams",
              si(tps, "tokens/s") + " total (" + std::to_string(per) + " steps each; " +
                  si(static_cast<double>(per * b) / cpu, "per CPU second") + "; " +
                  (diff ? agreement(diff) : std::string("every stream equal to the reference")) + ")",
              fmt("%.2fx", tps / single_tps) + " the single stream");
  }
  }  // !--cuda-only
  j["chip"] = jc;

  // ----------------------------------------------------------------- CUDA
  // The CUDA executor (docs/cuda.md) when a device is present: one stream stepped from the host
  // (one launch and one synchronisation per token), one stream free-running on the device (one
  // launch), and --cuda-streams streams free-running together (one launch); every token checked
  // against the reference outside the timed parts.
  {
    std::string why;
    ordered_json jg;
    if (!chip::cuda_available(&why)) {
      jg = {{"executor", chip::cuda_compiled()}, {"skipped", "CUDA executor: " + why}};
      table.add("chip, CUDA executor", "skipped", "CUDA executor: " + why + "; target >= 100,000 tokens/s on an H200");
    } else {
#if LOCKSTEP_HAVE_CUDA  // (without CUDA, cuda_available() is false and CudaExecutor is not built)
      try {
        const std::uint64_t host_steps = std::min<std::uint64_t>(chip_steps, args.quick ? 2000 : 20000);
        const std::uint64_t per = std::min<std::uint64_t>(chip_steps, args.quick ? 500 : 2000);
        chip::CudaExecutor ex(chip, 1);
        jg["device"] = ex.device();
        ex.reset(0, img);
        (void)ex.free_running(0, format::kStartToken, 10);  // warm-up (module load, caches)
        ex.reset(0, img);
        auto t0 = Clock::now();
        const std::vector<chip::Token> a = ex.free_running(0, format::kStartToken, host_steps);
        const double sa = seconds_since(t0);
        const std::uint64_t da = first_difference(a);
        ex.reset(0, img);
        const std::vector<chip::StreamId> one = {0};
        const std::vector<chip::Token> first = {format::kStartToken};
        t0 = Clock::now();
        const std::vector<chip::Token> b = ex.free_run_batch(one, first, chip_steps);
        const double sb = seconds_since(t0);
        const std::uint64_t db = first_difference(b);
        const std::size_t B = args.cuda_streams;
        ex.set_num_streams(B);
        std::vector<chip::StreamId> ids(B);
        for (std::size_t i = 0; i < B; ++i) {
          ids[i] = static_cast<chip::StreamId>(i);
          ex.reset(ids[i], img);
        }
        const std::vector<chip::Token> firsts(B, format::kStartToken);
        t0 = Clock::now();
        const std::vector<chip::Token> c = ex.free_run_batch(ids, firsts, per);
        const double sc = seconds_since(t0);
        std::uint64_t dc = 0;
        for (std::size_t i = 0; i < B && dc == 0; ++i)
          dc = first_difference(std::vector<chip::Token>(c.begin() + static_cast<std::ptrdiff_t>(i * per),
                                                        c.begin() + static_cast<std::ptrdiff_t>((i + 1) * per)));
        const double ta = static_cast<double>(a.size()) / sa, tb = static_cast<double>(b.size()) / sb,
                     tc = static_cast<double>(c.size()) / sc;
        jg["executor"] = true;
        jg["single_host_steps"] = {{"steps", a.size()}, {"seconds", sa}, {"tokens_per_second", ta},
                                   {"agrees_with_reference", da == 0}, {"first_difference_step", step_or_null(da)}};
        jg["single_device_run"] = {{"steps", b.size()}, {"seconds", sb}, {"tokens_per_second", tb},
                                   {"agrees_with_reference", db == 0}, {"first_difference_step", step_or_null(db)}};
        jg["batched_device_run"] = {{"streams", B}, {"steps_per_stream", per}, {"seconds", sc},
                                    {"tokens_per_second", tc}, {"agrees_with_reference", dc == 0},
                                    {"first_difference_step", step_or_null(dc)}};
        table.add("chip, CUDA, 1 stream, a launch per step", si(ta, "tokens/s") + " (" + std::to_string(a.size()) +
                      " steps; " + agreement(da) + "; " + ex.device() + ")",
                  "target >= 100,000 tokens/s on an H200; original ~3,300 on an L4");
        table.add("chip, CUDA, 1 stream, one launch", si(tb, "tokens/s") + " (" + std::to_string(b.size()) +
                      " steps free-running on the device; " + agreement(db) + ")",
                  "target >= 100,000 tokens/s on an H200");
        table.add("chip, CUDA, " + std::to_string(B) + " streams, one launch",
                  si(tc, "tokens/s") + " total (" + std::to_string(per) + " steps each; " +
                      (dc ? agreement(dc) : std::string("every stream equal to the reference")) + ")",
                  "target >= 20,000,000 tokens/s summed on an H200");
      } catch (const std::exception& e) {
        // A device was there and the executor failed on it (out of memory, a kernel error): an
        // error of the bench, never a skip beside a green run (found by an outside tester reading
        // the code: only --cuda-only made it one).
        jg = {{"executor", true}, {"failed", std::string("CUDA executor failed: ") + e.what()}};
        table.add("chip, CUDA executor", "FAILED", std::string("CUDA executor failed: ") + e.what());
      }
#endif
    }
    j["cuda"] = jg;
  }

  // ------------------------------------------------------- lock-step rate
  // The harness's own rate: the reference and the CPU executor in lock-step (`lockstep run ELF
  // --mode free --steps N`, every step compared), on the scalar guest and on the story's first N
  // steps (stories_vx), in the same run, and their ratio (issue 30's target: at least 0.7).
  if (args.cuda_only) {
    j["lockstep"] = {{"skipped", "--cuda-only"}};
  } else {
    ordered_json jl;
    const std::uint64_t n = args.lockstep_steps;
    // Runs `g` free for n steps through run_check, as `lockstep run` does (no report folder).
    auto lockstep_rate = [&](const engine::Guest& g, ordered_json& r) {
      chip::CpuExecutor be(chip, 1);
      engine::CheckRequest req;
      req.command = "bench";
      req.the_case.guest_name = g.name;
      req.the_case.guest_path = g.path;
      req.the_case.mode = engine::Mode::kFree;
      req.the_case.steps = n;
      req.backend = &be;
      std::ostringstream quiet;
      const double c0 = cpu_seconds();
      const auto t0 = Clock::now();
      const engine::CheckOutcome o = engine::run_check(req, quiet);
      const double s = seconds_since(t0), cpu = cpu_seconds() - c0;
      const double per_cpu = static_cast<double>(o.result.steps) / cpu;
      r = {{"guest", g.path.string()},
           {"steps", o.result.steps},
           {"mismatches", o.result.mismatches},
           {"seconds", s},
           {"steps_per_second", static_cast<double>(o.result.steps) / s},
           {"steps_per_cpu_second", per_cpu},
           {"digest", o.result.digest}};
      table.add("lock-step, " + g.name + ", " + std::to_string(o.result.steps) + " steps",
                si(static_cast<double>(o.result.steps) / s, "steps/s") + " (" + si(per_cpu, "per CPU second") + "; " +
                    std::to_string(o.result.mismatches) + " mismatches)",
                "lockstep run " + g.path.filename().string() + " --mode free --steps " + std::to_string(n));
      return o.result.mismatches == 0 ? per_cpu : 0.0;
    };
    ordered_json scalar, story;
    const double scalar_rate = lockstep_rate(guest, scalar);
    jl["scalar"] = scalar;
    engine::Guest g;
    std::string why;
    if (!story_guest(ctx, "stories_vx", g, why)) {
      jl["story"] = {{"skipped", why}};
      table.add("lock-step, stories_vx", "skipped", why);
    } else {
      const double story_rate = lockstep_rate(g, story);
      jl["story"] = story;
      if (scalar_rate > 0 && story_rate > 0) {
        jl["story_over_scalar"] = story_rate / scalar_rate;
        table.add("lock-step, story / scalar rate", fmt("%.3f", story_rate / scalar_rate) + " (per CPU second, this run)",
                  "target: at least 0.7 (issue 30)");
      }
    }
    j["lockstep"] = jl;
  }

  // ----------------------------------------------------- chip under test
  // The protocol's cost (docs/spec/dut-protocol.md): the built-in CPU executor served by
  // `lockstep chip-server --stdio` over a pipe, against the same executor in process, in this run:
  // one stream and 64 streams free-running through the multi-step messages. Then the PyTorch
  // executor (python/examples/torch_chip.py, CPU) and the chip of --dut, when given. Every token
  // is checked against the reference outside the timed parts.
  if (!args.cuda_only) {  // (--cuda-only: none of this)
    ordered_json jd;
    // Free-runs `streams` streams of the guest for `per` steps each on `be`; tokens/s, and the
    // first step where a stream differs from the reference (0: none).
    auto free_run = [&](chip::ChipBackend& be, std::size_t streams, std::uint64_t per, std::uint64_t& diff) {
      be.set_num_streams(streams);
      std::vector<chip::StreamId> ids(streams);
      for (std::size_t i = 0; i < streams; ++i) {
        ids[i] = static_cast<chip::StreamId>(i);
        be.reset(ids[i], img);
      }
      const std::vector<std::uint32_t> counts(streams, static_cast<std::uint32_t>(per));
      const std::vector<chip::Token> first(streams, format::kStartToken);
      std::vector<chip::Token> out(streams * per);
      const auto t0 = Clock::now();
      be.free_running_batch(ids, counts, first, out);
      const double s = seconds_since(t0);
      diff = 0;
      for (std::size_t i = 0; i < streams && diff == 0; ++i)
        diff = first_difference(std::vector<chip::Token>(out.begin() + static_cast<std::ptrdiff_t>(i * per),
                                                         out.begin() + static_cast<std::ptrdiff_t>((i + 1) * per)));
      return static_cast<double>(streams * per) / s;
    };
    auto measure = [&](const std::string& label, chip::ChipBackend& be, std::size_t batch, std::uint64_t single_steps,
                       std::uint64_t batch_steps, const std::string& beside) {
      ordered_json r;
      std::uint64_t d1 = 0, dn = 0;
      const double t1 = free_run(be, 1, single_steps, d1);
      const std::size_t b = std::min<std::size_t>(batch, be.max_streams());
      const double tn = free_run(be, b, batch_steps, dn);
      r["single"] = {{"steps", single_steps}, {"tokens_per_second", t1}, {"agrees_with_reference", d1 == 0},
                     {"first_difference_step", step_or_null(d1)}};
      r["batched"] = {{"streams", b}, {"steps_per_stream", batch_steps}, {"tokens_per_second", tn},
                      {"agrees_with_reference", dn == 0}, {"first_difference_step", step_or_null(dn)}};
      table.add(label + ", 1 stream", si(t1, "tokens/s") + " (" + std::to_string(single_steps) + " steps; " +
                                          agreement(d1) + ")", beside);
      table.add(label + ", " + std::to_string(b) + " streams",
                si(tn, "tokens/s") + " total (" + std::to_string(batch_steps) + " steps each; " +
                    (dn ? agreement(dn) : std::string("every stream equal to the reference")) + ")",
                beside);
      return r;
    };
    const std::uint64_t per64 = std::max<std::uint64_t>(chip_steps / 64, 1);
    if (!chip_path.empty() && !ctx.executable().empty()) {
      try {
        dut::DutConfig server;
        server.command = ctx.executable().string() + " chip-server " + chip_path.string() + " --stdio --log-level warn";
        dut::DutBackend over_pipe(server);
        chip::CpuExecutor in_process(chip, 1);
        // In process and over the pipe alternately, the best of `reps` each: the two sides see the
        // same load on a shared machine, and the cost is not a difference of two noisy moments.
        const int reps = args.quick ? 2 : 3;
        const std::uint64_t n1 = args.quick ? chip_steps / 2 : chip_steps, n64 = std::max<std::uint64_t>(n1 / 64, 1);
        double in1 = 0, in64 = 0, p1 = 0, p64 = 0;
        std::uint64_t d = 0, dp1 = 0, dp64 = 0;  // the first differing step over the pipe, 1 and 64 streams
        for (int k = 0; k < reps; ++k) {
          in1 = std::max(in1, free_run(in_process, 1, n1, d));
          p1 = std::max(p1, free_run(over_pipe, 1, n1, d));
          if (!dp1) dp1 = d;
          in64 = std::max(in64, free_run(in_process, 64, n64, d));
          p64 = std::max(p64, free_run(over_pipe, 64, n64, d));
          if (!dp64) dp64 = d;
        }
        const std::uint64_t dp = dp1 ? dp1 : dp64;
        ordered_json r;
        r["single"] = {{"steps", n1}, {"tokens_per_second", p1}, {"agrees_with_reference", dp1 == 0},
                       {"first_difference_step", step_or_null(dp1)}};
        r["batched"] = {{"streams", 64}, {"steps_per_stream", n64}, {"tokens_per_second", p64},
                        {"agrees_with_reference", dp64 == 0}, {"first_difference_step", step_or_null(dp64)}};
        r["agrees_with_reference"] = dp == 0;
        r["best_of"] = reps;
        table.add("protocol: chip-server over a pipe, 1 stream",
                  si(p1, "tokens/s") + " (" + std::to_string(n1) + " steps, best of " + std::to_string(reps) + "; " +
                      agreement(dp1) + ")");
        table.add("protocol: chip-server over a pipe, 64 streams",
                  si(p64, "tokens/s") + " total (" + std::to_string(n64) + " steps each, best of " +
                      std::to_string(reps) + "; " +
                      (dp64 ? agreement(dp64) : std::string("every stream equal to the reference")) + ")");
        r["in_process"] = {{"single_tokens_per_second", in1}, {"batched_tokens_per_second", in64}};
        r["cost_single"] = 1 - p1 / in1;
        r["cost_batched"] = 1 - p64 / in64;
        table.add("protocol cost (same executor, this run)",
                  fmt("%.1f%%", 100 * (1 - p1 / in1)) + " of the in-process rate on 1 stream, " +
                      fmt("%.1f%%", 100 * (1 - p64 / in64)) + " on 64 streams (in process: " + si(in1, "tokens/s") +
                      ", " + si(in64, "tokens/s") + ")",
                  "target: at most 10% with 64 streams and the multi-step messages");
        jd["protocol"] = r;
      } catch (const std::exception& e) {
        jd["protocol"] = {{"skipped", e.what()}};
        table.add("protocol cost", "skipped", e.what());
      }
    }
    const fs::path torch_chip = ctx.source_root() / "python" / "examples" / "torch_chip.py";
    std::error_code ec;
    if (!chip_path.empty() && fs::is_regular_file(torch_chip, ec) && fs::exists("/usr/bin/python3", ec)) {
      try {
        dut::DutConfig tc;
        tc.command = "/usr/bin/python3 " + torch_chip.string() + " " + chip_path.string();
        dut::DutBackend torch(tc);
        jd["torch_chip"] = measure("PyTorch executor (torch_chip.py, CPU)", torch, 16, args.quick ? 100 : 2000,
                                   args.quick ? 20 : 200, "an independent executor of chip-format.md");
        jd["torch_chip"]["name"] = torch.hello().name;
      } catch (const std::exception& e) {
        jd["torch_chip"] = {{"skipped", e.what()}};
        table.add("PyTorch executor (torch_chip.py)", "skipped", e.what());
      }
    }
    if (dut_backend) {
      try {
        dut::DutBackend& d = *dut_backend;
        jd["dut"] = measure("chip under test (" + d.hello().name + ")", d, 64, chip_steps, per64, args.dut.describe());
        jd["dut"]["name"] = d.hello().name;
        jd["dut"]["identity"] = d.identity();
      } catch (const std::exception& e) {
        throw InputError(e.what());
      }
    }
    j["dut"] = jd;
  }

  // -------------------------------------------------------------- stories
  ordered_json js;
  auto skip_story = [&](const char* name, const std::string& why) {
    js[name] = {{"skipped", why}};
    table.add(std::string("trace tokens per story token, ") + name, "skipped", why);
  };
  if (args.cuda_only) {
    js["skipped"] = "--cuda-only";
  } else {
  {  // stories_vx: the whole story on the reference = `lockstep story --reference-only`.
    engine::Guest g;
    std::string why;
    if (story_guest(ctx, "stories_vx", g, why)) {
      const auto t0 = Clock::now();
      const engine::StreamResult r = engine::run_reference(g, 0);
      const double s = seconds_since(t0);
      const std::uint64_t n = story_tokens(r.console);
      if (r.end != "exit" || n == 0) {
        skip_story("stories_vx", "the guest ended with '" + r.end + "' and no tokens: line");
      } else {
        const double per = static_cast<double>(r.steps) / n;
        js["stories_vx"] = {{"guest", g.path.string()},
                            {"steps", r.steps},
                            {"story_tokens", n},
                            {"trace_tokens_per_story_token", per},
                            {"method", "whole story / story tokens (start-up and exit included)"},
                            {"original_over_ours", kOriginalTokensPerStoryToken / per}};
        j["story_check"] = {{"guest", g.path.string()},
                            {"command", "lockstep story --reference-only"},
                            {"steps", r.steps},
                            {"wall_seconds", s},
                            {"digest", r.digest}};
        table.add("trace tokens per story token, stories_vx",
                  fmt("%.0f", per) + " (" + std::to_string(r.steps) + " steps / " + std::to_string(n) + " tokens)",
                  "original: 53,000 (" + fmt("%.1fx", kOriginalTokensPerStoryToken / per) + " ours)");
        table.add("reference-only story check", fmt("%.3f s", s) + " wall (" + std::to_string(r.steps) + " steps)",
                  "lockstep story --reference-only");
      }
    } else {
      skip_story("stories_vx", why);
      j["story_check"] = {{"skipped", why}};
      table.add("reference-only story check", "skipped", why);
    }
  }
  {  // stories_c: --quick: the marginal cost of story token 2 (two short runs); else the whole story.
    engine::Guest g;
    std::string why;
    if (story_guest(ctx, "stories_c", g, why)) {
      auto run = [&](std::int32_t tokens, std::uint64_t& steps, std::uint64_t& n) {
        engine::Guest sized = g;
        if (tokens > 0 && !set_story_tokens(sized.image, tokens)) return false;
        const engine::StreamResult r = engine::run_reference(sized, 0);
        steps = r.steps;
        n = story_tokens(r.console);
        return r.end == "exit" && n > 0;
      };
      std::uint64_t s1 = 0, n1 = 0, s2 = 0, n2 = 0;
      const auto t0 = Clock::now();
      bool ok;
      std::string method;
      if (args.quick) {
        ok = run(1, s1, n1) && run(2, s2, n2) && n2 > n1 && s2 > s1;
        method = "marginal: (steps of a 2-token story - steps of a 1-token story) / 1";
      } else {
        ok = run(0, s2, n2);
        method = "whole story / story tokens (start-up and exit included)";
      }
      const double s = seconds_since(t0);
      if (!ok) {
        skip_story("stories_c", "the guest did not end with a tokens: line (or is not resizable)");
      } else {
        const double per = args.quick ? static_cast<double>(s2 - s1) / static_cast<double>(n2 - n1)
                                      : static_cast<double>(s2) / static_cast<double>(n2);
        js["stories_c"] = {{"guest", g.path.string()},
                           {"steps", s2},
                           {"story_tokens", n2},
                           {"trace_tokens_per_story_token", per},
                           {"method", method},
                           {"wall_seconds", s},
                           {"original_over_ours", kOriginalTokensPerStoryToken / per}};
        table.add("trace tokens per story token, stories_c",
                  fmt("%.0f", per) + (args.quick ? " (story token 2 alone)" : " (whole story)"),
                  "original: 53,000 (ours " + fmt("%.0fx", per / kOriginalTokensPerStoryToken) +
                      " more: plain C, no vector unit)");
      }
    } else {
      skip_story("stories_c", why);
    }
  }
  }  // !--cuda-only
  j["stories"] = js;
  j["anchors"] = {{"original_trace_tokens_per_story_token", kOriginalTokensPerStoryToken},
                  {"original_tokens_per_second_l4", kOriginalTokensPerSecondL4},
                  {"original_checkpoint_bytes", kOriginalCheckpointBytes},
                  {"public_vm_tokens_per_second_cpu", kPublicVmTokensPerSecondCpu}};

  table.print(out);
  for (auto it = j.begin(); it != j.end(); ++it) ctx.summary.set(it.key(), it.value());
  // Every measurement checks the chip's tokens against the reference's: one that disagreed
  // makes the bench a mismatch (exit 1), never "exact" (found by outside testers: a wrong chip's
  // bench said exact, 0 mismatches, exit 0).
  std::vector<std::string> disagreed;
  std::function<void(const ordered_json&, const std::string&)> walk = [&](const ordered_json& v, const std::string& path) {
    if (v.is_object()) {
      if (auto a = v.find("agrees_with_reference"); a != v.end() && a->is_boolean() && !a->get<bool>())
        disagreed.push_back(path);
      else if (auto m = v.find("mismatches"); m != v.end() && m->is_number_unsigned() && m->get<std::uint64_t>() > 0)
        disagreed.push_back(path);
      for (auto it = v.begin(); it != v.end(); ++it) walk(*it, path.empty() ? it.key() : path + "." + it.key());
    } else if (v.is_array()) {
      for (std::size_t i = 0; i < v.size(); ++i) walk(v[i], path + "[" + std::to_string(i) + "]");
    }
  };
  walk(j, "");
  if (!disagreed.empty()) {
    ctx.summary.add_mismatches(disagreed.size());
    ctx.summary.set("disagreed", disagreed);
    std::string list;
    for (std::size_t i = 0; i < disagreed.size() && i < 4; ++i) list += (i ? ", " : "") + disagreed[i];
    if (disagreed.size() > 4) list += ", ...";
    std::cerr << "lockstep: the chip's tokens differ from the reference's in " << disagreed.size()
              << " of the measurements (" << list
              << "): their rates are of wrong tokens; find the first divergence with lockstep run\n";
  }
  if (j["cuda"].contains("failed"))
    throw InputError("bench: " + j["cuda"]["failed"].get<std::string>() + " (the other figures above were measured)");
  // --cuda-only asked for the CUDA executor's figures alone: without them nothing asked for was
  // measured, an unavailable backend (exit 2, docs/ci.md), never a pass.
  if (args.cuda_only && j["cuda"].contains("skipped")) {
    throw InputError("--cuda-only: the CUDA executor was not measured (" + j["cuda"]["skipped"].get<std::string>() +
                     "); the reference's figures above are all this run has");
  }
}

}  // namespace

void add_bench_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<BenchArgs>();
  auto* cmd = app.add_subcommand(
      "bench", "Measure the reference (beside qemu-riscv32), the chip's CPU executor and the story guests in one run");
  cmd->add_flag("--quick", args->quick, "Shorter measurements: the whole run in about half a minute on two cores (with --dut, longer by the chip under test's speed)");
  cmd->add_flag("--cuda-only", args->cuda_only,
                "Measure the CUDA executor alone (with the reference it is checked against): no qemu, "
                "CPU executor, protocol or story figures");
  cmd->add_option("--chip", args->chip, "Chip file (default: the build's chips/rv32.chip)");
  cmd->add_option("--guest", args->guest, "Guest ELF (default: the directed guest muldiv.elf, else crc32.elf)");
  // Ranges in the parser, so that help, the error and the check agree (found by an outside tester:
  // the error said 0 to 2^64-1, 0 was then refused, and 2^64-1 steps was an internal error).
  // 10^7 steps is 50 times the default; a run's memory grows with its steps.
  cmd->add_option("--steps", args->steps, "Chip steps to free-run (default: 40,000 with --quick, else 200,000)")
      ->check(count_range(1, 10'000'000));
  cmd->add_option("--streams", args->streams, "Streams of the batched chip run")
      ->check(count_range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--cuda-streams", args->cuda_streams,
                  "Streams of the batched CUDA run (default 1,024; 256 with --quick; about 45 MB of device memory each)")
      ->check(count_range(1, 4096));
  cmd->add_option("--lockstep-steps", args->lockstep_steps,
                  "Steps of each lock-step run, the scalar guest's and the story's (default 300,000; 20,000 with "
                  "--quick)")
      ->check(count_range(1, 10'000'000));
  add_dut_options(cmd, args->dut);
  cmd->callback([&ctx, args, cmd] {
    // $LOCKSTEP_CPU_THREADS, checked and obeyed as by run and story: this command makes its CPU
    // executors itself (found by an outside tester: 7 was taken, and 1 still started pipelines).
    try {
      chip::CpuExecutor::set_default_pipelining(engine::cpu_pipelining_from_env());
    } catch (const std::runtime_error& e) {
      throw InputError(e.what());
    }
    check_dut_options(cmd, args->dut, "", "");
    if (args->cuda_streams == 0) args->cuda_streams = args->quick ? 256 : 1024;
    if (args->lockstep_steps == 0) args->lockstep_steps = args->quick ? 20000 : 300000;
    run_bench(*args, ctx);
  });
}

}  // namespace lockstep::cli
