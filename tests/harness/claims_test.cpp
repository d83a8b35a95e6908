// The claim verdict rules (harness/analysis/claims.cpp) on small hand-made summaries with known answers:
// better / same / plateau, how points combine, not run here, not testable here without a CUDA
// device, CPU analogues labelled with their argument, experiments of other claims never counted;
// and the claims catalogue the harness is built with.
#include "harness/analysis/claims.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "harness/store/json_field.h"

namespace pairbench::harness {
namespace {

using nlohmann::json;

struct R {
  std::string treatment;
  double ratio, low, high;
};

std::string benchmark_of(const std::string& exp, const std::string& arm, const json& params) {
  std::string name = exp + "/" + arm;
  for (const auto& [k, v] : params.items()) name += "/" + k + ":" + v.get<std::string>();
  return name;
}

// A grid point where every arm passed and each treatment has the ratio given.
json point(const json& params, const std::vector<R>& ratios, const std::string& exp = "x.y") {
  json p = {{"params", params}, {"arms", json::array()}, {"ratios", json::array()}};
  p["arms"].push_back({{"arm", "base"},
                       {"role", "baseline"},
                       {"verification", "passed"},
                       {"median", 1.0},
                       {"benchmark", benchmark_of(exp, "base", params)}});
  for (const R& r : ratios) {
    p["arms"].push_back({{"arm", r.treatment},
                         {"role", "treatment"},
                         {"verification", "passed"},
                         {"median", 1.0},
                         {"benchmark", benchmark_of(exp, r.treatment, params)}});
    p["ratios"].push_back(
        {{"treatment", r.treatment}, {"ratio", r.ratio}, {"ci_low", r.low}, {"ci_high", r.high}, {"confidence", 0.95}});
  }
  return p;
}

// A grid point whose baseline and treatment could not run here, for `reason`.
json unsupported_point(const std::string& exp, const std::string& reason) {
  json p = {{"params", {{"device", "cuda"}}}, {"arms", json::array()}, {"ratios", json::array()}};
  for (const auto& [arm, role] : {std::pair{"base", "baseline"}, std::pair{"t", "treatment"}}) {
    p["arms"].push_back({{"arm", arm},
                         {"role", role},
                         {"verification", "not_supported"},
                         {"reason", reason},
                         {"benchmark", exp + "/" + arm + "/device:cuda"}});
  }
  return p;
}

json experiment(const std::string& name, const std::string& claim, const std::vector<json>& points,
                const json& checks = nullptr) {
  json e = {{"name", name}, {"claim", claim},    {"kind", "comparison"}, {"metric", "ns_per_op"},
            {"unit", "ns"}, {"better", "lower"}, {"points", points}};
  if (!checks.is_null()) e["verdict"] = checks;
  return e;
}

ClaimSpec claim(std::vector<std::string> experiments, const std::string& id = "C99") {
  ClaimSpec c{id, "test claim", "ratio", {}, "", ""};
  for (auto& name : experiments) c.experiments.push_back({name, false});
  return c;
}

// Judged as a run file's summary is: read back from its JSON.
ClaimJudgement judge(const ClaimSpec& c, const std::vector<json>& experiments,
                     const json& environment = json::object()) {
  return judge_claims({c}, summary_from_json(json(experiments), "test"), environment).at(0);
}

const json kBetter = json::array({{{"test", "better"}}});

TEST(ClaimVerdicts, BetterHeldNotHeldInconclusive) {
  const ClaimSpec c = claim({"x.y"});
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}})}, kBetter)}).verdict,
            ClaimVerdict::held);
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 0.5, 0.4, 0.6}})}, kBetter)}).verdict,
            ClaimVerdict::did_not_hold);
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 1.5, 0.7, 3.0}})}, kBetter)}).verdict,
            ClaimVerdict::inconclusive);
  // Inside [1/1.02, 1.02]: no meaningful difference, which the claim of a speed-up does not survive.
  const ClaimJudgement same =
      judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 1.0, 0.995, 1.01}})}, kBetter)});
  EXPECT_EQ(same.verdict, ClaimVerdict::did_not_hold);
  EXPECT_EQ(same.rows.at(0).why, "interval inside [0.98, 1.02]: no meaningful difference");
}

