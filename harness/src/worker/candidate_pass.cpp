// The candidate pass: hosts a candidate library through the ABI (harness/include/pkb/abi.h) on this rank.
// Inputs and outputs live in the symmetric heap. Each trial: fresh inputs, outputs poisoned with 0xFF bytes
// (NaN for floats), every rank ready before pkb_run and finished before anything is read back; inputs are
// compared afterwards. Then timing over input copies of distinct contents, every call poisoned and one call per
// copy captured (docs/architecture.md, "Security model"), then one more trial with fresh inputs to catch kernels
// that only work once. Outputs and records go to the driver over the sealed channel as soon as they exist. The
// candidate's failures become record statuses, never exceptions. No libtorch here: the inputs come from the
// rank program's CandidateInputSource (worker/worker.h), the outputs leave as raw bytes.
#include <dlfcn.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

#include "core/dispatch_pin.h"
#include "core/error.h"
#include "core/files.h"
#include "core/parallel.h"
#include "inputs/draw.h"
#include "io/safetensors_encode.h"
#include "runtime/runtime.h"
#include "seal/seal.h"
#include "worker/worker.h"

extern "C" {
#include "../../include/pkb/abi.h"
}

namespace pkb {
namespace {

using SetupFn = int (*)(pkb_context*, const pkb_tensor*, int, const pkb_tensor*, int);
using RunFn = int (*)(pkb_context*, const pkb_tensor*, int, pkb_tensor*, int);
using TeardownFn = void (*)(pkb_context*);

// The context handed to the candidate, followed by what its callbacks need. ctx must stay the first member.
struct Host {
  pkb_context ctx{};
  Runtime* rt = nullptr;
  std::string callback_error;  // set by a callback that failed (reported after the candidate returns)
  std::vector<std::string> param_names;
  std::vector<const char*> param_name_ptrs;
  std::vector<int64_t> param_values;
  std::vector<std::vector<int>> group_members;
  std::vector<std::string> group_names;
  std::vector<pkb_group> groups;
};

Host* host_of(pkb_context* ctx) { return reinterpret_cast<Host*>(ctx); }

void* cb_symm_alloc(pkb_context* ctx, size_t bytes) {
  Host* h = host_of(ctx);
  try {
    void* p = h->rt->alloc(bytes, true);
    h->rt->fill(p, 0, bytes);
    h->rt->stream_synchronize();
    return p;
  } catch (const std::exception& e) {
    if (h->callback_error.empty()) h->callback_error = std::string("symm_alloc: ") + e.what();
    return nullptr;
  }
}
void* cb_symm_peer(pkb_context* ctx, const void* ptr, int peer) { return host_of(ctx)->rt->peer(ptr, peer); }
int cb_barrier(pkb_context* ctx) {
  host_of(ctx)->rt->barrier();
  return 0;
}
int64_t cb_param(pkb_context* ctx, const char* name) {
  Host* h = host_of(ctx);
  for (size_t i = 0; i < h->param_names.size(); ++i)
    if (h->param_names[i] == name) return h->param_values[i];
  return -1;
}

pkb_dtype abi_dtype(DType d) {
  switch (d) {
    case DType::bf16:
      return PKB_BF16;
    case DType::f16:
      return PKB_F16;
    case DType::f32:
      return PKB_F32;
    case DType::f64:
      return PKB_F64;
    case DType::i8:
      return PKB_I8;
    case DType::u8:
      return PKB_U8;
    case DType::i16:
      return PKB_I16;
    case DType::i32:
      return PKB_I32;
    case DType::i64:
      return PKB_I64;
    case DType::boolean:
      return PKB_BOOL;
  }
  return PKB_F32;
}

// One tensor slot in the heap: same offset on every rank, sized for the largest rank's shape.
struct Slot {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;  // this rank's
  size_t bytes = 0;            // this rank's
  void* data = nullptr;

  pkb_tensor view() const {
    pkb_tensor t{};
    t.data = data;
    t.dtype = abi_dtype(dtype);
    t.ndim = static_cast<int>(shape.size());
    int64_t stride = 1;
    for (int d = t.ndim - 1; d >= 0; --d) t.shape[d] = shape[d], t.strides[d] = stride, stride *= shape[d];
    t.name = name.c_str();
    return t;
  }
};

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

class CandidateHost {
 public:
  CandidateHost(const WorkerOptions& o, WorkerEnv& env, nlohmann::json& record, const CandidateInputSource& inputs)
      : o_(o), env_(env), record_(record), inputs_source_(inputs) {}

