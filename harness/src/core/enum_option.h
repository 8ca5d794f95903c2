// A command-line option whose value is one of an enum's names (core/enum_names.h): --help lists the names, and any
// other value is refused by CLI11 before the command runs.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "core/enum_names.h"

namespace pkb {

template <class E>
CLI::Option* add_enum_option(CLI::App& app, const std::string& flag, E& value, const std::string& help) {
  return app
      .add_option_function<std::string>(
          flag, [&value](const std::string& name) { value = *enum_from_name<E>(name); }, help)
      ->check(CLI::IsMember(enum_names<E>()));
}

}  // namespace pkb
