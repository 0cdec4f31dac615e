#include "lockstep/format/tokens.h"

#include <array>
#include <bit>
#include <cstdio>

namespace lockstep::format {

static_assert(std::endian::native == std::endian::little,
              "lockstep assumes a little-endian host (guest memory and files are little-endian)");

namespace {

constexpr std::array<KindInfo, 81> kKinds{{
    {0, "CTRL", false, 1},  {1, "W0", false, 256},  {2, "W1", false, 256},
    {3, "W2", false, 256},  {4, "W3", false, 256},  {5, "A0", false, 256},
    {6, "A1", false, 256},  {7, "A2", false, 256},  {8, "A3", false, 256},
    {9, "S0", false, 256},  {10, "S1", false, 256}, {11, "S2", false, 256},
    {12, "S3", false, 256}, {13, "BR", false, 2},   {14, "DQ", false, 64},
    {15, "CF", false, 2},   {16, "AC0", false, 256}, {17, "AC1", false, 256},
    {18, "AC2", false, 256}, {19, "AC3", false, 256}, {20, "AC4", false, 256},
    {21, "AC5", false, 256}, {22, "AC6", false, 256}, {23, "AC7", false, 256},
    {24, "AC8", false, 256}, {25, "AC9", false, 256}, {26, "AC10", false, 256},
    {27, "AC11", false, 256}, {28, "OUT", false, 256}, {29, "ERR", false, 256},
    {30, "NOP", false, 1},  {31, "EXIT", false, 256}, {32, "TRAP", false, 256},
    // vector.md §5 (trace-v3; 8-bit payloads, no wide kinds)
    {33, "VMC0", false, 256}, {34, "VMC1", false, 256}, {35, "VMC2", false, 256},
    {36, "VMC3", false, 256}, {37, "VMC4", false, 256}, {38, "VMC5", false, 256},
    {39, "VMH", false, 17},   {40, "VMV", false, 64},   {41, "VRD", false, 16},
    {42, "VQE", false, 186},  {43, "VWG", false, 256},
    // trace.md §2: pc tokens and ECALL write byte indices
    {44, "PCL", false, 256}, {45, "PCH0", false, 256}, {46, "PCH1", false, 256},
    {47, "PCH2", false, 256}, {48, "PCH3", false, 256}, {49, "OI", false, 256},
    {50, "OIH", false, 256},
    // vector.md §5 (continued)
    {51, "VY0", false, 256},  {52, "VY1", false, 256},  {53, "VY2", false, 256},
    {54, "VY3", false, 256},  {55, "VYN3", false, 256}, {56, "VLG", false, 256},
    {57, "VLB0", false, 256}, {58, "VLB1", false, 256}, {59, "VLB2", false, 256},
    {60, "VLB3", false, 256},
    {61, "VW00", false, 256}, {62, "VW01", false, 256}, {63, "VW02", false, 256},
    {64, "VW03", false, 256}, {65, "VW10", false, 256}, {66, "VW11", false, 256},
    {67, "VW12", false, 256}, {68, "VW13", false, 256}, {69, "VW20", false, 256},
    {70, "VW21", false, 256}, {71, "VW22", false, 256}, {72, "VW23", false, 256},
    {73, "VW30", false, 256}, {74, "VW31", false, 256}, {75, "VW32", false, 256},
    {76, "VW33", false, 256},
    {77, "VXM0", false, 256}, {78, "VXM1", false, 256}, {79, "VXM2", false, 256},
    {80, "VXM3", false, 256},
}};

std::optional<KindInfo> find_kind(std::uint32_t kind_number) {
  for (const KindInfo& k : kKinds) {
    if (k.kind == kind_number || (k.wide && kind_number > k.kind && kind_number < k.kind + 256)) return k;
  }
  return std::nullopt;
}

}  // namespace

std::span<const KindInfo> kinds() { return kKinds; }

std::optional<KindInfo> kind_of(std::uint32_t id) {
  auto k = find_kind(id / 256);
  if (!k || id - 256u * k->kind >= k->payload_limit) return std::nullopt;
  return k;
}

std::optional<KindInfo> kind_named(std::string_view name) {
  for (const KindInfo& k : kKinds) {
    if (k.name == name) return k;
  }
  return std::nullopt;
}

std::uint32_t payload_of(std::uint32_t id) {
  auto k = find_kind(id / 256);
  return k ? id - 256u * k->kind : id % 256;
}

bool is_valid_token(std::uint32_t id) { return kind_of(id).has_value(); }

std::uint32_t vocab_size() {
  const KindInfo& last = kKinds.back();
  return 256u * (last.kind + (last.wide ? 256u : 1u));
}

std::string stream_position(std::span<const std::uint32_t> tokens, std::size_t i) {
  if (i >= tokens.size()) return "";
  const auto kind = [&](std::size_t at) -> std::optional<std::uint32_t> {
    const auto k = kind_of(tokens[at]);
    return k && !k->wide ? std::optional<std::uint32_t>(k->kind) : std::nullopt;
  };
  const auto k = kind(i);
  if (!k) return "";
  const auto n = [](Kind x) { return static_cast<std::uint32_t>(x); };
  const auto in = [&](std::optional<std::uint32_t> kk, Kind lo, Kind hi) { return kk && *kk >= n(lo) && *kk <= n(hi); };
  const auto payload = [&](std::size_t at) { return tokens[at] & 0xff; };
  // the index of the last token before `before` whose kind is in [lo, hi]
  const auto last = [&](std::size_t before, Kind lo, Kind hi) -> std::optional<std::size_t> {
    for (std::size_t at = before; at-- > 0;)
      if (in(kind(at), lo, hi)) return at;
    return std::nullopt;
  };
  const auto row = [&](std::size_t chunk) {  // a VMC's row: its payload and the last VMH's r >> 8
    const auto high = last(chunk, Kind::VMH, Kind::VMH);
    return (high ? payload(*high) << 8 : 0u) | payload(chunk);
  };
  const std::uint32_t p = payload(i);
  if (in(k, Kind::VW00, Kind::VW33)) {
    const auto g = last(i, Kind::VWG, Kind::VWG);
    if (!g) return "";
    return "word element " + std::to_string(4 * payload(*g) + (*k - n(Kind::VW00)) / 4) + ", byte " +
           std::to_string((*k - n(Kind::VW00)) % 4);
  }
  if (*k == n(Kind::VWG)) return "word quad " + std::to_string(p);
  if (in(k, Kind::VLB0, Kind::VLB3)) {
    const auto g = last(i, Kind::VLG, Kind::VLG);
    if (!g) return "";
    return "int8 element " + std::to_string(4 * payload(*g) + (*k - n(Kind::VLB0)));
  }
  if (*k == n(Kind::VLG)) return "int8 group " + std::to_string(p);
  if (in(k, Kind::VMC0, Kind::VMC5)) return "row " + std::to_string(row(i)) + ", chunk " + std::to_string(*k - n(Kind::VMC0));
  if (*k == n(Kind::VMH)) return "rows from " + std::to_string(p << 8);
  if (in(k, Kind::VY0, Kind::VYN3)) {
    const auto chunk = last(i, Kind::VMC0, Kind::VMC5);  // the row's last chunk before its result
    if (!chunk) return "";
    const std::uint32_t byte = *k == n(Kind::VYN3) ? 3 : *k - n(Kind::VY0);
    return "row " + std::to_string(row(*chunk)) + "'s result, byte " + std::to_string(byte);
  }
  if (*k == n(Kind::VMV)) return "position " + std::to_string(p);
  if (*k == n(Kind::VRD)) return "source group " + std::to_string(p);
  if (*k == n(Kind::VQE)) return "group " + std::to_string(p >> 5);
  if (in(k, Kind::VXM0, Kind::VXM3)) {
    std::size_t groups = 0;  // VXM0 opens each group's maximum
    for (std::size_t at = 0; at <= i; ++at) groups += kind(at) == n(Kind::VXM0);
    if (groups == 0) return "";
    return "group " + std::to_string(groups - 1) + "'s maximum, byte " + std::to_string(*k - n(Kind::VXM0));
  }
  return "";
}

std::string token_name(std::uint32_t id) {
  char buf[64];
  if (id == kStartToken) return "START";
  if (id & kUnmappedChipId) return "unmapped chip id " + std::to_string(id & ~kUnmappedChipId);
  auto k = kind_of(id);
  if (!k) {
    // A payload past its kind's limit is named by that kind: it points at the kind a wrong id
    // came from (found by an outside tester: "?(10521)" hid a swapped VRD id).
    if (const auto near = find_kind(id / 256)) {
      std::snprintf(buf, sizeof buf, "?(%u: %.*s payload %u, outside %.*s's 0..%u)", id, static_cast<int>(near->name.size()),
                    near->name.data(), id - 256u * near->kind, static_cast<int>(near->name.size()), near->name.data(),
                    near->payload_limit - 1);
      return buf;
    }
    std::snprintf(buf, sizeof buf, "?(%u)", id);
    return buf;
  }
  const std::uint32_t p = id - 256u * k->kind;
  const std::string name(k->name);
  switch (static_cast<Kind>(k->kind)) {
    case Kind::BR:
    case Kind::CF:
    case Kind::NOP:
    case Kind::TRAP:
    case Kind::CTRL:
    case Kind::DQ:
    case Kind::OIH:
    case Kind::VMC0:
    case Kind::VMC1:
    case Kind::VMC2:
    case Kind::VMC3:
    case Kind::VMC4:
    case Kind::VMC5:
    case Kind::VMH:
    case Kind::VMV:
    case Kind::VRD:
    case Kind::VQE:
    case Kind::VWG:
    case Kind::VLG:
      std::snprintf(buf, sizeof buf, "%s(%u)", name.c_str(), p);
      break;
    default:
      std::snprintf(buf, sizeof buf, k->wide ? "%s(0x%04x)" : "%s(0x%02x)", name.c_str(), p);
  }
  return buf;
}

std::string_view trap_name(std::uint32_t code) {
  switch (code) {
    case 1: return "ILLEGAL_INSTRUCTION";
    case 2: return "FETCH_MISALIGNED";
    case 3: return "FETCH_FAULT";
    case 4: return "LOAD_MISALIGNED";
    case 5: return "LOAD_FAULT";
    case 6: return "STORE_MISALIGNED";
    case 7: return "STORE_FAULT";
    case 8: return "BAD_ECALL";
    case 9: return "EBREAK";
    case 16: return "VEC_FIELD";
    case 17: return "VEC_VREG";
    case 18: return "VEC_LEN";
    case 19: return "VEC_ACT";
    case 20: return "VEC_OVERLAP";
    case 21: return "VEC_WMEM";
    case 22: return "VEC_KV";
    case 23: return "VEC_POS";
    default: return "UNKNOWN";
  }
}

}  // namespace lockstep::format
