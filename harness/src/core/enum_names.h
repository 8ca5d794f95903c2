// One way to name an enum's values wherever they are spelled out (CLI choices, worker flags, records): a
// specialization of EnumNames lists each value once with its name, and these read it both ways.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace pkb {

// Specialize with `static constexpr std::pair<E, const char*> values[] = {{E::a, "a"}, ...};`.
template <class E>
struct EnumNames;

template <class E>
const char* enum_name(E e) {
  for (const auto& [value, name] : EnumNames<E>::values)
    if (value == e) return name;
  return "?";
}

// Every name, in the specialization's order (CLI choices).
template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> names;
  for (const auto& entry : EnumNames<E>::values) names.emplace_back(entry.second);
  return names;
}

template <class E>
std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& [value, n] : EnumNames<E>::values)
    if (name == n) return value;
  return std::nullopt;
}

}  // namespace pkb
