// Chip file format: safetensors with the configuration JSON in the metadata
// (docs/spec/chip-format.md). Loading validates everything and throws FormatError.
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "lockstep/chip/chip.hpp"
#include "strict_json.hpp"

namespace lockstep::chip {

using json = nlohmann::json;

std::uint32_t encoding_rows(ByteEncoding e) {
  switch (e) {
    case ByteEncoding::Scalar: return 1;
    case ByteEncoding::Bits: return 8;
    case ByteEncoding::OneHot: return 256;
    case ByteEncoding::Nibbles: return 32;
  }
  return 1;
}

double exact_limit(NumberFormat f) {
  switch (f) {
    case NumberFormat::Fp32: return 16777216.0;  // 2^24
    case NumberFormat::Fp16: return 2048.0;      // 2^11
    case NumberFormat::Bf16: return 256.0;       // 2^8
  }
  return 16777216.0;
}

bool representable(float v, NumberFormat f) {
  if (!std::isfinite(v)) return false;
  if (f == NumberFormat::Fp32 || v == 0.0f) return true;
  if (f == NumberFormat::Bf16) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return (bits & 0xFFFFu) == 0;
  }
  // fp16: 11 significant bits, exponent range [-14, 15], subnormals down to 2^-24.
  const double a = std::fabs(static_cast<double>(v));
  if (a > 65504.0) return false;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int unit_exp = std::max(e - 11, -24);
  const double scaled = std::ldexp(a, -unit_exp);
  return scaled == std::floor(scaled);
}

const char* to_string(NumberFormat f) {
  switch (f) {
    case NumberFormat::Fp32: return "fp32";
    case NumberFormat::Bf16: return "bf16";
    case NumberFormat::Fp16: return "fp16";
  }
  return "?";
}

const char* to_string(Sublayer s) {
  switch (s) {
    case Sublayer::Embed: return "embed";
    case Sublayer::Memory: return "memory";
    case Sublayer::Mlp: return "mlp";
  }
  return "?";
}

