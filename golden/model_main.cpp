// lockstep-model: host tools for the stories260K guests.
//
//   lockstep-model convert --build vx --out DIR   write the vector build's model image
//   lockstep-model golden --build vx|float --tokens N   greedy tokens and text from BOS
//   lockstep-model quality [--json FILE]          vx vs float32 agreement (docs/quality.md)
//   lockstep-model check                          is the checkpoint the genuine stories260K?
//
// The model comes from --models DIR (default: $LOCKSTEP_MODELS or <source>/../shared/models);
// when stories260K.bin is absent, or with --synthetic, the synthetic model (seed printed) is used.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "quality.h"
#include "story.h"
#include "vx.h"

using namespace lockstep::host;

namespace {

void write_file(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw ModelError(p.string() + ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"lockstep-model: stories260K host tools (checkpoint reader, golden models, vx image)"};
  app.require_subcommand(1);
  std::string models = models_dir(LOCKSTEP_SOURCE_DIR).string();
  bool synthetic = false;
  app.add_option("--models", models, "folder holding stories260K.bin and tok512.bin");
  app.add_flag("--synthetic", synthetic, "use the synthetic model even when the real one exists");

  auto* convert = app.add_subcommand("convert", "write the vector build's model image files");
  std::string build = "vx", out_dir;
  convert->add_option("--build", build, "vx")->check(CLI::IsMember({"vx"}));
  convert->add_option("--out", out_dir, "output folder")->required();

  auto* golden = app.add_subcommand("golden", "greedy tokens from BOS");
  int n_tokens = 64, positions = kCachePositions;
  golden->add_option("--build", build, "vx or float")->check(CLI::IsMember({"vx", "float"}));
  golden->add_option("--tokens", n_tokens, "number of tokens")->check(CLI::Range(1, 512));
  golden->add_option("--positions", positions, "vx cache positions (64 = hardware)");

  auto* quality = app.add_subcommand("quality", "teacher-forced agreement of vx with float32");
  std::string json_out;
  int window = 256;
  quality->add_option("--positions", window, "positions of the long-cache measurement");
  quality->add_option("--json", json_out, "also write the figures as JSON");

  auto* check = app.add_subcommand("check", "check the checkpoint is the genuine stories260K");

  CLI11_PARSE(app, argc, argv);
  try {
    LoadedModel m = load_model(models, synthetic, std::cerr);
    if (*convert) {
      const VxImage img = convert_vx(m.ck);
      std::filesystem::create_directories(out_dir);
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
      std::ofstream(d / "manifest.json") << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      std::cout << "wrote " << d.string() << "/{wmem,wscale,emb,pieces}.bin and manifest.json\n";
    } else if (*golden) {
      std::vector<int> toks;
      if (build == "float") {
        toks = greedy_float(m.ck, n_tokens);
      } else {
        if (n_tokens > positions) throw ModelError("golden: --tokens exceeds --positions");
        toks = greedy_vx(convert_vx(m.ck), n_tokens, positions);
      }
      std::vector<int> with_bos{1};
      with_bos.insert(with_bos.end(), toks.begin(), toks.end());
      for (int t : toks) std::cout << t << ' ';
      std::cout << "\n" << m.tok.decode_all(with_bos) << "\n";
    } else if (*quality) {
      QualityReport q = measure_quality(m.ck, m.tok, window);
      q.model = m.description;
      std::cout << format_quality(q);
      if (!json_out.empty())
        std::ofstream(json_out) << quality_json(q).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else if (*check) {
      const auto res = check_genuine(m);
      std::cout << res.second << "\n";
      return res.first ? 0 : 1;
    }
  } catch (const ModelError& e) {
    std::cerr << "lockstep-model: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
