// Typed reads of JSON that users or other programs hand to pairbench (bench listings, calibration
// caches, the run-file fields the CLI reads itself): every error names the file, the field path and
// what was expected, never nlohmann's own "[json.exception...]" text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pairbench::harness {

// "FILE: FIELD.PATH: expected ..., is ..." (one line).
struct JsonFieldError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A value inside a document, with where it came from. Holds a reference: the document must outlive it.
class JsonField {
 public:
  // `source` names the document: a path, or "bench_x --pairbench_list".
  JsonField(const nlohmann::json& value, std::string source, std::string path = "");

  // A member that must be there (this must be an object).
  JsonField operator[](const std::string& key) const;
  // A member that may be absent; present, it is returned for typed reading.
  std::optional<JsonField> find(const std::string& key) const;
  // Elements of an array (this must be one).
  std::vector<JsonField> elements() const;
  // Members of an object (this must be one), in the document's order.
  std::vector<std::pair<std::string, JsonField>> members() const;

  std::string string() const;
  double number() const;  // finite
  std::int64_t integer() const;
  bool boolean() const;
  std::vector<std::string> strings() const;               // an array of strings
  std::map<std::string, std::string> string_map() const;  // an object of strings

  // Optional members with a fallback when absent (present, they must have the type).
  std::string string_or(const std::string& key, const std::string& fallback) const;
  double number_or(const std::string& key, double fallback) const;
  bool boolean_or(const std::string& key, bool fallback) const;

  const nlohmann::json& json() const { return *value_; }
  // "SOURCE: PATH" ("SOURCE: (top level)" for the document itself).
  std::string where() const;
  // Throws JsonFieldError "SOURCE: PATH: expected `expected`, is <what it is>".
  [[noreturn]] void fail(const std::string& expected) const;

 private:
  const nlohmann::json* value_;
  std::string source_, path_;
};

// The description of a nlohmann exception without its "[json.exception.type_error.302] " tag.
std::string json_exception_text(const nlohmann::json::exception& e);

// A string from a file, fit for a one-line message: JSON-quoted (control characters escaped,
// invalid UTF-8 replaced) and cut to about `max_chars`.
std::string quoted_for_message(const std::string& text, std::size_t max_chars = 80);

}  // namespace pairbench::harness
