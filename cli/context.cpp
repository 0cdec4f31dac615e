#include "cli/context.h"

#include <cstdlib>
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace lockstep::cli {

// ---------------------------------------------------------------- Summary

Summary::Summary() : fields_(nlohmann::ordered_json::object()) {}

void Summary::set(const std::string& key, nlohmann::json value) {
  if (key == "status" || key == "steps" || key == "mismatches" || key == "error") {
    throw std::logic_error("Summary::set: '" + key +
                           "' is maintained by the summary itself (use add_steps, "
                           "add_mismatches or fail)");
  }
  fields_[key] = nlohmann::ordered_json(std::move(value));
}

void Summary::add_steps(std::uint64_t n) { steps_ += n; }

void Summary::add_mismatches(std::uint64_t n) { mismatches_ += n; }

void Summary::fail(const std::string& message) { error_ = one_line(message); }

std::string Summary::status() const {
  if (error_) return "error";
  return mismatches_ > 0 ? "mismatch" : "exact";
}

ExitCode Summary::exit_code() const {
  if (error_) return ExitCode::error;
  return mismatches_ > 0 ? ExitCode::mismatch : ExitCode::exact;
}

nlohmann::ordered_json Summary::to_json() const {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  out["status"] = status();
  out["steps"] = steps_;
  out["mismatches"] = mismatches_;
  if (error_) out["error"] = *error_;
  for (const auto& [key, value] : fields_.items()) out[key] = value;
  return out;
}

bool Summary::emit(std::ostream& out) {
  if (emitted_) return false;
  emitted_ = true;
  out << to_json().dump() << '\n' << std::flush;
  return true;
}

// ---------------------------------------------------------------- Context

Context::Context(std::filesystem::path source_root, std::filesystem::path executable)
    : source_root_(std::move(source_root)), executable_(std::move(executable)) {}

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
      log().warn("{}", synthetic_model_notice());
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
  return out;
}

}  // namespace lockstep::cli
