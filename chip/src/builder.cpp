#include "lockstep/chip/compiler/builder.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace lockstep::chip::compiler {

// ---- Lin ----

Lin Lin::constant(double v) {
  Lin l;
  l.c = v;
  return l;
}
Lin Lin::dim(std::uint32_t d, double coef) {
  Lin l;
  l.terms.emplace_back(d, coef);
  return l;
}
Lin& Lin::operator+=(const Lin& o) {
  terms.insert(terms.end(), o.terms.begin(), o.terms.end());
  c += o.c;
  return *this;
}
Lin& Lin::operator-=(const Lin& o) {
  for (const auto& [d, v] : o.terms) terms.emplace_back(d, -v);
  c -= o.c;
  return *this;
}
Lin& Lin::operator*=(double s) {
  for (auto& t : terms) t.second *= s;
  c *= s;
  return *this;
}

std::uint32_t FieldRef::dim(std::uint32_t i) const {
  if (i >= width) throw std::out_of_range("field '" + name + "' has width " + std::to_string(width) + ", index " + std::to_string(i));
  return offset + i;
}
Lin FieldRef::weighted(const std::vector<double>& coefs) const {
  Lin l;
  for (std::uint32_t i = 0; i < coefs.size(); ++i)
    if (coefs[i] != 0) l.terms.emplace_back(dim(i), coefs[i]);
  return l;
}

// ---- LayerBuilder ----

std::uint32_t LayerBuilder::add_head(std::uint32_t key_dim, std::uint32_t value_dim, Activation act_k,
                                     Activation act_q, Activation act_beta) {
  HeadBuilder h;
  h.key_dim = key_dim;
  h.value_dim = value_dim;
  h.act_k = act_k;
  h.act_q = act_q;
  h.act_beta = act_beta;
  h.k.resize(key_dim);
  h.q.resize(key_dim);
  h.v.resize(value_dim);
  heads_.push_back(std::move(h));
  return static_cast<std::uint32_t>(heads_.size() - 1);
}

std::uint32_t LayerBuilder::relu_unit(const Lin& pre) {
  units_.push_back({Lin::constant(1), pre, false});
  return static_cast<std::uint32_t>(units_.size() - 1);
}
std::uint32_t LayerBuilder::gated_unit(const Lin& u, const Lin& g) {
  units_.push_back({u, g, true});
  return static_cast<std::uint32_t>(units_.size() - 1);
}
void LayerBuilder::unit_out(std::uint32_t unit, std::uint32_t dim, double coef) {
  if (unit >= units_.size()) throw std::out_of_range("unit_out: no unit " + std::to_string(unit));
  out_.emplace_back(unit, dim, coef);
}
void LayerBuilder::mlp_bias(std::uint32_t dim, double v) { bias_[dim] += v; }

// ---- ChipBuilder ----

ChipBuilder::ChipBuilder(std::string machine, std::uint32_t vocab_size, std::string compiler)
    : machine_(std::move(machine)), compiler_(std::move(compiler)), vocab_(vocab_size) {}

FieldRef ChipBuilder::field(const std::string& name, std::uint32_t width) {
  for (const FieldRef& f : fields_)
    if (f.name == name) throw std::logic_error("field '" + name + "' allocated twice");
  if (width == 0) throw std::logic_error("field '" + name + "' has width 0");
  FieldRef f{name, d_model_, width};
  d_model_ += width;
  fields_.push_back(f);
  return f;
}

const FieldRef& ChipBuilder::find(const std::string& name) const {
  for (const FieldRef& f : fields_)
    if (f.name == name) return f;
  throw std::out_of_range("no field '" + name + "'");
}

LayerBuilder& ChipBuilder::add_layer(NumberFormat format) {
  layers_.emplace_back();
  layers_.back().format = format;
  return layers_.back();
}

void ChipBuilder::embed(Token token, std::uint32_t dim, double v) { embed_.emplace_back(dim, token, v); }
void ChipBuilder::unembed(Token token, std::uint32_t dim, double w) { unembed_.emplace_back(token, dim, w); }
void ChipBuilder::unembed_bias(Token token, double b) { unembed_bias_[token] += b; }
void ChipBuilder::token_name(Token token, std::string name) {
  if (token >= vocab_) throw std::out_of_range("token_name: token out of range");
  if (token_names_.empty()) token_names_.resize(vocab_);
  token_names_[token] = std::move(name);
}
void ChipBuilder::probe(int layer, Sublayer after, std::vector<std::string> fields) {
  extra_.probes.push_back({layer, after, std::move(fields)});
}
void ChipBuilder::bound(const std::string& activation, int layer, double b, int frac_bits) {
  extra_.bounds.push_back({activation, layer, b, frac_bits});
}
void ChipBuilder::initialiser(Initialiser init) { extra_.initialisers.push_back(std::move(init)); }

