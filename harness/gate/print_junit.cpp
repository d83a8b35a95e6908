// The gate as JUnit XML for a CI test view: one testcase per row, the headline as the suite's name.
#include <sstream>

#include "harness/gate/print.h"
#include "harness/gate/text.h"

namespace pairbench::harness {
namespace {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;  // XML forbids other controls
    }
  }
  return out;
}

// A row that neither fails nor passes the gate is shown as skipped, so that CI lists it apart.
bool shown_as_skipped(Verdict v) {
  return v == Verdict::undecided || v == Verdict::missing || v == Verdict::new_ || v == Verdict::not_gated;
}

}  // namespace

std::string gate_junit(const GateReport& r) {
  std::ostringstream x;
  int failures = 0, skipped = 0;
  for (const auto& v : r.rows) {
    failures += fails_gate(v.verdict);
    skipped += shown_as_skipped(v.verdict);
  }
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<!-- " << xml_escape(r.headline()) << " -->\n";
  x << "<testsuites name=\"pairbench gate: " << xml_escape(r.headline()) << "\" tests=\"" << r.rows.size()
    << "\" failures=\"" << failures << "\">\n";
  x << "  <testsuite name=\"pairbench gate\" tests=\"" << r.rows.size() << "\" failures=\"" << failures
    << "\" skipped=\"" << skipped << "\">\n";
  x << "    <properties><property name=\"outcome\" value=\"" << to_string(r.outcome()) << "\"/></properties>\n";
  for (const auto& v : r.rows) {
    const std::string change = gate_text::change_text(v);
    x << "    <testcase classname=\"" << xml_escape(v.experiment) << "\" name=\"" << xml_escape(gate_text::row_name(v))
      << "\">";
    const std::string message =
        to_string(v.verdict) + (change.empty() ? "" : " " + change) + (v.note.empty() ? "" : ": " + v.note);
    std::string diff;  // where a regression's instructions went, as the terminal shows it
    for (const std::string& l : gate_text::function_diff_lines(v)) diff += l + "\n";
    if (fails_gate(v.verdict) && !diff.empty()) {
      x << "<failure message=\"" << xml_escape(message) << "\">" << xml_escape(diff) << "</failure>";
    } else if (fails_gate(v.verdict)) {
      x << "<failure message=\"" << xml_escape(message) << "\"/>";
    } else if (shown_as_skipped(v.verdict)) {
      x << "<skipped message=\"" << xml_escape(message) << "\"/>";
    } else {
      x << "<system-out>" << xml_escape(message + (diff.empty() ? "" : "\n" + diff)) << "</system-out>";
    }
    x << "</testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

}  // namespace pairbench::harness
