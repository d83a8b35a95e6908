// Atomic writing and validated reading of run files (the reading side checks, in order: the file,
// the JSON text with its nesting depth, the schema, then what a schema cannot say).
#include "harness/store/run_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <random>
#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include "pairbench/run_file_schema.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {
std::string errno_text() { return std::strerror(errno); }

std::string directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}
}  // namespace

void check_writable(const std::string& path) {
  const std::string dir = directory_of(path);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (fs::is_directory(path)) throw std::runtime_error(path + ": is a directory, not a file");
  std::string probe = dir + "/.pairbench-write-test-XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot write to directory " + dir + ": " + errno_text());
  close(fd);
  unlink(probe.c_str());
}

void write_json_atomically(const std::string& path, const nlohmann::json& doc) {
  write_text_atomically(path, doc.dump(2) + "\n");
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string dir = directory_of(path);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot create temporary file: " + errno_text());
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      const std::string why = errno_text();
      close(fd);
      unlink(tmp.c_str());
      throw std::runtime_error(path + ": write failed: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  fchmod(fd, 0644);
  if (fsync(fd) != 0 || close(fd) != 0) {
    const std::string why = errno_text();
    unlink(tmp.c_str());
    throw std::runtime_error(path + ": fsync failed: " + why);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = errno_text();
    unlink(tmp.c_str());
    throw std::runtime_error(path + ": rename failed: " + why);
  }
}

std::string utc_stamp(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

const JsonSchema& run_file_schema() {
  static const JsonSchema schema(nlohmann::ordered_json::parse(kRunFileSchemaText));
  return schema;
}

const RunFileLimits& run_file_limits() {
  static const RunFileLimits limits = [] {
    const auto& l = run_file_schema().document().at("x-pairbench-limits");
    return RunFileLimits{l.at("max_bytes").get<std::uint64_t>(), l.at("max_depth").get<std::size_t>()};
  }();
  return limits;
}

namespace {

// Walks the text once without building a document: refuses nesting past the limit before any
// recursive code (nlohmann's DOM, dump, comparison) sees it, and knows the field path where the
// text stops being JSON.
class PrecheckSax {
 public:
  explicit PrecheckSax(std::size_t max_depth) : max_depth_(max_depth) {}

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(nlohmann::json::number_integer_t) { return value(); }
  bool number_unsigned(nlohmann::json::number_unsigned_t) { return value(); }
  bool number_float(nlohmann::json::number_float_t, const nlohmann::json::string_t&) { return value(); }
  bool string(nlohmann::json::string_t&) { return value(); }
  bool binary(nlohmann::json::binary_t&) { return value(); }
  bool start_object(std::size_t) { return open(false); }
  bool key(nlohmann::json::string_t& k) {
    frames_.back().key = k;
    frames_.back().has_key = true;
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(true); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t position, const std::string& last_token, const nlohmann::detail::exception&) {
    error_position_ = position;
    last_token_ = last_token;
    return false;
  }

  bool too_deep() const { return too_deep_; }
  std::size_t error_position() const { return error_position_; }
  const std::string& last_token() const { return last_token_; }
  // Where the parser was: "benchmarks[2].real_time"; "" at the top level.
  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) {
      if (f.is_array) {
        out = json_element_path(out, f.index);
      } else if (f.has_key) {
        out = json_member_path(out, f.key);
      }
    }
    return out;
  }

 private:
  struct Frame {
    bool is_array = false;
    std::size_t index = 0;  // of the element being read
    bool has_key = false;   // a key was read and its value is not finished
    std::string key;
  };
  bool value() {
    advance();
    return true;
  }
  bool open(bool is_array) {
    if (frames_.size() >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    frames_.push_back({is_array});
    return true;
  }
  bool close() {
    frames_.pop_back();
    advance();
    return true;
  }
  void advance() {
    if (frames_.empty()) return;
    Frame& f = frames_.back();
    if (f.is_array) {
      ++f.index;
    } else {
      f.has_key = false;
    }
  }

  std::size_t max_depth_;
  std::vector<Frame> frames_;
  bool too_deep_ = false;
  std::size_t error_position_ = 0;
  std::string last_token_;
};

// The offset of the first byte that is not well-formed UTF-8, or npos.
std::size_t first_invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;  // no UTF-16 surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    for (std::size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

// The word of JSON text around byte `at` (a literal, a number, or the one character there), at most
// 1000 bytes: what the parser stopped on.
std::string_view word_at(std::string_view text, std::size_t at) {
  auto in_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '.'; };
  if (!in_word(text[at])) return text.substr(at, 1);
  std::size_t start = at, end = at + 1;
  while (start > 0 && in_word(text[start - 1]) && end - start < 1000) --start;
  while (end < text.size() && in_word(text[end]) && end - start < 1000) ++end;
  return text.substr(start, end - start);
}

// "not valid JSON at line 3, column 14 (byte 52): <why>", for the parser's stop at `position`
// (nlohmann counts the bytes it read, the offending one included).
std::string syntax_problem(std::string_view text, std::size_t position, const std::string& last_token) {
  if (text.empty()) return "not valid JSON: the file is empty";
  const std::size_t at = std::min(position > 0 ? position - 1 : 0, text.size());  // the offending byte
  std::size_t line = 1, line_start = 0;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') ++line, line_start = i + 1;
  }
  const std::string where = "not valid JSON at line " + std::to_string(line) + ", column " +
                            std::to_string(at - line_start + 1) + " (byte " + std::to_string(position) + "): ";
  if (at >= text.size()) return where + "the text ends early (truncated?)";
  const std::size_t bad_utf8 = first_invalid_utf8(text);
  if (bad_utf8 != std::string_view::npos && bad_utf8 <= at) {
    return where + "not UTF-8 text at byte " + std::to_string(bad_utf8);
  }
  if (last_token.find("\\ud") != std::string::npos || last_token.find("\\uD") != std::string::npos) {
    return where + "a \\u escape that is half of a UTF-16 surrogate pair";
  }
  const std::string word(word_at(text, at));
  for (const char* literal : {"NaN", "Infinity", "-Infinity", "+Infinity", "-NaN"}) {
    if (word.rfind(literal, 0) == 0) return where + "NaN and Infinity are not JSON numbers; expected a finite number";
  }
  if (!word.empty() && (std::isdigit(static_cast<unsigned char>(word[0])) || word[0] == '-')) {
    errno = 0;
    const double value = std::strtod(word.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(value)) {
      return where + "the number " + json_quoted(word, 24) + " is too large for a double; expected a finite number";
    }
  }
  return where + "unexpected " + json_quoted(word, 24);
}

