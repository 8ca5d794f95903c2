// The candidate pass, as this rank's monitor runs it: the heap, the inputs, the poison, the clock, the captures, the
// record and the sealed channel are all here; the candidate's code is reached only through CandidateCalls
// (worker/candidate_calls.h): a pkb-runner process that is frozen whenever it is not inside a call (on GPUs timed
// through the call gate, worker/call_gate.h), or with --candidate-process in-process on GPUs the library loaded into
// this process. Stages: load the candidate and lay out the heap; the checked trials
// (fresh inputs, poisoned outputs, every rank ready before the call and finished before anything is read); timing
// over input copies of distinct contents, every call poisoned, one call per copy captured, drawn among all of the
// copy's calls that ran (docs/design/timing-checks.md); one more trial with fresh inputs. Outputs and
// records go to the driver over the sealed channel as soon as they exist. The candidate's failures become record
// statuses, never exceptions. No libtorch here: the inputs come from the rank program's CandidateInputSource.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <utility>

#include "core/dispatch_pin.h"
#include "core/error.h"
#include "core/files.h"
#include "core/parallel.h"
#include "io/safetensors_encode.h"
#include "protocol/instruments.h"
#include "seal/seal.h"
#include "worker/candidate_calls.h"
#include "worker/worker.h"

namespace pkb {
namespace {

std::vector<Slot> make_slots(Runtime& rt, const std::vector<const TensorSpec*>& specs, const RunShape& run, int rank) {
  std::vector<Slot> slots;
  for (const TensorSpec* t : specs) {
    Slot s{t->name, tensor_dtype(*t, run), tensor_shape(*t, run, rank)};
    s.bytes = dtype_size(s.dtype);
    for (int64_t d : s.shape) s.bytes *= d;
    s.data = rt.alloc(s.bytes, false);
    slots.push_back(s);
  }
  return slots;
}

// Seconds per phase of the pass, into the record's phase_s (the evaluation's wall-time breakdown).
class PhaseClock {
 public:
  explicit PhaseClock(protocol::RankRecord& record) : record_(record) {}
  void lap(const char* phase) {
    auto now = std::chrono::steady_clock::now();
    record_.phase_s[phase] = std::chrono::duration<double>(now - t0_).count();
    t0_ = now;
  }

 private:
  protocol::RankRecord& record_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// A failed call ends the timing loop on this rank at once (its record says why); rank_main then ends the job, whose
// other ranks may be waiting for this one in a collective.
struct CallFailed {};

class CandidateMonitor {
 public:
  CandidateMonitor(const WorkerOptions& o, WorkerEnv& env, protocol::RankRecord& record,
                   const CandidateInputSource& inputs)
      : o_(o), env_(env), record_(record), inputs_source_(inputs) {}

  void run() {
    PhaseClock clock(record_);
    // Every judged call runs under the same pin (a candidate's CPU mask cannot tell a timed call from a checked
    // one). Threads started under the pin inherit its one CPU, so what starts threads goes first: the input source's
    // pools (ATen's OpenMP pool in pkb-rank). On CPU ranks the runner starts under the pin: its calls run where the
    // harness's would, and its mask never changes.
    if (inputs_source_.start_pools) inputs_source_.start_pools();
    const DispatchPin pin;
    make_heap();
    if (!start_candidate()) return;
    clock.lap("load_and_heap");
    record_.trials.emplace();
    for (size_t i = 0; i < o_.trials.size(); ++i)
      if (!check_trial(o_.trials[i], i == 0)) return;
    clock.lap("trials");
    if (o_.time && !time_candidate()) return;
    clock.lap("timing");
    if (o_.post_trial >= 0 && !check_trial(o_.post_trial, o_.trials.empty())) return;
    clock.lap("post_timing_trial");
    invoke(runner::kTeardown, 0, "in pkb_teardown");
  }

 private:
  // ---- Stage 1: the heap and the candidate ----

