// Loading and parsing the bench binaries' experiment catalogues.
#include "harness/exec/catalogue.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <regex>
#include <initializer_list>
#include <stdexcept>

#include "harness/store/json_field.h"
#include "harness/exec/process.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

nlohmann::json verdict_check_to_json(const VerdictCheckEntry& c) {
  nlohmann::json j = {{"test", c.test}, {"treatments", c.treatments}, {"where", c.where}, {"exclude", c.exclude}};
  if (c.test == "better") j["threshold"] = c.threshold;
  if (c.test != "same") j["equivalence"] = c.equivalence;
  if (c.test == "same") j["tolerance"] = c.tolerance;
  if (!c.why.empty()) j["why"] = c.why;
  if (!c.analogue.empty()) j["analogue"] = c.analogue;
  return j;
}

namespace {
// axis -> values; a single value may be written as a string.
std::map<std::string, std::vector<std::string>> axis_values(const JsonField& j) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [axis, v] : j.members())
    out[axis] = v.json().is_string() ? std::vector<std::string>{v.string()} : v.strings();
  return out;
}

double ratio_bound(const JsonField& j, const std::string& key, double fallback) {
  const auto f = j.find(key);
  if (!f) return fallback;
  const double v = f->number();
  if (!(v > 0)) f->fail("a ratio > 0");
  return v;
}
}  // namespace

VerdictCheckEntry parse_verdict_check(const JsonField& j) {
  VerdictCheckEntry c;
  const auto test = j.find("test");
  c.test = test ? test->string() : "better";
  if (c.test != "better" && c.test != "same" && c.test != "plateau") test->fail("better, same or plateau");
  if (const auto t = j.find("treatments")) c.treatments = t->strings();
  if (c.test == "plateau" && c.treatments.size() < 2) {
    (j.find("treatments") ? *j.find("treatments") : j).fail("at least two treatments, in order, for 'plateau'");
  }
  if (const auto w = j.find("where")) c.where = axis_values(*w);
  if (const auto w = j.find("exclude")) c.exclude = axis_values(*w);
  c.threshold = ratio_bound(j, "threshold", 1.0);
  c.equivalence = ratio_bound(j, "equivalence", c.test == "plateau" ? 1.05 : 1.02);
  c.tolerance = ratio_bound(j, "tolerance", 1.1);
  if ((c.test == "same" && c.tolerance < 1) || c.equivalence < 1) {
    j[c.test == "same" ? "tolerance" : "equivalence"].fail("a ratio >= 1 (a band around 1)");
  }
  c.why = j.string_or("why", "");
  c.analogue = j.string_or("analogue", "");
  return c;
}

namespace {

// The declared figure, checked against the experiment it draws: a hint naming an axis, arm or
// counter the experiment does not have would draw nothing, silently.
FigureEntry parse_figure(const JsonField& f, const ExperimentEntry& e) {
  FigureEntry out;
  const auto one_of = [](const JsonField& field, std::initializer_list<const char*> allowed) {
    const std::string value = field.string();
    std::string expected;
    for (const char* a : allowed) {
      if (value == a) return value;
      expected += (expected.empty() ? "" : ", ") + std::string(a);
    }
    field.fail("one of " + expected);
  };
  out.kind = one_of(f["kind"], {"metric", "accuracy", "scaling", "memory"});
  out.x_scale = one_of(f["x_scale"], {"auto", "linear", "log"});
  out.y_scale = one_of(f["y_scale"], {"auto", "linear", "log"});
  const JsonField x_axis = f["x_axis"];
  out.x_axis = x_axis.string();
  if (!out.x_axis.empty() &&
      std::none_of(e.axes.begin(), e.axes.end(), [&](const auto& a) { return a.first == out.x_axis; })) {
    std::string axes;
    for (const auto& [name, values] : e.axes) axes += (axes.empty() ? "" : ", ") + name;
    x_axis.fail("empty or one of the grid's axes (" + (axes.empty() ? std::string("none") : axes) + ")");
  }
  const JsonField counter = f["counter"];
  out.counter = counter.string();
  if (out.kind != "metric" && out.kind != "scaling" && out.counter.empty()) {
    counter.fail("the counter a '" + out.kind + "' figure draws");
  }
  out.arm_axis = f.string_or("arm_axis", "");
  const JsonField arm_values = f["arm_values"];
  for (const auto& [arm, value] : arm_values.members()) {
    if (std::none_of(e.arms.begin(), e.arms.end(), [&](const ArmEntry& a) { return a.name == arm; })) {
      value.fail("a number for one of the experiment's arms (arm '" + arm + "' is not one)");
    }
    out.arm_values.emplace_back(arm, value.number());
  }
  if (out.kind == "scaling" && out.arm_values.size() != e.arms.size()) {
    arm_values.fail("a number for every arm of a 'scaling' figure (" + std::to_string(e.arms.size()) + " arms)");
  }
  return out;
}

}  // namespace