// What the schema cannot say: benchmarks refer to declared experiments, names carry their
// experiment and arm (the join key of every result), experiment names are unique.
void check_references(const nlohmann::json& doc, const std::string& source) {
  auto fail = [&](const std::string& path, const std::string& problem) {
    throw RunFileError(source + ": " + path + ": " + problem);
  };
  const auto& pb = doc["pairbench"];
  std::map<std::string, std::size_t> experiment_at;
  for (std::size_t i = 0; i < pb["experiments"].size(); ++i) {
    const std::string& name = pb["experiments"][i]["name"].get_ref<const std::string&>();
    const auto [it, fresh] = experiment_at.emplace(name, i);
    if (!fresh) {
      fail("pairbench.experiments[" + std::to_string(i) + "].name",
           "expected a name no other experiment has, is " + describe_json_value(name) +
               " (also pairbench.experiments[" + std::to_string(it->second) + "].name)");
    }
  }
  auto check_entries = [&](const nlohmann::json& entries, const std::string& where) {
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const auto& b = entries[i];
      const std::string at = json_element_path(where, i);
      const std::string& experiment = b["experiment"].get_ref<const std::string&>();
      if (!experiment_at.count(experiment)) {
        fail(at + ".experiment",
             "expected one of pairbench.experiments[].name, is " + describe_json_value(b["experiment"]));
      }
      const std::string prefix = experiment + "/" + b["arm"].get<std::string>();
      const std::string& name = b["name"].get_ref<const std::string&>();
      if (name != prefix && name.rfind(prefix + "/", 0) != 0) {
        fail(at + ".name", "expected a name starting with " + json_quoted(prefix, 100) + " (its experiment/arm), is " +
                               describe_json_value(b["name"]));
      }
    }
  };
  check_entries(doc["benchmarks"], "benchmarks");
  if (pb.contains("instructions")) check_entries(pb["instructions"], "pairbench.instructions");
}

