// The main of every bench binary. Besides Google Benchmark's own flags it takes:
//   --pairbench_list             print the experiment catalogue as JSON and exit
//   --pairbench_profile=NAME     grid profile: quick (default), nightly, full
//   --pairbench_only=NAME        register just this one benchmark (the harness runs one per process)
//   --pairbench_iterations=N     run exactly N iterations (the harness's calibrated count) instead
//                                of Google Benchmark's min-time ramp, which re-runs the arm's set-up
//   --pairbench_batches=R        split the iterations into R consecutive batches (in-process samples)
//   --pairbench_record=PATH      write the timed regions' record (batches, instructions) as JSON
//   --pairbench_plan=PATH        run several benchmarks in this one process, in the plan's order:
//                                {"benchmarks": [{"name", "iterations" (0 = Google Benchmark's
//                                ramp), "out", "record"}]}; as each one ends, its Google Benchmark
//                                JSON goes to its "out" and its timed-region record to its
//                                "record" (atomically), so a crash later loses nothing of it
//   --pairbench_check=0          the arm's check before timing is not due here (experiment.h,
//                                check_due); a plan entry says it with "check": false
//   --pairbench_count_instructions=callgrind|perf
//                                count user-space instructions inside the timed regions
// Exit status 1 when any arm failed or was incorrect (not_supported arms are not failures).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench/common/experiment.h"
#include "bench/common/timed_region.h"
#include "bench/common/work.h"
#include "kernels/common/layout.h"
#include "kernels/common/pages.h"
#include "pairbench/build_info.h"

