// Chip decision-unit coverage of a campaign (fuzz/README.md, "Chip decision units"): which of
// the compiled chip's threshold decisions (MLP hidden units, chip::DecisionCoverage) a workload
// saw on both sides. Built from an executor's record, written to and read from fuzz.json, and
// merged across shards (a unit seen active in one shard and inactive in another counts as seen
// on both sides of the campaign).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lockstep/chip/backend.hpp"

namespace lockstep::mutate {

struct DecisionSummary {
  struct Layer {
    std::uint64_t evaluations = 0;    ///< (stream, step) pairs that ran the layer
    std::vector<bool> active;         ///< per hidden unit: seen active (pre-activation > 0)
    std::vector<bool> inactive;       ///< per hidden unit: seen inactive (<= 0)
    std::vector<bool> head_wrote;     ///< per head: seen with beta != 0
    std::size_t both() const;         ///< units seen on both sides
  };
  std::vector<Layer> layers;  ///< one per chip layer; empty when not recorded
  bool recorded = false;      ///< false: the backend keeps no record (`note` says why)
  std::string note;

  /// From an executor's record (chip::ChipBackend::decision_coverage()).
  static DecisionSummary from(const chip::DecisionCoverage& c);
  /// Not recorded, with the reason (e.g. the backend's UsageError message).
  static DecisionSummary unavailable(const std::string& why);
  std::size_t units() const;
  std::size_t both() const;
  std::size_t only_active() const;    ///< seen active, never inactive
  std::size_t only_inactive() const;  ///< seen inactive, never active (incl. never evaluated: none)
  double percent() const;             ///< 100 * both / units (0 when no units)
  /// Union of what both saw (evaluations add up). Two unrecorded summaries stay unrecorded; a
  /// recorded one wins over an unrecorded one. Throws std::invalid_argument when the layer or
  /// unit counts differ (records of different chips).
  void merge(const DecisionSummary& other);
  /// {"recorded", "units", "both_sides", "only_active", "only_inactive", "percent", "note",
  ///  "layers": [{"layer", "units", "both_sides", "only_active", "only_inactive", "evaluations",
  ///  "heads", "heads_writing", "seen_active", "seen_inactive", "head_wrote"}]}; the last three
  /// are bit sets in hex: digit i (from the left) holds units 4i..4i+3, its lowest bit unit 4i.
  nlohmann::json to_json() const;
  /// Inverse of to_json. Throws std::invalid_argument (one line) on a malformed object.
  static DecisionSummary from_json(const nlohmann::json& j);
  /// "chip decision units: X of Y seen both sides (Z%); A only active, I only inactive\n", or
  /// "chip decision units: not recorded (why)\n".
  std::string text() const;
};

}  // namespace lockstep::mutate
