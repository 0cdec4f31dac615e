// The backend factory: how the engine finds, by name, the executors it runs a chip on ("cpu",
// "cuda") and the chips a build compiles itself ("rv32", the built chip).  The engine knows no
// concrete chip: a chip compiler (chip/rv32) is registered into the process's factory by the
// program that links it, with one explicit call at start-up (cli/builtin_chip.h,
// register_rv32_backend(), called by the `lockstep` main) -- never by a static initialiser,
// which a static library's unreferenced object would lose at link time.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/chip/backend.hpp"
#include "lockstep/chip/chip.hpp"

namespace lockstep::engine {

/// $LOCKSTEP_CPU_THREADS for the "cpu" backend: "1" -> false (every step on the calling thread),
/// "2" -> true (one stream's known steps pipelined over two threads, CpuExecutor's default where
/// the machine has two hardware threads), unset or empty -> nullopt (the default). Throws
/// std::runtime_error, one line naming the accepted values, for any other value.
std::optional<bool> cpu_pipelining_from_env();

/// The name the built chip is registered under (the RV32 machine of chip/rv32).
inline constexpr char kBuiltChipName[] = "rv32";

/// What a backend is created with.
struct BackendOptions {
  std::size_t streams = 1;  ///< parallel streams the backend runs (the engine's checks use 1)
};

/// A name looked up in a BackendFactory that nothing was registered under.  what() is one line
/// naming the name and every registered one, e.g. "unknown backend 'tpu' (known: cpu, cuda)" or
/// "unknown chip 'rv64' (known: none registered)"; known() lists them in registration order.
class UnknownNameError : public std::invalid_argument {
 public:
  UnknownNameError(const std::string& kind, const std::string& name, std::vector<std::string> known);
  const std::string& kind() const { return kind_; }  ///< "backend" or "chip"
  const std::string& name() const { return name_; }  ///< the name asked for
  const std::vector<std::string>& known() const { return known_; }

 private:
  std::string kind_, name_;
  std::vector<std::string> known_;
};

/// A registry of backend makers (name -> executor over a chip) and chip compilers (name -> a
/// chip built in this process).  Names are unique per kind; lookups and registration may happen
/// from any thread.
class BackendFactory {
 public:
  /// Makes a backend over `chip` (never null when the engine calls it for a run; a maker may
  /// treat a null chip as "only check that you exist here", as "cuda" does, and return nullptr).
  /// Throws whatever the backend's construction throws.
  using MakeBackend =
      std::function<std::unique_ptr<chip::ChipBackend>(std::shared_ptr<const chip::Chip>, const BackendOptions&)>;
  /// Compiles a chip (seconds: the whole compiler runs).  Throws what the compiler throws.
  using CompileChip = std::function<chip::Chip()>;

  /// Registers a backend.  Throws std::invalid_argument for an empty name, an empty function or
  /// a name already registered as a backend.
  void add_backend(const std::string& name, MakeBackend make);
  /// Registers a chip compiler.  Throws std::invalid_argument for an empty name, an empty
  /// function or a name already registered as a chip.
  void add_chip(const std::string& name, CompileChip compile);

  bool has_backend(const std::string& name) const;
  bool has_chip(const std::string& name) const;
  /// The registered names, in registration order.
  std::vector<std::string> backend_names() const;
  std::vector<std::string> chip_names() const;

  /// The backend `name` over `chip`.  Throws UnknownNameError (kind "backend") for a name not
  /// registered, and whatever the maker throws.
  std::unique_ptr<chip::ChipBackend> make_backend(const std::string& name, std::shared_ptr<const chip::Chip> chip,
                                                  const BackendOptions& options = {}) const;
  /// Compiles the chip `name`.  Throws UnknownNameError (kind "chip") for a name not registered,
  /// and whatever the compiler throws.
  chip::Chip compile_chip(const std::string& name) const;

 private:
  template <class F>
  struct Entry {
    std::string name;
    F fn;
  };
  mutable std::mutex mu_;
  std::vector<Entry<MakeBackend>> backends_;
  std::vector<Entry<CompileChip>> chips_;
};

/// The process's factory.  Created on first use with the executors every build has: "cpu"
/// (chip/cpu_executor.hpp) and "cuda" (chip/cuda_executor.hpp; its maker throws CheckError with
/// one line ending "(use --backend cpu)" when this build has no CUDA support or no device is
/// present, and with a null chip only checks that and returns nullptr).  No chip is registered
/// until the program registers one (register_rv32_backend() in cli/builtin_chip.h).
BackendFactory& backend_factory();

}  // namespace lockstep::engine