TEST(ClaimVerdicts, AnExperimentWithoutChecksGetsTheDefaultBetterCheck) {
  const ClaimJudgement v =
      judge(claim({"x.y"}), {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 3.0, 2.0, 4.0}})})});
  EXPECT_EQ(v.verdict, ClaimVerdict::held);
  EXPECT_EQ(v.rows.at(0).test, "better");
  EXPECT_EQ(v.rows.at(0).why, "interval above 1");
}

TEST(ClaimVerdicts, OneFailingPointDecides) {
  const ClaimJudgement v =
      judge(claim({"x.y"}),
            {experiment("x.y", "C99",
                        {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}}), point({{"n", "2"}}, {{"t", 0.5, 0.4, 0.6}})})});
  EXPECT_EQ(v.verdict, ClaimVerdict::did_not_hold);
  EXPECT_EQ(v.detail, "held at 1 of 2 points; not at n:2 (t)");
}

TEST(ClaimVerdicts, SameWithToleranceWhereAndExclude) {
  const json checks = json::parse(R"([{"test": "same", "tolerance": 1.25, "where": {"q": ["0"]}},
                                      {"test": "better", "exclude": {"q": ["0"]}}])");
  const ClaimSpec c = claim({"x.y"});
  EXPECT_EQ(judge(c, {experiment(
                         "x.y", "C99",
                         {point({{"q", "0"}}, {{"t", 0.95, 0.9, 1.1}}), point({{"q", "9"}}, {{"t", 10.0, 8.0, 12.0}})},
                         checks)})
                .verdict,
            ClaimVerdict::held);
  const ClaimJudgement v =
      judge(c, {experiment("x.y", "C99",
                           {point({{"q", "0"}}, {{"t", 2.0, 1.6, 2.4}}), point({{"q", "9"}}, {{"t", 10.0, 8.0, 12.0}})},
                           checks)});
  EXPECT_EQ(v.verdict, ClaimVerdict::did_not_hold);
  EXPECT_EQ(v.rows.at(0).why, "interval outside [0.8, 1.25]");
  EXPECT_EQ(v.rows.at(0).test, "same");
  // A single value may be written as a string.
  const json one = json::parse(R"([{"test": "same", "tolerance": 1.25, "where": {"q": "0"}}])");
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"q", "0"}}, {{"t", 1.0, 1.2, 1.3}})}, one)}).verdict,
            ClaimVerdict::inconclusive);
}

TEST(ClaimVerdicts, TreatmentFilter) {
  const json checks = json::parse(R"([{"test": "better", "treatments": ["good"]}])");
  const ClaimJudgement v = judge(
      claim({"x.y"}),
      {experiment("x.y", "C99", {point({{"n", "1"}}, {{"good", 2.0, 1.5, 2.5}, {"other", 0.5, 0.4, 0.6}})}, checks)});
  EXPECT_EQ(v.verdict, ClaimVerdict::held);
  ASSERT_EQ(v.rows.size(), 1u);
  EXPECT_EQ(v.rows[0].treatment, "good");
}

TEST(ClaimVerdicts, ThresholdAboveOne) {
  // A quantitative claim (4-6x): an interval above 1 but not above 4 is not enough.
  const json checks = json::parse(R"([{"test": "better", "threshold": 4.0}])");
  const ClaimSpec c = claim({"x.y"});
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 2.0, 1.8, 2.2}})}, checks)}).verdict,
            ClaimVerdict::did_not_hold);
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 5.0, 4.5, 5.5}})}, checks)}).verdict,
            ClaimVerdict::held);
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 4.0, 3.5, 4.5}})}, checks)}).verdict,
            ClaimVerdict::inconclusive);
}

