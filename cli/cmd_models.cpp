// `lockstep models`: shows which model directory a run would use.
#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "llama2c.h"

namespace lockstep::cli {

ModelDigests check_model_files(const ModelChoice& choice) {
  ModelDigests d;
  try {
    const auto bytes = host::read_checkpoint_bytes(choice.checkpoint());
    const host::Checkpoint ck = host::parse_checkpoint(bytes, choice.checkpoint().string());
    d.checkpoint_sha256 = host::sha256_hex(bytes);
    d.vector_build_refusal = host::vector_build_refusal(ck.config);
    const auto tok = host::read_file_bytes(choice.tokenizer());
    (void)host::parse_tokenizer(tok, ck.config.vocab_size, choice.tokenizer().string());
    d.tokenizer_sha256 = host::sha256_hex(tok);
  } catch (const host::ModelError& e) {
    throw InputError(e.what());
  }
  return d;
}

void add_models_command(CLI::App& app, Context& ctx) {
  auto* cmd = app.add_subcommand(
      "models", "Show which model directory (or the synthetic model) would be used");
  cmd->callback([&ctx] {
    const ModelChoice& choice = ctx.models();
    // The files must be what the converter accepts (golden/llama2c.h): a 0-byte or random
    // stories260K.bin is bad input, not a model.
    std::string sha256, tok_sha256, refusal;
    bool genuine_checkpoint = false, genuine_tokenizer = false;
    if (!choice.synthetic()) {
      const ModelDigests d = check_model_files(choice);
      sha256 = d.checkpoint_sha256;
      tok_sha256 = d.tokenizer_sha256;
      refusal = d.vector_build_refusal;
      genuine_checkpoint = sha256 == host::kStories260KSha256;
      genuine_tokenizer = tok_sha256 == host::kTok512Sha256;
    }
    const bool genuine = genuine_checkpoint && genuine_tokenizer;
    nlohmann::json files = nlohmann::json::array();
    for (const auto& f : choice.files) files.push_back({{"name", f.name}, {"bytes", f.bytes}});
    ctx.summary.set("models", {{"source", to_string(choice.source)},
                               {"synthetic", choice.synthetic()},
                               {"dir", choice.synthetic() ? "" : choice.dir.string()},
                               {"files", files},
                               {"checkpoint_sha256", sha256},
                               {"tokenizer_sha256", tok_sha256},
                               {"genuine_stories260K", genuine},
                               {"genuine_checkpoint", genuine_checkpoint},
                               {"genuine_tokenizer", genuine_tokenizer},
                               {"vector_build", choice.synthetic() || refusal.empty()},
                               {"vector_build_refusal", refusal}});

    auto& out = ctx.out();
    if (choice.synthetic()) {
      out << "models: synthetic (deterministic model of the stories260K shape)\n";
    } else {
      out << "models: " << choice.dir.string() << " (from " << to_string(choice.source)
          << ")\n";
      for (const auto& f : choice.files) out << "  " << f.name << "  " << f.bytes << " bytes\n";
      // Each file is judged on its own (found by an outside tester: a changed tokenizer beside the
      // genuine checkpoint made the checkpoint "not the genuine stories260K").
      out << "  checkpoint sha256 " << sha256
          << (genuine_checkpoint ? " (the genuine stories260K)" : " (not the genuine stories260K)") << "\n";
      out << "  tokenizer sha256 " << tok_sha256
          << (genuine_tokenizer ? " (the genuine tok512)" : " (not the genuine tok512)") << "\n";
      // What the vector build takes: a checkpoint it refuses cannot become a stories_vx guest.
      out << "  vector build (stories_vx): "
          << (refusal.empty() ? std::string("takes this checkpoint") : "cannot take this checkpoint: " + refusal) << "\n";
    }
  });
}

}  // namespace lockstep::cli
