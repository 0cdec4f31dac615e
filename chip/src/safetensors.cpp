#include "lockstep/chip/safetensors.hpp"
#include "lockstep/format/file.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>

#include "lockstep/chip/error.hpp"
#include "strict_json.hpp"

static_assert(std::endian::native == std::endian::little, "lockstep assumes a little-endian host");

namespace lockstep::chip {

namespace {

const char* dtype_name(DType d) { return d == DType::F32 ? "F32" : "U32"; }

// Thrown from the parser callback on a repeated key (turned into a FormatError by the caller).
struct DuplicateKey {
  std::string key;
  int depth;
};

// Printable form of a header key for messages (control bytes and quotes escaped, cut at 64).
std::string printable(const std::string& key) {
  std::string out;
  for (char ch : key.substr(0, 64)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return key.size() > 64 ? out + "..." : out;
}

}  // namespace

constexpr int kMaxJsonDepth = 64;

nlohmann::json parse_strict_json(std::string_view text, std::string_view what) {
  const std::string where(what);
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw FormatError(where + ": NUL byte at offset " + std::to_string(nul));
  // One set of keys per open object; the callback sees the keys in order.
  std::vector<std::set<std::string>> open;
  std::string last_key;  // the key whose value is being parsed (named in the NUL message)
  const auto callback = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    // No chip header nests deeper than a few levels; a deeper one is refused before anything
    // walks it recursively (its destruction included)
    if (depth > kMaxJsonDepth)
      throw FormatError(where + ": arrays and objects nest deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (event == E::object_start) {
      open.emplace_back();
    } else if (event == E::object_end) {
      if (!open.empty()) open.pop_back();
    } else if (event == E::key && !open.empty()) {
      std::string key = parsed.get<std::string>();
      if (key.find('\0') != std::string::npos)
        throw FormatError(where + ": key '" + printable(key) + "' holds a NUL byte (a \\u0000 escape)");
      last_key = key;
      if (!open.back().insert(key).second) throw DuplicateKey{std::move(key), depth};
    } else if (event == E::value && parsed.is_string() && parsed.get_ref<const std::string&>().find('\0') != std::string::npos) {
      // chip-format.md section 3: no NUL byte, and a \u0000 escape decodes to one (found by an
      // outside tester: a name holding one was accepted, and a message quoting it was cut there)
      throw FormatError(where + ": the value of '" + printable(last_key) + "' holds a NUL byte (a \\u0000 escape)");
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                 /*ignore_comments=*/false);
  } catch (const DuplicateKey& d) {
    throw FormatError(where + ": duplicate key '" + printable(d.key) + "' (depth " + std::to_string(d.depth) + ")");
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(where + " is not valid JSON: " + e.what());
  }
}

std::uint64_t Tensor::numel() const {
  std::uint64_t n = 1;
  for (std::uint64_t d : shape) n *= d;
  return n;
}

std::vector<float> Tensor::as_f32() const {
  if (dtype != DType::F32) throw FormatError("tensor has dtype U32, expected F32");
  std::vector<float> v(data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), data.data(), v.size() * 4);
  return v;
}

std::vector<std::uint32_t> Tensor::as_u32() const {
  if (dtype != DType::U32) throw FormatError("tensor has dtype F32, expected U32");
  std::vector<std::uint32_t> v(data.size() / 4);
  if (!v.empty()) std::memcpy(v.data(), data.data(), v.size() * 4);
  return v;
}