nlohmann::json figure_to_json(const FigureEntry& figure) {
  nlohmann::json arm_values = nlohmann::json::object();
  for (const auto& [arm, value] : figure.arm_values) arm_values[arm] = value;
  return {{"kind", figure.kind},       {"x_axis", figure.x_axis},   {"x_scale", figure.x_scale},
          {"y_scale", figure.y_scale}, {"counter", figure.counter}, {"arm_axis", figure.arm_axis},
          {"arm_values", arm_values}};
}

std::vector<ExperimentEntry> parse_catalogue(const nlohmann::json& listing, const std::string& binary) {
  // Every read names the binary and the field path (experiments[2].metric.name) on bad input.
  const JsonField doc(listing, binary + " --pairbench_list");
  const JsonField version = doc["schema_version"];
  if (version.integer() != 1) version.fail("1 (the catalogue version this pairbench reads)");
  nlohmann::json build = nlohmann::json::object();
  if (const auto b = doc.find("build")) {
    for (const auto& [field, value] : b->members()) {
      if (!value.json().is_string() && !value.json().is_boolean()) value.fail("a string or a boolean");
      build[field] = value.json();
    }
  }
  std::vector<ExperimentEntry> out;
  for (const JsonField& je : doc["experiments"].elements()) {
    ExperimentEntry e;
    e.binary = binary;
    e.build = build;
    e.name = je["name"].string();
    e.claim = je["claim"].string();
    e.question = je["question"].string();
    e.timing = je["timing"].string();
    e.kind = je["kind"].string();
    const JsonField metric = je["metric"];
    e.metric = metric["name"].string();
    e.unit = metric["unit"].string();
    e.better = metric["better"].string();
    if (const auto relation = metric.find("time_relation")) {
      e.time_relation = relation->string();
      if (e.time_relation != "proportional" && e.time_relation != "inverse" && e.time_relation != "none") {
        relation->fail("proportional, inverse or none");
      }
    }
    e.gate_threshold = je.number_or("gate_threshold", 0.0);
    e.instructions_gate_threshold = je.number_or("instructions_gate_threshold", 0.0);
    for (const JsonField& a : je["axes"].elements()) e.axes.emplace_back(a["name"].string(), a["values"].strings());
    for (const JsonField& a : je["arms"].elements()) {
      e.arms.push_back({a["name"].string(), a["role"].string(), a["env"].string_map()});
    }
    for (const JsonField& t : je["targets"].elements()) {
      e.targets.push_back({t["arm"].string(), t["where"].string_map(), t["bound"].number(), t["text"].string()});
    }
    if (const auto limits = je.find("limits")) {
      for (const JsonField& l : limits->elements()) {
        LimitEntry limit{l["experiment"].string(), l["arm"].string(),      l["where"].string_map(),
                         l["arms"].strings(),      l["when"].string_map(), l.string_or("counter", "")};
        if (const auto also = l.find("also")) {
          for (const JsonField& c : also->elements()) {
            limit.also.push_back({c["experiment"].string(), c["arm"].string(), c["where"].string_map()});
          }
        }
        limit.own_arms = l.boolean_or("own_arms", false);
        e.limits.push_back(std::move(limit));
      }
    }
    if (const auto secondary = je.find("secondary")) {
      for (const JsonField& m : secondary->elements()) {
        e.secondary.push_back({m["name"].string(), m["unit"].string(), m["better"].string()});
      }
    }
    if (const auto verdict = je.find("verdict")) {
      for (const JsonField& c : verdict->elements()) e.verdict.push_back(parse_verdict_check(c));
    }
    for (const JsonField& b : je["benchmarks"].elements()) {
      BenchmarkEntry be;
      be.name = b["name"].string();
      be.arm = b["arm"].string();
      const JsonField params = b["params"];
      for (const auto& [axis, values] : e.axes) be.params.emplace_back(axis, params[axis].string());
      be.available = b["available"].boolean();
      be.reason = b["reason"].string();
      be.instructions = b.boolean_or("instructions", false);
      if (const auto threads = b.find("threads")) {
        const std::int64_t n = threads->integer();
        if (n < 1 || n > 1 << 20) threads->fail("a thread count from 1 to 1048576");
        be.threads = static_cast<int>(n);
      }
      be.cuda = b.boolean_or("cuda", false);
      be.start_gate = b.boolean_or("start_gate", false);
      be.shared_process = b.boolean_or("shared_process", false);
      be.check_on_request = b.boolean_or("check_on_request", false);
      e.benchmarks.push_back(std::move(be));
    }
    if (const auto figure = je.find("figure")) e.figure = parse_figure(*figure, e);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> find_bench_binaries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    // bench_<area> only: bench_<area>.layout<k> are its layout variants (layout_variants_of).
    if (file.rfind("bench_", 0) == 0 && file.find('.') == std::string::npos && entry.is_regular_file() &&
        access(entry.path().c_str(), X_OK) == 0) {
      out.push_back(fs::absolute(entry.path()).string());
    }
  }
  if (ec) throw std::runtime_error("bench directory " + dir + ": " + ec.message());
  // An empty directory would list nothing and run nothing, and report success.
  if (out.empty())
    throw std::runtime_error("bench directory " + dir + ": no bench_* executables (expected a build's bin/)");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> layout_variants_of(const std::string& binary) {
  std::vector<std::string> out{binary};
  for (int k = 1;; ++k) {
    const std::string variant = binary + ".layout" + std::to_string(k);
    std::error_code ec;
    if (!fs::is_regular_file(variant, ec) || access(variant.c_str(), X_OK) != 0) break;
    out.push_back(variant);
  }
  return out;
}

std::vector<ExperimentEntry> load_catalogue(const std::vector<std::string>& binaries, const std::string& profile) {
  std::vector<ExperimentEntry> all;
  for (const std::string& binary : binaries) {
    // The whole listing: a nightly grid's is past the 64 KiB a failure's output is cut to.
    const ProcessResult r = run_process({binary, "--pairbench_list", "--pairbench_profile=" + profile}, {},
                                        std::chrono::seconds(60), -1, std::size_t{64} << 20);
    if (r.status != ProcessResult::Status::kExited || r.exit_code != 0) {
      throw std::runtime_error(binary + " --pairbench_list: " + r.describe());
    }
    nlohmann::json listing;
    try {
      listing = nlohmann::json::parse(r.output);
    } catch (const nlohmann::json::parse_error& ex) {
      throw std::runtime_error(binary + " --pairbench_list: not valid JSON at byte " + std::to_string(ex.byte));
    }
    const std::vector<std::string> variants = layout_variants_of(binary);
    for (auto& e : parse_catalogue(listing, binary)) {
      e.layout_binaries = variants;
      all.push_back(std::move(e));
    }
  }
  std::size_t benchmarks = 0;
  for (const auto& e : all) benchmarks += e.benchmarks.size();
  if (benchmarks == 0) throw std::runtime_error("the bench binaries list no benchmarks for profile " + profile);
  return all;
}

nlohmann::json catalogue_to_json(const std::vector<ExperimentEntry>& experiments) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : experiments) {
    nlohmann::json je = {
        {"name", e.name},
        {"claim", e.claim},
        {"question", e.question},
        {"timing", e.timing},
        {"kind", e.kind},
        {"metric", {{"name", e.metric}, {"unit", e.unit}, {"better", e.better}, {"time_relation", e.time_relation}}},
        {"binary", fs::path(e.binary).filename().string()}};
    if (e.figure) je["figure"] = figure_to_json(*e.figure);
    je["axes"] = nlohmann::json::array();
    for (const auto& [axis, values] : e.axes) je["axes"].push_back({{"name", axis}, {"values", values}});
    je["arms"] = nlohmann::json::array();
    for (const auto& a : e.arms) je["arms"].push_back({{"name", a.name}, {"role", a.role}, {"env", a.env}});
    je["verdict"] = nlohmann::json::array();
    for (const auto& c : e.verdict) je["verdict"].push_back(verdict_check_to_json(c));
    je["benchmarks"] = nlohmann::json::array();
    for (const auto& b : e.benchmarks) {
      nlohmann::json params = nlohmann::json::object();
      for (const auto& [k, v] : b.params) params[k] = v;
      je["benchmarks"].push_back({{"name", b.name},
                                  {"arm", b.arm},
                                  {"params", params},
                                  {"available", b.available},
                                  {"reason", b.reason},
                                  {"instructions", b.instructions},
                                  {"threads", b.threads},
                                  {"cuda", b.cuda},
                                  {"start_gate", b.start_gate},
                                  {"shared_process", b.shared_process},
                                  {"check_on_request", b.check_on_request}});
    }
    out.push_back(je);
  }
  return out;
}

