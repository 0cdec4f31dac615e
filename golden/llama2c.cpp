// llama2.c checkpoint and tokenizer reader (see llama2c.h).
#include "llama2c.h"

#include <algorithm>
#include <array>
#include <utility>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace lockstep::host {
namespace {

std::uint32_t load_u32(const std::uint8_t* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

std::int32_t load_i32(const std::uint8_t* p) { return static_cast<std::int32_t>(load_u32(p)); }

float load_f32(const std::uint8_t* p) {
  std::uint32_t u = load_u32(p);
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// " (<strerror>)" for a nonzero errno, else "".
std::string reason(int err) { return err != 0 ? std::string(" (") + std::strerror(err) + ")" : std::string(); }

void store_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

[[noreturn]] void fail(std::string_view name, const std::string& what) {
  throw ModelError(std::string(name) + ": " + what);
}

}  // namespace

CheckpointLayout checkpoint_layout(std::span<const std::uint8_t> header, std::uint64_t file_size,
                                   std::string_view name) {
  if (header.size() < 28 || file_size < 28)
    fail(name, "checkpoint truncated: " + std::to_string(std::min<std::uint64_t>(file_size, header.size())) +
                   " bytes, shorter than the 28-byte header");
  std::array<std::int32_t, 7> h{};
  for (int i = 0; i < 7; ++i) h[i] = load_i32(header.data() + 4 * i);
  CheckpointLayout out;
  Config& c = out.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] == INT32_MIN ? 0 : std::abs(h[5]);
  c.seq_len = h[6];
  static const char* kNames[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                  "n_kv_heads", "vocab_size", "seq_len"};
  const int vals[7] = {c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, c.vocab_size,
                       c.seq_len};
  for (int i = 0; i < 7; ++i)
    if (vals[i] <= 0 || vals[i] > 65536)
      fail(name, std::string("bad header: ") + kNames[i] + " = " + std::to_string(h[i]) +
                     " (must be in 1..65536)");
  if (c.dim % c.n_heads != 0)
    fail(name, "bad header: dim " + std::to_string(c.dim) + " not divisible by n_heads " +
                   std::to_string(c.n_heads));
  if (c.n_heads % c.n_kv_heads != 0)
    fail(name, "bad header: n_heads " + std::to_string(c.n_heads) +
                   " not divisible by n_kv_heads " + std::to_string(c.n_kv_heads));
  if (c.head_size() % 2 != 0)
    fail(name, "bad header: head size " + std::to_string(c.head_size()) + " is odd");

  // Every size in 64 bits, every product and sum checked (the values are at most 2^16, so no
  // product of three overflows; the checks keep it so if the bounds above ever change).
  const auto mul = [&](std::initializer_list<std::uint64_t> factors, const char* what) {
    std::uint64_t r = 1;
    for (std::uint64_t f : factors)
      if (__builtin_mul_overflow(r, f, &r)) fail(name, std::string("bad header: ") + what + " overflows 64 bits");
    return r;
  };
  const auto add = [&](std::uint64_t a, std::uint64_t b, const char* what) {
    std::uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) fail(name, std::string("bad header: ") + what + " overflows 64 bits");
    return r;
  };
  const std::uint64_t D = static_cast<std::uint64_t>(c.dim), H = static_cast<std::uint64_t>(c.hidden_dim),
                      L = static_cast<std::uint64_t>(c.n_layers), V = static_cast<std::uint64_t>(c.vocab_size),
                      S = static_cast<std::uint64_t>(c.seq_len), NH = static_cast<std::uint64_t>(c.n_heads),
                      HS = D / NH, KV = HS * static_cast<std::uint64_t>(c.n_kv_heads);
  out.tensor_floats = {mul({V, D}, "token_embedding size"), mul({L, D}, "rms_att size"),
                       mul({L, D, D}, "wq size"),          mul({L, KV, D}, "wk size"),
                       mul({L, KV, D}, "wv size"),         mul({L, D, D}, "wo size"),
                       mul({L, D}, "rms_ffn size"),        mul({L, H, D}, "w1 size"),
                       mul({L, D, H}, "w2 size"),          mul({L, H, D}, "w3 size"),
                       D,                                  mul({S, HS}, "rope table size")};
  if (!c.shared_classifier) out.tensor_floats.push_back(mul({V, D}, "wcls size"));
  std::uint64_t floats = 0;
  for (std::uint64_t n : out.tensor_floats) floats = add(floats, n, "tensor size sum");
  out.file_bytes = add(28, mul({4, floats}, "file size"), "file size");
  if (file_size != out.file_bytes)
    fail(name, "wrong file size " + std::to_string(file_size) + " bytes; the header (dim " +
                   std::to_string(c.dim) + ", hidden " + std::to_string(c.hidden_dim) + ", layers " +
                   std::to_string(c.n_layers) + ", heads " + std::to_string(c.n_heads) + ", kv_heads " +
                   std::to_string(c.n_kv_heads) + ", vocab " + std::to_string(h[5]) + ", seq_len " +
                   std::to_string(c.seq_len) + ") implies " + std::to_string(out.file_bytes));
  out.run_state_floats = add(mul({2, L, S, KV}, "K/V cache size"), mul({NH, S}, "attention size"), "run state size");
  if (out.run_state_floats > kMaxRunStateFloats)
    fail(name, "bad header: n_layers " + std::to_string(c.n_layers) + ", seq_len " + std::to_string(c.seq_len) +
                   ", kv_dim " + std::to_string(KV) + " and n_heads " + std::to_string(c.n_heads) + " need a run state of " +
                   std::to_string(out.run_state_floats) + " floats, above the limit of " +
                   std::to_string(kMaxRunStateFloats));
  // Last, so that the size checks above speak first for a header that is wrong in both ways.
  // (found by an outside tester: vocab_size 1 was read, and the BOS row past the embedding table)
  if (c.vocab_size < 3)
    fail(name, "bad header: vocab_size = " + std::to_string(h[5]) +
                   " (at least 3: llama2.c's ids 0 <unk>, 1 BOS and 2 EOS)");
  return out;
}

