// Harness errors: one exception type whose message accumulates context (file, field, problem, rank) as it
// travels up, so the user sees one line naming where and why. Library code throws; only main() decides the
// exit code. Anything a candidate does wrong is not an Error: it becomes a status in a result record.
#pragma once

#include <stdexcept>
#include <string>

namespace pkb {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Runs fn(); if it throws pkb::Error, rethrows with "context: " prefixed.
template <class Fn>
auto with_context(const std::string& context, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(context + ": " + e.what());
  }
}

// Broken internal invariant: a pkb bug, not a user error.
[[noreturn]] void check_failed(const char* cond, const char* file, int line, const std::string& msg);

}  // namespace pkb

#define PKB_CHECK(cond, msg)                                          \
  do {                                                                \
    if (!(cond)) ::pkb::check_failed(#cond, __FILE__, __LINE__, msg); \
  } while (0)