  // The heap: the input slots (in a runner the warm-up rotation, each call's contents copied or drawn in just before
  // it; in process one slot per timing copy), the outputs, the runners' barrier lines, and the candidate's symm_alloc
  // arena.
  void make_heap() {
    const ProblemSpec& spec = env_.spec;
    size_t in_bytes = heap_copy_bytes(spec, env_.run, true), out_bytes = heap_copy_bytes(spec, env_.run, false);
    if (o_.time)
      plan_ = o_.rotation_copies > 0
                  ? copy_plan(o_.rotation_copies, std::clamp(o_.warmup_copies, 1, o_.rotation_copies), o_.timing)
                  : world_timing_copies(spec, env_.run, env_.cuda, o_.timing);
    // The candidate in its own process unless a GPU candidate is asked in (--candidate-process in-process). A runner
    // has only the warm-up rotation's slots, and each call's contents are copied or drawn into its slot just before it.
    use_runner_ = o_.uses_runner();
    in_copy_bytes_ = in_bytes;
    const int slots = use_runner_ ? plan_.warmup_copies : plan_.copies;
    constexpr size_t kArenaMibCuda = 256, kArenaMibCpu = 16, kAlignmentSlack = size_t{1} << 20;
    const size_t sync_bytes = align_to_heap(sizeof(runner::SyncLine) * static_cast<size_t>(env_.world));
    size_t arena = (o_.heap_mib ? o_.heap_mib : (env_.cuda ? kArenaMibCuda : kArenaMibCpu)) << 20;
    size_t heap = slots * in_bytes + out_bytes + sync_bytes + arena + kAlignmentSlack;
    rt_ = env_.cuda ? make_cuda_runtime(MPI_COMM_WORLD, heap) : make_cpu_runtime(MPI_COMM_WORLD, heap, "cand");
    std::vector<const TensorSpec*> ins, outs;
    for (const auto& in : spec.inputs)
      if (in.tensor) ins.push_back(&*in.tensor);
    for (const auto& out : spec.outputs) outs.push_back(&out);
    for (int k = 0; k < slots; ++k) heap_.inputs.push_back(make_slots(*rt_, ins, env_.run, env_.rank));
    heap_.outputs = make_slots(*rt_, outs, env_.run, env_.rank);
    share_with_runner(sync_bytes);
    heap_.arena_offset = align_to_heap(rt_->used());
    record_.heap = protocol::RankHeap{.bytes = heap,
                                      .arena_bytes = arena,
                                      .input_copies = plan_.copies,
                                      .input_slots = slots,
                                      .warmup_copies = plan_.warmup_copies};
  }

  // What a runner maps besides the heap's tensors: host memory for the runners' SyncLines (the heaps themselves on CPU
  // ranks; on GPUs a small shared segment of the monitors', since the heap is device memory), the device barrier's
  // flags on GPUs, and on GPUs a scratch buffer the monitor writes to flush the L2 after copying a call's inputs in.
  void share_with_runner(size_t sync_bytes) {
    if (!env_.cuda) {
      void* sync = rt_->alloc(sync_bytes, false);  // zeroed: a fresh shared-memory file
      heap_.sync_offset = static_cast<char*>(sync) - rt_->heap_base(env_.rank);
      heap_.host_fds = rt_->heap_fds();
      heap_.host_bytes = rt_->heap_size();
      return;
    }
    if (!use_runner_) return;
    // The call gate's host flags go after the SyncLines, in every rank's segment at the same offset (each pair uses
    // its own rank's).
    const size_t gate_host_bytes = align_to_heap(sizeof(runner::GateHostFlags));
    sync_rt_ = make_cpu_runtime(MPI_COMM_WORLD, std::max<size_t>(sync_bytes + gate_host_bytes, 4096), "rsync");
    heap_.sync_offset = static_cast<char*>(sync_rt_->alloc(sync_bytes, false)) - sync_rt_->heap_base(env_.rank);
    heap_.gate_host_offset =
        static_cast<char*>(sync_rt_->alloc(gate_host_bytes, false)) - sync_rt_->heap_base(env_.rank);
    heap_.own_host_segment = sync_rt_->heap_base(env_.rank);
    heap_.host_fds = sync_rt_->heap_fds();
    heap_.host_bytes = sync_rt_->heap_size();
    void* flags = rt_->alloc(align_to_heap(sizeof(uint32_t) * static_cast<size_t>(env_.world)), false);  // zeroed
    heap_.flags_offset = static_cast<char*>(flags) - rt_->heap_base(env_.rank);
    void* gate = rt_->alloc(align_to_heap(sizeof(runner::GateDeviceFlags)), false);  // zeroed too
    heap_.gate_offset = static_cast<char*>(gate) - rt_->heap_base(env_.rank);
    l2_scratch_bytes_ = 2 * cuda_l2_bytes();
    l2_scratch_ = l2_scratch_bytes_ ? rt_->private_alloc(l2_scratch_bytes_) : nullptr;
  }

  // Why a copy cannot be drawn straight into its slot ("" when it can): every input must draw element by element
  // (core/element_draw.h), so the rank program's inputs must be the draws (no prepare step) and none a randperm.
  // A draw's shape and dtype do not depend on the copy: checked here once against the slots.
  std::string why_copies_not_drawable() const {
    if (!inputs_source_.draws) return "a prepare step finishes the inputs on the host";
    const auto draws = inputs_source_.draws(env_.spec, env_.run, env_.rank, kTimedTrialBase, o_.seed);
    const auto& slots = heap_.inputs.at(0);
    if (draws.size() != slots.size()) throw Error("the input draws disagree with problem.json's inputs");
    for (size_t i = 0; i < draws.size(); ++i) {
      if (draws[i].shape != slots[i].shape || draws[i].dtype != slots[i].dtype)
        throw Error("input '" + slots[i].name + "': its draw disagrees with problem.json");
      if (!draws[i].element) return "input '" + draws[i].name + "' is a randperm, drawn whole on the host";
    }
    return "";
  }

