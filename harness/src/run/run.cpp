#include "run/run.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "core/cores.h"
#include "core/error.h"
#include "core/files.h"
#include "core/parallel.h"
#include "core/result_record.h"
#include "core/sha256.h"
#include "generate/output.h"
#include "launch/gpus.h"
#include "launch/mpirun.h"
#include "launch/process.h"
#include "prompt/feedback.h"
#include "prompt/prompt.h"
#include "run/agent_loop.h"
#include "run/slot_queue.h"
#include "scoring/report.h"

namespace pkb::run {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// What makes two invocations the same run; `samples` may grow between them. Everything that changes what the
// model is asked (variant, templates, sampling, token cap) or what a kernel is built and timed for is in it, so
// that resuming with another setting is refused instead of mixing two experiments in one score.
json run_key(const RunOptions& o, const std::string& selection) {
  const generate::GenerateOptions& g = o.generate;
  return {{"model", o.model},
          {"problems", selection},
          {"world", o.world},
          {"device", enum_name(o.eval.device)},
          {"dtype", o.eval.dtype},
          {"topology", o.topology},
          {"arch", o.eval.arch},
          {"trials", o.eval.trials},
          {"seed", o.eval.seed},
          {"warmup", o.eval.timing.warmup},
          {"iters", o.eval.timing.iters},
          {"timing", o.eval.timing.to_json()},
          {"timing_method", o.eval.timing_method},
          {"retime_baseline", enum_name(o.eval.retime_baseline)},
          {"params", o.eval.params},
          {"variant", prompt::variant_name(g.prompt.variant)},
          {"temperature", g.temperature ? json(*g.temperature) : json()},
          {"max_tokens", g.max_tokens},
          {"prompts_sha256", prompt::templates_digest(g.prompt)},
          {"stop_speedup", o.stop_speedup ? json(*o.stop_speedup) : json("never")},
          {"shard", shard_json(o.shard, o.samples)}};
}

// An agent run's key adds its budgets and tool instructions (absent from other runs' keys, so those read as before).
json settings_key(const RunOptions& o, const std::string& selection) {
  json key = run_key(o, selection);
  if (!o.agent.enabled) return key;
  fs::path dir = o.generate.prompt.prompts_dir.empty() ? repo_root() / "prompts" : o.generate.prompt.prompts_dir;
  key["agent"] = o.agent.budget.to_json();
  key["agent"]["max_source_bytes"] = o.agent.max_source_bytes;
  key["agent_prompt_sha256"] = sha256_hex(read_text_file(dir / "agent.txt"));
  return key;
}

// What a manifest written before a setting existed meant by it. retime_baseline: runs made before the manifest
// recorded it used the default (or, before re-timing existed, re-timed nothing: the same as auto on CPU ranks).
json legacy_setting(const std::string& field) {
  if (field == "stop_speedup") return 1.0;
  if (field == "retime_baseline") return "auto";
  return json();
}

// A manifest's recorded setting, read as it was meant. timing.device_iters: manifests from before the device view
// timed their baselines without one, which changed no candidate's timing or speedup: they resume under today's
// default rather than being refused.
json recorded_setting(const json& settings, const std::string& field) {
  json v = settings.value(field, legacy_setting(field));
  if (field == "timing" && v.is_object() && !v.contains("device_iters"))
    v["device_iters"] = TimingOptions{}.device_iters;
  return v;
}

// Creates or checks RUN/manifest.json. A directory made with other settings is an error rather than a silent mix
// of two runs' records.
void settle_manifest(const fs::path& dir, const RunOptions& o, const std::string& selection, bool gpu) {
  fs::path path = dir / "manifest.json";
  json key = settings_key(o, selection);
  json m = read_json_or_null(path);
  if (m.is_object()) {
    const json settings = m.value("settings", json::object());
    for (const auto& [field, value] : key.items())
      if (recorded_setting(settings, field) != value)
        throw Error(path.string() + " was written with " + field + " = " + recorded_setting(settings, field).dump() +
                    ", this run has " + value.dump() + ": pass another --out, or remove the directory to start over");
    m["invocations"] = m.value("invocations", 1) + 1;
  } else {
    m = {{"schema", "pkb.run/1"}, {"created", utc_now_iso8601()}, {"invocations", 1}};
  }
  m["settings"] = key;
  m["model"] = o.model;
  m["problems"] = selection;
  m["world"] = o.world;
  m["topology"] = o.topology;
  m["samples"] = std::max(o.samples, m.value("samples", 0));
  m["turns"] = std::max(o.turns, m.value("turns", 1));  // may grow, like samples
  if (o.agent.enabled) m["mode"] = "agent", m["agent"] = key["agent"];
  m["gpu_evaluation"] = gpu;
  m["updated"] = utc_now_iso8601();
  m["pkb_git"] = repo_revision();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m["host"] = host;
  write_json_atomically(path, m);
}

// One sample (at one turn) the run must account for: an evaluation (source set) or a failed generation
// (failure set).
struct Task {
  const ProblemSpec* spec = nullptr;
  int sample = 0;
  int turn = 1;
  fs::path source;
  std::string sha256;          // of the source, or "generation:<folder>:<sample>[:turn<T>]"
  std::string failure_status;  // no_code | truncated | refused | bad_request, for failed generations
  std::string failure_message;
  std::optional<int64_t> input_tokens, output_tokens;  // of the answer, when the provider said
  std::optional<double> cost_usd;
  // A sample is (problem, index): equal bytes in two samples are two samples (scoring keys them alike).
  std::string key() const { return sample_key(spec->folder(), sample, sha256); }
};

// What identifies a record in the done-set: the sample and its turn.
std::string turn_key(const std::string& sample_key, int turn) {
  return turn == 1 ? sample_key : sample_key + "/turn" + std::to_string(turn);
}

// Each continuing sample's answers and follow-ups so far, by sample key.
using Conversations = std::map<std::string, generate::FollowUp>;

struct Recorded {
  std::string status;
  double speedup = 0;
  ResultRecord record;  // what the next turn's feedback is built from
};

// What earlier invocations recorded, by sample key and turn, read by the same loader that scores the run: a
// resumed run and its report agree on what is done (the latest record of a candidate wins; a kernel supersedes
// the failed generation of its sample).
// Records written before records carried `sample` are keyed by sha256 (folder@sha256); a task finds those too.
std::map<std::string, Recorded> recorded(const fs::path& results) {
  std::map<std::string, Recorded> out;
  if (!fs::exists(results)) return out;
  scoring::LoadedResults loaded = scoring::load_results(results);
  for (const auto& p : loaded.problems) {
    for (const auto& s : p.turns) out[turn_key(s.key, s.turn)] = {s.status, s.speedup.value_or(0.0), s.record};
    for (const auto& s : p.not_evaluated) out[turn_key(s.key, s.turn)] = {s.status, 0.0, s.record};
  }
  return out;
}

const Recorded* find_recorded(const std::map<std::string, Recorded>& done, const Task& t) {
  for (const std::string& key : {t.key(), sample_key(t.spec->folder(), std::nullopt, t.sha256)}) {
    if (t.turn > 1 && key != t.key()) continue;  // records without an index predate turns
    if (auto it = done.find(turn_key(key, t.turn)); it != done.end()) return &it->second;
  }
  return nullptr;
}

ResultRecord generation_failed_record(const Task& t, const RunOptions& o) {
  ResultRecord r;
  r.time = utc_now_iso8601();
  r.problem_id = t.spec->id;
  r.problem_slug = t.spec->slug;
  r.problem_folder = t.spec->folder();
  r.problem_category = category_name(t.spec->category);
  r.candidate_sha256 = t.sha256;
  r.sample = t.sample;
  r.turn = t.turn;
  r.input_tokens = t.input_tokens, r.output_tokens = t.output_tokens, r.cost_usd = t.cost_usd;
  r.model = o.model;
  r.world = o.world;
  r.device = enum_name(o.eval.device);
  r.dtype = o.eval.dtype;
  // A request the model service rejected (HTTP 400) has a status of its own: the model never saw the prompt.
  bool rejected = t.failure_status == generate::sample_status_name(generate::SampleStatus::bad_request);
  r.status = result_status_name(rejected ? ResultStatus::bad_request : ResultStatus::generation_failed);
  r.generation_status = t.failure_status;
  r.generation_message = t.failure_message;
  r.message = (rejected ? "the model service rejected the request" : "no kernel to evaluate: " + t.failure_status) +
              (t.failure_message.empty() ? "" : ": " + t.failure_message);
  return r;
}

// A sample pkb could not judge because its own machinery failed (`why`): recorded harness_error, which no reader
// counts as a sample and the next invocation evaluates again.
ResultRecord harness_error_record(const Task& t, const RunOptions& o, const std::string& why) {
  ResultRecord r = generation_failed_record(t, o);
  r.candidate_path = fs::absolute(t.source).string();
  r.status = result_status_name(ResultStatus::harness_error);
  r.generation_status.clear();
  r.generation_message.clear();
  r.message = "harness error, no verdict: " + why;
  return r;
}

// The problems a run asks for (selected, allowed at W, with a kernel source): scoring counts one without any
// record as 0 rather than letting it vanish from the denominator.
void record_selection(const fs::path& dir, const std::vector<const ProblemSpec*>& asked) {
  json selection = json::array();
  for (const ProblemSpec* p : asked)
    selection.push_back(
        {{"id", p->id}, {"slug", p->slug}, {"folder", p->folder()}, {"category", category_name(p->category)}});
  json m = read_json_or_null(dir / "manifest.json");
  m["selection"] = selection;
  write_json_atomically(dir / "manifest.json", m);
}

// done/total with pass and fast counts and an ETA, one line per finished sample on stderr.
class Progress {
 public:
  Progress(int total, int done, int pass, int fast, bool enabled)
      : total_(total), done_(done), pass_(pass), fast_(fast), enabled_(enabled), start_(Clock::now()) {}

