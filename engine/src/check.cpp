#include "lockstep/engine/check.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <new>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <ostream>
#include <sstream>

#include "lockstep/engine/backend_factory.h"
#include "lockstep/engine/digest.h"
#include "lockstep/engine/guest.h"
#include "lockstep/engine/shadow.h"
#include "lockstep/format/error.h"
#include "lockstep/format/shell.h"
#include "lockstep/format/tokens.h"
#include "lockstep/ref/loop_watch.h"
#include "lockstep/ref/machine.h"
#include "lockstep/ref/trap_access.h"
#include "lockstep/reports/files.h"
#include "lockstep/reports/report.h"
#include "serial.h"
#include "lockstep/format/json_text.h"

namespace lockstep::engine {

using nlohmann::json;
namespace fs = std::filesystem;

// ------------------------------------------------------------------ chips

// The built chip: the file this build's chip compiler (chip/rv32) wrote, or, in a build
// configured without the compiler (-DLOCKSTEP_COMPILE_CHIP=OFF), the prebuilt file it was given;
// failing that, the chip registered as kBuiltChipName in the backend factory (the `lockstep`
// main registers chip/rv32's compiler there), compiled on demand.
bool have_built_chip() {
  if (backend_factory().has_chip(kBuiltChipName)) return true;
#ifdef LOCKSTEP_BUILT_CHIP_FILE
  std::error_code ec;
  return fs::exists(LOCKSTEP_BUILT_CHIP_FILE, ec);
#else
  return false;
#endif
}

fs::path built_chip_file() {
#ifdef LOCKSTEP_BUILT_CHIP_FILE
  return LOCKSTEP_BUILT_CHIP_FILE;
#else
  return {};
#endif
}

LoadedChip load_chip_or_built(const std::string& path, const std::string& named_by) {
  LoadedChip out;
  chip::Chip c;
  if (!path.empty()) {
    try {
      c = chip::load_chip(path);
    } catch (const std::bad_alloc&) {
      throw;  // no fault of the file: the command says it ran out of memory
    } catch (const std::exception& e) {
      throw CheckError(named_by + ": " + e.what());
    }
    out.source = path;
  } else {
    // The build's chip file (chip/rv32/CMakeLists.txt); compiled here when it is missing (e.g. a
    // binary moved away from its build tree). A file that exists but does not load is an error.
    bool loaded = false;
#ifdef LOCKSTEP_BUILT_CHIP_FILE
    std::error_code ec;
    if (fs::exists(LOCKSTEP_BUILT_CHIP_FILE, ec)) {
      try {
        c = chip::load_chip(LOCKSTEP_BUILT_CHIP_FILE);
      } catch (const std::bad_alloc&) {
        throw;
      } catch (const std::exception& e) {
        // A prebuilt file (no chip compiler here) is not remade by a rebuild.
        throw CheckError(std::string("the built chip file: ") + e.what() +
                         (backend_factory().has_chip(kBuiltChipName)
                              ? " (rebuild, or pass --chip FILE)"
                              : " (the chip file this build was configured with: replace it, or pass --chip FILE)"));
      }
      loaded = true;
      // A build without the chip compiler names its prebuilt file (it said "chip built").
      if (!backend_factory().has_chip(kBuiltChipName))
        out.source = std::string("prebuilt ") + LOCKSTEP_BUILT_CHIP_FILE;
    }
#endif
    if (!loaded) {
      const BackendFactory& factory = backend_factory();
      if (!factory.has_chip(kBuiltChipName)) {
        // (found by an outside tester: a prebuilt chip file that had gone was not named)
        const fs::path file = built_chip_file();
        throw CheckError(file.empty() ? std::string("no built chip in this build: pass --chip FILE")
                                      : "no built chip: " + file.string() +
                                            ", the chip file this build was configured with, does not exist: pass "
                                            "--chip FILE, or configure with -DLOCKSTEP_PREBUILT_CHIP=FILE");
      }
      c = factory.compile_chip(kBuiltChipName);
    }
    if (out.source.empty()) out.source = "built";
  }
  // A chip file's token ids are trace.md section 2's (only a chip under test may number its own,
  // through --dut-vocab): one that cannot take every trace token is refused here, by name, not
  // at the first input it cannot take.
  if (c.config.vocab_size < format::vocab_size()) {
    throw CheckError((path.empty() ? std::string("the built chip") : named_by + " " + path) + ": vocab_size " +
                     std::to_string(c.config.vocab_size) + " is below trace-v3's " +
                     std::to_string(format::vocab_size()) + " (a chip file takes the trace's token ids, trace.md §2)");
  }
  const auto bytes = chip::serialize_chip(c);
  out.hash = hex64(xxh3(bytes));
  out.chip = std::make_shared<const chip::Chip>(std::move(c));
  return out;
}

std::unique_ptr<chip::ChipBackend> make_backend(const std::string& name,
                                                std::shared_ptr<const chip::Chip> c) {
  try {
    return backend_factory().make_backend(name, std::move(c));
  } catch (const UnknownNameError& e) {
    // "--backend must be cpu or cuda (got 'x')": the registered names, the last after "or".
    const std::vector<std::string>& known = e.known();
    std::string list;
    for (std::size_t i = 0; i < known.size(); ++i) {
      if (i > 0) list += i + 1 == known.size() ? " or " : ", ";
      list += known[i];
    }
    throw CheckError("--backend must be " + list + " (got '" + name + "')");
  }
}

std::vector<std::string> capability_notes(const chip::Capabilities& caps, bool chip_file) {
  std::vector<std::string> out;
  if (!caps.probes) {
    out.push_back(chip_file ? "no PROBES: a divergence is located by the chip file beside it (--dut-chip), not by its probes"
                            : "no PROBES: no layer attribution of a divergence");
  }
  if (!caps.hash) out.push_back("no HASH: no state hashes (--hash-every is refused)");
  if (!caps.save_restore) {
    out.push_back("no SAVE_RESTORE: no snapshots (the replay after a divergence starts from the reset), "
                  "no checkpoints, --resume or --compare end");
  }
  if (!caps.multi_step) out.push_back("no MULTI_STEP: one STEP round trip per step (slower, same results)");
  return out;
}

std::unique_ptr<chip::ChipBackend> make_dut_backend(const dut::DutConfig& config, const std::string& chip_file_named_by) {
  std::unique_ptr<chip::ChipBackend> dut;
  try {
    dut = std::make_unique<dut::DutBackend>(config);
  } catch (const dut::DutError& e) {
    throw CheckError(e.what());
  }
  return with_chip_file(std::move(dut), config.chip_file.string(), chip_file_named_by);
}

Guest read_guest(const fs::path& path) {
  Guest g;
  g.name = path.stem().string();
  g.path = path;
  try {
    g.image = format::read_elf_file(path);
    // The machine's own load checks (segments inside RAM, the entry point, vector sections),
    // now and naming the file, rather than after the chip's load.
    ref::Machine m;
    m.load(g.image);
  } catch (const format::FormatError& e) {
    throw CheckError(e.what());  // read_elf_file's message names the file already
  } catch (const std::exception& e) {
    throw CheckError(std::string(e.what()) + " (in " + path.string() + ")");
  }
  return g;
}

// ------------------------------------------------------------------ cases

namespace {

constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(const std::vector<std::uint8_t>& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const std::uint32_t v = in[i] << 16 | in[i + 1] << 8 | in[i + 2];
    for (int s = 18; s >= 0; s -= 6) out += kB64[v >> s & 63];
  }
  if (i + 1 == in.size()) {
    const std::uint32_t v = in[i] << 16;
    out += kB64[v >> 18 & 63];
    out += kB64[v >> 12 & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const std::uint32_t v = in[i] << 16 | in[i + 1] << 8;
    out += kB64[v >> 18 & 63];
    out += kB64[v >> 12 & 63];
    out += kB64[v >> 6 & 63];
    out += '=';
  }
  return out;
}

std::vector<std::uint8_t> unbase64(const std::string& in) {
  std::vector<std::uint8_t> out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const char* p = std::strchr(kB64, c);
    if (!p || c == 0) throw CheckError("case: guest.elf_base64 is not base64");
    acc = acc << 6 | static_cast<std::uint32_t>(p - kB64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<std::uint8_t>(acc >> bits & 0xff));
    }
  }
  return out;
}

}  // namespace

