// The driver of the `lockstep` command: global options, subcommand
// registration, error mapping and the --json summary.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cli/context.h"

namespace CLI {
class App;
}

namespace lockstep::cli {

/// Registers one subcommand on `app` (see commands.h for the convention).
using CommandRegistrar = void (*)(CLI::App& app, Context& ctx);

/// "lockstep 0.1.0 (trace spec trace-v3)": project version and the trace
/// specification version this build implements.
std::string version_line();

/// The trace specification version, e.g. "trace-v3".
std::string trace_spec_version();

/// Runs the lockstep command line: parses argv with every registrar's
/// subcommand, runs the chosen one, prints the summary (under --json) and
/// returns the process exit code (0 exact, 1 mismatch, 2 error; see errors.h).
/// Never throws.
int run_main(int argc, char** argv, const std::vector<CommandRegistrar>& registrars);

}  // namespace lockstep::cli
