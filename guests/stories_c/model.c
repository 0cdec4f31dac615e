/* Integer forward pass of stories260K (llama2.c architecture) over the int8
 * image of image_c.h.  See model.h and docs/guests.md for the numerics.
 *
 * Fixed point: activations are int32 "Q16" (value * 2^16).  A matrix-vector
 * product first quantizes its input to int16 with a power-of-two shift (no
 * division), accumulates int8 x int16 products in int32 (|acc| <= 176 * 127 *
 * 32767 < 2^31), and rescales each row once with its int32 scale.  Divisions
 * appear only once per RMSNorm and per softmax, never in inner loops.
 */
#include "model.h"

#include "image_c.h"

/* ---- state ------------------------------------------------------------- */

static const uint8_t *img;
static const imgc_header *hd;

static int32_t x[IMGC_MAX_DIM];      /* residual stream */
static int32_t xb[IMGC_MAX_DIM];     /* normalized input / attention output */
static int32_t q[IMGC_MAX_DIM];      /* query (all heads) */
static int32_t tmp[IMGC_MAX_DIM];    /* projection outputs */
static int32_t hb[IMGC_MAX_HIDDEN];  /* w1 x, then silu(w1 x) * w3 x */
static int32_t hb2[IMGC_MAX_HIDDEN]; /* w3 x */
static int32_t att[IMGC_MAX_KV];     /* scores, then probabilities (Q16) */
static int32_t logits[IMGC_MAX_VOCAB];
static int16_t xq[IMGC_MAX_HIDDEN];  /* int16-quantized matmul input */
static int32_t kv[IMGC_MAX_DIM];      /* k or v of the current position */
/* K cache in Q23 (k << 7) and V cache in Q18 (v << 2), so that attention
 * products are single MULH instructions: (q << 9) * (k << 7) >> 32 = q*k >> 16
 * and (p << 14) * (v << 2) >> 32 = p*v >> 16 (all Q16).  Ranges: |q| < 64,
 * |k| < 256, |v| < 8192 (stories260K: 12, 37, 3.2). */
static int32_t kcache[IMGC_MAX_LAYERS][IMGC_MAX_KV][IMGC_MAX_DIM];
static int32_t vcache[IMGC_MAX_LAYERS][IMGC_MAX_KV][IMGC_MAX_DIM];

int32_t stories_tokens[IMGC_MAX_KV];
int32_t stories_token_count;

#define AT(type, off) ((const type *)(const void *)(img + (off)))

/* ---- fixed-point building blocks ---------------------------------------- */

/* v * 2^n without the undefined behaviour of shifting a negative int left. */
static inline int32_t shl(int32_t v, int n) { return (int32_t)((uint32_t)v << n); }

/* Quantizes x[0..n) to int16 with x >> s (floor), s chosen so that the
 * largest magnitude lands in [2^14, 2^15): s may be negative (a left shift)
 * for small vectors.  Returns s. */
static int32_t quantize16(const int32_t *v, int n, int16_t *out) {
  uint32_t maxabs = 0;
  for (int i = 0; i < n; i++) {
    uint32_t a = v[i] < 0 ? 0u - (uint32_t)v[i] : (uint32_t)v[i];
    if (a > maxabs) maxabs = a;
  }
  int32_t s = 0;
  while ((maxabs >> s) > 32767u) s++;
  if (s == 0 && maxabs != 0) {
    while (s > -15 && (maxabs << (1 - s)) <= 32767u) s--;
  }
  if (s >= 0) {
    for (int i = 0; i < n; i++) out[i] = (int16_t)(v[i] >> s);
  } else {
    for (int i = 0; i < n; i++) out[i] = (int16_t)shl(v[i], -s);
  }
  return s;
}

/* y[r] = sum_c W[r][c] * v[c] in Q16 for the matrix m (see image_c.h).
 * Rows are processed four at a time (the image interleaves them), so each
 * int16 activation is loaded once per four multiply-adds. */