  void finished(const Task& t, const std::string& status, double speedup) {
    std::lock_guard<std::mutex> lock(mu_);
    ++done_, ++this_run_;
    if (status == "correct") ++pass_;
    if (status == "correct" && speedup > 1.0) ++fast_;
    if (!enabled_) return;
    double per = std::chrono::duration<double>(Clock::now() - start_).count() / this_run_;
    int eta = static_cast<int>(per * (total_ - done_));
    char speed[32] = "";
    if (speedup > 0) std::snprintf(speed, sizeof speed, " %.2fx", speedup);
    std::string turn = t.turn > 1 ? " turn " + std::to_string(t.turn) : "";
    std::fprintf(stderr, "[%d/%d] %s sample %d%s: %s%s | pass %d, fast %d | ETA %d:%02d\n", done_, total_,
                 t.spec->folder().c_str(), t.sample, turn.c_str(), status.c_str(), speed, pass_, fast_, eta / 60,
                 eta % 60);
  }

 private:
  std::mutex mu_;
  int total_, done_, pass_, fast_, this_run_ = 0;
  bool enabled_;
  Clock::time_point start_;
};

void compile_ahead(const std::vector<Task>& tasks, const EvalOptions& eval, int jobs, bool progress) {
  std::vector<fs::path> sources;
  std::set<std::string> seen;
  for (const Task& t : tasks)
    if (!t.source.empty() && seen.insert(t.sha256).second) sources.push_back(t.source);
  if (sources.empty()) return;
  jobs = std::max(1, std::min<int>(jobs, static_cast<int>(sources.size())));
  if (progress) std::fprintf(stderr, "compiling %zu candidates, %d at a time\n", sources.size(), jobs);
  CompileOptions co = eval_compile_options(eval);
  try {
    parallel_for_each(sources.size(), jobs, [&](size_t i) { compile_candidate(sources[i], co); });  // into the cache
  } catch (const std::exception& e) {
    // Only a head start: each evaluation compiles (from the cache, or again) and records what fails.
    std::fprintf(stderr, "pkb run: compiling ahead stopped early: %s\n", e.what());
  }
}

// References on CPU ranks when no GPU can evaluate: the run still proves its problems' references sound. `pkb-full
// validate` does it in a process of its own (libtorch's references; this driver loads no libtorch), all problems in
// one, and writes references_cpu.json; where it cannot, every problem is recorded failed with the reason.
void validate_on_cpu(const std::vector<const ProblemSpec*>& problems, const RunOptions& o, const fs::path& dir) {
  if (problems.empty()) return write_json_atomically(dir / "references_cpu.json", json::object());
  std::string ids;
  for (const ProblemSpec* p : problems) ids += (ids.empty() ? "" : ",") + std::to_string(p->id);
  const fs::path verdicts = dir / "references_cpu.json", log = dir / "validate" / "validate.log";
  fs::create_directories(log.parent_path());
  std::vector<std::string> argv = {(executable_dir() / "pkb-full").string(),
                                   "validate",
                                   ids,
                                   "-w",
                                   std::to_string(o.world),
                                   "--device",
                                   "cpu",
                                   "--dtype",
                                   o.eval.dtype,
                                   "--trials",
                                   "1",
                                   "--seed",
                                   std::to_string(o.eval.seed),
                                   "--python",
                                   "off",
                                   "--out",
                                   (dir / "validate").string(),
                                   "--verdicts",
                                   verdicts.string()};
  for (const auto& [k, v] : o.eval.params) argv.insert(argv.end(), {"--param", k + "=" + std::to_string(v)});
  if (o.progress)
    std::fprintf(stderr, "pkb run: validating %zu references on CPU ranks (pkb-full validate, log in %s)\n",
                 problems.size(), log.string().c_str());
  ProcessOptions po;
  po.timeout_s = std::max(kReferenceTimeoutS, o.eval.timeout_s) * static_cast<double>(problems.size());
  po.stdout_path = log;
  po.stderr_path = dir / "validate" / "validate.stderr";
  std::error_code ec;
  fs::remove(verdicts, ec);
  const ProcessResult pr = run_process(argv, po);
  if (o.progress) std::fprintf(stderr, "%s", file_tail(log, 1 << 16).c_str());
  if (read_json_or_null(verdicts).is_object()) return;  // written: exit 1 only says a reference failed
  json out = json::object();
  const std::string why = "pkb-full validate " + pr.summary() + ": " + file_tail(po.stderr_path, 1000);
  for (const ProblemSpec* p : problems) out[p->folder()] = {{"verdict", "FAIL"}, {"detail", why}};
  write_json_atomically(verdicts, out);
}

// One CUDA_VISIBLE_DEVICES list per concurrent evaluation: W GPUs each, disjoint; one slot on CPU ranks.
std::vector<std::string> evaluation_slots(const RunOptions& o, const std::vector<std::string>& gpus,
                                          bool gpu_evaluation) {
  std::vector<std::string> slots;
  if (o.eval.device == DeviceKind::cuda && gpu_evaluation && gpus.size() < static_cast<size_t>(o.world)) {
    slots.push_back("");  // more ranks than GPUs: one slot, ranks share the GPUs (launch/gpus.h)
  } else if (o.eval.device == DeviceKind::cuda && gpu_evaluation) {
    for (size_t first = 0; first + o.world <= gpus.size(); first += o.world) {
      std::string ids;
      for (int i = 0; i < o.world; ++i) ids += (i ? "," : "") + gpus[first + i];
      slots.push_back(ids);
    }
  } else {
    slots.push_back("");
  }
  return slots;
}

// The samples of one turn still to evaluate or record, and how many the turn accounts for.
struct TurnSamples {
  std::vector<Task> todo;
  std::vector<const ProblemSpec*> asked;  // the problems asked, in order (the selection of turn 1)
  int accounted = 0, resumed = 0, pass = 0, fast = 0;
};

// 3. Every sample the turn's generation produced that is this shard's (`mine`), less those already recorded.
TurnSamples samples_to_account(const generate::GenerateResult& gen, int turn,
                               const std::vector<const ProblemSpec*>& problems,
                               const std::function<bool(const ProblemSpec*, int)>& mine, const fs::path& results,
                               RunSummary& sum) {
  TurnSamples ts;
  auto done = recorded(results);
  if (!gen.stopped.empty() && sum.service_error.empty()) sum.service_error = gen.stopped;  // why the batch stopped
  for (const auto& r : gen.records) {
    const ProblemSpec* spec = nullptr;
    for (const ProblemSpec* p : problems)
      if (p->folder() == r.problem) spec = p;
    if (!spec || !mine(spec, r.sample)) continue;
    Task t;
    t.spec = spec;
    t.sample = r.sample;
    t.turn = turn;
    if (r.reply && r.reply->usage.known)
      t.input_tokens = r.reply->usage.input_tokens, t.output_tokens = r.reply->usage.output_tokens;
    t.cost_usd = r.cost_usd;
    if (r.status == generate::SampleStatus::ok) {
      t.source = gen.out_dir / r.candidate;
      t.sha256 = sha256_hex(read_text_file(t.source));
    } else if (generate::model_failed(r.status)) {
      t.sha256 = "generation:" + spec->folder() + ":" + std::to_string(r.sample) +
                 (turn > 1 ? ":turn" + std::to_string(turn) : "");
      t.failure_status = generate::sample_status_name(r.status);
      t.failure_message = r.message;
    } else if (r.status == generate::SampleStatus::error) {
      // The service, not the model, failed: no sample yet; the next invocation asks again.
      ++sum.service_failures;
      if (sum.service_error.empty()) sum.service_error = r.message;
      if (ts.asked.empty() || ts.asked.back() != spec) ts.asked.push_back(spec);
      continue;
    } else {
      continue;  // skipped (W forbidden), no_solution, missing: not samples of this run
    }
    if (ts.asked.empty() || ts.asked.back() != spec) ts.asked.push_back(spec);
    ++ts.accounted;
    const Recorded* rec = find_recorded(done, t);
    const StatusInfo* info = rec ? find_status(rec->status) : nullptr;
    // A rejected request is sent again by every invocation (rejections are not cached): an answer now
    // supersedes the bad_request record.
    bool answered_now = info && info->status == ResultStatus::bad_request && t.failure_status != "bad_request";
    // not_evaluated: done only where no GPU could do better; harness_error: never done (pkb failed, not the sample).
    bool redo = info && (info->status == ResultStatus::harness_error || (!info->sample && sum.gpu_evaluation));
    if (rec && !redo && !answered_now) {
      ++ts.resumed;
      ts.pass += rec->status == "correct";
      ts.fast += rec->status == "correct" && rec->speedup > 1.0;
      continue;
    }
    ts.todo.push_back(t);
  }
  return ts;
}

// 4. Failed generations are failed samples: recorded now, nothing to run. Returns the samples to evaluate.
std::vector<Task> record_failed_generations(const std::vector<Task>& todo, const RunOptions& o, const fs::path& results,
                                            RunSummary& sum, Progress& progress) {
  std::vector<Task> evals;
  for (const Task& t : todo) {
    if (t.source.empty()) {
      ResultRecord failed = generation_failed_record(t, o);
      append_line(results, record_line(failed));
      ++sum.recorded;
      sum.rejected += failed.status == result_status_name(ResultStatus::bad_request);
      progress.finished(t, failed.status, 0);
    } else {
      evals.push_back(t);
    }
  }
  return evals;
}

// Without GPUs (once, on turn 1): the references are validated on CPU ranks, and candidates only compiled.
void validate_without_gpus(RunOptions& o, const std::vector<const ProblemSpec*>& problems,
                           const std::function<bool(const ProblemSpec*, int)>& mine, const RunSummary& sum) {
  std::fprintf(stderr,
               "pkb run: no GPU on this machine: GPU evaluations are skipped; candidates are compiled and the "
               "references validated on CPU ranks\n");
  std::vector<const ProblemSpec*> shard_problems;  // a shard validates the references of its own problems
  for (const ProblemSpec* p : problems)
    for (int k = 0; k < o.samples; ++k)
      if (mine(p, k)) {
        shard_problems.push_back(p);
        break;
      }
  validate_on_cpu(shard_problems, o, sum.dir);
  o.eval.not_evaluated_reason = "no GPU on this machine";
}

// One record per sample, on the slots (run/slot_queue.h: a problem's samples on one slot, pkb's own failures
// recorded harness_error).
void evaluate_tasks(const std::vector<Task>& evals, const RunOptions& o, const std::vector<std::string>& gpus,
                    const fs::path& results, RunSummary& sum, Progress& progress) {
  std::deque<std::vector<Task>> groups;
  for (const Task& t : evals) {
    if (groups.empty() || groups.back().front().spec != t.spec) groups.emplace_back();
    groups.back().push_back(t);
  }
  std::atomic<int> recorded{0}, harness_errors{0};
  SlotWork<Task> work;
  work.evaluate = [&](const Task& t, const std::string& devices) -> std::string {
    EvalOptions e = o.eval;
    e.visible_devices = devices;
    // evaluate_candidate names the candidate pass's directory under out_dir by content: one directory per sample
    // (and turn) keeps two samples with equal bytes from overwriting each other's rank records.
    e.out_dir = sum.dir / "eval" /
                ("sample_" + std::to_string(t.sample) + (t.turn > 1 ? "_turn_" + std::to_string(t.turn) : ""));
    ResultRecord rec = record_from_json(evaluate_candidate(*t.spec, t.source, e).record);
    rec.sample = t.sample;
    rec.turn = t.turn;
    rec.input_tokens = t.input_tokens, rec.output_tokens = t.output_tokens, rec.cost_usd = t.cost_usd;
    rec.model = o.model;
    append_line(results, record_line(rec));
    ++recorded;
    progress.finished(t, rec.status, rec.speedup.value_or(0.0));
    if (rec.status != result_status_name(ResultStatus::harness_error)) return "";
    ++harness_errors;
    return "sample " + std::to_string(t.sample) + " of this problem: " + rec.message;
  };
  work.record_harness_error = [&](const Task& t, const std::string& why) {
    append_line(results, record_line(harness_error_record(t, o, why)));
    ++recorded, ++harness_errors;
    progress.finished(t, "harness_error", 0);
  };
  work.group_failed = [](const Task& t, const std::string& why) {
    std::fprintf(stderr, "pkb run: %s: harness error, recorded harness_error (the next invocation retries): %s\n",
                 t.spec->folder().c_str(), why.c_str());
  };
  evaluate_on_slots(std::move(groups), evaluation_slots(o, gpus, sum.gpu_evaluation), work);
  sum.recorded += recorded;
  sum.harness_errors += harness_errors;
}

// Steps 3-5 for one turn: account for every sample the turn's generation produced (resumed ones skipped), record
// failed generations, compile the kernels ahead and evaluate them on the GPU slots, appending one record each.
// `mine` says which samples are this shard's (all of them when the run is not sharded).
void run_turn(const generate::GenerateResult& gen, int turn, RunOptions& o,
              const std::vector<const ProblemSpec*>& problems, const std::vector<std::string>& gpus,
              const std::function<bool(const ProblemSpec*, int)>& mine, const fs::path& results, RunSummary& sum) {
  TurnSamples ts = samples_to_account(gen, turn, problems, mine, results, sum);
  if (turn == 1) {
    record_selection(sum.dir, ts.asked);
    sum.samples = ts.accounted;
  } else {
    sum.later_turns += ts.accounted;
  }
  sum.resumed += ts.resumed;
  if (o.progress && ts.resumed)
    std::fprintf(stderr, "%sresuming: %d of %d samples already recorded\n",
                 turn > 1 ? ("turn " + std::to_string(turn) + ": ").c_str() : "", ts.resumed, ts.accounted);
  Progress progress(ts.accounted, ts.resumed, ts.pass, ts.fast, o.progress);
  std::vector<Task> evals = record_failed_generations(ts.todo, o, results, sum, progress);
  // 5. Compile ahead on every core, then evaluate (or, without GPUs, record what compiled).
  int jobs = o.compile_jobs > 0 ? o.compile_jobs : usable_cores();
  compile_ahead(evals, o.eval, jobs, o.progress);
  if (!sum.gpu_evaluation && turn == 1) validate_without_gpus(o, problems, mine, sum);
  evaluate_tasks(evals, o, gpus, results, sum, progress);
}

// The samples that go on to turn `turn` + 1, each with its conversation so far: its answer of this turn was
// recorded (not left unevaluated for want of a GPU, not lost to a harness error), and it is not yet correct and
// faster than --stop-speedup. The feedback is built from the record as read back from results.jsonl, so a
// resumed run sends byte-identical follow-ups and the reply cache answers them.
std::vector<generate::FollowUp> follow_ups(const generate::GenerateResult& gen, int turn, const RunOptions& o,
                                           const fs::path& results, Conversations& conversations) {
  auto done = recorded(results);
  std::vector<generate::FollowUp> next;
  for (const auto& r : gen.records) {
    if (!r.reply || !r.reply->ok()) continue;  // no answer to continue from (service failure, skip, offline model)
    std::string key = sample_key(r.problem, r.sample, "");
    auto it = done.find(turn_key(key, turn));
    if (it == done.end()) continue;
    const StatusInfo* info = find_status(it->second.status);
    if (!info || !info->sample) continue;  // not_evaluated: nothing to tell the model yet
    if (it->second.status == "correct" && o.stop_speedup && it->second.speedup > *o.stop_speedup) continue;
    generate::FollowUp& f = conversations[key];
    f.problem = r.problem;
    f.sample = r.sample;
    f.answers.push_back(r.reply->text);
    f.follow_ups.push_back(prompt::render_follow_up(it->second.record, {turn, o.turns, o.generate.prompt.prompts_dir}));
    next.push_back(f);
  }
  return next;
}

}  // namespace