json Case::to_json() const {
  json g = {{"name", guest_name}, {"path", guest_path.string()}, {"digest", guest_digest}};
  if (!guest_elf.empty()) g["elf_base64"] = base64(guest_elf);
  json j = {{"lockstep_case", 1},
          {"guest", g},
          {"chip", {{"path", chip_path.empty() ? json() : json(chip_path)}, {"hash", chip_hash}}},
          {"backend", backend},
          {"mode", std::string(to_string(mode))},
          {"teacher_forced_steps", teacher_forced_steps},
          {"compare", std::string(to_string(compare))},
          {"steps", steps},
          {"checkpoint_every", checkpoint_every},
          {"hash_every", hash_every},
          {"classify_window", classify_window},
          {"allow_trap", allow_trap},
          {"expect", expect}};
  if (dut) j["dut"] = dut->to_json();
  if (!command.empty()) j["command"] = command;
  return j;
}

namespace {

// case.json's fields, each checked for its type: a wrong one is named in one line.
[[noreturn]] void bad_case_field(const std::string& key, const json& v, const std::string& want) {
  throw CheckError("case: \"" + key + "\" is " + format::json_text(v) + ", not " + want);
}
std::string case_text(const json& o, const char* key, const std::string& def, const std::string& where = "") {
  const auto it = o.find(key);
  if (it == o.end()) return def;
  if (!it->is_string()) bad_case_field(where + key, *it, "text");
  return it->get<std::string>();
}
std::uint64_t case_count(const json& o, const char* key, const std::string& where = "") {
  const auto it = o.find(key);
  if (it == o.end()) return 0;
  if (!it->is_number_unsigned()) bad_case_field(where + key, *it, "a whole number >= 0");
  return it->get<std::uint64_t>();
}

}  // namespace

json Case::expect_of(const Divergence& d) {
  // What diverged there, so that a replay tells the same failure from another one at the same
  // step (found by an outside tester: any divergence at the step "reproduced").
  json e = {{"first_divergence", d.step},
            {"pc", d.pc},
            {"field", d.field},
            {"expected_token", d.expected},
            {"actual_token", d.actual},
            {"expected_text", d.expected_text},  // for the reader; the ids are compared
            {"actual_text", d.actual_text}};
  // an id the chip's vocabulary does not map is no token id: null, and the chip's own id beside it
  // (found by an outside tester: the harness's internal flag, 2^31 | id, leaked into case.json)
  if (d.actual & format::kUnmappedChipId) {
    e["actual_token"] = nullptr;
    e["actual_chip_id"] = d.actual & ~format::kUnmappedChipId;
  }
  return e;
}

Case Case::from_json(const json& j) {
  try {
    if (!j.is_object() || !j.contains("lockstep_case")) {
      throw CheckError("case: not a lockstep case (\"lockstep_case\": 1 missing)");
    }
    if (j["lockstep_case"] != 1) {
      throw CheckError("case: \"lockstep_case\" is " + format::json_text(j["lockstep_case"]) +
                       ": this harness reads version 1 (a case from another version of lockstep?)");
    }
    Case c;
    c.command = case_text(j, "command", "");
    // the command that wrote the case (its --resume and story checks read it): one of lockstep's
    if (!c.command.empty() && c.command != "run" && c.command != "story" && c.command != "fuzz")
      bad_case_field("command", j["command"], "the lockstep command that wrote the case (run, story or fuzz)");
    const auto gi = j.find("guest");
    if (gi == j.end()) throw CheckError("case: no \"guest\"");
    if (!gi->is_object()) bad_case_field("guest", *gi, "an object");
    const json& g = *gi;
    c.guest_name = case_text(g, "name", "", "guest.");
    c.guest_path = case_text(g, "path", "", "guest.");
    c.guest_digest = case_text(g, "digest", "", "guest.");
    if (g.contains("elf_base64")) {
      c.guest_elf = unbase64(case_text(g, "elf_base64", "", "guest."));
      if (c.guest_elf.empty()) bad_case_field("guest.elf_base64", g["elf_base64"], "the guest ELF in base64 (or no such field)");
    }
    if (c.guest_path.empty() && c.guest_elf.empty()) throw CheckError("case: guest has neither path nor elf_base64");
    const json ch = j.value("chip", json::object());
    if (!ch.is_object()) bad_case_field("chip", ch, "an object");
    if (ch.contains("path") && !ch["path"].is_null()) c.chip_path = case_text(ch, "path", "", "chip.");
    c.chip_hash = case_text(ch, "hash", "", "chip.");
    c.backend = case_text(j, "backend", "cpu");
    if (j.contains("dut") && !j["dut"].is_null()) {
      try {
        c.dut = dut::DutConfig::from_json(j["dut"]);
      } catch (const std::invalid_argument& e) {
        throw CheckError(std::string("case: ") + e.what());
      }
      if (j.contains("backend") && c.backend != "dut") {
        throw CheckError("case: \"backend\": \"" + c.backend +
                         "\" beside a \"dut\" object: a case runs either the built chip (cpu, cuda) or a chip "
                         "under test (dut); remove one of them");
      }
      c.backend = "dut";
    } else if (c.backend == "dut") {
      throw CheckError("case: backend dut without a \"dut\" object");
    }
    const auto m = parse_mode(case_text(j, "mode", "forced"));
    if (!m) throw CheckError("case: mode must be forced or free");
    c.mode = *m;
    c.teacher_forced_steps = case_count(j, "teacher_forced_steps");
    // as `run` refuses --teacher-forced-steps without --mode free: forced runs feed every step
    if (c.teacher_forced_steps && c.mode != Mode::kFree)
      bad_case_field("teacher_forced_steps", j["teacher_forced_steps"], "0 unless mode is free");
    const auto cmp = parse_compare(case_text(j, "compare", "step"));
    if (!cmp) throw CheckError("case: compare must be step or end");
    c.compare = *cmp;
    c.steps = case_count(j, "steps");
    c.checkpoint_every = case_count(j, "checkpoint_every");
    c.hash_every = case_count(j, "hash_every");
    if (j.contains("classify_window")) c.classify_window = case_count(j, "classify_window");
    if (c.classify_window == 0 || c.classify_window > 100'000'000)
      bad_case_field("classify_window", j["classify_window"], "a whole number 1..100000000 (what --classify-window takes)");
    // the step counts in the ranges `run` takes (cli/app.h kMaxStepsOption, 10^15)
    for (const char* k : {"steps", "teacher_forced_steps", "checkpoint_every", "hash_every"})
      if (case_count(j, k) > 1'000'000'000'000'000ull)
        bad_case_field(k, j[k], "a whole number up to 10^15 (what lockstep run takes)");
    if (j.contains("allow_trap")) {
      if (!j["allow_trap"].is_boolean()) bad_case_field("allow_trap", j["allow_trap"], "true or false");
      c.allow_trap = j["allow_trap"].get<bool>();
    }
    c.expect = j.value("expect", json());
    if (!c.expect.is_null() && !c.expect.is_object()) bad_case_field("expect", c.expect, "an object");
    if (c.expect.is_object()) {  // what replay compares (cmd_replay.cpp), of the types it reads
      const std::uint64_t steps = case_count(c.expect, "steps", "expect.");
      const std::uint64_t at = case_count(c.expect, "first_divergence", "expect.");
      if (at && c.expect.contains("steps") && steps < at)
        bad_case_field("expect.first_divergence", c.expect["first_divergence"],
                       "a step within expect.steps (" + std::to_string(steps) + ")");
      int given = 0;
      for (const char* k : {"pc", "expected_token", "actual_token", "actual_chip_id"}) {
        given += c.expect.contains(k) && k != std::string("actual_chip_id");
        if (k == std::string("actual_token") && c.expect.contains(k) && c.expect[k].is_null()) continue;
        if (case_count(c.expect, k, "expect.") > 0xffffffffull)
          bad_case_field(std::string("expect.") + k, c.expect[k], "a 32-bit whole number");
      }
      // a null actual_token is an unmapped chip id, whose number is actual_chip_id (expect_of)
      if (c.expect.contains("actual_token") && c.expect["actual_token"].is_null() &&
          (!c.expect.contains("actual_chip_id") || case_count(c.expect, "actual_chip_id") >= format::kUnmappedChipId))
        bad_case_field("expect.actual_chip_id", c.expect.value("actual_chip_id", json()),
                       "the chip's id below 2^31 (actual_token is null: an id the chip's vocabulary does not map)");
      given += c.expect.contains("field");
      case_text(c.expect, "field", "", "expect.");
      // what diverged is recorded whole, and only beside the step it diverged at (found by the
      // re-test: a missing pc was read as 0, a missing token made the pc ignored)
      if (given != 0 && given != 4)
        throw CheckError("case: \"expect\" has some of pc, field, expected_token and actual_token: give all four "
                         "(what diverged at first_divergence) or none");
      if (given == 4 && !at)
        throw CheckError("case: \"expect\" has pc, field and tokens of a divergence but no first_divergence");
      case_text(c.expect, "digest", "", "expect.");
      if (c.expect.contains("interrupted") && !c.expect["interrupted"].is_boolean())
        bad_case_field("expect.interrupted", c.expect["interrupted"], "true or false");
    }
    return c;
  } catch (const json::exception& e) {
    throw CheckError(std::string("case: a field of the wrong type (") + e.what() + ")");
  }
}

Case Case::read(const fs::path& path) {
  fs::path file = path;
  if (fs::is_directory(path)) file = path / "case.json";
  std::error_code ec;
  if (fs::is_directory(path) && !fs::exists(file, ec) && fs::exists(path / kEarlierRunFolder / "case.json", ec))
    throw CheckError("case: " + path.string() + " holds no case.json: its earlier run is kept in " +
                     (path / kEarlierRunFolder).string() + " (a later command given this folder ended without a run of "
                     "its own); give that folder");
  if (fs::is_directory(path) && !fs::exists(file, ec) && fs::exists(path / "fuzz.json", ec))
    throw CheckError("case: " + path.string() + " is a fuzz campaign's folder, which holds no case.json: give one of "
                     "its case folders (" + (path / "fail-").string() + "*, listed in its fuzz.json and report.html)");
  std::string text;
  try {
    text = reports::read_file_text(file);
  } catch (const std::runtime_error& e) {
    throw CheckError(std::string("case: ") + e.what());
  }
  if (text.empty()) throw CheckError("case: " + file.string() + " is empty (0 bytes): corrupt");
  json j;
  try {
    j = reports::parse_json_text(text, "case: " + file.string());
  } catch (const json::exception& e) {
    throw CheckError("case: " + file.string() + " is not JSON: " + reports::json_error_text(e));
  } catch (const std::runtime_error& e) {
    throw CheckError(e.what());
  }
  Case c = from_json(j);
  // A relative guest or chip path is relative to the case file's folder (found by an outside
  // tester: a hand-written relative chip.path was taken from the current folder, unlike the guest's).
  if (!c.guest_path.empty() && c.guest_path.is_relative() && c.guest_elf.empty()) {
    c.guest_path = file.parent_path() / c.guest_path;
  }
  if (!c.chip_path.empty() && fs::path(c.chip_path).is_relative())
    c.chip_path = (file.parent_path() / c.chip_path).string();
  if (c.dut && !c.dut->workdir.empty() && c.dut->workdir.is_relative()) c.dut->workdir = file.parent_path() / c.dut->workdir;
  return c;
}

Guest Case::guest() const {
  Guest g;
  if (!guest_elf.empty()) {
    g.name = guest_name.empty() ? "guest" : guest_name;
    g.path = guest_path;
    try {
      g.image = format::parse_elf(guest_elf);
    } catch (const std::exception& e) {
      throw CheckError(std::string("case: embedded guest: ") + e.what());
    }
  } else {
    g = read_guest(guest_path);
    if (!guest_name.empty()) g.name = guest_name;
  }
  if (!guest_digest.empty() && image_digest(g.image) != guest_digest) {
    throw CheckError("case: guest " + g.name + " has digest " + image_digest(g.image) + ", the case expects " +
                     guest_digest);
  }
  return g;
}

// ------------------------------------------------------------------ signals, progress

namespace {
std::atomic<bool> g_stop{false};
std::atomic<std::int64_t> g_first_stop_ns{0};  // CLOCK_MONOTONIC of the first signal
static_assert(std::atomic<std::int64_t>::is_always_lock_free);

std::int64_t monotonic_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_MONOTONIC, &t);  // async-signal-safe (POSIX.1-2017 §2.4.3)
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

extern "C" void on_stop_signal(int sig) {
  const std::int64_t now = monotonic_ns();
  if (!g_stop.exchange(true)) {
    g_first_stop_ns.store(now);
    return;
  }
  // A second signal ends the process, unless it came within a second of the first: GNU timeout
  // sends its SIGTERM to the process and then to its process group, so one timeout is two
  // signals at once, and the run must still write its report.
  if (now - g_first_stop_ns.load() < 1'000'000'000) return;
  std::signal(sig, SIG_DFL);
  std::raise(sig);  // delivered when the handler returns: the shell's 130 / 143
}
std::string human_count(double v) {
  char b[32];
  if (v >= 1e9) std::snprintf(b, sizeof b, "%.2fG", v / 1e9);
  else if (v >= 1e6) std::snprintf(b, sizeof b, "%.2fM", v / 1e6);
  else if (v >= 1e4) std::snprintf(b, sizeof b, "%.1fk", v / 1e3);
  else std::snprintf(b, sizeof b, "%.0f", v);
  return b;
}
std::string human_time(double s) {
  char b[32];
  if (s < 0 || s > 1e8) return "?";
  const long t = static_cast<long>(s + 0.5);
  if (t >= 3600) std::snprintf(b, sizeof b, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60) std::snprintf(b, sizeof b, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(b, sizeof b, "%lds", t);
  return b;
}
}  // namespace

const std::atomic<bool>* install_stop_handlers() {
  g_stop.store(false);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  // A closed terminal or ssh session (SIGHUP) stops a run as SIGTERM does: its results and an
  // interrupt checkpoint are written (found by an outside tester: the run died with no report).
  std::signal(SIGHUP, on_stop_signal);
  return &g_stop;
}

void add_stop_signal(int sig) { std::signal(sig, on_stop_signal); }

int terminal_columns() {
  struct winsize ws{};
  if (::ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* c = std::getenv("COLUMNS")) {
    const int n = std::atoi(c);
    if (n > 0) return n;
  }
  return 80;
}

std::string fit_columns(const std::string& line, int columns) {
  if (columns <= 0) return {};
  int chars = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xc0) == 0x80) continue;  // a continuation byte
    if (++chars > columns) return line.substr(0, i);
  }
  return line;
}

