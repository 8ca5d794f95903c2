// pkb-rank's command line, parsed into WorkerOptions; to_args (worker.h) writes it.
#pragma once

#include <CLI/CLI.hpp>

#include "core/enum_option.h"
#include "worker/timing_cli.h"
#include "worker/worker.h"

namespace pkb {

inline void add_worker_flags(CLI::App& app, WorkerOptions& o) {
  auto* problem_opt = app.add_option("--problem-dir", o.problem_dir, "problems/NNN_slug");
  auto* batch_opt = app.add_option("--batch", o.batch_file,
                                   "reference pass for several problems: a JSON array of {problem_dir, out, params}");
  problem_opt->excludes(batch_opt);
  add_enum_option(app, "--device", o.device, "cpu or cuda");
  app.add_option("--dtype", o.dtype, "float dtype: bf16 or fp32");
  app.add_option("--trials", o.trials, "trial indices")->delimiter(',');
  app.add_option("--seed", o.seed, "base seed");
  app.add_option("--param", o.params, "NAME=VALUE parameter override");
  auto* out_opt = app.add_option("--out", o.out_dir, "output directory");
  out_opt->excludes(batch_opt);
  app.add_flag("--save-inputs", o.save_inputs, "also write each rank's inputs");
  app.add_flag("--precise", o.precise, "reference only on fp32-upcast inputs");
  app.add_flag("--precise-too", o.precise_too, "also write the precise (fp32-upcast) reference outputs");
  app.add_flag("--time", o.time, "time after the checked trials");
  add_timing_flags(&app, o.timing);
  app.add_option("--post-trial", o.post_trial, "trial checked after timing (candidate pass)");
  app.add_option("--candidate", o.candidate, "candidate shared library: run the candidate pass");
  app.add_option("--heap-mib", o.heap_mib, "symmetric heap arena for the candidate's symm_alloc, MiB");
  app.add_option("--seal", o.seal_dir, "directory of the driver's FIFOs: send outputs and records there (sealed)");
  app.add_option("--rotation-copies", o.rotation_copies, "input copies for timing (candidate pass: the reference's)");
  app.add_option("--warmup-copies", o.warmup_copies,
                 "of those, the warm-up rotation (candidate pass: the reference's)");
  app.add_option("--runner-hide", o.runner_hidden, "candidate pass: paths the candidate's runner must not open");
  app.add_option("--capture-copies", o.captured_copies, "candidate pass (runner): the only timing copies to capture")
      ->delimiter(',');
  add_enum_option(app, "--candidate-process", o.candidate_process,
                  "auto/runner: the candidate in pkb-runner (baselines timed by the same protocol); in-process (GPUs)");
  add_enum_option(app, "--draw-copies", o.draw_copies, "candidate pass: on/off, draw timing copies into their slots");
  app.add_option("--timed-checks", o.timed_checks,
                 "reference pass: random draws naming the copies whose outputs are kept")
      ->delimiter(',');
}

}  // namespace pkb