Tensor Tensor::from_f32(const std::vector<float>& v, std::vector<std::uint64_t> shape) {
  Tensor t;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.data.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

Tensor Tensor::from_u32(const std::vector<std::uint32_t>& v, std::vector<std::uint64_t> shape) {
  Tensor t;
  t.dtype = DType::U32;
  t.shape = std::move(shape);
  t.data.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::uint64_t check_header_length(std::uint64_t n, std::uint64_t file_size) {
  if (n > kMaxHeaderBytes)
    throw FormatError("safetensors: header length N " + std::to_string(n) + " exceeds the cap of " +
                      std::to_string(kMaxHeaderBytes) + " bytes");
  if (file_size < 8 || n > file_size - 8)
    throw FormatError("safetensors: file truncated: 8 + the header length N " + std::to_string(n) + " = " +
                      std::to_string(n + 8) + " bytes exceeds the file size " + std::to_string(file_size));
  return n;
}

SafeTensors parse_safetensors(const std::vector<std::uint8_t>& bytes) {
  if (bytes.size() < 8) throw FormatError("safetensors: file truncated: shorter than 8-byte header length");
  std::uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  check_header_length(n, bytes.size());
  // chip-format.md §3: '{' at byte 8, one JSON object, then only spaces (0x20) up to 8 + N.
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, n);
  if (text.empty() || text.front() != '{')
    throw FormatError(std::string("safetensors: header does not start with '{' (first byte ") +
                      (text.empty() ? "absent: N is 0" : std::to_string(static_cast<unsigned char>(text.front()))) +
                      ")");
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw FormatError("safetensors: header: NUL byte at offset " + std::to_string(nul));
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == ' ') --end;
  if (text[end - 1] != '}' && text.find('}') == std::string_view::npos)
    throw FormatError("safetensors: header: the JSON object is not closed (no '}' in the " + std::to_string(n) +
                      " header bytes)");
  if (text[end - 1] != '}') {
    const std::size_t at = end - 1;
    throw FormatError("safetensors: header byte " + std::to_string(at) + " after the JSON object is " +
                      std::to_string(static_cast<unsigned char>(text[at])) +
                      ", only space (32) padding may follow it");
  }
  const nlohmann::json header = parse_strict_json(text.substr(0, end), "safetensors: header");
  if (!header.is_object()) throw FormatError("safetensors: header is not a JSON object");
  const std::uint64_t data_start = 8 + n;
  const std::uint64_t data_size = bytes.size() - data_start;
  SafeTensors st;
  struct Span { std::uint64_t b, e; std::string name; };
  std::vector<Span> spans;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const auto& j = it.value();
    if (name == "__metadata__") {
      if (!j.is_object()) throw FormatError("safetensors: __metadata__ is not an object");
      for (auto m = j.begin(); m != j.end(); ++m) {
        if (!m.value().is_string())
          throw FormatError("safetensors: __metadata__ value '" + m.key() + "' is not a string");
        st.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!j.is_object() || !j.contains("dtype") || !j.contains("shape") || !j.contains("data_offsets"))
      throw FormatError("safetensors: tensor '" + name + "' lacks dtype/shape/data_offsets");
    Tensor t;
    const auto& dt = j["dtype"];
    if (!dt.is_string()) throw FormatError("safetensors: tensor '" + name + "' dtype is not a string");
    if (dt == "F32") t.dtype = DType::F32;
    else if (dt == "U32") t.dtype = DType::U32;
    else throw FormatError("safetensors: tensor '" + name + "' has unsupported dtype " + dt.dump());
    if (!j["shape"].is_array()) throw FormatError("safetensors: tensor '" + name + "' shape is not an array");
    for (const auto& d : j["shape"]) {
      if (!d.is_number_unsigned())
        throw FormatError("safetensors: tensor '" + name + "' shape entry " + d.dump() +
                          " is not a whole number from 0 to 2^64-1");
      t.shape.push_back(d.get<std::uint64_t>());
    }
    const auto& off = j["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw FormatError("safetensors: tensor '" + name + "' data_offsets is not [begin, end]");
    const std::uint64_t b = off[0].get<std::uint64_t>(), e = off[1].get<std::uint64_t>();
    if (b > e || e > data_size)
      throw FormatError("safetensors: tensor '" + name + "' data_offsets [" + std::to_string(b) + ", " +
                        std::to_string(e) + ") outside data of " + std::to_string(data_size) +
                        " bytes (file truncated?)");
    std::uint64_t numel = 1;
    for (std::uint64_t d : t.shape) {
      if (d != 0 && numel > (std::uint64_t{1} << 40) / d)
        throw FormatError("safetensors: tensor '" + name + "' shape is absurdly large");
      numel *= d;
    }
    if (e - b != numel * 4)
      throw FormatError("safetensors: tensor '" + name + "' has " + std::to_string(e - b) +
                        " bytes, shape needs " + std::to_string(numel * 4));
    t.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start + b),
                  bytes.begin() + static_cast<std::ptrdiff_t>(data_start + e));
    spans.push_back({b, e, name});
    st.tensors.emplace(name, std::move(t));
  }
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) {
    return x.b != y.b ? x.b < y.b : x.e < y.e;
  });
  std::uint64_t pos = 0;
  for (const Span& s : spans) {
    if (s.b != pos)
      throw FormatError("safetensors: tensor '" + s.name + "' data is not contiguous with the previous tensor (offset " +
                        std::to_string(s.b) + ", expected " + std::to_string(pos) + ")");
    pos = s.e;
  }
  if (pos != data_size)
    throw FormatError("safetensors: " + std::to_string(data_size - pos) + " trailing bytes after the last tensor");
  return st;
}

