// What a client may submit, checked at the boundary: one item of POST /v1/evaluations (docs/serve.md) becomes an
// Item or an error naming the field, with the HTTP status it answers (400 malformed, 413 too large, 422 a
// well-formed value pkb cannot evaluate). Timing presets are data: a name and the `pkb eval` flags it adds.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <variant>
#include <vector>

#include "core/device_kind.h"
#include "serve/store.h"
#include "spec/catalog.h"

namespace pkb::serve {

struct FieldError {
  int http_status = 422;
  std::string field;  // "source", "items[3].world", "body"
  std::string message;
  nlohmann::json to_json() const;
};

struct SubmitLimits {
  size_t max_source_bytes = 256 * 1024;
  DeviceKind device = DeviceKind::cpu;
  int gpus = 0;  // on cuda: the largest W this server can run
};

// One item, checked against the catalog and the limits. `body_repaired`: the request held bytes that are not
// UTF-8, replaced by U+FFFD before parsing, so a string field holding U+FFFD is refused as not UTF-8 (a genuine
// U+FFFD beside such bytes elsewhere in the body is refused too: the cost of naming the field).
// The source is moved out of `j` (a batch's sources are most of its bytes: one copy of them, not two).
std::variant<Item, FieldError> parse_item(nlohmann::json& j, const Catalog& catalog, const SubmitLimits& limits,
                                          bool body_repaired);

// Presets: "quick" (2 trials, 2 short repetitions: statuses, CI, shaping a reward on CPU ranks) and "standard"
// (pkb eval's own defaults).
const std::vector<std::string>& timing_preset_names();
// The flags a preset adds to `pkb eval`; throws pkb::Error for an unknown name.
std::vector<std::string> timing_preset_args(const std::string& name);

}  // namespace pkb::serve
