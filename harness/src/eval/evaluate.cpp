// The candidate side of an evaluation and its stages (docs/design/evaluation.md):
// evaluate_candidate runs 1. lint and compile, 2. the reference pass (eval/reference.cpp), 3. the candidate pass in
// the sandbox, 4. the checks and the timing (the baselines timed again where asked, speedups by method, roofline,
// flags), 5. the verdict. Each stage is a function that fills its part of the record; one that reaches a verdict
// ends the evaluation with it (Evaluation::finish).
#include "eval/evaluate.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "check/output_views.h"
#include "compile/compiler.h"
#include "core/error.h"
#include "core/files.h"
#include "core/parallel.h"
#include "core/result_record.h"
#include "core/sha256.h"
#include "eval/reference.h"
#include "io/safetensors_encode.h"
#include "launch/gpus.h"
#include "launch/jobs.h"
#include "launch/mpirun.h"
#include "launch/sandbox.h"
#include "protocol/instruments.h"
#include "protocol/rank_plan.h"
#include "protocol/rank_record.h"
#include "seal/seal.h"
#include "spec/catalog.h"
#include "spec/roofline.h"
#include "spec/topology.h"
#include "worker/timing.h"
#include "worker/worker.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using protocol::RankRecord;
using protocol::RankTiming;
using RankRecords = std::vector<std::optional<RankRecord>>;  // per rank: its record, nullopt where none arrived

struct Failure {
  ResultStatus status;
  std::string message;
  json detail;
};

// Classifies a candidate launch that did not end cleanly. Rank records come first: a rank that recorded a CUDA
// error or a bad return code explains why its peers then hung or were killed.
std::optional<Failure> launch_failure(const ProcessResult& pr, const RankRecords& records) {
  if (auto e = first_rank_error(records)) {
    if (e->status == protocol::RankStatus::load_error)
      return Failure{ResultStatus::load_error, e->message, {{"rank", e->rank}}};
    // The candidate's process on that rank died (its monitor saw it): the rank program itself lived on.
    if (e->status == protocol::RankStatus::crash)
      return Failure{ResultStatus::crash,
                     "rank " + std::to_string(e->rank) + " " + e->message,
                     {{"rank", e->rank}, {"stderr_tail", stderr_tail(pr, kRecordTailBytes)}}};
    return Failure{
        ResultStatus::runtime_error, "rank " + std::to_string(e->rank) + ": " + e->message, {{"rank", e->rank}}};
  }
  if (pr.ok()) return std::nullopt;
  std::string tail = stderr_tail(pr, kRecordTailBytes);
  if (pr.timed_out)
    return Failure{ResultStatus::timeout,
                   "no result within " + std::to_string(static_cast<int>(pr.wall_s)) +
                       " s (hang or deadlock); the rank group was killed",
                   {{"stderr_tail", tail}}};
  std::smatch m;
  static const std::regex kSignal(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+))");
  json detail = {{"stderr_tail", tail}};
  std::string msg = "a rank died: " + pr.summary();
  if (std::regex_search(pr.stderr_tail, m, kSignal)) {
    int sig = std::stoi(m[2]);
    detail["rank"] = std::stoi(m[1]);
    detail["signal"] = sig;
    msg = "rank " + std::string(m[1]) + " killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return Failure{ResultStatus::crash, msg, detail};
}

json comparison_json(const Comparison& c) {
  return {{"pass", c.pass},
          {"max_abs_err", c.max_abs_err},
          {"max_rel_err", c.max_rel_err},
          {"rel_l2", c.rel_l2},
          {"mismatches", c.mismatches},
          {"nan_count", c.nan_count},
          {"first_bad", c.first_bad},
          {"error", c.error}};
}

// One set of outputs to compare: a checked trial, the post-timing trial, or a timed call (label copyK).
struct CheckedCall {
  std::string label;  // directory under the sealed and the reference directories
  std::string when;   // for messages; never names which timed calls are checked
  int trial;          // for the record (-1: a timed call)
  int rep = -1;       // a timed call: the repetition that captures it (checked only if that repetition ran)
  int copy = -1;      // a timed call: its input copy
};

// One checked call's verdict: its failures in the order found, and its comparisons for the record.
struct CallVerdict {
  std::vector<std::string> failures;
  bool robust_pass = true, pkb_pass = true, all_ranks_sent = false;
  json comparisons = json::array();
};

// Compares one call's outputs on every rank with the expected ones (the oracle's, robust: decides) and the bf16
// reference (the paper's allclose: recorded).
CallVerdict check_call(const ProblemSpec& spec, const RunShape& run, const fs::path& ref_dir,
                       const fs::path& sealed_dir, const CheckedCall& call) {
  CallVerdict v;
  // Each file's tensors stay in `files` while the views into them are compared.
  std::vector<HostTensors> files;
  files.reserve(3 * static_cast<size_t>(run.world));
  auto rank_outputs = [&](const fs::path& dir, const std::string& prefix, int r) {
    files.push_back(read_safetensors_host(dir / call.label / (prefix + std::to_string(r) + ".safetensors")));
    return output_views_in_order(spec, files.back());
  };
  std::vector<std::vector<TensorView>> got, reference, expected;
  for (int r = 0; r < run.world; ++r) {
    if (!fs::exists(sealed_dir / call.label / ("rank" + std::to_string(r) + ".safetensors"))) {
      v.failures.push_back(call.when + ": rank " + std::to_string(r) + " sent no outputs");
      v.robust_pass = v.pkb_pass = false;
      return v;
    }
    try {  // the candidate's bytes: unreadable outputs are its failure
      got.push_back(rank_outputs(sealed_dir, "rank", r));
    } catch (const Error& e) {
      v.failures.push_back(call.when + ": rank " + std::to_string(r) + " outputs unreadable: " + e.what());
      v.robust_pass = v.pkb_pass = false;
      return v;
    }
    reference.push_back(rank_outputs(ref_dir, "rank", r));
    expected.push_back(rank_outputs(ref_dir, "oracle.rank", r));
  }
  v.all_ranks_sent = true;
  // Both lists hold (rank, output) in the same order; the robust one adds the replication checks.
  auto robust = check_output_views(spec, run, Policy::robust, got, expected, true);
  auto paper = check_output_views(spec, run, Policy::paper_allclose, got, reference, false);
  size_t next_paper = 0;
  for (const OutputCheck& c : robust) {
    v.robust_pass &= c.result.pass;
    if (!c.result.pass) v.failures.push_back(call.when + " " + c.where() + ": " + describe(c.result));
    if (c.replication) continue;
    const Comparison& p = paper.at(next_paper++).result;
    v.pkb_pass &= p.pass;
    json entry = {
        {"rank", c.rank}, {"output", c.output}, {"robust", comparison_json(c.result)}, {"pkb", comparison_json(p)}};
    if (call.trial >= 0)
      entry["trial"] = call.trial;
    else
      entry["timed_call"] = true;
    v.comparisons.push_back(entry);
  }
  return v;
}