namespace {

const char* act_name(Activation a) { return a == Activation::Relu ? "relu" : "identity"; }
const char* kind_name(MlpKind k) {
  return k == MlpKind::None ? "none" : k == MlpKind::Relu ? "relu" : "gated";
}
const char* encoding_name(ByteEncoding e) {
  switch (e) {
    case ByteEncoding::Scalar: return "scalar";
    case ByteEncoding::Bits: return "bits";
    case ByteEncoding::OneHot: return "onehot";
    case ByteEncoding::Nibbles: return "nibbles";
  }
  return "?";
}

[[noreturn]] void fail(const std::string& msg) { throw FormatError("chip: " + msg); }

const json& need(const json& j, const char* key, const std::string& ctx) {
  if (!j.is_object() || !j.contains(key)) fail(ctx + ": missing \"" + key + "\"");
  return j.at(key);
}
std::uint64_t get_uint(const json& j, const char* key, const std::string& ctx) {
  const json& v = need(j, key, ctx);
  if (!v.is_number_unsigned()) fail(ctx + ": \"" + key + "\" is not a non-negative integer");
  return v.get<std::uint64_t>();
}
std::uint32_t get_u32(const json& j, const char* key, const std::string& ctx) {
  const std::uint64_t v = get_uint(j, key, ctx);
  if (v > 0xFFFFFFFFull) fail(ctx + ": \"" + key + "\" exceeds 2^32-1");
  return static_cast<std::uint32_t>(v);
}
// Dimensions are capped so that a hostile header cannot make the loader allocate absurd memory.
constexpr std::uint32_t kMaxDim = 1u << 24;
std::uint32_t get_dim(const json& j, const char* key, const std::string& ctx) {
  const std::uint32_t v = get_u32(j, key, ctx);
  if (v > kMaxDim) fail(ctx + ": \"" + key + "\" = " + std::to_string(v) + " exceeds the limit 2^24");
  return v;
}
std::string get_str(const json& j, const char* key, const std::string& ctx) {
  const json& v = need(j, key, ctx);
  if (!v.is_string()) fail(ctx + ": \"" + key + "\" is not a string");
  return v.get<std::string>();
}
int get_int(const json& j, const char* key, const std::string& ctx) {
  const json& v = need(j, key, ctx);
  if (!v.is_number_integer()) fail(ctx + ": \"" + key + "\" is not an integer");
  const long long x = v.get<long long>();
  if (x < -1000000000LL || x > 1000000000LL) fail(ctx + ": \"" + key + "\" out of range");
  return static_cast<int>(x);
}
Activation parse_act(const json& j, const char* key, const std::string& ctx) {
  const std::string s = get_str(j, key, ctx);
  if (s == "relu") return Activation::Relu;
  if (s == "identity") return Activation::Identity;
  fail(ctx + ": \"" + key + "\" must be \"relu\" or \"identity\", got \"" + s + "\"");
}
NumberFormat parse_format(const std::string& s, const std::string& ctx) {
  if (s == "fp32") return NumberFormat::Fp32;
  if (s == "bf16") return NumberFormat::Bf16;
  if (s == "fp16") return NumberFormat::Fp16;
  fail(ctx + ": unknown number format \"" + s + "\"");
}

const std::set<std::string>& layer_activations() {
  static const std::set<std::string> s = {"mem.k", "mem.q", "mem.v", "mem.beta", "mem.state",
                                          "mem.o", "mem.resid", "mlp.pre", "mlp.u",
                                          "mlp.hidden", "mlp.resid"};
  return s;
}

// ---- linear maps <-> tensors ----

// Metadata key of the map aliases (section 3.2): a JSON object {alias map name: stored map name}.
constexpr const char* kAliasKey = "lockstep.map_aliases";

// Writes map `name`, or, when a map with the same shape and the same weights and biases was
// written before, records `name` as an alias of it (a chip may repeat a map many times, e.g. the
// key of a memory spread over several heads).
struct MapWriter {
  SafeTensors& st;
  std::multimap<std::uint64_t, std::pair<std::string, const LinearMap*>> written;  // content hash -> map
  json aliases = json::object();
  void put(const std::string& name, const LinearMap& m);
};

void put_map(SafeTensors& st, const std::string& name, const LinearMap& m) {
  const auto& w = m.w;
  if (w.values.size() < w.col_ptr.size()) {  // fewer entries than columns: each entry's column
    std::vector<std::uint32_t> ci;
    ci.reserve(w.values.size());
    for (std::uint32_t j = 0; j + 1 < w.col_ptr.size(); ++j)
      for (std::uint32_t p = w.col_ptr[j]; p < w.col_ptr[j + 1]; ++p) ci.push_back(j);
    st.tensors[name + ".col_idx"] = Tensor::from_u32(ci, {ci.size()});
  } else {
    st.tensors[name + ".col_ptr"] = Tensor::from_u32(w.col_ptr, {w.col_ptr.size()});
  }
  st.tensors[name + ".row_idx"] = Tensor::from_u32(w.row_idx, {w.row_idx.size()});
  st.tensors[name + ".values"] = Tensor::from_f32(w.values, {w.values.size()});
  std::vector<std::uint32_t> bi;
  std::vector<float> bv;
  for (std::uint32_t r = 0; r < m.bias.size(); ++r)
    if (m.bias[r] != 0.0f) {
      bi.push_back(r);
      bv.push_back(m.bias[r]);
    }
  st.tensors[name + ".bias_idx"] = Tensor::from_u32(bi, {bi.size()});
  st.tensors[name + ".bias_values"] = Tensor::from_f32(bv, {bv.size()});
}

void MapWriter::put(const std::string& name, const LinearMap& m) {
  const std::uint64_t h = weights_hash(m);
  for (auto [it, end] = written.equal_range(h); it != end; ++it) {
    if (same_weights(*it->second.second, m)) {
      aliases[name] = it->second.first;
      return;
    }
  }
  put_map(st, name, m);
  written.emplace(h, std::make_pair(name, &m));
}

// Throws FormatError unless this build reads format version `v`.
void check_format_version(int v) {
  if (v < kMinFormatVersion || v > kFormatVersion)
    fail("unsupported format_version " + std::to_string(v) + " (this build reads " + std::to_string(kMinFormatVersion) +
         ".." + std::to_string(kFormatVersion) + ")");
}

const Tensor& take(const SafeTensors& st, const std::string& name, DType dt, std::set<std::string>& used) {
  auto it = st.tensors.find(name);
  if (it == st.tensors.end()) fail("missing tensor '" + name + "'");
  if (it->second.dtype != dt)
    fail("tensor '" + name + "' has dtype " + (it->second.dtype == DType::F32 ? "F32" : "U32") +
         ", expected " + (dt == DType::F32 ? "F32" : "U32"));
  if (it->second.shape.size() != 1) fail("tensor '" + name + "' must be one-dimensional");
  used.insert(name);
  return it->second;
}

// A map's tensors (chip-format.md section 3.2): col_ptr, or (format 2) col_idx; row_idx and values.
LinearMap get_map(const SafeTensors& st, const std::string& name_in, std::uint32_t rows, std::uint32_t cols,
                  Activation act, std::set<std::string>& used, const json& aliases, int format_version) {
  std::string name = name_in;
  if (auto it = aliases.find(name_in); it != aliases.end()) {
    if (!it->is_string()) fail("map alias '" + name_in + "' is not a string");
    name = it->get<std::string>();
    if (aliases.contains(name)) fail("map alias '" + name_in + "' names another alias '" + name + "'");
    used.insert("alias:" + name_in);  // an alias the configuration's maps use (parse_chip checks every one is)
  }
  LinearMap m;
  m.act = act;
  m.w.rows = rows;
  m.w.cols = cols;
  const bool by_entry = st.tensors.count(name + ".col_idx") != 0;
  if (by_entry && st.tensors.count(name + ".col_ptr") != 0)
    fail("map '" + name + "' has both a col_ptr and a col_idx tensor");
  if (by_entry && format_version < 2)
    fail("map '" + name + "' has a col_idx tensor, which format_version " + std::to_string(format_version) +
         " does not have (col_idx is format 2)");
  if (!by_entry) m.w.col_ptr = take(st, name + ".col_ptr", DType::U32, used).as_u32();
  m.w.row_idx = take(st, name + ".row_idx", DType::U32, used).as_u32();
  m.w.values = take(st, name + ".values", DType::F32, used).as_f32();
  if (by_entry) {  // format 2: the column of each entry, non-decreasing; rebuilt as col_ptr
    const auto ci = take(st, name + ".col_idx", DType::U32, used).as_u32();
    if (ci.size() != m.w.values.size())
      fail("tensor '" + name + ".col_idx' has " + std::to_string(ci.size()) + " entries but the map has " +
           std::to_string(m.w.values.size()));
    m.w.col_ptr.assign(static_cast<std::size_t>(cols) + 1, 0);
    for (std::size_t p = 0; p < ci.size(); ++p) {
      if (ci[p] >= cols)
        fail("tensor '" + name + ".col_idx' column " + std::to_string(ci[p]) + " out of range (cols " + std::to_string(cols) + ")");
      if (p > 0 && ci[p] < ci[p - 1]) fail("tensor '" + name + ".col_idx' decreases at entry " + std::to_string(p));
      ++m.w.col_ptr[ci[p] + 1];
    }
    for (std::uint32_t j = 0; j < cols; ++j) m.w.col_ptr[j + 1] += m.w.col_ptr[j];
  }
  const auto bi = take(st, name + ".bias_idx", DType::U32, used).as_u32();
  const auto bv = take(st, name + ".bias_values", DType::F32, used).as_f32();
  if (m.w.col_ptr.size() != static_cast<std::size_t>(cols) + 1)
    fail("tensor '" + name + ".col_ptr' has shape [" + std::to_string(m.w.col_ptr.size()) +
         "], configuration needs [" + std::to_string(cols + 1ull) + "]");
  if (bi.size() != bv.size())
    fail("tensors '" + name + ".bias_idx' and '.bias_values' differ in length");
  m.bias.assign(rows, 0.0f);
  for (std::size_t i = 0; i < bi.size(); ++i) {
    if (bi[i] >= rows)
      fail("tensor '" + name + ".bias_idx' index " + std::to_string(bi[i]) + " out of range (rows " +
           std::to_string(rows) + ")");
    if (i > 0 && bi[i] <= bi[i - 1]) fail("tensor '" + name + ".bias_idx' is not strictly increasing");
    m.bias[bi[i]] = bv[i];
  }
  return m;
}

void check_map(const LinearMap& m, const std::string& name, std::uint32_t rows, std::uint32_t cols,
               NumberFormat fmt) {
  const auto& w = m.w;
  if (w.rows != rows || w.cols != cols)
    fail("map '" + name + "' is " + std::to_string(w.rows) + "x" + std::to_string(w.cols) +
         ", configuration needs " + std::to_string(rows) + "x" + std::to_string(cols));
  if (w.col_ptr.size() != static_cast<std::size_t>(cols) + 1)
    fail("map '" + name + "' col_ptr has " + std::to_string(w.col_ptr.size()) + " entries, needs " +
         std::to_string(cols + 1ull));
  if (w.row_idx.size() != w.values.size())
    fail("map '" + name + "' row_idx and values differ in length");
  if (w.col_ptr[0] != 0) fail("map '" + name + "' col_ptr[0] is not 0");
  if (w.col_ptr[cols] != w.values.size())
    fail("map '" + name + "' col_ptr[cols] = " + std::to_string(w.col_ptr[cols]) + " but nnz = " +
         std::to_string(w.values.size()));
  // Check the whole column structure before reading any entry through it: col_ptr must not
  // decrease, and then (with col_ptr[cols] = nnz) every column range lies inside the arrays.
  for (std::uint32_t j = 0; j < cols; ++j)
    if (w.col_ptr[j + 1] < w.col_ptr[j]) fail("map '" + name + "' col_ptr decreases at column " + std::to_string(j));
  for (std::uint32_t j = 0; j < cols; ++j) {
    for (std::uint32_t p = w.col_ptr[j]; p < w.col_ptr[j + 1]; ++p) {
      if (w.row_idx[p] >= rows)
        fail("map '" + name + "' row index " + std::to_string(w.row_idx[p]) + " out of range (rows " +
             std::to_string(rows) + ") in column " + std::to_string(j));
      if (p > w.col_ptr[j] && w.row_idx[p] <= w.row_idx[p - 1])
        fail("map '" + name + "' row indices not strictly increasing in column " + std::to_string(j));
      if (!std::isfinite(w.values[p])) fail("map '" + name + "' has a non-finite weight in column " + std::to_string(j));
      if (!representable(w.values[p], fmt))
        fail("map '" + name + "' weight " + std::to_string(w.values[p]) + " is not exact in " + to_string(fmt));
    }
  }
  if (m.bias.size() != rows) fail("map '" + name + "' bias has wrong length");
  for (std::uint32_t r = 0; r < rows; ++r) {
    if (!std::isfinite(m.bias[r])) fail("map '" + name + "' has a non-finite bias at row " + std::to_string(r));
    if (!representable(m.bias[r], fmt))
      fail("map '" + name + "' bias " + std::to_string(m.bias[r]) + " is not exact in " + to_string(fmt));
  }
}

std::string head_name(std::size_t l, std::size_t h) {
  return "layers." + std::to_string(l) + ".heads." + std::to_string(h);
}
std::string mlp_name(std::size_t l) { return "layers." + std::to_string(l) + ".mlp"; }

json config_to_json(const Chip& chip) {
  const ChipConfig& c = chip.config;
  json j;
  j["format"] = "lockstep-chip";
  j["format_version"] = kFormatVersion;  // the tensors are written in this version's form
  j["spec_version"] = c.spec_version;
  j["compiler"] = c.compiler;
  j["machine"] = c.machine;
  j["d_model"] = c.d_model;
  j["vocab_size"] = c.vocab_size;
  j["number_format"] = to_string(c.number_format);
  json layers = json::array();
  for (const Layer& L : chip.layers) {
    json jl;
    jl["format"] = to_string(L.format);
    json heads = json::array();
    for (const Head& h : L.heads)
      heads.push_back({{"key_dim", h.key_dim}, {"value_dim", h.value_dim}, {"act_k", act_name(h.k.act)},
                       {"act_q", act_name(h.q.act)}, {"act_beta", act_name(h.beta.act)}});
    jl["heads"] = heads;
    jl["mlp"] = {{"kind", kind_name(L.mlp.kind)}, {"hidden", L.mlp.hidden}};
    layers.push_back(jl);
  }
  j["layers"] = layers;
  json fields = json::array();
  for (const Field& f : c.fields) fields.push_back({{"name", f.name}, {"offset", f.offset}, {"width", f.width}});
  j["fields"] = fields;
  json probes = json::array();
  for (const ProbePoint& p : c.probes)
    probes.push_back({{"layer", p.layer}, {"after", to_string(p.after)}, {"fields", p.fields}});
  j["probes"] = probes;
  json bounds = json::array();
  for (const Bound& b : c.bounds)
    bounds.push_back({{"activation", b.activation}, {"layer", b.layer}, {"bound", b.bound}, {"frac_bits", b.frac_bits}});
  j["bounds"] = bounds;
  json inits = json::array();
  for (const Initialiser& in : c.initialisers) {
    json ji = {{"name", in.name}, {"layer", in.layer}, {"head", in.head}, {"column", in.column}, {"row", in.row}};
    if (in.is_const) {
      ji["kind"] = "const";
      ji["values"] = in.values;
      ji["columns"] = in.columns;
    } else {
      ji["kind"] = "bytes";
      json src;
      if (in.source == ByteSourceKind::Image) src = {{"kind", "image"}, {"address", in.address}, {"length", in.length}};
      else if (in.source == ByteSourceKind::Section)
        src = {{"kind", "section"}, {"name", in.section}, {"offset", in.offset}, {"length", in.length}};
      else src = {{"kind", "entry"}, {"length", in.length}};
      if (in.stride != 1) src["stride"] = in.stride;
      if (in.optional) src["optional"] = true;
      ji["source"] = src;
      ji["encoding"] = encoding_name(in.encoding);
      ji["bytes_per_column"] = in.bytes_per_column;
    }
    inits.push_back(ji);
  }
  j["initialisers"] = inits;
  j["token_names"] = c.token_names;
  return j;
}

// Refuses a key of `j` (an object) that is not in `known` (chip-format.md section 3.1): a
// misspelt optional key would otherwise be ignored, and the chip read as another one.
void only_keys(const json& j, std::initializer_list<const char*> known, const std::string& ctx) {
  if (!j.is_object()) fail(ctx + " is not a JSON object");
  for (const auto& [key, value] : j.items()) {
    bool ok = false;
    for (const char* k : known) ok = ok || key == k;
    if (!ok) fail(ctx + ": unknown key \"" + key + "\"");
  }
}

// Parses the configuration; fills chip.config and the layer shapes (weights empty).
void config_from_json(const json& j, Chip& chip) {
  ChipConfig& c = chip.config;
  const std::string ctx = "configuration";
  if (!j.is_object()) fail("configuration is not a JSON object");
  only_keys(j, {"format", "format_version", "spec_version", "compiler", "machine", "d_model", "vocab_size",
                "number_format", "layers", "fields", "probes", "bounds", "initialisers", "token_names"},
            ctx);
  if (get_str(j, "format", ctx) != "lockstep-chip") fail("configuration \"format\" is not \"lockstep-chip\"");
  c.format_version = get_int(j, "format_version", ctx);
  check_format_version(c.format_version);
  c.spec_version = get_str(j, "spec_version", ctx);
  if (c.spec_version != kSpecVersion)
    fail("unsupported spec_version \"" + c.spec_version + "\" (this build reads \"" + kSpecVersion + "\")");
  c.compiler = get_str(j, "compiler", ctx);
  c.machine = j.contains("machine") ? get_str(j, "machine", ctx) : "";
  c.d_model = get_dim(j, "d_model", ctx);
  c.vocab_size = get_dim(j, "vocab_size", ctx);
  c.number_format = parse_format(get_str(j, "number_format", ctx), ctx);
  const json& layers = need(j, "layers", ctx);
  if (!layers.is_array()) fail("configuration \"layers\" is not an array");
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const std::string lc = "layer " + std::to_string(l);
    const json& jl = layers[l];
    only_keys(jl, {"format", "heads", "mlp"}, lc);
    Layer L;
    L.format = parse_format(get_str(jl, "format", lc), lc);
    const json& heads = need(jl, "heads", lc);
    if (!heads.is_array()) fail(lc + ": \"heads\" is not an array");
    for (std::size_t h = 0; h < heads.size(); ++h) {
      const std::string hc = lc + " head " + std::to_string(h);
      Head hd;
      only_keys(heads[h], {"key_dim", "value_dim", "act_k", "act_q", "act_beta"}, hc);
      hd.key_dim = get_dim(heads[h], "key_dim", hc);
      hd.value_dim = get_dim(heads[h], "value_dim", hc);
      hd.k.act = parse_act(heads[h], "act_k", hc);
      hd.q.act = parse_act(heads[h], "act_q", hc);
      hd.beta.act = parse_act(heads[h], "act_beta", hc);
      L.heads.push_back(std::move(hd));
    }
    const json& m = need(jl, "mlp", lc);
    only_keys(m, {"kind", "hidden"}, lc + " mlp");
    const std::string kind = get_str(m, "kind", lc + " mlp");
    if (kind == "none") L.mlp.kind = MlpKind::None;
    else if (kind == "relu") L.mlp.kind = MlpKind::Relu;
    else if (kind == "gated") L.mlp.kind = MlpKind::Gated;
    else fail(lc + ": unknown mlp kind \"" + kind + "\"");
    L.mlp.hidden = get_dim(m, "hidden", lc + " mlp");
    chip.layers.push_back(std::move(L));
  }
  for (const json& f : need(j, "fields", ctx)) {
    only_keys(f, {"name", "offset", "width"}, "field");
    c.fields.push_back({get_str(f, "name", "field"), get_u32(f, "offset", "field"), get_u32(f, "width", "field")});
  }
  for (const json& p : need(j, "probes", ctx)) {
    only_keys(p, {"layer", "after", "fields"}, "probe");
    ProbePoint pp;
    pp.layer = get_int(p, "layer", "probe");
    const std::string after = get_str(p, "after", "probe");
    if (after == "embed") pp.after = Sublayer::Embed;
    else if (after == "memory") pp.after = Sublayer::Memory;
    else if (after == "mlp") pp.after = Sublayer::Mlp;
    else fail("probe: unknown \"after\" \"" + after + "\"");
    for (const json& f : need(p, "fields", "probe")) {
      if (!f.is_string()) fail("probe: field name is not a string");
      pp.fields.push_back(f.get<std::string>());
    }
    c.probes.push_back(std::move(pp));
  }
  for (const json& b : need(j, "bounds", ctx)) {
    only_keys(b, {"activation", "layer", "bound", "frac_bits"}, "bound");
    Bound bd;
    bd.activation = get_str(b, "activation", "bound");
    bd.layer = get_int(b, "layer", "bound");
    const json& bv = need(b, "bound", "bound");
    if (!bv.is_number()) fail("bound: \"bound\" is not a number");
    bd.bound = bv.get<double>();
    bd.frac_bits = get_int(b, "frac_bits", "bound");
    c.bounds.push_back(bd);
  }
  for (const json& ji : need(j, "initialisers", ctx)) {
    only_keys(ji, {"name", "layer", "head", "column", "row", "kind", "values", "columns", "source", "encoding",
                   "bytes_per_column"},
              "initialiser");
    Initialiser in;
    in.name = get_str(ji, "name", "initialiser");
    const std::string ic = "initialiser '" + in.name + "'";
    in.layer = get_u32(ji, "layer", ic);
    in.head = get_u32(ji, "head", ic);
    in.column = get_u32(ji, "column", ic);
    in.row = get_u32(ji, "row", ic);
    const std::string kind = get_str(ji, "kind", ic);
    if (kind == "const") {
      in.is_const = true;
      const json& vals = need(ji, "values", ic);
      if (!vals.is_array()) fail(ic + ": \"values\" is not an array");
      for (const json& v : vals) {
        if (!v.is_number()) fail(ic + ": a value is not a number");
        in.values.push_back(v.get<float>());
      }
      in.columns = get_u32(ji, "columns", ic);
    } else if (kind == "bytes") {
      const json& src = need(ji, "source", ic);
      only_keys(src, {"kind", "address", "name", "offset", "length", "optional", "stride"}, ic + " source");
      const std::string sk = get_str(src, "kind", ic + " source");
      if (sk == "image") {
        in.source = ByteSourceKind::Image;
        in.address = get_uint(src, "address", ic + " source");
      } else if (sk == "section") {
        in.source = ByteSourceKind::Section;
        in.section = get_str(src, "name", ic + " source");
        in.offset = get_uint(src, "offset", ic + " source");
      } else if (sk == "entry") {
        in.source = ByteSourceKind::Entry;
      } else {
        fail(ic + ": unknown source kind \"" + sk + "\"");
      }
      in.length = get_uint(src, "length", ic + " source");
      if (src.contains("optional")) {
        if (in.source != ByteSourceKind::Section) fail(ic + ": only a section source can be optional");
        if (!src.at("optional").is_boolean()) fail(ic + " source: \"optional\" is not a boolean");
        in.optional = src.at("optional").get<bool>();
      }
      if (src.contains("stride")) {
        if (in.source == ByteSourceKind::Entry) fail(ic + ": an entry source has no stride");
        in.stride = get_u32(src, "stride", ic + " source");
      }
      const std::string enc = get_str(ji, "encoding", ic);
      if (enc == "scalar") in.encoding = ByteEncoding::Scalar;
      else if (enc == "bits") in.encoding = ByteEncoding::Bits;
      else if (enc == "onehot") in.encoding = ByteEncoding::OneHot;
      else if (enc == "nibbles") in.encoding = ByteEncoding::Nibbles;
      else fail(ic + ": unknown encoding \"" + enc + "\"");
      in.bytes_per_column = get_u32(ji, "bytes_per_column", ic);
    } else {
      fail(ic + ": unknown kind \"" + kind + "\"");
    }
    c.initialisers.push_back(std::move(in));
  }
  if (j.contains("token_names")) {
    for (const json& t : j["token_names"]) {
      if (!t.is_string()) fail("token_names: an entry is not a string");
      c.token_names.push_back(t.get<std::string>());
    }
  }
}

}  // namespace

