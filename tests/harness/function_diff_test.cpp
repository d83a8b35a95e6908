// Where a regression's instructions went: the gate's per-function diff on synthetic run files
// (which functions, in which order, bounds for unlisted ones, and why a time-only or perf-counted
// benchmark has none), and end to end: planted work in one function of bench_timing's timed region,
// counted by callgrind, is named first by `pairbench compare`.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/exec/instructions.h"
#include "harness/exec/process.h"
#include "harness/gate/gate.h"
#include "harness/gate/print.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

nlohmann::json environment() {
  return {{"cpu_model", "Test CPU"}, {"cpu_count", 2},           {"gpu_name", ""},
          {"gpu_count", 0},          {"cuda_driver_version", 0}, {"build_type", "Release"},
          {"compiler", "GNU 12"},    {"compiler_flags", "-O3"},  {"machine_key", "k"}};
}

// A run of demo.x: time processes per benchmark, and the counter the run used.
nlohmann::json run_doc(const std::map<std::string, std::vector<double>>& times,
                       const std::string& counter = "callgrind") {
  nlohmann::json doc = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
  for (const auto& [name, values] : times) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      doc["benchmarks"].push_back({{"name", name},
                                   {"experiment", "demo.x"},
                                   {"arm", "a"},
                                   {"real_time", 1.0},
                                   {"repetition_index", i},
                                   {"metric_value", values[i]}});
    }
  }
  doc["pairbench"] = {
      {"schema_version", 1},
      {"environment", environment()},
      {"not_run", nlohmann::json::array()},
      {"instructions", nlohmann::json::array()},
      {"sampling",
       {{"instruction_counter", counter},
        {"instruction_processes", counter == "none" ? 0 : 2},
        {"instruction_counter_note", counter == "none" ? "not requested (--instruction-processes 0)" : ""}}},
      {"experiments", {{{"name", "demo.x"}, {"metric", "ns_per_op"}, {"unit", "ns"}, {"better", "lower"}}}}};
  return doc;
}

// Two counting processes of `name` with these functions (per iteration); `counted`: how many
// functions the process had in all (more than listed: the rest are summed in `other`).
void add_counts(nlohmann::json& doc, const std::string& name, const std::map<std::string, double>& functions,
                double other = 0, bool with_functions = true) {
  double total = other;
  nlohmann::json top = nlohmann::json::array();
  for (const auto& [f, v] : functions) {
    top.push_back({{"function", f}, {"instructions_per_iteration", v}});
    total += v;
  }
  for (int p = 0; p < 2; ++p) {
    nlohmann::json e = {{"name", name}, {"experiment", "demo.x"}, {"arm", "a"}, {"instructions_per_iteration", total}};
    if (with_functions) {
      e["functions"] = {{"cost", "self"},
                        {"event", "Ir"},
                        {"top", top},
                        {"other_per_iteration", other},
                        {"functions_counted", static_cast<int>(functions.size()) + (other > 0 ? 5 : 0)}};
    }
    doc["pairbench"]["instructions"].push_back(e);
  }
}

const BenchmarkVerdict& row(const GateReport& r, const std::string& name, Instrument instrument) {
  for (const auto& v : r.rows) {
    if (v.benchmark == name && v.instrument == instrument) return v;
  }
  throw std::runtime_error("no row " + name);
}

const std::vector<double> kSame = {100, 101, 99, 100, 100.5, 99.5, 100, 100.2, 99.8};
const std::vector<double> kSlower = {130, 131, 129, 130, 130.5, 129.5, 130, 130.2, 129.8};

