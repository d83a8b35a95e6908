// The experiment catalogue as the harness reads it: declared figures (carried as declared,
// refused when they name an axis, arm or counter the experiment lacks), the Markdown table of
// `pairbench list --format markdown`, and the README markers it is written between.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "harness/exec/catalogue.h"

namespace pairbench::harness {
namespace {

nlohmann::json listing() {
  return nlohmann::json::parse(R"({
    "schema_version": 1,
    "experiments": [{
      "name": "demo.loader", "claim": "C5", "question": "Do more workers | threads help?", "timing": "wall_clock",
      "kind": "comparison",
      "metric": {"name": "samples_per_second", "unit": "samples/s", "better": "higher"},
      "axes": [{"name": "device", "values": ["cpu", "cuda"]}, {"name": "batch", "values": ["16", "64"]}],
      "arms": [{"name": "w0", "role": "baseline", "env": {}},
               {"name": "w2", "role": "treatment", "env": {"OMP_NUM_THREADS": "2"}}],
      "targets": [],
      "figure": {"kind": "scaling", "x_axis": "batch", "x_scale": "log", "y_scale": "linear",
                 "counter": "idle_fraction", "arm_axis": "workers", "arm_values": {"w0": 0, "w2": 2}},
      "benchmarks": [{"name": "demo.loader/w0/device:cpu/batch:16", "arm": "w0",
                      "params": {"device": "cpu", "batch": "16"}, "available": true, "reason": ""}]
    }, {
      "name": "demo.peak", "claim": "", "question": "What is the peak?", "timing": "wall_clock", "kind": "limit",
      "metric": {"name": "flop_per_second", "unit": "FLOP/s", "better": "higher"},
      "axes": [], "arms": [{"name": "fma", "role": "limit", "env": {}}], "targets": [], "benchmarks": []
    }]})");
}

TEST(Catalogue, DeclaredFigureIsCarriedAsDeclared) {
  const auto experiments = parse_catalogue(listing(), "bench_demo");
  ASSERT_TRUE(experiments[0].figure.has_value());
  const FigureEntry& f = *experiments[0].figure;
  EXPECT_EQ(f.kind, "scaling");
  EXPECT_EQ(f.x_axis, "batch");
  EXPECT_EQ(f.x_scale, "log");
  EXPECT_EQ(f.y_scale, "linear");
  EXPECT_EQ(f.counter, "idle_fraction");
  EXPECT_EQ(f.arm_axis, "workers");
  const std::vector<std::pair<std::string, double>> values = {{"w0", 0.0}, {"w2", 2.0}};
  EXPECT_EQ(f.arm_values, values);
  // Into `pairbench list --format json` (and the run file) unchanged.
  const nlohmann::json out = catalogue_to_json(experiments);
  EXPECT_EQ(out[0]["figure"], listing()["experiments"][0]["figure"]);
  // A binary built before figures were declared lists none: nothing is made up for it.
  EXPECT_FALSE(experiments[1].figure.has_value());
  EXPECT_FALSE(out[1].contains("figure"));
}

// Issue 23: a benchmark's declared threads drive duet scheduling; a listing without them (a binary
// built before they were declared, which `ab` may run) means one thread.
TEST(Catalogue, ThreadsAreReadAndAbsentMeansOne) {
  nlohmann::json l = listing();
  nlohmann::json second = l["experiments"][0]["benchmarks"][0];
  second["name"] = "demo.loader/w2/device:cpu/batch:16";
  second["arm"] = "w2";
  second["threads"] = 3;
  l["experiments"][0]["benchmarks"].push_back(second);
  const auto experiments = parse_catalogue(l, "bench_demo");
  ASSERT_EQ(experiments[0].benchmarks.size(), 2u);
  EXPECT_EQ(experiments[0].benchmarks[0].threads, 1);
  EXPECT_EQ(experiments[0].benchmarks[1].threads, 3);
  EXPECT_EQ(catalogue_to_json(experiments)[0]["benchmarks"][1]["threads"], 3);
  for (const nlohmann::json bad : {nlohmann::json(0), nlohmann::json("2"), nlohmann::json(1.5)}) {
    l["experiments"][0]["benchmarks"][1]["threads"] = bad;
    try {
      parse_catalogue(l, "bench_demo");
      ADD_FAILURE() << "accepted threads " << bad.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("benchmarks[1].threads"), std::string::npos) << e.what();
    }
  }
}

// A binary built before checks were made optional lists no check_on_request: it would refuse
// --pairbench_check, so every process of it (and of the other side of an ab) checks.
TEST(Catalogue, CheckOnRequestIsReadAndAbsentMeansEveryProcessChecks) {
  nlohmann::json l = listing();
  nlohmann::json second = l["experiments"][0]["benchmarks"][0];
  second["name"] = "demo.loader/w2/device:cpu/batch:16";
  second["arm"] = "w2";
  second["check_on_request"] = true;
  l["experiments"][0]["benchmarks"].push_back(second);
  const auto experiments = parse_catalogue(l, "bench_demo");
  ASSERT_EQ(experiments[0].benchmarks.size(), 2u);
  EXPECT_FALSE(experiments[0].benchmarks[0].check_on_request);
  EXPECT_TRUE(experiments[0].benchmarks[1].check_on_request);
  EXPECT_EQ(catalogue_to_json(experiments)[0]["benchmarks"][1]["check_on_request"], true);
  l["experiments"][0]["benchmarks"][1]["check_on_request"] = "yes";
  try {
    parse_catalogue(l, "bench_demo");
    ADD_FAILURE() << "accepted check_on_request \"yes\"";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("check_on_request"), std::string::npos) << e.what();
  }
}

