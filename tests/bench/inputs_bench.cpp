// Benchmark (not a test): what generating one input copy costs, per problem. A checked timing generates one
// fresh copy per timed call (hundreds per evaluation), so this is on the path of every timed evaluation.
// Usage: pkb_bench_inputs PROBLEM_DIR... [--world W] [--copies N] [--threads T]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "inputs/inputs.h"
#include "spec/problem_spec.h"

int main(int argc, char** argv) {
  int world = 2, copies = 8, threads = 1;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--world" && i + 1 < argc)
      world = std::atoi(argv[++i]);
    else if (a == "--copies" && i + 1 < argc)
      copies = std::atoi(argv[++i]);
    else if (a == "--threads" && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else
      dirs.push_back(a);
  }
  at::set_num_threads(threads);
  pkb::set_host_threads(threads);
  std::printf("| problem | MiB per copy (rank 0) | ms per copy | ns per byte |\n|---|---|---|---|\n");
  for (const auto& dir : dirs) {
    try {
      pkb::ProblemSpec spec = pkb::load_problem(dir);
      pkb::RunShape run = pkb::resolve_run(spec, world, pkb::DType::bf16, {});
      size_t bytes = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < copies; ++k)
        for (const auto& t : pkb::make_inputs(spec, run, 0, 1000 + k, 0).tensors) bytes += t.nbytes();
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("| %s | %.2f | %.2f | %.2f |\n", spec.folder().c_str(), bytes / double(copies) / (1 << 20),
                  1e3 * s / copies, bytes ? 1e9 * s / bytes : 0.0);
    } catch (const std::exception& e) {
      std::printf("| %s | error: %s | | |\n", dir.c_str(), e.what());
    }
  }
}
