// What the messages between pkb's own processes share (protocol/): the error a message that does not parse raises,
// and the readers their from_json functions are made of. A key is read by name into a typed field, strictly: a
// required key that is missing, or any key that holds another JSON type (a string where a number belongs, a float
// where an integer does, a number where a bool does), raises ProtocolError naming the message and the key; nothing
// is read as a default 0. Keys a message does not know are ignored.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/error.h"

namespace pkb::protocol {

// A message from one of pkb's own processes (a rank record, the runner's layout, a plan) that does not parse, or
// holds a key of the wrong type: pkb's failure, never the candidate's (the driver records harness_error).
class ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& what) : Error(what) {}
};

namespace detail {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_string_map : std::false_type {};
template <class T>
struct is_string_map<std::map<std::string, T>> : std::true_type {};

[[noreturn]] inline void wrong_type(const std::string& where, const char* want, const nlohmann::json& v) {
  throw ProtocolError(where + ": " + want + " expected, got " + v.type_name() + " " + v.dump().substr(0, 80));
}

}  // namespace detail

// v as T, strictly typed; `where` names it in the error. T: nlohmann::json (anything), bool, an integer type, a
// floating type, std::string, std::vector / std::optional (null: nullopt) / std::map<std::string, ...> of those, or a
// struct with a from_json of its own (found by ADL), whose ProtocolError is prefixed with `where`.
template <class T>
void read_value(const nlohmann::json& v, T& out, const std::string& where) {
  using detail::wrong_type;
  if constexpr (std::is_same_v<T, nlohmann::json>) {
    out = v;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) wrong_type(where, "a bool", v);
    out = v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) wrong_type(where, "an integer", v);
    if constexpr (std::is_unsigned_v<T>) {
      if (!v.is_number_unsigned() && v.get<int64_t>() < 0) wrong_type(where, "an integer >= 0", v);
      out = static_cast<T>(v.get<uint64_t>());
    } else {
      out = static_cast<T>(v.get<int64_t>());
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) wrong_type(where, "a number", v);
    out = v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) wrong_type(where, "a string", v);
    out = v.get<std::string>();
  } else if constexpr (detail::is_optional<T>::value) {
    if (v.is_null()) {
      out.reset();
    } else {
      typename T::value_type x{};
      read_value(v, x, where);
      out = std::move(x);
    }
  } else if constexpr (detail::is_vector<T>::value) {
    if (!v.is_array()) wrong_type(where, "an array", v);
    out.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      typename T::value_type x{};
      read_value(v[i], x, where + "[" + std::to_string(i) + "]");
      out.push_back(std::move(x));
    }
  } else if constexpr (detail::is_string_map<T>::value) {
    if (!v.is_object()) wrong_type(where, "an object", v);
    out.clear();
    for (const auto& [k, x] : v.items()) read_value(x, out[k], where + "[\"" + k + "\"]");
  } else {
    try {
      from_json(v, out);
    } catch (const ProtocolError& e) {
      throw ProtocolError(where + ": " + e.what());
    }
  }
}

// The keys of one JSON object of a message, read into typed fields; `what` names it in errors ("the rank record",
// "the runner's layout"). Throws ProtocolError unless j is an object.
class Fields {
 public:
  Fields(const nlohmann::json& j, std::string what) : j_(j), what_(std::move(what)) {
    if (!j_.is_object()) throw ProtocolError(what_ + " is not a JSON object: " + j_.dump().substr(0, 80));
  }
  bool has(const char* key) const { return j_.contains(key); }
  const nlohmann::json& at(const char* key) const { return j_.at(key); }
  // The key must be there.
  template <class T>
  void required(const char* key, T& out) const {
    auto it = j_.find(key);
    if (it == j_.end()) throw ProtocolError(what_ + " has no \"" + key + "\"");
    read_value(*it, out, where(key));
  }
  // A missing key leaves `out` as it is (its default); for a std::optional, nullopt.
  template <class T>
  void optional(const char* key, T& out) const {
    auto it = j_.find(key);
    if (it == j_.end()) {
      if constexpr (detail::is_optional<T>::value) out.reset();
      return;
    }
    read_value(*it, out, where(key));
  }
  std::string where(const char* key) const { return what_ + "'s \"" + key + "\""; }

 private:
  const nlohmann::json& j_;
  std::string what_;
};

// j[key] = x where x is set (an optional writer's counterpart of Fields::optional).
template <class T>
void put_optional(nlohmann::json& j, const char* key, const std::optional<T>& x) {
  if (x) j[key] = *x;
}

// A message's keys spelled once: a table `fields(x, visit)` calls visit(key, member) for every pair, and both
// directions walk it, Writer (x const) and Reader.

// Writes every visited member to j[key] (a std::optional only when set).
struct Writer {
  nlohmann::json& j;
  template <class T>
  void operator()(const char* key, const T& x) const {
    j[key] = x;
  }
  template <class T>
  void operator()(const char* key, const std::optional<T>& x) const {
    put_optional(j, key, x);
  }
};

// Reads every visited member from f: required, or optional where lenient (reference.py's timing: only what it has).
// A std::optional member is always optional.
struct Reader {
  const Fields& f;
  bool lenient = false;
  template <class T>
  void operator()(const char* key, T& out) const {
    lenient ? f.optional(key, out) : f.required(key, out);
  }
  template <class T>
  void operator()(const char* key, std::optional<T>& out) const {
    f.optional(key, out);
  }
};

}  // namespace pkb::protocol
