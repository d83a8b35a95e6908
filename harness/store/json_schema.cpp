// The run-file schema's keywords, checked the way python3-jsonschema checks them (see json_schema.h).
#include "harness/store/json_schema.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pairbench::harness {

enum class Keyword {
  kRef,
  kType,
  kConst,
  kEnum,
  kMinimum,
  kMaximum,
  kExclusiveMinimum,
  kMinLength,
  kRequired,
  kProperties,
  kAdditionalProperties,
  kItems,
};

struct JsonSchema::Node {
  std::string where;           // this subschema's place in the schema, for compile errors
  std::vector<Keyword> order;  // the keywords to check, in the schema's order (as jsonschema does)
  const Node* ref = nullptr;
  std::vector<std::string> types;  // JSON Schema type names; empty: any
  nlohmann::json const_value;
  std::vector<nlohmann::json> enum_values;
  double minimum = 0, maximum = 0, exclusive_minimum = 0;
  std::string minimum_text, maximum_text, exclusive_minimum_text;  // as the schema writes them
  std::size_t min_length = 0;
  std::vector<std::string> required;
  std::vector<std::pair<std::string, const Node*>> properties;
  const Node* additional = nullptr;
  const Node* items = nullptr;
  std::string expected;  // x-expected: replaces the generic "expected ..." text
};

struct JsonSchema::Found {
  std::size_t depth;  // of the value whose keyword failed (jsonschema's len(error.path))
  // jsonschema's `not error._matches_type()`: the failing subschema declares no type, or one the
  // value does not have. Ranks above the rest at the same depth.
  bool type_mismatch;
  SchemaViolation violation;
};

