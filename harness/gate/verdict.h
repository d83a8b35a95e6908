// The gate's vocabulary as types: a benchmark's verdict, the gate's outcome and the gate's policies
// (the instrument a row measures is store/vocabulary.h's). Each has one to_string (the name the outputs and the command
// line use) and one *_from_string (std::nullopt for a name it does not know), so that a misspelt
// verdict does not compile.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

#include "harness/store/vocabulary.h"  // Instrument: a run file's word, shared with the writer

namespace pairbench::harness {

// not_gated: a time row between two runs gated only at a resolution too wide to mean anything
// (wider than kWidestGatedResolution, or its run-to-run noise borrowed for want of three runs of
// history): neither "unchanged" nor a regression; the nightly's confirmation takes it up where
// its estimate is beyond the threshold.
enum class Verdict { regression, improvement, unchanged, undecided, broken, missing, new_, not_gated };
// The widest resolution a time row between two runs is gated at and still counted (issue 38): a
// change of a quarter hides in anything wider.
inline constexpr double kWidestGatedResolution = 0.25;
// What the whole gate concludes: regression exits 1, undecided 4 or 0 by UndecidedPolicy.
enum class GateOutcome { pass, regression, undecided };
enum class Correction { holm, bh };         // family-wise (Holm) | false discovery rate (Benjamini-Hochberg)
enum class UndecidedPolicy { fail, pass };  // an undecided gate exits 4 | 0
enum class Moderation { eb, none };         // empirical-Bayes noise prior | each benchmark alone

std::string to_string(Verdict v);
std::string to_string(GateOutcome o);
std::string to_string(Correction c);
std::string to_string(UndecidedPolicy p);
std::string to_string(Moderation m);

std::optional<Verdict> verdict_from_string(std::string_view text);
std::optional<GateOutcome> gate_outcome_from_string(std::string_view text);
std::optional<Correction> correction_from_string(std::string_view text);
std::optional<UndecidedPolicy> undecided_policy_from_string(std::string_view text);
std::optional<Moderation> moderation_from_string(std::string_view text);

// The verdicts that fail the gate (exit 1): a slower benchmark, and one that stopped working.
constexpr bool fails_gate(Verdict v) { return v == Verdict::regression || v == Verdict::broken; }

// By name, so that test failures and diagnostics read "regression", not a number.
std::ostream& operator<<(std::ostream& out, Verdict v);
std::ostream& operator<<(std::ostream& out, GateOutcome o);
std::ostream& operator<<(std::ostream& out, Instrument i);

}  // namespace pairbench::harness
