#include "harness/store/sample.h"

#include "harness/stats/stats.h"

namespace pairbench::harness {

double process_value(const Sample& s) { return s.batches.size() >= 3 ? stats::median(s.batches) : s.metric_value; }

double process_value(const nlohmann::json& b) {
  const auto batches = b.value("metric_batches", std::vector<double>{});
  return batches.size() >= 3 ? stats::median(batches) : b.at("metric_value").get<double>();
}

}  // namespace pairbench::harness