namespace {

// A table cell: pipes escaped, line breaks flattened (a question may hold either).
std::string cell(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string joined(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

}  // namespace

std::string catalogue_to_text(const std::vector<ExperimentEntry>& experiments, const std::string& profile) {
  std::ostringstream out;
  for (const auto& e : experiments) {
    out << e.name << (e.claim.empty() ? "" : " (" + e.claim + ")") << ": " << e.question << "\n";
    out << "  metric " << e.metric << " [" << e.unit << "], " << e.better << " is better; timing " << e.timing
        << "; binary " << std::filesystem::path(e.binary).filename().string() << "\n";
    out << "  arms:";
    for (const auto& a : e.arms) {
      out << " " << a.name << " (" << a.role;
      for (const auto& [k, v] : a.env) out << ", " << k << "=" << v;
      out << ")";
    }
    out << "\n  grid (" << profile << "):";
    for (const auto& [axis, values] : e.axes) {
      out << " " << axis << "={";
      for (std::size_t i = 0; i < values.size(); ++i) out << (i ? "," : "") << values[i];
      out << "}";
    }
    out << "\n";
    std::set<std::string> reasons;
    std::size_t runnable = 0;
    for (const auto& b : e.benchmarks) {
      if (b.available) {
        ++runnable;
        continue;
      }
      std::string p;
      for (const auto& [k, v] : b.params) p += (p.empty() ? "" : ",") + k + ":" + v;
      reasons.insert(b.arm + (p.empty() ? "" : "@" + p) + ": " + b.reason);
    }
    out << "  benchmarks: " << e.benchmarks.size() << ", runnable here: " << runnable << "\n";
    for (const auto& r : reasons) out << "    not here: " << r << "\n";
  }
  return out.str();
}

std::string catalogue_to_markdown(const std::vector<ExperimentEntry>& experiments, const std::string& profile) {
  std::string out = "| experiment | claim | question | arms (baseline first) | metric | timing | grid (" + profile +
                    ") |\n|---|---|---|---|---|---|---|\n";
  for (const ExperimentEntry& e : experiments) {
    std::vector<std::string> arms, axes;
    for (const ArmEntry& a : e.arms) arms.push_back(a.name + (a.env.empty() ? "" : " (env)"));
    for (const auto& [axis, values] : e.axes) axes.push_back(axis + " " + joined(values, "/"));
    const std::string claim = e.kind == "limit" ? "limit" : (e.claim.empty() ? "—" : e.claim);
    out += "| `" + cell(e.name) + "` | " + cell(claim) + " | " + cell(e.question) + " | " + cell(joined(arms, ", ")) +
           " | `" + cell(e.metric) + "` (" + cell(e.better) + ") | " + cell(e.timing) + " | " +
           cell(axes.empty() ? "—" : joined(axes, " × ")) + " |\n";
  }
  return out;
}

std::string replace_marked_section(const std::string& document, const std::string& section, const std::string& source) {
  // Whole lines only: a marker quoted inside a sentence is not one.
  std::vector<std::size_t> begins, ends;
  std::size_t pos = 0;
  while (pos < document.size()) {
    std::size_t eol = document.find('\n', pos);
    if (eol == std::string::npos) eol = document.size();
    const std::string line = document.substr(pos, eol - pos);
    if (line == kTableBeginMarker) begins.push_back(pos);
    if (line == kTableEndMarker) ends.push_back(pos);
    pos = eol + 1;
  }
  if (begins.size() != 1 || ends.size() != 1 || ends[0] < begins[0]) {
    throw std::runtime_error(source + ": expected one line " + kTableBeginMarker + " and, after it, one line " +
                             kTableEndMarker + " around the experiment table; found " + std::to_string(begins.size()) +
                             " and " + std::to_string(ends.size()));
  }
  const std::size_t body = document.find('\n', begins[0]) + 1;
  return document.substr(0, body) + section + document.substr(ends[0]);
}

std::string default_bench_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

std::vector<ExperimentEntry> keep_benchmarks_matching(std::vector<ExperimentEntry> experiments,
                                                      const std::string& regex) {
  if (regex.empty()) return experiments;
  const std::regex re(regex, std::regex::ECMAScript);
  for (auto& e : experiments) {
    std::erase_if(e.benchmarks, [&](const BenchmarkEntry& b) { return !std::regex_search(b.name, re); });
  }
  std::erase_if(experiments, [](const ExperimentEntry& e) { return e.benchmarks.empty(); });
  return experiments;
}

}  // namespace pairbench::harness