// Compares every checked call's outputs (check_call), the calls on the host's threads at once and merged in the
// calls' order, so the record and the first failure do not depend on which thread finished first; returns the first
// failure message or "".
std::string check_candidate_outputs(const ProblemSpec& spec, const RunShape& run, const fs::path& ref_dir,
                                    const fs::path& sealed_dir, const std::vector<CheckedCall>& calls,
                                    const RankRecords& records, json& checks) {
  // A call holds W ranks' outputs three times (candidate, reference, oracle) and each comparison widens two to double:
  // about 12x the outputs' bytes for bf16 at once, which bounds how many calls run together.
  constexpr size_t kCheckMemory = size_t{4} << 30;
  const size_t call_bytes =
      12 * static_cast<size_t>(run.world) * std::max<size_t>(1, heap_copy_bytes(spec, run, false));
  const int workers = static_cast<int>(std::clamp<size_t>(kCheckMemory / call_bytes, 1, host_threads()));
  std::vector<CallVerdict> verdicts(calls.size());
  parallel_for_each(calls.size(), workers,
                    [&](size_t i) { verdicts[i] = check_call(spec, run, ref_dir, sealed_dir, calls[i]); });
  std::string first_failure;
  bool robust_all = true, pkb_all = true;
  json per = json::array();
  auto note = [&](const std::string& msg) {
    if (first_failure.empty()) first_failure = msg;
  };
  int timed_checked = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const CallVerdict& v = verdicts[i];
    for (const auto& f : v.failures) note(f);
    robust_all &= v.robust_pass;
    pkb_all &= v.pkb_pass;
    timed_checked += calls[i].trial < 0 && v.all_ranks_sent;
    for (const auto& entry : v.comparisons) per.push_back(entry);
  }
  json mutated = json::array();
  for (size_t r = 0; r < records.size(); ++r)
    if (records[r] && records[r]->trials)
      for (const protocol::RankTrial& tr : *records[r]->trials)
        for (const std::string& n : tr.inputs_mutated.value_or(std::vector<std::string>{})) {
          mutated.push_back({{"rank", r}, {"trial", tr.label()}, {"input", n}});
          note("rank " + std::to_string(r) + " modified input '" + n + "' (inputs are read-only)");
        }
  checks = {{"policy", "robust"},  {"expected", "oracle"},      {"robust_pass", robust_all},
            {"pkb_pass", pkb_all}, {"inputs_mutated", mutated}, {"timed_calls_checked", timed_checked},
            {"comparisons", per}};
  if (!mutated.empty()) checks["robust_pass"] = false;
  return first_failure;
}

// The calls whose outputs are judged: the checked trials, the post-timing trial, and the timed calls on the
// copies the reference pass drew (each copy's captured call is one the candidate could not tell apart).
std::vector<CheckedCall> checked_calls(const EvalOptions& o, const RankRecord& ref_record) {
  std::vector<CheckedCall> calls;
  for (int t = 0; t <= o.trials; ++t)
    calls.push_back({"trial" + std::to_string(t),
                     t == o.trials ? "post-timing trial " + std::to_string(t) : "trial " + std::to_string(t), t});
  CopyPlan plan = copy_plan(ref_record.candidate_input_copies.value_or(0),
                            ref_record.candidate_warmup_copies.value_or(0), o.timing);
  for (int k : ref_record.timed_checks.value_or(std::vector<int>{}))
    if (int rep = plan.copies > 0 ? plan.first_rep_of(k, o.timing) : -1; rep >= 0)
      calls.push_back({"copy" + std::to_string(k), "a timed call", -1, rep, k});
  return calls;
}

// What the candidate pass produced, as the driver received it.
struct CandidateRun {
  ProcessResult process;
  RankRecords records;     // per rank: the last record it sent (nullopt where none arrived)
  std::string seal_error;  // a stream that cannot be believed
  std::string ended;       // non-empty: the job exited cleanly but a rank never finished its protocol
  json sandbox;
};

