// `lockstep chip-server CHIP`: Lockstep's own executors served over the chip-under-test
// protocol (docs/spec/dut-protocol.md), its C++ reference implementation. A chip loaded once can
// then serve many harness runs (`--dut-connect`), or run on a GPU machine while the harness runs
// elsewhere; `--stdio` makes it a `--dut` child.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "cli/app.h"
#include "cli/commands.h"
#include "lockstep/reports/files.h"
#include "lockstep/dut/dut_backend.h"
#include "lockstep/dut/server.h"
#include "lockstep/engine/check.h"

namespace lockstep::cli {

namespace {
struct ServerArgs {
  std::string chip, backend = "cpu", listen, token_file;
  bool stdio = false, allow_remote = false;
  std::uint32_t max_streams = 1024;
  std::uint64_t sessions = 0;
};
}  // namespace

void add_chip_server_command(CLI::App& app, Context& ctx) {
  auto args = std::make_shared<ServerArgs>();
  auto* cmd = app.add_subcommand(
      "chip-server", "Serve a chip file on the built-in executors over the chip-under-test protocol (lockstep-dut/1)");
  cmd->add_option("chip", args->chip, "Chip file (default: the built chip)");
  cmd->add_option("--backend", args->backend, "Executor: cpu | cuda")->capture_default_str();
  cmd->add_option("--listen", args->listen, "Listen on unix:PATH or tcp:127.0.0.1:PORT (PORT 0: any free port)");
  cmd->add_flag("--stdio", args->stdio, "Serve one session on stdin/stdout (as a --dut child)");
  cmd->add_flag("--allow-remote", args->allow_remote,
                "Allow a --listen address that is not a Unix socket or loopback (needs --token-file)");
  cmd->add_option("--token-file", args->token_file,
                  "Shared secret a harness must send (--dut-token-file) before it may drive the chip");
  cmd->add_option("--max-streams", args->max_streams, "Streams one session may use (1..65536)")
      ->check(count_range(1, dut::kMaxEntries))  // before the generic check, so that -1 gets this range too
      ->capture_default_str();
  cmd->add_option("--sessions", args->sessions,
                  "Exit after N sessions served (HELLO accepted; a refused HELLO, such as a wrong token, is not "
                  "counted) (default: serve until SIGINT/SIGTERM)")
      ->check(count_range(1, UINT64_MAX));
  cmd->callback([&ctx, args] {
    if (args->stdio == !args->listen.empty()) throw UsageError("chip-server: give exactly one of --listen ADDRESS and --stdio");
    if (args->stdio && ctx.options.json) throw UsageError("chip-server --stdio: stdout carries the protocol, so no --json");
    // Options of a listening server mean nothing to the one session on stdin/stdout: refused, not
    // ignored.
    if (args->stdio && args->allow_remote)
      throw UsageError("chip-server --stdio: --allow-remote is for --listen (a stdio session is its parent's alone)");
    if (args->stdio && args->sessions)
      throw UsageError("chip-server --stdio serves one session: --sessions is for --listen");
    if (args->max_streams < 1 || args->max_streams > dut::kMaxEntries) {
      throw UsageError("--max-streams must be 1..65536 (got " + std::to_string(args->max_streams) + ")");
    }
    dut::Address address;
    if (!args->listen.empty()) {
      try {
        address = dut::parse_address(args->listen);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--listen: ") + e.what());
      }
      if (!address.local() && !args->allow_remote) {
        throw UsageError("--listen " + args->listen +
                         " is reachable from other machines: pass --allow-remote and --token-file FILE, or listen on "
                         "a Unix socket or 127.0.0.1");
      }
      if (!address.local() && args->token_file.empty()) {
        throw UsageError("--allow-remote needs --token-file FILE (a shared secret the harness sends)");
      }
    }
    dut::ServerOptions so;
    so.max_streams = args->max_streams;
    if (!args->token_file.empty()) {
      // the harness's reader and limits (found by the re-test: a 266,668-byte secret, which no
      // harness can send, was taken)
      try {
        so.auth = dut::read_token_file(args->token_file, "--token-file");
      } catch (const dut::DutError& e) {
        throw InputError(e.what());
      }
    }
    engine::LoadedChip chip;
    try {
      if (args->backend == "cuda") engine::make_backend("cuda", nullptr);  // before the chip is loaded
      chip = engine::load_chip_or_built(args->chip, "chip-server CHIP");
      engine::make_backend(args->backend, chip.chip);  // the backend exists and takes this chip
    } catch (const engine::CheckError& e) {
      throw InputError(e.what());
    }
    const std::string backend_name = args->backend;
    const std::function<std::unique_ptr<chip::ChipBackend>()> make = [chip, backend_name] {
      return engine::make_backend(backend_name, chip.chip);
    };
    so.name = "lockstep chip-server " + chip.source;
    // The chip file's hash, weights and all (found by an outside tester: the configuration's hash
    // was the same for a chip with one weight changed, and --resume continued on it).
    so.identity = chip.hash;
    std::uint64_t sessions = 0, steps = 0;
    // "4 frames, 0 steps, 1 error" (it said "1 frames", "1 errors")
    const auto counts = [](const dut::SessionStats& st) {
      const auto n = [](std::uint64_t k, const char* one, const char* many) {
        return std::to_string(k) + " " + (k == 1 ? one : many);
      };
      return n(st.frames, "frame", "frames") + ", " + n(st.steps, "step", "steps") + ", " + n(st.errors, "error", "errors");
    };
    auto log_session = [&](const dut::SessionStats& st) {
      ++sessions;
      steps += st.steps;
      if (st.clean()) {
        spdlog::info("chip-server: session {} ended ({}): {}", sessions, st.ended, counts(st));
      } else {
        spdlog::warn("chip-server: session {} ended ({}): {}", sessions, st.ended, counts(st));
      }
    };
    if (args->stdio) {
      auto conn = dut::stdio_connection();
      dut::SessionStats st;
      try {
        st = dut::serve_session(*conn, make, so);
      } catch (const dut::TransportError& e) {
        throw InputError(std::string("chip-server: ") + e.what());
      }
      ++sessions;
      steps += st.steps;
      ctx.summary.set("sessions", sessions);
      ctx.summary.set("steps_served", steps);
      // The one session is the command's work: one that the harness broke (no HELLO_OK, or input
      // that is no frame) is bad input, exit 2, in one line (the session's own line besides it was
      // a second one).
      if (!st.clean()) {
        throw InputError("chip-server: the session ended (" + st.ended + ") after " + counts(st));
      }
      spdlog::info("chip-server: session {} ended ({}): {}", sessions, st.ended, counts(st));
      return;
    } else {
      const std::atomic<bool>* stop = engine::install_stop_handlers();
      std::unique_ptr<dut::Listener> owned;
      try {
        owned = std::make_unique<dut::Listener>(address);
      } catch (const dut::TransportError& e) {
        throw InputError(std::string("chip-server: ") + e.what());
      }
      dut::Listener& listener = *owned;
      std::cerr << "lockstep: chip-server: chip " << chip.source << " (" << chip.hash << "), " << args->backend
                << " executor, listening on " << listener.address().to_string() << "\n"
                << std::flush;
      // One thread per session: a harness that keeps its session open never blocks the next.
      // --sessions N counts the sessions served (HELLO answered HELLO_OK) or failed in transport: a
      // connection closed unused (a port probe, a health check) or refused at HELLO (a wrong token,
      // another protocol version) is logged but not counted, so it never takes the place of the
      // harness the server waits for.
      std::mutex mu;
      std::condition_variable done;
      std::uint64_t counted = 0, running = 0;
      std::vector<std::thread> threads;
      for (;;) {
        if (args->sessions) {
          std::unique_lock<std::mutex> lock(mu);
          // Wait while the sessions running could still make up the N.
          while (counted + running >= args->sessions && counted < args->sessions && !stop->load())
            done.wait_for(lock, std::chrono::milliseconds(100));
          if (counted >= args->sessions || stop->load()) break;
        }
        auto conn = listener.accept(stop);
        if (!conn) break;
        {
          std::lock_guard<std::mutex> lock(mu);
          ++running;
        }
        threads.emplace_back([&, c = std::shared_ptr<dut::Connection>(std::move(conn))] {
          bool count = true;
          std::string note;
          dut::SessionStats st;
          try {
            st = dut::serve_session(*c, make, so);
            count = st.accepted;
          } catch (const std::exception& e) {
            note = e.what();
          }
          std::lock_guard<std::mutex> lock(mu);
          if (!note.empty()) {
            spdlog::warn("chip-server: session ended: {}", note);
            ++sessions;
          } else if (count) {
            log_session(st);
          } else if (st.hello) {
            spdlog::warn("chip-server: a session was refused at HELLO ({}); not counted as a session",
                         st.hello_refused.empty() ? st.ended : st.hello_refused);
          } else {
            spdlog::info("chip-server: a connection closed without HELLO ({}); not counted as a session", st.ended);
          }
          counted += count;
          --running;
          done.notify_all();
        });
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        if (stop->load() && running > 0) {
          spdlog::info("chip-server: stopping: waiting for {} running session(s) to end (a second SIGINT or "
                       "SIGTERM, a second or more later, stops at once)",
                       running);
        }
      }
      for (std::thread& t : threads) t.join();
    }
    ctx.summary.set("sessions", sessions);
    ctx.summary.set("steps_served", steps);
  });
}

}  // namespace lockstep::cli
