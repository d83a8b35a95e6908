// The words run files are made of, typed: each enum has exactly one to_string and one from_string
// (std::nullopt for a word it does not know), both from one table of names, so a misspelt
// verification or instrument does not compile and a run file's unknown word is named where read.
// Verdicts of the gate (gate/verdict.h) and of claims (analysis/claims.h) use the same helper.
#pragma once

#include <array>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pairbench::harness {

// One enum's names, in enumerator order: `Names<E, N>{{{E::a, "a"}, ...}}`.
template <typename E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

template <typename E, std::size_t N>
constexpr std::string_view name_in(const NameTable<E, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

template <typename E, std::size_t N>
constexpr std::optional<E> value_in(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// How a benchmark process ended (CUTLASS profiler's vocabulary); not_run: no process of an arm
// ran (the summary's word for an arm without processes).
enum class Verification { passed, incorrect, not_verified, not_supported, failed, not_run };
inline constexpr NameTable<Verification, 6> kVerificationNames{{{Verification::passed, "passed"},
                                                                {Verification::incorrect, "incorrect"},
                                                                {Verification::not_verified, "not_verified"},
                                                                {Verification::not_supported, "not_supported"},
                                                                {Verification::failed, "failed"},
                                                                {Verification::not_run, "not_run"}}};
inline std::string to_string(Verification v) { return std::string(name_in(kVerificationNames, v)); }
inline std::optional<Verification> verification_from_string(std::string_view s) {
  return value_in(kVerificationNames, s);
}
// A process whose value counts: it ran and either checked its answer or has none to check.
inline bool has_usable_value(Verification v) { return v == Verification::passed || v == Verification::not_verified; }
// The process went wrong (as opposed to being unsupported here or unverifiable).
inline bool went_wrong(Verification v) { return v == Verification::failed || v == Verification::incorrect; }

// What a process measured: its experiment's deciding metric over time, or instructions per iteration.
enum class Instrument { time, instructions };
inline constexpr NameTable<Instrument, 2> kInstrumentNames{
    {{Instrument::time, "time"}, {Instrument::instructions, "instructions"}}};
inline std::string to_string(Instrument i) { return std::string(name_in(kInstrumentNames, i)); }
inline std::optional<Instrument> instrument_from_string(std::string_view s) { return value_in(kInstrumentNames, s); }

// No implicit JSON: nlohmann would write an enum as its number. Write to_string(v) and read
// with *_from_string, so that the word is what a file holds and an unknown one is named.
void to_json(nlohmann::json&, Verification) = delete;
void from_json(const nlohmann::json&, Verification&) = delete;
void to_json(nlohmann::json&, Instrument) = delete;
void from_json(const nlohmann::json&, Instrument&) = delete;

}  // namespace pairbench::harness