  // All ranks agree on whether the library loaded, so none waits for a rank that gave up.
  bool start_candidate() {
    calls_ = use_runner_ ? start_runner(o_, env_, *rt_, heap_) : load_in_process(o_, env_, *rt_, heap_);
    record_.candidate_process = calls_->where();
    if (std::string note = calls_->lockdown_note(); !note.empty()) record_.candidate_lockdown_note = note;
    CallOutcome crashed = calls_->load_outcome();
    std::string err = !crashed.failure.empty() ? "while loading: " + crashed.failure : calls_->load_error();
    int ok = err.empty(), all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok) {
      // What the protocol alone costs a call: in every timed window, and in the baselines' (reference_pass.cpp).
      doorbell_us_ = calls_->doorbell_us();
      return true;
    }
    record_.status = crashed.signal > 0 ? protocol::RankStatus::crash : protocol::RankStatus::load_error;
    record_.error = err.empty() ? "another rank failed to load the candidate" : err;
    return false;
  }

  // ---- Calls ----

  // Records a runtime error (or, where the candidate's process was killed by a signal, a crash). Returns false.
  bool fail(const std::string& why, int signal = 0) {
    record_.status = signal > 0 ? protocol::RankStatus::crash : protocol::RankStatus::runtime_error;
    record_.error = why;
    write_rank_record(o_.out_dir, env_.rank, record_);
    return false;
  }

  // One call of the candidate, judged: false (recorded) if it failed. A timed call does not wait for the device
  // (the timing loop synchronizes where its methods allow); its device errors surface at the loop's next synchronize.
  // Through a call gate every call's outputs are poisoned after the gate's hold (bracket.prepare), and `bracket` adds
  // the window's timers and what follows it.
  bool invoke(runner::Op op, int slot, const std::string& what, bool synchronize = true, CallBracket bracket = {}) {
    if (calls_->gated()) bracket.prepare = [this] { poison_outputs(); };
    return judged(calls_->call(op, slot, bracket), op, what, synchronize);
  }

  // What a call (or a block of them) came to: false (recorded) if it failed.
  bool judged(const CallOutcome& r, runner::Op op, const std::string& what, bool synchronize) {
    if (!r.failure.empty()) return fail(r.signal > 0 ? r.failure + " " + what : what + ": " + r.failure, r.signal);
    std::string err = synchronize ? rt_->synchronize() : "";
    if (!r.callback_error.empty()) return fail(r.callback_error);
    if (r.rc != 0)
      return fail(std::string(op == runner::kSetup ? "pkb_setup" : "pkb_run") + " returned " + std::to_string(r.rc) +
                  " " + what);
    if (!err.empty()) return fail(what + ": " + err);
    return true;
  }

  // ---- Stage 2: checked trials ----

  bool check_trial(int trial, bool first) {
    const std::string what = "in trial " + std::to_string(trial);
    std::vector<HostTensor> in = make_inputs(trial);
    upload(in, 0);
    poison_outputs();
    if (auto err = rt_->synchronize(); !err.empty()) return fail("before trial " + std::to_string(trial) + ": " + err);
    if (first && !invoke(runner::kSetup, 0, "in pkb_setup")) return false;
    MPI_Barrier(MPI_COMM_WORLD);  // every rank's inputs written and outputs poisoned before anyone runs
    if (!invoke(runner::kRun, 0, what)) return false;
    MPI_Barrier(MPI_COMM_WORLD);  // peers may write into our outputs: wait for every rank to finish
    send_outputs("trial" + std::to_string(trial), read_outputs([](const Slot& s) { return s.data; }));
    protocol::RankTrial& checked = record_.trials->emplace_back();
    checked.trial = trial;
    checked.inputs_mutated = mutated_inputs(heap_.inputs[0], in);
    write_rank_record(o_.out_dir, env_.rank, record_);
    return true;
  }

  // One trial's (or timing copy's) inputs, checked against the slots they will fill: a source that disagrees
  // with problem.json is a harness error, not the candidate's.
  std::vector<HostTensor> make_inputs(int trial) {
    std::vector<HostTensor> in = inputs_source_.make(env_.spec, env_.run, env_.rank, trial, o_.seed);
    const auto& slots = heap_.inputs[0];
    if (in.size() != slots.size())
      throw Error("the input source gave " + std::to_string(in.size()) + " inputs, not " +
                  std::to_string(slots.size()));
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].dtype != slots[i].dtype || in[i].shape != slots[i].shape || in[i].bytes != slots[i].bytes)
        throw Error("input '" + slots[i].name + "': the input source's shape or dtype differs from problem.json's");
    return in;
  }

  void upload(const std::vector<HostTensor>& in, int slot) {
    const auto& slots = heap_.inputs[slot];
    for (size_t i = 0; i < slots.size(); ++i) rt_->copy(slots[i].data, in[i].data.get(), slots[i].bytes);
  }

  void poison_outputs() {
    for (const auto& s : heap_.outputs) rt_->fill(s.data, 0xFF, s.bytes);
  }

  // This rank's outputs as host bytes, read from the output slots or from where `where(slot)` says.
  template <class Where>
  std::vector<HostTensor> read_outputs(Where where) {
    std::vector<HostTensor> saved;
    for (const auto& s : heap_.outputs) {
      saved.emplace_back(s.name, s.dtype, s.shape);
      rt_->copy(saved.back().data.get(), where(s), s.bytes);
    }
    return saved;
  }

