// A JSON Schema (draft 2020-12) validator for exactly the keywords the run-file schema
// (results/schema/run-file.schema.json) uses. A schema with any other keyword is refused when it is
// compiled, so the schema can never say more than this validator checks. The plot report validates
// the same file with python3-jsonschema and words its errors the same way (plots/pairbench_report/runfile.py).
#pragma once

#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace pairbench::harness {

// One way a document breaks its schema.
struct SchemaViolation {
  std::string path;     // "benchmarks[3].metric_value"; "" for the document itself
  std::string problem;  // "expected a number > 0, is the number 0"; "missing"
};

class JsonSchema {
 public:
  // Keywords implemented: type (one or a list), required, properties, additionalProperties (a
  // schema), items (one schema), enum, const, minimum, maximum, exclusiveMinimum, minLength and
  // $ref to "#/..." in the same document; annotations ($schema, $id, $comment, title,
  // description, $defs and anything starting "x-") are read, not enforced, except `x-expected`,
  // which words the "expected ..." of an error at its subschema. Throws std::invalid_argument
  // naming the keyword and its place in the schema for anything else.
  explicit JsonSchema(const nlohmann::ordered_json& schema);
  ~JsonSchema();
  JsonSchema(const JsonSchema&) = delete;  // nodes point at each other
  JsonSchema& operator=(const JsonSchema&) = delete;

  // Where `doc` breaks the schema, or nothing. With several violations, the one Python's
  // jsonschema.exceptions.best_match picks: the shallowest; at the same depth one whose subschema
  // declares no type or a type the value lacks; then the first in the schema's keyword order
  // (members not named by `properties` are met in a different order on the two sides).
  std::optional<SchemaViolation> validate(const nlohmann::json& doc) const;

  // The schema as compiled (for annotations such as "x-pairbench-limits").
  const nlohmann::ordered_json& document() const { return document_; }

 private:
  struct Node;
  struct Found;
  const Node* compile(const nlohmann::ordered_json& schema, const std::string& where);
  void fill(Node& node, const nlohmann::ordered_json& schema, const std::string& where);
  const Node* resolve(const std::string& ref, const std::string& where);
  void check(const Node& node, const nlohmann::json& value, const std::string& path, std::size_t depth,
             std::vector<Found>& found) const;

  nlohmann::ordered_json document_;
  std::vector<std::unique_ptr<Node>> nodes_;                     // owned here; nodes point at each other
  std::vector<std::pair<std::string, const Node*>> by_pointer_;  // compiled $ref targets
  const Node* root_ = nullptr;
};

// Paths as every pairbench message writes them: plain keys ([A-Za-z0-9_]+) join with a dot
// ("pairbench.environment"), other keys are bracketed and JSON-quoted (`params["batch size"]`),
// array elements are "[i]".
std::string json_member_path(const std::string& parent, const std::string& key);
std::string json_element_path(const std::string& parent, std::size_t index);

// `text` JSON-quoted (control characters escaped), cut after `max_bytes` with "..." inside the quotes.
std::string json_quoted(const std::string& text, std::size_t max_bytes);

// What a value is, for "expected X, is Y": "null", "an object", "an array", "true",
// "the number 0.5", "the string \"fast\"" (quoted, cut after 40 characters).
std::string describe_json_value(const nlohmann::json& value);

}  // namespace pairbench::harness