// A directory of the driver's, empty, of a neutral name in the system's temporary directory ("pkb-seal-XXXXXX"),
// removed with this: what is bound into a sandbox from the host shows its host path there (/proc/self/mountinfo), and
// must not be the run directory's.
class NeutralDir {
 public:
  explicit NeutralDir(const std::string& prefix) {
    std::string tmpl = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!mkdtemp(tmpl.data())) throw Error(tmpl + ": mkdtemp: " + std::strerror(errno));
    path_ = tmpl;
  }
  ~NeutralDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  NeutralDir(const NeutralDir&) = delete;
  NeutralDir& operator=(const NeutralDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// Where the candidate pass's ranks find the problem, the library, the seal and their working directory: in the sandbox
// fixed /pkb names, without one the driver's own paths.
struct PassPaths {
  fs::path problem_dir, library, seal_dir, out_dir;
};

// The rank programs' options for the candidate pass.
WorkerOptions candidate_worker_options(const ProblemSpec& spec, const EvalOptions& o, const PassPaths& inside,
                                       const RankRecord& ref_record, const std::vector<CheckedCall>& calls) {
  WorkerOptions w = worker_options(spec, o, inside.out_dir);
  w.problem_dir = inside.problem_dir.string();
  w.trials = trial_range(0, o.trials - 1);
  w.post_trial = o.trials;
  w.candidate = inside.library.string();
  w.seal_dir = inside.seal_dir.string();
  int copies = ref_record.candidate_input_copies.value_or(0);
  if (copies > 0) w.rotation_copies = copies, w.warmup_copies = ref_record.candidate_warmup_copies.value_or(1);
  w.heap_mib = o.heap_mib;
  w.draw_copies = o.draw_copies;
  // Without a sandbox the runner could still read the reference cache (expected outputs) and the run directory:
  // it hides them itself. (In the sandbox neither is there at all.)
  if (!o.sandbox) w.runner_hidden = {fs::absolute(o.cache_dir).string(), fs::absolute(o.out_dir).string()};
  // In a runner the candidate cannot read the monitor, which may then know which copies are checked and capture only
  // those (in process every copy's capture crosses, so that the candidate sharing the process learns nothing).
  if (o.uses_runner())
    for (const auto& c : calls)
      if (c.copy >= 0) w.captured_copies.push_back(c.copy);
  return w;
}

// The sandbox of a candidate pass and its limits. Every path inside is a fixed name: the problem's spec, the library
// and the plan are copies bwrap writes in, the working directory (HOME) is a private tmpfs, and only the seal's FIFOs
// are bound, from a directory of neutral name. So nothing the candidate can read (its environment, its directory,
// /proc/self/mountinfo, a peer's command line) names the run directory, the cache or the user's files.
Sandbox candidate_sandbox(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const fs::path& library,
                          const fs::path& fifo, const PassPaths& inside, const std::string& plan, RankJob& job) {
  Sandbox box;
  box.gpu = o.device == DeviceKind::cuda;
  box.read_only_at = {{fifo, inside.seal_dir}};
  box.files = {{inside.problem_dir / "problem.json", read_text_file(spec.dir / "problem.json")},
               {inside.library, read_text_file(library)},
               {kSandboxWork / "plan.json", plan, false}};  // rank 0 deletes it before any candidate code runs
  size_t in_bytes = heap_copy_bytes(spec, run, true), out_bytes = heap_copy_bytes(spec, run, false);
  // Files the job may write: logs, and on CPUs each rank's heap in /dev/shm (copies, outputs, arena).
  size_t heap_bound = kTimingCopyBudgetCpu + 4 * (in_bytes + out_bytes) + ((o.heap_mib ? o.heap_mib : 16) << 20);
  job.limits.file_size = std::max<size_t>(size_t{256} << 20, 2 * heap_bound);
  box.tmpfs_bytes = std::max<size_t>(size_t{1} << 30, static_cast<size_t>(o.world) * 2 * heap_bound);
  if (o.device != DeviceKind::cuda) job.limits.address_space = size_t{32} << 30;  // CUDA reserves far more
  job.limits.cpu_s = 2 * o.timeout_s + 30;
  job.limits.processes = 256 + 16 * static_cast<size_t>(o.world);
  return box;
}

// What the ranks sent (records, a broken seal, a rank that never finished) and what the sandbox says of the pass.
void collect_sealed(CandidateRun& res, const std::vector<SealedRank>& got, const RankJob& job,
                    const fs::path& cand_dir) {
  SealedRecords sealed = sealed_records(got);
  res.records = std::move(sealed.records);
  res.seal_error = sealed.seal_error;
  for (size_t r = 0; r < got.size(); ++r)
    if (res.process.ok() && !got[r].ended && res.ended.empty())
      res.ended = "rank " + std::to_string(r) + " exited without finishing (exit(0) from candidate code?)";
  // Where the candidate ran (its own runner process, or with --candidate-process in-process the rank program), and what
  // of the runner's lockdown its kernel refused, as rank 0's monitor recorded them.
  if (!res.records.empty() && res.records[0]) {
    const RankRecord& rank0 = *res.records[0];
    if (rank0.candidate_process) res.sandbox["candidate_process"] = *rank0.candidate_process;
    if (rank0.candidate_lockdown_note) res.sandbox["lockdown_note"] = *rank0.candidate_lockdown_note;
  }
  // A log that reached the file-size limit was cut there: say so.
  std::error_code ec;
  for (const char* log : {"candidate.stdout", "candidate.stderr"})
    if (job.limits.file_size && fs::file_size(cand_dir / log, ec) >= job.limits.file_size)
      res.sandbox["truncated"].push_back(std::string(log) + " at " + std::to_string(job.limits.file_size) + " bytes");
}

CandidateRun run_candidate(const ProblemSpec& spec, const RunShape& run, const EvalOptions& o, const fs::path& library,
                           const fs::path& cand_dir, const RankRecord& ref_record,
                           const std::vector<CheckedCall>& calls) {
  // cand_dir (the driver's): logs, sealed/ (what was received); without a sandbox also scratch/ and fifo/.
  std::error_code ec;
  fs::remove_all(cand_dir, ec);
  fs::create_directories(cand_dir);
  const bool boxed = o.sandbox;
  std::optional<NeutralDir> seal_home;
  if (boxed) seal_home.emplace("pkb-seal");
  fs::path fifo = boxed ? seal_home->path() : cand_dir / "fifo", scratch = cand_dir / "scratch";
  PassPaths inside =
      boxed ? PassPaths{fs::path("/pkb/problems") / spec.folder(), "/pkb/candidate.so", "/pkb/seal", kSandboxWork}
            : PassPaths{spec.dir, fs::absolute(library), fifo, scratch};
  std::set<std::string> keep;
  for (const auto& c : calls) keep.insert(c.label);
  size_t out_bytes = heap_copy_bytes(spec, run, false);  // a capture's bytes, at most
  uint64_t copies = static_cast<uint64_t>(ref_record.candidate_input_copies.value_or(0));
  uint64_t max_stream = (static_cast<uint64_t>(calls.size()) + copies + 2) * (out_bytes + 4096) + (64u << 20);

  CandidateRun res;
  SealCollector collector(fifo, cand_dir / "sealed", o.world, max_stream,
                          [&keep](const std::string& l) { return keep.count(l) > 0; });
  // The schedule (trials, seed, copies, timing) reaches the ranks in a file they read and delete before the candidate
  // starts; the command line, which /proc shows to every process in the sandbox, names only that file.
  const std::string plan =
      json(protocol::RankPlan{to_args(candidate_worker_options(spec, o, inside, ref_record, calls))}).dump();
  if (!boxed) fs::create_directories(scratch), write_file_atomically(scratch / "plan.json", plan);
  RankJob job = rank_job(o, {"--plan", (inside.out_dir / "plan.json").string()}, cand_dir, "candidate", o.timeout_s);
  // Without libtorch in the process unless the problem's inputs need its prepare step (worker/candidate_main.cpp), as
  // the reference pass says (pkb-rank, which runs any candidate, where an entry does not say).
  job.program = ref_record.prepare_step.value_or(true) ? RankProgram::reference : RankProgram::candidate;
  Sandbox box;
  if (boxed) {
    box = candidate_sandbox(spec, run, o, library, fifo, inside, plan, job);
    job.sandbox = &box;
  }
  res.process = run_rank_job(job);
  res.sandbox = {{"enabled", boxed},
                 {"file_size_limit", job.limits.file_size},
                 {"rank_program", rank_program_path(job.program).filename().string()}};
  if (!boxed) res.sandbox["note"] = "--no-sandbox: candidate code ran with the driver's user, files and network";
  collect_sealed(res, collector.finish(), job, cand_dir);
  return res;
}

double median_of(const std::optional<RankTiming>& t, TimingMethod m) {
  if (!t) return 0.0;
  if (m == TimingMethod::barrier) return t->pkb.median_us;
  if (m == TimingMethod::paper) return t->paper.stats.median_us;
  return t->device && t->device->stats ? t->device->stats->median_us : 0.0;
}

// The candidate's time by method m. Repeated contents never make a kernel fast: the pkb method takes the fresh calls'
// median where it is the larger, and where repeats may have run faster (repeats_may_be_faster) the methods that cannot
// tell the two kinds of call apart (paper: per-repetition means; device) claim no time, hence no speedup.
double candidate_median_us(const std::optional<RankTiming>& cand_t, TimingMethod m, bool repeats_faster) {
  double median = median_of(cand_t, m);
  if (m != TimingMethod::barrier) return repeats_faster ? 0.0 : median;
  if (cand_t && cand_t->repeated_content_iters > 0) median = std::max(median, cand_t->fresh_median_us);
  return median;
}

// One evaluation in progress: what it evaluates, the record it fills and the stages' wall times. finish() ends it
// with a status and a message; every stage that reaches a verdict returns what finish() gives.
struct Evaluation {
  const ProblemSpec& spec;
  RunShape run;
  EvalOptions o;
  std::string source_hash;
  json prov;
  std::chrono::steady_clock::time_point started;
  EvalResult res;
  json wall = json::object();

  json& rec() { return res.record; }
  EvalResult finish(ResultStatus s, const std::string& message) {
    res.status = s;
    json& record = res.record;
    record["status"] = result_status_name(s);
    record["message"] = message;
    wall["total_s"] = wall_seconds_since(started);
    record["wall"] = wall;
    // Compiler messages, stderr tails and file names carry bytes the candidate chose: whatever is not UTF-8 is
    // replaced (U+FFFD) once, here, so every later reader gets valid JSON.
    record = json::parse(record.dump(-1, ' ', false, json::error_handler_t::replace));
    // Through the one typed definition of a record (core/result_record.h), as every reader gets it back.
    res.record = record_to_json(record_from_json(record));
    return res;
  }
};

// The times a speedup compares: the candidate's and the two baselines' (nullopt or null when absent).
struct Timings {
  std::optional<RankTiming> candidate, libtorch_nccl;  // the rank programs' timing sections
  json pytorch_eager;                                  // reference.py's timing as it wrote it (timing.py.json)
  std::optional<RankTiming> eager;                     // what of it the driver reads, where it has a median
  void set_eager(json raw) {
    eager = protocol::reference_py_timing(raw);
    pytorch_eager = std::move(raw);
  }
  bool have_eager() const { return eager.has_value(); }
};

// 3. The candidate pass, in its own processes, in the sandbox; what is judged comes over the sealed channel.
CandidateRun candidate_stage(Evaluation& ev, const fs::path& library, const fs::path& cand_dir,
                             const RankRecord& ref_record, const std::vector<CheckedCall>& calls) {
  auto t0 = std::chrono::steady_clock::now();
  CandidateRun cand = run_candidate(ev.spec, ev.run, ev.o, library, cand_dir, ref_record, calls);
  ev.wall["candidate_s"] = wall_seconds_since(t0);
  ev.rec()["run_dir"] = cand_dir.string();
  ev.rec()["sandbox"] = cand.sandbox;
  if (!cand.records.empty() && cand.records[0]) {
    const RankRecord& rank0 = *cand.records[0];
    if (!rank0.phase_s.empty()) ev.wall["candidate_phases"] = rank0.phase_s;
    if (rank0.timing_input_threads) ev.wall["candidate_input_threads"] = *rank0.timing_input_threads;
  }
  return cand;
}

// The verdict on a candidate pass that did not finish its protocol (launch_failure, a broken seal, a rank that
// exited early); nullopt when it did.
std::optional<EvalResult> unfinished_verdict(Evaluation& ev, const CandidateRun& cand) {
  json& rec = ev.rec();
  if (auto f = launch_failure(cand.process, cand.records)) {
    rec["failure"] = f->detail;
    return ev.finish(f->status, f->message);
  }
  if (!cand.seal_error.empty()) {
    rec["failure"] = {{"sealed_channel", cand.seal_error}};
    return ev.finish(ResultStatus::runtime_error,
                     "the sealed output channel was tampered with or cut off: " + cand.seal_error);
  }
  if (!cand.ended.empty()) {
    rec["failure"] = {{"stderr_tail", stderr_tail(cand.process, kRecordTailBytes)}};
    return ev.finish(ResultStatus::crash, cand.ended);
  }
  return std::nullopt;
}

// 4a. The checks; returns the first failure ("" when every check passed). Timed calls of repetitions that did not
// run (the loop stopped early) are not judged.
std::string check_stage(Evaluation& ev, const fs::path& ref_dir, const fs::path& cand_dir, const RankRecords& records,
                        std::vector<CheckedCall> calls) {
  auto t0 = std::chrono::steady_clock::now();
  int reps_ran = records[0] && records[0]->timing ? records[0]->timing->reps : 0;
  std::erase_if(calls, [&](const CheckedCall& c) { return c.rep >= reps_ran; });
  json checks;
  std::string bad = check_candidate_outputs(ev.spec, ev.run, ref_dir, cand_dir / "sealed", calls, records, checks);
  ev.wall["check_s"] = wall_seconds_since(t0);
  ev.rec()["checks"] = checks;
  return bad;
}

// 4b. A correct candidate's speedup against baselines timed beside it, where the policy asks: always, or when the
// host probes say the cached baselines were timed on a host of another speed (docs/design/timing.md).
void retime_stage(Evaluation& ev, const std::string& bad, const fs::path& retime_dir, Timings& t, json& timing) {
  const std::optional<HostSpeed> cached_drift = host_speed(t.candidate, t.libtorch_nccl);
  const EvalOptions& o = ev.o;
  RetimePolicy policy = o.retime_baseline;
  if (policy == RetimePolicy::automatic)
    policy = o.device == DeviceKind::cuda ? RetimePolicy::drift : RetimePolicy::never;
  const bool retime =
      bad.empty() && contention_reason(ev.rec()).empty() && t.candidate &&
      (policy == RetimePolicy::always || (policy == RetimePolicy::drift && cached_drift && cached_drift->drift));
  if (!retime) return;
  auto t_retime = std::chrono::steady_clock::now();
  const bool had_py = t.have_eager();
  json cached = {{"reason", policy == RetimePolicy::always ? "always" : "host drift"},
                 {"libtorch_nccl_median_us", median_of(t.libtorch_nccl, TimingMethod::barrier)},
                 {"pytorch_eager_median_us", had_py ? median_of(t.eager, TimingMethod::barrier) : 0.0}};
  cached.update(host_speed_comparison(t.candidate, t.libtorch_nccl));
  try {
    auto [fresh_cpp, fresh_py] = retime_baselines(ev.spec, o, had_py, retime_dir);
    t.libtorch_nccl = fresh_cpp;
    if (had_py && fresh_py.is_object()) t.set_eager(fresh_py);
    cached["pytorch_eager_retimed"] = had_py && fresh_py.is_object();
  } catch (const std::exception& e) {
    cached["error"] = e.what();  // the cached baselines stand; the record says why
  }
  timing["baseline_retimed"] = cached;
  ev.wall["retime_s"] = wall_seconds_since(t_retime);
}

// timing.instruments, and where the headline's two sides differ a note that says which way.
void record_instruments(const EvalOptions& o, const std::optional<RankTiming>& eager, json& timing) {
  const std::string eager_instrument = eager ? protocol::eager_baseline_instrument(eager->instrument) : "";
  timing["instruments"] = timing_instruments(o, eager ? eager_instrument.c_str() : nullptr);
  if (eager && o.device == DeviceKind::cuda && o.uses_runner() && eager_instrument == "events")
    timing["instrument_note"] =
        "the candidate's window crosses the call gate (its flag operations, ~3.8 us a call on an H100, which the "
        "libtorch baseline's window holds too); reference.py is timed by its own events, as ParallelKernelBench "
        "times it: a short kernel's speedup against PyTorch eager reads low by that toll, never high";
}

// 4c. The times, the baseline the speedup is against, and every method's speedups. --timing-method picks the one
// that is `speedup` (and drives fast_p). The device method has a speedup only where both sides' device views
// measured (candidates: GPUs at W = 1).
void record_speedups(Evaluation& ev, const Timings& t, TimingMethod method, const json& repeat, bool repeats_suspect,
                     json& timing) {
  auto or_null = [](const std::optional<RankTiming>& x) { return x ? json(*x) : json(); };
  timing["candidate"] = or_null(t.candidate);
  timing["baseline_libtorch_nccl"] = or_null(t.libtorch_nccl);
  timing["baseline_pytorch_eager"] = t.pytorch_eager;
  const bool have_py = t.have_eager();
  timing["baseline"] = have_py ? "pytorch_eager" : "libtorch_nccl";
  if (!have_py) {
    const json& ref = ev.rec()["reference"];             // not a rank record: the driver's own (run_reference)
    std::string skip = ref.value("python_skip", "");     // not a rank record
    const bool python_ran = ref.value("python", false);  // not a rank record
    timing["baseline_note"] = !skip.empty() ? "reference.py cannot run here (" + skip + "): C++ baseline used"
                              : python_ran  ? "reference.py timing missing"
                                            : "Python torch absent: strict C++ baseline used";
  }
  record_instruments(ev.o, t.eager, timing);
  if (!repeat.is_null()) timing["repeat_faster"] = repeat;
  if (repeat.is_null() && repeats_suspect)
    timing["repeats_note"] =
        "calls on repeated contents timed faster than fresh ones, within noise: the paper and "
        "device methods, which cannot tell the two apart, claim no time";
  json by_method = json::object();
  for (TimingMethod m : kTimingMethods) {
    double c = candidate_median_us(t.candidate, m, repeats_suspect);
    double cpp = median_of(t.libtorch_nccl, m), py = median_of(t.eager, m);
    json s = {{"candidate_us", c}};
    if (c > 0 && cpp > 0) s["speedup_vs_libtorch_nccl"] = cpp / c;
    if (c > 0 && have_py && py > 0) s["speedup_vs_pytorch_eager"] = py / c;
    if (c > 0 && (have_py ? py : cpp) > 0) s["speedup"] = (have_py ? py : cpp) / c;
    by_method[timing_method_name(m)] = s;
  }
  timing["method"] = timing_method_name(method);
  timing["by_method"] = by_method;
  for (const char* k : {"speedup_vs_libtorch_nccl", "speedup_vs_pytorch_eager", "speedup"})
    if (by_method[timing_method_name(method)].contains(k)) timing[k] = by_method[timing_method_name(method)][k];
}

// 4d. The roofline's floor and each side's fraction of it (speed of light) by the chosen method.
void record_roofline(Evaluation& ev, const Timings& t, TimingMethod method, bool repeats_faster) {
  json roof = roofline_floor(ev.spec, ev.run, ev.o.topology);
  auto sol = [&](const std::optional<RankTiming>& x) { return speed_of_light(roof, median_of(x, method)); };
  roof["sol_candidate"] = speed_of_light(roof, candidate_median_us(t.candidate, method, repeats_faster));
  roof["sol_baseline_libtorch_nccl"] = sol(t.libtorch_nccl);
  roof["sol_baseline_pytorch_eager"] = sol(t.eager);
  ev.rec()["roofline"] = roof;
}

// 4e. What qualifies the times: work that escaped the timed stream (any rank), a GPU clock capped (power, thermal)
// in a timed block of any timing, the host's speed between the candidate's and the baseline's timing. Returns
// whether work escaped.
bool record_timing_flags(const RankRecords& records, const Timings& t, json& timing) {
  bool escape = false, throttled = false;
  for (const auto& r : records)
    if (r && r->timing) {
      escape |= r->timing->stream_escape;
      throttled |= r->timing->throttled;
    }
  for (const std::optional<RankTiming>* x : {&t.libtorch_nccl, &t.eager}) throttled |= *x && (*x)->throttled;
  timing["stream_escape"] = escape;
  timing["throttled"] = throttled;
  timing.update(host_speed_comparison(t.candidate, t.libtorch_nccl));
  return escape;
}

// No speedup claimed by any method (a rescore with --timing-method reads by_method), nor the candidate's SOL%; where
// the times measure contention, no baseline SOL% either.
void claim_no_speedup(json& timing, json& roofline, bool baselines_too) {
  for (const char* k : {"speedup", "speedup_vs_libtorch_nccl", "speedup_vs_pytorch_eager"}) {
    timing.erase(k);
    for (auto& [m, x] : timing["by_method"].items()) x.erase(k);
  }
  roofline.erase("sol_candidate");
  if (baselines_too)
    for (const char* k : {"sol_baseline", "sol_baseline_libtorch_nccl", "sol_baseline_pytorch_eager"})
      roofline.erase(k);
}

// 4f. A candidate time below the roofline floor (GPU runs, where the floor is the machine's): recorded, and no
// speedup claimed, whatever the verdict.
void record_below_roofline(Evaluation& ev, json& timing) {
  if (ev.o.device != DeviceKind::cuda) return;
  json below = below_roofline(ev.rec()["roofline"], timing["by_method"]);
  if (below.is_null()) return;
  timing["below_roofline"] = below;
  claim_no_speedup(timing, ev.rec()["roofline"], false);
}

// 5. The verdict: incorrect on the first failed check; correct otherwise, without speedups where the times measure
// contention (contention_reason) or lie below the roofline floor.
EvalResult verdict(Evaluation& ev, const std::string& bad, bool escape) {
  json& rec = ev.rec();
  if (!bad.empty()) return ev.finish(ResultStatus::incorrect, bad);
  if (const std::string why = contention_reason(rec); !why.empty()) {
    // The verdict stands, the times measure contention.
    rec["timing"]["contended"] = true;
    claim_no_speedup(rec["timing"], rec["roofline"], true);
    return ev.finish(ResultStatus::correct, "correct (functional check: " + why + ")");
  }
  if (rec["timing"].contains("below_roofline"))
    return ev.finish(ResultStatus::correct,
                     "correct, but timed below the roofline floor: a timing bug or a forgery, no speedup claimed");
  return ev.finish(ResultStatus::correct,
                   escape ? "correct, but work escaped the timed stream (timing flagged)" : "correct");
}

// Stages 3-5 of evaluate_candidate: the candidate pass in the sandbox, then the checks, the timing and the verdict.
EvalResult judge_candidate(Evaluation& ev, const CompileResult& cr, const fs::path& ref_dir) {
  const EvalOptions& o = ev.o;
  fs::path cand_dir = o.out_dir / "runs" /
                      (ev.spec.folder() + "-" + ev.source_hash.substr(0, 12) + "-w" + std::to_string(o.world) + "-" +
                       enum_name(o.device) + "-" + o.dtype);
  const RankRecord ref_record = read_rank0_record(ref_dir);
  std::vector<CheckedCall> calls = checked_calls(o, ref_record);  // the seal keeps these; judged below
  CandidateRun cand = candidate_stage(ev, cr.library, cand_dir, ref_record, calls);
  if (auto unfinished = unfinished_verdict(ev, cand)) return *unfinished;
  const RankRecords& records = cand.records;
  std::string bad = check_stage(ev, ref_dir, cand_dir, records, calls);

  Timings t{records[0] ? records[0]->timing : std::nullopt, ref_record.timing, {}, {}};
  t.set_eager(read_json_or_null(ref_dir / "timing.py.json"));
  json timing;
  retime_stage(ev, bad, cand_dir / "retime", t, timing);
  TimingMethod method = timing_method_from_name(o.timing_method).value_or(TimingMethod::barrier);
  const json repeat = repeat_faster(t.candidate);
  const bool repeats_suspect = !repeat.is_null() || repeats_may_be_faster(t.candidate);
  record_speedups(ev, t, method, repeat, repeats_suspect, timing);
  record_roofline(ev, t, method, repeats_suspect);
  bool escape = record_timing_flags(records, t, timing);
  record_below_roofline(ev, timing);
  ev.rec()["timing"] = timing;
  return verdict(ev, bad, escape);
}

}  // namespace