  // Outputs leave the process as soon as they exist: to the driver over the sealed channel (or, without one,
  // into the job directory).
  void send_outputs(const std::string& label, const std::vector<HostTensor>& saved) {
    std::vector<TensorBytesView> views;
    for (const HostTensor& t : saved) views.push_back({t.name, t.dtype, t.shape, t.data.get(), t.bytes});
    std::string bytes = encode_safetensors(views);
    if (seal().enabled()) {
      seal().send(FrameKind::outputs, label, bytes);
      return;
    }
    std::filesystem::create_directories(std::filesystem::path(o_.out_dir) / label);
    write_file_atomically(
        std::filesystem::path(o_.out_dir) / label / ("rank" + std::to_string(env_.rank) + ".safetensors"), bytes);
  }

  // The inputs whose slot no longer holds `in`'s bytes.
  std::vector<std::string> mutated_inputs(const std::vector<Slot>& slots, const std::vector<HostTensor>& in) {
    std::vector<std::string> mutated;
    for (size_t i = 0; i < slots.size(); ++i) {
      HostTensor now(slots[i].name, slots[i].dtype, slots[i].shape);
      rt_->copy(now.data.get(), slots[i].data, slots[i].bytes);
      if (!in[i].same_bytes(now.data.get())) mutated.push_back(slots[i].name);
    }
    return mutated;
  }

  // ---- Stage 3: timing ----

  int slot_of(int copy) const { return use_runner_ ? copy % static_cast<int>(heap_.inputs.size()) : copy; }

  // Before every timing call (outside its window): the copy's contents into its slot where they are not there already
  // (in a runner always: a slot holds a copy only during its call, so no call sees another's inputs ahead of time,
  // and whatever a call left in its inputs is gone), then the outputs poisoned (through a call gate: after its hold,
  // invoke).
  void before_call(int copy) {
    int slot = slot_of(copy);
    if (use_runner_ && draw_in_place_)
      draw_into_slot(copy, slot);
    else if (use_runner_)
      upload(contents_[copy], slot);
    // A GPU runner's inputs were just written through the L2: evict them, as the baselines' rotation keeps a call's
    // inputs out of it. A call gate orders the runner's work after all of this (worker/call_gate.h).
    if (l2_scratch_) rt_->fill(l2_scratch_, 0, l2_scratch_bytes_);
    if (!calls_->gated()) poison_outputs();
  }

  // Copy `copy`'s inputs drawn by the runtime (a kernel on GPUs) straight to `into` (one pointer an input), nothing
  // made on the host: the device's draws are the host's bytes (core/element_draw.h), so the driver's expected outputs
  // hold.
  void draw_copy(int copy, char* const* into) {
    const auto& slots = heap_.inputs[0];
    const auto draws = inputs_source_.draws(env_.spec, env_.run, env_.rank, kTimedTrialBase + copy, o_.seed);
    for (size_t i = 0; i < slots.size(); ++i)
      rt_->draw(into[i], *draws[i].element, static_cast<int64_t>(slots[i].bytes / dtype_size(slots[i].dtype)));
  }
  std::vector<char*> slot_pointers(int slot) const {
    std::vector<char*> out;
    for (const Slot& s : heap_.inputs[slot]) out.push_back(static_cast<char*>(s.data));
    return out;
  }

  // A runner's call where copies are drawn: the copy drawn into its slot, then the slot's bytes kept aside, to compare
  // after the call (inputs_changed). Every call, checked or not, takes these same steps.
  void draw_into_slot(int copy, int slot) {
    draw_copy(copy, slot_pointers(slot).data());
    ++copies_drawn_;
    size_t off = 0;
    for (const Slot& s : heap_.inputs[slot])
      rt_->copy_async(given_ + off, s.data, s.bytes), off += align_to_heap(s.bytes);
  }

  static void throw_if_error(const std::string& err, const char* where) {
    if (!err.empty()) throw Error(std::string(where) + ": " + err);
  }

  // Each copy's capture is one of its calls that ran, drawn uniformly as they come (a reservoir of one): any call may
  // be the checked one, a revisit of a copy as much as its first call. Where the monitor captures only the checked
  // copies (a runner's), every call's outputs and inputs are read the same way, into scratch where the call is not the
  // one kept: the time between two calls does not tell the candidate which copies the driver checks. Through a call
  // gate the readback is enqueued with the call, right after its window (readback); elsewhere here, after it.
  void after_call(int copy) {
    const bool in_block = calls_checked_in_block_ > 0;  // the block's calls come first, in order (run_block)
    if (in_block) --calls_checked_in_block_;
    if (!calls_->gated()) {
      probe_after_window();
      readback(copy);
    }
    distinct_contents_ += !seen_[copy];
    seen_[copy] = 1;
    // A runner's inputs are checked after every call (they are written anew before each, so a change would not
    // outlive it) and recorded at the kept one; in process every copy's once after the loop; a block's kept calls
    // once the block ended (check_kept_inputs).
    if (!use_runner_ || in_block) return;
    const std::vector<std::string> changed = inputs_changed(copy);
    if (keep_) mutated_.insert(changed.begin(), changed.end());
  }

  // The call's outputs into the copy's capture if this call is the one kept (keep_), else (where every call is read)
  // into scratch.
  void readback(int copy) {
    keep_ = capture_draw_.keep(copy, capture_[copy] != nullptr);
    if (!keep_ && !use_runner_) return;  // in process every copy is captured; this call is not kept
    read_outputs_to(keep_ ? capture_[copy] : capture_scratch_);
  }

