#include "lockstep/dut/vocab.h"
#include "lockstep/format/file.h"
#include "lockstep/format/error.h"

#include <fstream>
#include <limits>
#include <cstdio>
#include <sstream>

#include "lockstep/format/tokens.h"

namespace lockstep::dut {

namespace {

constexpr std::uint32_t kUnmapped = std::numeric_limits<std::uint32_t>::max();

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

// Decimal or 0x hex, the whole string, at most 2^32 - 1; nullopt otherwise.
std::optional<std::uint64_t> parse_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  std::size_t i = 0;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    i = 2;
  }
  for (; i < s.size(); ++i) {
    const char c = s[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (base == 16 && c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return std::nullopt;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    if (v > 0xFFFFFFFFull) return std::nullopt;
  }
  return v;
}

}  // namespace

std::vector<std::uint32_t> producible_tokens() {
  std::vector<std::uint32_t> out;
  for (const format::KindInfo& k : format::kinds())
    for (std::uint32_t p = 0; p < k.payload_limit; ++p) out.push_back(format::token_id(k.kind, p));
  return out;
}

std::vector<std::uint32_t> required_tokens() {
  // (found by an outside tester: a map naming exactly the tokens trace.md §2 says are produced
  // was refused for OIH(0), VMH(0) and TRAP(0))
  const std::uint32_t oih0 = format::token_id(format::Kind::OIH, 0), vmh0 = format::token_id(format::Kind::VMH, 0);
  const std::uint32_t trap = static_cast<std::uint32_t>(format::Kind::TRAP);
  std::vector<std::uint32_t> out;
  for (std::uint32_t t : producible_tokens()) {
    if (t == oih0 || t == vmh0) continue;
    if (t >> 8 == trap && format::trap_name(t & 0xFF) == "UNKNOWN") continue;
    out.push_back(t);
  }
  return out;
}

VocabMap VocabMap::identity(std::uint32_t chip_vocab) {
  if (chip_vocab < format::vocab_size()) {
    throw VocabError("the chip's vocab_size " + std::to_string(chip_vocab) + " is below trace-v3's " +
                     std::to_string(format::vocab_size()) + ": a chip that numbers its tokens in its own way needs "
                     "--dut-vocab FILE (docs/spec/dut-protocol.md §6)");
  }
  VocabMap m;
  m.identity_ = true;
  m.chip_vocab_ = chip_vocab;
  return m;
}

std::optional<std::uint32_t> VocabMap::to_spec(std::uint32_t chip_id) const {
  if (chip_id >= chip_vocab_) return std::nullopt;
  if (identity_) return chip_id < format::vocab_size() ? chip_id : format::kUnmappedChipId | chip_id;
  const auto it = to_spec_.find(chip_id);
  if (it == to_spec_.end()) return format::kUnmappedChipId | chip_id;
  return it->second;
}

std::size_t VocabMap::size() const { return identity_ ? producible_tokens().size() : to_spec_.size(); }

VocabMap VocabMap::parse(const std::string& text, std::uint32_t chip_vocab, const std::string& source) {
  VocabMap m;
  m.identity_ = false;
  m.chip_vocab_ = chip_vocab;
  m.to_chip_.assign(format::vocab_size(), kUnmapped);
  std::vector<std::size_t> line_of(format::vocab_size(), 0);
  std::istringstream in(text);
  std::string raw;
  std::size_t line_no = 0;
  // A line's text as the messages quote it: bytes outside printable ASCII as \xNN, at most 64
  // (found by an outside tester: a binary file's bytes went to the terminal raw).
  auto shown = [](const std::string& t) {
    std::string out;
    for (std::size_t i = 0; i < t.size() && i < 64; ++i) {
      const auto c = static_cast<unsigned char>(t[i]);
      if (c < 0x20 || c >= 0x7f) {
        char b[8];
        std::snprintf(b, sizeof b, "\\x%02x", c);
        out += b;
      } else {
        out += t[i];
      }
    }
    return t.size() > 64 ? out + "..." : out;
  };
  auto fail = [&](const std::string& why) -> VocabError {
    return VocabError(source + ":" + std::to_string(line_no) + ": " + why);
  };
  // Maps one spec token; checks the rules that concern a single line.
  auto add = [&](std::uint32_t spec, std::uint64_t chip_id) {
    if (chip_id >= chip_vocab) {
      throw fail(format::token_name(spec) + " -> " + std::to_string(chip_id) + ": id is not below the chip's vocab_size " +
                 std::to_string(chip_vocab));
    }
    if (m.to_chip_[spec] != kUnmapped) {
      throw fail(format::token_name(spec) + " is mapped twice (first on line " + std::to_string(line_of[spec]) + ")");
    }
    const auto [it, fresh] = m.to_spec_.emplace(static_cast<std::uint32_t>(chip_id), spec);
    if (!fresh) {
      throw fail("id " + std::to_string(chip_id) + " is given to both " + format::token_name(it->second) + " and " +
                 format::token_name(spec) + " (the map must be one-to-one)");
    }
    m.to_chip_[spec] = static_cast<std::uint32_t>(chip_id);
    line_of[spec] = line_no;
  };
  while (std::getline(in, raw)) {
    ++line_no;
    // a UTF-8 byte order mark that some editors put at the start of a text file (found by an
    // outside tester: the map's first line was refused as "'\xef\xbb\xbfSTART' is not START ...")
    if (line_no == 1 && raw.rfind("\xEF\xBB\xBF", 0) == 0) raw.erase(0, 3);
    const auto hash = raw.find('#');
    const std::string line = trim(hash == std::string::npos ? raw : raw.substr(0, hash));
    if (line.empty()) continue;
    const auto ws = line.find_first_of(" \t");
    if (ws == std::string::npos) throw fail("expected 'TOKEN ID', got '" + shown(line) + "'");
    const std::string token = line.substr(0, ws);
    const std::string id_text = trim(line.substr(ws));
    const auto id = parse_number(id_text);
    if (!id) throw fail("'" + shown(id_text) + "' is not a chip id (decimal or 0x hex, below 2^32)");
    if (token == "START") {
      add(format::kStartToken, *id);
      continue;
    }
    const auto open = token.find('(');
    if (open == std::string::npos || open == 0 || token.back() != ')') {
      throw fail("'" + shown(token) + "' is not START, KIND(PAYLOAD) or KIND(*)");
    }
    const std::string kind_name = token.substr(0, open);
    const std::string payload = token.substr(open + 1, token.size() - open - 2);
    const auto kind = format::kind_named(kind_name);
    if (!kind) throw fail("'" + shown(kind_name) + "' is not a kind of trace-v3 (trace.md §2, vector.md §5)");
    if (payload == "*") {
      if (*id + kind->payload_limit - 1 > 0xFFFFFFFFull) throw fail(token + " -> " + id_text + ": ids overflow 2^32");
      // the whole range first (found by an outside tester: a range running past vocab_size was
      // reported as a collision with another kind's ids inside it)
      if (*id + kind->payload_limit > chip_vocab) {
        throw fail(token + " -> " + id_text + ": ids " + std::to_string(*id) + ".." +
                   std::to_string(*id + kind->payload_limit - 1) + " run past the chip's vocab_size " +
                   std::to_string(chip_vocab));
      }
      for (std::uint32_t p = 0; p < kind->payload_limit; ++p) add(format::token_id(kind->kind, p), *id + p);
      continue;
    }
    const auto p = parse_number(payload);
    if (!p) throw fail("'" + shown(payload) + "' is not a payload (decimal, 0x hex or *)");
    if (*p >= kind->payload_limit) {
      throw fail(token + " is not a token trace-v3 can produce (" + kind_name + " payloads are 0.." +
                 std::to_string(kind->payload_limit - 1) + ")");
    }
    add(format::token_id(kind->kind, static_cast<std::uint32_t>(*p)), *id);
  }
  std::size_t missing = 0;
  std::uint32_t first_missing = 0;
  for (std::uint32_t t : required_tokens()) {
    if (m.to_chip_[t] == kUnmapped && missing++ == 0) first_missing = t;
  }
  if (missing) {
    line_no = 0;
    throw VocabError(source + ": " + std::to_string(missing) + " token(s) trace-v3 can produce are not mapped, the first " +
                     format::token_name(first_missing) + " (every producible token must be named once)");
  }
  return m;
}

std::string VocabMap::read(const std::filesystem::path& path) {
  // a directory, FIFO, device or a sparse file of gigabytes is refused before it is read (found
  // by an outside tester: /dev/zero was read until memory ran out)
  std::vector<std::uint8_t> bytes;
  try {
    bytes = format::read_input_file(path, "", std::uint64_t{64} << 20, format::Readable::kRegularOnly);
  } catch (const format::InputFileError& e) {
    if (e.fault() == format::InputFileFault::kTooLarge)
      throw VocabError(path.string() + ": larger than 64 MiB, not a vocabulary map");
    throw VocabError(path.string() + ": cannot read the vocabulary map: " + e.reason());
  }
  return std::string(bytes.begin(), bytes.end());
}

VocabMap VocabMap::load(const std::filesystem::path& path, std::uint32_t chip_vocab) {
  return parse(read(path), chip_vocab, path.string());
}

}  // namespace lockstep::dut