static void matmul(int32_t *y, const int32_t *v, const imgc_mat *m) {
  int32_t s = quantize16(v, m->cols, xq);
  const int8_t *w = AT(int8_t, m->q_off);
  const int32_t *scale = AT(int32_t, m->s_off);
  const int32_t k = m->exp - s; /* >= 1: the converter keeps exp >= 24 */
  const int64_t half = (int64_t)1 << (k - 1);
  const int16_t *xend = xq + m->cols; /* cols is even */
  for (int r = 0; r < m->rows; r += 4) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (const int16_t *xp = xq; xp != xend; xp += 2) {
      int32_t x0 = xp[0], x1 = xp[1];
      a0 += w[0] * x0 + w[4] * x1;
      a1 += w[1] * x0 + w[5] * x1;
      a2 += w[2] * x0 + w[6] * x1;
      a3 += w[3] * x0 + w[7] * x1;
      w += 8;
    }
    y[r] = (int32_t)(((int64_t)a0 * scale[r] + half) >> k);
    y[r + 1] = (int32_t)(((int64_t)a1 * scale[r + 1] + half) >> k);
    y[r + 2] = (int32_t)(((int64_t)a2 * scale[r + 2] + half) >> k);
    y[r + 3] = (int32_t)(((int64_t)a3 * scale[r + 3] + half) >> k);
  }
}

/* High half of the signed 64-bit product (one MULH instruction on RV32). */
static inline int32_t mulh32(int32_t a, int32_t b) { return (int32_t)(((int64_t)a * b) >> 32); }

/* Integer square root: floor(sqrt(v)). */
static uint32_t isqrt64(uint64_t v) {
  uint64_t rem = 0, root = 0;
  for (int i = 0; i < 32; i++) {
    root <<= 1;
    rem = (rem << 2) | (v >> 62);
    v <<= 2;
    if (root < rem) {
      rem -= root + 1;
      root += 2;
    }
  }
  return (uint32_t)(root >> 1);
}

/* out = v / rms(v) (the gain is folded into the next matrix). */
static void rmsnorm(int32_t *out, const int32_t *v, int n) {
  uint64_t ss = 0;
  for (int i = 0; i < n; i++) ss += (uint64_t)((int64_t)v[i] * v[i]); /* Q32 */
  ss = ss / (uint32_t)n + 42950u;                                     /* + 1e-5 in Q32 */
  uint32_t rms = isqrt64(ss);                                         /* Q16, >= 207 */
  uint32_t inv = 0xFFFFFFFFu / rms;                                   /* 1/rms in Q16 */
  for (int i = 0; i < n; i++) out[i] = (int32_t)(((int64_t)v[i] * inv) >> 16);
}

/* exp(-t) for t >= 0 in Q16, result in Q24 (exp0/exp1 tables, linear last step). */
static uint32_t exp_neg(uint32_t t) {
  uint32_t n = t >> 16;
  if (n >= IMGC_EXP0_N) return 0;
  const int32_t *e0 = AT(int32_t, hd->exp0_off);
  const int32_t *e1 = AT(int32_t, hd->exp1_off);
  uint64_t r = ((uint64_t)(uint32_t)e0[n] * (uint32_t)e1[(t >> 8) & 255]) >> 30; /* Q30 */
  r -= (r * (t & 255)) >> 16; /* exp(-f) ~ 1 - f for f < 2^-8 */
  return (uint32_t)(r >> 6);
}

/* Softmax of a[0..n) (Q16 scores) into Q16 probabilities, in place. */
static void softmax(int32_t *a, int n) {
  int32_t mx = a[0];
  for (int i = 1; i < n; i++)
    if (a[i] > mx) mx = a[i];
  uint32_t sum = 0;
  for (int i = 0; i < n; i++) {
    a[i] = (int32_t)exp_neg((uint32_t)(mx - a[i]));
    sum += (uint32_t)a[i]; /* <= 64 * 2^24 */
  }
  uint64_t inv = ((uint64_t)1 << 46) / sum; /* sum >= 2^24 */
  for (int i = 0; i < n; i++) a[i] = (int32_t)(((uint64_t)(uint32_t)a[i] * inv) >> 30);
}