int visible_gpu_count() { return static_cast<int>(visible_gpus().size()); }

namespace {

// Options that cannot go together, refused before anything runs.
void refuse_conflicting_options(const RunOptions& o) {
  const bool offline = o.model == "expert" || o.model.rfind("replay:", 0) == 0;
  if (o.turns < 1) throw Error("--turns must be at least 1");
  if (o.turns > 1 && offline)
    throw Error("--turns " + std::to_string(o.turns) + " needs a language model: --model " + o.model +
                " cannot read feedback");
  if (o.agent.enabled && offline)
    throw Error("--agent needs a language model: --model " + o.model + " cannot call tools");
  if (o.agent.enabled && o.turns > 1) throw Error("--agent and --turns: an agent decides its own turns");
  if (o.agent.enabled && o.agent.budget.steps < 1) throw Error("--agent-steps must be at least 1");
}

// 1. The settings: devices, W, the machine the prompts describe (nvcc targets it), the problems, the run directory
// (a shard's under the run's, sharing the run's reply cache) and its manifest. Returns the selection.
std::string resolve_settings(const Catalog& catalog, RunOptions& o, const std::vector<std::string>& gpus,
                             RunSummary& sum) {
  if (o.device == "cuda" && gpus.empty()) throw Error("--device cuda: no GPU is visible on this machine");
  if (o.agent.enabled && o.device != "cpu" && gpus.empty())
    throw Error("--agent evaluates as it goes: it needs a GPU, or --device cpu");
  sum.gpu_evaluation = o.device == "cpu" || !gpus.empty();
  // --device auto|cpu|cuda: auto evaluates on GPUs where there are some (else compiles and validates only)
  o.eval.device = o.device == "cpu" ? DeviceKind::cpu : DeviceKind::cuda;
  if (o.world <= 0) o.world = o.eval.device == DeviceKind::cuda && gpus.size() >= 2 ? static_cast<int>(gpus.size()) : 2;
  o.eval.world = o.world;
  check_timing_method(o.eval);  // a usage error now, not a harness_error in every sample
  Topology topo = prompt::choose_topology(o.topology, o.world);
  o.topology = topo.name;
  o.eval.topology = topo.name;
  o.eval.arch = o.arch.empty() ? prompt::nvcc_arch(topo.compute_capability) : o.arch;
  std::string selection = o.problems;
  if (selection.empty() && o.model == "expert") {
    for (const ProblemSpec& p : catalog.problems)
      if (fs::exists(p.dir / "solution.cu")) selection += (selection.empty() ? "" : ",") + std::to_string(p.id);
    if (selection.empty()) throw Error("no problem has a solution.cu for --model expert");
  }
  if (selection.empty()) selection = "all";
  if (o.out_dir.empty())
    o.out_dir = fs::path("results/runs") / (generate::file_safe(o.model) + "-w" + std::to_string(o.world) + "-" +
                                            enum_name(o.eval.device) + "-" + o.eval.dtype);
  if (o.shard.sharded()) {
    o.generate.cache_dir = fs::absolute(o.out_dir) / "cache";
    o.out_dir /= o.shard.dir_name();
  }
  sum.dir = fs::absolute(o.out_dir);
  fs::create_directories(sum.dir);
  o.eval.out_dir = sum.dir;
  o.eval.cache_dir = fs::absolute(o.eval.cache_dir);
  settle_manifest(sum.dir, o, selection, sum.gpu_evaluation);
  return selection;
}

// The generation options of every turn, and the shard's part of the (problem, sample) grid (run/shard.h), which
// generation asks for alone.
generate::GenerateOptions generation_options(const RunOptions& o, const std::string& selection, const RunSummary& sum) {
  generate::GenerateOptions g = o.generate;
  g.model = o.model;
  g.problems = selection;
  g.samples = o.samples;
  g.prompt.world = o.world;
  g.prompt.topology = o.topology;
  g.prompt.params = o.eval.params;
  g.prompt.dtype = o.eval.dtype == "fp32" ? DType::f32 : DType::bf16;
  g.out_dir = sum.dir;
  g.progress = o.progress;
  return g;
}

std::function<bool(const ProblemSpec*, int)> shard_filter(const std::vector<const ProblemSpec*>& problems,
                                                          const RunOptions& o) {
  auto position = std::make_shared<std::map<const ProblemSpec*, long>>();
  for (const ProblemSpec* p : problems) position->emplace(p, static_cast<long>(position->size()));
  const long grid = static_cast<long>(problems.size()) * o.samples;
  return [position, grid, shard = o.shard, samples = o.samples](const ProblemSpec* spec, int sample) {
    auto it = position->find(spec);
    return it != position->end() && in_shard(shard, it->second * samples + sample, grid);
  };
}

// 2-5, once per turn: generate (cached replies: a resumed run sends nothing it already paid for), record failed
// generations, compile, evaluate. Turn t + 1 asks again, with feedback, every sample whose turn t was recorded
// and is not yet correct and faster than --stop-speedup.
void run_turns(const Catalog& catalog, RunOptions& o, const generate::GenerateOptions& g,
               const std::vector<const ProblemSpec*>& problems, const std::vector<std::string>& gpus,
               const std::function<bool(const ProblemSpec*, int)>& mine, const fs::path& results, RunSummary& sum) {
  Conversations conversations;
  std::vector<generate::FollowUp> next;
  for (int turn = 1; turn <= o.turns; ++turn) {
    generate::GenerateOptions gt = g;
    if (turn > 1) {
      if (next.empty()) break;
      if (o.progress)
        std::fprintf(stderr, "pkb run: turn %d of %d: %zu samples get their feedback and try again\n", turn, o.turns,
                     next.size());
      gt.turn = turn;
      gt.follow_ups = std::move(next);
      gt.out_dir = sum.dir / ("turn_" + std::to_string(turn));
      gt.cache_dir = g.cache_dir.empty() ? sum.dir / "cache" : g.cache_dir;
    }
    generate::GenerateResult gen = generate::run_generate(catalog, gt);
    run_turn(gen, turn, o, problems, gpus, mine, results, sum);
    if (turn < o.turns) next = follow_ups(gen, turn, o, results, conversations);
  }
}

// 6. Score and report, from the records alone; a run without any record (say, the service refused every
// request) still reports its selection's problems, as missing, and why: the manifest keeps this invocation's
// model service failure, which a report without samples names instead of scoring nothing as 0.
void write_run_report(const fs::path& results, const RunSummary& sum) {
  if (!fs::exists(results)) std::ofstream{results};
  json m = read_json_or_null(sum.dir / "manifest.json");
  if (sum.service_failures)
    m["model_api_failure"] = sum.service_error;
  else
    m.erase("model_api_failure");
  write_json_atomically(sum.dir / "manifest.json", m);
  scoring::LoadedResults loaded = scoring::load_results(sum.dir);
  for (const auto& w : loaded.warnings) std::fprintf(stderr, "pkb: warning: %s\n", w.c_str());
  scoring::write_report(scoring::score(loaded, scoring::ScoreSettings{}), loaded, sum.dir);
}

}  // namespace