void close_quietly(int fd) {
  while (close(fd) != 0 && errno == EINTR) {
  }
}

// "a FIFO (named pipe)", "a directory", ...: what a stat mode is, when it is not a regular file.
std::string file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::string too_large(std::uint64_t bytes) {
  const std::uint64_t max = run_file_limits().max_bytes;
  const std::string gib = max % (1ull << 30) == 0 ? " (" + std::to_string(max >> 30) + " GiB)" : "";
  return "expected a run file of at most " + std::to_string(max) + " bytes" + gib + ", is " + std::to_string(bytes) +
         " bytes";
}

// " (benchmark \"NAME\")" when `path` lies inside benchmarks[i] or pairbench.instructions[i] and
// that entry has a non-empty name: what a reader of the message looks for. "" otherwise.
std::string benchmark_named_at(const nlohmann::json& doc, const std::string& path) {
  for (const char* where : {"benchmarks", "pairbench.instructions"}) {
    const std::string prefix = std::string(where) + "[";
    if (path.rfind(prefix, 0) != 0) continue;
    auto member = [](const nlohmann::json* v, const char* key) -> const nlohmann::json* {
      if (!v || !v->is_object()) return nullptr;
      const auto it = v->find(key);
      return it == v->end() ? nullptr : &*it;
    };
    const nlohmann::json* entries =
        where[0] == 'b' ? member(&doc, "benchmarks") : member(member(&doc, "pairbench"), "instructions");
    const std::size_t close = path.find(']', prefix.size());
    if (!entries || !entries->is_array() || close == std::string::npos) return "";
    const std::size_t index = std::stoul(path.substr(prefix.size(), close - prefix.size()));
    if (index >= entries->size()) return "";
    const auto& entry = (*entries)[index];
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        entry["name"].get_ref<const std::string&>().empty()) {
      return "";
    }
    return " (benchmark " + json_quoted(entry["name"].get<std::string>(), 100) + ")";
  }
  return "";
}

}  // namespace

nlohmann::json parse_run_file_text(std::string_view text, const std::string& source) {
  const RunFileLimits& limits = run_file_limits();
  if (text.size() > limits.max_bytes) throw RunFileError(source + ": " + too_large(text.size()));

  PrecheckSax sax(limits.max_depth);
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &sax)) {
    if (sax.too_deep()) {
      throw RunFileError(source + ": expected JSON nested at most " + std::to_string(limits.max_depth) +
                         " levels deep (a run file needs 10), is nested deeper");
    }
    const std::string path = sax.path();
    throw RunFileError(source + ": " + (path.empty() ? "" : path + ": ") +
                       syntax_problem(text, sax.error_position(), sax.last_token()));
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {  // the SAX pass read the same text: not expected
    throw RunFileError(source + ": " + syntax_problem(text, e.byte, ""));
  }
  if (const auto violation = run_file_schema().validate(doc)) {
    throw RunFileError(source + ": " + (violation->path.empty() ? "(top level)" : violation->path) + ": " +
                       violation->problem + benchmark_named_at(doc, violation->path));
  }
  check_references(doc, source);
  return doc;
}

nlohmann::json read_run_file(const std::string& path) {
  // stat first: opening a FIFO blocks until a writer comes, which may be never.
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw RunFileError(path + ": cannot open: " + errno_text());
  if (!S_ISREG(st.st_mode))
    throw RunFileError(path + ": expected a regular file (a run file), is " + file_kind(st.st_mode));
  const std::uint64_t max_bytes = run_file_limits().max_bytes;
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw RunFileError(path + ": " + too_large(st.st_size));
  // O_NONBLOCK: the path may have been replaced by a FIFO since the stat; fstat says what was opened.
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw RunFileError(path + ": cannot open: " + errno_text());
  std::string text;
  try {
    if (fstat(fd, &st) != 0) throw RunFileError(path + ": cannot stat: " + errno_text());
    if (!S_ISREG(st.st_mode))
      throw RunFileError(path + ": expected a regular file (a run file), is " + file_kind(st.st_mode));
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) throw RunFileError(path + ": " + too_large(st.st_size));
    text.reserve(static_cast<std::size_t>(st.st_size));
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw RunFileError(path + ": cannot read: " + errno_text());
      if (n == 0) break;
      text.append(buf, static_cast<std::size_t>(n));
      if (text.size() > max_bytes) throw RunFileError(path + ": " + too_large(text.size()) + " (and growing)");
    }
  } catch (...) {
    close_quietly(fd);
    throw;
  }
  close_quietly(fd);
  return parse_run_file_text(text, path);
}
namespace {

template <std::size_t N>
std::vector<std::string> differences_in(const char* const (&fields)[N], const nlohmann::json& a,
                                        const nlohmann::json& b) {
  std::vector<std::string> out;
  for (const char* field : fields) {
    const nlohmann::json va = a.value(field, nlohmann::json()), vb = b.value(field, nlohmann::json());
    if (va != vb) out.push_back(std::string(field) + ": " + va.dump() + " vs " + vb.dump());
  }
  return out;
}

}  // namespace

