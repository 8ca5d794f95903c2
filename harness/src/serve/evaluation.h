// One evaluation as pkb serve's slots run it, wherever they run (the server's own slots, or a `pkb worker` on
// another machine): a child `pkb eval FILE --problem P -w W ... --json` through launch/process (its own process
// group, SIGKILLed with its parent: PR_SET_PDEATHSIG and the termination handler), so the sandbox, the runner
// and the verdict are pkb eval's own; then the verdict that goes into the store (outcome_of), one rule for both.
#pragma once

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/device_kind.h"
#include "serve/store.h"

namespace pkb::serve {

// How evaluations run: the same for every slot of a server, and for a worker (it takes them from the server).
struct EvalSettings {
  DeviceKind device = DeviceKind::cpu;
  std::filesystem::path pkb;            // the pkb program the children run
  std::filesystem::path work_dir;       // one scratch directory per running evaluation
  std::filesystem::path cache_dir;      // pkb eval --cache, shared
  double candidate_timeout_s = 60;      // pkb eval --timeout
  double evaluation_deadline_s = 3600;  // the whole child's deadline
  bool sandbox = true;                  // false: pkb eval --no-sandbox (trusted deployments)
};

// What an evaluation ended as: the state it goes to (done or failed) and what the store keeps of it.
struct Outcome {
  EvalState state = EvalState::failed;
  std::string status;  // the record's status ("" without a record)
  std::string record;  // the record's JSON text ("" without one)
  std::string error;   // why it failed
  double child_wall_s = 0;
};

// The verdict of a `pkb eval` child from its record: done; failed for a harness_error (the record kept); failed
// with `no_record_error` when the record is not an object with a string status.
Outcome outcome_of(const nlohmann::json& record, const std::string& no_record_error, double child_wall_s);

// What the evaluation tells its slot. While the child runs (about every 0.1 s): `started` once, when its candidate
// pass starts (its run directory appears: compiling -> running); `keep` every poll, false kills the child
// (cancelled, or its claim was lost). Then `finish` with the outcome, unless `keep` ended it.
struct EvalHooks {
  std::function<void()> started;
  std::function<bool()> keep;
  std::function<void(const Outcome&)> finish;
};

// Runs `c` in work_dir/ID on `gpus` (CUDA_VISIBLE_DEVICES; none on CPU ranks). The directory is removed after
// `finish`: the outcome is stored (or posted) before the slot spends time on its files.
void run_evaluation(const Claim& c, const EvalSettings& s, const std::vector<std::string>& gpus,
                    const EvalHooks& hooks);

}  // namespace pkb::serve
