// The `--dut*` options shared by every command that runs a chip (run, story, fuzz, replay, bench,
// dut-check): a chip under test started as a child process or reached over a socket
// (docs/spec/dut-protocol.md), and the partial result of a run that a chip fault ended.
#pragma once

#include <CLI/CLI.hpp>

#include "cli/context.h"
#include "lockstep/dut/dut_backend.h"
#include "lockstep/engine/check.h"

namespace lockstep::cli {

/// Adds --dut, --dut-connect, --dut-vocab, --dut-timeout and --dut-token-file to `cmd`, stored
/// in `config`.
void add_dut_options(CLI::App* cmd, dut::DutConfig& config);

/// Checks the options' combination: not both --dut and --dut-connect, --dut-vocab/--dut-timeout/
/// --dut-token-file only with one of them, and no --chip or a --backend other than cpu beside
/// them (`backend` and `chip` as given). Throws UsageError. Returns whether a chip under test
/// was asked for.
bool check_dut_options(const dut::DutConfig& config, const std::string& chip, const std::string& backend);

/// Records a run that failed after it started (RunFailed): its steps and mismatches go to the
/// summary, its closing text and the capability notes to ctx.out(); the caller then throws the
/// one-line error.
void report_partial(Context& ctx, const engine::RunFailed& failed);

/// The capability notes of a chip under test, one "note: ..." line each, to ctx.out().
void print_capability_notes(Context& ctx, const std::vector<std::string>& notes);

}  // namespace lockstep::cli
