#include "cli/app.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>
#include <optional>
#include <sstream>
#include <string_view>
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include "lockstep/format/json_text.h"

#ifndef LOCKSTEP_VERSION
#error "LOCKSTEP_VERSION must be defined by the build"
#endif
#ifndef LOCKSTEP_TRACE_SPEC_VERSION
#error "LOCKSTEP_TRACE_SPEC_VERSION must be defined by the build"
#endif
#ifndef LOCKSTEP_SOURCE_ROOT
#error "LOCKSTEP_SOURCE_ROOT must be defined by the build"
#endif

namespace lockstep::cli {

std::string trace_spec_version() { return LOCKSTEP_TRACE_SPEC_VERSION; }

std::string version_line() {
  return std::string("lockstep ") + LOCKSTEP_VERSION + " (trace spec " +
         LOCKSTEP_TRACE_SPEC_VERSION + ")";
}

namespace {

std::filesystem::path executable_path(const char* argv0) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) return self;
  return argv0 ? std::filesystem::path(argv0) : std::filesystem::path();
}

bool argv_has_json(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--json") == 0) return true;
  }
  return false;
}

// `chip-server --stdio`: its stdout carries the protocol's frames and nothing else (dut-protocol.md
// §1), so no --json summary goes there, not even a refusal's (its one stderr line says it).
bool argv_is_stdio_server(int argc, char** argv) {
  bool server = false, stdio = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    server = server || std::strcmp(argv[i], "chip-server") == 0;
    stdio = stdio || std::strcmp(argv[i], "--stdio") == 0;
  }
  return server && stdio;
}

// Output the caller asked for that never arrived (a full disk, a closed pipe) is not a pass:
// flushes stdout and, when it could not take the output, writes one error line and returns exit
// status 2 where `code` was 0 (a mismatch or an interruption keeps its own code). std::cout writes
// through C's stdout (sync_with_stdio), whose error flag keeps an earlier failed write. Also for
// --help and --version (found by an outside tester: `lockstep --help > /dev/full` exited 0).
int exit_code_after_stdout(int code) {
  std::cout.flush();
  errno = 0;
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (std::cout && flushed && !std::ferror(stdout)) return code;
  std::cerr << "lockstep: error: cannot write stdout" << (err ? std::string(": ") + std::strerror(err) : std::string())
            << " (the output is incomplete)\n"
            << std::flush;
  return code == 0 ? static_cast<int>(ExitCode::error) : code;
}

// "The following arguments were not expected: a b", in the order given.
std::string unexpected_words(const std::vector<std::string>& args) {
  std::string out = args.size() == 1 ? "The following argument was not expected:"
                                     : "The following arguments were not expected:";
  for (const auto& a : args) out += " " + a;
  return out;
}

// "The following arguments were not expected: a b (see lockstep --help)".
std::string unexpected(const std::vector<std::string>& args) { return unexpected_words(args) + " (see lockstep --help)"; }

// The fallback SIGINT/SIGTERM handler's output, prepared before it is installed (the handler
// only writes these bytes, removes g_interrupt_file and calls _exit: async-signal-safe).
std::string g_interrupt_line, g_interrupt_json;
char g_interrupt_file[4096] = {};
void (*g_interrupt_hook)() noexcept = nullptr;

extern "C" void on_interrupt_without_result(int) {
  if (g_interrupt_hook) g_interrupt_hook();
  if (g_interrupt_file[0]) ::unlink(g_interrupt_file);
  [[maybe_unused]] ssize_t n = ::write(2, g_interrupt_line.data(), g_interrupt_line.size());
  if (!g_interrupt_json.empty()) n = ::write(1, g_interrupt_json.data(), g_interrupt_json.size());
  ::_exit(static_cast<int>(ExitCode::interrupted));
}