namespace pairbench::bench {
namespace {

constexpr int kCatalogueSchemaVersion = 1;

const char* better_name(Better b) { return b == Better::kHigher ? "higher" : "lower"; }
const char* time_relation_name(TimeRelation r) {
  switch (r) {
    case TimeRelation::kProportional:
      return "proportional";
    case TimeRelation::kInverse:
      return "inverse";
    default:
      return "none";
  }
}

const char* test_name(VerdictCheck::Test t) {
  switch (t) {
    case VerdictCheck::Test::kSame:
      return "same";
    case VerdictCheck::Test::kPlateau:
      return "plateau";
    default:
      return "better";
  }
}

// One check as the harness reads it (harness/exec/catalogue.cpp); the defaults resolved here, once.
nlohmann::json verdict_check_json(const VerdictCheck& c) {
  nlohmann::json j = {
      {"test", test_name(c.test)}, {"treatments", c.treatments}, {"where", c.where}, {"exclude", c.exclude}};
  if (c.test == VerdictCheck::Test::kBetter) {
    j["threshold"] = c.threshold;
    j["equivalence"] = c.equivalence > 0 ? c.equivalence : 1.02;
  } else if (c.test == VerdictCheck::Test::kSame) {
    j["tolerance"] = c.tolerance;
  } else {
    j["equivalence"] = c.equivalence > 0 ? c.equivalence : 1.05;
  }
  if (!c.why.empty()) j["why"] = c.why;
  if (!c.analogue.empty()) j["analogue"] = c.analogue;
  return j;
}

const char* figure_kind_name(FigureKind k) {
  switch (k) {
    case FigureKind::kAccuracy:
      return "accuracy";
    case FigureKind::kScaling:
      return "scaling";
    case FigureKind::kMemory:
      return "memory";
    default:
      return "metric";
  }
}
const char* scale_name(Scale s) {
  switch (s) {
    case Scale::kLinear:
      return "linear";
    case Scale::kLog:
      return "log";
    default:
      return "auto";
  }
}

nlohmann::json figure_json(const Figure& f) {
  return {{"kind", figure_kind_name(f.kind)}, {"x_axis", f.x_axis},   {"x_scale", scale_name(f.x_scale)},
          {"y_scale", scale_name(f.y_scale)}, {"counter", f.counter}, {"arm_axis", f.arm_axis},
          {"arm_values", f.arm_values}};
}

// How this binary was built, under the fingerprint's names (harness/exec/environment.cpp): what
// ab compares between two builds, whose bench binaries are what it times.
nlohmann::json build_facts() {
  const auto trimmed = [](std::string s) {
    const auto b = s.find_first_not_of(" \t\n");
    return b == std::string::npos ? std::string() : s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
  };
  return {{"build_type", PAIRBENCH_BUILD_TYPE},
          {"compiler", PAIRBENCH_CXX_COMPILER},
          {"compiler_flags", trimmed(PAIRBENCH_CXX_FLAGS)},
          {"cuda_compiler", trimmed(PAIRBENCH_CUDA_COMPILER)},
          {"cuda_architectures", PAIRBENCH_CUDA_ARCHITECTURES},
          {"built_with_cuda", static_cast<bool>(PAIRBENCH_HAVE_CUDA)}};
}

nlohmann::json catalogue(const std::string& profile, const char* binary) {
  nlohmann::json out = {{"schema_version", kCatalogueSchemaVersion},
                        {"binary", binary},
                        {"profile", profile},
                        {"build", build_facts()},
                        {"experiments", nlohmann::json::array()}};
  for (ExperimentFactory factory : registered_experiments()) {
    const Experiment e = factory();
    nlohmann::json je = {{"name", e.name},
                         {"claim", e.claim},
                         {"question", e.question},
                         {"timing", timing_name(e.timing)},
                         {"metric",
                          {{"name", e.metric.name},
                           {"unit", e.metric.unit},
                           {"better", better_name(e.metric.better)},
                           {"time_relation", time_relation_name(resolved_time_relation(e.metric))}}},
                         {"kind", e.is_limit ? "limit" : "comparison"},
                         {"figure", figure_json(e.figure)},
                         {"gate_threshold", e.gate_threshold},
                         {"instructions_gate_threshold", e.instructions_gate_threshold},
                         {"axes", nlohmann::json::array()},
                         {"arms", nlohmann::json::array()},
                         {"targets", nlohmann::json::array()},
                         {"limits", nlohmann::json::array()},
                         {"benchmarks", nlohmann::json::array()}};
    for (const Axis& axis : e.grid) {
      Experiment one{.grid = {axis}};
      nlohmann::json values = nlohmann::json::array();
      for (const Point& p : grid_points(one, profile)) values.push_back(p.get(axis.name));
      je["axes"].push_back({{"name", axis.name}, {"values", values}});
    }
    for (std::size_t i = 0; i < e.arms.size(); ++i) {
      const Arm& arm = e.arms[i];
      je["arms"].push_back(
          {{"name", arm.name}, {"role", e.is_limit ? "limit" : (i == 0 ? "baseline" : "treatment")}, {"env", arm.env}});
    }
    for (const Target& t : e.targets) {
      je["targets"].push_back({{"arm", t.arm}, {"where", t.where}, {"bound", t.bound}, {"text", t.text}});
    }
    je["secondary"] = nlohmann::json::array();
    for (const Metric& m : e.secondary) {
      je["secondary"].push_back({{"name", m.name}, {"unit", m.unit}, {"better", better_name(m.better)}});
    }
    je["verdict"] = nlohmann::json::array();
    for (const VerdictCheck& c : e.verdict) je["verdict"].push_back(verdict_check_json(c));
    for (const LimitRef& l : e.limits) {
      nlohmann::json also = nlohmann::json::array();
      for (const LimitSource& c : l.also)
        also.push_back({{"experiment", c.experiment}, {"arm", c.arm}, {"where", c.where}});
      je["limits"].push_back({{"experiment", l.experiment},
                              {"arm", l.arm},
                              {"where", l.where},
                              {"arms", l.arms},
                              {"when", l.when},
                              {"counter", l.counter},
                              {"also", also},
                              {"own_arms", l.own_arms}});
    }
    for (const Point& p : grid_points(e, profile)) {
      for (const Arm& arm : e.arms) {
        if (arm.applies && !arm.applies(p)) continue;
        const std::string reason = arm.unavailable ? arm.unavailable(p) : std::string();
        nlohmann::json params = nlohmann::json::object();
        nlohmann::json order = nlohmann::json::array();
        for (const auto& [axis, value] : p.items()) {
          params[axis] = value;
          order.push_back(axis);
        }
        je["benchmarks"].push_back({{"name", benchmark_name(e, arm, p)},
                                    {"arm", arm.name},
                                    {"params", params},
                                    {"available", reason.empty()},
                                    {"reason", reason},
                                    {"instructions", e.instructions && e.instructions(arm, p)},
                                    {"threads", threads_at(e, arm, p)},
                                    {"cuda", uses_cuda(e, arm, p)},
                                    // It waits at PAIRBENCH_START_GATE before its first timed region.
                                    {"start_gate", true},
                                    // It may run in a process with others (--pairbench_plan).
                                    {"shared_process", !e.own_process},
                                    // It takes --pairbench_check (experiment.h, check_due).
                                    {"check_on_request", true}});
      }
    }
    out["experiments"].push_back(je);
  }
  return out;
}

// One benchmark of the shared main: not_supported where its arm cannot run here; `iterations` > 0
// fixes the iteration count (no min-time ramp); `check`: whether its check before timing is due.
void register_one(const Experiment& e, const Arm& arm, const Point& p, const std::string& name, std::int64_t iterations,
                  bool check) {
  const std::string reason = arm.unavailable ? arm.unavailable(p) : std::string();
  const Timing timing = timing_at(e, p);
  const bool gpu = uses_cuda(e, arm, p);
  auto* b =
      benchmark::RegisterBenchmark(name.c_str(), [run = arm.run, p, reason, timing, gpu, check](benchmark::State& s) {
        declare_gpu_use(gpu);
        set_check_due(check);
        if (!reason.empty()) {
          s.SkipWithError(("not_supported: " + reason).c_str());
          return;
        }
        try {
          reset_timed_regions(s.max_iterations);
          declare_timing(timing);  // the framework's loops check the arm times the way it declares
          run(s, p);
        } catch (const NotSupported& ex) {
          s.SkipWithError((std::string("not_supported: ") + ex.what()).c_str());
        } catch (const std::exception& ex) {
          s.SkipWithError((std::string("failed: ") + ex.what()).c_str());
        }
      });
  b->UseManualTime()->Unit(benchmark::kMicrosecond);
  if (iterations > 0) b->Iterations(iterations);
}

// Calls `f(experiment, arm, point, name)` for every benchmark of the profile.
template <class F>
void for_each_benchmark(const std::string& profile, F&& f) {
  for (ExperimentFactory factory : registered_experiments()) {
    const Experiment e = factory();
    for (const Point& p : grid_points(e, profile)) {
      for (const Arm& arm : e.arms) {
        if (arm.applies && !arm.applies(p)) continue;
        f(e, arm, p, benchmark_name(e, arm, p));
      }
    }
  }
}

// Registers every benchmark of the profile (or just `only`); returns how many.
int register_benchmarks(const std::string& profile, const std::string& only, std::int64_t iterations, bool check) {
  int count = 0;
  for_each_benchmark(profile, [&](const Experiment& e, const Arm& arm, const Point& p, const std::string& name) {
    if (!only.empty() && name != only) return;
    register_one(e, arm, p, name, iterations, check);
    ++count;
  });
  return count;
}

// One benchmark of a --pairbench_plan: where its outputs go.
struct PlannedBenchmark {
  std::string name, out, record;
  std::int64_t iterations = 0;
  bool check = true;  // its check before timing is due (experiment.h, check_due)
};

// Reads a --pairbench_plan file; "" and the plan, or why it cannot be used.
std::string read_plan(const std::string& path, std::vector<PlannedBenchmark>& plan) {
  std::ifstream in(path);
  if (!in) return path + ": cannot read";
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    for (const auto& b : doc.at("benchmarks")) {
      PlannedBenchmark p{b.at("name").get<std::string>(), b.at("out").get<std::string>(),
                         b.at("record").get<std::string>(), b.value("iterations", std::int64_t{0}),
                         b.value("check", true)};
      if (p.iterations < 0) return path + ": " + p.name + ": iterations must be >= 0";
      plan.push_back(std::move(p));
    }
  } catch (const nlohmann::json::exception& e) {
    return path + ": " + e.what();
  }
  if (plan.empty()) return path + ": no benchmarks";
  return "";
}

// Registers the plan's benchmarks in its order (Google Benchmark runs them in registration order);
// "" or the first name the profile does not have. `shares_memory`: whether every planned
// benchmark's experiment may share a process (none measures the process's own heap or pages).
std::string register_plan(const std::string& profile, const std::vector<PlannedBenchmark>& plan, bool& shares_memory) {
  std::map<std::string, std::function<void(std::int64_t, bool)>> registrars;
  std::map<std::string, bool> own_process;
  for_each_benchmark(profile, [&](const Experiment& e, const Arm& arm, const Point& p, const std::string& name) {
    registrars[name] = [e, arm, p, name](std::int64_t iterations, bool check) {
      register_one(e, arm, p, name, iterations, check);
    };
    own_process[name] = e.own_process;
  });
  shares_memory = true;
  for (const PlannedBenchmark& b : plan) {
    const auto it = registrars.find(b.name);
    if (it == registrars.end()) return b.name;
    it->second(b.iterations, b.check);
    shares_memory = shares_memory && !own_process[b.name];
  }
  return "";
}

// Console output as usual, and a note of every arm that failed or was wrong. Under a plan, as each
// benchmark ends: its Google Benchmark JSON (the library's own JSON reporter, for this one run)
// and its timed-region record with the second of the process's life it ended at.
class FailureTrackingReporter : public benchmark::ConsoleReporter {
 public:
  explicit FailureTrackingReporter(const std::vector<PlannedBenchmark>* plan = nullptr) : plan_(plan) {}
  bool ReportContext(const Context& context) override {
    context_ = &context;
    return ConsoleReporter::ReportContext(context);
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.error_occurred && run.error_message.rfind("not_supported:", 0) != 0) ++failures_;
    }
    ConsoleReporter::ReportRuns(runs);
    if (plan_ && !runs.empty()) write_planned_outputs(runs);
  }
  int failures() const { return failures_; }
  bool write_failed() const { return write_failed_; }

 private:
  void write_planned_outputs(const std::vector<Run>& runs) {
    const std::string& name = runs.front().run_name.function_name;
    const auto it =
        std::find_if(plan_->begin(), plan_->end(), [&](const PlannedBenchmark& b) { return b.name == name; });
    if (it == plan_->end()) return;
    std::ostringstream json, errors;
    benchmark::JSONReporter reporter;
    reporter.SetOutputStream(&json);
    reporter.SetErrorStream(&errors);
    if (context_) reporter.ReportContext(*context_);
    reporter.ReportRuns(runs);
    reporter.Finalize();
    const double finished_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    if (!write_file_atomically(it->out, json.str()) || !write_timed_region_record(it->record, finished_s)) {
      std::cerr << "cannot write " << it->out << " or " << it->record << "\n";
      write_failed_ = true;
    }
  }

  const std::vector<PlannedBenchmark>* plan_;
  const Context* context_ = nullptr;  // Google Benchmark's, alive while the benchmarks run
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  int failures_ = 0;
  bool write_failed_ = false;
};

}  // namespace
}  // namespace pairbench::bench