TEST(ClaimVerdicts, PlateauOfOrderedTreatments) {
  const json checks = json::parse(R"([{"test": "plateau", "treatments": ["w1", "w2", "w4"]}])");
  const ClaimSpec c = claim({"x.y"});
  // w4 no better than w1 (its upper bound 1.9 / w1's lower bound 1.85 < 1.05): more stopped helping.
  const std::vector<R> flat = {{"w1", 1.9, 1.85, 1.95}, {"w2", 1.95, 1.8, 2.1}, {"w4", 1.8, 1.7, 1.9}};
  ClaimJudgement v = judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, flat)}, checks)});
  EXPECT_EQ(v.verdict, ClaimVerdict::held);
  EXPECT_EQ(v.rows.at(0).why, "w4 is at most 1.05x w1: more stopped helping by w1");
  EXPECT_EQ(v.rows.at(0).treatment, "w4");
  // w4 clearly beats both w1 and w2: still helping.
  const std::vector<R> rising = {{"w1", 1.5, 1.4, 1.6}, {"w2", 2.0, 1.9, 2.1}, {"w4", 3.0, 2.8, 3.2}};
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, rising)}, checks)}).verdict,
            ClaimVerdict::did_not_hold);
  // Wide intervals: neither.
  const std::vector<R> wide = {{"w1", 1.5, 1.0, 2.0}, {"w2", 1.6, 1.0, 2.2}, {"w4", 1.7, 1.1, 2.4}};
  EXPECT_EQ(judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, wide)}, checks)}).verdict,
            ClaimVerdict::inconclusive);
  // A treatment that could not run makes the point not run here, with its reason.
  v = judge(c, {experiment("x.y", "C99", {point({{"n", "1"}}, {flat[0], flat[1]})}, checks)});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_run_here);
  ASSERT_EQ(v.not_run.size(), 1u);
  EXPECT_EQ(v.not_run[0].treatment, "w4");
  EXPECT_EQ(v.not_run[0].reason, "not run");
}

TEST(ClaimVerdicts, PlateauNeedsTwoOrderedTreatments) {
  const json checks = json::parse(R"([{"test": "plateau", "treatments": ["w1"]}])");
  try {
    judge(claim({"x.y"}), {experiment("x.y", "C99", {point({{"n", "1"}}, {{"w1", 1.0, 0.9, 1.1}})}, checks)});
    FAIL() << "a plateau of one treatment was accepted";
  } catch (const JsonFieldError& e) {
    EXPECT_NE(std::string(e.what()).find("at least two treatments"), std::string::npos) << e.what();
  }
}

TEST(ClaimVerdicts, NotRunHereWithReasons) {
  const ClaimJudgement v =
      judge(claim({"x.y"}), {experiment("x.y", "C99", {unsupported_point("x.y", "RLIMIT_MEMLOCK is 8 MiB")})});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_run_here);
  EXPECT_EQ(v.detail, "RLIMIT_MEMLOCK is 8 MiB");
  EXPECT_EQ(v.details, std::vector<std::string>{"x.y device:cuda: RLIMIT_MEMLOCK is 8 MiB"});
}

TEST(ClaimVerdicts, BaselineMissingIsTheReasonWhenTheTreatmentRan) {
  json p = point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}});
  p["ratios"] = json::array();
  p["arms"][0] = {{"arm", "base"},
                  {"role", "baseline"},
                  {"verification", "failed"},
                  {"reason", "exit 1"},
                  {"benchmark", "x.y/base/n:1"}};
  const ClaimJudgement v = judge(claim({"x.y"}), {experiment("x.y", "C99", {p})});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_run_here);
  EXPECT_EQ(v.detail, "baseline base: failed: exit 1");
}

TEST(ClaimVerdicts, GpuOnlyClaimIsNotTestableWithoutACudaDevice) {
  ClaimJudgement v =
      judge(claim({"x.y", "x.z"}), {experiment("x.y", "C99", {unsupported_point("x.y", "no CUDA device")}),
                                    experiment("x.z", "C99", {unsupported_point("x.z", "no CUDA device")})});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_testable_here);
  EXPECT_EQ(v.detail, "no CUDA device (x.y, x.z need one)");
  v = judge(claim({"x.y"}), {experiment("x.y", "C99", {unsupported_point("x.y", "not compiled with CUDA")})});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_testable_here);
  EXPECT_EQ(v.detail, "not compiled with CUDA (x.y needs one)");
  // One arm missing for another reason: not this machine's lack of a GPU alone, so not run here.
  v = judge(claim({"x.y", "x.z"}), {experiment("x.y", "C99", {unsupported_point("x.y", "no CUDA device")}),
                                    experiment("x.z", "C99", {unsupported_point("x.z", "RLIMIT_MEMLOCK is 8 MiB")})});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_run_here);
}