// Installs on_interrupt_without_result for `command` (remove_on_interrupt).
void install_interrupt_fallback(const std::string& command, bool json) {
  const std::string why = "lockstep " + command + " was stopped by SIGINT, SIGTERM or SIGHUP before it finished; it has no result to keep";
  // A chip server is a chip's side: its stderr reaches the harness's (dut-protocol.md §1), where
  // a "lockstep: interrupted:" line reads as the harness's own verdict (found by an outside
  // tester: the harness that ended it on a mismatch printed it beside its own). A stop is how a
  // server ends: an info line, exit status 3 as before.
  g_interrupt_line = command == "chip-server"
                         ? "lockstep: info: chip-server: stopped by SIGINT, SIGTERM or SIGHUP (exit status 3)\n"
                         : "lockstep: interrupted: " + why + "\n";
  g_interrupt_json.clear();
  if (json) {
    nlohmann::ordered_json j = {{"status", "interrupted"}, {"steps", 0}, {"mismatches", 0}, {"interrupted", true},
                                {"interrupted_reason", why},
                                {"command", command}};
    g_interrupt_json = format::json_text(j) + "\n";
  }
  std::signal(SIGINT, on_interrupt_without_result);
  std::signal(SIGTERM, on_interrupt_without_result);
  std::signal(SIGHUP, on_interrupt_without_result);  // a closed terminal or ssh session, as SIGTERM
}

// Prints the one stderr line of an error, records it in the summary and
// returns exit code 2.
int report_error(Context& ctx, const std::string& message) {
  const std::string line = one_line(message);
  std::cerr << "lockstep: error: " << line << '\n' << std::flush;
  ctx.summary.fail(line);
  return static_cast<int>(ExitCode::error);
}

// A run stopped by SIGINT/SIGTERM (Interrupted; or an error met while stopping, e.g. a chip
// under test ended by the same signal): one "lockstep: interrupted:" line, exit status 3 (or 1
// when a mismatch was already found).
int report_interrupted(Context& ctx, const std::string& message) {
  ctx.summary.interrupt(message);
  std::cerr << "lockstep: interrupted: " << one_line(message) << '\n' << std::flush;
  return static_cast<int>(ctx.summary.exit_code());
}

// A FLOAT or INT option's text: the whole of it a number (every FLOAT of lockstep's is a
// non-negative amount: seconds, a fraction, a factor).
CLI::Validator numeric_validator(const std::string& type) {
  return CLI::Validator(
      [type](std::string& text) -> std::string {
        const char* b = text.data();
        const char* e = b + text.size();
        if (type == "INT") {
          std::int64_t v = 0;
          const auto [p, ec] = std::from_chars(b, e, v);
          if (text.empty() || ec != std::errc() || p != e) return "must be a whole number (got '" + text + "')";
          return {};
        }
        double v = 0;
        const auto [p, ec] = std::from_chars(b, e, v);
        if (text.empty() || ec != std::errc() || p != e || !std::isfinite(v) || v < 0) {
          return "must be a non-negative number (got '" + text + "')";
        }
        return {};
      },
      "", "numeric");
}

}  // namespace

void set_interrupt_hook(void (*hook)() noexcept) { g_interrupt_hook = hook; }

void remove_on_interrupt(const std::string& path) {
  if (path.size() >= sizeof g_interrupt_file) {
    g_interrupt_file[0] = 0;
    return;
  }
  std::memcpy(g_interrupt_file, path.c_str(), path.size() + 1);
}

CLI::Validator count_range(std::uint64_t lo, std::uint64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* b = text.data();
        const auto [p, ec] = std::from_chars(b, b + text.size(), v);
        if (text.empty() || ec != std::errc() || p != b + text.size() || v < lo || v > hi) {
          return "must be a whole number from " + std::to_string(lo) + " to " + std::to_string(hi) + " (got '" +
                 text + "')";
        }
        return {};
      },
      "", "range");
}

namespace {
// The whole text is one number (std::from_chars: no sign, space or other text; nan and inf are
// numbers here, so the caller's range must refuse them).
std::optional<double> plain_number(const std::string& text) {
  double v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return v;
}
}  // namespace

