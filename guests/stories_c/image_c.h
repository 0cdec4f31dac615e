/* Layout of the stories_c model image (the int8 plain-C build of stories260K).
 *
 * Written by the host converter lockstep-image-c (guests/image_c/), read by
 * guests/stories_c/model.c both in the RISC-V guest (the image is linked in
 * with .incbin) and in the host golden model stories_c_host.  All fields are
 * little-endian; offsets are in bytes from the start of the image, and every
 * array starts on a 4-byte boundary.  This header is C (used by both sides).
 *
 * Numerics (docs/guests.md):
 *   - activations are int32 fixed point with 16 fraction bits ("Q16");
 *   - each matrix is int8 with one scale per output row: the real weight is
 *     q[r][c] * s[r] / 2^exp (s[r] is int32, exp one per matrix).  The token
 *     embedding is stored row-major; every other matrix in blocks of 4 rows
 *     interleaved column by column (byte (b*cols + c)*4 + i holds q[4b+i][c]),
 *     so that one loaded activation serves four rows;
 *   - the RMSNorm gains are folded into the columns of the matrix that
 *     follows each norm (wq, wk, wv; w1, w3; the classifier), and 1/sqrt(head
 *     size) into the rows of wq;
 *   - rope[pos][i] = (cos, sin) of pos * 10000^(-2i/head_size), Q30;
 *   - exp0[n] = exp(-n) (n = 0..16) and exp1[i] = exp(-i/256) (i = 0..255), Q30;
 *   - sigmoid[i] = sigmoid(-16 + i/32) (i = 0..1024), Q16.
 */
#ifndef LOCKSTEP_IMAGE_C_H
#define LOCKSTEP_IMAGE_C_H

#include <stdint.h>

#define IMGC_MAGIC 0x43474D49u /* "IMGC" */
#define IMGC_VERSION 2u

/* Limits of the guest's static buffers. */
#define IMGC_MAX_DIM 64
#define IMGC_MAX_HIDDEN 176
#define IMGC_MAX_LAYERS 6
#define IMGC_MAX_HEADS 8
#define IMGC_MAX_KV 64 /* K/V cache positions */
#define IMGC_MAX_VOCAB 512

#define IMGC_EXP0_N 17
#define IMGC_EXP1_N 256
#define IMGC_SIGMOID_N 1025

/* One int8 matrix with per-row scales. */
typedef struct imgc_mat {
  uint32_t q_off; /* int8_t  [rows][cols], or [rows/4][cols][4] when interleave == 4 */
  uint32_t s_off; /* int32_t [rows] */
  int32_t exp;    /* weight = q * s / 2^exp */
  int32_t rows;
  int32_t cols;
  int32_t interleave; /* 1 (row-major: the embedding) or 4 (every other matrix) */
} imgc_mat;

enum { IMGC_WQ, IMGC_WK, IMGC_WV, IMGC_WO, IMGC_W1, IMGC_W2, IMGC_W3, IMGC_NMATS };

typedef struct imgc_header {
  uint32_t magic;
  uint32_t version;
  uint32_t total_size; /* bytes of the whole image */
  int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size;
  int32_t kv_len;  /* K/V cache positions (64) */
  int32_t n_steps; /* story tokens to generate after BOS (63); n_steps < kv_len */
  int32_t bos;     /* 1 */
  uint32_t real_model; /* 1: stories260K.bin, 0: synthetic */
  imgc_mat emb;        /* token embedding (vocab, dim), unfolded */
  imgc_mat cls;        /* classifier (vocab, dim) with rms_final folded in */
  imgc_mat layer[IMGC_MAX_LAYERS][IMGC_NMATS];
  uint32_t rope_off;    /* int32_t [kv_len][head_size/2][2] */
  uint32_t exp0_off;    /* int32_t [IMGC_EXP0_N] */
  uint32_t exp1_off;    /* int32_t [IMGC_EXP1_N] */
  uint32_t sigmoid_off; /* int32_t [IMGC_SIGMOID_N] */
  uint32_t tok_off;     /* uint32_t [vocab + 1]: piece i is bytes [tok[i], tok[i+1]) of tok_bytes */
  uint32_t tok_bytes_off;
} imgc_header;

#endif