std::string config_json(const Chip& chip) { return config_to_json(chip).dump(); }

const Field* Chip::field_at(std::uint32_t dim) const {
  for (const Field& f : config.fields)
    if (dim >= f.offset && dim - f.offset < f.width) return &f;
  return nullptr;
}

const Field* Chip::find_field(const std::string& name) const {
  for (const Field& f : config.fields)
    if (f.name == name) return &f;
  return nullptr;
}

std::size_t Chip::state_size() const {
  std::size_t n = 0;
  for (const Layer& L : layers)
    for (const Head& h : L.heads) n += static_cast<std::size_t>(h.key_dim) * h.value_dim;
  return n;
}

void Chip::validate() const {
  const ChipConfig& c = config;
  check_format_version(c.format_version);
  if (c.d_model == 0) fail("d_model is 0");
  if (c.vocab_size == 0) fail("vocab_size is 0");
  const std::uint32_t D = c.d_model;
  check_map(embed, "embed", D, c.vocab_size, c.number_format);
  check_map(unembed, "unembed", c.vocab_size, D, c.number_format);
  if (embed.act != Activation::Identity || unembed.act != Activation::Identity)
    fail("embed/unembed activations must be identity");
  for (float b : embed.bias)
    if (b != 0.0f) fail("embed has a non-zero bias (the embedding takes no bias)");
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer& L = layers[l];
    for (std::size_t h = 0; h < L.heads.size(); ++h) {
      const Head& hd = L.heads[h];
      const std::string n = head_name(l, h);
      if (hd.key_dim == 0 || hd.value_dim == 0) fail(n + ": key_dim and value_dim must be positive");
      if (static_cast<std::uint64_t>(hd.key_dim) * hd.value_dim > (1ull << 28)) fail(n + ": state too large");
      check_map(hd.k, n + ".k", hd.key_dim, D, L.format);
      check_map(hd.q, n + ".q", hd.key_dim, D, L.format);
      check_map(hd.v, n + ".v", hd.value_dim, D, L.format);
      check_map(hd.beta, n + ".beta", 1, D, L.format);
      check_map(hd.o, n + ".o", D, hd.value_dim, L.format);
      if (hd.v.act != Activation::Identity || hd.o.act != Activation::Identity)
        fail(n + ": v and o maps must be identity");
    }
    const Mlp& m = L.mlp;
    const std::string n = mlp_name(l);
    if (m.kind == MlpKind::None) {
      if (m.hidden != 0) fail(n + ": kind none but hidden " + std::to_string(m.hidden));
    } else {
      if (m.kind == MlpKind::Relu) {
        check_map(m.w1, n + ".w1", m.hidden, D, L.format);
        if (m.w1.act != Activation::Relu) fail(n + ".w1 must be relu");
      } else {
        check_map(m.wu, n + ".wu", m.hidden, D, L.format);
        check_map(m.wg, n + ".wg", m.hidden, D, L.format);
        if (m.wu.act != Activation::Identity || m.wg.act != Activation::Relu)
          fail(n + ": wu must be identity and wg relu");
      }
      check_map(m.w2, n + ".w2", D, m.hidden, L.format);
    }
  }
  std::set<std::string> names;
  for (const Field& f : c.fields) {
    if (!names.insert(f.name).second) fail("field '" + f.name + "' declared twice");
    if (f.width == 0 || f.offset > D || f.width > D - f.offset)
      fail("field '" + f.name + "' [" + std::to_string(f.offset) + ", +" + std::to_string(f.width) +
           ") outside d_model " + std::to_string(D));
  }
  for (const ProbePoint& p : c.probes) {
    if (p.after == Sublayer::Embed ? p.layer != -1 : (p.layer < 0 || static_cast<std::size_t>(p.layer) >= layers.size()))
      fail("probe point layer " + std::to_string(p.layer) + " after " + to_string(p.after) + " is out of range");
    for (const std::string& f : p.fields)
      if (!names.count(f)) fail("probe names unknown field '" + f + "'");
  }
  for (const Bound& b : c.bounds) {
    const bool global = b.activation == "embed" || b.activation == "logits";
    if (!global && !layer_activations().count(b.activation)) fail("bound for unknown activation '" + b.activation + "'");
    if (global ? b.layer != -1 : (b.layer < 0 || static_cast<std::size_t>(b.layer) >= layers.size()))
      fail("bound for '" + b.activation + "' has layer " + std::to_string(b.layer) + " out of range");
    if (!std::isfinite(b.bound) || b.bound < 0) fail("bound for '" + b.activation + "' is not a finite non-negative number");
    if (b.frac_bits < 0 || b.frac_bits > 24) fail("bound for '" + b.activation + "' has frac_bits outside [0, 24]");
  }
  for (const Initialiser& in : c.initialisers) {
    const std::string ic = "initialiser '" + in.name + "'";
    if (in.layer >= layers.size() || in.head >= layers[in.layer].heads.size())
      fail(ic + ": layer " + std::to_string(in.layer) + " head " + std::to_string(in.head) + " does not exist");
    const Head& hd = layers[in.layer].heads[in.head];
    std::uint64_t cols = 0, rows = 0;
    if (in.is_const) {
      for (float v : in.values)
        if (!std::isfinite(v)) fail(ic + ": non-finite value");
      cols = in.columns;
      rows = in.values.size();
    } else {
      if (in.bytes_per_column == 0) fail(ic + ": bytes_per_column is 0");
      if (in.stride == 0) fail(ic + ": stride is 0");
      if (in.source == ByteSourceKind::Entry && (in.length == 0 || in.length > 8))
        fail(ic + ": entry source length must be 1..8");
      if (in.length > (1ull << 32)) fail(ic + ": length too large");
      cols = (in.length + in.bytes_per_column - 1) / in.bytes_per_column;
      rows = static_cast<std::uint64_t>(std::min<std::uint64_t>(in.bytes_per_column, in.length)) *
             encoding_rows(in.encoding);
    }
    if (in.column + cols > hd.key_dim)
      fail(ic + ": columns [" + std::to_string(in.column) + ", " + std::to_string(in.column + cols) +
           ") exceed key_dim " + std::to_string(hd.key_dim));
    if (in.row + rows > hd.value_dim)
      fail(ic + ": rows [" + std::to_string(in.row) + ", " + std::to_string(in.row + rows) +
           ") exceed value_dim " + std::to_string(hd.value_dim));
  }
  if (!c.token_names.empty() && c.token_names.size() != c.vocab_size)
    fail("token_names has " + std::to_string(c.token_names.size()) + " entries, vocab_size is " +
         std::to_string(c.vocab_size));
}

