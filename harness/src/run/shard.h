// `pkb run --shard I/N`: which part of a run's work one of N independent invocations does. The work is the grid
// of (problem, sample) over the selection in catalog order, problem-major; shard I takes the contiguous block
// [I*T/N, (I+1)*T/N) of its T items. Contiguous blocks keep a problem's samples together, so a problem's
// reference pass (cached per run directory) is computed by one or two shards rather than by all N. The grid
// depends on the selection and --samples only, never on what generation returned, so shards agree without
// talking to each other; a sharded run fixes --samples (changing it would move items between shards).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace pkb::run {

struct Shard {
  int index = 0, count = 1;  // count 1: the whole run (no sharding)
  bool sharded() const { return count > 1 || index != 0; }
  std::string text() const;  // "I/N"
  // RUN/shard-I-of-N: where a shard of the run whose directory is RUN keeps its own run directory.
  std::string dir_name() const;
};

// "I/N" with 0 <= I < N; throws pkb::Error saying what is wrong otherwise.
Shard parse_shard(const std::string& text);

// Whether item `item` of a grid of `total` items (problem position * samples + sample) is the shard's.
bool in_shard(const Shard& s, long item, long total);

// The shard's identity as manifest.json records it under settings.shard ({index, count, samples}); null
// for an unsharded run.
nlohmann::json shard_json(const Shard& s, int samples);

}  // namespace pkb::run