  void read_outputs_to(char* to) {
    size_t off = 0;
    for (const auto& s : heap_.outputs) rt_->copy_async(to + off, s.data, s.bytes), off += s.bytes;
  }

  // The inputs whose slot no longer holds what the call was given: the copy's host contents, or where copies are
  // drawn the slot's bytes as kept before the call.
  std::vector<std::string> inputs_changed(int copy) {
    const auto& slots = heap_.inputs[slot_of(copy)];
    std::vector<std::string> changed;
    if (!draw_in_place_) return mutated_inputs(slots, contents_[copy]);
    size_t off = 0;
    for (const Slot& s : slots) {
      if (!rt_->same_bytes(s.data, given_ + off, s.bytes)) changed.push_back(s.name);
      off += align_to_heap(s.bytes);
    }
    return changed;
  }

  // In process, where copies are drawn once into slots of their own: each copy that a call used, drawn again into
  // scratch and compared with its slot after the loop (a kernel that wrote into its inputs changed them).
  void check_drawn_copies_unchanged() {
    char* scratch = static_cast<char*>(rt_->private_alloc(in_copy_bytes_));
    std::vector<char*> into;
    size_t off = 0;
    for (const Slot& s : heap_.inputs[0]) into.push_back(scratch + off), off += align_to_heap(s.bytes);
    for (int k = 0; k < plan_.copies; ++k) {
      if (!made_[k]) continue;
      draw_copy(k, into.data());
      for (size_t i = 0; i < into.size(); ++i)
        if (!rt_->same_bytes(heap_.inputs[k][i].data, into[i], heap_.inputs[k][i].bytes))
          mutated_.insert(heap_.inputs[k][i].name);
    }
  }

  // A GPU runner that stops before its device work ends would leave kernels running after its window: right after
  // every timed window the monitor enqueues the hold that takes every SM, whose blocks start late and spread apart
  // when an SM is still busy (Runtime::HoldTrace). Only where this rank has its GPU to itself (ranks sharing one run
  // beside each other legitimately), and only if the hold can fill the GPU.
  void probe_after_window() {
    if (!post_window_probes_ || probes_made_ >= post_window_probes_) return;
    rt_->hold(kPostWindowHoldUs, probes_made_++);
  }
  static constexpr double kPostWindowHoldUs = 2;

  void prepare_post_window_probes() {
    if (!(use_runner_ && env_.cuda && !env_.shared_gpu && rt_->hold_fills_device())) return;
    post_window_probes_ = o_.timing.max_timed_calls();
    rt_->hold_slots_reserve(post_window_probes_);
  }

  // Busy probes fail the timing's trust like escaped work: recorded, and flagged as stream_escape.
  void record_post_window_probes(protocol::RankTiming& timing) {
    if (!probes_made_) return;
    int busy = 0;
    double spread = 0;
    for (const Runtime::HoldTrace& t : rt_->hold_traces(probes_made_)) {
      busy += t.start_spread_us > kHoldBusySpreadUs;
      spread = std::max(spread, t.start_spread_us);
    }
    timing.post_window_probes = protocol::PostWindowProbes{probes_made_, busy, spread};
    if (busy) timing.stream_escape = true;
  }

  // Copy k's contents, made the first time a call needs them (on GPUs also copied into its slot then): the warm-up
  // rotation's before the warm-ups, every other copy before the repetition (or the escape probe) whose calls first
  // use it. A copy no repetition that ran uses is never made, and none exists before its repetition starts.
  // Where copies are drawn: a runner's monitor draws each call's copy before the call (draw_into_slot), nothing here;
  // in process each copy is drawn into its own slot once, here.
  void make_copy(int k) {
    if (made_[k]) return;
    made_[k] = 1;
    if (draw_in_place_) {
      if (!use_runner_) draw_copy(k, slot_pointers(k).data()), ++copies_drawn_;
      return;
    }
    contents_[k] = make_inputs(kTimedTrialBase + k);
    ++copies_made_;
    if (!use_runner_) upload(contents_[k], k);
  }

  // Where the timing's copies come from (drawn in place or made on the host), and the copies whose captures the driver
  // checks: on a runner's monitor the ones the driver named (the candidate cannot read them here), elsewhere every
  // copy.
  void mark_checked_copies() {
    // auto draws them on GPUs (on the H200 the device's draws are the host's bytes, and expert 001's timing loop
    // took 0.09 s instead of 8.7 s of copies made on the host) and not on CPU ranks, where a host draw per call
    // costs more than copying a made copy in.
    if (o_.draw_copies == DrawCopies::on || (o_.draw_copies == DrawCopies::automatic && env_.cuda)) {
      draw_refused_ = why_copies_not_drawable();
      draw_in_place_ = draw_refused_.empty();
    }
    checked_.assign(plan_.copies, 1);
    if (use_runner_ && !o_.captured_copies.empty()) {
      checked_.assign(plan_.copies, 0);
      for (int k : o_.captured_copies)
        if (k >= 0 && k < plan_.copies) checked_[k] = 1;
    }
    seen_.assign(plan_.copies, 0);
    made_.assign(plan_.copies, 0);
    if (draw_in_place_ && use_runner_) given_ = static_cast<char*>(rt_->private_alloc(in_copy_bytes_));
  }

