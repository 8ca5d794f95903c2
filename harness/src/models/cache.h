// Directory cache of model replies, so a rerun (or a run after a crash) never pays for an answer twice.
// Key: sha256 of a canonical JSON of what determines the answer (provider, model, prompts, max tokens,
// temperature, sample index, extra params, the earlier turns of a multi-turn conversation) and not of where it
// was sent (base URL) or with which key.
// Layout: <dir>/<key[0:2]>/<key>.json holding {schema, key, provider, model, request, reply}. Each entry is
// written to a temporary file, fsync'ed and renamed into place, so a reader never sees half an entry and a
// crashed process loses nothing it received (the directory itself is not fsync'ed: after a power cut the
// newest entries may be missing, never corrupt).
// Only replies with error == none are stored: no-code and truncated answers are real (paid) answers;
// transport and API failures are not answers.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "models/model_name.h"
#include "models/types.h"

namespace pkb::models {

class ReplyCache {
 public:
  /// Creates `dir` if needed; throws pkb::Error if it cannot.
  explicit ReplyCache(std::filesystem::path dir);

  /// The canonical JSON hashed into the key (exposed so tests and tools can show why keys differ).
  static nlohmann::json key_material(const ModelName& name, const Request& req);
  static std::string key(const ModelName& name, const Request& req);
  static bool cacheable(const Reply& r) { return r.ok(); }

  /// A stored reply (from_cache = true), or nothing when absent or unreadable (logged).
  std::optional<Reply> load(const ModelName& name, const Request& req) const;
  /// Stores a cacheable reply; returns false (logged) on I/O failure or when the reply is not cacheable.
  bool store(const ModelName& name, const Request& req, const Reply& reply) const;

  std::filesystem::path path_for(const std::string& key) const;
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
};

}  // namespace pkb::models