std::vector<std::uint8_t> serialize_chip(const Chip& chip) {
  chip.validate();
  SafeTensors st;
  st.metadata[kMetadataKey] = config_json(chip);
  MapWriter mw{st, {}};
  auto put_map = [&](SafeTensors&, const std::string& name, const LinearMap& m) { mw.put(name, m); };
  put_map(st, "embed", chip.embed);
  put_map(st, "unembed", chip.unembed);
  for (std::size_t l = 0; l < chip.layers.size(); ++l) {
    const Layer& L = chip.layers[l];
    for (std::size_t h = 0; h < L.heads.size(); ++h) {
      const Head& hd = L.heads[h];
      const std::string n = head_name(l, h);
      put_map(st, n + ".k", hd.k);
      put_map(st, n + ".q", hd.q);
      put_map(st, n + ".v", hd.v);
      put_map(st, n + ".beta", hd.beta);
      put_map(st, n + ".o", hd.o);
    }
    const std::string n = mlp_name(l);
    if (L.mlp.kind == MlpKind::Relu) put_map(st, n + ".w1", L.mlp.w1);
    if (L.mlp.kind == MlpKind::Gated) {
      put_map(st, n + ".wu", L.mlp.wu);
      put_map(st, n + ".wg", L.mlp.wg);
    }
    if (L.mlp.kind != MlpKind::None) put_map(st, n + ".w2", L.mlp.w2);
  }
  if (!mw.aliases.empty()) st.metadata[kAliasKey] = mw.aliases.dump();
  return serialize_safetensors(st);
}