Checkpoint parse_checkpoint(std::span<const std::uint8_t> bytes, std::string_view name) {
  const CheckpointLayout layout = checkpoint_layout(bytes, bytes.size(), name);
  Checkpoint ck;
  ck.config = layout.config;
  Weights& w = ck.w;
  std::vector<float> rope;  // legacy freq_cis_real + freq_cis_imag, ignored
  struct Tensor {
    const char* name;
    std::vector<float>* dst;
  };
  std::vector<Tensor> tensors = {
      {"token_embedding", &w.token_embedding}, {"rms_att", &w.rms_att}, {"wq", &w.wq},
      {"wk", &w.wk},                           {"wv", &w.wv},           {"wo", &w.wo},
      {"rms_ffn", &w.rms_ffn},                 {"w1", &w.w1},           {"w2", &w.w2},
      {"w3", &w.w3},                           {"rms_final", &w.rms_final},
      {"rope_tables", &rope}};
  if (!ck.config.shared_classifier) tensors.push_back({"wcls", &w.wcls});
  // The file size equals 28 + 4 * the floats (checked): every tensor below is inside `bytes`.
  const std::uint8_t* p = bytes.data() + 28;
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& t = tensors[k];
    const std::uint64_t count = layout.tensor_floats[k];
    t.dst->resize(static_cast<std::size_t>(count));
    for (std::uint64_t i = 0; i < count; ++i, p += 4) {
      float f = load_f32(p);
      if (!std::isfinite(f) && t.dst != &rope)
        fail(name, std::string("non-finite value in ") + t.name + "[" + std::to_string(i) + "]");
      (*t.dst)[i] = f;
    }
  }
  if (ck.config.shared_classifier) w.wcls = w.token_embedding;
  return ck;
}

std::vector<std::uint8_t> read_file_bytes(const std::filesystem::path& path, std::uint64_t max_bytes) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found)
    throw ModelError(path.string() + ": cannot open file (no such file)");
  if (st.type() == std::filesystem::file_type::directory)
    throw ModelError(path.string() + ": is a directory, not a file");
  if (st.type() == std::filesystem::file_type::fifo)  // opening one would wait for a writer
    throw ModelError(path.string() + ": is a named pipe (FIFO), not a regular file");
  // A device (/dev/zero behind a link) or a socket never ends or is no file (found by an outside
  // tester: read until memory ran out).
  if (st.type() != std::filesystem::file_type::regular && st.type() != std::filesystem::file_type::unknown)
    throw ModelError(path.string() + ": is not a regular file (a device, socket or other special file)");
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > max_bytes)
    throw ModelError(path.string() + ": " + std::to_string(size) + " bytes, more than the " +
                     std::to_string(max_bytes) + " a model file may have here");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ModelError(path.string() + ": cannot open file" + reason(errno));
  std::vector<std::uint8_t> data;
  if (!ec) data.reserve(static_cast<std::size_t>(size));
  char buf[1 << 16];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    data.insert(data.end(), buf, buf + in.gcount());
    if (data.size() > max_bytes)  // grew while read
      throw ModelError(path.string() + ": more than the " + std::to_string(max_bytes) +
                       " bytes a model file may have here");
    if (!in) break;
  }
  if (in.bad()) throw ModelError(path.string() + ": cannot read file" + reason(errno));
  return data;
}

