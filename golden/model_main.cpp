// lockstep-model: host tools for the stories260K guests.
//
//   lockstep-model convert --build vx --out DIR   write the vector build's model image
//   lockstep-model golden --build vx|float --tokens N   greedy tokens and text from BOS
//   lockstep-model quality [--json FILE]          vx vs float32 agreement (docs/quality.md)
//   lockstep-model check                          is the checkpoint the genuine stories260K?
//
// The model comes from --models DIR, else $LOCKSTEP_MODELS, else <source>/../shared/models.  A
// folder the user named must hold stories260K.bin and tok512.bin (else exit 2); only the default
// folder may lack them, and then, as with --synthetic, the synthetic model (seed printed) is used.
// Bad input or usage: one stderr line naming the flag or path, exit 2 (tool_cli.h).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "quality.h"
#include "story.h"
#include "tool_cli.h"
#include "vx.h"
#include "lockstep/format/json_text.h"

using namespace lockstep::host;

namespace {

void write_file(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) { write_file_bytes(p, bytes); }

// Creates the --out folder (and its parents), or says in one line why it cannot.
void make_out_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw ModelError("--out " + dir + ": cannot create folder (" + ec.message() + ")");
  if (!std::filesystem::is_directory(dir, ec)) throw ModelError("--out " + dir + ": not a folder");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep-model: stories260K host tools (checkpoint reader, golden models, vx image)"};
  app.require_subcommand(1);
  tool::ModelOptions model;
  model.add(app);

  auto* convert = app.add_subcommand("convert", "write the vector build's model image files");
  std::string build = "vx", out_dir;
  convert->add_option("--build", build, "vx")->check(CLI::IsMember({"vx"}));
  convert->add_option("--out", out_dir, "output folder")->required()->check(tool::nonempty());

  auto* golden = app.add_subcommand("golden", "greedy tokens from BOS");
  int n_tokens = 64, positions = kCachePositions;
  golden->add_option("--build", build, "vx or float")->check(CLI::IsMember({"vx", "float"}));
  golden->add_option("--tokens", n_tokens, "number of tokens")->check(CLI::Range(1, 512));
  golden->add_option("--positions", positions, "vx cache positions (64 = hardware), 1..512")
      ->check(CLI::Range(1, 512));

  auto* quality = app.add_subcommand("quality", "teacher-forced agreement of vx with float32");
  std::string json_out;
  int window = 256;
  quality->add_option("--positions", window, "positions of the long-cache measurement, 1..seq_len (512)")
      ->check(CLI::Range(1, 512));
  quality->add_option("--json", json_out, "also write the figures as JSON")->check(tool::nonempty());

  auto* check = app.add_subcommand("check", "check the checkpoint is the genuine stories260K");

  if (const auto code = tool::parse(app, argc, argv, "lockstep-model")) return *code;
  try {
    if (*convert) make_out_dir(out_dir);  // before the model: a bad --out fails at once
    LoadedModel m = model.load(LOCKSTEP_SOURCE_DIR, std::cerr);
    if (*convert) {
      const VxImage img = convert_vx(m.ck);
      const std::filesystem::path d = out_dir;
      const auto wm = img.wmem_section(), ws = img.wscale_section();
      write_file(d / "wmem.bin", wm);
      write_file(d / "wscale.bin", ws);
      write_file(d / "emb.bin", img.emb);
      const auto pieces = pieces_blob(m.tok);
      write_file(d / "pieces.bin", pieces);
      const auto gold = greedy_vx(img, 63);
      nlohmann::json j;
      j["model"] = m.description;
      j["files"] = {{"wmem.bin", {{"section", ".lockstep.wmem"}, {"bytes", wm.size()}, {"sha256", sha256_hex(wm)}}},
                    {"wscale.bin", {{"section", ".lockstep.wscale"}, {"bytes", ws.size()}, {"sha256", sha256_hex(ws)}}},
                    {"emb.bin", {{"section", "guest .rodata (VLD records)"}, {"bytes", img.emb.size()}, {"sha256", sha256_hex(img.emb)}}},
                    {"pieces.bin", {{"section", "guest .rodata (token pieces)"}, {"bytes", pieces.size()}, {"sha256", sha256_hex(pieces)}}}};
      j["golden_vx_tokens"] = gold;
      std::vector<int> with_bos{1};
      with_bos.insert(with_bos.end(), gold.begin(), gold.end());
      j["golden_vx_text"] = m.tok.decode_all(with_bos);
      // The golden text may hold bytes that are not UTF-8 (byte-fallback tokens): replace them.
      write_file_text(d / "manifest.json", lockstep::format::json_text(j, 2) + "\n");
      std::cout << "wrote " << d.string() << "/{wmem,wscale,emb,pieces}.bin and manifest.json\n";
    } else if (*golden) {
      std::vector<int> toks;
      if (build == "float") {
        toks = greedy_float(m.ck, n_tokens);
      } else {
        if (n_tokens > positions) throw ModelError("golden: --tokens " + std::to_string(n_tokens) + " exceeds --positions " + std::to_string(positions));
        toks = greedy_vx(convert_vx(m.ck), n_tokens, positions);
      }
      // Fewer tokens than asked is not an error, but never silent: say which limit ended the story.
      if (static_cast<int>(toks.size()) < n_tokens) {
        const bool at_limit = build == "float" && static_cast<int>(toks.size()) == m.ck.config.seq_len;
        std::cerr << "lockstep-model: golden: " << toks.size() << " of the " << n_tokens << " tokens asked for: "
                  << (at_limit ? "the checkpoint's seq_len (" + std::to_string(m.ck.config.seq_len) + ") ends it"
                               : std::string("the model generated BOS (token 1), which ends a story as in llama2.c"))
                  << "\n";
      }
      std::vector<int> with_bos{1};
      with_bos.insert(with_bos.end(), toks.begin(), toks.end());
      for (int t : toks) std::cout << t << ' ';
      std::cout << "\n" << m.tok.decode_all(with_bos) << "\n";
    } else if (*quality) {
      if (window > m.ck.config.seq_len)
        throw ModelError("quality: --positions " + std::to_string(window) + " exceeds the checkpoint's seq_len " +
                         std::to_string(m.ck.config.seq_len));
      QualityReport q = measure_quality(m.ck, m.tok, window);
      q.model = m.description;
      std::cout << format_quality(q) << std::flush;  // printed even when --json cannot be written
      if (!json_out.empty())
        write_file_text(json_out, lockstep::format::json_text(quality_json(q), 2) + "\n");
    } else if (*check) {
      const auto res = check_genuine(m);
      std::cout << res.second << "\n";
      tool::finish_stdout();
      return res.first ? 0 : 1;
    }
    tool::finish_stdout();
  } catch (const ModelError& e) {
    std::cerr << "lockstep-model: " << e.what() << "\n";
    return tool::kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "lockstep-model: out of memory\n";
    return tool::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "lockstep-model: " << e.what() << "\n";
    return tool::kExitBadInput;
  }
  return 0;
}