SealedRecords sealed_records(const std::vector<SealedRank>& got) {
  SealedRecords res;
  std::string unparsed;  // the first record of a whole stream that is no rank record
  for (size_t r = 0; r < got.size(); ++r) {
    const SealedRank& g = got[r];
    std::optional<RankRecord> record;
    try {
      record = protocol::parse_rank_record(g.record);
      if (g.error.empty() && !g.record.empty() && !record && res.seal_error.empty())
        res.seal_error = "rank " + std::to_string(r) + ": its record is not JSON";
    } catch (const protocol::ProtocolError& e) {
      // A stream that is not believed (a frame injected, the stream cut) may end in a record candidate code wrote:
      // not believed either (none), and the stream's verdict stands. A whole stream's record is the monitor's.
      if (g.error.empty() && unparsed.empty()) unparsed = "rank " + std::to_string(r) + ": " + e.what();
    }
    res.records.push_back(std::move(record));
    if (!g.error.empty() && res.seal_error.empty()) res.seal_error = g.error;
  }
  // A record the monitor sent that does not parse is pkb's failure, unless a stream was tampered with: then the
  // verdict is the tampering's.
  if (!unparsed.empty() && res.seal_error.empty()) throw protocol::ProtocolError(unparsed);
  return res;
}

json repeat_faster(const std::optional<RankTiming>& cand_t) {
  if (!cand_t || cand_t->repeated_content_iters == 0) return nullptr;
  const double fresh = cand_t->fresh_median_us, repeated = cand_t->repeated_median_us;
  // The medians' intervals where the record has them (it always does since they were recorded), else the medians.
  const double fresh_low = cand_t->intervals ? cand_t->intervals->fresh_ci95_low_us : fresh;
  const double repeated_high = cand_t->intervals ? cand_t->intervals->repeated_ci95_high_us : repeated;
  if (fresh <= 0 || repeated <= 0 || fresh_low <= kRepeatFasterRatio * repeated_high) return nullptr;
  return {{"fresh_median_us", fresh},
          {"repeated_median_us", repeated},
          {"ratio", fresh / repeated},
          {"fresh_ci95_low_us", fresh_low},
          {"repeated_ci95_high_us", repeated_high}};
}

