// Experiment summaries on synthetic samples with known answers: ratio orientation, verdicts.
#include "harness/analysis/summary.h"

#include <gtest/gtest.h>

#include <sstream>

#include "harness/analysis/claims.h"
#include "harness/store/json_field.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace {

ExperimentEntry experiment(const std::string& better) {
  ExperimentEntry e;
  e.name = "demo.exp";
  e.kind = "comparison";
  e.metric = "m";
  e.unit = better == "lower" ? "ns" : "B/s";
  e.better = better;
  e.axes = {{"n", {"1"}}};
  e.arms = {{"base", "baseline", {}}, {"fast", "treatment", {}}, {"broken", "treatment", {}}};
  for (const auto& arm : e.arms)
    e.benchmarks.push_back({"demo.exp/" + arm.name + "/n:1", arm.name, {{"n", "1"}}, true, ""});
  e.targets = {{"fast", {{"n", "1"}}, 30, "fast within 30"}};
  return e;
}

Sample sample(const std::string& arm, double value, Verification verification = Verification::passed) {
  Sample s;
  s.benchmark = "demo.exp/" + arm + "/n:1";
  s.experiment = "demo.exp";
  s.arm = arm;
  s.verification = verification;
  s.metric_value = value;
  s.has_value = verification == Verification::passed;
  if (!s.has_value) s.reason = "boom";
  return s;
}

TEST(Summary, LowerIsBetterRatioIsBaselineOverTreatment) {
  std::vector<Sample> samples;
  for (double v : {100.0, 101.0, 99.0, 100.5, 99.5}) samples.push_back(sample("base", v));
  for (double v : {25.0, 25.25, 24.75, 25.125, 24.875}) samples.push_back(sample("fast", v));
  samples.push_back(sample("broken", 0, Verification::incorrect));
  const auto s = summarise({experiment("lower")}, samples);
  const auto& p = s[0]["points"][0];
  ASSERT_EQ(p["ratios"].size(), 1u);  // no ratio for an arm without good samples
  EXPECT_NEAR(p["ratios"][0]["ratio"].get<double>(), 4.0, 1e-9);
  EXPECT_LE(p["ratios"][0]["ci_low"].get<double>(), 4.0);
  EXPECT_GE(p["ratios"][0]["ci_high"].get<double>(), 4.0);
  EXPECT_EQ(p["arms"][0]["median"], 100.0);
  EXPECT_EQ(p["arms"][2]["verification"], "incorrect");
  EXPECT_EQ(p["arms"][2]["reason"], "boom");
  ASSERT_EQ(p["targets"].size(), 1u);
  EXPECT_TRUE(p["targets"][0]["met"].get<bool>());
}

TEST(Summary, HigherIsBetterRatioIsTreatmentOverBaseline) {
  std::vector<Sample> samples;
  for (double v : {10.0, 10.0, 10.0}) samples.push_back(sample("base", v));
  for (double v : {20.0, 20.0, 20.0}) samples.push_back(sample("fast", v));
  const auto s = summarise({experiment("higher")}, samples);
  EXPECT_NEAR(s[0]["points"][0]["ratios"][0]["ratio"].get<double>(), 2.0, 1e-12);
  EXPECT_FALSE(s[0]["points"][0]["targets"][0]["met"].get<bool>());  // 20 < 30 where higher is better
}

TEST(Summary, OneFailedRepetitionMarksTheArmFailed) {
  std::vector<Sample> samples = {sample("base", 1), sample("base", 1, Verification::failed), sample("fast", 1)};
  const auto s = summarise({experiment("lower")}, samples);
  EXPECT_EQ(s[0]["points"][0]["arms"][0]["verification"], "failed");
  EXPECT_EQ(s[0]["points"][0]["arms"][0]["samples"], 1);
}