bool stderr_is_terminal() {
  const char* term = std::getenv("TERM");
  return isatty(2) == 1 && !(term && std::string(term) == "dumb");
}

ProgressLine::ProgressLine(std::ostream& err, bool terminal, double plain_interval)
    : err_(err), terminal_(terminal), plain_interval_(plain_interval) {}

void ProgressLine::output(char c) {
  // Printable ASCII only: no control byte (an escape sequence would drive the user's terminal)
  // and no byte >= 0x80 (a guest's binary output, or an 8-bit C1 control such as 0x9b, CSI)
  // reaches the terminal.
  const auto u = static_cast<unsigned char>(c);
  tail_ += (u < 0x20 || u == 0x7f) ? ' ' : u >= 0x80 ? '?' : c;
  if (tail_.size() > 48) tail_.erase(0, tail_.size() - 48);
}

void ProgressLine::update(const Progress& p) {
  std::ostringstream os;
  os << "step " << human_count(static_cast<double>(p.round));
  if (p.expected_round) os << "/" << human_count(static_cast<double>(p.expected_round));
  os << "  " << human_count(p.steps_per_second) << " steps/s";
  if (p.expected_round > p.round && p.steps_per_second > 0) {
    os << "  ETA " << human_time(static_cast<double>(p.expected_round - p.round) * static_cast<double>(p.active) /
                                 p.steps_per_second);
  }
  os << "  elapsed " << human_time(p.seconds);
  if (p.active > 1) os << "  streams " << p.active;
  if (!tail_.empty()) os << "  | " << tail_;
  if (terminal_) {
    // One column short of the width: a line that fills the last column wraps on some terminals.
    err_ << "\r\033[K" << fit_columns(os.str(), terminal_columns() - 1) << std::flush;
    shown_ = true;
  } else {
    err_ << "lockstep: progress: " << os.str() << "\n" << std::flush;
  }
}

void ProgressLine::clear() {
  if (terminal_ && shown_) {
    err_ << "\r\033[K" << std::flush;
    shown_ = false;
  }
}

// ------------------------------------------------------------------ checks

json summary_json(const std::string& command, const RunResult& r, const std::string& chip_source,
                  const std::string& chip_hash) {
  std::string status = r.mismatches > 0 ? "mismatch" : "exact";
  if (r.interrupted && r.mismatches == 0) status = "interrupted";
  // The facts --json gives at its top level are at the top level here too, under the same names
  // (found by an outside tester: a dashboard reading summary.json found no backend or mode).
  json s = {{"status", status},
            {"command", command},
            {"steps", r.steps},
            {"mismatches", r.mismatches},
            {"digest", r.digest},
            {"chip", chip_source},
            {"chip_hash", chip_hash},
            {"mode", r.mode},
            {"backend", r.backend},
            {"seconds", r.seconds},
            {"steps_per_second", r.steps_per_second},
            {"diagnosis_seconds", r.diagnosis_seconds}};
  if (r.interrupted) s["interrupted"] = true;  // as --json (also beside a mismatch)
  if (r.streams.size() == 1) {
    const StreamResult& one = r.streams.front();
    if (!one.end.empty()) s["end"] = one.end;
    if (one.end == "exit") s["exit_status"] = one.exit_status;
    if (one.end == "trap") {
      s["trap_code"] = one.trap_code;
      s["trap_name"] = std::string(format::trap_name(one.trap_code));
    }
  }
  s["run"] = r.to_json();
  return s;
}

