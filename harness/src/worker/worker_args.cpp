#include <string>
#include <vector>

#include "worker/worker.h"

namespace pkb {

std::vector<std::string> to_args(const WorkerOptions& o) {
  const WorkerOptions defaults;
  std::vector<std::string> a;
  auto add = [&](const char* flag, const std::string& value) { a.insert(a.end(), {flag, value}); };
  auto joined = [](const auto& values) {
    std::string s;
    for (const auto& v : values) s += (s.empty() ? "" : ",") + std::to_string(v);
    return s;
  };
  if (!o.problem_dir.empty()) add("--problem-dir", o.problem_dir);
  if (!o.batch_file.empty()) add("--batch", o.batch_file);
  add("--device", enum_name(o.device));
  add("--dtype", o.dtype);
  add("--trials", joined(o.trials));
  add("--seed", std::to_string(o.seed));
  for (const auto& p : o.params) add("--param", p);
  if (!o.out_dir.empty()) add("--out", o.out_dir);
  if (o.save_inputs) a.push_back("--save-inputs");
  if (o.precise) a.push_back("--precise");
  if (o.precise_too) a.push_back("--precise-too");
  if (o.time) {
    a.push_back("--time");
    for (const auto& t : o.timing.to_args()) a.push_back(t);
  }
  if (o.post_trial != defaults.post_trial) add("--post-trial", std::to_string(o.post_trial));
  if (!o.candidate.empty()) add("--candidate", o.candidate);
  if (o.heap_mib != defaults.heap_mib) add("--heap-mib", std::to_string(o.heap_mib));
  if (!o.seal_dir.empty()) add("--seal", o.seal_dir);
  if (o.rotation_copies != defaults.rotation_copies) add("--rotation-copies", std::to_string(o.rotation_copies));
  if (o.warmup_copies != defaults.warmup_copies) add("--warmup-copies", std::to_string(o.warmup_copies));
  if (!o.timed_checks.empty()) add("--timed-checks", joined(o.timed_checks));
  for (const auto& p : o.runner_hidden) add("--runner-hide", p);
  if (!o.captured_copies.empty()) add("--capture-copies", joined(o.captured_copies));
  if (o.candidate_process != defaults.candidate_process) add("--candidate-process", enum_name(o.candidate_process));
  if (o.draw_copies != defaults.draw_copies) add("--draw-copies", enum_name(o.draw_copies));
  return a;
}

}  // namespace pkb