int main(int argc, char** argv) {
  using namespace pairbench::bench;
  keep_start_gate_from_children();
  // Layout randomisation (kernels/common/layout.h): under a layout seed, a heap block of 0-4080
  // bytes, held for the process's life, moves every later small allocation by that much within its
  // page, a different amount in every process. Never touched after.
  if (const auto seed = pairbench::kernels::process_layout_seed()) {
    static volatile void* heap_shift =
        std::malloc(pairbench::kernels::layout_offset_bytes(*seed, /*draw=*/~std::uint64_t{0}, /*alignment=*/16) + 1);
    (void)heap_shift;
  }
  bool list = false;
  std::string profile = "quick";
  std::string only, record_path, plan_path;
  std::int64_t iterations = 0;
  int batches = 1;
  bool check = true;
  InstructionCounter counter = InstructionCounter::kNone;
  std::vector<char*> rest;
  // Numeric flag values: whole positive numbers only; anything else is a usage error.
  auto positive = [&](const std::string& arg, const char* flag, std::int64_t* out) {
    const std::string v = arg.substr(std::strlen(flag));
    char* end = nullptr;
    const long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n <= 0) {
      std::cerr << argv[0] << ": " << flag << " wants a whole number > 0, got '" << v << "'\n";
      return false;
    }
    *out = n;
    return true;
  };
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--pairbench_list") {
      list = true;
    } else if (arg.rfind("--pairbench_profile=", 0) == 0) {
      profile = arg.substr(std::strlen("--pairbench_profile="));
    } else if (arg.rfind("--pairbench_only=", 0) == 0) {
      only = arg.substr(std::strlen("--pairbench_only="));
    } else if (arg.rfind("--pairbench_iterations=", 0) == 0) {
      if (!positive(arg, "--pairbench_iterations=", &iterations)) return 2;
    } else if (arg.rfind("--pairbench_batches=", 0) == 0) {
      std::int64_t n = 0;
      if (!positive(arg, "--pairbench_batches=", &n)) return 2;
      batches = static_cast<int>(std::min<std::int64_t>(n, 1000));
    } else if (arg == "--pairbench_check=0" || arg == "--pairbench_check=1") {
      check = arg.back() == '1';
    } else if (arg.rfind("--pairbench_check=", 0) == 0) {
      std::cerr << argv[0] << ": --pairbench_check: 0 or 1, got '" << arg.substr(std::strlen("--pairbench_check="))
                << "'\n";
      return 2;
    } else if (arg.rfind("--pairbench_plan=", 0) == 0) {
      plan_path = arg.substr(std::strlen("--pairbench_plan="));
    } else if (arg.rfind("--pairbench_record=", 0) == 0) {
      record_path = arg.substr(std::strlen("--pairbench_record="));
    } else if (arg.rfind("--pairbench_count_instructions=", 0) == 0) {
      const std::string v = arg.substr(std::strlen("--pairbench_count_instructions="));
      if (v == "callgrind") {
        counter = InstructionCounter::kCallgrind;
      } else if (v == "perf") {
        counter = InstructionCounter::kPerf;
      } else {
        std::cerr << argv[0] << ": --pairbench_count_instructions: 'callgrind' or 'perf', got '" << v << "'\n";
        return 2;
      }
    } else if (arg.rfind("--pairbench", 0) == 0) {
      std::cerr << argv[0] << ": unknown flag " << arg << "\n";
      return 2;
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (profile != "quick" && profile != "nightly" && profile != "full") {
    std::cerr << argv[0] << ": --pairbench_profile: unknown profile '" << profile << "' (quick, nightly, full)\n";
    return 2;
  }
  if (list) {
    std::cout << catalogue(profile, argv[0]).dump(2) << "\n";
    return 0;
  }
  int rest_argc = static_cast<int>(rest.size());
  rest.push_back(nullptr);
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 2;
  configure_timed_regions(counter, batches);
  std::vector<PlannedBenchmark> plan;
  if (!plan_path.empty()) {
    if (!only.empty() || !record_path.empty() || iterations > 0 || !check) {
      std::cerr << argv[0] << ": --pairbench_plan names each benchmark's iterations, outputs and check: not with "
                << "--pairbench_only, --pairbench_record, --pairbench_iterations or --pairbench_check\n";
      return 2;
    }
    if (const std::string why = read_plan(plan_path, plan); !why.empty()) {
      std::cerr << argv[0] << ": --pairbench_plan: " << why << "\n";
      return 2;
    }
    bool shares_memory = false;
    if (const std::string unknown = register_plan(profile, plan, shares_memory); !unknown.empty()) {
      std::cerr << argv[0] << ": --pairbench_plan: no benchmark named '" << unknown << "'\n";
      return 2;
    }
    // Benchmarks after the first reuse the set-up buffers earlier ones freed instead of fresh
    // pages: that part of set-up is paid once per process, not per benchmark (kernels/common/pages.h).
    if (shares_memory && plan.size() > 1) pairbench::kernels::reuse_page_buffers();
  } else if (register_benchmarks(profile, only, iterations, check) == 0 && !only.empty()) {
    std::cerr << argv[0] << ": --pairbench_only: no benchmark named '" << only << "'\n";
    return 2;
  }
  FailureTrackingReporter reporter(plan.empty() ? nullptr : &plan);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  if (!record_path.empty() && !write_timed_region_record(record_path)) return 1;
  return reporter.failures() > 0 || reporter.write_failed() ? 1 : 0;
}