// The summary of a run that failed with `what`: status "error" and the error, or, when a stop
// (SIGINT, SIGTERM, SIGHUP) came first and nothing was found wrong, the stop's: "interrupted"
// in every place summary.json has it, with `what` as the reason (found by an outside tester: a
// stop while the chip under test started left status "interrupted" beside "interrupted": false).
static void mark_failed(json& s, const std::string& what, bool stopped) {
  if (!stopped || s.value("mismatches", std::uint64_t{0}) > 0) {
    s["status"] = "error";
    s["error"] = what;
    return;
  }
  s["status"] = "interrupted";
  s["interrupted"] = true;
  s["interrupted_reason"] = what;
  if (s.contains("run") && s["run"].is_object()) s["run"]["interrupted"] = true;
}

std::string self_loop_line(const StreamResult& stream) {
  const std::string what = "the guest " + ref::describe_loop(stream.loop_pc, stream.loop_word, stream.loop_period);
  return what + " and can never exit: stopped after " + std::to_string(stream.steps) +
         " steps, the chip agreeing with the reference on every step; end the guest with the exit ecall (isa.md "
         "§5, guests/runtime), or pass --steps N to compare N steps of it";
}

std::string guest_end_text(const Guest& guest, const StreamResult& stream) {
  if (stream.end == "exit") return "the guest exited with status " + std::to_string(stream.exit_status);
  if (stream.end == "step_limit")
    return "the guest had not ended: stopped at the step limit after " + std::to_string(stream.steps) + " steps";
  if (stream.end != "trap") return "";
  std::string line = trap_end_line(guest, stream);
  return line.substr(0, line.find(" after ")) + trap_build_hint(guest.image, stream.trap_code);
}

std::string trap_end_line(const Guest& guest, const StreamResult& stream) {
  std::string where;
  try {
    ref::Machine m;
    m.load(guest.image);
    m.run(stream.ref_steps + 64);
    if (m.status() == ref::Status::kTrapped) {
      char buf[64];
      std::snprintf(buf, sizeof buf, " at pc 0x%08x", m.pc());
      where = buf;
      try {
        std::snprintf(buf, sizeof buf, " (word 0x%08x)", m.read_word(m.pc()));
        where += buf;
      } catch (const std::exception&) {
        // the pc is outside memory: the trap is the fetch's own
      }
      if (const auto access = ref::trap_access(m)) where += ref::describe(*access);
      where += ref::trap_reason(m);
    }
  } catch (const std::exception&) {
    // the image loaded for the run; a second load cannot fail, but the line must not
  }
  std::string line = "the guest ended in trap " + std::to_string(stream.trap_code) + " " +
                     std::string(format::trap_name(stream.trap_code)) + where + " after " +
                     std::to_string(stream.steps) + " steps, the chip agreeing with the reference on every step";
  return line + trap_build_hint(guest.image, stream.trap_code) + "; pass --allow-trap when the guest is meant to trap";
}

std::string trap_build_hint(const format::GuestImage& image, std::uint32_t trap_code) {
  if (image.e_flags & format::kEfRiscvRvc)
    return "; the ELF is marked RVC (compressed instructions, not part of this machine: build with -march=rv32im or "
           "rv32im_zba)";
  const std::uint32_t float_abi = image.e_flags & format::kEfRiscvFloatAbi;
  if (trap_code == static_cast<std::uint32_t>(ref::Trap::kIllegalInstruction) && float_abi != 0) {
    const char* abi = float_abi == 2 ? "ilp32f" : float_abi == 4 ? "ilp32d" : "ilp32q";
    return std::string("; the ELF is built for hard float (") + abi +
           ": F/D instructions, not part of this machine: build with -march=rv32im -mabi=ilp32)";
  }
  return "";
}

std::string result_text(const RunResult& r) {
  std::ostringstream os;
  for (const StreamResult& s : r.streams) {
    if (s.divergence) os << s.divergence->to_text();
    if (s.divergence_unlocated)
      os << "the reference's and the chip's digests of the " << s.steps << " steps compared differ (" << s.digest
         << " against " << s.chip_digest
         << "): a divergence lies among them, not located: " << s.unlocated_why << "\n";
  }
  char line[320];
  if (r.diagnosis_seconds > 0) {
    // The rate is the comparing's alone: the divergence's replay is not comparing speed.
    std::snprintf(line, sizeof line,
                  "steps compared %llu, mismatches %llu, digest %s (%.2f s: %.2f s comparing at %.0f steps/s, %.2f s "
                  "diagnosing the divergence)%s\n",
                  static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(r.mismatches),
                  r.digest.c_str(), r.seconds, r.seconds - r.diagnosis_seconds, r.steps_per_second,
                  r.diagnosis_seconds, r.interrupted ? ", interrupted" : "");
  } else {
    std::snprintf(line, sizeof line, "steps compared %llu, mismatches %llu, digest %s (%.2f s, %.0f steps/s)%s\n",
                  static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(r.mismatches),
                  r.digest.c_str(), r.seconds, r.steps_per_second, r.interrupted ? ", interrupted" : "");
  }
  os << line;
  return os.str();
}