// A limit experiment and a comparison placed against it, on its deciding metric and (through
// LimitEntry::counter) on a secondary counter in the limit's unit.
TEST(Summary, PercentOfLimitOnTheMetricOrOnANamedCounter) {
  ExperimentEntry limit;
  limit.name = "limits.bw";
  limit.kind = "limit";
  limit.metric = "bytes_per_second";
  limit.unit = "B/s";
  limit.better = "higher";
  limit.axes = {{"threads", {"1"}}};
  limit.arms = {{"copy", "limit", {}}};
  limit.benchmarks = {{"limits.bw/copy/threads:1", "copy", {{"threads", "1"}}, true, ""}};
  ExperimentEntry e = experiment("higher");
  e.secondary = {{"bytes_per_second", "B/s", "higher"}};
  e.limits = {{"limits.bw", "copy", {{"threads", "1"}}, {"base"}, {}, ""},
              {"limits.bw", "copy", {{"threads", "1"}}, {"fast"}, {}, "bytes_per_second"}};
  std::vector<Sample> samples;
  for (int i = 0; i < 3; ++i) {
    Sample l = sample("copy", 40e9);
    l.benchmark = "limits.bw/copy/threads:1";
    l.experiment = "limits.bw";
    samples.push_back(l);
    samples.push_back(sample("base", 10e9));  // deciding metric in B/s here: 25 % of 40 GB/s
    Sample f = sample("fast", 3e9);           // e.g. elements/s; its bytes_per_second is 36 GB/s
    f.gbench = {{"bytes_per_second", 36e9}};
    samples.push_back(f);
  }
  const auto s = summarise({limit, e}, samples);
  const auto& arms = s[1]["points"][0]["arms"];
  EXPECT_NEAR(arms[0]["percent_of_limit"].get<double>(), 25.0, 1e-9);
  EXPECT_FALSE(arms[0]["limit"].contains("counter"));
  EXPECT_NEAR(arms[1]["percent_of_limit"].get<double>(), 90.0, 1e-9);
  EXPECT_EQ(arms[1]["limit"]["counter"], "bytes_per_second");
  EXPECT_EQ(arms[1]["limit"]["median"], 40e9);
  EXPECT_FALSE(arms[2].contains("percent_of_limit"));  // no LimitEntry names it
}

// limits.bw with arms memcpy and copy at threads 1 and 2, each process of a benchmark at `value`.
ExperimentEntry bandwidth_limit() {
  ExperimentEntry limit;
  limit.name = "limits.bw";
  limit.kind = "limit";
  limit.metric = "bytes_per_second";
  limit.unit = "B/s";
  limit.better = "higher";
  limit.axes = {{"threads", {"1", "2"}}};
  limit.arms = {{"memcpy", "limit", {}}, {"copy", "limit", {}}};
  for (const std::string arm : {"memcpy", "copy"}) {
    for (const std::string threads : {"1", "2"}) {
      limit.benchmarks.push_back({"limits.bw/" + arm + "/threads:" + threads, arm, {{"threads", threads}}, true, ""});
    }
  }
  return limit;
}

void add_limit_samples(std::vector<Sample>& samples, const std::string& benchmark, double value) {
  for (int i = 0; i < 3; ++i) {
    Sample l = sample("x", value);
    l.benchmark = benchmark;
    l.experiment = "limits.bw";
    l.arm = benchmark.substr(10, benchmark.find('/', 10) - 10);
    samples.push_back(l);
  }
}

void add_arm_samples(std::vector<Sample>& samples, const std::string& arm, double value) {
  for (int i = 0; i < 3; ++i) samples.push_back(sample(arm, value));
}

// Every candidate of a LimitRef measured in the run is weighed; the best median is the limit.
TEST(Summary, TheLimitIsTheBestOfSeveralCandidates) {
  ExperimentEntry e = experiment("higher");
  LimitEntry every_arm_and_thread_count{"limits.bw", "", {}, {}, {}, ""};
  e.limits = {every_arm_and_thread_count};
  std::vector<Sample> samples;
  add_limit_samples(samples, "limits.bw/memcpy/threads:1", 40e9);
  add_limit_samples(samples, "limits.bw/copy/threads:1", 44e9);
  add_limit_samples(samples, "limits.bw/memcpy/threads:2", 80e9);
  add_limit_samples(samples, "limits.bw/copy/threads:2", 90e9);  // the best: 2 threads, STREAM copy
  add_arm_samples(samples, "base", 45e9);
  add_arm_samples(samples, "fast", 60e9);
  const auto s = summarise({bandwidth_limit(), e}, samples);
  const auto& arms = s[1]["points"][0]["arms"];
  EXPECT_EQ(arms[0]["limit"]["benchmark"], "limits.bw/copy/threads:2");
  EXPECT_EQ(arms[0]["limit"]["best_of"], 4);
  EXPECT_NEAR(arms[0]["percent_of_limit"].get<double>(), 50.0, 1e-9);
  EXPECT_NEAR(arms[1]["percent_of_limit"].get<double>(), 100.0 * 60 / 90, 1e-9);
  EXPECT_FALSE(arms[1].contains("limit_defect"));
}

