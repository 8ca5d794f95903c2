// One way to name an enum's values wherever they are spelled out (CLI choices, worker flags, records): a
// specialization of EnumNames lists each value once with its name, and these read it both ways.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

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

template <class E>
std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& [value, n] : EnumNames<E>::values)
    if (name == n) return value;
  return std::nullopt;
}

}  // namespace pkb