RunSummary run_benchmark(const Catalog& catalog, RunOptions o) {
  RunSummary sum;
  refuse_conflicting_options(o);
  std::vector<std::string> gpus = visible_gpus();
  const std::string selection = resolve_settings(catalog, o, gpus, sum);
  std::vector<const ProblemSpec*> problems = catalog.select(selection);
  if (o.progress)
    std::fprintf(stderr, "pkb run: model %s, %zu problems x %d samples, W=%d, %s -> %s\n", o.model.c_str(),
                 problems.size(), o.samples, o.world,
                 o.eval.device == DeviceKind::cpu ? "CPU ranks"
                 : sum.gpu_evaluation             ? "GPUs"
                                                  : "no GPU",
                 sum.dir.c_str());
  generate::GenerateOptions g = generation_options(o, selection, sum);
  std::function<bool(const ProblemSpec*, int)> mine = shard_filter(problems, o);
  if (o.shard.sharded()) g.wanted = [&](const ProblemSpec& spec, int sample) { return mine(&spec, sample); };
  fs::path results = sum.dir / "results.jsonl";
  if (size_t cut = repair_jsonl_tail(results); cut && o.progress)
    std::fprintf(stderr, "results.jsonl: removed an incomplete last line (%zu bytes) left by an interrupted run\n",
                 cut);
  if (o.agent.enabled) {
    std::vector<const ProblemSpec*> asked;
    for (const ProblemSpec* p : problems)
      if (!world_size_violation(*p, o.world, p->parameters)) asked.push_back(p);
    record_selection(sum.dir, asked);
    run_agent_samples(problems, o, g, evaluation_slots(o, gpus, sum.gpu_evaluation), mine, results, sum);
  } else {
    run_turns(catalog, o, g, problems, gpus, mine, results, sum);
  }
  write_run_report(results, sum);
  return sum;
}

}  // namespace pkb::run
