// Change points in a benchmark's history: where its per-run medians stepped to a new level. The
// same detection for every history back end; `pairbench history` stores what it finds.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "harness/store/history.h"

namespace pairbench::harness {

// A robust step detector for a series of positive values (e.g. per-run medians; it works on
// their logarithms, so steps are relative): binary segmentation that splits where the CUSUM
// statistic peaks, scores the split by the difference of segment medians over the series' noise
// (robust scale of consecutive differences) times sqrt(nL*nR/n), and keeps the split when that
// score exceeds `min_score` and the step exceeds `min_relative_step` in absolute value. Returns
// split indices (the first index of each new segment), ascending. Segments shorter than
// `min_segment` are never made. Throws std::invalid_argument for an empty series or a value <= 0.
std::vector<std::size_t> detect_change_points(std::span<const double> series, double min_score = 6.0,
                                              double min_relative_step = 0.02, std::size_t min_segment = 3);

struct FoundChangePoint {
  std::size_t index;           // into the series' points: the first run at the new level
  History::ChangePoint point;  // that run, and the medians of the segments before and after it
};
// The change points of one benchmark's series (its per-run medians), each with the median of
// the segment before and after it. A series with a median <= 0 (a metric that can be zero) has
// none: the detector works on logarithms.
std::vector<FoundChangePoint> find_change_points(const History::Series& series);

}  // namespace pairbench::harness
