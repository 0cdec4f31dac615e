// Chip decision-unit coverage of a campaign (decisions.h).
#include "lockstep/mutate/decisions.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

namespace lockstep::mutate {

namespace {

using nlohmann::json;

std::string bits_hex(const std::vector<bool>& b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; 4 * i < b.size(); ++i) {
    unsigned v = 0;
    for (unsigned k = 0; k < 4; ++k)
      if (4 * i + k < b.size() && b[4 * i + k]) v |= 1u << k;
    s += digits[v];
  }
  return s;
}

std::vector<bool> hex_bits(const std::string& s, std::size_t n, const char* what) {
  if (s.size() != (n + 3) / 4) throw std::invalid_argument(std::string("decision coverage: ") + what + " has the wrong length");
  std::vector<bool> b(n, false);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto v = std::string_view("0123456789abcdef").find(s[i]);
    if (v == std::string_view::npos) throw std::invalid_argument(std::string("decision coverage: ") + what + " is not hex");
    for (unsigned k = 0; k < 4; ++k)
      if (v >> k & 1) {
        if (4 * i + k >= n) throw std::invalid_argument(std::string("decision coverage: ") + what + " has bits past its units");
        b[4 * i + k] = true;
      }
  }
  return b;
}

std::size_t count(const std::vector<bool>& b) {
  std::size_t n = 0;
  for (bool x : b) n += x;
  return n;
}

}  // namespace

std::size_t DecisionSummary::Layer::both() const {
  std::size_t n = 0;
  for (std::size_t u = 0; u < active.size(); ++u) n += active[u] && inactive[u];
  return n;
}

DecisionSummary DecisionSummary::from(const chip::DecisionCoverage& c) {
  DecisionSummary d;
  d.recorded = true;
  for (std::size_t l = 0; l < c.layers.size(); ++l) {
    Layer L;
    L.evaluations = c.layers[l].evaluations;
    for (std::size_t u = 0; u < c.layers[l].active.size(); ++u) {
      L.active.push_back(c.seen_active(l, u));
      L.inactive.push_back(c.seen_inactive(l, u));
    }
    for (std::uint64_t w : c.layers[l].head_writes) L.head_wrote.push_back(w > 0);
    d.layers.push_back(std::move(L));
  }
  return d;
}

DecisionSummary DecisionSummary::unavailable(const std::string& why) {
  DecisionSummary d;
  d.note = why;
  return d;
}

std::size_t DecisionSummary::units() const {
  std::size_t n = 0;
  for (const Layer& l : layers) n += l.active.size();
  return n;
}
std::size_t DecisionSummary::both() const {
  std::size_t n = 0;
  for (const Layer& l : layers) n += l.both();
  return n;
}
std::size_t DecisionSummary::only_active() const {
  std::size_t n = 0;
  for (const Layer& l : layers)
    for (std::size_t u = 0; u < l.active.size(); ++u) n += l.active[u] && !l.inactive[u];
  return n;
}
std::size_t DecisionSummary::only_inactive() const {
  std::size_t n = 0;
  for (const Layer& l : layers)
    for (std::size_t u = 0; u < l.active.size(); ++u) n += !l.active[u] && l.inactive[u];
  return n;
}
double DecisionSummary::percent() const { return units() ? 100.0 * static_cast<double>(both()) / static_cast<double>(units()) : 0.0; }

void DecisionSummary::merge(const DecisionSummary& o) {
  if (!o.recorded) {
    if (!recorded && note.empty()) note = o.note;
    return;
  }
  if (!recorded) {
    *this = o;
    return;
  }
  bool same = layers.size() == o.layers.size();
  for (std::size_t l = 0; same && l < layers.size(); ++l)
    same = layers[l].active.size() == o.layers[l].active.size() && layers[l].head_wrote.size() == o.layers[l].head_wrote.size();
  if (!same) throw std::invalid_argument("decision coverage: records of differently shaped chips cannot be merged");
  for (std::size_t l = 0; l < layers.size(); ++l) {
    Layer& a = layers[l];
    const Layer& b = o.layers[l];
    a.evaluations += b.evaluations;
    for (std::size_t u = 0; u < a.active.size(); ++u) {
      a.active[u] = a.active[u] || b.active[u];
      a.inactive[u] = a.inactive[u] || b.inactive[u];
    }
    for (std::size_t h = 0; h < a.head_wrote.size(); ++h) a.head_wrote[h] = a.head_wrote[h] || b.head_wrote[h];
  }
}

json DecisionSummary::to_json() const {
  json j = {{"recorded", recorded}, {"units", units()}, {"both_sides", both()}, {"only_active", only_active()},
            {"only_inactive", only_inactive()}, {"percent", percent()}, {"note", note}};
  json ls = json::array();
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const Layer& L = layers[l];
    std::size_t oa = 0, oi = 0;
    for (std::size_t u = 0; u < L.active.size(); ++u) {
      oa += L.active[u] && !L.inactive[u];
      oi += !L.active[u] && L.inactive[u];
    }
    ls.push_back({{"layer", l}, {"units", L.active.size()}, {"both_sides", L.both()}, {"only_active", oa},
                  {"only_inactive", oi}, {"evaluations", L.evaluations}, {"heads", L.head_wrote.size()},
                  {"heads_writing", count(L.head_wrote)}, {"seen_active", bits_hex(L.active)},
                  {"seen_inactive", bits_hex(L.inactive)}, {"head_wrote", bits_hex(L.head_wrote)}});
  }
  j["layers"] = ls;
  return j;
}

DecisionSummary DecisionSummary::from_json(const json& j) {
  DecisionSummary d;
  try {
    d.recorded = j.at("recorded").get<bool>();
    d.note = j.value("note", "");
    for (const json& L : j.at("layers")) {
      Layer l;
      const std::size_t n = L.at("units").get<std::size_t>(), h = L.at("heads").get<std::size_t>();
      l.evaluations = L.at("evaluations").get<std::uint64_t>();
      l.active = hex_bits(L.at("seen_active").get<std::string>(), n, "seen_active");
      l.inactive = hex_bits(L.at("seen_inactive").get<std::string>(), n, "seen_inactive");
      l.head_wrote = hex_bits(L.at("head_wrote").get<std::string>(), h, "head_wrote");
      d.layers.push_back(std::move(l));
    }
  } catch (const json::exception& e) {
    throw std::invalid_argument(std::string("decision coverage: malformed JSON: ") + e.what());
  }
  return d;
}

std::string DecisionSummary::text() const {
  if (!recorded) return "chip decision units: not recorded (" + (note.empty() ? std::string("no record") : note) + ")\n";
  char line[256];
  std::snprintf(line, sizeof line,
                "chip decision units: %zu of %zu seen both sides (%.1f%%); %zu only active, %zu only inactive\n", both(),
                units(), percent(), only_active(), only_inactive());
  return line;
}

}  // namespace lockstep::mutate