TEST(ClaimVerdicts, CpuAnalogueRowsAndVerdictAreLabelledWithTheArgument) {
  const std::string argument = "resident pages stand in for pinned memory";
  const json analogue = {{{"test", "better"}, {"analogue", argument}}};
  const ClaimSpec c = claim({"x.gpu", "x.cpu"});
  ClaimJudgement v =
      judge(c, {experiment("x.gpu", "C99", {unsupported_point("x.gpu", "no CUDA device")}),
                experiment("x.cpu", "C99", {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}}, "x.cpu")}, analogue)});
  EXPECT_EQ(v.verdict, ClaimVerdict::held);
  EXPECT_TRUE(v.analogue);
  EXPECT_EQ(v.rows.at(0).analogue, argument);
  EXPECT_EQ(v.detail.rfind("from a CPU analogue only (" + argument + "): held", 0), 0u) << v.detail;
  EXPECT_EQ(to_json(v)["analogue"], true);
  // With a GPU row measured too, the verdict is no longer the analogue's alone.
  v = judge(c, {experiment("x.gpu", "C99", {point({{"device", "cuda"}}, {{"t", 3.0, 2.5, 3.5}}, "x.gpu")}),
                experiment("x.cpu", "C99", {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}}, "x.cpu")}, analogue)});
  EXPECT_FALSE(v.analogue);
  ASSERT_EQ(v.rows.size(), 2u);
  EXPECT_EQ(v.rows[0].analogue, "");
  EXPECT_EQ(v.rows[1].analogue, argument);
}

TEST(ClaimVerdicts, AnExperimentOfAnotherClaimNeverDecides) {
  // copy.stores (store types) once decided C6 (pinned vs pageable): listed or declaring, an
  // experiment decides only the claim it declares and claims.json lists it for.
  const ClaimJudgement v =
      judge(claim({"x.y", "x.other", "x.none"}),
            {experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}})}),
             experiment("x.other", "C98", {point({{"n", "1"}}, {{"t", 0.5, 0.4, 0.6}}, "x.other")}),
             experiment("x.none", "", {point({{"n", "1"}}, {{"t", 0.5, 0.4, 0.6}}, "x.none")}),
             experiment("x.unlisted", "C99", {point({{"n", "1"}}, {{"t", 0.5, 0.4, 0.6}}, "x.unlisted")})});
  EXPECT_EQ(v.verdict, ClaimVerdict::held);
  std::set<std::string> measured;
  for (const auto& r : v.rows) measured.insert(r.experiment);
  EXPECT_EQ(measured, std::set<std::string>{"x.y"});
  const std::set<std::string> excluded(v.excluded.begin(), v.excluded.end());
  EXPECT_TRUE(excluded.count("x.other: tests C98, not C99: not counted"));
  EXPECT_TRUE(excluded.count("x.none: tests no claim, not C99: not counted"));
  EXPECT_TRUE(excluded.count("x.unlisted: declares C99 but claims.json does not list it as testing it: not counted"));
}

TEST(ClaimVerdicts, AbsentAndPlanned) {
  ClaimSpec c = claim({"copy.h2d"});
  ClaimJudgement v = judge(c, {});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_run_here);
  EXPECT_EQ(v.detail, "no experiment ran: copy.h2d: not in this run");
  c.experiments[0].planned = true;
  EXPECT_EQ(judge(c, {}).detail, "no experiment ran: copy.h2d: planned, not implemented yet");
  EXPECT_EQ(judge(claim({}), {}).detail, "no experiment tests this claim yet");
}

TEST(ClaimVerdicts, InconclusiveAndNotRunPointsAreCounted) {
  const ClaimJudgement v =
      judge(claim({"x.y", "x.z"}),
            {experiment("x.y", "C99",
                        {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}}), point({{"n", "2"}}, {{"t", 1.5, 0.7, 3.0}})}),
             experiment("x.z", "C99", {unsupported_point("x.z", "no CUDA device")})});
  EXPECT_EQ(v.verdict, ClaimVerdict::inconclusive);
  EXPECT_EQ(v.detail,
            "held at 1 of 2 points; the other intervals are too wide to decide; 1 not run here (no CUDA device)");
}

TEST(ClaimVerdicts, EnvironmentClaim) {
  ClaimSpec c{"C17", "tensor cores", "environment", {}, "gpu_compute_capability", "gpu_unavailable_reason"};
  ClaimJudgement v = judge(c, {}, {{"gpu_compute_capability", "9.0"}, {"gpu_name", "H100"}});
  EXPECT_EQ(v.verdict, ClaimVerdict::recorded);
  EXPECT_EQ(v.detail, "environment capture only; H100, gpu_compute_capability: 9.0 (has tensor cores)");
  v = judge(c, {}, {{"gpu_compute_capability", "6.1"}});
  EXPECT_EQ(v.recorded, std::vector<std::string>{"gpu_compute_capability: 6.1 (no tensor cores)"});
  v = judge(c, {}, {{"gpu_compute_capability", ""}, {"gpu_unavailable_reason", "no CUDA device"}});
  EXPECT_EQ(v.verdict, ClaimVerdict::not_testable_here);
  EXPECT_EQ(v.detail, "no CUDA device");
  v = judge(c, {}, json::object());
  EXPECT_EQ(v.verdict, ClaimVerdict::not_run_here);
  EXPECT_EQ(v.detail, "no GPU in this run");
}