std::vector<std::uint8_t> serialize_safetensors(const SafeTensors& st) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!st.metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [k, v] : st.metadata) meta[k] = v;
    header["__metadata__"] = meta;
  }
  std::uint64_t pos = 0;
  for (const auto& [name, t] : st.tensors) {
    header[name] = {{"dtype", dtype_name(t.dtype)},
                    {"shape", t.shape},
                    {"data_offsets", {pos, pos + t.data.size()}}};
    pos += t.data.size();
  }
  std::string h = header.dump();
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');
  const std::uint64_t n = h.size();
  std::vector<std::uint8_t> out(8 + n + pos);
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, h.data(), n);
  std::size_t at = 8 + n;
  for (const auto& [name, t] : st.tensors) {
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
    at += t.data.size();
  }
  return out;
}

std::vector<std::uint8_t> read_safetensors_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw FormatError("'" + path + "' is a directory, not a chip file");
  if (std::filesystem::is_fifo(path, ec))  // opening one would wait for a writer, forever
    throw FormatError("'" + path + "' is a named pipe (FIFO), not a chip file");
  if (const auto st = std::filesystem::status(path, ec); !ec && std::filesystem::exists(st) &&
                                                          !std::filesystem::is_regular_file(st))
    throw FormatError("'" + path + "' is not a regular file (a device or socket), not a chip file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw FormatError("cannot open '" + path + "' for reading: " + std::strerror(errno));
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  f.seekg(0, std::ios::beg);
  if (!f || size < 0) throw FormatError("error reading '" + path + "'");
  std::uint8_t prefix[8] = {};
  if (size < 8 || !f.read(reinterpret_cast<char*>(prefix), 8))
    throw FormatError("safetensors: file truncated: shorter than 8-byte header length");
  std::uint64_t n = 0;
  std::memcpy(&n, prefix, 8);
  check_header_length(n, static_cast<std::uint64_t>(size));  // before anything is allocated
  // A file larger than the memory left is refused before it is read: a sparse file of 50 GB was
  // read until the kernel killed the process (found by an outside tester).
  if (const std::uint64_t avail = format::memory_available_bytes(); static_cast<std::uint64_t>(size) > avail)
    throw FormatError("'" + path + "': its " + std::to_string(static_cast<std::uint64_t>(size) >> 20) +
                      " MiB are more than the memory available (" + std::to_string(avail >> 20) + " MiB), not a chip file this machine can load");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  std::memcpy(bytes.data(), prefix, 8);
  if (!f.read(reinterpret_cast<char*>(bytes.data()) + 8, size - 8)) throw FormatError("error reading '" + path + "'");
  return bytes;
}

void write_file_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw FormatError("cannot open '" + path + "' for writing: " + std::strerror(errno));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw FormatError("error writing '" + path + "': " + std::strerror(errno ? errno : EIO));  // ENOSPC named
}

}  // namespace lockstep::chip