// With own_arms, an arm of ours that beats every limit benchmark becomes the limit itself.
TEST(Summary, OwnArmsAreCandidatesWhereDeclared) {
  ExperimentEntry e = experiment("higher");
  LimitEntry one_core_memcpy{"limits.bw", "memcpy", {{"threads", "1"}}, {}, {}, ""};
  one_core_memcpy.also = {{"limits.bw", "copy", {{"threads", "1"}}}};
  one_core_memcpy.own_arms = true;
  e.limits = {one_core_memcpy};
  std::vector<Sample> samples;
  add_limit_samples(samples, "limits.bw/memcpy/threads:1", 40e9);
  add_limit_samples(samples, "limits.bw/copy/threads:1", 44e9);
  add_limit_samples(samples, "limits.bw/copy/threads:2", 90e9);  // not a candidate: threads:1 only
  add_arm_samples(samples, "base", 45e9);
  add_arm_samples(samples, "fast", 60e9);
  const auto s = summarise({bandwidth_limit(), e}, samples);
  const auto& arms = s[1]["points"][0]["arms"];
  EXPECT_EQ(arms[0]["limit"]["benchmark"], "demo.exp/fast/n:1");
  EXPECT_EQ(arms[0]["limit"]["best_of"], 4);  // memcpy, copy (threads:1), base, fast
  EXPECT_NEAR(arms[0]["percent_of_limit"].get<double>(), 75.0, 1e-9);
  EXPECT_NEAR(arms[1]["percent_of_limit"].get<double>(), 100.0, 1e-9);
}

// A lower-is-better limit (a latency floor) is the smallest median among the candidates.
TEST(Summary, ALowerIsBetterLimitIsTheSmallestCandidate) {
  ExperimentEntry limit = bandwidth_limit();
  limit.metric = "ns_per_op";
  limit.unit = "ns";
  limit.better = "lower";
  ExperimentEntry e = experiment("lower");
  e.limits = {{"limits.bw", "", {}, {}, {}, ""}};
  std::vector<Sample> samples;
  add_limit_samples(samples, "limits.bw/memcpy/threads:1", 50);
  add_limit_samples(samples, "limits.bw/copy/threads:1", 40);  // the floor
  add_limit_samples(samples, "limits.bw/copy/threads:2", 70);
  add_arm_samples(samples, "base", 80);
  const auto s = summarise({limit, e}, samples);
  const auto& base = s[1]["points"][0]["arms"][0];
  EXPECT_EQ(base["limit"]["benchmark"], "limits.bw/copy/threads:1");
  EXPECT_NEAR(base["percent_of_limit"].get<double>(), 50.0, 1e-9);
}

// A figure more than 5 % above its limit is a measurement defect: marked in the JSON and printed
// as DEFECT, never as a plain percentage; 104 % is within the margin and stays a plain figure.
TEST(Summary, AnArmAboveItsLimitIsFlaggedAsADefect) {
  ExperimentEntry e = experiment("higher");
  e.limits = {{"limits.bw", "memcpy", {{"threads", "1"}}, {}, {}, ""}};
  std::vector<Sample> samples;
  add_limit_samples(samples, "limits.bw/memcpy/threads:1", 40e9);
  add_arm_samples(samples, "base", 41.6e9);  // 104 %
  add_arm_samples(samples, "fast", 48.8e9);  // 122 %
  const auto s = summarise({bandwidth_limit(), e}, samples);
  const auto& arms = s[1]["points"][0]["arms"];
  EXPECT_FALSE(arms[0].contains("limit_defect"));
  ASSERT_TRUE(arms[1].contains("limit_defect"));
  EXPECT_EQ(arms[1]["limit_defect"],
            "measured 122 % of limits.bw/memcpy/threads:1: a limit must be the best this machine can do");
  std::ostringstream printed;
  print_summary(printed, summarise_experiments({bandwidth_limit(), e}, samples));
  const std::string text = printed.str();
  EXPECT_NE(text.find("DEFECT 122% of limit"), std::string::npos) << text;
  EXPECT_NE(text.find("104% of limit"), std::string::npos) << text;
  EXPECT_EQ(text.find("DEFECT 104%"), std::string::npos) << text;
}