Chip parse_chip(const std::vector<std::uint8_t>& bytes) {
  const SafeTensors st = parse_safetensors(bytes);
  json aliases = json::object();
  if (auto a = st.metadata.find(kAliasKey); a != st.metadata.end()) {
    try {
      aliases = parse_strict_json(a->second, "chip: map aliases JSON");
    } catch (const json::exception& e) {
      fail(std::string("map aliases JSON: ") + e.what());
    }
    if (!aliases.is_object()) fail("map aliases JSON is not an object");
  }
  auto meta = st.metadata.find(kMetadataKey);
  if (meta == st.metadata.end()) fail(std::string("metadata lacks \"") + kMetadataKey + "\" (not a chip file)");
  Chip chip;
  try {
    config_from_json(parse_strict_json(meta->second, "chip: configuration JSON"), chip);
  } catch (const json::exception& e) {
    fail(std::string("configuration JSON: ") + e.what());
  }
  const std::uint32_t D = chip.config.d_model, V = chip.config.vocab_size;
  std::set<std::string> used;
  chip.embed = get_map(st, "embed", D, V, Activation::Identity, used, aliases, chip.config.format_version);
  chip.unembed = get_map(st, "unembed", V, D, Activation::Identity, used, aliases, chip.config.format_version);
  for (std::size_t l = 0; l < chip.layers.size(); ++l) {
    Layer& L = chip.layers[l];
    for (std::size_t h = 0; h < L.heads.size(); ++h) {
      Head& hd = L.heads[h];
      const std::string n = head_name(l, h);
      hd.k = get_map(st, n + ".k", hd.key_dim, D, hd.k.act, used, aliases, chip.config.format_version);
      hd.q = get_map(st, n + ".q", hd.key_dim, D, hd.q.act, used, aliases, chip.config.format_version);
      hd.v = get_map(st, n + ".v", hd.value_dim, D, Activation::Identity, used, aliases, chip.config.format_version);
      hd.beta = get_map(st, n + ".beta", 1, D, hd.beta.act, used, aliases, chip.config.format_version);
      hd.o = get_map(st, n + ".o", D, hd.value_dim, Activation::Identity, used, aliases, chip.config.format_version);
    }
    Mlp& m = L.mlp;
    const std::string n = mlp_name(l);
    if (m.kind == MlpKind::Relu) m.w1 = get_map(st, n + ".w1", m.hidden, D, Activation::Relu, used, aliases, chip.config.format_version);
    if (m.kind == MlpKind::Gated) {
      m.wu = get_map(st, n + ".wu", m.hidden, D, Activation::Identity, used, aliases, chip.config.format_version);
      m.wg = get_map(st, n + ".wg", m.hidden, D, Activation::Relu, used, aliases, chip.config.format_version);
    }
    if (m.kind != MlpKind::None) m.w2 = get_map(st, n + ".w2", D, m.hidden, Activation::Identity, used, aliases, chip.config.format_version);
  }
  for (const auto& [name, t] : st.tensors)
    if (!used.count(name)) fail("unknown tensor '" + name + "' (not named by the configuration)");
  for (const auto& [alias, stored] : aliases.items())
    if (!used.count("alias:" + alias)) fail("map alias '" + alias + "' names no map of the configuration");
  chip.validate();
  return chip;
}