  void run() {
    auto t0 = std::chrono::steady_clock::now();
    auto lap = [&](const char* phase) {  // seconds per phase, for the evaluation's wall-time breakdown
      auto now = std::chrono::steady_clock::now();
      record_["phase_s"][phase] = std::chrono::duration<double>(now - t0).count();
      t0 = now;
    };
    if (!load()) return;
    create_runtime_and_slots();
    fill_context();
    lap("load_and_heap");
    // Every judged call (trials, timing, post-timing trial) runs under the same pin, so the candidate's CPU mask
    // cannot tell a timed call from a checked one. Threads this thread starts under the pin inherit its one CPU,
    // so what starts threads goes first: the runtime, and the input source's pools (in pkb-rank ATen's OpenMP pool,
    // started by its first parallel region, which a prepare step would otherwise run under the pin); the pin then
    // moves them off.
    if (inputs_source_.start_pools) inputs_source_.start_pools();
    const DispatchPin pin;
    record_["trials"] = nlohmann::json::array();
    bool set_up = false;
    for (size_t i = 0; i < o_.trials.size(); ++i) {
      if (!check_trial(o_.trials[i], !set_up)) return;
      set_up = true;
    }
    lap("trials");
    if (o_.time && !time_candidate()) return;
    lap("timing");
    if (o_.post_trial >= 0 && !check_trial(o_.post_trial, !set_up)) return;
    lap("post_timing_trial");
    if (teardown_) teardown_(&host_.ctx);
  }

 private:
  // All ranks agree on whether the library loaded, so none waits for a rank that gave up.
  bool load() {
    std::string err;
    handle_ = dlopen(o_.candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* e = dlerror();
      err = e ? e : "dlopen failed";
    } else {
      run_ = reinterpret_cast<RunFn>(dlsym(handle_, "pkb_run"));
      setup_ = reinterpret_cast<SetupFn>(dlsym(handle_, "pkb_setup"));
      teardown_ = reinterpret_cast<TeardownFn>(dlsym(handle_, "pkb_teardown"));
      if (!run_) err = "the library does not export pkb_run (missing, misspelled, or not extern \"C\")";
    }
    int ok = err.empty(), all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all_ok) return true;
    record_["status"] = "load_error";
    record_["error"] = err.empty() ? "another rank failed to load the candidate" : err;
    return false;
  }

  void create_runtime_and_slots() {
    const ProblemSpec& spec = env_.spec;
    size_t in_bytes = heap_copy_bytes(spec, env_.run, true), out_bytes = heap_copy_bytes(spec, env_.run, false);
    plan_ = CopyPlan{};
    if (o_.time)
      plan_ = o_.rotation_copies > 0 ? CopyPlan{o_.rotation_copies, std::clamp(o_.warmup_copies, 1, o_.rotation_copies)}
                                     : world_timing_copies(spec, env_.run, env_.cuda, o_.timing);
    copies_ = plan_.copies;
    // The candidate's own symm_alloc space unless --heap-mib says otherwise (docs/abi.md), and room for the
    // alignment of the harness's blocks.
    constexpr size_t kArenaMibCuda = 256, kArenaMibCpu = 16, kAlignmentSlack = size_t{1} << 20;
    size_t arena = (o_.heap_mib ? o_.heap_mib : (env_.cuda ? kArenaMibCuda : kArenaMibCpu)) << 20;
    size_t heap = copies_ * in_bytes + out_bytes + arena + kAlignmentSlack;
    rt_ = env_.cuda ? make_cuda_runtime(MPI_COMM_WORLD, heap) : make_cpu_runtime(MPI_COMM_WORLD, heap, "cand");
    std::vector<const TensorSpec*> ins, outs;
    for (const auto& in : spec.inputs)
      if (in.tensor) ins.push_back(&*in.tensor);
    for (const auto& out : spec.outputs) outs.push_back(&out);
    for (int k = 0; k < copies_; ++k) inputs_.push_back(make_slots(*rt_, ins, env_.run, env_.rank));
    outputs_ = make_slots(*rt_, outs, env_.run, env_.rank);
    for (auto& copy : inputs_) {
      std::vector<pkb_tensor> views;
      for (const auto& s : copy) views.push_back(s.view());
      input_views_.push_back(views);
    }
    for (const auto& s : outputs_) output_views_.push_back(s.view());
    record_["heap"] = {
        {"bytes", heap}, {"input_copies", copies_}, {"warmup_copies", plan_.warmup_copies}, {"arena_bytes", arena}};
  }

