// Model loading, pieces blob, genuineness check and quality measurement (see quality.h).
#include "quality.h"

#include <cstdio>
#include <cstdlib>
#include <ostream>
#include <sstream>

#include "story.h"
#include "vx.h"

namespace lockstep::host {

Tokenizer synthetic_tokenizer() {
  Tokenizer t;
  t.max_token_length = 16;
  for (int i = 0; i < 512; ++i) {
    std::string p;
    if (i == 0) p = "<unk>";
    else if (i == 1) p = "\n<s>\n";
    else if (i == 2) p = "\n</s>\n";
    else if (i < 259) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "<0x%02X>", i - 3);
      p = buf;
    } else {
      p = " w" + std::to_string(i);
    }
    t.pieces.push_back(p);
    t.scores.push_back(0.0f);
  }
  return t;
}

LoadedModel load_model(const std::filesystem::path& dir, bool force_synthetic, std::ostream& log) {
  LoadedModel m;
  const auto ckp = dir / "stories260K.bin", tkp = dir / "tok512.bin";
  // A name that is there (a dangling link too) is not "absent": half a model is refused, as
  // `lockstep` refuses it (found by an outside tester: tok512.bin alone gave the synthetic model).
  auto there = [](const std::filesystem::path& p) {
    std::error_code ec;
    return std::filesystem::exists(std::filesystem::symlink_status(p, ec));
  };
  if (!force_synthetic && there(tkp) && !there(ckp))
    throw ModelError(dir.string() + " holds tok512.bin but not stories260K.bin: complete it, or pass --synthetic");
  if (!force_synthetic && there(ckp)) {
    const auto bytes = read_checkpoint_bytes(ckp);
    m.ck = parse_checkpoint(bytes, ckp.string());
    const auto tok = read_file_bytes(tkp);
    m.tok = parse_tokenizer(tok, m.ck.config.vocab_size, tkp.string());
    m.real = true;
    m.checkpoint_sha256 = sha256_hex(bytes);
    m.tokenizer_sha256 = sha256_hex(tok);
    // Both hashes: a guest's manifest records the pair it was built from (`lockstep story` warns
    // when either differs from the folder it is given).
    m.description = "stories260K.bin (sha256 " + m.checkpoint_sha256 + "), tok512.bin (sha256 " + m.tokenizer_sha256 + ")";
    return m;
  }
  char seed[32];
  std::snprintf(seed, sizeof seed, "0x%016llX", static_cast<unsigned long long>(kSyntheticSeed));
  m.ck = synthetic_checkpoint(kSyntheticSeed);
  m.tok = synthetic_tokenizer();
  m.description = std::string("synthetic model (SplitMix64 seed ") + seed + ")";
  log << "lockstep-model: using the " << m.description
      << (force_synthetic ? "" : (" because " + ckp.string() + " is absent")) << "\n";
  return m;
}

ModelsFolder find_models_folder(const std::optional<std::string>& flag, const std::filesystem::path& source_root) {
  if (flag) return {*flag, "--models"};
  if (const char* env = std::getenv("LOCKSTEP_MODELS"); env && *env) return {env, "LOCKSTEP_MODELS"};
  return {source_root / ".." / "shared" / "models", ""};
}

LoadedModel load_model(const ModelsFolder& folder, bool force_synthetic, std::ostream& log) {
  // The value "synthetic" names the synthetic model, as it does for `lockstep` (cli/models.h;
  // found by an outside tester: LOCKSTEP_MODELS=synthetic was "no such folder" here).
  if (!folder.named_by.empty() && folder.dir == "synthetic") force_synthetic = true;
  if (!force_synthetic && !folder.named_by.empty()) {
    const std::string named = folder.named_by + " " + folder.dir.string();
    std::error_code ec;
    const auto st = std::filesystem::status(folder.dir, ec);
    if (st.type() == std::filesystem::file_type::not_found)
      throw ModelError(named + ": no such folder (expected one holding stories260K.bin and tok512.bin; "
                       "--synthetic for the synthetic model)");
    if (st.type() != std::filesystem::file_type::directory)
      throw ModelError(named + ": not a folder (expected one holding stories260K.bin and tok512.bin)");
    std::string missing;
    for (const char* f : {"stories260K.bin", "tok512.bin"})
      if (!std::filesystem::exists(folder.dir / f, ec)) missing += (missing.empty() ? "" : " and ") + std::string(f);
    if (!missing.empty())
      throw ModelError(named + ": lacks " + missing + " (--synthetic for the synthetic model)");
  }
  return load_model(folder.dir, force_synthetic, log);
}

