// The problem set on disk: every problems/NNN_slug folder with a problem.json, found by scanning (no central
// list), and the one selection syntax every subcommand uses: ids (7), ranges (9-30), lists (1,4,7), slugs
// (allreduce or 001_allreduce) and `all`, freely combined with commas.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spec/problem_spec.h"

namespace pkb {

// Where problems/, topologies/, prompts/, pricing/ and harness/{include,python} are: $PKB_ROOT (`pkb --root`
// sets it), else an installed tree beside the binary (PREFIX/bin/pkb -> PREFIX/share/pkb, `cmake --install`),
// else the source tree pkb was built from. Never the working directory: a problems/ folder that happens to be
// there would silently replace the benchmark's.
std::filesystem::path repo_root();

// The short git revision (12 hex digits) of the root, or of the tree an installed pkb was built from (its
// REVISION file), or "unknown": provenance.
std::string repo_revision();

struct Catalog {
  std::vector<ProblemSpec> problems;  // sorted by id
  std::vector<std::string> errors;    // one line per problem.json that failed to load

  const ProblemSpec* find(int id) const;
  // Throws pkb::Error for a token that matches nothing or a malformed range. Result sorted, no duplicates.
  std::vector<const ProblemSpec*> select(const std::string& selection) const;
};

Catalog load_catalog(const std::filesystem::path& problems_dir);
// Only the problems `selection` names, found by their folders' names (NNN_slug) and loaded: one evaluation parses
// one problem.json, not all of them (~0.1 s of a Test build's CPU in every `pkb eval`). A selected problem.json that
// does not load throws its error; a selection that names no folder throws as Catalog::select does.
Catalog load_catalog(const std::filesystem::path& problems_dir, const std::string& selection);

}  // namespace pkb