namespace {

float exact(double v, NumberFormat fmt, const std::string& what) {
  const float f = static_cast<float>(v);
  if (static_cast<double>(f) != v || !representable(f, fmt))
    throw std::logic_error(what + ": coefficient " + std::to_string(v) + " is not exact in " + to_string(fmt));
  return f;
}

// Triplets (row, col, value) -> CSC with duplicates summed and zeros dropped; bias dense.
LinearMap make_map(std::uint32_t rows, std::uint32_t cols, std::vector<std::tuple<std::uint32_t, std::uint32_t, double>> t,
                   const std::map<std::uint32_t, double>& bias, Activation act, NumberFormat fmt, const std::string& what) {
  std::sort(t.begin(), t.end(), [](const auto& a, const auto& b) {
    return std::get<1>(a) != std::get<1>(b) ? std::get<1>(a) < std::get<1>(b) : std::get<0>(a) < std::get<0>(b);
  });
  LinearMap m;
  m.act = act;
  m.w.rows = rows;
  m.w.cols = cols;
  m.w.col_ptr.assign(cols + 1, 0);
  for (std::size_t i = 0; i < t.size();) {
    const auto [r, c, v0] = t[i];
    double v = 0;
    std::size_t k = i;
    for (; k < t.size() && std::get<0>(t[k]) == r && std::get<1>(t[k]) == c; ++k) v += std::get<2>(t[k]);
    i = k;
    if (r >= rows || c >= cols)
      throw std::logic_error(what + ": entry (" + std::to_string(r) + ", " + std::to_string(c) + ") outside " +
                             std::to_string(rows) + "x" + std::to_string(cols));
    if (v == 0) continue;
    m.w.row_idx.push_back(r);
    m.w.values.push_back(exact(v, fmt, what));
    m.w.col_ptr[c + 1]++;
  }
  for (std::uint32_t c = 0; c < cols; ++c) m.w.col_ptr[c + 1] += m.w.col_ptr[c];
  m.bias.assign(rows, 0.0f);
  for (const auto& [r, v] : bias) {
    if (r >= rows) throw std::logic_error(what + ": bias row out of range");
    m.bias[r] = exact(v, fmt, what);
  }
  return m;
}

using Triplets = std::vector<std::tuple<std::uint32_t, std::uint32_t, double>>;

// Rows of linear forms -> (triplets, bias).
void rows_to(const std::vector<Lin>& rows, Triplets& t, std::map<std::uint32_t, double>& bias) {
  for (std::uint32_t r = 0; r < rows.size(); ++r) {
    for (const auto& [d, v] : rows[r].terms) t.emplace_back(r, d, v);
    if (rows[r].c != 0) bias[r] += rows[r].c;
  }
}

LinearMap map_of_rows(const std::vector<Lin>& rows, std::uint32_t D, Activation act, NumberFormat fmt, const std::string& what) {
  Triplets t;
  std::map<std::uint32_t, double> bias;
  rows_to(rows, t, bias);
  return make_map(static_cast<std::uint32_t>(rows.size()), D, std::move(t), bias, act, fmt, what);
}

}  // namespace

Chip ChipBuilder::build() const {
  Chip chip;
  ChipConfig& c = chip.config;
  c = extra_;
  c.machine = machine_;
  c.compiler = compiler_;
  c.d_model = d_model_;
  c.vocab_size = vocab_;
  c.token_names = token_names_;
  for (const FieldRef& f : fields_) c.fields.push_back({f.name, f.offset, f.width});
  const std::uint32_t D = d_model_;
  {
    Triplets t;
    for (const auto& [d, tok, v] : embed_) t.emplace_back(d, tok, v);
    chip.embed = make_map(D, vocab_, std::move(t), {}, Activation::Identity, c.number_format, "embed");
  }
  {
    Triplets t;
    for (const auto& [tok, d, w] : unembed_) t.emplace_back(tok, d, w);
    std::map<std::uint32_t, double> bias(unembed_bias_.begin(), unembed_bias_.end());
    chip.unembed = make_map(vocab_, D, std::move(t), bias, Activation::Identity, c.number_format, "unembed");
  }
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const LayerBuilder& LB = layers_[l];
    Layer L;
    L.format = LB.format;
    const std::string ln = "layer " + std::to_string(l);
    for (std::size_t h = 0; h < LB.heads_.size(); ++h) {
      const HeadBuilder& hb = LB.heads_[h];
      const std::string hn = ln + " head " + std::to_string(h);
      Head hd;
      hd.key_dim = hb.key_dim;
      hd.value_dim = hb.value_dim;
      hd.k = map_of_rows(hb.k, D, hb.act_k, L.format, hn + " k");
      hd.q = map_of_rows(hb.q, D, hb.act_q, L.format, hn + " q");
      hd.v = map_of_rows(hb.v, D, Activation::Identity, L.format, hn + " v");
      hd.beta = map_of_rows({hb.beta}, D, hb.act_beta, L.format, hn + " beta");
      Triplets t;
      for (const auto& [vr, d, w] : hb.out) t.emplace_back(d, vr, w);
      hd.o = make_map(D, hb.value_dim, std::move(t), {}, Activation::Identity, L.format, hn + " o");
      L.heads.push_back(std::move(hd));
    }
    const auto n_units = static_cast<std::uint32_t>(LB.units_.size());
    if (n_units > 0) {
      const bool gated = std::any_of(LB.units_.begin(), LB.units_.end(), [](const auto& u) { return u.gated; });
      std::vector<Lin> g, u;
      for (const auto& un : LB.units_) {
        g.push_back(un.g);
        u.push_back(un.gated ? un.u : Lin::constant(1));
      }
      L.mlp.kind = gated ? MlpKind::Gated : MlpKind::Relu;
      L.mlp.hidden = n_units;
      if (gated) {
        L.mlp.wg = map_of_rows(g, D, Activation::Relu, L.format, ln + " mlp g");
        L.mlp.wu = map_of_rows(u, D, Activation::Identity, L.format, ln + " mlp u");
      } else {
        L.mlp.w1 = map_of_rows(g, D, Activation::Relu, L.format, ln + " mlp w1");
      }
      Triplets t;
      for (const auto& [unit, d, w] : LB.out_) t.emplace_back(d, unit, w);
      L.mlp.w2 = make_map(D, n_units, std::move(t), LB.bias_, Activation::Identity, L.format, ln + " mlp w2");
    } else if (!LB.bias_.empty()) {
      throw std::logic_error(ln + ": MLP bias without units");
    }
    chip.layers.push_back(std::move(L));
  }
  chip.validate();
  return chip;
}

}  // namespace lockstep::chip::compiler
