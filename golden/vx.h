// The vector-unit (vx) build of stories260K on the host: the image converter and an exact
// integer golden model of the vector unit (docs/spec/vector.md), written from the spec and
// independent of ref/.  VxModel runs the forward pass of docs/spec/vector.md §7 op by op and
// records or counts the trace tokens each op emits (§5, trace-v3).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "llama2c.h"

namespace lockstep::host {

/// Sizes of the vector unit (vector.md §2).
inline constexpr int kVregWords = 1024;   ///< 16 registers x 64 words
inline constexpr int kActSize = 384;      ///< int8 activations (6 blocks of 64)
inline constexpr int kActBlocks = 6;
inline constexpr int kChunks = 4152;      ///< weight row-chunks of 64 int4
inline constexpr int kCachePositions = 64;
inline constexpr int kLayers = 5;
inline constexpr int kKvDim = 32;
inline constexpr int kChunksPerLayer = 728;
inline constexpr int kClassifierChunk = 3640;
inline constexpr int kEmbRecord = 68;      ///< VLD record: int32 multiplier + 64 int8

/// The vector build's model image (bytes of the named ELF sections and of the guest's data).
struct VxImage {
  std::vector<std::int8_t> wmem;     ///< kChunks * 64 int4 values in -8..7 (unpacked)
  std::vector<std::uint16_t> wscale; ///< kChunks scales; weight = w * S / 2^16
  std::vector<std::uint8_t> emb;     ///< 512 VLD records of kEmbRecord bytes (guest RAM data)
  /// `.lockstep.wmem` bytes: chunk c at 32c, byte k = w[2k] & 15 | (w[2k+1] & 15) << 4.
  std::vector<std::uint8_t> wmem_section() const;
  /// `.lockstep.wscale` bytes: uint16 little-endian per chunk.
  std::vector<std::uint8_t> wscale_section() const;
};

/// How the converter picks int4 codes (the image format is the same).
enum class VxQuant {
  kRtn,   ///< round to nearest with each chunk's MSE-best scale
  kGptq,  ///< GPTQ with second moments from sampled float32 stories (the default)
};

/// Calibration for kGptq: kCalibrationSequences stories of kCalibrationLength tokens sampled
/// from the float32 model at temperature 1 with SplitMix64(kCalibrationSeed); dampening
/// kGptqDamp times the mean diagonal.  Documented in docs/quality.md.
inline constexpr std::uint64_t kCalibrationSeed = 20261129;
inline constexpr int kCalibrationSequences = 16;
inline constexpr int kCalibrationLength = 256;
inline constexpr double kGptqDamp = 0.01;
/// Seed of the residual-stream rotation (vx.cpp rotation_matrix(), docs/quality.md).
inline constexpr std::uint64_t kRotationSeed = 1;

/// Converts a float checkpoint with stories260K's shapes into the vx image (vector.md §7.1):
/// RMSNorm weights folded into the following matrices, 1/sqrt(head_size) into wq, int4
/// per-chunk codes and scales chosen by `method`.  Throws ModelError on other shapes.
VxImage convert_vx(const Checkpoint& ck, VxQuant method = VxQuant::kGptq);

/// A trace token (kind, payload) as vector.md §5 (trace-v3) defines it: kind 1..4 (the `W`
/// tokens of VMAT argmax), 33..43 or 51..80; payload 0..255.
struct VxToken {
  int kind;
  int payload;
};

/// The fixed tables of vector.md §3 (EXP 1024, RSQ 192 (index 64..255), RCP 128 (128..255),
/// SIG 1024, COS/SIN positions x 4).
struct VxTables {
  std::array<std::int32_t, 1024> exp{};
  std::array<std::int32_t, 256> rsq{};  ///< entries 64..255 used
  std::array<std::int32_t, 256> rcp{};  ///< entries 128..255 used
  std::array<std::int32_t, 1024> sig{};
  std::vector<std::int32_t> cos, sin;   ///< [p * 4 + j]
  explicit VxTables(int positions = kCachePositions);
};

/// Exact integer state and ops of the vector unit (no trap checks: the story program is valid).
/// Each op appends the tokens of vector.md §5 (trace-v3, after the pc tokens, which are the
/// scalar machine's) to `trace` when `record` is set and counts them in `tokens`; VMAT argmax
/// mode also emits `W(r*)` as if `rd != x0`.
/// `positions` > 64 gives the host-only long-cache variant (score groups `hstride` words apart);
/// its arithmetic is the story's, but with more than 64 positions the element indexes of the
/// VMATR/VEXP word streams leave vector.md's ranges, so its tokens are only counted, not spec.
class VxUnit {
 public:
  explicit VxUnit(const VxImage& img, int positions = kCachePositions);
  std::vector<std::int32_t> vreg;
  std::array<std::int8_t, kActSize> act{};
  std::array<std::uint8_t, kActBlocks> aexp{};
  std::vector<std::int8_t> kc, vc;
  std::vector<std::uint8_t> ke, ve;
  int hstride;                 ///< 64 on the hardware
  bool record = false;         ///< append tokens to `trace`
  std::vector<VxToken> trace;
  std::uint64_t tokens = 0;    ///< tokens emitted (vector ops only)

  int vmat(int dst, int b0, int c0, int rows, int k, bool argmax_mode);
  void vmatr(bool v_mode, int dst, int src, int r0, int t_count);
  void vq(int mode, int dst, int src, int n);  ///< mode 0 ACT (dst = block), 1 K row, 2 V row
  void vexp(int groups, int dst, int src, int sums, int t_count);
  void vew(int mode, int gs, int dst, int a, int b, int n);  ///< 0 ADD 1 MUL 2 MULS 3 ROT(b = pos)
  void vfn(int mode, int dst, int src, int n);                ///< 0 RSQRT 1 RECIP 2 SILU
  void vred(int mode, int sh, int dst, int src, int n);       ///< 0 SUMSQ 1 SUM 2 MAX
  void vld(const std::uint8_t* record, int dst, int n);

 private:
  void emit(int kind, std::int64_t payload);
  /// One element of a word stream (vector.md §5): `VWG(e >> 2)` when `first` or `e & 3 == 0`,
  /// then the four bytes of `z` as kinds 61 + 4(e & 3) + m.  `e` 0..1023.
  void emit_word(int e, std::int32_t z, bool first);
  /// One element of an int8 stream (vector.md §5): `VLG(j >> 2)` when `j & 3 == 0`, then
  /// `VLB_{j & 3}(lo8(v))`.  `j` 0..1023, `v` -128..127.
  void emit_int8(int j, int v);
  const VxImage& img_;
  VxTables tab_;
};

/// The vx forward pass of vector.md §7 for one token: returns the classifier argmax.
class VxModel {
 public:
  explicit VxModel(const VxImage& img, int positions = kCachePositions);
  int forward(int token, int pos);
  VxUnit unit;

 private:
  const VxImage& img_;
  int positions_;
};

/// Greedy decoding with the vx build from BOS: at most `n` tokens (n <= positions).  With
/// AtBos::kStop (llama2.c, the stories_vx guest) a generated BOS ends the story and is not
/// returned; with kContinue exactly `n` tokens.
std::vector<int> greedy_vx(const VxImage& img, int n, int positions = kCachePositions,
                           AtBos at_bos = AtBos::kStop);

}  // namespace lockstep::host