CLI::Validator fraction_range() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const auto v = plain_number(text);
        if (!v || !(*v >= 0 && *v <= 1)) return "must be a fraction from 0 to 1 (got '" + text + "')";
        return {};
      },
      "", "fraction");
}

CLI::Validator seconds_range(double most) {
  std::ostringstream m;
  m << most;
  return CLI::Validator(
      [most, bound = m.str()](std::string& text) -> std::string {
        const auto v = plain_number(text);
        if (!v || !(*v > 0 && *v <= most))
          return "must be a number of seconds more than 0 and at most " + bound + " (got '" + text + "')";
        return {};
      },
      "", "seconds");
}

// A text option given with an empty value (`--dut ""`, `--chip "$UNSET"`) is refused: left as it
// is it would read as "not given" and pick the default (the built chip instead of the user's).
static CLI::Validator nonempty_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "is empty (give a value, or leave the option out for its default)" : "";
      },
      "", "nonempty");
}

namespace {

// Drops the leading zeros of a whole number's digits ("010" -> "10", "-007" -> "-7", "000" -> "0"),
// so that CLI11 reads it in decimal; any other text is left to the checks.
CLI::Validator decimal_digits() {
  return CLI::Validator(
      [](std::string& s) {
        const std::size_t sign = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
        if (s.size() < sign + 2 || s[sign] != '0') return std::string();
        if (s.find_first_not_of("0123456789", sign) != std::string::npos) return std::string();
        const std::size_t first = s.find_first_not_of('0', sign);
        s.erase(sign, (first == std::string::npos ? s.size() - 1 : first) - sign);
        return std::string();
      },
      "", "decimal");
}

}  // namespace

void check_numeric_options(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string t = o->get_type_name();
    if (o->get_type_size() != 0 && t.rfind("TEXT", 0) == 0) o->check(nonempty_validator());
    for (const char* kind : {"UINT", "INT", "FLOAT"}) {
      if (t == kind || t.rfind(std::string(kind) + ":", 0) == 0) {
        o->check(std::string(kind) == "UINT" ? count_range(0, UINT64_MAX) : numeric_validator(kind));
        // CLI11 reads a whole number with a leading 0 as octal ("010" is 8, "08" is refused):
        // read as written, in decimal (found by an outside tester: --seed 07 --programs 010).
        if (std::string(kind) != "FLOAT") o->transform(decimal_digits());
        break;
      }
    }
  }
  for (CLI::App* sub : app.get_subcommands({})) check_numeric_options(*sub);
}