std::vector<std::string> fingerprint_differences(const nlohmann::json& a, const nlohmann::json& b) {
  return differences_in(kComparableFields, a, b);
}

std::vector<std::string> build_differences(const nlohmann::json& a, const nlohmann::json& b) {
  return differences_in(kBuildFields, a, b);
}

// ---- The writer -------------------------------------------------------------------------------

namespace {

// Google Benchmark's row of a time sample, with what pairbench adds to it.
nlohmann::json benchmark_row(const Sample& s, int repetitions) {
  nlohmann::json b = s.gbench;
  b["run_name"] = b["name"] = s.benchmark;
  b["experiment"] = s.experiment;
  b["arm"] = s.arm;
  b["repetitions"] = repetitions;
  b["repetition_index"] = s.repetition;
  b["verification"] = to_string(s.verification);
  if (s.checked_elsewhere) b["checked_in"] = "another process";
  b["metric_value"] = s.metric_value;
  b["process_wall_s"] = s.process_wall_s;
  b["iterations"] = s.iterations;
  b["measured_s"] = s.measured_s;
  if (s.loop_wall_s > 0 || s.setup_s > 0) {
    b["sample_wall"] = {{"setup_s", s.setup_s}, {"loop_s", s.loop_wall_s}, {"after_s", s.after_s}};
    if (s.verify_s > 0) b["sample_wall"]["verify_s"] = s.verify_s;
    if (s.setup_faults >= 0) b["sample_wall"]["setup_faults"] = s.setup_faults;
  }
  if (!s.batches.empty()) b["metric_batches"] = s.batches;
  if (s.pair >= 0) b["duet_pair"] = s.pair, b["cpu"] = s.cpu;
  if (s.pair >= 0) b["duet_lead"] = s.duet_lead, b["duet_start_gate"] = s.duet_start_gate;
  if (s.pair >= 0 && s.cpus.size() > 1) b["cpus"] = s.cpus;
  if (s.shared_process >= 0) {
    b["shared_process"] = {
        {"id", s.shared_process}, {"benchmarks", s.shared_benchmarks}, {"position", s.shared_position}};
  }
  if (s.gpu_sm_mhz > 0) {
    b["gpu_clock"] = {{"sm_mhz", s.gpu_sm_mhz}, {"sm_max_mhz", s.gpu_sm_max_mhz}, {"throttling", s.gpu_throttling}};
  }
  b["sequence"] = s.sequence;
  b["start_s"] = s.start_s;
  if (s.layout.drawn) {
    b["layout"] = {{"variant", s.layout.variant},
                   {"variants", s.layout.variants},
                   {"env_pad_bytes", s.layout.env_pad_bytes},
                   {"seed", s.layout.seed}};
  }
  return b;
}

}  // namespace

nlohmann::json calibration_check_json(const RunRecord::CalibrationCheck& check) {
  auto ratio_json = [](const RunRecord::CalibrationRatio& c) {
    nlohmann::json j{{"name", c.name},
                     {"s_per_iteration", c.s_per_iteration},
                     {"calibrated_s_per_iteration", c.calibrated_s_per_iteration},
                     {"ratio", c.ratio},
                     {"reference", c.against_run ? "run" : "calibration"}};
    if (c.run_spread > 0) j["run_spread"] = c.run_spread;
    return j;
  };
  nlohmann::json out = {{"limit", check.limit}, {"over", nlohmann::json::array()}};
  out["max"] = check.max ? ratio_json(*check.max) : nlohmann::json(nullptr);
  for (const auto& c : check.over) out["over"].push_back(ratio_json(c));
  return out;
}