TEST(FunctionDiff, ARegressionListsTheFunctionsThatAddedMostFirst) {
  auto base = run_doc({{"b", kSame}}), cur = run_doc({{"b", kSlower}});
  add_counts(base, "b", {{"kernel(float const*)", 1000}, {"helper()", 200}, {"memcpy", 50}, {"gone()", 30}}, 10);
  add_counts(cur, "b", {{"kernel(float const*)", 1400}, {"helper()", 260}, {"memcpy", 50}, {"fresh<int>()", 90}}, 10);
  const GateReport r = compare_runs(base, cur, {}, "a", "b");
  const BenchmarkVerdict& v = row(r, "b", Instrument::instructions);
  ASSERT_EQ(v.verdict, Verdict::regression);
  ASSERT_EQ(v.functions.size(), 3u);  // memcpy unchanged and gone() fell: not listed
  EXPECT_EQ(v.functions[0].function, "kernel(float const*)");
  EXPECT_DOUBLE_EQ(v.functions[0].change(), 400);
  EXPECT_EQ(v.functions[1].function, "fresh<int>()");
  // Not in the baseline's top: its value there is at most the least listed or the rest, 10.
  EXPECT_TRUE(v.functions[1].baseline_bound);
  EXPECT_DOUBLE_EQ(v.functions[1].baseline, 10);
  EXPECT_EQ(v.functions[2].function, "helper()");
  EXPECT_DOUBLE_EQ(v.functions_total_change, 1810 - 1290);
  // The time row of the same benchmark points to it, once.
  EXPECT_EQ(row(r, "b", Instrument::time).verdict, Verdict::regression);
  EXPECT_TRUE(row(r, "b", Instrument::time).functions.empty());
  EXPECT_NE(row(r, "b", Instrument::time).functions_note.find("[instructions] row"), std::string::npos);

  std::ostringstream table;
  print_gate_table(table, r);
  const std::string t = table.str();
  ASSERT_NE(t.find("    functions that added the most instructions per iteration (callgrind, self): +540.0 of the "
                   "benchmark's +520.0"),
            std::string::npos)
      << t;
  EXPECT_LT(t.find("kernel(float const*)"), t.find("fresh<int>()")) << t;
  EXPECT_NE(t.find("<=10.0"), std::string::npos) << t;
  const std::string md = gate_markdown(r);
  EXPECT_NE(md.find("### Where it changed: instructions per iteration by function"), std::string::npos) << md;
  EXPECT_NE(md.find("| kernel(float const\\*) | 1,000 | 1,400 | +400.0 |"), std::string::npos) << md;
  const nlohmann::json j = gate_json(r);
  bool found = false;
  for (const auto& b : j["benchmarks"]) {
    if (b["instrument"] == "instructions") {
      found = true;
      EXPECT_EQ(b["function_diff"][0]["function"], "kernel(float const*)");
      EXPECT_EQ(b["function_diff"][0]["change"], 400.0);
    }
  }
  EXPECT_TRUE(found);
  EXPECT_NE(gate_junit(r).find("kernel(float const*)"), std::string::npos);
}

TEST(FunctionDiff, AnImprovementListsTheFunctionsThatRemovedMost) {
  auto base = run_doc({{"b", kSame}}), cur = run_doc({{"b", kSame}});
  add_counts(base, "b", {{"kernel()", 1000}, {"helper()", 200}});
  add_counts(cur, "b", {{"kernel()", 600}, {"helper()", 210}});
  const GateReport r = compare_runs(base, cur, {}, "a", "b");
  const BenchmarkVerdict& v = row(r, "b", Instrument::instructions);
  ASSERT_EQ(v.verdict, Verdict::improvement);
  ASSERT_EQ(v.functions.size(), 1u);
  EXPECT_EQ(v.functions[0].function, "kernel()");
  EXPECT_DOUBLE_EQ(v.functions[0].change(), -400);
  // Unchanged rows carry nothing.
  EXPECT_TRUE(row(r, "b", Instrument::time).functions_note.empty());
}

TEST(FunctionDiff, WithoutABreakdownARegressionSaysWhy) {
  // Time only: the run counted, but the experiment declares no counts.
  GateReport r = compare_runs(run_doc({{"t", kSame}}), run_doc({{"t", kSlower}}), {}, "a", "b");
  EXPECT_EQ(row(r, "t", Instrument::time).functions_note,
            "no function diff: no instruction counts: its experiment declares them not meaningful (time only)");
  // A run without counting.
  r = compare_runs(run_doc({{"t", kSame}}, "none"), run_doc({{"t", kSlower}}, "none"), {}, "a", "b");
  EXPECT_EQ(row(r, "t", Instrument::time).functions_note,
            "no function diff: no instruction counts in that run: not requested (--instruction-processes 0)");
  // Counted with perf: totals only.
  auto base = run_doc({{"p", kSame}}, "perf"), cur = run_doc({{"p", kSlower}}, "perf");
  add_counts(base, "p", {{"f()", 100}}, 0, false);
  add_counts(cur, "p", {{"f()", 130}}, 0, false);
  r = compare_runs(base, cur, {}, "a", "b");
  for (const Instrument i : {Instrument::time, Instrument::instructions}) {
    EXPECT_EQ(row(r, "p", i).verdict, Verdict::regression);
    EXPECT_EQ(
        row(r, "p", i).functions_note,
        "no function diff: counted with perf: a hardware counter gives the total only, no per-function breakdown");
  }
  std::ostringstream table;
  print_gate_table(table, r);
  EXPECT_NE(table.str().find("    no function diff: counted with perf"), std::string::npos) << table.str();
  // A baseline from before the breakdown, a current run with one.
  base = run_doc({{"o", kSame}});
  cur = run_doc({{"o", kSame}});
  add_counts(base, "o", {{"f()", 100}}, 0, false);
  add_counts(cur, "o", {{"f()", 130}});
  r = compare_runs(base, cur, {}, "a", "b");
  EXPECT_EQ(row(r, "o", Instrument::instructions).functions_note,
            "no function diff: the baseline: its counts carry no per-function totals (a run file from before them)");
}

