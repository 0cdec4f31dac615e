#include "cli/context.h"

#include <cstdlib>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/errors.h"
#include "lockstep/format/shell.h"
#include "lockstep/format/json_text.h"

namespace lockstep::cli {

// ---------------------------------------------------------------- Summary

Summary::Summary() : fields_(nlohmann::ordered_json::object()) {}

void Summary::set(const std::string& key, nlohmann::json value) {
  if (key == "status" || key == "steps" || key == "mismatches" || key == "error" || key == "interrupted") {
    throw std::logic_error("Summary::set: '" + key +
                           "' is maintained by the summary itself (use add_steps, "
                           "add_mismatches, fail or interrupt)");
  }
  fields_[key] = nlohmann::ordered_json(std::move(value));
}

void Summary::add_steps(std::uint64_t n) { steps_ += n; }

void Summary::add_mismatches(std::uint64_t n) { mismatches_ += n; }

void Summary::fail(const std::string& message) { error_ = one_line(message); }

void Summary::interrupt(const std::string& message) { interrupted_ = one_line(message); }

std::string Summary::status() const {
  if (error_) return "error";
  if (mismatches_ > 0) return "mismatch";
  return interrupted_ ? "interrupted" : "exact";
}

ExitCode Summary::exit_code() const {
  if (error_) return ExitCode::error;
  if (mismatches_ > 0) return ExitCode::mismatch;
  return interrupted_ ? ExitCode::interrupted : ExitCode::exact;
}

nlohmann::ordered_json Summary::to_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["status"] = status();
  out["steps"] = steps_;
  out["mismatches"] = mismatches_;
  if (error_) out["error"] = *error_;
  // A flag of one type in every output (summary.json has true), and why beside it (found by an
  // outside tester: a string here, a boolean in the report files)
  if (interrupted_) {
    out["interrupted"] = true;
    out["interrupted_reason"] = *interrupted_;
  }
  for (const auto& [key, value] : fields_.items()) out[key] = value;
  return out;
}

bool Summary::emit(std::ostream& out) {
  if (emitted_) return false;
  emitted_ = true;
  out << format::json_text(to_json()) << '\n' << std::flush;
  return true;
}

// ---------------------------------------------------------------- Context

Context::Context(std::filesystem::path source_root, std::filesystem::path executable)
    : source_root_(std::move(source_root)), executable_(std::move(executable)) {}

std::vector<std::filesystem::path> Context::guest_dirs() const {
  std::vector<std::filesystem::path> dirs, seen;
  auto add = [&](const std::filesystem::path& d) {
    std::error_code ec;
    std::filesystem::path key = std::filesystem::weakly_canonical(d, ec);
    if (ec) key = d.lexically_normal();
    for (const auto& s : seen)
      if (s == key) return;
    seen.push_back(key);
    dirs.push_back(d);
  };
  // A folder named on purpose that is not there is bad input, as $LOCKSTEP_MODELS's is (found by
  // an outside tester: it was passed over in silence, and the built guests were taken instead).
  if (const char* e = std::getenv("LOCKSTEP_GUEST_DIR"); e && *e) {
    std::error_code ec;
    if (!std::filesystem::is_directory(e, ec))
      throw InputError(std::string("LOCKSTEP_GUEST_DIR ") + format::shell_path(e) +
                       (std::filesystem::exists(e, ec) ? " is not a folder" : ": no such folder") +
                       " (give the folder that holds the guest ELFs, or unset it)");
    add(e);
  }
  if (!executable_.empty()) add(executable_.parent_path().parent_path() / "guests");
  add(source_root_ / "build" / "guests");
  return dirs;
}

spdlog::logger& Context::log() const {
  auto logger = spdlog::get("lockstep");
  if (!logger) logger = setup_logging(options.log_level);
  return *logger;
}

std::ostream& Context::out() const { return options.json ? std::cerr : std::cout; }

const ModelChoice& Context::models() {
  if (!models_) {
    ModelSearch search;
    if (!options.models_dir.empty()) search.flag = options.models_dir;
    if (const char* env = std::getenv("LOCKSTEP_MODELS")) search.environment = std::string(env);
    search.source_root = source_root_;
    search.executable = executable_;
    models_ = discover_models(search);
    const bool asked_for_synthetic = (search.flag && *search.flag == "synthetic") ||
                                     (!search.flag && search.environment &&
                                      *search.environment == "synthetic");
    if (models_->synthetic() && !asked_for_synthetic) {
      log().warn("{}", synthetic_model_notice(*models_));
    }
  }
  return *models_;
}

// ---------------------------------------------------------------- logging

std::shared_ptr<spdlog::logger> setup_logging(const std::string& level) {
  static const char* const kLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
  bool known = false;
  for (const char* l : kLevels) known = known || level == l;
  if (!known) {
    throw UsageError("--log-level must be one of trace, debug, info, warn, error, off (got '" +
                     level + "')");
  }
  auto logger = spdlog::get("lockstep");
  if (!logger) {
    logger = spdlog::stderr_color_mt("lockstep");
    logger->set_pattern("lockstep: %l: %v");
    spdlog::set_default_logger(logger);
  }
  logger->set_level(spdlog::level::from_str(level));
  return logger;
}

void ConsoleHead::record(Summary& summary, const std::string& name) const {
  summary.set(name, valid_utf8(kept));
  summary.set(name + "_bytes", total);
  summary.set(name + "_truncated", truncated());
}

namespace {
std::string& invoked_name() {
  static std::string name = "lockstep";
  return name;
}
}  // namespace

const std::string& command_name() { return invoked_name(); }

void set_command_name(const char* argv0) {
  const std::string a = argv0 ? argv0 : "";
  invoked_name() = a.find('/') == std::string::npos ? std::string("lockstep") : format::shell_word(a);
}

std::string as_invoked(const std::string& command) {
  static const std::string kPrefix = "lockstep ";
  if (command.rfind(kPrefix, 0) != 0) return command;
  return command_name() + " " + command.substr(kPrefix.size());
}

std::string valid_utf8(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (ok && n > 1) {  // reject overlong forms and surrogates cheaply: let the checked codepoint decide
      std::uint32_t cp = c & (0x7f >> n);
      for (std::size_t k = 1; k < n; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3f);
      ok = !(n == 2 && cp < 0x80) && !(n == 3 && cp < 0x800) && !(n == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
           !(cp >= 0xd800 && cp <= 0xdfff);
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += "\xef\xbf\xbd";
      i += 1;
    }
  }
  return out;
}

std::string one_line(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  bool space = false;
  for (char c : message) {
    const bool control = static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
    if (control) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  // A library's message can quote its whole input (a JSON parser's "last read: '...'" of a
  // damaged chip header: hundreds of kilobytes); the line keeps its start and its end.
  constexpr std::size_t kHead = 600, kTail = 200;
  if (out.size() > kHead + kTail + 64) {
    std::size_t h = kHead, t = out.size() - kTail;
    while (h > 0 && (static_cast<unsigned char>(out[h]) & 0xC0) == 0x80) --h;  // UTF-8 boundaries
    while (t < out.size() && (static_cast<unsigned char>(out[t]) & 0xC0) == 0x80) ++t;
    out = out.substr(0, h) + " [... " + std::to_string(t - h) + " characters left out ...] " + out.substr(t);
  }
  return out;
}

}  // namespace lockstep::cli
