// ab's second look at the regime (harness/cli/run_record.h): which benchmarks the planned duet
// processes showed out of their regime, and how their processes measured again one side at a time
// replace the duet ones in both run files, the rest untouched.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/cli/run_record.h"
#include "harness/exec/calibration.h"

namespace pairbench::harness {
namespace {

// A side's time per iteration against its time in `run` (1 s per iteration there).
CalibrationRatio ratio(const std::string& name, int side, double r) {
  CalibrationRatio c;
  c.benchmark = name;
  c.side = side;
  c.observed_s_per_iteration = r;
  c.calibrated_s_per_iteration = 1.0;
  c.against_run = true;
  return c;
}

// Each side's check as run_ab makes it, from the ratios.
void check_sides(AbResult& r) {
  RunOutcome outcome;
  outcome.calibration_ratios = r.ratios;
  r.against_calibration = {calibration_check(outcome, 0, kAbCalibrationLimit),
                           calibration_check(outcome, 1, kAbCalibrationLimit)};
}

nlohmann::json ratio_json(const std::string& name, double r) {
  return {{"name", name}, {"ratio", r}, {"reference", "run"}};
}

// One side's run file: `n` duet processes of each benchmark named (pairs numbered across them),
// one failed timed process and one failed counting process of `b`.
nlohmann::json side_doc(const std::vector<std::string>& names, int n, const nlohmann::json& over,
                        const nlohmann::json& max) {
  nlohmann::json doc;
  doc["benchmarks"] = nlohmann::json::array();
  int pair = 0;
  for (const std::string& name : names) {
    for (int i = 0; i < n; ++i) {
      doc["benchmarks"].push_back({{"name", name}, {"repetition_index", i}, {"duet_pair", pair++}, {"real_time", 1.0}});
    }
  }
  doc["pairbench"]["not_run"] = nlohmann::json::array({{{"name", "b"}, {"instrument", "time"}, {"repetition_index", 1}},
                                                       {{"name", "b"}, {"instrument", "instructions"}}});
  doc["pairbench"]["sampling"]["sequential_in_duet"] =
      nlohmann::json::array({{{"name", "wide"}, {"threads", 2}, {"reason", "2 threads per side need 4 cores"}}});
  doc["pairbench"]["sampling"]["against_calibration"] = {{"limit", 1.5}, {"over", over}, {"max", max}};
  return doc;
}

// The planned look: a and b in duet, `wide` one side at a time for its threads. b ran 1.9x and
// 1.8x (the two sides), `wide` 2.4x (not a duet effect: it already ran alone), a 1.1x.
AbResult planned() {
  AbResult r;
  const nlohmann::json over = nlohmann::json::array({ratio_json("wide", 2.4), ratio_json("b", 1.9)});
  r.baseline = side_doc({"a", "b"}, 4, over, ratio_json("wide", 2.4));
  r.candidate = side_doc({"a", "b"}, 4, nlohmann::json::array({ratio_json("b", 1.8)}), ratio_json("b", 1.8));
  r.sequential_in_duet = {{"wide", 2, "2 threads per side need 4 cores"}};
  r.ratios = {ratio("a", 0, 1.1), ratio("b", 0, 1.9), ratio("wide", 0, 2.4),
              ratio("a", 1, 1.1), ratio("b", 1, 1.8), ratio("wide", 1, 1.0)};
  check_sides(r);
  return r;
}

// b again, one side at a time: 4 processes per side without duet pairs, at 1.05x.
AbResult alone() {
  AbResult r;
  for (auto* doc : {&r.baseline, &r.candidate}) {
    (*doc)["benchmarks"] = nlohmann::json::array();
    for (int i = 0; i < 4; ++i)
      (*doc)["benchmarks"].push_back({{"name", "b"}, {"repetition_index", i}, {"real_time", 2.0}});
    (*doc)["pairbench"]["not_run"] = nlohmann::json::array();
    (*doc)["pairbench"]["sampling"]["sequential_in_duet"] = nlohmann::json::array(
        {{{"name", "b"}, {"threads", 1}, {"reason", "its planned duet processes ran above 1.5x"}}});
  }
  r.sequential_in_duet = {{"b", 1, "its planned duet processes ran above 1.5x"}};
  r.ratios = {ratio("b", 0, 1.05), ratio("b", 1, 1.05)};
  check_sides(r);
  return r;
}

TEST(AbRegime, OutliersAreTheDuetBenchmarksAboveTheLimitOnEitherSide) {
  // `wide` ran one side at a time already: its ratio is not the duet's doing.
  EXPECT_EQ(regime_outliers(planned()), std::set<std::string>{"b"});
  AbResult none = planned();
  for (CalibrationRatio& c : none.ratios) {
    if (c.benchmark == "b") c.observed_s_per_iteration = 1.4;
  }
  check_sides(none);
  EXPECT_TRUE(regime_outliers(none).empty());
}

TEST(AbRegime, ProcessesMeasuredAloneReplaceTheDuetOnesAndTheCheckIsTheirs) {
  AbResult r = planned();
  replace_processes(r, alone(), {"b"});
  for (const nlohmann::json* doc : {&r.baseline, &r.candidate}) {
    int a = 0, b = 0;
    std::multiset<int> b_reps;
    for (const auto& row : (*doc)["benchmarks"]) {
      if (row["name"] == "a") {
        ++a;
        EXPECT_TRUE(row.contains("duet_pair"));  // untouched
      } else {
        ++b;
        EXPECT_FALSE(row.contains("duet_pair")) << row;  // only the processes measured alone
        EXPECT_EQ(row["real_time"], 2.0);
        b_reps.insert(row["repetition_index"].get<int>());
      }
    }
    EXPECT_EQ(a, 4);
    EXPECT_EQ(b, 4);
    EXPECT_EQ(b_reps, (std::multiset<int>{0, 1, 2, 3}));  // each in its own place, from 0
    // b's failed timed process was of the duet and goes; its failed counting process stays.
    ASSERT_EQ((*doc)["pairbench"]["not_run"].size(), 1u);
    EXPECT_EQ((*doc)["pairbench"]["not_run"][0]["instrument"], "instructions");
    const auto& sampling = (*doc)["pairbench"]["sampling"];
    ASSERT_EQ(sampling["sequential_in_duet"].size(), 2u);
    EXPECT_EQ(sampling["sequential_in_duet"][1]["name"], "b");
    for (const auto& c : sampling["against_calibration"]["over"]) EXPECT_NE(c["name"], "b");
  }
  // The checks made again from every ratio: the baseline keeps `wide` over the limit and as its
  // highest; the candidate's highest is now a's 1.1x (not b's new 1.05x: the highest of all).
  EXPECT_EQ(r.baseline["pairbench"]["sampling"]["against_calibration"]["over"].size(), 1u);
  EXPECT_EQ(r.baseline["pairbench"]["sampling"]["against_calibration"]["max"]["name"], "wide");
  EXPECT_TRUE(r.candidate["pairbench"]["sampling"]["against_calibration"]["over"].empty());
  EXPECT_EQ(r.candidate["pairbench"]["sampling"]["against_calibration"]["max"]["name"], "a");
  EXPECT_DOUBLE_EQ(r.candidate["pairbench"]["sampling"]["against_calibration"]["max"]["ratio"].get<double>(), 1.1);
  // The same in the result the terminal lines come from.
  ASSERT_EQ(r.against_calibration[0].over.size(), 1u);
  EXPECT_EQ(r.against_calibration[0].over[0].name, "wide");
  EXPECT_EQ(r.against_calibration[0].max->name, "wide");
  EXPECT_TRUE(r.against_calibration[1].over.empty());
  EXPECT_EQ(r.against_calibration[1].max->name, "a");
  EXPECT_EQ(r.ratios.size(), 6u);  // b's two replaced, not added
  ASSERT_EQ(r.sequential_in_duet.size(), 2u);
  EXPECT_EQ(r.sequential_in_duet[1].benchmark, "b");
  EXPECT_TRUE(regime_outliers(r).empty());
}

// The regime probe's findings kept per machine (ProcessWalls::duet_probe): a later ab probes only
// the benchmarks without a finding younger than kDuetProbeDays and takes the others' regime.
TEST(AbRegime, AProbeFindingIsKeptAWeekAndOnlyTheRestAreProbed) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("pairbench_duet_probe_" + std::to_string(getpid()) + ".json"))
          .string();
  {
    CalibrationCache cache(path);
    cache.record_duet_probe("apart_now", true, "a duet probe ran it above 1.5x its time per iteration in run");
    cache.record_duet_probe("together_now", false, "");
    cache.record_duet_probe("together_old", false, "");
    ASSERT_EQ(cache.save(), "");
  }
  {  // age one finding past the week, as a cache written eight days ago holds it
    std::ifstream in(path);
    nlohmann::json doc = nlohmann::json::parse(in);
    std::time_t old = std::time(nullptr) - 8 * 86400;
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&old));
    doc["process_walls"]["together_old"]["duet_probe"]["at"] = stamp;
    std::ofstream(path) << doc.dump();
  }
  CalibrationCache cache(path);
  ASSERT_EQ(cache.load_problem(), "");
  ASSERT_NE(cache.walls("apart_now"), nullptr);
  ASSERT_TRUE(cache.walls("apart_now")->duet_probe.has_value());
  EXPECT_TRUE(cache.walls("apart_now")->duet_probe->apart);
  EXPECT_FALSE(cache.walls("together_now")->duet_probe->apart);

  const DuetProbePlan plan =
      plan_duet_probe({"apart_now", "together_now", "together_old", "never_probed"}, cache, std::time(nullptr));
  EXPECT_EQ(plan.to_probe, (std::set<std::string>{"never_probed", "together_old"}));
  EXPECT_EQ(plan.known_together, (std::set<std::string>{"together_now"}));
  ASSERT_EQ(plan.known_apart.size(), 1u);
  EXPECT_NE(plan.known_apart.at("apart_now").find("above 1.5x"), std::string::npos);
  EXPECT_NE(plan.known_apart.at("apart_now").find("its probe here at"), std::string::npos);

  // An iteration that now declares other work forgets its walls, and with them the finding.
  cache.forget_walls("apart_now");
  EXPECT_EQ(plan_duet_probe({"apart_now"}, cache, std::time(nullptr)).to_probe, (std::set<std::string>{"apart_now"}));
  // Not probed here at all (another machine's key, or calibration none): every benchmark is probed.
  EXPECT_EQ(plan_duet_probe({"a", "b"}, CalibrationCache(), std::time(nullptr)).to_probe,
            (std::set<std::string>{"a", "b"}));
  std::filesystem::remove(path);
}