bool repeats_may_be_faster(const std::optional<RankTiming>& cand_t) {
  if (!cand_t || cand_t->repeated_content_iters == 0) return false;
  if (cand_t->fresh_to_neighbours) return *cand_t->fresh_to_neighbours > kRepeatFasterRatio;
  const double fresh = cand_t->fresh_median_us, repeated = cand_t->repeated_median_us;
  return fresh > 0 && repeated > 0 && fresh > kRepeatFasterRatio * repeated;
}

std::optional<HostSpeed> host_speed(const std::optional<RankTiming>& candidate_timing,
                                    const std::optional<RankTiming>& baseline_timing) {
  auto chase_median = [](const std::optional<RankTiming>& t) {
    if (!t) return 0.0;
    std::vector<double> v;
    for (double x : t->host_chase_probe_us)
      if (x > 0) v.push_back(x);
    return v.empty() ? 0.0 : summarize(v).median;
  };
  double c = chase_median(candidate_timing), b = chase_median(baseline_timing);
  if (c <= 0 || b <= 0) return std::nullopt;
  return HostSpeed{c / b, c / b > kHostDriftRatio || b / c > kHostDriftRatio};
}

json host_speed_comparison(const std::optional<RankTiming>& candidate_timing,
                           const std::optional<RankTiming>& baseline_timing) {
  const std::optional<HostSpeed> h = host_speed(candidate_timing, baseline_timing);
  if (!h) return json::object();
  return {{"host_speed_ratio", h->ratio}, {"host_drift", h->drift}};
}