// The typed summary and its JSON say the same: to_json is the one place it is serialised, and
// the catalogue's fields (time relation, gate thresholds where set, the declared checks) travel.
TEST(Summary, TheTypedSummaryIsWhatItsJsonSays) {
  ExperimentEntry e = experiment("lower");
  e.time_relation = "proportional";
  e.gate_threshold = 0.1;
  e.verdict = {VerdictCheckEntry{}};
  e.verdict[0].treatments = {"fast"};
  e.secondary = {{"peak_rss_bytes", "B", "lower"}};
  std::vector<Sample> samples;
  for (double v : {100.0, 101.0, 99.0}) {
    samples.push_back(sample("base", v));
    samples.back().gbench = {{"peak_rss_bytes", 2e6}, {"label", "glibc"}};
  }
  for (double v : {25.0, 26.0, 24.0}) {
    samples.push_back(sample("fast", v));
    samples.back().gbench = {{"peak_rss_bytes", 1e6}, {"label", "jemalloc"}};
  }
  samples.push_back(sample("broken", 0, Verification::incorrect));
  const std::vector<ExperimentSummary> typed = summarise_experiments({e}, samples);
  ASSERT_EQ(typed.size(), 1u);
  const PointSummary& p = typed[0].points.at(0);
  ASSERT_EQ(p.arms.size(), 3u);
  EXPECT_EQ(p.arms[0].statistics->median, 100.0);
  EXPECT_EQ(p.arms[0].statistics->min, 99.0);
  EXPECT_EQ(p.arms[1].label, "jemalloc");
  EXPECT_EQ(p.arms[1].secondary.at("peak_rss_bytes").ratio, 2.0);  // half the baseline's peak RSS
  EXPECT_FALSE(p.arms[2].statistics.has_value());
  EXPECT_EQ(p.arms[2].samples, 0u);
  ASSERT_EQ(p.ratios.size(), 1u);
  EXPECT_NEAR(p.ratios[0].ratio, 4.0, 0.1);
  EXPECT_DOUBLE_EQ(p.ratios[0].ratio_of_medians, 4.0);

  const nlohmann::json j = summarise({e}, samples)[0];
  EXPECT_EQ(j, to_json(typed[0]));
  EXPECT_EQ(j["time_relation"], "proportional");
  EXPECT_EQ(j["gate_threshold"], 0.1);
  EXPECT_FALSE(j.contains("instructions_gate_threshold"));  // 0: the gate's default, not written
  EXPECT_EQ(j["verdict"][0]["treatments"], nlohmann::json::array({"fast"}));
  const nlohmann::json& arm = j["points"][0]["arms"][1];
  EXPECT_EQ(arm["median"], 25.0);
  EXPECT_EQ(arm["samples"], 3);
  EXPECT_EQ(arm["secondary"]["peak_rss_bytes"]["ratio"], 2.0);
  EXPECT_FALSE(j["points"][0]["arms"][2].contains("median"));  // no sample passed: no figure at all
  EXPECT_EQ(j["points"][0]["arms"][2]["reason"], "boom");
  EXPECT_EQ(j["points"][0]["ratios"][0]["estimator"], "hodges_lehmann_log");
}

// A run file's summary read back is the typed summary it was written from: to_json of
// summary_from_json gives the same JSON, so old run files are judged on what new ones are.
TEST(Summary, SummaryFromJsonIsTheInverseOfToJson) {
  ExperimentEntry e = experiment("higher");
  e.limits = {{"limits.bw", "memcpy", {{"threads", "1"}}, {}, {}, ""}};
  e.verdict = {VerdictCheckEntry{}};
  e.secondary = {{"peak_rss_bytes", "B", "lower"}};
  e.figure = FigureEntry{};
  std::vector<Sample> samples;
  add_limit_samples(samples, "limits.bw/memcpy/threads:1", 40e9);
  add_arm_samples(samples, "base", 41.6e9);
  add_arm_samples(samples, "fast", 48.8e9);
  for (Sample& s : samples) s.gbench["peak_rss_bytes"] = 1e6;
  samples.push_back(sample("broken", 0, Verification::incorrect));
  const nlohmann::json written = summarise({bandwidth_limit(), e}, samples);
  const std::vector<ExperimentSummary> read = summary_from_json(written, "run.json");
  ASSERT_EQ(read.size(), 2u);
  EXPECT_EQ(read[1].points.at(0).arms.at(2).verification, Verification::incorrect);
  EXPECT_EQ(experiments_to_json(read), written);
  // Through text too (a non-finite figure would be null there).
  EXPECT_EQ(experiments_to_json(summary_from_json(nlohmann::json::parse(written.dump()), "run.json")), written);
}

