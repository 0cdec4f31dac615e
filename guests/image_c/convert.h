// Converter from a llama2.c checkpoint to the stories_c int8 image (guests/stories_c/image_c.h).
#pragma once

#include <cstdint>
#include <vector>

#include "llama2c.h"

namespace lockstep::image_c {

/// Options of the image.
struct ImageOptions {
  int n_steps = 63;     ///< story tokens generated after BOS
  int kv_len = 64;      ///< K/V cache positions
  bool real_model = false;  ///< recorded in the header (1 = stories260K.bin)
};

/// Builds the image: folds the RMSNorm gains (and 1/sqrt(head_size) into wq),
/// quantizes every matrix to int8 with per-row int32 scales, and appends the
/// RoPE, exp and sigmoid tables and the tokenizer pieces.  Throws
/// std::runtime_error when the model does not fit the guest's static buffers.
std::vector<std::uint8_t> build_image(const host::Checkpoint& ck, const host::Tokenizer& tok,
                                      const ImageOptions& opt);

}  // namespace lockstep::image_c