CompileOptions eval_compile_options(const EvalOptions& o) {
  CompileOptions co;
  co.cuda = o.device == DeviceKind::cuda;
  co.arch = o.arch;
  co.timeout_s = o.compile_timeout_s;
  co.allow_nccl = o.allow_nccl;
  co.cache_dir = o.cache_dir / "compile";
  co.include_dir = repo_root() / "harness/include";
  co.sandbox = o.sandbox;
  return co;
}

void check_timing_method(const EvalOptions& o) {
  if (!timing_method_from_name(o.timing_method))
    throw Error("--timing-method must be pkb, paper or device, got '" + o.timing_method + "'");
  // The device view times a stream of the timing process's own; a runner's calls run in another process's context,
  // where only the call gate's windows (the pkb and paper methods) see them. CPU ranks and --device-iters 0 make
  // none at all: without these refusals the headline would be an empty speedup with no reason.
  const bool device_method = *timing_method_from_name(o.timing_method) == TimingMethod::device;
  if (device_method && o.device == DeviceKind::cpu)
    throw Error(
        "--timing-method device needs GPUs: CPU ranks make no device view (their calls are host code, which "
        "the pkb and paper methods time)");
  if (device_method && o.timing.device_iters == 0)
    throw Error("--timing-method device needs the device view, which --device-iters 0 turns off");
  if (o.device == DeviceKind::cuda && o.uses_runner() && device_method)
    throw Error(
        "--timing-method device cannot time a candidate in a runner: its kernels run in the runner's CUDA "
        "context, out of the monitor's device view; the call gate times them for the pkb and paper methods "
        "(or pass --candidate-process in-process, which the candidate can forge)");
}