namespace {
// claim_run_folder's summary, until the run writes its own.
constexpr const char* kDidNotFinish =
    "the run did not finish: it is still running, or it ended (killed, or failed) before it wrote its result";

// A run folder this process holds (lock_run_folder).
struct HeldRunFolder {
  int fd = -1;           // its open, locked lock file
  fs::path path;         // as the command named it (for messages)
  bool claimed = false;  // claim_run_folder made it this process's new run's folder
};

// canonical path -> the folder
std::map<std::string, HeldRunFolder>& held_run_folders() {
  static std::map<std::string, HeldRunFolder> held;
  return held;
}

// `j` as a JSON file (two-space indent, a final newline), written whole or not at all.
void write_json_atomic(const fs::path& path, const json& j) {
  const std::string text = format::json_text(j, 2) + "\n";
  detail::write_file_atomic(path, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

HeldRunFolder* held_run_folder(const fs::path& dir) {
  std::error_code ec;
  const auto it = held_run_folders().find(fs::weakly_canonical(dir, ec).string());
  return it == held_run_folders().end() ? nullptr : &it->second;
}
// The pid that the lock file open as `fd` names (its holder writes it there), "" when none; closes fd.
std::string close_lock_naming_holder(int fd) {
  char buf[32] = {};
  const ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  ::close(fd);
  std::string holder = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
  return holder;
}

// Takes `dir`'s lock (DIR/.lockstep.lock) for as long as the returned descriptor is open; -1 when
// another process holds it (`holder` is then its pid, when known). A folder without a lock file is
// free. Throws CheckError when the lock file cannot be opened.
int try_lock_folder(const fs::path& dir, std::string& holder) {
  const int fd = ::open((dir / kRunFolderLock).c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw CheckError("cannot write the run folder " + dir.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return fd;
  holder = close_lock_naming_holder(fd);
  return -1;
}

CheckError folder_in_use(const fs::path& dir, const std::string& holder) {
  return CheckError("the run folder " + dir.string() + " is in use by another lockstep run" +
                    (holder.empty() ? std::string() : " (pid " + holder + ")") + "; give each run its own --report folder");
}
}  // namespace

void lock_run_folder(const fs::path& dir) {
  std::string key;
  try {
    fs::create_directories(dir);
    key = fs::weakly_canonical(dir).string();
  } catch (const std::exception& e) {
    throw CheckError("cannot write the run folder " + dir.string() + ": " + e.what());
  }
  if (held_run_folders().count(key)) return;
  std::string holder;
  const int fd = try_lock_folder(dir, holder);
  if (fd < 0) throw folder_in_use(dir, holder);
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // the pid is only for the message of a run that finds the folder in use
  }
  held_run_folders()[key] = HeldRunFolder{fd, dir, false};  // held, and locked, until the process ends
}

namespace {
// Whether `dir` may be made a run folder: it is missing or empty, or an earlier lockstep run's (its
// summary.json is a run summary: is_run_summary). A folder of someone else's files is not: claiming it would remove its checkpoints/ and plots/ and
// write over its summary.json, junit.xml and report.html (found by an outside tester: `run
// --report .` in a project folder deleted the project's checkpoints/ and plots/).
//
// A summary.json is an earlier run's when its command is one of the commands that write one into a
// run folder and its status one of theirs; a "command" of any other tool's is not (found by the
// re-test: {"command": "pytest -k foo"} let a run delete the folder's checkpoints/). The lock file
// alone is no proof either: a failed `--resume DIR` of any folder used to leave one.
bool is_run_summary(const fs::path& file) {
  try {
    const json s = reports::parse_json_text(reports::read_file_text(file), file.string());
    if (!s.is_object()) return false;
    const std::string command = s.value("command", ""), status = s.value("status", "");
    return (command == "run" || command == "story" || command == "fuzz" || command == "replay") &&
           (status == "exact" || status == "mismatch" || status == "interrupted" || status == "error");
  } catch (const std::exception&) {
    return false;
  }
}

// Whether a run summary (summary.json, parsed) holds a verdict of its run's own: status exact or
// mismatch, and not interrupted (an interrupted run's partial "exact" is no pass; an error none).
bool has_verdict(const json& summary) {
  if (!summary.is_object()) return false;
  const std::string status = summary.value("status", "");
  return (status == "exact" || status == "mismatch") && !summary.value("interrupted", false);
}

bool may_claim(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return true;
  if (!fs::is_directory(dir, ec)) return true;  // create_directories names the problem
  if (is_run_summary(dir / "summary.json")) return true;
  // A folder holding only what no run removes or writes over: a lock file, a repository's
  // placeholder, mutate's own result and the one it keeps (found by the re-test: a committed
  // reports/.gitkeep was refused).
  // Also folders of runs of its own, which a run never removes, and the ranks' exit statuses
  // (lockstep-fuzz-mpi merges the ranks' DIR/shard-<rank> into DIR beside DIR/rank-<rank>.rc).
  const auto rank_status = [](const std::string& name) {
    if (name.size() < 9 || name.rfind("rank-", 0) != 0 || name.substr(name.size() - 3) != ".rc") return false;
    const std::string digits = name.substr(5, name.size() - 8);
    return !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
  };
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name == kRunFolderLock || name == ".gitkeep" || name == ".gitignore" || name == "mutate.json" ||
        name == "earlier-mutate.json" || rank_status(name))
      continue;
    std::error_code dec;
    if (e.is_directory(dec) && !e.is_symlink(dec) && name != "checkpoints" && name != "plots" &&
        is_run_summary(e.path() / "summary.json"))
      continue;
    return false;
  }
  return !ec;
}
}  // namespace

namespace {
// What an earlier run leaves in its folder (reports::write_report's files, run_check's case and
// checkpoints, fuzz's report and case folders), which a new run moves into DIR/earlier-run.
// reports::write_report's files, which any command rewrites: no result of the run's own.
bool is_report_file(const std::string& name) {
  return name == "summary.json" || name == "junit.xml" || name == "report.html" || name == "plots" || name == "plots.gp";
}

bool is_earlier_runs_file(const std::string& name) {
  return is_report_file(name) || name == "case.json" || name == "checkpoints" || name == "fuzz.json" ||
         name == "programs.tsv" || name.rfind("fail-", 0) == 0;  // fail-*: fuzz's case folders
}

std::string absolute_text(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal().string();
}
}  // namespace

std::string claim_run_folder(const fs::path& dir, const std::string& command) {
  std::string note;
  // A folder this process holds already (fuzz locks its case folders before it writes them) holds
  // only what this process wrote: nothing in it is an earlier run's to keep.
  const bool held_before = held_run_folder(dir) != nullptr;
  if (!held_before && !may_claim(dir)) {
    // A folder that another run holds is named so, whatever it holds now: that run may be writing
    // its first files (found by an outside tester: of two runs started together, the second was
    // told, 2 times in 13, that the folder was not a run folder, having seen the first one's
    // summary.json.tmp.PID). The lock file is looked at, never made, in someone else's folder.
    if (const int fd = ::open((dir / kRunFolderLock).c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
      if (::flock(fd, LOCK_SH | LOCK_NB) != 0) throw folder_in_use(dir, close_lock_naming_holder(fd));
      ::close(fd);
    }
    throw CheckError("--report " + dir.string() +
                     ": the folder holds files and is not a lockstep run folder (no readable summary.json of an "
                     "earlier run); a run replaces its folder's checkpoints/, plots/ and reports: give a new "
                     "or empty folder");
  }
  lock_run_folder(dir);
  // The run keeps folders of these names; a file of the same name is someone's, not an earlier
  // run's: refused, never removed (found by an outside tester: it was replaced by the folder).
  for (const char* name : {"checkpoints", "plots"}) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(dir / name, ec);
    if (fs::exists(st) && !fs::is_directory(st))
      throw CheckError("the run folder " + dir.string() + " holds a file named '" + name +
                       "' where a run keeps its " + name + " folder; move it, or give another --report folder");
  }
  HeldRunFolder& held = *held_run_folder(dir);
  const fs::path kept = dir / kEarlierRunFolder;
  // The earlier run it keeps is part of the folder: one that another command is using (a
  // `--resume DIR/earlier-run`) makes the folder in use (found by the re-test: a new run was
  // taken then, and a failed command after it could not take the folder to say so).
  // Its lock is held until the move below is done, so that no `--resume DIR/earlier-run` can
  // start between the check and the move (left alone before: they were two steps).
  int kept_lock = -1;
  struct CloseLock {
    int& fd;
    ~CloseLock() {
      if (fd >= 0) ::close(fd);
    }
  } close_kept_lock{kept_lock};
  if (!held_before && fs::is_directory(kept)) {
    std::string holder;
    kept_lock = try_lock_folder(kept, holder);
    if (kept_lock < 0)
      throw CheckError("the run folder " + dir.string() + " keeps an earlier run in " + kept.string() +
                       ", which another lockstep run is using" + (holder.empty() ? "" : " (pid " + holder + ")") +
                       "; wait for it to end, or give another --report folder");
  }
  try {
    fs::create_directories(dir);
    // An earlier run's case and checkpoints (hours of a story check, say) are moved aside, never
    // removed, until this run ends with a verdict of its own (retire_earlier_run): a command that
    // fails or is stopped before then loses nothing, and DIR/earlier-run is that run's folder as
    // it was (`--resume DIR/earlier-run` continues it). Its own earlier run, if it kept one, goes
    // with it (DIR/earlier-run/earlier-run). Nothing in DIR can be read as this run's.
    bool worth_keeping = false;  // more than a report: a case, checkpoints, fuzz's cases
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      worth_keeping = worth_keeping || (is_earlier_runs_file(name) && !is_report_file(name));
    }
    // A move that a SIGKILL cut short between its renames left the older run in `moving`: it goes
    // back to where it belongs, never removed.
    const fs::path moving = dir / ".earlier-run.moving";
    if (!held_before && fs::is_directory(moving)) {
      if (!fs::exists(kept)) fs::rename(moving, kept);
      else if (!fs::exists(kept / kEarlierRunFolder)) fs::rename(moving, kept / kEarlierRunFolder);
    }
    if (!held_before && worth_keeping) {
      bool nest = false;
      if (fs::is_directory(kept)) {  // not in use (checked above)
        // The run kept there had no verdict (the one in DIR, replacing it, had none either, or
        // it would have been retired): it is removed, and its own earlier run, if it kept one,
        // is kept instead. So a command stopped and started again keeps two runs, not one a
        // start (found by an outside tester: eight starts nested eight runs' checkpoints).
        const fs::path older = kept / kEarlierRunFolder;
        std::string status, holder;
        std::uint64_t steps = 0;
        bool verdict = false;
        try {
          const json k = reports::parse_json_text(reports::read_file_text(kept / "summary.json"), "summary.json");
          verdict = has_verdict(k);
          if (k.is_object()) {
            status = k.value("status", "");
            if (k.contains("steps") && k["steps"].is_number_unsigned()) steps = k["steps"].get<std::uint64_t>();
          }
        } catch (const std::exception&) {
          // no readable summary: no verdict
        }
        int older_lock = -1;
        if (!verdict && fs::is_directory(older)) older_lock = try_lock_folder(older, holder);
        if (verdict || (fs::is_directory(older) && older_lock < 0)) {
          fs::rename(kept, moving);  // kept whole (or its older run is in use: nothing is removed)
          nest = true;
        } else {
          if (older_lock >= 0) {
            fs::rename(older, moving);
            ::close(older_lock);
            nest = true;
          }
          fs::remove_all(kept);
          note = "the earlier run kept in " + kept.string() + " (" + (status.empty() ? "no summary" : status) + ", " +
                 std::to_string(steps) + " steps, no verdict) is removed: a run folder keeps the run it replaces" +
                 (nest ? " and the last one with a verdict" : "") +
                 "; `--resume " + format::shell_path(dir.string()) + "` continues a stopped run instead of starting it again";
        }
      }
      fs::create_directories(kept);
      for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (is_earlier_runs_file(name)) fs::rename(e.path(), kept / name);
      }
      if (nest) fs::rename(moving, kept / kEarlierRunFolder);
      // The moved run's summary named its own earlier run as DIR/earlier-run, which is now the
      // moved run itself (found by an outside tester): it names where that run went, or nothing.
      try {
        json moved = reports::parse_json_text(reports::read_file_text(kept / "summary.json"), "summary.json");
        if (moved.is_object() && moved.contains("earlier_run")) {
          if (nest) moved["earlier_run"] = absolute_text(kept / kEarlierRunFolder);
          else moved.erase("earlier_run");
          write_json_atomic(kept / "summary.json", moved);
        }
      } catch (const std::exception&) {
        // no readable summary: nothing names a path to correct
      }
    }
    fs::remove_all(dir / "checkpoints");
    fs::remove_all(dir / "plots");
    fs::remove(dir / "case.json");  // an earlier run's case is never this run's (it writes its own)
    json placeholder = {{"command", command}, {"status", "error"}, {"error", kDidNotFinish}, {"steps", 0}, {"mismatches", 0}};
    if (fs::is_directory(kept)) placeholder["earlier_run"] = absolute_text(kept);
    reports::write_report(dir, placeholder);
  } catch (const CheckError&) {
    throw;
  } catch (const std::exception& e) {
    throw CheckError("cannot write the run folder " + dir.string() + ": " + e.what());
  }
  held.claimed = true;
  return note;
}

