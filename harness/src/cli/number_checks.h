// CLI11 checks for numeric options with a message a user can act on ("--timeout: must be greater than 0, got -1").
// CLI11 2.1's PositiveNumber/NonNegativeNumber print their range as 0 to 1.797...e308 with 300 digits. The check
// runs on the text before conversion, so "-5" for an unsigned option is refused instead of wrapping around.
#pragma once

#include <CLI/CLI.hpp>
#include <cmath>
#include <string>

namespace pkb::cli {

// A number, > 0 (strict) or >= 0; NaN is neither.
inline CLI::Validator number_at_least_zero(bool strict) {
  return CLI::Validator(
      [strict](std::string& text) -> std::string {
        double x = 0;
        if (!CLI::detail::lexical_cast(text, x) || std::isnan(x)) return "'" + text + "' is not a number";
        if (strict ? x > 0 : x >= 0) return "";
        return std::string("must be ") + (strict ? "greater than 0" : "0 or more") + ", got " + text;
      },
      strict ? "POSITIVE" : "NONNEGATIVE");
}

inline const CLI::Validator kPositive = number_at_least_zero(true);
inline const CLI::Validator kNonNegative = number_at_least_zero(false);

}  // namespace pkb::cli