namespace {

// The options as every pass sees them, after the checks that make a bad one a usage error (pkb::Error).
EvalOptions checked_options(const fs::path& source, const EvalOptions& options) {
  EvalOptions o = options;
  o.timing = o.timing.for_device(o.device);  // every pass and record sees the same calls per repetition
  auto dtype = dtype_from_name(o.dtype);
  if (!dtype || !dtype_is_floating(*dtype)) throw Error("--dtype must be bf16 or fp32");
  if (o.device != DeviceKind::cuda && o.device != DeviceKind::cpu) throw Error("--device must be cuda or cpu");
  if (!fs::exists(source)) throw Error(source.string() + ": no such candidate file");
  // A directory opens and reads as empty text, which compiles to a library without pkb_run: a usage error instead.
  if (fs::is_directory(source)) throw Error(source.string() + ": is a directory, not a candidate source file");
  check_timing_method(o);
  o.timing.validate();
  if (o.sandbox && !sandbox_unavailable().empty())
    throw Error("refusing to compile or run untrusted code without a sandbox: " + sandbox_unavailable() +
                " (scripts/setup.sh installs bubblewrap; --no-sandbox runs it unconfined)");
  return o;
}

// What is evaluated, how, and on what: the record's fields before any stage ran.
json record_header(const Evaluation& ev, const fs::path& source) {
  const EvalOptions& o = ev.o;
  json rec = {{"schema", "pkb.result/1"},
              {"time", utc_now_iso8601()},
              {"problem",
               {{"id", ev.spec.id},
                {"slug", ev.spec.slug},
                {"folder", ev.spec.folder()},
                {"category", category_name(ev.spec.category)}}},
              {"candidate", {{"path", fs::absolute(source).string()}, {"sha256", ev.source_hash}}},
              {"world", o.world},
              {"device", enum_name(o.device)},
              {"dtype", o.dtype},
              {"params", ev.run.params},
              {"trials", o.trials},
              {"seed", o.seed},
              {"timing_settings", o.timing.to_json()},
              {"provenance", ev.prov}};
  rec["timing_settings"]["method"] = o.timing_method;
  rec["timing_settings"]["retime_baseline"] = enum_name(o.retime_baseline);
  if (!o.visible_devices.empty()) rec["visible_devices"] = o.visible_devices;  // the GPU slot of a `pkb run`
  return rec;
}

// 1. Lint and compile into cr; the verdict where that ends the evaluation.
std::optional<EvalResult> compile_stage(Evaluation& ev, const fs::path& source, CompileResult& cr) {
  CompileOptions co = eval_compile_options(ev.o);
  auto t0 = std::chrono::steady_clock::now();
  try {
    cr = compile_candidate(source, co);
  } catch (const Error& e) {  // the compiler (or its sandbox) could not be started: nothing is cached, no verdict
    ev.wall["compile_s"] = wall_seconds_since(t0);
    return ev.finish(ResultStatus::harness_error, std::string("harness error, no verdict: ") + e.what());
  }
  ev.wall["compile_s"] = wall_seconds_since(t0);
  json lint = json::array();
  for (const auto& f : cr.lint) lint.push_back({{"rule", f.rule}, {"line", f.line}, {"text", f.text}});
  ev.rec()["compile"] = {{"status", compile_status_name(cr.status)},
                         {"seconds", cr.seconds},
                         {"cached", cr.cached},
                         {"log", cr.log},
                         {"lint", lint},
                         {"command", cr.command}};
  if (cr.status == CompileStatus::lint_violation)
    return ev.finish(ResultStatus::lint_violation, "forbidden construct: " + cr.log.substr(0, cr.log.find('\n')));
  if (cr.status == CompileStatus::compile_error) {
    std::istringstream lines(cr.log);
    std::string line, first_error;
    while (std::getline(lines, line))
      if (first_error.empty() && line.find("error") != std::string::npos) first_error = line;
    return ev.finish(ResultStatus::compile_error,
                     first_error.empty() ? cr.log.substr(0, cr.log.find('\n')) : first_error);
  }
  if (!ev.o.not_evaluated_reason.empty())
    return ev.finish(ResultStatus::not_evaluated, "compiled; not evaluated: " + ev.o.not_evaluated_reason);
  return std::nullopt;
}

// 2. The reference pass and baselines (cached), which depend on the problem and the settings, never on the candidate:
// run beside the compile (reference_pass_beside), then taken into the record (reference_stage).
struct ReferenceOutcome {
  fs::path dir;
  json info;
  std::string error;  // pkb's own machinery failed: a harness_error
  double seconds = 0;
};

ReferenceOutcome run_reference(const Evaluation& ev, const GpuSharing& sharing) {
  const EvalOptions& o = ev.o;
  // Importing torch to see whether the eager baseline is possible takes seconds: a cached reference pass that
  // already has it answers the question for free. Ranks sharing a GPU: times measure contention, no eager baseline.
  // A runner's evaluation times it too, by reference.py's own events (ParallelKernelBench's instrument): the record's
  // timing.instruments says how each side was timed.
  bool python =
      o.baseline == "auto" && o.device == DeviceKind::cuda && sharing.ranks_per_gpu == 1 &&
      (fs::exists(reference_dir(ev.spec, ev.run, o, ev.prov, true) / "complete.json") || python_torch_available());
  ReferenceOutcome r{{}, {{"python", python}, {"timeout_s", reference_deadline_s(o)}}, "", 0};
  auto t0 = std::chrono::steady_clock::now();
  try {
    r.dir = reference_pass(ev.spec, ev.run, o, ev.prov, python, r.info);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.seconds = wall_seconds_since(t0);
  return r;
}

// Started before the compile, so that the two overlap (nvcc's seconds and a first reference pass's); none where the
// evaluation will stop after compiling (no GPU).
std::future<ReferenceOutcome> reference_pass_beside(const Evaluation& ev) {
  if (!ev.o.not_evaluated_reason.empty()) return {};
  return std::async(std::launch::async, [&ev] { return run_reference(ev, gpu_sharing(ev.o)); });
}

// The reference pass's outcome into the record and ref_dir; the verdict (harness_error) where it failed.
std::optional<EvalResult> reference_stage(Evaluation& ev, std::future<ReferenceOutcome>& pending, fs::path& ref_dir) {
  json& rec = ev.rec();
  GpuSharing sharing = gpu_sharing(ev.o);
  if (sharing.ranks_per_gpu > 1)
    rec["gpu_sharing"] = {{"ranks_per_gpu", sharing.ranks_per_gpu}, {"mps", sharing.mps}, {"note", sharing.note}};
  else if (ev.o.device == DeviceKind::cuda && ev.o.uses_runner())
    rec["runner_mps"] = sharing.mps ? json(true) : json(sharing.note);
  auto t0 = std::chrono::steady_clock::now();
  ReferenceOutcome r = pending.get();
  ev.wall["reference_s"] = r.seconds;
  ev.wall["reference_wait_s"] = wall_seconds_since(t0);  // what was left of it once the compile had ended
  rec["reference"] = r.info;
  if (!r.error.empty()) {
    // pkb's own machinery failed, not the candidate: a record that says so (no verdict, no sample), which `pkb
    // run` evaluates again on its next invocation.
    rec["failure"] = {{"harness", r.error}};
    return ev.finish(ResultStatus::harness_error, "harness error, no verdict: " + r.error);
  }
  ref_dir = r.dir;
  // The reference pass's fp32 math as its ranks read it back (IEEE, no TF32); reference.py's is in its timing. A
  // reference entry whose record does not parse is pkb's failure.
  try {
    rec["provenance"]["fp32_math"] = read_rank0_record(ref_dir).fp32_math;
  } catch (const protocol::ProtocolError& e) {
    rec["failure"] = {{"harness", e.what()}};
    return ev.finish(ResultStatus::harness_error, std::string("harness error, no verdict: ") + e.what());
  }
  return std::nullopt;
}

}  // namespace

EvalResult evaluate_candidate(const ProblemSpec& spec, const fs::path& source, const EvalOptions& options) {
  auto t_start = std::chrono::steady_clock::now();
  EvalOptions o = checked_options(source, options);
  // Overlaps the candidate pass's library lookup with compiling and the reference pass.
  std::future<void> rank_libraries = o.sandbox ? prefetch_rank_job_libraries() : std::future<void>();
  RunShape run = resolve_run(spec, o.world, *dtype_from_name(o.dtype), o.params);
  std::string source_hash = sha256_hex(read_text_file(source));
  json prov = provenance(o);
  Evaluation ev{spec, run, o, source_hash, prov, t_start, EvalResult{}};
  ev.res.record = record_header(ev, source);

  std::future<ReferenceOutcome> reference = reference_pass_beside(ev);
  CompileResult cr;
  if (auto ended = compile_stage(ev, source, cr)) {
    if (reference.valid()) reference.wait();  // it fills the cache for the problem's next candidate
    return *ended;
  }
  fs::path ref_dir;
  if (auto ended = reference_stage(ev, reference, ref_dir)) return *ended;
  // 3-5. Everything from here on reads what the candidate produced: whatever goes wrong is its result, recorded,
  // never an exception that would cost the run its other samples.
  try {
    return judge_candidate(ev, cr, ref_dir);
  } catch (const std::exception& e) {
    const ResultStatus status = processing_failure_status(e);
    return ev.finish(status, std::string(status == ResultStatus::harness_error
                                             ? "harness error, no verdict: pkb could not read its own records: "
                                             : "its results could not be processed: ") +
                                 e.what());
  }
}

ResultStatus processing_failure_status(const std::exception& e) {
  const bool pkbs_own = dynamic_cast<const protocol::ProtocolError*>(&e) || dynamic_cast<const json::exception*>(&e);
  return pkbs_own ? ResultStatus::harness_error : ResultStatus::runtime_error;
}

}  // namespace pkb