TEST(Summary, SummaryFromJsonNamesTheFieldOfAnUnknownVerification) {
  nlohmann::json written = summarise({experiment("lower")}, {sample("base", 1), sample("fast", 1)});
  written[0]["points"][0]["arms"][1]["verification"] = "regresion";
  try {
    summary_from_json(written, "run.json");
    FAIL() << "an unknown verification was read";
  } catch (const JsonFieldError& ex) {
    EXPECT_NE(std::string(ex.what()).find(
                  "run.json: pairbench.experiments[0].points[0].arms[1].verification: expected one of"),
              std::string::npos)
        << ex.what();
  }
  written[0]["points"][0]["arms"][1]["verification"] = "passed";
  written[0]["points"][0]["arms"][1]["median"] = "fast";
  EXPECT_THROW(summary_from_json(written, "run.json"), JsonFieldError);
}

TEST(Summary, VerificationAndInstrumentNamesRoundTrip) {
  for (const auto& [v, name] : kVerificationNames) EXPECT_EQ(verification_from_string(to_string(v)), v) << name;
  for (const auto& [i, name] : kInstrumentNames) EXPECT_EQ(instrument_from_string(to_string(i)), i) << name;
  EXPECT_EQ(verification_from_string("regresion"), std::nullopt);
}

// The summary and the claims judged on it form a run file the schema (both validators' file) accepts.
TEST(Summary, TheSummaryAndItsClaimsValidateAgainstTheRunFileSchema) {
  ExperimentEntry e = experiment("higher");
  e.claim = "C11";
  e.name = "copy.wrap_vs_copy";
  for (auto& b : e.benchmarks) b.name = "copy.wrap_vs_copy/" + b.arm + "/n:1";
  e.limits = {{"limits.bw", "memcpy", {{"threads", "1"}}, {}, {}, ""}};
  e.verdict = {VerdictCheckEntry{}};
  e.verdict[0].test = "same";
  e.verdict[0].where = {{"n", {"1"}}};
  std::vector<Sample> samples;
  add_limit_samples(samples, "limits.bw/memcpy/threads:1", 40e9);
  for (const auto& [arm, value] : {std::pair{"base", 10e9}, std::pair{"fast", 48.8e9}}) {
    for (int i = 0; i < 3; ++i) {
      samples.push_back(sample(arm, value * (1 + 0.01 * i)));
      samples.back().benchmark = "copy.wrap_vs_copy/" + std::string(arm) + "/n:1";
    }
  }
  const nlohmann::json summary = summarise({bandwidth_limit(), e}, samples);
  ASSERT_TRUE(summary[1]["points"][0]["arms"][1].contains("limit_defect"));
  const nlohmann::json environment = {
      {"machine_key", "k"}, {"gpu_compute_capability", ""}, {"gpu_unavailable_reason", "no CUDA device"}};
  nlohmann::json doc = {{"context", nlohmann::json::object()},
                        {"benchmarks", nlohmann::json::array()},
                        {"pairbench", {{"schema_version", 1}, {"environment", environment}, {"experiments", summary}}}};
  doc["pairbench"]["claims"] = claims_to_json(
      judge_claims(builtin_claims(), summarise_experiments({bandwidth_limit(), e}, samples), environment));
  EXPECT_NO_THROW(parse_run_file_text(doc.dump(), "summary")) << doc.dump(1).substr(0, 2000);
  // ... and the validator does look inside: a claim's verdict it does not know is refused.
  doc["pairbench"]["claims"][10]["verdict"] = "mostly";
  EXPECT_THROW(parse_run_file_text(doc.dump(), "summary"), std::exception);
}

TEST(Summary, FormatsQuantitiesWithSiPrefixes) {
  EXPECT_EQ(format_quantity(85.2, "ns"), "85.2 ns");
  EXPECT_EQ(format_quantity(1234.0, "ns"), "1.234 us");
  EXPECT_EQ(format_quantity(12.5e9, "B/s"), "12.5 GB/s");
}

}  // namespace
}  // namespace pairbench::harness
