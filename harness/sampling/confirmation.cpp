// The nightly's same-runner confirmation policy (confirmation.h).
#include "harness/sampling/confirmation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "harness/store/file_checks.h"
#include "harness/store/json_field.h"

namespace pairbench::harness {
namespace {

bool is_confirmed(Verdict v) { return v == Verdict::regression || v == Verdict::broken; }
bool is_cleared(Verdict v) { return v == Verdict::unchanged || v == Verdict::improvement; }

std::string without_dirty(std::string build) {
  const std::string dirty = "-dirty";
  if (build.size() >= dirty.size() && build.compare(build.size() - dirty.size(), dirty.size(), dirty) == 0) {
    build.resize(build.size() - dirty.size());
  }
  return build;
}

// "+12.3%", "?" where unknown.
std::string pct(double x) {
  if (!std::isfinite(x)) return "?";
  char s[32];
  std::snprintf(s, sizeof s, "%+.1f%%", 100 * x);
  return s;
}

ConfirmedRow confirmed_row(const BenchmarkVerdict& v, std::string why) {
  return {v.benchmark, to_string(v.instrument), v.experiment,    to_string(v.verdict), std::move(why),
          v.slowdown,  v.slowdown_low,          v.slowdown_high, v.p_adjusted};
}

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

}  // namespace

std::vector<std::string> select_suspects(const GateJson& night, int cap) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < night.rows.size(); ++i) {
    if (i < night.suspect.size() && night.suspect[i]) order.push_back(i);
  }
  auto key = [&](std::size_t i) {
    const BenchmarkVerdict& v = night.rows[i];
    const bool first = v.verdict == Verdict::regression || v.verdict == Verdict::undecided;
    return std::pair{!first, std::isfinite(v.p_value) ? v.p_value : 1.0};
  };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
  std::vector<std::string> names;
  for (const std::size_t i : order) {
    const std::string& name = night.rows[i].benchmark;
    if (static_cast<int>(names.size()) < cap && std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string anchored(const std::vector<std::string>& names) {
  std::string out = "^(?:";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += '|';
    for (const char c : names[i]) {
      if (std::string_view(".^$*+?()[]{}|\\").find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
  }
  return out + ")$";
}

Confirmation no_suspects(const GateJson& night) {
  Confirmation c;
  c.baseline_build = night.baseline_build, c.current_build = night.current_build;
  c.baseline_git_sha = without_dirty(night.baseline_build), c.current_git_sha = without_dirty(night.current_build);
  return c;
}

Confirmation classify(const GateJson& night, const GateJson& ab, double seconds) {
  Confirmation c = no_suspects(night);
  c.seconds = seconds;
  std::map<std::pair<std::string, Instrument>, const BenchmarkVerdict*> suspects;
  std::set<std::string> names;
  for (std::size_t i = 0; i < night.rows.size(); ++i) {
    if (i >= night.suspect.size() || !night.suspect[i]) continue;
    suspects.emplace(std::pair{night.rows[i].benchmark, night.rows[i].instrument}, &night.rows[i]);
    names.insert(night.rows[i].benchmark);
  }
  std::set<std::string> seen;
  for (const BenchmarkVerdict& r : ab.rows) {
    if (!names.count(r.benchmark)) continue;
    seen.insert(r.benchmark);
    const auto night_row = suspects.find({r.benchmark, r.instrument});
    const std::string was = night_row != suspects.end() ? "night: " + to_string(night_row->second->verdict) + " " +
                                                              pct(night_row->second->slowdown)
                                                        : "night: not a suspect on this instrument";
    const std::string change = pct(r.slowdown) + " [" + pct(r.slowdown_low) + ", " + pct(r.slowdown_high) + "]";
    const std::string verdict = to_string(r.verdict);
    if (is_confirmed(r.verdict)) {
      c.regressions.push_back(
          confirmed_row(r, "confirmed: " + verdict + " " + change + " in one run of both builds (" + was + ")"));
    } else if (is_cleared(r.verdict)) {
      c.cleared.push_back(
          confirmed_row(r, "cleared: " + verdict + " " + change + " in one run of both builds (" + was + ")"));
    } else {
      c.unresolved.push_back(
          confirmed_row(r, "unresolved: " + verdict + " " + change + " within the budget (" + was + "); " + r.note));
    }
  }
  for (const auto& [key, r] : suspects) {
    if (!seen.count(key.first)) {
      c.unresolved.push_back(confirmed_row(*r, "not measured by the ab (" + to_string(r->verdict) + " in the night)"));
    }
  }
  return c;
}

nlohmann::json to_json(const Confirmation& c) {
  nlohmann::json out = {{"regressions", nlohmann::json::array()},
                        {"cleared", nlohmann::json::array()},
                        {"unresolved", nlohmann::json::array()},
                        {"baseline_git_sha", c.baseline_git_sha},
                        {"current_git_sha", c.current_git_sha},
                        {"baseline_build", c.baseline_build},
                        {"current_build", c.current_build},
                        {"seconds", c.seconds > 0 ? nlohmann::json(c.seconds) : nlohmann::json(nullptr)}};
  for (const auto& [kind, rows] :
       {std::pair{"regressions", &c.regressions}, {"cleared", &c.cleared}, {"unresolved", &c.unresolved}}) {
    for (const ConfirmedRow& r : *rows) {
      out[kind].push_back({{"benchmark", r.benchmark},
                           {"instrument", r.instrument},
                           {"experiment", r.experiment},
                           {"verdict", r.verdict},
                           {"change", number_or_null(r.change)},
                           {"low", number_or_null(r.low)},
                           {"high", number_or_null(r.high)},
                           {"p_adjusted", number_or_null(r.p_adjusted)},
                           {"why", r.why}});
    }
  }
  return out;
}

std::vector<std::string> summary_lines(const Confirmation& c, int count) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%g", c.seconds);
  std::vector<std::string> lines = {
      "### Same-runner confirmation", "",
      std::to_string(count) +
          " suspect(s) of the night measured again in one `pairbench ab` of the baseline's build (`" +
          c.baseline_build + "`) against this build (`" + c.current_build + "`), sampling until decided, " + seconds +
          " s: **" + std::to_string(c.regressions.size()) + " confirmed**, " + std::to_string(c.cleared.size()) +
          " cleared, " + std::to_string(c.unresolved.size()) +
          " unresolved. Only a confirmed regression fails the night.",
      ""};
  for (const auto* rows : {&c.regressions, &c.cleared, &c.unresolved}) {
    for (const ConfirmedRow& r : *rows) lines.push_back("- `" + r.benchmark + "` [" + r.instrument + "]: " + r.why);
  }
  return lines;
}

ConfirmedRegressions read_confirmed(const std::string& path) {
  if (const std::string problem = regular_file_problem(path); !problem.empty()) throw JsonFieldError(problem);
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw JsonFieldError(path + ": not valid JSON at byte " + std::to_string(e.byte) +
                         " (pairbench confirm's confirmed.json)");
  }
  const JsonField top(doc, path);
  ConfirmedRegressions out;
  out.baseline_git_sha = top.string_or("baseline_git_sha", "");
  out.current_git_sha = top.string_or("current_git_sha", "");
  if (const auto regressions = top.find("regressions")) {
    for (const JsonField& r : regressions->elements()) out.benchmarks.push_back(r["benchmark"].string());
  }
  std::sort(out.benchmarks.begin(), out.benchmarks.end());
  out.benchmarks.erase(std::unique(out.benchmarks.begin(), out.benchmarks.end()), out.benchmarks.end());
  return out;
}

}  // namespace pairbench::harness