/* silu(v) = v * sigmoid(v), Q16, with the interpolated sigmoid table. */
static int32_t silu(int32_t v) {
  if (v <= -(16 << 16)) return 0;
  if (v >= (16 << 16)) return v;
  const int32_t *sg = AT(int32_t, hd->sigmoid_off);
  uint32_t u = (uint32_t)(v + (16 << 16));
  uint32_t i = u >> 11, f = u & 2047;
  int32_t s = sg[i] + (int32_t)(((sg[i + 1] - sg[i]) * (int32_t)f) >> 11);
  return (int32_t)(((int64_t)v * s) >> 16);
}

/* Rotates the pairs (v[2j], v[2j+1]) of each head of v[0..n) by the position's
 * angles: cs holds (cos, sin) for j = 0 .. hs/2 - 1 (llama2.c RoPE). */
static void rope(int32_t *v, int n, const int32_t *cs, int hs) {
  for (int h = 0; h < n; h += hs) {
    int32_t *vh = v + h;
    for (int j = 0; j < hs; j += 2) {
      int64_t a = vh[j], b = vh[j + 1], c = cs[j], s = cs[j + 1];
      vh[j] = (int32_t)((a * c - b * s + ((int64_t)1 << 29)) >> 30);
      vh[j + 1] = (int32_t)((a * s + b * c + ((int64_t)1 << 29)) >> 30);
    }
  }
}

/* ---- the transformer ---------------------------------------------------- */

static void embed(int token) {
  const imgc_mat *m = &hd->emb;
  const int8_t *w = AT(int8_t, m->q_off) + token * m->cols;
  int64_t s = AT(int32_t, m->s_off)[token];
  int32_t k = m->exp - 16;
  for (int i = 0; i < m->cols; i++) x[i] = (int32_t)((w[i] * s + ((int64_t)1 << (k - 1))) >> k);
}

/* One attention head: scores of q (scaled by 2^9) against the K cache rows
 * 0..pos, softmax, and the probability-weighted sum of the V cache rows into
 * out (Q16).  kvo is the head's first lane in the cache rows. */
static void attend(int l, int pos, const int32_t *qh, int kvo, int hs, int32_t *out) {
  for (int t = 0; t <= pos; t++) {
    const int32_t *kt = kcache[l][t] + kvo;
    int32_t dot = 0;
    for (int i = 0; i < hs; i++) dot += mulh32(qh[i], kt[i]);
    att[t] = dot; /* Q16; 1/sqrt(hs) is folded into wq */
  }
  softmax(att, pos + 1);
  for (int t = 0; t <= pos; t++) att[t] = shl(att[t], 14);
  for (int i = 0; i < hs; i++) {
    int32_t acc = 0;
    for (int t = 0; t <= pos; t++) acc += mulh32(att[t], vcache[l][t][kvo + i]);
    out[i] = acc;
  }
}

/* attend() for head size 8 (stories260K), the same sums in the same order per
 * output, with the query and the eight outputs held in registers. */
static void attend8(int l, int pos, const int32_t *qh, int kvo, int32_t *out) {
  const int32_t q0 = qh[0], q1 = qh[1], q2 = qh[2], q3 = qh[3], q4 = qh[4], q5 = qh[5], q6 = qh[6], q7 = qh[7];
  for (int t = 0; t <= pos; t++) {
    const int32_t *k = kcache[l][t] + kvo;
    att[t] = mulh32(q0, k[0]) + mulh32(q1, k[1]) + mulh32(q2, k[2]) + mulh32(q3, k[3]) + mulh32(q4, k[4]) +
             mulh32(q5, k[5]) + mulh32(q6, k[6]) + mulh32(q7, k[7]);
  }
  softmax(att, pos + 1);
  int32_t o0 = 0, o1 = 0, o2 = 0, o3 = 0, o4 = 0, o5 = 0, o6 = 0, o7 = 0;
  for (int t = 0; t <= pos; t++) {
    const int32_t p = shl(att[t], 14), *v = vcache[l][t] + kvo;
    o0 += mulh32(p, v[0]);
    o1 += mulh32(p, v[1]);
    o2 += mulh32(p, v[2]);
    o3 += mulh32(p, v[3]);
    o4 += mulh32(p, v[4]);
    o5 += mulh32(p, v[5]);
    o6 += mulh32(p, v[6]);
    o7 += mulh32(p, v[7]);
  }
  out[0] = o0, out[1] = o1, out[2] = o2, out[3] = o3, out[4] = o4, out[5] = o5, out[6] = o6, out[7] = o7;
}

