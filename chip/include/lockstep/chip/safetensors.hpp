// Minimal safetensors reader/writer (https://github.com/huggingface/safetensors format):
//   u64 little-endian N | N bytes of JSON header | raw little-endian tensor data.
// Header: {"__metadata__": {string: string}, "<name>": {"dtype", "shape", "data_offsets"}}.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lockstep::chip {

/// Element types this project stores. Names as in the safetensors header.
enum class DType : std::uint8_t { F32, U32 };

/// One tensor: dtype, shape and its raw little-endian bytes (size = product(shape) * 4).
struct Tensor {
  DType dtype = DType::F32;
  std::vector<std::uint64_t> shape;
  std::vector<std::uint8_t> data;

  std::uint64_t numel() const;
  /// Typed copies of the data. Throw FormatError when dtype does not match.
  std::vector<float> as_f32() const;
  std::vector<std::uint32_t> as_u32() const;

  static Tensor from_f32(const std::vector<float>& v, std::vector<std::uint64_t> shape);
  static Tensor from_u32(const std::vector<std::uint32_t>& v, std::vector<std::uint64_t> shape);
};

/// A whole safetensors file in memory.
struct SafeTensors {
  std::map<std::string, std::string> metadata;  ///< the "__metadata__" entry
  std::map<std::string, Tensor> tensors;
};

/// The largest header length N a reader accepts (chip-format.md §3; as the safetensors
/// reference implementation: 100,000,000 bytes).  Checked before the header is parsed, and by
/// read_safetensors_file before the file is read.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

/// Checks a header length N against kMaxHeaderBytes and against a file of `file_size` bytes;
/// returns N or throws FormatError (one line naming N).
std::uint64_t check_header_length(std::uint64_t n, std::uint64_t file_size);

/// Parses a safetensors byte buffer. Validates (chip-format.md §3): header length N within
/// kMaxHeaderBytes and the buffer; the N header bytes are '{', one JSON object (no NUL byte, no
/// key twice in any object), then only spaces; known dtypes, shape/offset consistency, offsets
/// contiguous, in order and covering the data exactly (no holes, no overlaps, no trailing
/// bytes). Throws FormatError (one line) otherwise.
SafeTensors parse_safetensors(const std::vector<std::uint8_t>& bytes);

/// Serialises deterministically (tensors in name order; header padded with spaces to a
/// multiple of 8 bytes).
std::vector<std::uint8_t> serialize_safetensors(const SafeTensors& st);

/// Reads a safetensors file whole after checking its 8-byte header length against
/// kMaxHeaderBytes and the file size (so a bad N allocates nothing).  Throws FormatError.
std::vector<std::uint8_t> read_safetensors_file(const std::string& path);

/// Writes `bytes` to `path` (replacing it). Throws FormatError naming the system's reason
/// ("No space left on device") when it cannot be written.
void write_file_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes);

}  // namespace lockstep::chip
