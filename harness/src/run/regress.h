// `pkb regress`: CI over submitted kernels. The candidates (DIR/NNN_slug.cu or DIR/NNN_slug/sample_0.cu) are
// evaluated as a fresh `pkb run --model replay:DIR`, then compared problem by problem with a baseline report.json:
//   regression  the baseline had a correct kernel (c > 0) and the new one is not correct, or its speedup fell
//               below best_speedup x (1 - slowdown). Speedups are against the baseline measured in the same run,
//               so drift of the machine between the two runs largely cancels.
//   new         no baseline entry: the case fails only if the kernel is not correct.
// Each problem is one JUnit test case. Exit: 0 no case failed, 1 some case failed, 2 usage or input error.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "run/run.h"

namespace pkb::run {

struct RegressOptions {
  std::filesystem::path baseline;    // report.json (schema pkb.report/1)
  std::filesystem::path candidates;  // DIR
  double slowdown = 0.10;            // tolerated fraction of speedup lost
  std::filesystem::path junit;       // "" = RUN/junit.xml
  RunOptions run;                    // W, device, timing, out ("" = results/regress/<UTC time>)
};

struct RegressCase {
  std::string folder, category;
  std::string verdict;  // "pass", "regression", "fail" (new and not correct), "skipped" (no candidate)
  std::string message;
  bool baseline_correct = false;
  double baseline_speedup = 0, speedup = 0;
  std::string status;  // the candidate's evaluation status
  double seconds = 0;
};

struct RegressResult {
  std::filesystem::path run_dir, junit;
  std::vector<RegressCase> cases;
  int failures() const;
};

// Parses "10%", "0.1" or "10" (percent) into a fraction; throws pkb::Error for anything else.
double parse_slowdown(const std::string& text);

RegressResult regress(const Catalog& catalog, RegressOptions o);

// The JUnit XML document (one testsuite, one testcase per problem).
std::string junit_xml(const RegressResult& r);

}  // namespace pkb::run
