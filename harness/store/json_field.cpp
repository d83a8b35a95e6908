// Typed JSON field reads whose errors name the file, the field path and what was expected.
#include "harness/store/json_field.h"

#include <cmath>
#include <limits>

namespace pairbench::harness {
namespace {

// "a string", "a number (1.5)", "null": what a value is, for "expected X, is Y".
std::string describe(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "the string " + quoted_for_message(v.get<std::string>(), 40);
    case nlohmann::json::value_t::boolean:
      return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "the number " + v.dump();
    case nlohmann::json::value_t::binary:
      return "binary data";
    case nlohmann::json::value_t::discarded:
      return "a discarded value";
  }
  return "something else";
}

// Plain keys join with a dot; keys such as benchmark names ("a.b/x:1") are bracketed and quoted.
std::string member_path(const std::string& parent, const std::string& key) {
  const bool plain =
      !key.empty() &&
      key.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") == std::string::npos;
  if (plain) return parent.empty() ? key : parent + "." + key;
  return parent + "[" + quoted_for_message(key, 100) + "]";
}

}  // namespace

JsonField::JsonField(const nlohmann::json& value, std::string source, std::string path)
    : value_(&value), source_(std::move(source)), path_(std::move(path)) {}

std::string JsonField::where() const { return source_ + ": " + (path_.empty() ? "(top level)" : path_); }

void JsonField::fail(const std::string& expected) const {
  throw JsonFieldError(where() + ": expected " + expected + ", is " + describe(*value_));
}

JsonField JsonField::operator[](const std::string& key) const {
  if (!value_->is_object()) fail("an object with a member '" + key + "'");
  const auto it = value_->find(key);
  if (it == value_->end()) throw JsonFieldError(source_ + ": " + member_path(path_, key) + ": missing");
  return JsonField(*it, source_, member_path(path_, key));
}

std::optional<JsonField> JsonField::find(const std::string& key) const {
  if (!value_->is_object()) fail("an object");
  const auto it = value_->find(key);
  if (it == value_->end()) return std::nullopt;
  return JsonField(*it, source_, member_path(path_, key));
}

std::vector<JsonField> JsonField::elements() const {
  if (!value_->is_array()) fail("an array");
  std::vector<JsonField> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) {
    out.emplace_back((*value_)[i], source_, path_ + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::vector<std::pair<std::string, JsonField>> JsonField::members() const {
  if (!value_->is_object()) fail("an object");
  std::vector<std::pair<std::string, JsonField>> out;
  for (const auto& [key, v] : value_->items()) out.emplace_back(key, JsonField(v, source_, member_path(path_, key)));
  return out;
}

std::string JsonField::string() const {
  if (!value_->is_string()) fail("a string");
  return value_->get<std::string>();
}

double JsonField::number() const {
  if (!value_->is_number()) fail("a number");
  const double v = value_->get<double>();
  if (!std::isfinite(v)) fail("a finite number");
  return v;
}

std::int64_t JsonField::integer() const {
  if (value_->is_number_integer()) return value_->get<std::int64_t>();
  if (value_->is_number_unsigned() &&
      value_->get<std::uint64_t>() <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return static_cast<std::int64_t>(value_->get<std::uint64_t>());
  }
  fail("an integer");
}

bool JsonField::boolean() const {
  if (!value_->is_boolean()) fail("true or false");
  return value_->get<bool>();
}

std::vector<std::string> JsonField::strings() const {
  std::vector<std::string> out;
  for (const JsonField& e : elements()) out.push_back(e.string());
  return out;
}

std::map<std::string, std::string> JsonField::string_map() const {
  std::map<std::string, std::string> out;
  for (const auto& [key, v] : members()) out[key] = v.string();
  return out;
}

std::string JsonField::string_or(const std::string& key, const std::string& fallback) const {
  const auto v = find(key);
  return v ? v->string() : fallback;
}

double JsonField::number_or(const std::string& key, double fallback) const {
  const auto v = find(key);
  return v ? v->number() : fallback;
}

bool JsonField::boolean_or(const std::string& key, bool fallback) const {
  const auto v = find(key);
  return v ? v->boolean() : fallback;
}

std::string json_exception_text(const nlohmann::json::exception& e) {
  std::string text = e.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const auto close = text.find("] ");
    if (close != std::string::npos) text.erase(0, close + 2);
  }
  return text;
}

std::string quoted_for_message(const std::string& text, std::size_t max_chars) {
  const bool cut = text.size() > max_chars;
  // Cutting may split a UTF-8 sequence; the replace handler turns the fragment into U+FFFD.
  const std::string quoted = nlohmann::json(cut ? text.substr(0, max_chars) : text)
                                 .dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
  return cut ? quoted.substr(0, quoted.size() - 1) + "...\"" : quoted;
}

}  // namespace pairbench::harness
