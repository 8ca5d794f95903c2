#include "worker/candidate_calls.h"

#include <algorithm>

#include "core/error.h"
#include "inputs/draw.h"
#include "protocol/runner_layout.h"
#include "worker/candidate_library.h"
#include "worker/runner_host.h"

namespace pkb {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

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

pkb_tensor view_of(const Slot& s) {
  pkb_tensor t{};
  t.data = s.data;
  t.dtype = abi_dtype(s.dtype);
  t.ndim = static_cast<int>(s.shape.size());
  int64_t stride = 1;
  for (int d = t.ndim - 1; d >= 0; --d) t.shape[d] = s.shape[d], t.strides[d] = stride, stride *= s.shape[d];
  t.name = s.name.c_str();
  return t;
}

// This rank's groups of the problem: (name, members) where the rank is a member.
std::vector<std::pair<std::string, std::vector<int>>> my_groups(const WorkerEnv& env) {
  std::vector<std::pair<std::string, std::vector<int>>> mine;
  auto layout = group_layout(env.spec, env.run);
  for (const auto& g : env.spec.groups)
    for (const auto& members : layout[g.name])
      if (std::find(members.begin(), members.end(), env.rank) != members.end()) mine.push_back({g.name, members});
  return mine;
}

std::vector<std::pair<std::string, int64_t>> all_params(const WorkerEnv& env) {
  std::vector<std::pair<std::string, int64_t>> params(env.run.params.begin(), env.run.params.end());
  for (const auto& kv : scalar_values(env.spec, env.run)) params.push_back(kv);
  return params;
}

// ---- The candidate in pkb-runner, frozen between calls (the default everywhere) ----

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) out += digits[c >> 4], out += digits[c & 15];
  return out;
}

protocol::LayoutTensor layout_tensor(const Runtime& rt, const Slot& s) {
  return {s.name, static_cast<int>(abi_dtype(s.dtype)), s.shape,
          static_cast<size_t>(static_cast<const char*>(s.data) - rt.heap_base(rt.rank()))};
}

class RunnerCalls final : public CandidateCalls {
 public:
  RunnerCalls(const WorkerOptions& o, const WorkerEnv& env, Runtime& rt, const HeapLayout& heap) {
    protocol::RunnerLayout layout;
    layout.library = o.candidate;
    layout.rank = env.rank, layout.world = env.world, layout.local_rank = env.local_rank;
    layout.heap_bytes = rt.heap_size();
    layout.sync_offset = heap.sync_offset, layout.arena_offset = heap.arena_offset, layout.host_bytes = heap.host_bytes;
    if (env.cuda)
      layout.cuda = protocol::RunnerCuda{rt.device(),           hex(rt.heap_ipc_handles()), heap.flags_offset,
                                         heap.gate_host_offset, heap.gate_offset,           rt.flag_mechanism()};
    for (const auto& slot : heap.inputs) {
      layout.inputs.emplace_back();
      for (const Slot& s : slot) layout.inputs.back().push_back(layout_tensor(rt, s));
    }
    for (const Slot& s : heap.outputs) layout.outputs.push_back(layout_tensor(rt, s));
    layout.params = all_params(env);
    for (const auto& [name, members] : my_groups(env)) layout.groups.push_back({name, members});
    // What the runner must not open: the driver's FIFOs, and where the monitors' MPI keeps its files and shared
    // memory (its session directory under the temporary directory, its segments in /dev/shm). Its own files go to
    // `work`, granted beneath the hidden /tmp.
    fs::path work = fs::path(o.out_dir) / ("runner" + std::to_string(env.rank));
    fs::create_directories(work);
    // Nor any other process's /proc entries (the monitors', mpirun's, the other runners'): of /proc it keeps its own
    // directory (the runner adds it) and the machine-wide files libraries read.
    layout.hidden_paths = {"/tmp", "/dev/shm", "/proc"};
    if (!o.seal_dir.empty()) layout.hidden_paths.push_back(fs::absolute(o.seal_dir).lexically_normal().string());
    if (const char* t = getenv("TMPDIR"); t && *t)
      layout.hidden_paths.push_back(fs::absolute(t).lexically_normal().string());
    for (const auto& p : o.runner_hidden) layout.hidden_paths.push_back(fs::absolute(p).lexically_normal().string());
    layout.granted_paths = {fs::absolute(work).lexically_normal().string(),
                            fs::absolute(o.candidate).lexically_normal().string(),  // wherever it lies
                            "/proc/cpuinfo",
                            "/proc/meminfo",
                            "/proc/stat",
                            "/proc/sys",
                            "/proc/filesystems",
                            "/proc/uptime",
                            "/proc/loadavg"};
    if (env.cuda)
      gate_ = std::make_unique<CallGate>(
          rt, heap.own_host_segment, heap.host_bytes,
          reinterpret_cast<runner::GateHostFlags*>(heap.own_host_segment + heap.gate_host_offset),
          reinterpret_cast<runner::GateDeviceFlags*>(rt.heap_base(rt.rank()) + heap.gate_offset));
    runner_ = std::make_unique<RunnerProcess>(runner_program(), layout, heap.host_fds, work);
  }
  std::string load_error() const override { return runner_->loaded().error; }
  CallOutcome load_outcome() const override { return outcome(runner_->loaded()); }
  CallOutcome call(runner::Op op, int slot, const CallBracket& bracket) override {
    if (!gate_) return outcome(runner_->call(op, slot));
    if (std::string why = runner_->ran_between_calls(); !why.empty()) return CallOutcome{.failure = why};
    const uint32_t seq = runner_->next_seq();
    gate_->open(seq, bracket);
    CallOutcome r = outcome(runner_->call(op, slot));
    gate_->close(seq);
    return r;
  }
  CallOutcome call_block(const std::vector<int>& slots, const std::vector<CallBracket>& brackets) override {
    if (!gate_) return CandidateCalls::call_block(slots, brackets);
    if (slots.size() != brackets.size() || slots.empty() || slots.size() > runner::kMaxBlockCalls)
      throw Error("a block of " + std::to_string(slots.size()) + " slots and " + std::to_string(brackets.size()) +
                  " brackets");
    if (std::string why = runner_->ran_between_calls(); !why.empty()) return CallOutcome{.failure = why};
    const uint32_t first = runner_->next_seq();
    gate_->open_block(first, brackets);
    CallOutcome r = outcome(runner_->call_block(slots));
    gate_->close(first + static_cast<uint32_t>(slots.size()) - 1);
    return r;
  }
  std::string where() const override { return "runner process"; }
  std::string lockdown_note() const override { return runner_->lockdown_note(); }
  // Through the call gate the doorbell is in no window (the gate's holds record how long waking takes).
  double doorbell_us() override { return gate_ ? 0 : runner_->doorbell_us(); }
  bool gated() const override { return gate_ != nullptr; }
  nlohmann::json gate_json() override { return gate_ ? gate_->to_json() : nlohmann::json(nullptr); }