  void fill_context() {
    Host& h = host_;
    h.rt = rt_.get();
    pkb_context& c = h.ctx;
    c.abi_version = PKB_ABI_VERSION;
    c.rank = env_.rank;
    c.world_size = env_.world;
    c.local_rank = env_.local_rank;
    c.device = rt_->device();
    c.stream = rt_->stream();
    for (const auto& [k, v] : env_.run.params) h.param_names.push_back(k), h.param_values.push_back(v);
    for (const auto& [k, v] : scalar_values(env_.spec, env_.run))
      h.param_names.push_back(k), h.param_values.push_back(v);
    for (const auto& n : h.param_names) h.param_name_ptrs.push_back(n.c_str());
    c.n_params = static_cast<int>(h.param_names.size());
    c.param_names = h.param_name_ptrs.data();
    c.param_values = h.param_values.data();
    auto layout = group_layout(env_.spec, env_.run);
    for (const auto& g : env_.spec.groups)
      for (const auto& members : layout[g.name])
        if (std::find(members.begin(), members.end(), env_.rank) != members.end())
          h.group_names.push_back(g.name), h.group_members.push_back(members);
    for (size_t i = 0; i < h.group_names.size(); ++i) {
      const auto& m = h.group_members[i];
      int idx = static_cast<int>(std::find(m.begin(), m.end(), env_.rank) - m.begin());
      h.groups.push_back({h.group_names[i].c_str(), static_cast<int>(m.size()), idx, m.data()});
    }
    c.n_groups = static_cast<int>(h.groups.size());
    c.groups = h.groups.data();
    c.heap_bases = rt_->heap_bases();
    c.heap_bases_device = rt_->heap_bases_device();
    c.heap_size = rt_->heap_size();
    c.symm_alloc = cb_symm_alloc;
    c.symm_peer = cb_symm_peer;
    c.barrier = cb_barrier;
    c.param = cb_param;
  }

  // Records a runtime error for this trial; the rank's record carries the message. Returns false.
  bool fail(const std::string& why) {
    record_["status"] = "runtime_error";
    record_["error"] = why;
    write_rank_record(o_.out_dir, env_.rank, record_);
    return false;
  }

  bool check_trial(int trial, bool first) {
    std::vector<HostTensor> in = make_inputs(trial);
    auto& slots = inputs_[0];
    for (size_t i = 0; i < slots.size(); ++i) rt_->copy(slots[i].data, in[i].data.get(), slots[i].bytes);
    for (const auto& s : outputs_) rt_->fill(s.data, 0xFF, s.bytes);
    if (auto err = rt_->synchronize(); !err.empty()) return fail("before trial " + std::to_string(trial) + ": " + err);
    if (first && setup_) {
      int rc = setup_(&host_.ctx, input_views_[0].data(), static_cast<int>(slots.size()), output_views_.data(),
                      static_cast<int>(outputs_.size()));
      std::string err = rt_->synchronize();
      if (!host_.callback_error.empty()) return fail(host_.callback_error);
      if (rc != 0) return fail("pkb_setup returned " + std::to_string(rc));
      if (!err.empty()) return fail("in pkb_setup: " + err);
    }
    MPI_Barrier(MPI_COMM_WORLD);  // every rank's inputs written and outputs poisoned before anyone runs
    int rc = run_(&host_.ctx, input_views_[0].data(), static_cast<int>(slots.size()), output_views_.data(),
                  static_cast<int>(outputs_.size()));
    std::string err = rt_->synchronize();
    if (!host_.callback_error.empty()) return fail(host_.callback_error);
    if (rc != 0) return fail("pkb_run returned " + std::to_string(rc) + " in trial " + std::to_string(trial));
    if (!err.empty()) return fail("trial " + std::to_string(trial) + ": " + err);
    MPI_Barrier(MPI_COMM_WORLD);  // peers may write into our outputs: wait for every rank to finish

    send_outputs("trial" + std::to_string(trial), read_outputs([](const Slot& s) { return s.data; }));
    record_["trials"].push_back({{"trial", trial}, {"inputs_mutated", mutated_inputs(slots, in)}});
    write_rank_record(o_.out_dir, env_.rank, record_);
    return true;
  }

