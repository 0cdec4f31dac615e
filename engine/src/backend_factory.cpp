#include "lockstep/engine/backend_factory.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <utility>

#include "lockstep/chip/cpu_executor.hpp"
#include "lockstep/chip/cuda_executor.hpp"
#include "lockstep/chip/error.hpp"
#include "lockstep/engine/check.h"

namespace lockstep::engine {

namespace {

std::string known_list(const std::vector<std::string>& known) {
  if (known.empty()) return "none registered";
  std::string out;
  for (const std::string& n : known) out += (out.empty() ? "" : ", ") + n;
  return out;
}

template <class Entries>
bool contains(const Entries& entries, const std::string& name) {
  return std::any_of(entries.begin(), entries.end(), [&](const auto& e) { return e.name == name; });
}

template <class Entries>
std::vector<std::string> names_of(const Entries& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) out.push_back(e.name);
  return out;
}

template <class Entries, class F>
void add_entry(Entries& entries, const char* kind, const std::string& name, F fn) {
  if (name.empty()) throw std::invalid_argument(std::string("backend factory: a ") + kind + " needs a name");
  if (!fn) throw std::invalid_argument(std::string("backend factory: ") + kind + " '" + name + "' has no function");
  if (contains(entries, name)) {
    throw std::invalid_argument(std::string("backend factory: ") + kind + " '" + name + "' is already registered");
  }
  entries.push_back({name, std::move(fn)});
}

// "cuda": the CUDA executor, or one line saying why there is none here.
std::unique_ptr<chip::ChipBackend> make_cuda(std::shared_ptr<const chip::Chip> c, const BackendOptions& options) {
  if (!c) {  // only asked whether the backend exists here
    std::string why;
    if (!chip::cuda_available(&why)) throw CheckError("--backend cuda: " + why + " (use --backend cpu)");
    return nullptr;
  }
  try {
    return chip::make_cuda_executor(std::move(c), options.streams);
  } catch (const chip::UsageError& e) {
    std::string m = e.what();
    if (m.rfind("cuda backend: ", 0) == 0) m = m.substr(14);
    throw CheckError("--backend cuda: " + m + " (use --backend cpu)");
  }
}

}  // namespace

UnknownNameError::UnknownNameError(const std::string& kind, const std::string& name, std::vector<std::string> known)
    : std::invalid_argument("unknown " + kind + " '" + name + "' (known: " + known_list(known) + ")"),
      kind_(kind),
      name_(name),
      known_(std::move(known)) {}

void BackendFactory::add_backend(const std::string& name, MakeBackend make) {
  std::lock_guard<std::mutex> lock(mu_);
  add_entry(backends_, "backend", name, std::move(make));
}

void BackendFactory::add_chip(const std::string& name, CompileChip compile) {
  std::lock_guard<std::mutex> lock(mu_);
  add_entry(chips_, "chip", name, std::move(compile));
}

bool BackendFactory::has_backend(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return contains(backends_, name);
}

bool BackendFactory::has_chip(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return contains(chips_, name);
}

std::vector<std::string> BackendFactory::backend_names() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_of(backends_);
}

std::vector<std::string> BackendFactory::chip_names() const {
  std::lock_guard<std::mutex> lock(mu_);
  return names_of(chips_);
}

std::unique_ptr<chip::ChipBackend> BackendFactory::make_backend(const std::string& name,
                                                                std::shared_ptr<const chip::Chip> chip,
                                                                const BackendOptions& options) const {
  MakeBackend make;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : backends_)
      if (e.name == name) make = e.fn;
    if (!make) throw UnknownNameError("backend", name, names_of(backends_));
  }
  return make(std::move(chip), options);  // outside the lock: a maker may take long
}

chip::Chip BackendFactory::compile_chip(const std::string& name) const {
  CompileChip compile;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& e : chips_)
      if (e.name == name) compile = e.fn;
    if (!compile) throw UnknownNameError("chip", name, names_of(chips_));
  }
  return compile();
}

std::optional<bool> cpu_pipelining_from_env() {
  const char* v = std::getenv("LOCKSTEP_CPU_THREADS");
  if (!v || !*v) return std::nullopt;
  const std::string s = v;
  if (s == "1") return false;
  if (s == "2") return true;
  throw std::runtime_error("LOCKSTEP_CPU_THREADS is '" + s + "': 1 (one thread a stream) or 2 (pipelined), or unset");
}

BackendFactory& backend_factory() {
  // Built on first use (no static-initialisation order to depend on), with the executors of
  // lockstep_chip, which every build links.
  static BackendFactory* const factory = [] {
    auto* f = new BackendFactory;  // never destroyed: backends may be made until exit
    f->add_backend("cpu", [](std::shared_ptr<const chip::Chip> c, const BackendOptions& o) {
      auto ex = std::make_unique<chip::CpuExecutor>(std::move(c), o.streams);
      if (const auto on = cpu_pipelining_from_env()) ex->set_pipelining(*on);
      return std::unique_ptr<chip::ChipBackend>(std::move(ex));
    });
    f->add_backend("cuda", make_cuda);
    return f;
  }();
  return *factory;
}

}  // namespace lockstep::engine
