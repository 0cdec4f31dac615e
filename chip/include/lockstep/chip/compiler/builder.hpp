// Layer-graph builder: the machine compiler writes weights through this, never by hand.
// Residual dimensions are allocated by name (fields); each layer gets memory heads and MLP
// units whose rows are linear forms over residual dimensions (Lin). build() turns everything
// into a validated sparse Chip (docs/spec/chip-format.md).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/chip/chip.hpp"

namespace lockstep::chip::compiler {

/// A linear form over residual dimensions plus a constant: c + sum_i coef_i * x[dim_i].
/// Coefficients are doubles while building; build() requires each to be exact in fp32.
struct Lin {
  std::vector<std::pair<std::uint32_t, double>> terms;
  double c = 0;

  Lin() = default;
  /// A constant form.
  static Lin constant(double v);
  /// coef * x[dim].
  static Lin dim(std::uint32_t d, double coef = 1);

  Lin& operator+=(const Lin& o);
  Lin& operator-=(const Lin& o);
  Lin& operator*=(double s);
  friend Lin operator+(Lin a, const Lin& b) { return a += b; }
  friend Lin operator-(Lin a, const Lin& b) { return a -= b; }
  friend Lin operator*(Lin a, double s) { return a *= s; }
  friend Lin operator*(double s, Lin a) { return a *= s; }
  friend Lin operator+(Lin a, double v) { a.c += v; return a; }
  friend Lin operator-(Lin a, double v) { a.c -= v; return a; }
};

/// A named range of residual dimensions (what Field is in the chip file).
struct FieldRef {
  std::string name;
  std::uint32_t offset = 0;
  std::uint32_t width = 0;
  /// Residual dimension of element i (throws std::out_of_range if i >= width).
  std::uint32_t dim(std::uint32_t i = 0) const;
  /// x[dim(i)] as a linear form, times coef.
  Lin operator[](std::uint32_t i) const { return Lin::dim(dim(i)); }
  /// sum_i coefs[i] * x[dim(i)] (e.g. the scalar value of a one-hot: coefs = 0, 1, 2, ...).
  Lin weighted(const std::vector<double>& coefs) const;
};

class ChipBuilder;

/// One memory head under construction: rows of k, q, v (linear forms over the layer input),
/// beta, and the output map (value row -> residual dimension).
struct HeadBuilder {
  std::uint32_t key_dim = 0, value_dim = 0;
  Activation act_k = Activation::Identity, act_q = Activation::Identity, act_beta = Activation::Relu;
  std::vector<Lin> k, q, v;  // (key_dim), (key_dim), (value_dim)
  Lin beta;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, double>> out;  // (value row, residual dim, coef)
};

/// One layer under construction.
class LayerBuilder {
 public:
  /// Adds a memory head; returns its index in the layer. act_beta is ReLU by default so that a
  /// beta of the form ReLU(enable + select - 1) is an AND.
  std::uint32_t add_head(std::uint32_t key_dim, std::uint32_t value_dim,
                         Activation act_k = Activation::Identity, Activation act_q = Activation::Identity,
                         Activation act_beta = Activation::Relu);
  HeadBuilder& head(std::uint32_t h) { return heads_.at(h); }
  std::uint32_t num_heads() const { return static_cast<std::uint32_t>(heads_.size()); }

  /// Adds a hidden unit ReLU(pre) (in a gated MLP it becomes 1 (.) ReLU(pre)). Returns its index.
  std::uint32_t relu_unit(const Lin& pre);
  /// Adds a gated hidden unit u (.) ReLU(g) (makes the layer's MLP gated). Returns its index.
  std::uint32_t gated_unit(const Lin& u, const Lin& g);
  /// MLP output: x[dim] += coef * h[unit].
  void unit_out(std::uint32_t unit, std::uint32_t dim, double coef);
  /// MLP output bias: x[dim] += v (b2).
  void mlp_bias(std::uint32_t dim, double v);
  std::uint32_t num_units() const { return static_cast<std::uint32_t>(units_.size()); }

  NumberFormat format = NumberFormat::Fp32;

 private:
  friend class ChipBuilder;
  struct Unit {
    Lin u;  // ignored when !gated
    Lin g;
    bool gated = false;
  };
  std::vector<HeadBuilder> heads_;
  std::vector<Unit> units_;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, double>> out_;  // (unit, dim, coef)
  std::map<std::uint32_t, double> bias_;
};

class ChipBuilder {
 public:
  ChipBuilder(std::string machine, std::uint32_t vocab_size, std::string compiler = "lockstep-chip-compiler 0.1");

  /// Allocates `width` fresh residual dimensions named `name` (unique). Returns the field.
  FieldRef field(const std::string& name, std::uint32_t width);
  const FieldRef& find(const std::string& name) const;
  std::uint32_t d_model() const { return d_model_; }
  std::uint32_t vocab_size() const { return vocab_; }

  /// Appends a layer; layers run in the order they are added.
  LayerBuilder& add_layer(NumberFormat format = NumberFormat::Fp32);
  LayerBuilder& layer(std::uint32_t l) { return layers_.at(l); }
  std::uint32_t num_layers() const { return static_cast<std::uint32_t>(layers_.size()); }

  /// Embedding: E[dim][token] += v.
  void embed(Token token, std::uint32_t dim, double v);
  /// Unembedding: logit[token] += w * x[dim]; and logit bias.
  void unembed(Token token, std::uint32_t dim, double w);
  void unembed_bias(Token token, double b);
  void token_name(Token token, std::string name);

  /// Declares fields meaningful at a probe point (after the embedding: layer -1).
  void probe(int layer, Sublayer after, std::vector<std::string> fields);
  /// Declares a numerics bound (chip-format.md, "Numerics").
  void bound(const std::string& activation, int layer, double bound, int frac_bits = 0);
  void initialiser(Initialiser init);

  /// Builds and validates the chip. Throws std::logic_error if a coefficient is not exact in
  /// fp32 (or the layer's format), FormatError if the result is invalid.
  Chip build() const;

 private:
  std::string machine_, compiler_;
  std::uint32_t vocab_;
  std::uint32_t d_model_ = 0;
  std::vector<FieldRef> fields_;
  std::vector<LayerBuilder> layers_;
  std::vector<std::tuple<std::uint32_t, Token, double>> embed_;    // (dim, token, v)
  std::vector<std::tuple<Token, std::uint32_t, double>> unembed_;  // (token, dim, w)
  std::map<Token, double> unembed_bias_;
  std::vector<std::string> token_names_;
  ChipConfig extra_;  // probes, bounds, initialisers
};

}  // namespace lockstep::chip::compiler