namespace {

const char* const kTypeNames[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

bool has_type(const nlohmann::json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer") {
    // JSON Schema (draft 6 on) and Python's jsonschema: any number with no fractional part, 1.0 included.
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double x = v.get<double>();
    return std::isfinite(x) && std::trunc(x) == x;
  }
  return false;
}

bool has_any_type(const nlohmann::json& v, const std::vector<std::string>& types) {
  return std::any_of(types.begin(), types.end(), [&](const std::string& t) { return has_type(v, t); });
}

std::string type_text(const std::vector<std::string>& types) {
  std::string out;
  for (const std::string& t : types) {
    if (!out.empty()) out += " or ";
    if (t == "object" || t == "array" || t == "integer") {
      out += "an " + t;
    } else if (t == "boolean") {
      out += "true or false";
    } else if (t == "null") {
      out += "null";
    } else {
      out += "a " + t;
    }
  }
  return out;
}

std::size_t utf8_length(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

[[noreturn]] void refuse(const std::string& where, const std::string& problem) {
  throw std::invalid_argument("schema " + where + ": " + problem);
}

double number_of(const nlohmann::ordered_json& v, const std::string& where) {
  if (!v.is_number()) refuse(where, "expected a number");
  return v.get<double>();
}

}  // namespace

std::string json_quoted(const std::string& text, std::size_t max_bytes) {
  const bool cut = text.size() > max_bytes;
  // Cutting may split a UTF-8 sequence; the replace handler turns the fragment into U+FFFD.
  const std::string q = nlohmann::json(cut ? text.substr(0, max_bytes) : text)
                            .dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
  return cut ? q.substr(0, q.size() - 1) + "...\"" : q;
}

std::string json_member_path(const std::string& parent, const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
  if (plain) return parent.empty() ? key : parent + "." + key;
  return parent + "[" + json_quoted(key, 100) + "]";
}

std::string json_element_path(const std::string& parent, std::size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

std::string describe_json_value(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "the string " + json_quoted(v.get<std::string>(), 40);
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "the number " + v.dump();
    case nlohmann::json::value_t::binary:
    case nlohmann::json::value_t::discarded:
      break;
  }
  return "something that is not JSON";
}

JsonSchema::JsonSchema(const nlohmann::ordered_json& schema) : document_(schema) { root_ = compile(document_, "#"); }

JsonSchema::~JsonSchema() = default;

const JsonSchema::Node* JsonSchema::compile(const nlohmann::ordered_json& schema, const std::string& where) {
  nodes_.push_back(std::make_unique<Node>());
  Node& node = *nodes_.back();
  fill(node, schema, where);
  return &node;
}

void JsonSchema::fill(Node& node, const nlohmann::ordered_json& schema, const std::string& where) {
  node.where = where;
  if (!schema.is_object()) refuse(where, "expected a schema object (boolean schemas are not supported)");
  for (const auto& [key, value] : schema.items()) {
    const std::string at = where + "/" + key;
    if (key == "$schema" || key == "$id" || key == "$comment" || key == "title" || key == "description" ||
        key == "$defs" || key == "default" || key == "examples") {
      continue;  // annotations; $defs are compiled when a $ref reaches them
    }
    if (key == "x-expected") {
      if (!value.is_string()) refuse(at, "expected a string");
      node.expected = value.get<std::string>();
    } else if (key.rfind("x-", 0) == 0) {
      continue;  // pairbench's own annotations (x-pairbench-limits)
    } else if (key == "$ref") {
      if (!value.is_string()) refuse(at, "expected a string");
      node.ref = resolve(value.get<std::string>(), at);
      node.order.push_back(Keyword::kRef);
    } else if (key == "type") {
      std::vector<std::string> types;
      if (value.is_string()) {
        types.push_back(value.get<std::string>());
      } else if (value.is_array() && !value.empty()) {
        for (const auto& t : value) {
          if (!t.is_string()) refuse(at, "expected type names");
          types.push_back(t.get<std::string>());
        }
      } else {
        refuse(at, "expected a type name or a list of them");
      }
      for (const std::string& t : types) {
        if (std::find(std::begin(kTypeNames), std::end(kTypeNames), t) == std::end(kTypeNames)) {
          refuse(at, "unknown type '" + t + "'");
        }
      }
      node.types = std::move(types);
      node.order.push_back(Keyword::kType);
    } else if (key == "const") {
      node.const_value = nlohmann::json::parse(value.dump());
      node.order.push_back(Keyword::kConst);
    } else if (key == "enum") {
      if (!value.is_array() || value.empty()) refuse(at, "expected a non-empty array");
      for (const auto& e : value) node.enum_values.push_back(nlohmann::json::parse(e.dump()));
      node.order.push_back(Keyword::kEnum);
    } else if (key == "minimum") {
      node.minimum = number_of(value, at);
      node.minimum_text = value.dump();
      node.order.push_back(Keyword::kMinimum);
    } else if (key == "maximum") {
      node.maximum = number_of(value, at);
      node.maximum_text = value.dump();
      node.order.push_back(Keyword::kMaximum);
    } else if (key == "exclusiveMinimum") {
      node.exclusive_minimum = number_of(value, at);
      node.exclusive_minimum_text = value.dump();
      node.order.push_back(Keyword::kExclusiveMinimum);
    } else if (key == "minLength") {
      if (!value.is_number_unsigned()) refuse(at, "expected a non-negative integer");
      node.min_length = value.get<std::size_t>();
      node.order.push_back(Keyword::kMinLength);
    } else if (key == "required") {
      if (!value.is_array()) refuse(at, "expected an array of member names");
      for (const auto& name : value) {
        if (!name.is_string()) refuse(at, "expected an array of member names");
        node.required.push_back(name.get<std::string>());
      }
      node.order.push_back(Keyword::kRequired);
    } else if (key == "properties") {
      if (!value.is_object()) refuse(at, "expected an object of schemas");
      for (const auto& [name, sub] : value.items()) node.properties.emplace_back(name, compile(sub, at + "/" + name));
      node.order.push_back(Keyword::kProperties);
    } else if (key == "additionalProperties") {
      node.additional = compile(value, at);
      node.order.push_back(Keyword::kAdditionalProperties);
    } else if (key == "items") {
      node.items = compile(value, at);
      node.order.push_back(Keyword::kItems);
    } else {
      refuse(at, "keyword '" + key +
                     "' is not implemented by harness/store/json_schema.cpp (add it there and "
                     "to its tests before the schema uses it)");
    }
  }
}

const JsonSchema::Node* JsonSchema::resolve(const std::string& ref, const std::string& where) {
  for (const auto& [pointer, node] : by_pointer_) {
    if (pointer == ref) return node;
  }
  if (ref.empty() || ref[0] != '#') refuse(where, "only references into this schema (\"#/...\") are supported");
  const nlohmann::ordered_json* target = nullptr;
  try {
    target = &document_.at(nlohmann::ordered_json::json_pointer(ref.substr(1)));
  } catch (const nlohmann::ordered_json::exception&) {
    refuse(where, "reference " + ref + " points at nothing");
  }
  // Registered before it is filled, so that a schema referring to itself terminates.
  nodes_.push_back(std::make_unique<Node>());
  Node& node = *nodes_.back();
  by_pointer_.emplace_back(ref, &node);
  fill(node, *target, ref);
  return &node;
}

void JsonSchema::check(const Node& node, const nlohmann::json& value, const std::string& path, std::size_t depth,
                       std::vector<Found>& found) const {
  auto add = [&](const std::string& at, const std::string& expected) {
    const bool mismatch = node.types.empty() || !has_any_type(value, node.types);
    found.push_back({depth,
                     mismatch,
                     {at, "expected " + (node.expected.empty() ? expected : node.expected) + ", is " +
                              describe_json_value(value)}});
  };
  for (const Keyword keyword : node.order) {
    switch (keyword) {
      case Keyword::kRef:
        check(*node.ref, value, path, depth, found);
        break;
      case Keyword::kType:
        if (!has_any_type(value, node.types)) add(path, type_text(node.types));
        break;
      case Keyword::kConst:
        if (value != node.const_value) add(path, node.const_value.dump());
        break;
      case Keyword::kEnum:
        if (std::find(node.enum_values.begin(), node.enum_values.end(), value) == node.enum_values.end()) {
          std::string options;
          for (const auto& e : node.enum_values) options += (options.empty() ? "" : ", ") + e.dump();
          add(path, "one of " + options);
        }
        break;
      case Keyword::kMinimum:
        if (value.is_number() && value.get<double>() < node.minimum) add(path, "a number >= " + node.minimum_text);
        break;
      case Keyword::kMaximum:
        if (value.is_number() && value.get<double>() > node.maximum) add(path, "a number <= " + node.maximum_text);
        break;
      case Keyword::kExclusiveMinimum:
        if (value.is_number() && value.get<double>() <= node.exclusive_minimum) {
          add(path, "a number > " + node.exclusive_minimum_text);
        }
        break;
      case Keyword::kMinLength:
        if (value.is_string() && utf8_length(value.get<std::string>()) < node.min_length) {
          add(path, node.min_length == 1 ? "a non-empty string"
                                         : "a string of at least " + std::to_string(node.min_length) + " characters");
        }
        break;
      case Keyword::kRequired:
        if (value.is_object()) {
          for (const std::string& name : node.required) {
            if (!value.contains(name)) {
              found.push_back({depth,
                               node.types.empty() || !has_any_type(value, node.types),
                               {json_member_path(path, name), "missing"}});
            }
          }
        }
        break;
      case Keyword::kProperties:
        if (value.is_object()) {
          for (const auto& [name, sub] : node.properties) {
            const auto it = value.find(name);
            if (it != value.end()) check(*sub, *it, json_member_path(path, name), depth + 1, found);
          }
        }
        break;
      case Keyword::kAdditionalProperties:
        if (value.is_object()) {
          for (const auto& member : value.items()) {
            const std::string& name = member.key();  // not a structured binding: clang 14 cannot capture one
            const bool declared = std::any_of(node.properties.begin(), node.properties.end(),
                                              [&](const auto& p) { return p.first == name; });
            if (!declared) check(*node.additional, member.value(), json_member_path(path, name), depth + 1, found);
          }
        }
        break;
      case Keyword::kItems:
        if (value.is_array()) {
          for (std::size_t i = 0; i < value.size(); ++i) {
            check(*node.items, value[i], json_element_path(path, i), depth + 1, found);
          }
        }
        break;
    }
  }
}

std::optional<SchemaViolation> JsonSchema::validate(const nlohmann::json& doc) const {
  std::vector<Found> found;
  check(*root_, doc, "", 0, found);
  if (found.empty()) return std::nullopt;
  // stable: among equals the first found, i.e. the schema's keyword order.
  const auto best = std::min_element(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.depth != b.depth) return a.depth < b.depth;
    return a.type_mismatch && !b.type_mismatch;
  });
  return best->violation;
}

}  // namespace pairbench::harness
