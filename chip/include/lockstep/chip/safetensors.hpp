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

/// Parses a safetensors byte buffer. Validates: header length inside the buffer, JSON syntax,
/// known dtypes, shape/offset consistency, offsets contiguous, in order and covering the data
/// exactly (no holes, no overlaps, no trailing bytes). Throws FormatError (one line) otherwise.
SafeTensors parse_safetensors(const std::vector<std::uint8_t>& bytes);

/// Serialises deterministically (tensors in name order; header padded with spaces to a
/// multiple of 8 bytes).
std::vector<std::uint8_t> serialize_safetensors(const SafeTensors& st);

/// Whole-file helpers. Throw FormatError when the file cannot be read or written.
std::vector<std::uint8_t> read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, const std::vector<std::uint8_t>& bytes);

}  // namespace lockstep::chip
