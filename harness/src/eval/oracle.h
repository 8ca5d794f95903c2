// The expected outputs of a reference-cache entry: the problem's oracle (check/expected.h) on every judged call's
// inputs. It needs libtorch, so the torch-free driver (`pkb eval` in pkb) has pkb-full compute them in a process of its
// own (`pkb-full oracle`, hidden), once per entry; pkb-full runs the same command.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "spec/problem_spec.h"

namespace pkb {

struct OracleJob {
  std::filesystem::path problem_dir;
  RunShape run;
  int trials = 0;  // checked trials 0..trials (the last is the post-timing one)
  uint64_t seed = 0;
  std::filesystem::path work;  // the entry being built: rank 0's record names the timed calls that are checked
};

// The job as `pkb-full oracle`'s arguments (after the subcommand), and back.
std::vector<std::string> oracle_args(const OracleJob& job);

// Writes LABEL/oracle.rankR.safetensors for the checked trials, the post-timing trial and the timing copies the
// reference pass drew (libtorch: in pkb-full only).
void write_oracle_outputs(const OracleJob& job);

}  // namespace pkb