// How a binary was built (its listing's `build`), on every experiment it lists, for ab to compare
// two builds by what their binaries say; absent (a binary built before it said) means nothing
// known, and a value that is not a string or a boolean is refused by its field path.
TEST(Catalogue, BuildFactsAreReadAndAbsentMeansNothingKnown) {
  nlohmann::json l = listing();
  EXPECT_TRUE(parse_catalogue(l, "bench_demo")[0].build.empty());
  l["build"] = {{"build_type", "Release"}, {"built_with_cuda", false}};
  const auto experiments = parse_catalogue(l, "bench_demo");
  for (const auto& e : experiments) EXPECT_EQ(e.build, l["build"]) << e.name;
  l["build"]["built_with_cuda"] = 1;
  try {
    parse_catalogue(l, "bench_demo");
    ADD_FAILURE() << "accepted built_with_cuda 1";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("build.built_with_cuda"), std::string::npos) << e.what();
  }
}

TEST(Catalogue, AFigureNamingWhatTheExperimentLacksIsRefusedByFieldPath) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](auto& f) { f["kind"] = "pie"; },
       "experiments[0].figure.kind: expected one of metric, accuracy, scaling, memory"},
      {[](auto& f) { f["x_scale"] = "symlog"; }, "experiments[0].figure.x_scale: expected one of auto, linear, log"},
      {[](auto& f) { f["x_axis"] = "bytes"; },
       "experiments[0].figure.x_axis: expected empty or one of the grid's axes (device, batch)"},
      {[](auto& f) { f["kind"] = "accuracy", f["counter"] = ""; },
       "experiments[0].figure.counter: expected the counter a 'accuracy' figure draws"},
      {[](auto& f) { f["arm_values"]["w9"] = 9; },
       "experiments[0].figure.arm_values.w9: expected a number for one of "
       "the experiment's arms (arm 'w9' is not one)"},
      {[](auto& f) { f["arm_values"].erase("w2"); },
       "experiments[0].figure.arm_values: expected a number for every arm of a 'scaling' figure (2 arms)"},
      {[](auto& f) { f["arm_values"]["w2"] = "two"; }, "experiments[0].figure.arm_values.w2: expected a number"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.expected);
    nlohmann::json bad = listing();
    c.edit(bad["experiments"][0]["figure"]);
    try {
      parse_catalogue(bad, "bench_demo");
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("bench_demo --pairbench_list: " + c.expected), std::string::npos)
          << e.what();
    }
  }
}

TEST(Catalogue, MarkdownTableHasOneRowPerExperimentAndNothingMachineDependent) {
  auto experiments = parse_catalogue(listing(), "bench_demo");
  const std::string table = catalogue_to_markdown(experiments, "quick");
  EXPECT_EQ(table,
            "| experiment | claim | question | arms (baseline first) | metric | timing | grid (quick) |\n"
            "|---|---|---|---|---|---|---|\n"
            "| `demo.loader` | C5 | Do more workers \\| threads help? | w0, w2 (env) | `samples_per_second` (higher) | "
            "wall_clock | device cpu/cuda × batch 16/64 |\n"
            "| `demo.peak` | limit | What is the peak? | fma | `flop_per_second` (higher) | wall_clock | — |\n");
  // Whether an arm can run here is not in it: the README's copy must not depend on the machine.
  experiments[0].benchmarks[0].available = false;
  experiments[0].benchmarks[0].reason = "no CUDA device";
  EXPECT_EQ(catalogue_to_markdown(experiments, "quick"), table);
}

TEST(Catalogue, MarkedSectionIsReplacedBetweenWholeMarkerLines) {
  const std::string begin = kTableBeginMarker, end = kTableEndMarker;
  const std::string doc = "intro mentions " + begin + " inline\n" + begin + "\nold\nrows\n" + end + "\noutro\n";
  const std::string once = replace_marked_section(doc, "| new |\n", "README.md");
  EXPECT_EQ(once, "intro mentions " + begin + " inline\n" + begin + "\n| new |\n" + end + "\noutro\n");
  EXPECT_EQ(replace_marked_section(once, "| new |\n", "README.md"), once);  // idempotent

  for (const std::string& bad : {std::string("no markers\n"), begin + "\n" + begin + "\n" + end + "\n",
                                 end + "\n" + begin + "\n", begin + "\nno end\n"}) {
    SCOPED_TRACE(bad);
    try {
      replace_marked_section(bad, "| new |\n", "README.md");
      ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("README.md: expected one line " + begin, 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace pairbench::harness
