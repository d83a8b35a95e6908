// Rate counters from declared work (work.h) and the declared-vs-used timing check.
#include "bench/common/work.h"

#include <optional>

namespace pairbench::bench {

std::map<std::string, double> work_fields(const Work& work) {
  std::map<std::string, double> out;
  for (const auto& [name, value] : {std::pair<std::string, double>{"bytes", work.bytes},
                                    {"flop", work.flop},
                                    {"elements", work.elements},
                                    {"ops", work.ops}}) {
    if (value > 0) out[name] = value;
  }
  for (const auto& [name, value] : work.per_second) {
    if (value > 0) out[name] = value;
  }
  return out;
}

std::map<std::string, double> rate_counters(const Work& work, double iterations, double seconds) {
  std::map<std::string, double> out;
  if (!(iterations > 0) || !(seconds > 0)) return out;
  auto per_second = [&](const std::string& name, double per_iteration) {
    if (per_iteration > 0) out[name + "_per_second"] = per_iteration * iterations / seconds;
  };
  per_second("bytes", work.bytes);
  per_second("flop", work.flop);
  per_second("elements", work.elements);
  for (const auto& [name, per_iteration] : work.per_second) per_second(name, per_iteration);
  if (work.ops > 0) out["ns_per_op"] = seconds * 1e9 / (work.ops * iterations);
  return out;
}

void set_rate_counters(benchmark::State& state, const Work& work, double measured_s) {
  for (const auto& [name, value] : rate_counters(work, static_cast<double>(state.iterations()), measured_s)) {
    state.counters[name] = value;
  }
}

namespace {
// One benchmark runs per process (and one arm at a time in any process), so process-global.
std::optional<Timing>& declared_timing() {
  static std::optional<Timing> declared;
  return declared;
}
}  // namespace

void declare_timing(Timing declared) { declared_timing() = declared; }
void forget_declared_timing() { declared_timing().reset(); }

bool timing_matches_declaration(benchmark::State& state, Timing used) {
  const std::optional<Timing>& declared = declared_timing();
  if (!declared || *declared == used) return true;
  state.SkipWithError((std::string("failed: the arm timed with ") + timing_name(used) +
                       " but its experiment declares " + timing_name(*declared) + " at this point")
                          .c_str());
  return false;
}

}  // namespace pairbench::bench
