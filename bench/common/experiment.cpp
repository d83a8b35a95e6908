// Experiment registry, grid expansion and benchmark naming.
#include "bench/common/experiment.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "bench/common/devices.h"
#include "bench/common/timed_region.h"
#include "kernels/common/cpus.h"
#include "kernels/common/device.h"

namespace pairbench::bench {

void Point::set(const std::string& axis, const std::string& value) {
  for (auto& [name, v] : items_) {
    if (name == axis) {
      v = value;
      return;
    }
  }
  items_.emplace_back(axis, value);
}

const std::string& Point::get(const std::string& axis) const {
  for (const auto& [name, v] : items_) {
    if (name == axis) return v;
  }
  throw std::out_of_range("grid point has no axis '" + axis + "'");
}

std::int64_t Point::get_int(const std::string& axis) const {
  const std::string& v = get(axis);
  std::int64_t out = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size()) {
    throw std::invalid_argument("axis '" + axis + "' value '" + v + "' is not an integer");
  }
  return out;
}

namespace {
std::vector<ExperimentFactory>& registry() {
  static std::vector<ExperimentFactory> factories;
  return factories;
}
}  // namespace

bool register_experiment(ExperimentFactory factory) {
  registry().push_back(factory);
  return true;
}

const std::vector<ExperimentFactory>& registered_experiments() { return registry(); }

std::string benchmark_name(const Experiment& e, const Arm& arm, const Point& point) {
  std::string name = e.name + "/" + arm.name;
  for (const auto& [axis, value] : point.items()) name += "/" + axis + ":" + value;
  return name;
}

static const std::vector<std::string>& axis_values(const Axis& axis, const std::string& profile) {
  if (profile == "full" && !axis.full.empty()) return axis.full;
  if ((profile == "full" || profile == "nightly") && !axis.nightly.empty()) return axis.nightly;
  return axis.quick;
}

std::vector<Point> grid_points(const Experiment& e, const std::string& profile) {
  std::vector<Point> points(1);
  for (const Axis& axis : e.grid) {
    std::vector<Point> next;
    for (const Point& p : points) {
      for (const std::string& value : axis_values(axis, profile)) {
        Point q = p;
        q.set(axis.name, value);
        next.push_back(q);
      }
    }
    points = std::move(next);
  }
  return points;
}

TimeRelation resolved_time_relation(const Metric& m) {
  if (m.time_relation != TimeRelation::kAuto) return m.time_relation;
  if (m.unit == "ns" || m.unit == "s") return TimeRelation::kProportional;
  if (m.unit.size() > 2 && m.unit.ends_with("/s")) return TimeRelation::kInverse;
  return TimeRelation::kNone;
}

bool cpu_point(const Arm&, const Point& p) {
  for (const auto& [axis, value] : p.items()) {
    if (axis == "device") return value == "cpu";
  }
  return true;
}

int threads_from_axis(const Point& p, const std::string& axis) {
  if (p.get(axis) == "all") return kernels::usable_cpus();
  return static_cast<int>(p.get_int(axis));
}

std::function<int(const Arm&, const Point&)> threads_at_cpu_points(int n) {
  return [n](const Arm& arm, const Point& p) { return cpu_point(arm, p) ? n : 1; };
}

int threads_at(const Experiment& e, const Arm& arm, const Point& p) {
  return e.threads ? std::max(1, e.threads(arm, p)) : 1;
}

bool uses_cuda(const Experiment& e, const Arm& arm, const Point& p) {
  if (arm.cuda || timing_at(e, p) == Timing::kCudaEvents) return true;
  for (const auto& [axis, value] : p.items()) {
    if (axis == "device") return value == "cuda";
  }
  return false;
}

namespace {
bool g_check_due = true;
}  // namespace

bool check_due() { return g_check_due; }
void set_check_due(bool due) { g_check_due = due; }

// "verified" 2: checked in another process of the run (the harness reads it, harness/exec/jobs.cpp).
void mark_checked_elsewhere(benchmark::State& state) {
  state.counters["verified"] = 2;
  note_verified();
}

void mark_verified(benchmark::State& state) {
  state.counters["verified"] = 1;
  note_verified();
}

void fail_verification(benchmark::State& state, const std::string& what) {
  state.SkipWithError(("incorrect: " + what).c_str());
}

Timing timing_at(const Experiment& e, const Point& p) {
  if (e.timing != Timing::kByDevice) return e.timing;
  return p.get("device") == "cuda" ? Timing::kCudaEvents : Timing::kWallClock;
}

const char* timing_name(Timing t) {
  switch (t) {
    case Timing::kCudaEvents:
      return "cuda_events";
    case Timing::kByDevice:
      return "by_device";
    default:
      return "wall_clock";
  }
}

const std::string& cuda_unavailable_reason() {
  static const std::string reason = kernels::cuda::device_unavailable_reason();  // asked once per process
  return reason;
}

}  // namespace pairbench::bench