std::vector<std::uint8_t> pieces_blob(const Tokenizer& tok) {
  std::vector<std::string> dec;
  for (std::size_t i = 0; i < tok.pieces.size(); ++i) dec.push_back(tok.decode(0, static_cast<int>(i)));
  std::vector<std::uint8_t> out;
  std::uint32_t off = static_cast<std::uint32_t>(4 * (dec.size() + 1));
  auto put = [&](std::uint32_t v) {
    for (int k = 0; k < 4; ++k) out.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  };
  for (const auto& p : dec) {
    put(off);
    off += static_cast<std::uint32_t>(p.size());
  }
  put(off);
  for (const auto& p : dec) out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::pair<bool, std::string> check_genuine(const LoadedModel& m) {
  if (!m.real) return {false, "not checked: " + m.description};
  const auto toks = greedy_float(m.ck, 20);
  std::vector<int> with_bos{1};
  with_bos.insert(with_bos.end(), toks.begin(), toks.end());
  const std::string text = m.tok.decode_all(with_bos);
  const bool hash_ok = m.checkpoint_sha256 == kStories260KSha256;
  const bool tok_ok = m.tokenizer_sha256 == kTok512Sha256;
  const bool text_ok = text.rfind(kExpectedStoryPrefix, 0) == 0;
  std::string msg = m.description + ": ";
  if (hash_ok && tok_ok && text_ok)
    return {true, msg + "genuine stories260K and tok512; greedy story begins \"" + text + "\""};
  // Each file is judged on its own (found by an outside tester: a changed tokenizer beside the
  // genuine checkpoint was called genuine, and a wrong story blamed on the matrices).
  msg += hash_ok ? "checkpoint SHA-256 matches" : "checkpoint SHA-256 differs from the genuine stories260K";
  msg += tok_ok ? "; tokenizer SHA-256 matches" : "; tokenizer SHA-256 differs from the genuine tok512";
  if (!text_ok) {
    // The likeliest cause of those the files show (found by an outside tester: a seq_len of 1,
    // which cuts the story to one token, was put down to transposed matrices).
    const std::string why =
        m.ck.config.seq_len < 20
            ? "the checkpoint's seq_len " + std::to_string(m.ck.config.seq_len) + " cuts the story short"
        : hash_ok && !tok_ok ? std::string("the tokenizer decodes the genuine checkpoint's tokens otherwise")
                             : std::string("a copy with transposed matrices reads like this");
    msg += "; greedy story does not begin \"" + std::string(kExpectedStoryPrefix) + "\" (" + why + "): \"" + text + "\"";
  } else {
    msg += "; greedy story is the expected one";
  }
  return {false, msg};
}

namespace {

std::string decode_from_bos(const Tokenizer& tok, const std::vector<int>& toks, std::size_t n) {
  std::vector<int> with_bos{1};
  with_bos.insert(with_bos.end(), toks.begin(), toks.begin() + static_cast<long>(std::min(n, toks.size())));
  return tok.decode_all(with_bos);
}

}  // namespace

QualityReport measure_quality(const Checkpoint& ck, const Tokenizer& tok, int positions) {
  if (positions < 1 || positions > ck.config.seq_len)
    throw ModelError("quality: positions " + std::to_string(positions) + " outside 1.." +
                     std::to_string(ck.config.seq_len) + " (the checkpoint's seq_len)");
  if (ck.config.seq_len < 4 * kCachePositions)
    throw ModelError("quality: the checkpoint's seq_len " + std::to_string(ck.config.seq_len) +
                     " is under the 256 positions of the four hardware windows");
  QualityReport q;
  const VxImage img = convert_vx(ck);
  // Teacher-forcing sequences, not stories: decoding continues through a generated BOS.
  q.float_tokens = greedy_float(ck, std::max(positions, 256), AtBos::kContinue);
  q.float_text = decode_from_bos(tok, q.float_tokens, 63);
  q.vx_tokens = greedy_vx(img, 63, kCachePositions, AtBos::kContinue);
  q.vx_text = decode_from_bos(tok, q.vx_tokens, 63);
  while (q.greedy_common_prefix < 63 && q.vx_tokens[static_cast<std::size_t>(q.greedy_common_prefix)] ==
                                            q.float_tokens[static_cast<std::size_t>(q.greedy_common_prefix)])
    ++q.greedy_common_prefix;
  // Host-only long-cache variant: same arithmetic, `positions` cache rows per layer.
  {
    VxModel vx(img, positions);
    q.long_positions = positions;
    for (int pos = 0; pos < positions; ++pos) {
      const int in = pos == 0 ? 1 : q.float_tokens[static_cast<std::size_t>(pos - 1)];
      q.long_agree += vx.forward(in, pos) == q.float_tokens[static_cast<std::size_t>(pos)];
    }
  }
  // Hardware build (64 positions): 4 windows, each BOS + 63 tokens of the float story.
  for (int w = 0; w < 4; ++w) {
    VxModel vx(img, kCachePositions);
    FloatModel fm(ck);
    for (int pos = 0; pos < kCachePositions; ++pos) {
      const int in = pos == 0 ? 1 : q.float_tokens[static_cast<std::size_t>(64 * w + pos - 1)];
      const bool agree = vx.forward(in, pos) == argmax(fm.forward(in, pos));
      q.window_agree += agree;
      if (w == 0) q.first_window_agree += agree;
      ++q.window_positions;
    }
  }
  return q;
}

std::string format_quality(const QualityReport& q) {
  std::ostringstream o;
  char buf[256];
  o << "model: " << q.model << "\n";
  std::snprintf(buf, sizeof buf, "teacher-forced top-1 agreement, host long-cache vx variant, positions 0..%d: %d/%d = %.2f%%\n",
                q.long_positions - 1, q.long_agree, q.long_positions, 100.0 * q.long_agree / q.long_positions);
  o << buf;
  std::snprintf(buf, sizeof buf, "teacher-forced top-1 agreement, hardware vx build (64 positions), 4 windows x 64: %d/%d = %.2f%%\n",
                q.window_agree, q.window_positions, 100.0 * q.window_agree / q.window_positions);
  o << buf;
  std::snprintf(buf, sizeof buf, "  of which positions 0..63 of the float story: %d/64\n", q.first_window_agree);
  o << buf;
  o << "greedy stories agree on the first " << q.greedy_common_prefix << " of 63 tokens\n";
  o << "float32 greedy: " << q.float_text << "\n";
  o << "vx greedy:      " << q.vx_text << "\n";
  return o.str();
}

nlohmann::json quality_json(const QualityReport& q) {
  return {{"model", q.model},
          {"long_positions", q.long_positions},
          {"long_agree", q.long_agree},
          {"window_positions", q.window_positions},
          {"window_agree", q.window_agree},
          {"first_window_agree", q.first_window_agree},
          {"greedy_common_prefix", q.greedy_common_prefix},
          {"float_tokens", q.float_tokens},
          {"float_text", q.float_text},
          {"vx_tokens", q.vx_tokens},
          {"vx_text", q.vx_text}};
}

}  // namespace lockstep::host
