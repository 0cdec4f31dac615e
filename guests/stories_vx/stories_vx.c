/* stories_vx: Karpathy's stories260K on the vector unit (docs/spec/vector.md §7).
 *
 * Greedy decoding from BOS: for pos = 0 .. n-1 the forward pass of vector.md
 * §7.3 (one VLD, five layers of 27 vector instructions, VQ + VMAT ARGMAX over
 * the classifier) turns the current token into the next one, which is printed
 * at once with one write ecall (its piece from pieces.bin; the leading space
 * of a piece that follows BOS is dropped, as llama2.c does; byte-fallback
 * pieces are already the byte).  A generated BOS (id 1) ends the story, as in
 * llama2.c.  n is `stories_vx_tokens` from the image (default 63: BOS plus 63
 * story tokens fill the 64 cache positions); it must be 1..64.
 *
 * Output (fd 1): the story text, "\n", then "tokens:" and the generated ids,
 * each preceded by a space, and "\n".  Exit 0; exit 2 with a line on fd 2 if
 * the image's token count is out of range.
 *
 * The model image (image.S): WMEM/WSCALE in `.lockstep.*` sections, the
 * embedding VLD records and the pieces in read-only RAM data.  The register
 * plan is vector.md §7.2; the scalar code is plain C (compiled -O2), so its
 * trace-token count differs from §7.4's hand count (docs/stories-vx.md).
 */
#include <stdint.h>

#include "rt.h"
#include "vector.h"

extern const uint8_t stories_vx_emb[];     /* 512 VLD records of 68 bytes */
extern const uint32_t stories_vx_pieces[]; /* 513 offsets (bytes from the start), then bytes */
extern const uint32_t stories_vx_tokens;   /* story tokens to generate */

enum {
  kBos = 1,
  kPositions = 64,
  kEmbRecord = 68,
  kChunksPerLayer = 728,
  kClassifierChunk = 3640,
  kVocab = 512,
  /* vector.md §7.2: register words */
  X = 0,      /* residual stream, Q16.16 */
  XB = 64,    /* normalised input / attention output / FFN output */
  QKV = 128,  /* q 128..191, k 192..223, v 224..255; later H = w1 | w3 output */
  KW = 192,
  VW = 224,
  W3 = 300,
  MS = 480,   /* mean square */
  RR = 481,   /* 1 / rms */
  SUMS = 488, /* softmax sums of the 8 heads */
  RCP = 496,  /* their reciprocals */
  S = 512,    /* scores / probabilities, head h at 512 + 64h */
};

/* RMSNorm of x (without gain: folded into the next matrix) into ACT block 0
 * (vector.md §7.3 rows 1-4 and 18-21). */
static inline void rmsnorm_to_act0(void) {
  VX_VRED_SUMSQ(6, MS, X, 64);
  vx_vfn_rsqrt(RR, MS, 1);
  VX_VEW_MULS(6, XB, X, RR, 64);
  vx_vq_act(0, XB, 64);
}

/* One story token (vector.md §7.3): the next token after `token` at position `pos`. */
static uint32_t forward(uint32_t token, uint32_t pos) {
  const uint32_t T = pos + 1;
  vx_vld(stories_vx_emb + kEmbRecord * token, X, 64);
  for (uint32_t l = 0; l < 5; ++l) {
    const uint32_t c = kChunksPerLayer * l, r0 = kPositions * l, row = r0 + pos;
    rmsnorm_to_act0();                         /* 1-4 */
    VX_VMAT(1, QKV, 0, c, 128);                /* 5: q | k | v */
    vx_vew_rot(QKV, QKV, pos, 96);             /* 6: RoPE on q and k */
    vx_vq_k(row, KW);                          /* 7 */
    vx_vq_v(row, VW);                          /* 8 */
    vx_vq_act(1, QKV, 64);                     /* 9: q -> ACT block 1 */
    vx_vmatr_k(S, 1, r0, T);                   /* 10: scores, head-major */
    VX_VEXP(8, S, S, SUMS, T);                 /* 11: softmax numerators, sums */
    vx_vmatr_v(XB, S, r0, T);                  /* 12: weighted V sums */
    vx_vfn_recip(RCP, SUMS, 8);                /* 13 */
    VX_VEW_MULS(3, XB, XB, RCP, 64);           /* 14: normalise per head */
    vx_vq_act(0, XB, 64);                      /* 15 */
    VX_VMAT(1, QKV, 0, c + 128, 64);           /* 16: wo */
    vx_vew_add(X, X, QKV, 64);                 /* 17: residual */
    rmsnorm_to_act0();                         /* 18-21 */
    VX_VMAT(1, QKV, 0, c + 192, 344);          /* 22: w1 | w3 */
    vx_vfn_silu(QKV, QKV, 172);                /* 23 */
    vx_vew_mul(QKV, QKV, W3, 172);             /* 24 */
    vx_vq_act(0, QKV, 172);                    /* 25: -> blocks 0..2 */
    VX_VMAT(3, XB, 0, c + 536, 64);            /* 26: w2 */
    vx_vew_add(X, X, XB, 64);                  /* 27: residual */
  }
  vx_vq_act(0, X, 64);                         /* 28 */
  return VX_VMAT_ARGMAX(1, 0, kClassifierChunk, kVocab); /* 29 */
}

static uint16_t story[kPositions];

int main(void) {
  const uint32_t n = stories_vx_tokens;
  if (n < 1 || n > kPositions) {
    rt_puts(&rt_stderr, "stories_vx: story token count out of range (1..64): ");
    rt_put_udec(&rt_stderr, n);
    rt_putc(&rt_stderr, '\n');
    return 2;
  }
  const uint8_t *bytes = (const uint8_t *)stories_vx_pieces;
  uint32_t token = kBos, count = 0;
  for (uint32_t pos = 0; pos < n; ++pos) {
    const uint32_t next = forward(token, pos);
    if (next == kBos) break; /* BOS delimits stories (llama2.c) */
    story[count++] = (uint16_t)next;
    uint32_t off = stories_vx_pieces[next];
    uint32_t len = stories_vx_pieces[next + 1] - off;
    if (token == kBos && len != 0 && bytes[off] == ' ') {
      ++off;
      --len;
    }
    rt_sys_write(1, bytes + off, len);
    token = next;
  }
  print_str("\ntokens:");
  for (uint32_t i = 0; i < count; ++i) {
    print_char(' ');
    print_udec(story[i]);
  }
  print_char('\n');
  return 0;
}