 private:
  static CallOutcome outcome(const RunnerProcess::Outcome& r) {
    return {r.failure, r.killed_by_signal ? r.signal : 0, r.rc, r.error};
  }
  std::unique_ptr<RunnerProcess> runner_;
  std::unique_ptr<CallGate> gate_;
};

// ---- GPUs: the library in this process ----

// The context handed to the candidate, followed by what its callbacks need. ctx must stay the first member.
struct InProcessContext {
  pkb_context ctx{};
  Runtime* rt = nullptr;
  std::string callback_error;
  ContextTables tables;  // the parameters and groups
};

InProcessContext* host_of(pkb_context* ctx) { return reinterpret_cast<InProcessContext*>(ctx); }

void* cb_symm_alloc(pkb_context* ctx, size_t bytes) {
  InProcessContext* h = host_of(ctx);
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
int64_t cb_param(pkb_context* ctx, const char* name) { return host_of(ctx)->tables.param(name); }

class InProcessCalls final : public CandidateCalls {
 public:
  InProcessCalls(const WorkerOptions& o, const WorkerEnv& env, Runtime& rt, const HeapLayout& heap) {
    fill_context(env, rt);
    for (const auto& slot : heap.inputs) {
      inputs_.emplace_back();
      for (const Slot& s : slot) inputs_.back().push_back(view_of(s));
    }
    for (const Slot& s : heap.outputs) outputs_.push_back(view_of(s));
    lib_ = CandidateLibrary::open(o.candidate);
  }
  std::string load_error() const override { return lib_.error; }
  CallOutcome call(runner::Op op, int slot, const CallBracket&) override {
    CallOutcome r;
    r.rc = lib_.call(op, &host_.ctx, inputs_.at(slot), outputs_);
    r.callback_error = host_.callback_error;
    return r;
  }
  std::string where() const override { return "in process"; }

 private:
  void fill_context(const WorkerEnv& env, Runtime& rt) {
    InProcessContext& h = host_;
    h.rt = &rt;
    for (const auto& [k, v] : all_params(env)) h.tables.param_names.push_back(k), h.tables.param_values.push_back(v);
    h.tables.group_members = my_groups(env);
    build_context(h.ctx,
                  {.rank = env.rank,
                   .world = env.world,
                   .local_rank = env.local_rank,
                   .device = rt.device(),
                   .stream = rt.stream(),
                   .heap_bases = rt.heap_bases(),
                   .heap_bases_device = rt.heap_bases_device(),
                   .heap_size = rt.heap_size(),
                   .symm_alloc = cb_symm_alloc,
                   .symm_peer = cb_symm_peer,
                   .barrier = cb_barrier,
                   .param = cb_param},
                  h.tables);
  }
  InProcessContext host_;
  std::vector<std::vector<pkb_tensor>> inputs_;
  std::vector<pkb_tensor> outputs_;
  CandidateLibrary lib_;
};

}  // namespace

CallOutcome CandidateCalls::call_block(const std::vector<int>&, const std::vector<CallBracket>&) {
  throw Error("a block of calls needs a GPU runner's call gate");
}

std::unique_ptr<CandidateCalls> start_runner(const WorkerOptions& o, const WorkerEnv& env, Runtime& rt,
                                             const HeapLayout& heap) {
  return std::make_unique<RunnerCalls>(o, env, rt, heap);
}

std::unique_ptr<CandidateCalls> load_in_process(const WorkerOptions& o, const WorkerEnv& env, Runtime& rt,
                                                const HeapLayout& heap) {
  return std::make_unique<InProcessCalls>(o, env, rt, heap);
}

}  // namespace pkb