namespace {

// An instruction-counting process's entry of `pairbench.instructions`.
nlohmann::json instruction_row(const Sample& s) {
  nlohmann::json entry = {{"name", s.benchmark},
                          {"experiment", s.experiment},
                          {"arm", s.arm},
                          {"repetition_index", s.repetition},
                          {"verification", to_string(s.verification)},
                          {"instructions_per_iteration", s.metric_value},
                          {"iterations", s.iterations},
                          {"process_wall_s", s.process_wall_s}};
  if (s.functions) {
    nlohmann::json top = nlohmann::json::array();
    for (const FunctionShare& f : s.functions->top) {
      top.push_back({{"function", f.function}, {"instructions_per_iteration", f.instructions_per_iteration}});
    }
    entry["functions"] = {{"cost", "self"},
                          {"event", "Ir"},
                          {"top", top},
                          {"other_per_iteration", s.functions->other_per_iteration},
                          {"functions_counted", s.functions->functions}};
  }
  return entry;
}

// `pairbench.sampling.process_budget`: what the run's time budgets planned per benchmark.
nlohmann::json process_budget_json(const RunRecord::ProcessBudget& p) {
  const auto wall_or_null = [](double s) { return s > 0 ? nlohmann::json(s) : nlohmann::json(nullptr); };
  nlohmann::json benchmarks = nlohmann::json::array();
  for (const auto& b : p.benchmarks) {
    benchmarks.push_back({{"name", b.name},
                          {"processes", b.processes},
                          {"profile_processes", b.profile_processes},
                          {"process_wall_s", wall_or_null(b.process_wall_s)},
                          {"instruction_processes", b.instruction_processes},
                          {"profile_instruction_processes", b.profile_instruction_processes},
                          {"instruction_process_wall_s", wall_or_null(b.instruction_process_wall_s)},
                          {"reason", b.reason}});
  }
  return {{"budget_s", p.budget_s},
          {"min_processes", p.min_processes},
          {"instruction_budget_s", p.instruction_budget_s},
          {"min_instruction_processes", p.min_instruction_processes},
          {"benchmarks_cut", p.benchmarks_cut},
          {"unknown_wall", p.unknown_wall},
          {"projected_wall_s", p.projected_wall_s},
          {"benchmarks", benchmarks}};
}

}  // namespace

