#include "harness/store/sample.h"

#include "harness/stats/stats.h"

namespace pairbench::harness {

double process_value(const Sample& s) {
  return s.batches.size() >= 3 ? stats::median(s.batches) : s.metric_value;
}

}  // namespace pairbench::harness