std::string retire_earlier_run(const fs::path& dir) {
  const fs::path kept = dir / kEarlierRunFolder;
  std::error_code ec;
  if (!fs::is_directory(kept, ec)) return {};
  std::string holder;
  int fd = -1;
  try {
    fd = try_lock_folder(kept, holder);
  } catch (const CheckError& e) {
    return "the earlier run in " + kept.string() + " could not be removed: " + e.what();
  }
  if (fd < 0)
    return "the earlier run in " + kept.string() + " is kept: another lockstep run is using it" +
           (holder.empty() ? "" : " (pid " + holder + ")");
  fs::remove_all(kept, ec);
  ::close(fd);
  if (ec) return "the earlier run in " + kept.string() + " could not be removed: " + ec.message();
  return {};
}

std::string earlier_run_of(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir / kEarlierRunFolder, ec) ? absolute_text(dir / kEarlierRunFolder) : std::string();
}

json run_identity(const std::string& guest, const std::string& stream_guest, const std::string& mode,
                  std::uint64_t max_steps) {
  json run = {{"max_steps", max_steps},
              {"streams", json::array({{{"guest", stream_guest}, {"end", "running"}, {"steps", 0}, {"mismatches", 0}}})}};
  if (!mode.empty()) run["mode"] = mode;
  return {{"guest", guest}, {"run", run}};
}

bool is_unfinished_placeholder(const json& summary) {
  return summary.is_object() && summary.value("error", "") == kDidNotFinish;
}

void name_claimed_run(const fs::path& dir, const json& identity) {
  const HeldRunFolder* held = held_run_folder(dir);
  if (!held || !held->claimed || !identity.is_object()) return;
  try {
    json s = reports::parse_json_text(reports::read_file_text(dir / "summary.json"), "summary.json");
    if (!s.is_object() || s.value("error", "") != kDidNotFinish) return;  // the run wrote its own
    for (const auto& [k, v] : identity.items()) s[k] = v;
    reports::write_report(dir, s);
  } catch (const std::exception&) {
    // the placeholder stays as it was: only its test names are the command's
  }
}

FailedRunFolders fail_claimed_run_folders(const std::string& status, const std::string& message, std::uint64_t steps) {
  FailedRunFolders out;
  std::vector<std::string>& notes = out.notes;
  for (const auto& [dir, held] : held_run_folders()) {
    if (!held.claimed) continue;
    try {
      json s = reports::parse_json_text(reports::read_file_text(fs::path(dir) / "summary.json"), dir + "/summary.json");
      const std::string kept = earlier_run_of(fs::path(dir));
      if (!kept.empty()) out.earlier_runs.push_back(kept);
      if (!kept.empty())
        notes.push_back("the earlier run in " + held.path.string() + " is kept, as it was, in " +
                        (held.path / kEarlierRunFolder).string() + " (this command " +
                        (status == "interrupted" ? "was stopped" : "failed") + " before a verdict of its own)");
      if (s.value("error", "") != kDidNotFinish) {  // the run wrote its own result
        if (kept.empty() || s.value("earlier_run", "") == kept) continue;
        s["earlier_run"] = kept;
        reports::write_report(fs::path(dir), s);
        continue;
      }
      json failed = {{"command", s.value("command", "")}, {"status", status}, {"steps", steps}, {"mismatches", 0}};
      // What the placeholder names the run by (name_claimed_run), so that its JUnit cases keep
      // the run's names.
      for (const char* k : {"guest", "run", "fuzz"})
        if (s.contains(k)) failed[k] = s[k];
      if (failed.contains("run") && failed["run"].is_object() && failed["run"].contains("streams") &&
          failed["run"]["streams"].is_array() && failed["run"]["streams"].size() == 1 &&
          failed["run"]["streams"][0].is_object())
        failed["run"]["streams"][0]["steps"] = steps;
      failed[status == "interrupted" ? "interrupted_reason" : "error"] = message;
      if (status == "interrupted") failed["interrupted"] = true;
      if (!kept.empty()) failed["earlier_run"] = kept;
      reports::write_report(fs::path(dir), failed);
    } catch (const std::exception&) {
    }
  }
  return out;
}

bool holds_run_folder(const fs::path& dir) { return held_run_folder(dir) != nullptr; }

bool claimed_a_run_folder() {
  for (const auto& [dir, held] : held_run_folders())
    if (held.claimed) return true;
  return false;
}

namespace {
// Writes the report of a run that failed (`s`, status error or interrupted) into its run folder,
// when it has one. A folder that cannot be written costs a warning on `err`, not the error being
// reported.
void write_failed_report(const fs::path& dir, const json& s, std::ostream& err) {
  if (dir.empty()) return;
  try {
    // A run that failed before it started has no streams: it keeps the names its placeholder was
    // given (name_claimed_run: the guest, mode and step bound), so that its JUnit case is the
    // run's own, turned red (found by an outside tester: a refused chip file gave every guest's
    // folder one case "lockstep.run / run", and their passing cases vanished).
    json named = s;
    const bool unnamed = !named.contains("run") || !named["run"].is_object() || !named["run"].contains("streams") ||
                         !named["run"]["streams"].is_array() || named["run"]["streams"].empty();
    if (unnamed) {
      try {
        const json p = reports::parse_json_text(reports::read_file_text(dir / "summary.json"), "summary.json");
        if (p.is_object() && p.value("error", "") == kDidNotFinish && p.contains("run") && p["run"].is_object() &&
            p["run"].contains("streams") && p["run"]["streams"].is_array() && !p["run"]["streams"].empty()) {
          if (!named.contains("run") || !named["run"].is_object()) named["run"] = json::object();
          named["run"]["streams"] = p["run"]["streams"];
          for (const char* k : {"mode", "max_steps"})
            if (p["run"].contains(k) && (!named["run"].contains(k) || named["run"][k] == json("") || named["run"][k] == json(0)))
              named["run"][k] = p["run"][k];
          if (p.contains("guest") && !named.contains("guest")) named["guest"] = p["guest"];
        }
      } catch (const std::exception&) {
        // no placeholder to take names from
      }
    }
    reports::write_report(dir, named);
  } catch (const std::exception& e) {
    err << "lockstep: warn: could not write the report: " << e.what() << "\n";
  }
}
}  // namespace

namespace {
// A divergence found before a chip under test's answers fell out of step with its requests
// (ChipBackend::fault_is_out_of_step) may be another request's answer read as its own: no finding
// about the chip (found by an outside tester: a chip that sent one answer twice was reported as
// computing a wrong token, exit 1). The run is an error; these say what was set aside.
std::string not_a_finding(const RunResult& r) {
  std::string steps;
  for (const StreamResult& s : r.streams)
    if (s.divergence) steps += (steps.empty() ? "" : ", ") + std::to_string(s.divergence->step);
  return "; the divergence found before it (at step " + steps +
         ") is not reported: it may be an earlier request's answer read as that step's";
}
RunResult without_divergences(RunResult r) {
  for (StreamResult& s : r.streams) {
    s.divergence.reset();
    s.mismatches = 0;
    if (s.end == "diverged") s.end = "running";  // it never reached its end
  }
  r.mismatches = 0;
  return r;
}
}  // namespace