static void forward(int token, int pos) {
  const int dim = hd->dim, hs = dim / hd->n_heads, kv_dim = hs * hd->n_kv_heads;
  const int group = hd->n_heads / hd->n_kv_heads;
  const int32_t *cs = AT(int32_t, hd->rope_off) + pos * hs; /* (hs/2) pairs of (cos, sin) */
  embed(token);
  for (int l = 0; l < hd->n_layers; l++) {
    const imgc_mat *m = hd->layer[l];
    /* attention: q, k, v of the normalized input */
    rmsnorm(xb, x, dim);
    matmul(q, xb, &m[IMGC_WQ]);
    matmul(kv, xb, &m[IMGC_WV]);
    for (int i = 0; i < kv_dim; i++) vcache[l][pos][i] = shl(kv[i], 2);
    matmul(kv, xb, &m[IMGC_WK]);
    rope(q, dim, cs, hs);
    rope(kv, kv_dim, cs, hs);
    for (int i = 0; i < kv_dim; i++) kcache[l][pos][i] = shl(kv[i], 7);
    for (int i = 0; i < dim; i++) q[i] = shl(q[i], 9);
    for (int h = 0; h < hd->n_heads; h++) {
      if (hs == 8)
        attend8(l, pos, q + 8 * h, (h / group) * 8, xb + 8 * h);
      else
        attend(l, pos, q + h * hs, (h / group) * hs, hs, xb + h * hs);
    }
    matmul(tmp, xb, &m[IMGC_WO]);
    for (int i = 0; i < dim; i++) x[i] += tmp[i];
    /* feed-forward: w2 (silu(w1 x) * w3 x) */
    rmsnorm(xb, x, dim);
    matmul(hb, xb, &m[IMGC_W1]);
    matmul(hb2, xb, &m[IMGC_W3]);
    for (int i = 0; i < hd->hidden_dim; i++) hb[i] = (int32_t)(((int64_t)silu(hb[i]) * hb2[i]) >> 16);
    matmul(tmp, hb, &m[IMGC_W2]);
    for (int i = 0; i < dim; i++) x[i] += tmp[i];
  }
  rmsnorm(xb, x, dim);
  matmul(logits, xb, &hd->cls);
}

/* ---- tokens and text ---------------------------------------------------- */

static void emit_str(const char *s) {
  int n = 0;
  while (s[n]) n++;
  stories_emit(s, n);
}