Chip load_chip(const std::string& path) {
  try {
    return parse_chip(read_safetensors_file(path));
  } catch (const FormatError& e) {
    throw FormatError(path + ": " + e.what());
  }
}

void save_chip(const Chip& chip, const std::string& path) { write_file_bytes(path, serialize_chip(chip)); }

std::uint64_t weights_hash(const LinearMap& m) {
  XXH3_state_t* st = XXH3_createState();
  XXH3_64bits_reset(st);
  const std::uint32_t shape[2] = {m.w.rows, m.w.cols};
  XXH3_64bits_update(st, shape, sizeof shape);
  XXH3_64bits_update(st, m.w.col_ptr.data(), m.w.col_ptr.size() * sizeof(std::uint32_t));
  XXH3_64bits_update(st, m.w.row_idx.data(), m.w.row_idx.size() * sizeof(std::uint32_t));
  XXH3_64bits_update(st, m.w.values.data(), m.w.values.size() * sizeof(float));
  XXH3_64bits_update(st, m.bias.data(), m.bias.size() * sizeof(float));
  const std::uint64_t h = XXH3_64bits_digest(st);
  XXH3_freeState(st);
  return h;
}

bool same_weights(const LinearMap& a, const LinearMap& b) {
  auto same_bits = [](const auto& x, const auto& y) {
    return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(x[0])) == 0);
  };
  return &a == &b || (a.w.rows == b.w.rows && a.w.cols == b.w.cols && same_bits(a.w.col_ptr, b.w.col_ptr) &&
                      same_bits(a.w.row_idx, b.w.row_idx) && same_bits(a.w.values, b.w.values) &&
                      same_bits(a.bias, b.bias));
}

}  // namespace lockstep::chip
