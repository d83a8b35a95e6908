// Reading callgrind's output file into self instructions per function (see callgrind_profile.h).
#include "harness/exec/callgrind_profile.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace pairbench::harness {
namespace {

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool parse_count(const std::string& text, std::uint64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

// The reader's state through one file: the header's layout, the functions' names by id, and
// each function's own instructions.
class CallgrindReader {
 public:
  explicit CallgrindReader(const std::string& path) : path_(path) {}

  void line(const std::string& line) {
    ++line_no_;
    if (line.empty() || line[0] == '#') return;
    const char c = line[0];
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '*') return cost_line(line);  // positions, then events
    if (const auto eq = line.find('='); eq != std::string::npos && line.find(':') > eq) {
      return name_line(line.substr(0, eq), line.substr(eq + 1), line);
    }
    const auto colon = line.find(':');  // a header line, "key: value"; keys are words
    if (colon == std::string::npos || !std::isalpha(static_cast<unsigned char>(c)))
      throw fail("not a line of callgrind's format: '" + line.substr(0, 80) + "'");
    header_line(line.substr(0, colon), words(line.substr(colon + 1)));
  }

  // The profile, once every line is read: the file must be whole and add up.
  CallgrindProfile finish(bool read_error) const {
    if (read_error) throw std::runtime_error(path_ + ": read error after line " + std::to_string(line_no_));
    if (ir_index_ < 0) throw std::runtime_error(path_ + ": not callgrind's output (no `events:` line)");
    if (!any_totals_) {
      throw std::runtime_error(path_ + ": truncated: no `totals:` line, which callgrind writes last (" +
                               std::to_string(line_no_) + " lines)");
    }
    if (self_sum_ != totals_) {
      throw std::runtime_error(path_ + ": inconsistent: the functions' own costs sum to " + std::to_string(self_sum_) +
                               " instructions, its `totals:` line says " + std::to_string(totals_));
    }
    CallgrindProfile out;
    out.total = totals_;
    for (const auto& [name, cost] : self_) {
      if (cost > 0) out.functions.push_back({name, cost});
    }
    std::sort(out.functions.begin(), out.functions.end(), [](const FunctionCost& a, const FunctionCost& b) {
      return a.instructions != b.instructions ? a.instructions > b.instructions : a.function < b.function;
    });
    return out;
  }

 private:
  std::runtime_error fail(const std::string& what) const {
    return std::runtime_error(path_ + ": line " + std::to_string(line_no_) + ": " + what);
  }

  // "(id) name" defines an id, "(id)" uses one, "name" is uncompressed.
  std::string function_name(const std::string& spec) {
    if (spec.empty() || spec[0] != '(') return spec;
    const auto close = spec.find(')');
    if (close == std::string::npos) throw fail("unclosed name id '" + spec + "'");
    const std::string id = spec.substr(0, close + 1);
    if (close + 1 < spec.size()) return names_[id] = spec.substr(spec.find_first_not_of(' ', close + 1));
    const auto it = names_.find(id);
    if (it == names_.end()) throw fail("function id " + id + " used before it is named");
    return it->second;
  }

  void cost_line(const std::string& line) {
    if (ir_index_ < 0) throw fail("a cost line before `events:` names the event Ir");
    const auto w = words(line);
    std::uint64_t ir = 0;
    const std::size_t at = positions_ + static_cast<std::size_t>(ir_index_);
    if (w.size() < positions_) throw fail("a cost line with fewer than " + std::to_string(positions_) + " positions");
    if (at < w.size() && !parse_count(w[at], ir))
      throw fail("an instruction count that is not a number: '" + w[at] + "'");
    if (call_cost_next_) {
      call_cost_next_ = false;  // the callee's cost, counted in the callee's own fn= block
      return;
    }
    if (function_.empty()) throw fail("a cost line before any `fn=`");
    self_[function_] += ir;
    self_sum_ += ir;
  }

  void name_line(const std::string& key, const std::string& value, const std::string& line) {
    if (key == "fn") {
      function_ = function_name(value);
      call_cost_next_ = false;
    } else if (key == "cfn") {
      function_name(value);  // may name a new id
    } else if (key == "calls") {
      call_cost_next_ = true;
    } else if (key != "ob" && key != "fl" && key != "fi" && key != "fe" && key != "cob" && key != "cfi" &&
               key != "cfl" && key != "jump" && key != "jcnd") {
      throw fail("not a line of callgrind's format: '" + line.substr(0, 80) + "'");
    }
  }

  void header_line(const std::string& key, const std::vector<std::string>& value) {
    if (key == "positions") {
      positions_ = value.size();
      if (positions_ == 0) throw fail("`positions:` names none");
    } else if (key == "events") {
      const auto it = std::find(value.begin(), value.end(), "Ir");
      if (it == value.end()) throw fail("`events:` lacks Ir (instructions)");
      ir_index_ = static_cast<int>(it - value.begin());
    } else if (key == "totals") {
      std::uint64_t v = 0;
      if (ir_index_ < 0 || value.size() <= static_cast<std::size_t>(ir_index_) ||
          !parse_count(value[static_cast<std::size_t>(ir_index_)], v)) {
        throw fail("`totals:` without an instruction count");
      }
      totals_ += v;
      any_totals_ = true;
    }
  }

  std::string path_;
  int line_no_ = 0;
  std::size_t positions_ = 1;  // "positions: line" unless the header says otherwise
  int ir_index_ = -1;          // of the event Ir among `events:`
  // `totals:` closes each part of the file (its header's `summary:` is 0 when collection starts
  // switched off, as ours does): without it the file was cut short.
  bool any_totals_ = false;
  std::uint64_t totals_ = 0, self_sum_ = 0;
  std::map<std::string, std::string> names_;  // "(id)" -> function name (fn= and cfn= share the ids)
  std::map<std::string, std::uint64_t> self_;
  std::string function_;
  bool call_cost_next_ = false;  // the cost line after `calls=` is the call's inclusive cost
};

}  // namespace

CallgrindProfile read_callgrind_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  CallgrindReader reader(path);
  for (std::string line; std::getline(in, line);) reader.line(line);
  return reader.finish(in.bad());
}

}  // namespace pairbench::harness