void write_file_bytes(const std::filesystem::path& path, std::span<const std::uint8_t> bytes) {
  write_file_text(path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

void write_file_text(const std::filesystem::path& path, std::string_view text) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ModelError(path.string() + ": cannot write (is a directory)");
  errno = 0;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw ModelError(path.string() + ": cannot write" + reason(errno));
  errno = 0;
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.flush();
  out.close();
  if (!out) {
    const int err = errno;
    if (std::filesystem::is_regular_file(path, ec)) std::filesystem::remove(path, ec);
    throw ModelError(path.string() + ": cannot write" + reason(err));
  }
}

std::vector<std::uint8_t> read_checkpoint_bytes(const std::filesystem::path& path) {
  // The header and the file's size first: a wrong size is one line before anything is read
  // (found by an outside tester: a 6 GB sparse file was read whole, then "out of memory").
  std::vector<std::uint8_t> header;
  {
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    if (st.type() == std::filesystem::file_type::regular) {
      const auto size = std::filesystem::file_size(path, ec);
      std::ifstream in(path, std::ios::binary);
      char h[28];
      if (!ec && in && in.read(h, sizeof h)) {
        header.assign(h, h + sizeof h);
        (void)checkpoint_layout(header, size, path.string());
      }
    }
  }
  // (read_file_bytes says why a file that is not there, not regular or unreadable fails, and
  // parse_checkpoint checks what it reads again.)
  return read_file_bytes(path);
}

std::string vector_build_refusal(const Config& c) {
  const std::pair<const char*, std::pair<int, int>> want[] = {{"dim", {c.dim, 64}},
                                                              {"hidden_dim", {c.hidden_dim, 172}},
                                                              {"n_layers", {c.n_layers, 5}},
                                                              {"n_heads", {c.n_heads, 8}},
                                                              {"n_kv_heads", {c.n_kv_heads, 4}},
                                                              {"vocab_size", {c.vocab_size, 512}}};
  std::string out;
  for (const auto& [field, v] : want)
    if (v.first != v.second)
      out += (out.empty() ? "" : ", ") + std::string(field) + " " + std::to_string(v.first) + ", not stories260K's " +
             std::to_string(v.second);
  if (c.seq_len < kVectorBuildMinSeqLen)
    out += (out.empty() ? "" : ", ") + std::string("seq_len ") + std::to_string(c.seq_len) + ", below the " +
           std::to_string(kVectorBuildMinSeqLen) + " its calibration runs";
  return out;
}

Checkpoint read_checkpoint(const std::filesystem::path& path) {
  auto data = read_checkpoint_bytes(path);
  return parse_checkpoint(data, path.string());
}

std::vector<std::uint8_t> serialize_checkpoint(const Checkpoint& ck) {
  const Config& c = ck.config;
  std::vector<std::uint8_t> out;
  const int header[7] = {c.dim,        c.hidden_dim,
                         c.n_layers,   c.n_heads,
                         c.n_kv_heads, c.shared_classifier ? c.vocab_size : -c.vocab_size,
                         c.seq_len};
  for (int v : header) store_u32(out, static_cast<std::uint32_t>(v));
  auto put = [&](const std::vector<float>& t) {
    for (float f : t) {
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      store_u32(out, u);
    }
  };
  const Weights& w = ck.w;
  for (const auto* t : {&w.token_embedding, &w.rms_att, &w.wq, &w.wk, &w.wv, &w.wo, &w.rms_ffn,
                        &w.w1, &w.w2, &w.w3, &w.rms_final})
    put(*t);
  for (int i = 0; i < c.seq_len * c.head_size(); ++i) store_u32(out, 0);
  if (!c.shared_classifier) put(w.wcls);
  return out;
}

std::string Tokenizer::decode(int prev, int token) const {
  if (token < 0 || token >= static_cast<int>(pieces.size())) return {};
  std::string_view piece = pieces[static_cast<std::size_t>(token)];
  if (prev == 1 && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
  unsigned byte = 0;
  if (piece.size() == 6 && std::sscanf(std::string(piece).c_str(), "<0x%02X>", &byte) == 1)
    return std::string(1, static_cast<char>(byte));
  return std::string(piece);
}

std::string Tokenizer::decode_all(std::span<const int> tokens) const {
  std::string s;
  for (std::size_t i = 1; i < tokens.size(); ++i) s += decode(tokens[i - 1], tokens[i]);
  return s;
}

Tokenizer parse_tokenizer(std::span<const std::uint8_t> bytes, int vocab_size,
                          std::string_view name) {
  Tokenizer t;
  std::size_t off = 0;
  auto need = [&](std::size_t n, const char* what) {
    if (bytes.size() - off < n)
      fail(name, std::string("tokenizer truncated reading ") + what + " of piece " +
                     std::to_string(t.pieces.size()));
  };
  if (bytes.size() < 4) fail(name, "tokenizer truncated: no max_token_length");
  t.max_token_length = load_i32(bytes.data());
  off = 4;
  if (t.max_token_length <= 0 || t.max_token_length > 1024)
    fail(name, "bad tokenizer max_token_length " + std::to_string(t.max_token_length));
  for (int i = 0; i < vocab_size; ++i) {
    need(8, "score and length");
    float score = load_f32(bytes.data() + off);
    std::int32_t len = load_i32(bytes.data() + off + 4);
    off += 8;
    // The byte offset too: a wrong length earlier shifts every later piece, and the piece named
    // is then not the one whose length is wrong.
    const std::string where = " of piece " + std::to_string(i) + " (its score at byte " + std::to_string(off - 8) +
                              "; a wrong length of an earlier piece shifts every later one)";
    if (!std::isfinite(score)) fail(name, "non-finite tokenizer score" + where);
    if (len < 0 || len > t.max_token_length)
      fail(name, "bad tokenizer piece length " + std::to_string(len) + where);
    need(static_cast<std::size_t>(len), "bytes");
    t.scores.push_back(score);
    t.pieces.emplace_back(reinterpret_cast<const char*>(bytes.data() + off),
                          static_cast<std::size_t>(len));
    off += static_cast<std::size_t>(len);
  }
  if (off != bytes.size())
    fail(name, "tokenizer has " + std::to_string(bytes.size() - off) + " trailing bytes after " +
                   std::to_string(vocab_size) + " pieces");
  return t;
}

Tokenizer read_tokenizer(const std::filesystem::path& path, int vocab_size) {
  auto data = read_file_bytes(path);
  return parse_tokenizer(data, vocab_size, path.string());
}

std::filesystem::path models_dir(const std::filesystem::path& source_root) {
  if (const char* env = std::getenv("LOCKSTEP_MODELS"); env && *env) return env;
  return source_root / ".." / "shared" / "models";
}

// ---- SHA-256 (FIPS 180-4) --------------------------------------------------------------------
std::string sha256_hex(std::span<const std::uint8_t> bytes) {
  static const std::uint32_t k[64] = {
      0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
      0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
      0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
      0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
      0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
      0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
      0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
      0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
      0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
      0xc67178f2};
  std::uint32_t hs[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  auto rotr = [](std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); };
  std::vector<std::uint8_t> msg(bytes.begin(), bytes.end());
  const std::uint64_t bitlen = static_cast<std::uint64_t>(bytes.size()) * 8;
  msg.push_back(0x80);
  while (msg.size() % 64 != 56) msg.push_back(0);
  for (int i = 7; i >= 0; --i) msg.push_back(static_cast<std::uint8_t>(bitlen >> (8 * i)));
  for (std::size_t blk = 0; blk < msg.size(); blk += 64) {
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i) {
      const std::uint8_t* p = &msg[blk + 4 * static_cast<std::size_t>(i)];
      w[i] = std::uint32_t(p[0]) << 24 | std::uint32_t(p[1]) << 16 | std::uint32_t(p[2]) << 8 | p[3];
    }
    for (int i = 16; i < 64; ++i) {
      std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    std::uint32_t a = hs[0], b = hs[1], c = hs[2], d = hs[3], e = hs[4], f = hs[5], g = hs[6],
                  h = hs[7];
    for (int i = 0; i < 64; ++i) {
      std::uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      std::uint32_t ch = (e & f) ^ (~e & g);
      std::uint32_t t1 = h + S1 + ch + k[i] + w[i];
      std::uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      std::uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
      std::uint32_t t2 = S0 + mj;
      h = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    hs[0] += a; hs[1] += b; hs[2] += c; hs[3] += d; hs[4] += e; hs[5] += f; hs[6] += g; hs[7] += h;
  }
  std::string out;
  char buf[9];
  for (std::uint32_t v : hs) {
    std::snprintf(buf, sizeof buf, "%08x", v);
    out += buf;
  }
  return out;
}

}  // namespace lockstep::host
