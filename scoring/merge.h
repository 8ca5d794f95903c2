// The shards of one run (`pkb run --shard I/N`, each in RUN/shard-I-of-N) scored as the one run they are: the
// report of the merged shards is the report an unsharded run with the same records gives. Shards must agree on
// every setting of manifest.json (model, problems, W, dtype, timing, prompts, ...; docs/design/shards-and-slurm.md)
// and on the shard count and samples; each index 0..N-1 must be there exactly once, and no sample may
// be recorded by two shards. Within a shard the usual rules hold (a later record of a sample supersedes).
#pragma once

#include <filesystem>
#include <vector>

#include "scoring/records.h"

namespace pkb::scoring {

// The shard-I-of-N subdirectories of dir that hold a manifest.json, in order of I; empty when there are none.
std::vector<std::filesystem::path> shard_subdirectories(const std::filesystem::path& dir);

// Loads the given shard directories as one run. Throws pkb::Error naming the directory and field for a
// directory that is not a shard, shards of different runs (settings, shard count or samples differ), an index
// given twice, missing indices (unless partial), or a sample recorded in two shards. The merged manifest is
// the shards' common settings with the selection's union and one entry per shard under "shards".
LoadedResults load_shards(const std::vector<std::filesystem::path>& shard_dirs, bool partial = false);

// What `pkb report` and `pkb leaderboard` read from a path: a run directory or results file as load_results
// does, or, for a directory without results.jsonl that holds shard subdirectories, those shards merged.
LoadedResults load_run(const std::filesystem::path& path);

}  // namespace pkb::scoring