// ab --budget skips the probe where its cost is not known here or it and the planned look would
// pass the budget; the second look then finds the regime.
TEST(AbRegime, TheProbeIsSkippedWhereItsCostIsUnknownOrItPassesTheBudget) {
  RunPlan plan;
  plan.benchmarks.resize(5);
  plan.projected_wall_s = 150;
  EXPECT_EQ(probe_skip_reason(plan, 3, 180), "");
  EXPECT_EQ(probe_skip_reason(plan, 0, 180), "");  // nothing to probe
  plan.projected_wall_s = 200;
  EXPECT_NE(probe_skip_reason(plan, 3, 180).find("200 s, past the 180 s budget"), std::string::npos);
  EXPECT_EQ(probe_skip_reason(plan, 3, 0), "");  // no budget: the fixed design probes
  plan.unknown = 2;
  plan.projected_wall_s = 10;
  EXPECT_NE(probe_skip_reason(plan, 3, 180).find("2 of the 5 benchmarks have not run here"), std::string::npos);
}

// What the second look knows the regime of: every benchmark whose two sides ran at once (a and b),
// not one already run one side at a time (wide); the outlier b among them is kept as apart.
TEST(AbRegime, TheSecondLookKnowsTheRegimeOfEveryBenchmarkThatRanTogether) {
  const AbResult r = planned();
  EXPECT_EQ(ran_together(r), (std::set<std::string>{"a", "b"}));
  EXPECT_EQ(regime_outliers(r), (std::set<std::string>{"b"}));
  AbResult half = r;
  std::erase_if(half.ratios, [](const CalibrationRatio& c) { return c.benchmark == "a" && c.side == 1; });
  EXPECT_EQ(ran_together(half), (std::set<std::string>{"b"}));  // a side without a ratio: not known
}

TEST(AbRegime, AProbesAgeIsReadFromItsUtcStampAndAnUnreadableStampIsTooOld) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900, tm.tm_mon = 10, tm.tm_mday = 29, tm.tm_hour = 12;
  const std::time_t noon = timegm(&tm);
  EXPECT_NEAR(age_days("2026-11-28T12:00:00Z", noon), 1.0, 1e-9);
  EXPECT_NEAR(age_days("2026-11-29T06:00:00Z", noon), 0.25, 1e-9);
  EXPECT_TRUE(std::isinf(age_days("", noon)));
  EXPECT_TRUE(std::isinf(age_days("yesterday", noon)));
  EXPECT_TRUE(std::isinf(age_days("2026-11-28T12:00:00Z trailing", noon)));
}

}  // namespace
}  // namespace pairbench::harness