nlohmann::json run_document(const RunRecord& r) {
  const nlohmann::json& env = r.environment;
  // null where the environment lacks the field, as Google Benchmark's context would have it.
  const auto field = [&](const char* key) {
    return env.is_object() && env.contains(key) ? env[key] : nlohmann::json();
  };
  nlohmann::json doc;
  doc["context"] = {{"date", r.started_at},
                    {"host_name", field("hostname")},
                    {"executable", "pairbench"},
                    {"num_cpus", field("cpu_count")},
                    {"library_build_type", field("build_type") == "Release" ? "release" : "debug"},
                    {"pairbench_profile", r.profile}};
  doc["benchmarks"] = nlohmann::json::array();
  nlohmann::json not_run = nlohmann::json::array();
  nlohmann::json instructions = nlohmann::json::array();
  // Processes per benchmark: the profile's, or what its time budget planned.
  std::map<std::string, int> planned;
  if (r.process_budget) {
    for (const auto& b : r.process_budget->benchmarks) planned[b.name] = b.processes;
  }
  for (const Sample& s : r.samples) {
    const bool good = s.has_value && !s.gbench.is_null() && has_usable_value(s.verification);
    if (good && s.instrument == Instrument::instructions) {
      instructions.push_back(instruction_row(s));  // not in `benchmarks`: compare.py would read them as times
    } else if (good) {
      const auto it = planned.find(s.benchmark);
      doc["benchmarks"].push_back(benchmark_row(s, it == planned.end() ? r.repetitions : it->second));
    } else {
      not_run.push_back({{"name", s.benchmark},
                         {"experiment", s.experiment},
                         {"arm", s.arm},
                         {"repetition_index", s.repetition},
                         {"verification", to_string(s.verification)},
                         {"reason", s.reason},
                         {"instrument", to_string(s.instrument)}});
    }
  }
  doc["pairbench"] = {{"schema_version", kRunFileSchemaVersion},
                      {"profile", r.profile},
                      {"repetitions", r.repetitions},
                      {"min_time_s", r.batches * r.sample_time_s},
                      {"sampling",
                       {{"processes", r.repetitions},
                        {"batches", r.batches},
                        {"sample_time_s", r.sample_time_s},
                        {"max_loop_wall_s", r.max_loop_wall_s},
                        {"iterations", "fixed per benchmark by calibration"},
                        {"calibration", r.calibration},
                        {"calibrated_in_this_run", r.calibrated_in_this_run},
                        {"drifted_from_calibration", r.drifted_from_calibration},
                        {"calibration_wall_s", r.calibration_wall_s},
                        {"pairing", r.pairing},
                        {"process_sharing", r.process_sharing},
                        {"duet_cpus", r.duet_cpus},
                        {"instruction_processes", r.instruction_processes},
                        {"instruction_counter", r.instruction_counter},
                        {"instruction_counter_note", r.instruction_counter_note},
                        {"instruction_functions", r.instruction_functions}}},
                      {"timeout_s", r.timeout_s},
                      {"seed", r.seed},
                      {"started_at", r.started_at},
                      {"finished_at", r.finished_at},
                      {"wall_s", r.wall_s},
                      {"command", r.command},
                      {"environment", env},
                      {"not_run", not_run},
                      {"instructions", instructions},
                      {"experiments", r.experiments}};
  doc["pairbench"]["claims"] = r.claims;
  doc["pairbench"]["run_id"] = r.run_id;
  nlohmann::json& sampling = doc["pairbench"]["sampling"];
  if (r.pairing == "duet") {
    sampling["sequential_in_duet"] = nlohmann::json::array();
    for (const auto& q : r.sequential_in_duet) {
      sampling["sequential_in_duet"].push_back({{"name", q.name}, {"threads", q.threads}, {"reason", q.reason}});
    }
  }
  if (r.calibration_check) sampling["against_calibration"] = calibration_check_json(*r.calibration_check);
  if (r.process_budget) sampling["process_budget"] = process_budget_json(*r.process_budget);
  if (r.interrupted) {
    doc["pairbench"]["interrupted"] = {{"signal", r.interrupted->signal},
                                       {"completed_processes", r.interrupted->completed_processes},
                                       {"planned_processes", r.interrupted->planned_processes}};
  }
  return doc;
}

std::string new_run_id() {
  std::random_device rd;
  char id[33];
  std::snprintf(id, sizeof id, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return id;
}

namespace {

// `path` with `-<pid>` before its extension, for a fallback name that is taken already.
std::string unique_variant(const std::filesystem::path& path) {
  const std::string name = path.stem().string() + "-" + std::to_string(getpid()) + path.extension().string();
  return (path.parent_path() / name).string();
}

}  // namespace

std::string write_run_file(const std::string& wanted, const nlohmann::json& doc, bool to_stdout) {
  namespace fs = std::filesystem;
  std::string why;
  try {
    write_json_atomically(wanted, doc);
    return wanted;
  } catch (const std::exception& e) {
    why = e.what();
  }
  const std::string name = fs::path(wanted).filename().string();
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);  // fails where the current directory was removed
  const char* tmp = std::getenv("TMPDIR");
  const std::vector<fs::path> fallbacks = {ec ? fs::path(".") / name : cwd / name,
                                           fs::path(tmp && *tmp ? tmp : "/tmp") / name};
  for (const fs::path& candidate : fallbacks) {
    const std::string path = fs::exists(candidate, ec) ? unique_variant(candidate) : candidate.string();
    if (path == wanted) continue;
    try {
      write_json_atomically(path, doc);
      std::cerr << "pairbench: cannot write the run file (" << why << "); wrote it to " << path << " instead\n";
      return path;
    } catch (const std::exception&) {
    }
  }
  if (!to_stdout) return "";
  std::cerr << "pairbench: cannot write the run file (" << why
            << ") nor a fallback in the current or temporary directory; the run file follows on stdout\n";
  std::cout << doc.dump(2) << "\n" << std::flush;
  return "-";
}

}  // namespace pairbench::harness