TEST(ClaimVerdicts, LimitsClaimRecordsEveryPlacedResultAndFlagsDefects) {
  ClaimSpec c{"C18", "limits", "limits", {}, "", ""};
  const json limit = {
      {"name", "limits.bw"},
      {"claim", ""},
      {"kind", "limit"},
      {"metric", "bytes_per_second"},
      {"unit", "B/s"},
      {"better", "higher"},
      {"points",
       {{{"params", json::object()},
         {"arms", {{{"arm", "copy"}, {"role", "limit"}, {"median", 10.0}, {"benchmark", "limits.bw/copy"}}}}}}}};
  json demo = experiment("demo.exp", "", {point({{"bytes", "4096"}}, {{"fast", 2.0, 1.5, 2.5}}, "demo.exp")});
  auto& arms = demo["points"][0]["arms"];
  arms[0]["percent_of_limit"] = 50.0;
  arms[0]["limit"] = {{"benchmark", "limits.bw/copy"}, {"median", 10.0}};
  arms[1]["percent_of_limit"] = 130.0;  // an old run file: no limit_defect written, judged from the percentage
  arms[1]["limit"] = {{"benchmark", "limits.bw/copy"}, {"median", 10.0}, {"counter", "bytes_per_second"}};
  const ClaimJudgement v = judge(c, {limit, demo});
  EXPECT_EQ(v.verdict, ClaimVerdict::recorded);
  EXPECT_EQ(v.detail, "1 limit experiment(s) measured (limits.bw); 2 result(s) placed against them");
  EXPECT_EQ(v.recorded,
            (std::vector<std::string>{"demo.exp/base/bytes:4096: 50 % of limits.bw/copy",
                                      "demo.exp/fast/bytes:4096: DEFECT bytes_per_second 130 % of limits.bw/copy"}));
  EXPECT_EQ(judge(c, {demo}).verdict, ClaimVerdict::not_run_here);
}

TEST(ClaimVerdicts, OldRunFileShapesReadWithTheReadersDefaults) {
  // No verification, reason, kind or role; a numeric grid value; a null interval; a ratio of 0.
  json e = {{"name", "x.y"},
            {"claim", "C99"},
            {"metric", "m"},
            {"unit", "ns"},
            {"better", "lower"},
            {"points",
             {{{"params", {{"n", 1}}},
               {"arms",
                {{{"arm", "base"}, {"role", "baseline"}, {"benchmark", "x.y/base/n:1"}},
                 {{"arm", "t"}, {"benchmark", "x.y/t/n:1"}}}},
               {"ratios", {{{"treatment", "t"}, {"ratio", 2.0}, {"ci_low", nullptr}, {"ci_high", nullptr}}}}},
              {{"params", {{"n", 2}}},
               {"arms", {{{"arm", "base"}, {"role", "baseline"}}, {{"arm", "t"}}}},
               {"ratios", {{{"treatment", "t"}, {"ratio", 0}}}}}}}};
  const ClaimJudgement v = judge(claim({"x.y"}), {e});
  EXPECT_EQ(v.verdict, ClaimVerdict::inconclusive);
  ASSERT_EQ(v.rows.size(), 1u);
  EXPECT_EQ(v.rows[0].point, "n:1");
  EXPECT_EQ(v.rows[0].why, "no interval");
  ASSERT_EQ(v.not_run.size(), 1u);
  EXPECT_EQ(v.not_run[0].reason, "not_run");
}

TEST(ClaimVerdicts, PointLabelsFollowTheBenchmarkNamesAxisOrder) {
  // JSON objects sort their keys; the label keeps the grid's order as the names give it.
  json p = point({{"device", "cpu"}, {"bytes", "4096"}}, {{"t", 2.0, 1.5, 2.5}});
  for (auto& a : p["arms"]) a["benchmark"] = "x.y/" + a["arm"].get<std::string>() + "/device:cpu/bytes:4096";
  const ClaimJudgement v = judge(claim({"x.y"}), {experiment("x.y", "C99", {p})});
  EXPECT_EQ(v.rows.at(0).point, "device:cpu bytes:4096");
}

