#include "serve/evaluation.h"

#include <map>
#include <mutex>
#include <optional>

#include "core/files.h"
#include "core/sha256.h"
#include "core/utf8.h"
#include "launch/process.h"
#include "serve/submission.h"

namespace pkb::serve {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr size_t kErrorTailBytes = 2000;

std::vector<std::string> eval_argv(const Claim& c, const fs::path& source, const fs::path& dir, const EvalSettings& s) {
  std::vector<std::string> argv = {s.pkb.string(),
                                   "eval",
                                   source.string(),
                                   "--problem",
                                   c.item.problem,
                                   "-w",
                                   std::to_string(c.item.world),
                                   "--device",
                                   enum_name(s.device),
                                   "--dtype",
                                   c.item.dtype};
  for (const auto& [k, v] : c.item.params.items()) argv.insert(argv.end(), {"--param", k + "=" + v.dump()});
  for (const auto& a : timing_preset_args(c.item.timing)) argv.push_back(a);
  char timeout[32];
  std::snprintf(timeout, sizeof timeout, "%g", s.candidate_timeout_s);
  argv.insert(argv.end(),
              {"--timeout", timeout, "--out", (dir / "out").string(), "--cache", s.cache_dir.string(), "--json"});
  if (!s.sandbox) argv.push_back("--no-sandbox");
  return argv;
}

// Sources by content: WORK/src/SHA256/candidate.EXT, shared by the evaluations of one source that run at once and
// removed when the last of them ends. A folder of its own, with nothing beside the source: pkb eval's compile cache
// keys on the source and the headers in its folder (compile/compiler.cpp), not on the folder's path.
class SourceFiles {
 public:
  fs::path acquire(const fs::path& work, const std::string& source, const std::string& name) {
    const fs::path dir = work / "src" / sha256_hex(source);
    std::lock_guard lock(mu_);
    if (users_[dir.string()] == 0) {
      fs::create_directories(dir);
      write_file_atomically(dir / name, source);
    }
    ++users_[dir.string()];
    return dir / name;
  }
  void release(const fs::path& file) {
    std::lock_guard lock(mu_);
    const std::string dir = file.parent_path().string();
    if (--users_[dir] > 0) return;
    users_.erase(dir);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }

 private:
  std::mutex mu_;
  std::map<std::string, int> users_;  // by folder: evaluations using it now
};

SourceFiles& source_files() {
  static SourceFiles files;
  return files;
}

std::string joined(const std::vector<std::string>& ids) {
  std::string s;
  for (const auto& id : ids) s += (s.empty() ? "" : ",") + id;
  return s;
}

}  // namespace

Outcome outcome_of(const json& record, const std::string& no_record_error, double child_wall_s) {
  Outcome o;
  o.child_wall_s = child_wall_s;
  if (!record.is_object() || !record.contains("status") || !record["status"].is_string()) {
    o.error = no_record_error.empty() ? "no record" : no_record_error;
    return o;
  }
  o.status = record["status"];
  o.record = record.dump();
  const bool harness = o.status == "harness_error";
  o.state = harness ? EvalState::failed : EvalState::done;
  if (harness) o.error = record.value("message", "harness error");
  return o;
}

void run_evaluation(const Claim& c, const EvalSettings& s, const std::vector<std::string>& gpus,
                    const EvalHooks& hooks) {
  const fs::path dir = s.work_dir / c.id;
  std::optional<Outcome> out;
  fs::path source;
  try {  // anything here that throws (a full disk, a folder removed under us) fails this evaluation, not the worker
    fs::remove_all(dir);
    fs::create_directories(dir);
    source = source_files().acquire(s.work_dir, c.item.source,
                                    s.device == DeviceKind::cuda ? "candidate.cu" : "candidate.cpp");
    ProcessOptions po;
    po.timeout_s = s.evaluation_deadline_s;
    po.stdout_path = dir / "stdout.json";
    po.stderr_path = dir / "stderr.txt";
    if (!gpus.empty()) po.env["CUDA_VISIBLE_DEVICES"] = joined(gpus);
    bool running = false;
    po.poll = [&] {
      if (!running && fs::exists(dir / "out" / "runs")) {  // the candidate pass has started
        running = true;
        hooks.started();
      }
      return hooks.keep();
    };
    ProcessResult r = run_process(eval_argv(c, source, dir, s), po);
    if (!r.cancelled) {
      json record = json::parse(file_tail(dir / "stdout.json", 1 << 26), nullptr, false);
      std::string tail = utf8_prefix(file_tail(dir / "stderr.txt", kErrorTailBytes), kErrorTailBytes);
      out = outcome_of(record, "pkb eval gave no record (" + r.summary() + "): " + tail, r.wall_s);
    }
  } catch (const std::exception& e) {
    out = Outcome{EvalState::failed, "", "", std::string("could not run pkb eval: ") + e.what(), 0};
  }
  if (out) hooks.finish(*out);
  if (!source.empty()) source_files().release(source);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace pkb::serve