  void make_warmup_copies() {
    contents_.clear();
    contents_.resize(plan_.copies);
    for (int k = 0; k < plan_.warmup_copies; ++k) make_copy(k);
    copies_written();
    record_.timing_input_threads = host_threads();
  }

  // Copies drawn in process are kernels on this rank's stream: done before any call reads them, as an upload is
  // (a candidate's side stream would not wait for them).
  void copies_written() {
    if (draw_in_place_ && !use_runner_) throw_if_error(rt_->stream_synchronize(), "drawing input copies");
  }

  void make_copies_of_calls(int first, int count) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int j = first; j < first + count; ++j) make_copy(plan_.timed_copy(j));
    copies_written();
    in_loop_generate_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // One allocation for every capture, in this process's own memory: hundreds of separate ones cost seconds of
  // allocator time on a GPU.
  // Where the candidate cannot read this process (its runner), only the copies the driver checks are captured.
  void allocate_captures() {
    size_t out_total = 0;
    for (const auto& s : heap_.outputs) out_total += s.bytes;
    const size_t stride = align_to_heap(out_total);
    const std::vector<char>& wanted = checked_;
    const auto n = static_cast<size_t>(std::count(wanted.begin(), wanted.end(), 1));
    char* all = static_cast<char*>(rt_->private_alloc(stride * std::max<size_t>(n, 1)));
    capture_.assign(plan_.copies, nullptr);
    for (int k = 0, slot = 0; k < plan_.copies; ++k)
      if (wanted[k]) capture_[k] = all + stride * slot++;
    if (use_runner_) capture_scratch_ = static_cast<char*>(rt_->private_alloc(stride));
    capture_draw_ = CaptureDraw(plan_.copies, std::random_device{}());
  }

  bool time_candidate() {
    PhaseClock clock(record_);
    mark_checked_copies();
    make_warmup_copies();
    clock.lap("timing_generate");
    allocate_captures();
    prepare_post_window_probes();
    clock.lap("timing_capture_alloc");
    TimingHooks hooks;
    hooks.untrusted = true;  // the device view's guards (worker/timing.h)
    hooks.before = [&](int k) { before_call(k); };
    hooks.after_timed = [&](int, int k) { after_call(k); };
    hooks.before_calls = [&](int first, int count) { make_copies_of_calls(first, count); };
    // A GPU runner makes the paper method's back-to-back calls in wakes of many calls (run_block).
    if (calls_->gated())
      hooks.run_block = [&](const std::vector<int>& copies, bool timed) { run_block(copies, timed); };
    // A GPU runner's calls are timed on this process's stream through the call gate (worker/call_gate.h): the
    // view hands each timed call's timers to the gate, which records them around the call's device work.
    int next_window = -1;
    std::unique_ptr<Runtime> gated = calls_->gated() ? gated_window_view(*rt_, next_window) : nullptr;
    // A measurement (protocol/instruments.h): in process, through the gate's flags on two streams of this process.
    std::unique_ptr<Runtime> one_process_gate =
        !gated && rt_->is_cuda() && protocol::gate_in_process_requested() ? gated_baseline_view(*rt_) : nullptr;
    Runtime& timing_rt = gated ? *gated : one_process_gate ? *one_process_gate : *rt_;
    TimingStats stats;
    try {
      stats = time_iterations(
          timing_rt, plan_,
          [&](int k) {
            CallBracket bracket;
            if (gated) {  // every call read back alike, warm-ups too; the probe after timed windows only
              const bool timed = next_window >= 0;
              bracket.start_timer = std::exchange(next_window, -1);
              bracket.after_window = [this, k, timed] {
                readback(k);
                if (timed) probe_after_window();
              };
            }
            if (!invoke(runner::kRun, slot_of(k), "while timing", false, bracket)) throw CallFailed{};
          },
          o_.timing, &hooks);
    } catch (const CallFailed&) {
      return false;
    } catch (const Error& e) {
      return fail(std::string("while timing: ") + e.what());
    }
    if (auto err = rt_->synchronize(); !err.empty()) return fail("after timing: " + err);
    MPI_Barrier(MPI_COMM_WORLD);  // peers' writes into our outputs are done
    clock.lap("timing_loop");
    send_captures();
    record_timing(stats);
    clock.lap("timing_send_and_input_check");
    return true;
  }

  // ---- The paper method's blocks in a GPU runner (TimingHooks::run_block) ----

  // Calls of one wake (block_calls_per_wake: what the stream takes enqueued ahead of the wake, and the staging area's
  // bytes); a longer block is several wakes.
  size_t block_capacity() const {
    return block_calls_per_wake(in_copy_bytes_, static_cast<int>(heap_.inputs.at(0).size()),
                                static_cast<int>(heap_.outputs.size()));
  }

  void run_block(const std::vector<int>& copies, bool timed) {
    const size_t cap = block_capacity();
    for (size_t first = 0; first < copies.size(); first += cap)
      run_block_part(copies, first, std::min(cap, copies.size() - first), timed);
    if (timed) calls_checked_in_block_ += static_cast<int>(copies.size());
  }

  // Calls [first, first + n) of a block in one wake of the runner (CallGate::open_block). Per call, all on this
  // process's stream, none of it waiting for the host: its inputs into its slot (drawn, or copied from the staging
  // area) and the L2 flushed, once the call ahead of it wrote done and was read back; the outputs poisoned; the window;
  // then the outputs read back (into the copy's capture if this call is the kept one, else scratch), the slot's inputs
  // read back too (a kept call's into a buffer of its own, compared once the block ended; the others' into scratch),
  // and after a timed call the post-window probe. Every call takes the same steps; which are kept the monitor drew
  // before the wake.
  void run_block_part(const std::vector<int>& copies, size_t first, size_t n, bool timed) {
    std::vector<int> slots(n);
    std::vector<char> keep(n);
    size_t kept = 0;
    for (size_t i = 0; i < n; ++i) {
      const int k = copies[first + i];
      slots[i] = slot_of(k);
      keep[i] = capture_draw_.keep(k, capture_[k] != nullptr);
      kept += keep[i];
    }
    prepare_block_buffers(kept);
    if (!draw_in_place_) stage_block_inputs(copies, first, n);
    std::vector<CallBracket> brackets(n);
    for (size_t i = 0, kept_at = 0; i < n; ++i) {
      const int k = copies[first + i], slot = slots[i];
      const bool kept_call = keep[i] != 0;
      char* inputs_to = kept_call ? kept_inputs_[kept_at++] : inputs_scratch_;
      CallBracket& b = brackets[i];
      b.inputs = [this, k, slot, i] { block_inputs(k, slot, i); };
      b.prepare = [this] { poison_outputs(); };
      b.start_timer = timed ? static_cast<int>(2 * (first + i)) : -1;
      b.after_window = [this, k, slot, kept_call, inputs_to, timed] {
        read_outputs_to(kept_call ? capture_[k] : capture_scratch_);
        read_inputs_to(slot, inputs_to);
        if (timed) probe_after_window();
      };
    }
    ++block_wakes_, block_calls_ += static_cast<int>(n);
    if (!judged(calls_->call_block(slots, brackets), runner::kRun, "while timing", false)) throw CallFailed{};
    check_kept_inputs(copies, first, n, keep);
  }

  // Call i of a block part: copy `copy`'s inputs into `slot` (drawn there, or from its place in the staging area), then
  // the L2 flushed, as before_call does for a call of its own.
  void block_inputs(int copy, int slot, size_t i) {
    if (draw_in_place_) {
      draw_copy(copy, slot_pointers(slot).data());
      ++copies_drawn_;
    } else {
      size_t off = 0;
      for (const Slot& s : heap_.inputs[slot])
        rt_->copy_async(s.data, stage_ + i * in_copy_bytes_ + off, s.bytes), off += align_to_heap(s.bytes);
    }
    if (l2_scratch_) rt_->fill(l2_scratch_, 0, l2_scratch_bytes_);
  }

  void read_inputs_to(int slot, char* to) {
    size_t off = 0;
    for (const Slot& s : heap_.inputs[slot]) rt_->copy_async(to + off, s.data, s.bytes), off += align_to_heap(s.bytes);
  }

  // Scratch for the calls not kept, a buffer per kept call of the part, and (copies made on the host) the staging area:
  // this process's memory, allocated while the runner is frozen and nothing on the stream waits for it.
  void prepare_block_buffers(size_t kept) {
    if (!inputs_scratch_) inputs_scratch_ = static_cast<char*>(rt_->private_alloc(in_copy_bytes_));
    while (kept_inputs_.size() < kept) kept_inputs_.push_back(static_cast<char*>(rt_->private_alloc(in_copy_bytes_)));
    if (!draw_in_place_ && !stage_) stage_ = static_cast<char*>(rt_->private_alloc(block_capacity() * in_copy_bytes_));
  }

  // Copies made on the host (a prepare step, a randperm): each call's inputs into the staging area before the wake
  // (synchronous copies; nothing on the stream waits for the runner now), so that the block moves them into the slot
  // on the stream, in order, with no host between the calls.
  void stage_block_inputs(const std::vector<int>& copies, size_t first, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      size_t off = 0;
      for (const HostTensor& t : contents_[copies[first + i]])
        rt_->copy(stage_ + i * in_copy_bytes_ + off, t.data.get(), t.bytes), off += align_to_heap(t.bytes);
    }
  }

  // The kept calls' inputs as each call left them, against what it was given (its copy drawn again into scratch, or
  // its place in the staging area): a call that wrote into its inputs changed them (recorded as inputs_mutated).
  // same_bytes waits for the stream, which the block has left.
  void check_kept_inputs(const std::vector<int>& copies, size_t first, size_t n, const std::vector<char>& keep) {
    for (size_t i = 0, kept_at = 0; i < n; ++i) {
      if (!keep[i]) continue;
      const char* given = draw_in_place_ ? draw_into_scratch(copies[first + i]) : stage_ + i * in_copy_bytes_;
      size_t off = 0;
      for (const Slot& s : heap_.inputs[0]) {
        if (!rt_->same_bytes(kept_inputs_[kept_at] + off, given + off, s.bytes)) mutated_.insert(s.name);
        off += align_to_heap(s.bytes);
      }
      ++kept_at;
    }
  }

  const char* draw_into_scratch(int copy) {
    std::vector<char*> into;
    size_t off = 0;
    for (const Slot& s : heap_.inputs[0]) into.push_back(inputs_scratch_ + off), off += align_to_heap(s.bytes);
    draw_copy(copy, into.data());
    return inputs_scratch_;
  }

  void send_captures() {
    for (int k = 0; k < plan_.copies; ++k) {
      if (capture_draw_.visits(k) == 0) continue;  // no call of the loop used it (or it is not captured)
      ++captures_sent_;
      size_t off = 0;
      send_outputs("copy" + std::to_string(k), read_outputs([&](const Slot& s) {
                     void* p = capture_[k] + off;
                     off += s.bytes;
                     return p;
                   }));
    }
  }

  void record_timing(const TimingStats& stats) {
    if (!use_runner_ && draw_in_place_)
      check_drawn_copies_unchanged();
    else if (!use_runner_)
      for (int k = 0; k < plan_.copies; ++k)
        if (!contents_[k].empty())
          for (const auto& name : mutated_inputs(heap_.inputs[k], contents_[k])) mutated_.insert(name);
    record_.trials->emplace_back().inputs_mutated = std::vector<std::string>(mutated_.begin(), mutated_.end());
    protocol::RankTiming& timing = record_.timing.emplace(stats.to_record());
    timing.input_copies = plan_.copies;
    timing.input_copies_made = copies_made_;
    timing.distinct_input_contents = distinct_contents_;
    if (draw_in_place_) timing.copies_drawn_in_place = copies_drawn_;
    if (!draw_refused_.empty()) timing.copies_not_drawn = draw_refused_;
    timing.captures_sent = captures_sent_;
    record_post_window_probes(timing);
    record_.phase_s["timing_generate_in_loop"] = in_loop_generate_s_;
    if (doorbell_us_ > 0) timing.doorbell_us = doorbell_us_;
    if (calls_->gated()) timing.call_gate = calls_->gate_json();
    if (block_wakes_)
      timing.paper_blocks = {
          {"wakes", block_wakes_}, {"calls", block_calls_}, {"max_calls_per_wake", block_capacity()}};
    write_rank_record(o_.out_dir, env_.rank, record_);
  }

  const WorkerOptions& o_;
  WorkerEnv& env_;
  protocol::RankRecord& record_;
  const CandidateInputSource& inputs_source_;
  std::unique_ptr<Runtime> rt_;
  std::unique_ptr<CandidateCalls> calls_;
  HeapLayout heap_;
  CopyPlan plan_;
  bool use_runner_ = false;
  bool draw_in_place_ = false;  // copies drawn into their slots by the runtime, never made on the host
  std::string draw_refused_;    // why copies are made on the host although --draw-copies on asked otherwise
  size_t in_copy_bytes_ = 0;
  std::unique_ptr<Runtime> sync_rt_;  // GPU runners: host memory shared by the monitors and their runners
  void* l2_scratch_ = nullptr;
  size_t l2_scratch_bytes_ = 0;
  std::vector<std::vector<HostTensor>> contents_;  // every timing copy's inputs, in this process only
  std::vector<char> checked_, seen_, made_;        // per copy: the driver checks it; a timed call used it; it was made
  char* given_ = nullptr;  // a runner's drawn inputs as the call was given them (draw_into_slot)
  int copies_drawn_ = 0, distinct_contents_ = 0;
  std::vector<char*> capture_;
  char* capture_scratch_ = nullptr;  // where a runner's calls that are not kept are read to
  // GPU runners' blocks (run_block): the inputs of calls not kept are read back to inputs_scratch_, a kept call's to a
  // buffer of its own; copies made on the host wait in stage_ (block_capacity() of them) until the block moves them in.
  char *inputs_scratch_ = nullptr, *stage_ = nullptr;
  std::vector<char*> kept_inputs_;
  int calls_checked_in_block_ = 0;         // timed calls of the last block whose after_call is still to come
  int block_wakes_ = 0, block_calls_ = 0;  // the blocks' wakes of the runner and the calls they made (warm-ups too)
  CaptureDraw capture_draw_;
  std::set<std::string> mutated_;
  double doorbell_us_ = 0;
  int copies_made_ = 0, captures_sent_ = 0;
  int post_window_probes_ = 0, probes_made_ = 0;  // GPU runners: holds enqueued right after timed windows
  bool keep_ = false;                             // the last call read back is its copy's capture
  double in_loop_generate_s_ = 0;                 // of the timing loop's wall time, making copies between repetitions
};

}  // namespace

void run_candidate_pass(const WorkerOptions& o, WorkerEnv& env, protocol::RankRecord& record,
                        const CandidateInputSource& inputs) {
  if (env.cuda) record.gpu = runtime_versions(env.device).gpu;
  CandidateMonitor(o, env, record, inputs).run();
}

}  // namespace pkb