TEST(ClaimVerdicts, ContractShapeOfPairbenchClaims) {
  const json out = claims_to_json(judge_claims(
      {claim({"x.y"})},
      summary_from_json(json::array({experiment("x.y", "C99", {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}})})}), "test"),
      json::object()));
  ASSERT_EQ(out.size(), 1u);
  const json& c = out[0];
  EXPECT_EQ(c["id"], "C99");
  EXPECT_EQ(c["claim"], "test claim");
  EXPECT_EQ(c["verdict"], "held");
  EXPECT_EQ(c["detail"], "held at all 1 points measured");
  EXPECT_EQ(c["analogue"], false);
  EXPECT_EQ(c["experiments"], json::array({"x.y"}));
  EXPECT_EQ(c["rows"][0]["ci_low"], 1.5);
  std::ostringstream printed;
  print_claims(printed, claims_from_json(out, "test"));
  EXPECT_NE(printed.str().find("C99  held              held at all 1 points measured"), std::string::npos)
      << printed.str();
}

TEST(ClaimVerdicts, NamesRoundTripAndClaimsFromJsonIsTheInverseOfClaimsToJson) {
  for (const auto& [v, name] : kClaimVerdictNames) EXPECT_EQ(claim_verdict_from_string(to_string(v)), v) << name;
  EXPECT_EQ(to_string(ClaimVerdict::did_not_hold), "did not hold");
  EXPECT_EQ(claim_verdict_from_string("regresion"), std::nullopt);
  const json written = claims_to_json(
      judge_claims({claim({"x.y"}), claim({"x.none"}, "C98")},
                   summary_from_json(json::array({experiment("x.y", "C99",
                                                             {point({{"n", "1"}}, {{"t", 2.0, 1.5, 2.5}}),
                                                              unsupported_point("x.y", "no CUDA device")})}),
                                     "test"),
                   json::object()));
  EXPECT_EQ(claims_to_json(claims_from_json(written, "test")), written);
  json bad = written;
  bad[0]["rows"][0]["verdict"] = "mostly";
  try {
    claims_from_json(bad, "run.json");
    FAIL() << "an unknown verdict was read";
  } catch (const JsonFieldError& ex) {
    EXPECT_NE(std::string(ex.what()).find("run.json: pairbench.claims[0].rows[0].verdict: expected a claim verdict"),
              std::string::npos)
        << ex.what();
  }
}

TEST(ClaimsCatalogue, EveryClaimIsThereAndDecidedByItsExperimentsChecks) {
  const auto& claims = builtin_claims();
  ASSERT_EQ(claims.size(), 20u);
  for (std::size_t i = 0; i < claims.size(); ++i) {
    EXPECT_EQ(claims[i].id, "C" + std::to_string(i + 1));
    EXPECT_FALSE(claims[i].text.empty());
  }
  EXPECT_EQ(claims[16].kind, "environment");
  EXPECT_EQ(claims[16].field, "gpu_compute_capability");
  EXPECT_EQ(claims[17].kind, "limits");
  // C6 is decided only by pinned memory and its analogue: copy.stores tests no claim.
  std::vector<std::string> c6;
  for (const auto& x : claims[5].experiments) c6.push_back(x.name);
  EXPECT_EQ(c6, (std::vector<std::string>{"copy.h2d", "copy.d2h", "copy.page_state"}));
}

TEST(ClaimsCatalogue, ChecksInClaimsJsonAreRefusedNamingTheField) {
  // A rule belongs to its experiment's declaration: stating it twice is refused, not ignored.
  const json doc =
      json::parse(R"({"claims": [{"id": "C1", "claim": "x", "verdict": {"kind": "ratio", "checks": []}}]})");
  try {
    parse_claims(doc, "claims.json");
    FAIL() << "checks in claims.json were accepted";
  } catch (const JsonFieldError& e) {
    EXPECT_NE(std::string(e.what()).find("claims.json: claims[0].verdict.checks: expected no checks here"),
              std::string::npos)
        << e.what();
  }
  const json bad_kind = json::parse(R"({"claims": [{"id": "C1", "claim": "x", "verdict": {"kind": "vibes"}}]})");
  EXPECT_THROW(parse_claims(bad_kind, "claims.json"), JsonFieldError);
}

}  // namespace
}  // namespace pairbench::harness