  // One trial's (or timing copy's) inputs, checked against the slots they will fill: a source that disagrees
  // with problem.json is a harness error, not the candidate's.
  std::vector<HostTensor> make_inputs(int trial) {
    std::vector<HostTensor> in = inputs_source_.make(env_.spec, env_.run, env_.rank, trial, o_.seed);
    const auto& slots = inputs_[0];
    if (in.size() != slots.size())
      throw Error("the input source gave " + std::to_string(in.size()) + " inputs, not " +
                  std::to_string(slots.size()));
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i].dtype != slots[i].dtype || in[i].shape != slots[i].shape || in[i].bytes != slots[i].bytes)
        throw Error("input '" + slots[i].name + "': the input source's shape or dtype differs from problem.json's");
    return in;
  }

  // This rank's outputs as host bytes, read from the output slots or from where `where(slot)` says.
  template <class Where>
  std::vector<HostTensor> read_outputs(Where where) {
    std::vector<HostTensor> saved;
    for (const auto& s : outputs_) {
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
      seal().send("outputs", label, bytes);
      return;
    }
    std::filesystem::create_directories(std::filesystem::path(o_.out_dir) / label);
    write_file_atomically(
        std::filesystem::path(o_.out_dir) / label / ("rank" + std::to_string(env_.rank) + ".safetensors"), bytes);
  }

  nlohmann::json mutated_inputs(const std::vector<Slot>& slots, const std::vector<HostTensor>& in) {
    nlohmann::json mutated = nlohmann::json::array();
    for (size_t i = 0; i < slots.size(); ++i) {
      HostTensor now(slots[i].name, slots[i].dtype, slots[i].shape);
      rt_->copy(now.data.get(), slots[i].data, slots[i].bytes);
      if (!in[i].same_bytes(now.data.get())) mutated.push_back(slots[i].name);
    }
    return mutated;
  }

  // Timed calls are checked calls: every call gets fresh input contents (copy k holds the inputs of trial
  // kTimedTrialBase + k) and poisoned outputs, and one call per copy, drawn at random among its calls in the
  // first repetition that uses it, has its outputs captured and sent (so a copy's capture exists whenever that
  // repetition ran, however early the repetitions stop). The driver compares the copies the reference pass
  // knows; which ones it knows is never shown here. Both timing methods' calls are treated alike.
  bool time_candidate() {
    auto t0 = std::chrono::steady_clock::now();
    auto sub_phase = [&](const char* name) {  // within "timing": where the time of a checked timing goes
      auto now = std::chrono::steady_clock::now();
      record_["phase_s"][name] = std::chrono::duration<double>(now - t0).count();
      t0 = now;
    };
    std::vector<std::vector<HostTensor>> contents(copies_);
    // Generating the copies is the bulk of a checked timing's cost; the generator fills each tensor on the
    // rank's host threads (copies one after another: a prepare step's ATen ops stay on this thread rather than
    // nesting ATen's OpenMP pool inside ours).
    for (int k = 0; k < copies_; ++k) contents[k] = make_inputs(kTimedTrialBase + k);
    record_["timing_input_threads"] = host_threads();
    sub_phase("timing_generate");
    for (int k = 0; k < copies_; ++k) {
      for (size_t i = 0; i < inputs_[k].size(); ++i)
        rt_->copy(inputs_[k][i].data, contents[k][i].data.get(), inputs_[k][i].bytes);
    }
    sub_phase("timing_upload");
    std::vector<std::vector<int>> visits(copies_);  // timed ordinals of each copy's first repetition
    const int per_rep = o_.timing.calls_per_rep();
    for (int j = 0; j < o_.timing.max_timed_calls(); ++j) {
      auto& v = visits[plan_.timed_copy(j)];
      if (v.empty() || v.front() / per_rep == j / per_rep) v.push_back(j);
    }
    std::mt19937_64 draw(std::random_device{}());
    std::vector<int> captured_iter(copies_, -1);
    std::vector<char*> capture(copies_, nullptr);
    size_t out_total = 0;
    for (const auto& s : outputs_) out_total += s.bytes;
    const size_t stride = align_to_heap(out_total);
    int capturing = 0;
    for (int k = 0; k < copies_; ++k) capturing += !visits[k].empty();
    // One allocation for every capture: hundreds of separate ones cost seconds of allocator time on a GPU.
    char* captures = capturing ? static_cast<char*>(rt_->private_alloc(stride * capturing)) : nullptr;
    for (int k = 0, slot = 0; k < copies_; ++k) {
      if (visits[k].empty()) continue;
      captured_iter[k] = visits[k][draw() % visits[k].size()];
      capture[k] = captures + stride * slot++;
    }
    sub_phase("timing_capture_alloc");
    std::vector<char> captured(copies_, false);
    TimingHooks hooks;
    hooks.untrusted = true;  // the device view's guards (worker/timing.h)
    hooks.before = [&](int) {
      for (const auto& s : outputs_) rt_->fill(s.data, 0xFF, s.bytes);
    };
    hooks.after_timed = [&](int ordinal, int k) {
      if (captured_iter[k] != ordinal) return;
      captured[k] = true;
      size_t off = 0;
      for (const auto& s : outputs_) rt_->copy_async(capture[k] + off, s.data, s.bytes), off += s.bytes;
    };
    int bad_rc = 0;
    TimingStats stats;
    try {
      stats = time_iterations(
          *rt_, plan_,
          [&](int k) {
            int rc = run_(&host_.ctx, input_views_[k].data(), static_cast<int>(inputs_[k].size()), output_views_.data(),
                          static_cast<int>(outputs_.size()));
            if (rc != 0) bad_rc = rc;
          },
          o_.timing, &hooks);
    } catch (const Error& e) {
      return fail(std::string("while timing: ") + e.what());
    }
    if (bad_rc != 0) return fail("pkb_run returned " + std::to_string(bad_rc) + " while timing");
    if (!host_.callback_error.empty()) return fail(host_.callback_error);
    if (auto err = rt_->synchronize(); !err.empty()) return fail("after timing: " + err);
    MPI_Barrier(MPI_COMM_WORLD);  // peers' writes into our outputs are done
    sub_phase("timing_loop");
    for (int k = 0; k < copies_; ++k) {
      if (!captured[k]) continue;  // its first repetition did not run
      size_t off = 0;
      send_outputs("copy" + std::to_string(k), read_outputs([&](const Slot& s) {
                     void* p = capture[k] + off;
                     off += s.bytes;
                     return p;
                   }));
    }
    nlohmann::json mutated = nlohmann::json::array();
    for (int k = 0; k < copies_; ++k)
      for (const auto& name : mutated_inputs(inputs_[k], contents[k]))
        if (std::find(mutated.begin(), mutated.end(), name) == mutated.end()) mutated.push_back(name);
    record_["trials"].push_back({{"trial", "timed"}, {"inputs_mutated", mutated}});
    sub_phase("timing_send_and_input_check");
    record_["timing"] = stats.to_json();
    record_["timing"]["input_copies"] = copies_;
    write_rank_record(o_.out_dir, env_.rank, record_);
    return true;
  }

  const WorkerOptions& o_;
  WorkerEnv& env_;
  nlohmann::json& record_;
  const CandidateInputSource& inputs_source_;
  void* handle_ = nullptr;
  RunFn run_ = nullptr;
  SetupFn setup_ = nullptr;
  TeardownFn teardown_ = nullptr;
  std::unique_ptr<Runtime> rt_;
  Host host_;
  CopyPlan plan_;
  int copies_ = 1;
  std::vector<std::vector<Slot>> inputs_;
  std::vector<Slot> outputs_;
  std::vector<std::vector<pkb_tensor>> input_views_;
  std::vector<pkb_tensor> output_views_;
};

}  // namespace

void run_candidate_pass(const WorkerOptions& o, WorkerEnv& env, nlohmann::json& record,
                        const CandidateInputSource& inputs) {
  if (env.cuda) record["gpu"] = runtime_versions(env.device).gpu;
  CandidateHost(o, env, record, inputs).run();
}

}  // namespace pkb