static void emit_udec(uint32_t v) {
  char buf[10];
  int n = 10;
  do {
    uint32_t d = (uint32_t)(((uint64_t)v * 0xCCCCCCCDu) >> 35); /* v / 10 */
    buf[--n] = (char)('0' + (v - d * 10));
    v = d;
  } while (v);
  stories_emit(buf + n, 10 - n);
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

/* Text of `token` after `prev` (llama2.c decode()): the leading space of a
 * piece is dropped after BOS, and "<0xHH>" pieces are the raw byte HH. */
static void emit_piece(int prev, int token) {
  const uint32_t *off = AT(uint32_t, hd->tok_off);
  const char *p = (const char *)AT(char, hd->tok_bytes_off) + off[token];
  int n = (int)(off[token + 1] - off[token]);
  if (prev == hd->bos && n > 0 && p[0] == ' ') {
    p++;
    n--;
  }
  if (n == 6 && p[0] == '<' && p[1] == '0' && p[2] == 'x' && p[5] == '>' && hexval(p[3]) >= 0 &&
      hexval(p[4]) >= 0) {
    char byte = (char)(hexval(p[3]) * 16 + hexval(p[4]));
    stories_emit(&byte, 1);
    return;
  }
  stories_emit(p, n);
}

/* Whether [off, off + bytes) lies inside the image and off is 4-byte aligned. */
static int in_image(uint32_t off, uint32_t bytes) {
  return off % 4 == 0 && off <= hd->total_size && bytes <= hd->total_size - off;
}

static int check_mat(const imgc_mat *m, int rows, int cols, int interleave) {
  return m->rows == rows && m->cols == cols && m->interleave == interleave && m->exp >= 24 &&
         m->exp <= 46 && in_image(m->q_off, (uint32_t)(rows * cols)) && in_image(m->s_off, 4u * (uint32_t)rows);
}

static int check_image(void) {
  if (hd->magic != IMGC_MAGIC || hd->version != IMGC_VERSION) return 0;
  if (hd->dim <= 0 || hd->dim > IMGC_MAX_DIM || hd->hidden_dim <= 0 || hd->hidden_dim > IMGC_MAX_HIDDEN)
    return 0;
  if (hd->n_layers <= 0 || hd->n_layers > IMGC_MAX_LAYERS || hd->n_heads <= 0 ||
      hd->n_heads > IMGC_MAX_HEADS || hd->n_kv_heads <= 0 || hd->n_heads % hd->n_kv_heads != 0)
    return 0;
  if (hd->vocab_size <= 0 || hd->vocab_size > IMGC_MAX_VOCAB || hd->kv_len <= 0 ||
      hd->kv_len > IMGC_MAX_KV || hd->n_steps < 0 || hd->n_steps >= hd->kv_len)
    return 0;
  if (hd->dim % 4 != 0 || hd->hidden_dim % 4 != 0 || hd->vocab_size % 4 != 0 || hd->dim % hd->n_heads != 0)
    return 0;
  const int dim = hd->dim, hidden = hd->hidden_dim, hs = dim / hd->n_heads;
  const int kv_dim = hs * hd->n_kv_heads, vocab = hd->vocab_size;
  if (hs % 2 != 0) return 0;
  if (!check_mat(&hd->emb, vocab, dim, 1) || !check_mat(&hd->cls, vocab, dim, 4)) return 0;
  const int rows[IMGC_NMATS] = {dim, kv_dim, kv_dim, dim, hidden, dim, hidden};
  const int cols[IMGC_NMATS] = {dim, dim, dim, dim, dim, hidden, dim};
  for (int l = 0; l < hd->n_layers; l++)
    for (int i = 0; i < IMGC_NMATS; i++)
      if (!check_mat(&hd->layer[l][i], rows[i], cols[i], 4)) return 0;
  if (!in_image(hd->rope_off, 4u * (uint32_t)(hd->kv_len * hs)) || !in_image(hd->exp0_off, 4u * IMGC_EXP0_N) ||
      !in_image(hd->exp1_off, 4u * IMGC_EXP1_N) || !in_image(hd->sigmoid_off, 4u * IMGC_SIGMOID_N) ||
      !in_image(hd->tok_off, 4u * (uint32_t)(vocab + 1)))
    return 0;
  const uint32_t *off = AT(uint32_t, hd->tok_off);
  for (int i = 0; i < vocab; i++)
    if (off[i] > off[i + 1]) return 0;
  if (hd->tok_bytes_off > hd->total_size || off[vocab] > hd->total_size - hd->tok_bytes_off) return 0;
  return 1;
}

int stories_run(const uint8_t *image) {
  img = image;
  hd = (const imgc_header *)(const void *)image;
  stories_token_count = 0;
  if (!check_image()) {
    emit_str("error: bad stories_c image (magic, version or shapes)\n");
    return 2;
  }
  int token = hd->bos;
  for (int pos = 0; pos < hd->n_steps; pos++) {
    forward(token, pos);
    int best = 0;
    for (int i = 1; i < hd->vocab_size; i++)
      if (logits[i] > logits[best]) best = i;
    if (best == hd->bos) break; /* BOS delimits stories (llama2.c): the story ends */
    emit_piece(token, best);
    stories_tokens[stories_token_count++] = best;
    token = best;
  }
  emit_str("\ntokens:");
  for (int i = 0; i < stories_token_count; i++) {
    emit_str(" ");
    emit_udec((uint32_t)stories_tokens[i]);
  }
  emit_str("\n");
  return 0;
}
