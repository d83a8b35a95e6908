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

}  // namespace

CallgrindProfile read_callgrind_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  int line_no = 0;
  auto fail = [&](const std::string& what) -> std::runtime_error {
    return std::runtime_error(path + ": line " + std::to_string(line_no) + ": " + what);
  };
  std::size_t positions = 1;  // "positions: line" unless the header says otherwise
  int ir_index = -1;          // of the event Ir among `events:`
  // `totals:` closes each part of the file (its header's `summary:` is 0 when collection starts
  // switched off, as ours does): without it the file was cut short.
  bool any_totals = false;
  std::uint64_t totals = 0, self_sum = 0;
  std::map<std::string, std::string> names;  // "(id)" -> function name (fn= and cfn= share the ids)
  std::map<std::string, std::uint64_t> self;
  std::string function;
  bool call_cost_next = false;  // the cost line after `calls=` is the call's inclusive cost

  // "(id) name" defines an id, "(id)" uses one, "name" is uncompressed.
  auto function_name = [&](const std::string& spec) {
    if (spec.empty() || spec[0] != '(') return spec;
    const auto close = spec.find(')');
    if (close == std::string::npos) throw fail("unclosed name id '" + spec + "'");
    const std::string id = spec.substr(0, close + 1);
    if (close + 1 < spec.size()) return names[id] = spec.substr(spec.find_first_not_of(' ', close + 1));
    const auto it = names.find(id);
    if (it == names.end()) throw fail("function id " + id + " used before it is named");
    return it->second;
  };

  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty() || line[0] == '#') continue;
    const char c = line[0];
    if ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '*') {  // a cost line: positions, then events
      if (ir_index < 0) throw fail("a cost line before `events:` names the event Ir");
      const auto w = words(line);
      std::uint64_t ir = 0;
      const std::size_t at = positions + static_cast<std::size_t>(ir_index);
      if (w.size() < positions) throw fail("a cost line with fewer than " + std::to_string(positions) + " positions");
      if (at < w.size() && !parse_count(w[at], ir))
        throw fail("an instruction count that is not a number: '" + w[at] + "'");
      if (call_cost_next) {
        call_cost_next = false;  // the callee's cost, counted in the callee's own fn= block
        continue;
      }
      if (function.empty()) throw fail("a cost line before any `fn=`");
      self[function] += ir;
      self_sum += ir;
      continue;
    }
    if (const auto eq = line.find('='); eq != std::string::npos && line.find(':') > eq) {
      const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
      if (key == "fn") {
        function = function_name(value);
        call_cost_next = false;
      } else if (key == "cfn") {
        function_name(value);  // may name a new id
      } else if (key == "calls") {
        call_cost_next = true;
      } else if (key != "ob" && key != "fl" && key != "fi" && key != "fe" && key != "cob" && key != "cfi" &&
                 key != "cfl" && key != "jump" && key != "jcnd") {
        throw fail("not a line of callgrind's format: '" + line.substr(0, 80) + "'");
      }
      continue;
    }
    const auto colon = line.find(':');  // a header line, "key: value"; keys are words
    if (colon == std::string::npos || !std::isalpha(static_cast<unsigned char>(c)))
      throw fail("not a line of callgrind's format: '" + line.substr(0, 80) + "'");
    const std::string key = line.substr(0, colon);
    const auto value = words(line.substr(colon + 1));
    if (key == "positions") {
      positions = value.size();
      if (positions == 0) throw fail("`positions:` names none");
    } else if (key == "events") {
      const auto it = std::find(value.begin(), value.end(), "Ir");
      if (it == value.end()) throw fail("`events:` lacks Ir (instructions)");
      ir_index = static_cast<int>(it - value.begin());
    } else if (key == "totals") {
      std::uint64_t v = 0;
      if (ir_index < 0 || value.size() <= static_cast<std::size_t>(ir_index) ||
          !parse_count(value[static_cast<std::size_t>(ir_index)], v)) {
        throw fail("`totals:` without an instruction count");
      }
      totals += v;
      any_totals = true;
    }
  }
  if (in.bad()) throw std::runtime_error(path + ": read error after line " + std::to_string(line_no));
  if (ir_index < 0) throw std::runtime_error(path + ": not callgrind's output (no `events:` line)");
  if (!any_totals) {
    throw std::runtime_error(path + ": truncated: no `totals:` line, which callgrind writes last (" +
                             std::to_string(line_no) + " lines)");
  }
  if (self_sum != totals) {
    throw std::runtime_error(path + ": inconsistent: the functions' own costs sum to " + std::to_string(self_sum) +
                             " instructions, its `totals:` line says " + std::to_string(totals));
  }
  CallgrindProfile out;
  out.total = totals;
  for (const auto& [name, cost] : self) {
    if (cost > 0) out.functions.push_back({name, cost});
  }
  std::sort(out.functions.begin(), out.functions.end(), [](const FunctionCost& a, const FunctionCost& b) {
    return a.instructions != b.instructions ? a.instructions > b.instructions : a.function < b.function;
  });
  return out;
}

}  // namespace pairbench::harness
