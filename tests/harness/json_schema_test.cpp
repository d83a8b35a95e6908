// The JSON Schema validator behind the run-file reader: each keyword as python3-jsonschema checks
// it (integers, const and enum equality, which violation is reported), the wording shared with
// plots/pairbench_report/runfile.py, and refusal of any keyword it does not implement.
#include "harness/store/json_schema.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace pairbench::harness {
namespace {

using ordered = nlohmann::ordered_json;

// "path: problem" of the reported violation, or "" when `doc` is valid.
std::string violation(const char* schema, const char* doc) {
  const JsonSchema s(ordered::parse(schema));
  const auto v = s.validate(nlohmann::json::parse(doc));
  return v ? v->path + ": " + v->problem : "";
}

TEST(JsonSchema, TypesFollowJsonSchemaNotCpp) {
  const char* integer = R"({"type": "integer"})";
  EXPECT_EQ(violation(integer, "3"), "");
  EXPECT_EQ(violation(integer, "3.0"), "");  // draft 6 on: a number without a fraction is an integer
  EXPECT_EQ(violation(integer, "3.5"), ": expected an integer, is the number 3.5");
  EXPECT_EQ(violation(integer, "true"), ": expected an integer, is true");
  EXPECT_EQ(violation(R"({"type": "number"})", "false"), ": expected a number, is false");
  EXPECT_EQ(violation(R"({"type": ["string", "null"]})", "null"), "");
  EXPECT_EQ(violation(R"({"type": ["boolean", "null"]})", "[1]"), ": expected true or false or null, is an array");
  EXPECT_EQ(violation(R"({"type": "object"})", R"("a long string that is cut after forty characters")"),
            ": expected an object, is the string \"a long string that is cut after forty ch...\"");
}

TEST(JsonSchema, ConstAndEnumCompareNumbersByValueButNotWithBooleans) {
  EXPECT_EQ(violation(R"({"const": 1})", "1.0"), "");
  EXPECT_EQ(violation(R"({"const": 1})", "true"), ": expected 1, is true");
  EXPECT_EQ(violation(R"({"enum": ["a", 2]})", "2.0"), "");
  EXPECT_EQ(violation(R"({"enum": ["a", 2]})", "\"b\""), ": expected one of \"a\", 2, is the string \"b\"");
  EXPECT_EQ(violation(R"({"const": 1, "x-expected": "version 1"})", "2"), ": expected version 1, is the number 2");
}

TEST(JsonSchema, BoundsApplyToNumbersOnly) {
  const char* positive = R"({"type": ["number", "null"], "exclusiveMinimum": 0, "maximum": 10})";
  EXPECT_EQ(violation(positive, "null"), "");
  EXPECT_EQ(violation(positive, "0"), ": expected a number > 0, is the number 0");
  EXPECT_EQ(violation(positive, "-0.0"), ": expected a number > 0, is the number -0.0");
  EXPECT_EQ(violation(positive, "10.5"), ": expected a number <= 10, is the number 10.5");
  EXPECT_EQ(violation(R"({"minimum": -1})", "\"text\""), "");
  EXPECT_EQ(violation(R"({"minLength": 1})", "\"\""), ": expected a non-empty string, is the string \"\"");
  EXPECT_EQ(violation(R"({"minLength": 2})", "\"\u00e9\""),  // one character in two bytes
            ": expected a string of at least 2 characters, is the string \"\u00e9\"");
}

TEST(JsonSchema, PathsNameTheMemberAndElement) {
  const char* schema = R"({
    "type": "object", "required": ["runs"],
    "properties": {"runs": {"type": "array", "items": {"$ref": "#/$defs/run"}}},
    "$defs": {"run": {"type": "object", "required": ["id"],
                      "additionalProperties": {"type": "number"}}}})";
  EXPECT_EQ(violation(schema, "{}"), "runs: missing");
  EXPECT_EQ(violation(schema, R"({"runs": [{"id": 1}, {}]})"), "runs[1].id: missing");
  EXPECT_EQ(violation(schema, R"({"runs": [{"id": 1, "batch size": "x"}]})"),
            "runs[0][\"batch size\"]: expected a number, is the string \"x\"");
  EXPECT_EQ(violation(schema, R"({"runs": [{"id": 1, "a_b": "x"}]})"),
            "runs[0].a_b: expected a number, is the string \"x\"");
}

TEST(JsonSchema, ReportsTheViolationPythonsBestMatchReports) {
  // The shallowest first.
  const char* schema = R"({"type": "object", "required": ["b"], "properties": {"a": {"type": "string"}}})";
  EXPECT_EQ(violation(schema, R"({"a": 1})"), "b: missing");
  // At one depth: a subschema with no type, or whose type the value lacks, before one whose type matches...
  EXPECT_EQ(violation(R"({"properties": {"x": {"type": "number", "minimum": 5}, "y": {"type": "string"}}})",
                      R"({"x": 1, "y": 2})"),
            "y: expected a string, is the number 2");
  // ...and among those the first in the schema's order.
  EXPECT_EQ(violation(R"({"properties": {"x": {"minimum": 5}, "y": {"type": "string"}}})", R"({"x": 1, "y": 2})"),
            "x: expected a number >= 5, is the number 1");
}

TEST(JsonSchema, RefusesWhatItDoesNotImplement) {
  auto refusal = [](const char* schema) {
    try {
      JsonSchema s(ordered::parse(schema));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(R"({"type": "string", "pattern": "^a"})").find("keyword 'pattern' is not implemented"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"properties": {"a": {"oneOf": []}}})").find("#/properties/a/oneOf"), std::string::npos);
  EXPECT_NE(refusal(R"({"items": true})").find("boolean schemas"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "#/$defs/absent"})").find("points at nothing"), std::string::npos);
  EXPECT_NE(refusal(R"({"$ref": "other.json#/a"})").find("only references into this schema"), std::string::npos);
  EXPECT_NE(refusal(R"({"type": "float"})").find("unknown type 'float'"), std::string::npos);
  EXPECT_EQ(refusal(R"({"$schema": "x", "title": "t", "description": "d", "x-anything": [1], "$defs": {}})"), "");
}

TEST(JsonSchema, ReferencesMayBeRecursive) {
  const char* tree = R"({"$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array",
                         "items": {"$ref": "#/$defs/node"}}}}}, "$ref": "#/$defs/node"})";
  EXPECT_EQ(violation(tree, R"({"kids": [{"kids": []}, {"kids": [{"kids": 3}]}]})"),
            "kids[1].kids[0].kids: expected an array, is the number 3");
}

}  // namespace
}  // namespace pairbench::harness