int run_main(int argc, char** argv, const std::vector<CommandRegistrar>& registrars,
             const std::function<std::vector<std::string>(const CommandFailure&)>& on_failure) {
  CommandFailure failure;  // set by the handlers below that end the command without its result
  // A closed stdout pipe (`lockstep ref GUEST | head`) makes a write fail with EPIPE, found below
  // like any other failed write, instead of killing the process with SIGPIPE (status 141, none
  // of the documented codes). Children that need the default restore it (dut/transport.cpp).
  std::signal(SIGPIPE, SIG_IGN);
  // Past `ulimit -f` a write fails with EFBIG, a failed write like any other (one line, exit 2),
  // instead of SIGXFSZ killing the process with a half-written .tmp file (found by an outside
  // tester: status 153).
  std::signal(SIGXFSZ, SIG_IGN);
  // A closed stdin, stdout or stderr (`>&-`) is reopened read-only on /dev/null before any file
  // is opened: otherwise the first file opened (a run folder's lock) became fd 1 and the run's
  // output went into it, exit 0 (found by an outside tester). Read-only, so that a write to
  // stdout still fails and is reported as output that could not be written.
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0 && null != fd) {
      ::dup2(null, fd);
      ::close(null);
    }
  }
  Context ctx(LOCKSTEP_SOURCE_ROOT, executable_path(argc > 0 ? argv[0] : nullptr));
  set_command_name(argc > 0 ? argv[0] : nullptr);
  int code = 0;
  try {
    setup_logging("info");

    CLI::App app{"Lockstep: lock-step verification of compiled computers "
                 "(RISC-V machines compiled into neural-network layers).",
                 "lockstep"};
    app.set_version_flag("--version", version_line());
    // At most one subcommand; "none" is reported after parsing so that an unknown
    // option is named as such rather than as a missing subcommand.
    app.require_subcommand(0, 1);
    app.fallthrough();  // global options are accepted after the subcommand name too
    app.add_option("--log-level", ctx.options.log_level,
                   "Log level on stderr: trace|debug|info|warn|error|off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
        ->capture_default_str();
    app.add_flag("--json", ctx.options.json,
                 "Print one JSON summary object on stdout (status, steps, mismatches, ...)");
    CLI::Option* models_opt = app.add_option("--models", ctx.options.models_dir,
                   "Folder holding stories260K.bin and tok512.bin, or 'synthetic', for `story` and `models` "
                   "only (default: $LOCKSTEP_MODELS, then ../shared/models)");
    app.footer("Exit status: 0 exact, 1 mismatch, 2 bad input, usage or error, 3 interrupted (docs/ci.md).");
    // Runs after all options are parsed, before the subcommand's callback.
    app.parse_complete_callback([&ctx, &app, argc, argv] {
      setup_logging(ctx.options.log_level);
      const auto chosen = app.get_subcommands();
      if (!chosen.empty()) ctx.summary.set("command", chosen.front()->get_name());
      // Until the command installs handlers that keep its partial results, a stop ends it at
      // once with exit status 3 and one line (never 130/143 with nothing said).
      if (!chosen.empty())
        install_interrupt_fallback(chosen.front()->get_name(), ctx.options.json && !argv_is_stdio_server(argc, argv));
    });

    for (const auto& add : registrars) add(app, ctx);
    // --models chooses the stories260K checkpoint; only `models` and `story` read it. Checked when
    // a subcommand's options are parsed (a global option after its name included), before it runs.
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      const std::string name = sub->get_name();
      if (name == "models" || name == "story") continue;
      // (The option's count, not its variable: CLI11 stores a global option given after the
      // subcommand's name only after the subcommand's callbacks.)
      sub->parse_complete_callback([models_opt, name] {
        if (models_opt->count() > 0) {
          throw UsageError("--models chooses the stories260K checkpoint of `lockstep story` and `lockstep models`; `" +
                           name + "` does not use a model");
        }
      });
    }
    check_numeric_options(app);

    try {
      // "--chip=" (an empty shell variable after the '='): CLI11 takes the next word as its value
      // (found by an outside tester: `--chip="$X" --mode free` said "free" was not expected).
      for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--") break;
        if (a.size() > 3 && a.substr(0, 2) == "--" && a.find('=') == a.size() - 1) {
          const std::string name(a.substr(0, a.size() - 1));
          throw UsageError(name + "= has an empty value: give " + name + " VALUE (see lockstep --help)");
        }
      }
      app.parse(argc, argv);  // runs the chosen subcommand's callback
      if (app.get_subcommands().empty()) {
        throw UsageError("a subcommand is required (see lockstep --help)");
      }
      code = static_cast<int>(ctx.summary.exit_code());
    } catch (const CLI::CallForHelp& e) {
      // CLI11 answers --help before it rejects unknown words, so
      // `lockstep no-such-command --help` would print help and exit 0.
      if (!app.remaining().empty()) throw UsageError(unexpected(app.remaining()));
      return exit_code_after_stdout(app.exit(e));
    } catch (const CLI::CallForAllHelp& e) {
      if (!app.remaining().empty()) throw UsageError(unexpected(app.remaining()));
      return exit_code_after_stdout(app.exit(e));
    } catch (const CLI::CallForVersion& e) {
      return exit_code_after_stdout(app.exit(e));
    } catch (const CLI::ParseError& e) {
      std::string what = e.what();
      if (what.empty()) what = e.get_name();
      // CLI11 lists the words it did not expect last first ("not expected: c b" for `run a b c`):
      // in the order given (found by an outside tester).
      if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
        const std::vector<std::string> rest = app.remaining(true);
        if (!rest.empty()) what = unexpected_words(rest);
      }
      // CLI11's "--dut: At Most 1 required but received 2": an option given twice
      constexpr std::string_view kTwice = "At Most 1 required but received ";
      if (const auto at = what.find(kTwice); at != std::string::npos)
        what = what.substr(0, at) + "given " + what.substr(at + kTwice.size()) + " times; give it once";
      code = report_error(ctx, what + " (see lockstep --help)");
      failure = {"error", what + " (see lockstep --help)", true, argc, argv};
    }
  } catch (const Interrupted& e) {
    code = report_interrupted(ctx, e.what());
    failure = {"interrupted", e.what()};
  } catch (const UsageError& e) {
    code = report_error(ctx, e.what());
    failure = {"error", e.what()};
  } catch (const ReportError& e) {
    code = report_error(ctx, e.what());
    failure = {"error", e.what()};
  } catch (const InputError& e) {
    const bool stopped = ctx.stop && ctx.stop->load();
    code = stopped ? report_interrupted(ctx, e.what()) : report_error(ctx, e.what());
    failure = {stopped ? "interrupted" : "error", e.what()};
  } catch (const std::bad_alloc&) {
    // (found by an outside tester: "lockstep: error: std::bad_alloc" said neither what nor why)
    const std::string what =
        "out of memory: an allocation failed (the command needs more memory than this process may have: "
        "see ulimit -v and the machine's memory; a command that runs several streams needs less with fewer)";
    code = report_error(ctx, what);
    failure = {"error", what};
  } catch (const std::filesystem::filesystem_error& e) {
    // a path the system would not look at (a symlink loop, a folder without permission): the path
    // and the system's reason, not the library's "filesystem error: status: ..." (found by an
    // outside tester)
    const std::string what = (e.path1().empty() ? std::string() : e.path1().string() + ": ") + e.code().message();
    const bool stopped = ctx.stop && ctx.stop->load();
    code = stopped ? report_interrupted(ctx, what) : report_error(ctx, what);
    failure = {stopped ? "interrupted" : "error", what};
  } catch (const std::logic_error& e) {
    code = report_error(ctx, std::string("internal error: ") + e.what());
    failure = {"error", std::string("internal error: ") + e.what()};
  } catch (const std::exception& e) {
    // Library errors (e.g. a malformed file) are bad input as far as the
    // exit status goes; their messages already say what was wrong.
    const bool stopped = ctx.stop && ctx.stop->load();
    code = stopped ? report_interrupted(ctx, e.what()) : report_error(ctx, e.what());
    failure = {stopped ? "interrupted" : "error", e.what()};
  } catch (...) {
    code = report_error(ctx, "internal error: unknown exception");
    failure = {"error", "internal error: unknown exception"};
  }
  if (!failure.status.empty() && on_failure) {
    failure.message = one_line(failure.message);
    failure.argc = argc;
    failure.argv = argv;
    failure.steps = ctx.summary.steps();
    try {
      const std::vector<std::string> kept = on_failure(failure);
      if (kept.size() == 1) ctx.summary.set("earlier_run", kept.front());
      else if (kept.size() > 1) ctx.summary.set("earlier_run", kept);
    } catch (...) {
    }
  }
  if ((ctx.options.json || argv_has_json(argc, argv)) && !argv_is_stdio_server(argc, argv)) ctx.summary.emit(std::cout);
  return exit_code_after_stdout(code);
}

}  // namespace lockstep::cli