CheckOutcome run_check(const CheckRequest& req, std::ostream& err) {
  const Case& c = req.the_case;
  // "lockstep run --resume DIR": the command that continues this run, as every line and the
  // summary give it
  const auto resume_command = [&req] {
    return "lockstep " + req.command + " --resume " + format::shell_path(req.report_dir.string());
  };
  CheckOutcome out;
  LoadedChip chip;
  std::unique_ptr<chip::ChipBackend> owned;
  chip::ChipBackend* backend = req.backend;
  std::string finished_note;  // a resumed run that had finished: said once the resume has run
  if (!req.report_dir.empty()) {
    if (req.resume) {
      lock_run_folder(req.report_dir);
      // A run that finished (exact or mismatch, not interrupted): resuming it runs its steps after
      // the checkpoint again (a check of the resume itself), and says so (found by an outside
      // tester: it was silent, as if the run had been cut short).
      try {
        const json s = reports::parse_json_text(reports::read_file_text(req.report_dir / "summary.json"), "summary.json");
        if (has_verdict(s)) {
          const std::string status = s.value("status", "");
          finished_note = "the run in " + req.report_dir.string() + " had finished (status " + status + ", " +
                          std::to_string(s.value("steps", std::uint64_t{0})) +
                          " steps): resuming it compared its steps after the checkpoint again and rewrote its report";
        }
      } catch (const std::exception&) {
        // no readable summary: the checkpoints decide
      }
    } else if (!req.folder_claimed) {
      if (const std::string note = claim_run_folder(req.report_dir, req.command); !note.empty())
        err << "lockstep: note: " << note << "\n" << std::flush;
      // named after its case (a replay's), should it fail before its report: its JUnit case keeps
      // the guest's name (found by the re-test: a refused replay's case read "replay")
      name_claimed_run(req.report_dir, run_identity(c.guest_path.empty() ? c.guest_name : c.guest_path.string(),
                                                    c.guest_name, std::string(to_string(c.mode)), c.steps));
    }
  }
  // An error before the run started (a chip that cannot be loaded, options the engine refuses):
  // the new run's folder says so (a resume's keeps the summary of its run).
  auto early_error = [&](const std::string& what) {
    if (req.resume) return;
    json s = summary_json(req.command, RunResult{}, c.chip_path.empty() ? "built" : c.chip_path, "");
    s["status"] = "error";
    s["error"] = what;
    write_failed_report(req.report_dir, s, err);
  };
  if (backend) {
    chip.source = "backend " + backend->name();
    // A chip under test's session lent by the caller (fuzz's cases): named as the case starts it,
    // with its identity (found by an outside tester: a case's page said "backend dut", no hash).
    if (c.dut) {
      chip.source = "dut " + c.dut->describe();
      chip.hash = backend->identity();
    }
  } else if (c.dut) {
    try {
      dut::DutConfig config = *c.dut;
      config.stop = req.options.stop;
      owned = make_dut_backend(config, req.chip_file_named_by);
    } catch (const CheckError& e) {
      // A chip that cannot be started or spoken to: the run folder still says so (status error,
      // 0 steps), as every failed run's does (docs/spec/dut-protocol.md §8); "interrupted" when
      // SIGINT/SIGTERM ended the wait.
      // A resume that cannot start its chip leaves the folder as it was: the summary, case and
      // checkpoints of the run it would continue (found by an outside tester: the interrupted
      // run's record became "error, 0 steps", its JUnit case "run").
      json s = summary_json(req.command, RunResult{}, "dut " + c.dut->describe(), "");
      std::string what = e.what();
      if (req.resume)
        what += " (" + req.report_dir.string() + " left as it was: `" + resume_command() +
                "` goes on from its last checkpoint once the chip starts)";
      mark_failed(s, what, req.options.stop && req.options.stop->load());
      if (!req.resume) write_failed_report(req.report_dir, s, err);
      throw RunFailed(what, RunResult{}, s);
    }
    backend = owned.get();
    chip.source = "dut " + c.dut->describe();
    chip.hash = backend->identity();
    if (!c.chip_hash.empty() && c.chip_hash != chip.hash) {
      throw CheckError("the chip under test has identity '" + chip.hash + "', the case expects '" + c.chip_hash +
                       "': another chip, or the same one with other weights (" +
                       (req.resume ? std::string("a run resumes only on the chip it ran; start a new run")
                                   : std::string("lockstep replay CASE --dut 'COMMAND' runs the case on it as it is")) +
                       ")");
    }
  } else {
    try {
      chip = load_chip_or_built(c.chip_path, req.chip_named_by);
      if (!c.chip_hash.empty() && c.chip_hash != chip.hash) {
        throw CheckError("chip " + chip.source + " has hash " + chip.hash + ", the case expects " + c.chip_hash +
                         " (another chip file: lockstep replay CASE --chip FILE runs the case on it)");
      }
      owned = make_backend(c.backend, chip.chip);
    } catch (const CheckError& e) {
      early_error(e.what());
      throw;
    }
    backend = owned.get();
  }
  // A chip under test beside its chip file (--dut-chip, shadow.h): the file is the one the case
  // ran beside (found by an outside tester: a resume read whatever file was at the recorded path).
  const auto* beside = dynamic_cast<const ShadowedBackend*>(backend);
  if (beside && c.dut && !c.dut->chip_file_hash.empty() && c.dut->chip_file_hash != beside->chip_hash()) {
    throw CheckError(req.chip_file_named_by + " " + beside->chip_file() + " has hash " + beside->chip_hash() +
                     ", the case ran beside a file of hash " + c.dut->chip_file_hash + ": the file changed since (" +
                     (req.resume ? std::string("a run resumes only beside the file it ran beside; start a new run")
                                 : std::string("lockstep replay CASE --dut-chip FILE runs the case beside it as it is")) +
                     ")");
  }
  out.chip_source = chip.source;
  out.chip_hash = chip.hash;
  if (c.dut || backend->name() == "dut") out.capability_notes = capability_notes(backend->capabilities(), beside != nullptr);
  Guest guest = c.guest();

  Options opt = req.options;
  opt.chip_identity = chip.hash;
  opt.mode = c.mode;
  opt.teacher_forced_steps = c.teacher_forced_steps;
  opt.compare = c.compare;
  opt.max_steps = c.steps;
  opt.checkpoint_every = c.checkpoint_every;
  opt.hash_every = c.hash_every;
  opt.classify_window = c.classify_window;
  // The replay after a divergence starts from the last snapshot: keep them at
  // least as often as the checkpoints.
  if (opt.checkpoint_every > 0 && opt.checkpoint_every < opt.snapshot_every) opt.snapshot_every = opt.checkpoint_every;
  if (!req.report_dir.empty()) {
    opt.checkpoint_dir = req.report_dir / "checkpoints";
    if (opt.compare == Compare::kEveryStep && opt.keep_checkpoints == 0) opt.keep_checkpoints = 3;
    // A chip that cannot save streams gets no checkpoints unless they were asked for (the
    // engine refuses those with one line).
    if (!backend->capabilities().save_restore && opt.checkpoint_every == 0 && !req.resume) opt.checkpoint_dir.clear();
  } else if (opt.checkpoint_every > 0 || req.resume) {
    throw CheckError("--checkpoint-every and --resume need a run folder (--report DIR)");
  }
  if (req.on_output) opt.on_output = req.on_output;
  if (req.on_console) opt.on_console = req.on_console;
  if (!opt.on_note) opt.on_note = [&err](const std::string& line) { err << "lockstep: " << line << "\n" << std::flush; };

  Case saved = c;
  if (saved.command.empty() && req.command != "replay") saved.command = req.command;
  if (beside && saved.dut) saved.dut->chip_file_hash = beside->chip_hash();
  saved.chip_hash = chip.hash;
  saved.guest_digest = image_digest(guest.image);
  if (saved.guest_elf.empty() && !guest.path.empty()) {
    std::error_code ec;
    if (fs::file_size(guest.path, ec) <= (8u << 20) && !ec) saved.guest_elf = detail::read_file(guest.path);
    saved.guest_path = fs::absolute(guest.path);
  }
  if (!saved.chip_path.empty()) saved.chip_path = fs::absolute(saved.chip_path).string();
  // JSON carries text, not bytes: a path or command that is not UTF-8 is recorded with U+FFFD,
  // and replay could not find it. Said once, with the option replay takes instead (found by an
  // outside tester: the replay hint of such a case failed with "not found").
  bool noted_not_utf8 = false;
  auto note_not_utf8 = [&]() {
    if (noted_not_utf8 || req.report_dir.empty()) return;
    noted_not_utf8 = true;
    std::string what;
    if (!saved.chip_path.empty() && !format::is_utf8(saved.chip_path))
      what = "the chip path (replay it with --chip FILE)";
    else if (saved.dut && !format::is_utf8(saved.dut->command))
      what = "the --dut command (replay it with --dut 'COMMAND')";
    else if (saved.dut && !format::is_utf8(saved.dut->vocab.string()))
      what = "the --dut-vocab path (replay it with --dut-vocab FILE)";
    if (!what.empty())
      err << "lockstep: note: case.json records " << what << " with U+FFFD for its bytes that are not UTF-8\n"
          << std::flush;
  };
  auto write_case = [&](const json& expect) {
    if (req.report_dir.empty()) return;
    note_not_utf8();
    fs::create_directories(req.report_dir);
    saved.expect = expect;
    write_json_atomic(req.report_dir / "case.json", saved.to_json());
  };
  auto with_notes = [&](json s, const RunResult& result) {
    if (req.add_to_summary) req.add_to_summary(s, result);
    if (!out.capability_notes.empty()) s["capability_notes"] = out.capability_notes;
    if (!req.report_dir.empty()) {
      const std::string dir = format::shell_path(req.report_dir.string());
      s["replay"] = "lockstep replay " + dir;
      if (const std::string kept = earlier_run_of(req.report_dir); !kept.empty()) s["earlier_run"] = kept;
      // An interrupted run that can go on: the command, as the page shows it (found by an outside
      // tester: the page said only "resume with --resume").
      if (result.interrupted && (req.command == "run" || req.command == "story") &&
          (result.checkpoints_written > 0 || result.resumed_from > 0))
        s["resume"] = resume_command();
    }
    if (c.dut) {
      s["dut"] = c.dut->to_json();
      s["dut"]["identity"] = chip.hash;
    }
    return s;
  };
  // A failure after the run started: the partial result goes into the report (when it can be
  // written) and out with the exception.
  auto failed = [&](const std::string& what, const RunResult& partial) -> RunFailed {
    // marked failed first: add_to_summary sees the run's status (a replay's verdict is then "not
    // conclusive", not "does NOT reproduce": found by an outside tester)
    json s = summary_json(req.command, partial, chip.source, chip.hash);
    mark_failed(s, what, req.options.stop && req.options.stop->load());
    s = with_notes(std::move(s), partial);
    write_failed_report(req.report_dir, s, err);
    return RunFailed(what, partial, s);
  };
  // " (the run had compared N steps, no mismatch; `lockstep run --resume DIR` continues from the
  // checkpoint of step M)": for a run that failed with nothing found wrong. `once` words what
  // must be mended first ("the folder can be written"; empty: not said).
  auto went_on_hint = [&](const RunResult& partial, const std::string& once) {
    // --compare end compares nothing before the end: the steps were run, not compared (found by
    // the re-test: a wrong chip that died read "no mismatch")
    std::string hint = c.compare == Compare::kEnd
                           ? " (the run had run " + std::to_string(partial.steps) +
                                 " steps, none compared yet: --compare end compares at the end"
                           : " (the run had compared " + std::to_string(partial.steps) + " steps, no mismatch";
    if (partial.last_checkpoint > 0 && !req.report_dir.empty() && (req.command == "run" || req.command == "story"))
      hint += std::string("; ") + (once.empty() ? "" : "once " + once + ", ") + "`" + resume_command() +
              "` continues from the checkpoint of step " + std::to_string(partial.last_checkpoint);
    return hint + ")";
  };
  try {
    if (!req.resume) write_case(json());
  } catch (const std::exception& e) {
    throw CheckError("cannot write the run folder " + req.report_dir.string() + ": " + e.what());
  }

  std::unique_ptr<Engine> engine;
  try {
    engine = std::make_unique<Engine>(*backend, std::vector<Guest>{guest}, opt);
  } catch (const std::invalid_argument& e) {
    early_error(e.what());
    throw CheckError(e.what());
  }
  try {
    out.result = req.resume ? engine->resume() : engine->run();
  } catch (const ResumeError& e) {
    // Nothing ran: the folder keeps the summary of the run it holds.
    throw CheckError(std::string(e.what()) + " (" + req.report_dir.string() + " left as it was)");
  } catch (const std::exception& e) {
    finished_note.clear();
    // Stopped while the chip worked (a chip under test's wait given up, or its process ended by
    // the same SIGINT): an interruption, reported with the steps compared so far.
    if (req.options.stop && req.options.stop->load()) {
      out.result = engine->interrupted_result();
    } else {
      const std::string fault = backend->fault();
      RunResult partial = engine->partial_result();
      // A chip that failed after it predicted a wrong token (while the divergence was being
      // classified, or on another stream's step): the divergence is a finding about the chip
      // and stands, so the run is a mismatch (exit 1) with the fault beside it, as an
      // interruption after a mismatch is (found by an outside tester: a wrong chip that crashed
      // in the replay was reported as a broken job, exit 2). Without a divergence it is an error.
      // (An exception without a chip fault is an internal error: always an error.)
      std::string what = fault.empty() ? std::string(e.what()) : fault;
      // A run that failed after it started says how far it came and, where it wrote checkpoints,
      // how to go on once the cause is mended (found by outside testers: a checkpoint that could
      // not be written, or a chip server killed mid-run, ended with no step count or resume hint).
      const auto* ck = dynamic_cast<const CheckpointWriteError*>(&e);
      if (ck && fault.empty()) what = "cannot write the checkpoint of step " + std::to_string(ck->round) + ": " + what;
      if (partial.mismatches == 0 && partial.steps > 0) what += went_on_hint(partial, ck && fault.empty() ? "the folder can be written" : "");
      if (partial.mismatches == 0 || fault.empty()) throw failed(what, partial);
      if (backend->fault_is_out_of_step()) throw failed(fault + not_a_finding(partial), without_divergences(partial));
      out.result = std::move(partial);
      out.chip_fault = fault;
    }
  }
  // A chip under test that failed inside a step the engine caught (a probe, a replay) ends the
  // run as an error (its verdict cannot be trusted), unless a divergence came before the fault.
  if (const std::string fault = backend->fault(); !fault.empty() && !out.result.interrupted && out.chip_fault.empty()) {
    if (out.result.mismatches == 0) throw failed(fault, out.result);
    if (backend->fault_is_out_of_step()) throw failed(fault + not_a_finding(out.result), without_divergences(out.result));
    out.chip_fault = fault;
  }
  if (req.trap_is_error && out.result.mismatches == 0 && !out.result.interrupted)
    for (const StreamResult& s : out.result.streams)
      if (s.end == "trap") throw failed(trap_end_line(guest, s), out.result);
  // A guest that can never end is never a pass, --allow-trap or not (isa.md §5: a guest ends by
  // the exit ecall).
  if (out.result.mismatches == 0 && !out.result.interrupted)
    for (const StreamResult& s : out.result.streams)
      if (s.end == "self_loop") throw failed(self_loop_line(s), out.result);
  if (!finished_note.empty()) err << "lockstep: " << finished_note << "\n" << std::flush;
  // A verdict of this run's own (exact or mismatch, not interrupted): the earlier run it replaces
  // goes (claim_run_folder kept it until now).
  if (!req.report_dir.empty() && !out.result.interrupted)
    if (const std::string note = retire_earlier_run(req.report_dir); !note.empty())
      err << "lockstep: note: " << note << "\n" << std::flush;
  if (out.result.streams.size() == 1) out.end_text = guest_end_text(guest, out.result.streams[0]);
  out.summary = with_notes(summary_json(req.command, out.result, chip.source, chip.hash), out.result);
  if (!out.chip_fault.empty()) out.summary["chip_fault"] = out.chip_fault;
  if (!req.report_dir.empty()) {
    try {
      json expect = {{"digest", out.result.digest}, {"steps", out.result.steps}};
      // An interrupted run's steps and digest are those of its prefix (replay compares only that
      // no divergence falls within it).
      if (out.result.interrupted) expect["interrupted"] = true;
      for (const StreamResult& s : out.result.streams) {
        if (s.divergence) expect.update(Case::expect_of(*s.divergence));
        if (s.divergence_unlocated) expect["divergence_within"] = s.steps;
      }
      write_case(expect);
      const auto files = reports::write_report(req.report_dir, out.summary);
      if (!files.plot_note.empty()) err << "lockstep: " << files.plot_note << "\n";
    } catch (const std::exception& e) {
      json s = out.summary;
      s["status"] = "error";
      std::string what = std::string("cannot write the report to ") + req.report_dir.string() + ": " + e.what();
      // A stopped run whose report cannot be written is still an error (exit 2), and its line
      // keeps what the interrupted line would have said: how far it came, and how to go on
      // (found by an outside tester: "interrupted: cannot write ...", exit 3, no step count).
      if (out.result.interrupted) {
        what += " (the run was stopped after " + std::to_string(out.result.steps) + " steps";
        if (s.contains("resume")) what += "; once the folder can be written, `" + s["resume"].get<std::string>() + "` continues from its last checkpoint";
        what += ")";
      }
      s["error"] = what;
      RunFailed failed_write(what, out.result, s);
      failed_write.report_unwritten = true;
      throw failed_write;
    }
  }
  return out;
}

}  // namespace lockstep::engine
