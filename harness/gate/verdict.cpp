// The names of the gate's vocabulary, one table per type: to_string and from_string read the same
// table, so the two cannot disagree.
#include "harness/gate/verdict.h"

#include <array>
#include <ostream>
#include <utility>

namespace pairbench::harness {
namespace {

template <class E, std::size_t N>
using Names = NameTable<E, N>;  // store/vocabulary.h: one helper for every word of the outputs

constexpr Names<Verdict, 8> kVerdicts{{{Verdict::regression, "regression"},
                                       {Verdict::improvement, "improvement"},
                                       {Verdict::unchanged, "unchanged"},
                                       {Verdict::undecided, "undecided"},
                                       {Verdict::broken, "broken"},
                                       {Verdict::missing, "missing"},
                                       {Verdict::new_, "new"},
                                       {Verdict::not_gated, "not_gated"}}};
constexpr Names<GateOutcome, 3> kOutcomes{
    {{GateOutcome::pass, "pass"}, {GateOutcome::regression, "regression"}, {GateOutcome::undecided, "undecided"}}};
constexpr Names<Correction, 2> kCorrections{{{Correction::holm, "holm"}, {Correction::bh, "bh"}}};
constexpr Names<UndecidedPolicy, 2> kUndecidedPolicies{
    {{UndecidedPolicy::fail, "fail"}, {UndecidedPolicy::pass, "pass"}}};
constexpr Names<Moderation, 2> kModerations{{{Moderation::eb, "eb"}, {Moderation::none, "none"}}};

template <class E, std::size_t N>
std::string name_of(const Names<E, N>& names, E value) {
  return std::string(name_in(names, value));
}

template <class E, std::size_t N>
std::optional<E> value_of(const Names<E, N>& names, std::string_view text) {
  return value_in(names, text);
}

}  // namespace

std::string to_string(Verdict v) { return name_of(kVerdicts, v); }
std::string to_string(GateOutcome o) { return name_of(kOutcomes, o); }
std::string to_string(Correction c) { return name_of(kCorrections, c); }
std::string to_string(UndecidedPolicy p) { return name_of(kUndecidedPolicies, p); }
std::string to_string(Moderation m) { return name_of(kModerations, m); }

std::optional<Verdict> verdict_from_string(std::string_view text) { return value_of(kVerdicts, text); }
std::optional<GateOutcome> gate_outcome_from_string(std::string_view text) { return value_of(kOutcomes, text); }
std::optional<Correction> correction_from_string(std::string_view text) { return value_of(kCorrections, text); }
std::optional<UndecidedPolicy> undecided_policy_from_string(std::string_view text) {
  return value_of(kUndecidedPolicies, text);
}
std::optional<Moderation> moderation_from_string(std::string_view text) { return value_of(kModerations, text); }

std::ostream& operator<<(std::ostream& out, Verdict v) { return out << to_string(v); }
std::ostream& operator<<(std::ostream& out, GateOutcome o) { return out << to_string(o); }
std::ostream& operator<<(std::ostream& out, Instrument i) { return out << to_string(i); }

}  // namespace pairbench::harness