// --- End to end -------------------------------------------------------------------------------

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/pairbench-funcdiff-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Two runs of bench_timing's timing.work (work:1000 and work:100000, about 6,000 and 1.2 million
// instructions per iteration), the second with 5000 work loops planted in every timed region
// (PAIRBENCH_INJECT_LOOPS: 25,000 more instructions per iteration, +2 % of the larger, all in
// injected_work_loop); counted by callgrind, 2 processes a side, few iterations (about 6 s).
TEST(FunctionDiffEndToEnd, PlantedWorkIsTheTopOfTheDiff) {
  if (choose_instruction_counter("callgrind").name != "callgrind") GTEST_SKIP() << "skipped: valgrind is not installed";
  TempDir dir;
  auto run = [&](const std::string& out, const std::map<std::string, std::string>& env) {
    return run_process(
        {PAIRBENCH_EXE, "run", "--bench-dir", TIMING_BENCH_DIR, "--experiments", "timing.work", "--repetitions", "2",
         "--no-history", "--min-time", "0.002", "--calibration", dir.path + "/cal.json", "--out", out,
         "--instruction-processes", "2", "--instructions", "callgrind"},
        env, std::chrono::seconds(600));
  };
  const ProcessResult a = run(dir.path + "/a.json", {});
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const ProcessResult b = run(dir.path + "/b.json", {{"PAIRBENCH_INJECT_LOOPS", "5000"}});
  ASSERT_EQ(b.exit_code, 0) << b.output;

  // The run file: each counting process's top functions and the rest add up to its count.
  const nlohmann::json doc = read(dir.path + "/a.json");
  EXPECT_EQ(doc["pairbench"]["sampling"]["instruction_functions"].get<std::string>().rfind("callgrind:", 0), 0u);
  ASSERT_FALSE(doc["pairbench"]["instructions"].empty());
  for (const auto& e : doc["pairbench"]["instructions"]) {
    const auto& f = e.at("functions");
    double sum = f["other_per_iteration"].get<double>();
    for (const auto& t : f["top"]) sum += t["instructions_per_iteration"].get<double>();
    EXPECT_NEAR(sum, e["instructions_per_iteration"].get<double>(), 1e-6 * sum) << e.dump();
    EXPECT_LE(f["top"].size(), 20u);
    EXPECT_EQ(f["top"][0]["function"].get<std::string>().find("_Z"), std::string::npos) << "demangled";
  }

  const ProcessResult gate = run_process({PAIRBENCH_EXE, "compare", dir.path + "/a.json", dir.path + "/b.json",
                                          "--json", dir.path + "/gate.json", "--markdown", dir.path + "/gate.md"},
                                         {}, std::chrono::seconds(120));
  EXPECT_EQ(gate.exit_code, 1) << gate.output;
  const nlohmann::json g = read(dir.path + "/gate.json");
  int named = 0;
  for (const auto& row : g["benchmarks"]) {
    if (row["instrument"] != "instructions") continue;
    ASSERT_EQ(row["verdict"], "regression") << row.dump();
    ASSERT_FALSE(row["function_diff"].empty()) << row.dump();
    const auto& top = row["function_diff"][0];
    EXPECT_NE(top["function"].get<std::string>().find("injected_work_loop"), std::string::npos) << row.dump();
    // 5000 loops of kInjectedInstructionsPerLoop in every counted region.
    EXPECT_NEAR(top["change"].get<double>(), 5000 * kInjectedInstructionsPerLoop, 50) << row.dump();
    ++named;
  }
  EXPECT_EQ(named, 2);  // work:1000 and work:100000
  const std::string table = gate.output;
  const auto at = table.find("[instructions]");
  ASSERT_NE(at, std::string::npos) << table;
  EXPECT_NE(table.find("injected_work_loop", at), std::string::npos) << table;
}

}  // namespace
}  // namespace pairbench::harness
