// pkb-runner: the process that holds a candidate library, on CPU ranks and GPUs alike, and nothing else. Its monitor
// (the rank program) starts it with a control page and the ranks' heaps as descriptors (worker/runner_protocol.h); it
// maps them, shuts itself off from other processes and from the monitors' paths (worker/lockdown.h), loads the library,
// and then makes one call each time the monitor wakes it (on GPUs, for the paper method, one block of back-to-back
// calls), stopping itself after each. It holds no schedule, no clock,
// no expected value and no channel to the driver: whatever the candidate does in here, the verdict and the times are
// the monitor's (docs/design/runner-and-gate.md).
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol/heap_alignment.h"
#include "protocol/runner_layout.h"
#include "worker/candidate_library.h"
#include "worker/lockdown.h"
#include "worker/runner_device.h"
#include "worker/runner_protocol.h"

namespace {

using namespace pkb::runner;
using json = nlohmann::json;
using pkb::protocol::LayoutTensor;
using pkb::protocol::RunnerCuda;
using pkb::protocol::RunnerLayout;

// The context the candidate sees, followed by what its callbacks need. ctx must stay the first member.
struct RunnerContext {
  pkb_context ctx{};
  Control* control = nullptr;
  std::vector<void*> bases;
  size_t heap_bytes = 0, arena_next = 0;
  SyncLine* sync = nullptr;                // world lines in host memory all runners map (rank 0's heap on CPU ranks)
  Device* device = nullptr;                // GPUs: the heaps by CUDA IPC, the stream, the device barrier
  uint32_t* flags = nullptr;               // GPUs: the device barrier's flags, at the same offset of every heap
  GateHostFlags* gate_host = nullptr;      // GPUs: the call gate's host flags (this rank's host segment)
  GateDeviceFlags* gate_device = nullptr;  // GPUs: its device flags (this rank's heap)
  uint64_t epoch = 0, alloc_seq = 0;
  pkb::ContextTables tables;                    // the parameters and groups
  std::vector<std::vector<std::string>> names;  // keeps the tensors' names alive
  std::vector<std::vector<pkb_tensor>> inputs;  // per slot
  std::vector<pkb_tensor> outputs;
};

RunnerContext* host_of(pkb_context* ctx) { return reinterpret_cast<RunnerContext*>(ctx); }

void set_error(RunnerContext* h, const std::string& why) {
  if (h->control->error[0] != 0) return;  // the first error explains the rest
  std::strncpy(h->control->error, why.c_str(), sizeof h->control->error - 1);
}

// Every runner's epoch reaches ours: a barrier among the W runners through shared host memory (no MPI in here).
void host_barrier(RunnerContext* h) {
  pkb_context* ctx = &h->ctx;
  uint64_t target = ++h->epoch;
  h->sync[ctx->rank].barrier_epoch.store(target, std::memory_order_release);
  for (int q = 0; q < ctx->world_size; ++q)
    for (int spins = 0; h->sync[q].barrier_epoch.load(std::memory_order_acquire) < target; ++spins)
      if (spins > 64) sched_yield();
}

// The candidate's barrier: on the host on CPU ranks, enqueued on the stream (the device flag barrier) on GPUs.
int cb_barrier(pkb_context* ctx) {
  RunnerContext* h = host_of(ctx);
  if (h->device)
    h->device->barrier(h->flags);
  else
    host_barrier(h);
  return 0;
}

// Collective: every runner posts its size, all compare after a barrier, and a second barrier keeps the lines until
// every runner has read them.
void* cb_symm_alloc(pkb_context* ctx, size_t bytes) {
  RunnerContext* h = host_of(ctx);
  SyncLine& mine = h->sync[ctx->rank];
  mine.alloc_bytes.store(bytes, std::memory_order_relaxed);
  mine.alloc_seq.store(++h->alloc_seq, std::memory_order_release);
  host_barrier(h);
  std::string mismatch;
  for (int q = 0; q < ctx->world_size && mismatch.empty(); ++q) {
    uint64_t theirs = h->sync[q].alloc_bytes.load(std::memory_order_relaxed);
    if (h->sync[q].alloc_seq.load(std::memory_order_acquire) != h->alloc_seq || theirs != bytes)
      mismatch = "symm_alloc is collective and needs equal sizes: rank " + std::to_string(ctx->rank) + " asked for " +
                 std::to_string(bytes) + " bytes, rank " + std::to_string(q) + " for " + std::to_string(theirs);
  }
  host_barrier(h);
  if (!mismatch.empty()) return set_error(h, mismatch), nullptr;
  size_t offset = pkb::align_to_heap(h->arena_next);
  if (offset + bytes > h->heap_bytes) {
    set_error(h, "symmetric heap exhausted: " + std::to_string(bytes) + " bytes requested, " +
                     std::to_string(h->heap_bytes - std::min(offset, h->heap_bytes)) + " left");
    return nullptr;
  }
  h->arena_next = offset + bytes;
  char* p = static_cast<char*>(h->bases[ctx->rank]) + offset;
  if (h->device)
    h->device->zero(p, bytes);
  else
    std::memset(p, 0, bytes);
  return p;
}

void* cb_symm_peer(pkb_context* ctx, const void* ptr, int peer) {
  RunnerContext* h = host_of(ctx);
  auto* c = static_cast<const char*>(ptr);
  auto* mine = static_cast<char*>(h->bases[ctx->rank]);
  if (peer < 0 || peer >= ctx->world_size || c < mine || c >= mine + h->heap_bytes) return nullptr;
  return static_cast<char*>(h->bases[peer]) + (c - mine);
}

int64_t cb_param(pkb_context* ctx, const char* name) { return host_of(ctx)->tables.param(name); }

pkb_tensor view(RunnerContext& h, const LayoutTensor& t) {
  pkb_tensor v{};
  v.data = static_cast<char*>(h.bases[h.ctx.rank]) + t.offset;
  v.dtype = static_cast<pkb_dtype>(t.dtype);
  v.ndim = static_cast<int>(t.shape.size());
  int64_t stride = 1;
  for (int d = v.ndim - 1; d >= 0; --d) v.shape[d] = t.shape[d], v.strides[d] = stride, stride *= t.shape[d];
  h.names.back().push_back(t.name);
  return v;
}

// The heaps (already mapped), the tensors of every slot, the parameters and groups, the callbacks.
void fill_context(RunnerContext& h, const RunnerLayout& layout) {
  h.heap_bytes = layout.heap_bytes;
  h.arena_next = layout.arena_offset;
  // h.sync: rank 0's heap (CPU ranks) or rank 0's host segment (GPUs), as map_memory found it.
  h.sync = reinterpret_cast<SyncLine*>(reinterpret_cast<char*>(h.sync) + layout.sync_offset);
  for (const auto& [name, value] : layout.params)
    h.tables.param_names.push_back(name), h.tables.param_values.push_back(value);
  for (const auto& g : layout.groups) h.tables.group_members.push_back({g.name, g.members});
  pkb::build_context(h.ctx,
                     {.rank = layout.rank,
                      .world = layout.world,
                      .local_rank = layout.local_rank,
                      .device = h.device ? layout.cuda->device : -1,
                      .stream = h.device ? h.device->stream() : nullptr,
                      .heap_bases = h.bases.data(),
                      .heap_bases_device = h.device ? h.device->bases_device() : h.bases.data(),
                      .heap_size = h.heap_bytes,
                      .symm_alloc = cb_symm_alloc,
                      .symm_peer = cb_symm_peer,
                      .barrier = cb_barrier,
                      .param = cb_param},
                     h.tables);
  h.names.reserve(layout.inputs.size() + 1);
  for (const auto& slot : layout.inputs) {
    h.names.emplace_back();
    h.inputs.emplace_back();
    for (const auto& t : slot) h.inputs.back().push_back(view(h, t));
  }
  h.names.emplace_back();
  for (const auto& t : layout.outputs) h.outputs.push_back(view(h, t));
  for (size_t s = 0; s < h.inputs.size(); ++s)
    for (size_t i = 0; i < h.inputs[s].size(); ++i) h.inputs[s][i].name = h.names[s][i].c_str();
  for (size_t i = 0; i < h.outputs.size(); ++i) h.outputs[i].name = h.names.back()[i].c_str();
}

[[noreturn]] void die(const char* why) {
  fprintf(stderr, "pkb-runner: %s\n", why);
  _exit(3);
}

// Stopped until the monitor's next call; returns its sequence number. A continue that brings no new call (job
// control resuming the whole job) stops it again at once: the monitor tells such a continue from one of the
// candidate's own by its own SIGCONTs (worker/runner_host.cpp).
uint32_t freeze(const Control& ctl) {
  const uint32_t last = ctl.done.load();
  uint32_t seq;
  do {
    raise(SIGSTOP);
  } while ((seq = ctl.seq.load()) == last);
  return seq;
}

// A runner without a library, for the baselines' timing on CPU ranks: each call is a doorbell and nothing else, so a
// baseline's window pays what a candidate's does (the same wake-up and stop, the same syscall filter on the way).
[[noreturn]] void ping_only(Control& ctl) {
  try {
    restrict_syscalls();
  } catch (const std::exception& e) {
    die(e.what());
  }
  ctl.done.store(ctl.seq.load());
  for (;;) {
    const uint32_t seq = freeze(ctl);
    if (ctl.op == kExit) _exit(0);
    ctl.rc = 0;
    ctl.done.store(seq);
  }
}

std::string unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// The memory the runner shares: the host segments its descriptors name (the heaps on CPU ranks; on GPUs a small one
// for the runners' host-side agreement), and on GPUs the heaps by CUDA IPC. Before any candidate code.
std::unique_ptr<Device> map_memory(RunnerContext& h, const RunnerLayout& layout) {
  std::vector<void*> host;
  for (int q = 0; q < layout.world; ++q) {
    void* base = mmap(nullptr, layout.host_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, kHeapFd + q, 0);
    if (base == MAP_FAILED) die("cannot map a heap");
    host.push_back(base);
    close(kHeapFd + q);
  }
  close(kControlFd);
  h.sync = static_cast<SyncLine*>(host.at(0));
  if (!layout.cuda) {
    h.bases = host;
    return nullptr;
  }
  const RunnerCuda& cuda = *layout.cuda;
  std::unique_ptr<Device> device;
  try {
    device = std::make_unique<Device>(cuda.device, unhex(cuda.ipc_hex), layout.rank, layout.world, cuda.gate_flags);
  } catch (const std::exception& e) {
    die(e.what());
  }
  h.bases = device->bases();
  h.device = device.get();
  const int rank = layout.rank;
  h.flags = reinterpret_cast<uint32_t*>(static_cast<char*>(h.bases[rank]) + cuda.flags_offset);
  h.gate_host = reinterpret_cast<GateHostFlags*>(static_cast<char*>(host.at(rank)) + cuda.gate_host_offset);
  h.gate_device = reinterpret_cast<GateDeviceFlags*>(static_cast<char*>(h.bases[rank]) + cuda.gate_offset);
  return device;
}

// Landlock and seccomp (worker/lockdown.h); what could not be applied is noted for the monitor's record.
void lock_down(RunnerContext& h, const RunnerLayout& layout) {
  std::vector<std::string> granted = layout.granted_paths;
  granted.push_back("/proc/" + std::to_string(getpid()));  // its own /proc entries (/proc/self leads there)
  if (h.device) granted.push_back("/proc/driver");         // the NVIDIA driver's files, read by the CUDA runtime
  std::string note = hide_paths(layout.hidden_paths, granted);
  if (!note.empty()) {
    note += " (the monitors' paths stay visible)";
    std::strncpy(h.control->lockdown_note, note.c_str(), sizeof h.control->lockdown_note - 1);
    fprintf(stderr, "pkb-runner: %s\n", note.c_str());
  }
  try {
    restrict_syscalls();
  } catch (const std::exception& e) {
    die(e.what());
  }
}

// On GPUs the call's work waits on the stream for the monitor's go (its window has started), and the monitor learns
// that it ended from done, written on the stream after it (worker/call_gate.h); "armed" tells the monitor's gate that
// the call is being made now. kGoWaitUs bounds the wait for go, it does not pace it: go follows the hold (at most
// kGateMaxUs) and, at W > 1, the monitors' barrier, so only a monitor that died or gave up on the call leaves the wait
// to this bound; the monitor's wait for done (kGateDoneWaitUs) is longer because it spans the candidate's work.
constexpr double kGoWaitUs = 30e6;

// One call, sequence number `seq`, on `slot`: on GPUs its work waits on the stream for the monitor's go and is
// followed there by done (worker/call_gate.h); `arm` says the monitor's hold may end now (a block's first call only).
int make_call(RunnerContext& h, const pkb::CandidateLibrary& lib, int op, int slot, uint32_t seq, bool arm) {
  if (h.device) {
    h.device->wait_flag(&h.gate_device->go, seq, kGoWaitUs);
    if (arm) h.gate_host->armed.store(seq, std::memory_order_release);
  }
  const int rc = lib.error.empty() ? lib.call(static_cast<Op>(op), &h.ctx, h.inputs[slot], h.outputs) : 0;
  if (h.device) h.device->write_flag(&h.gate_device->done, seq);
  return rc;
}

// kRunBlock: the block's calls back to back in this one wake, each behind its own go on the stream; on GPUs no host
// waits between them (the monitor's stream fills each call's slot only once the call before it wrote done). Every
// call is made whatever an earlier one returned, so every wait of the monitor's ends; rc is the first that was not 0.
int run_block(RunnerContext& h, const pkb::CandidateLibrary& lib, const Control& ctl, uint32_t last) {
  const int32_t count = ctl.count;  // read once, as are the slots: what is checked is what runs
  int32_t slots[kMaxBlockCalls];
  std::copy(ctl.block_slots, ctl.block_slots + std::clamp(count, 0, kMaxBlockCalls), slots);
  if (std::string why = block_error(count, slots, static_cast<int>(h.inputs.size())); !why.empty())
    die(("the monitor asked for " + why).c_str());
  const uint32_t first = last - static_cast<uint32_t>(count - 1);
  int rc = 0;
  for (int i = 0; i < count; ++i) {
    const int r = make_call(h, lib, kRun, slots[i], first + static_cast<uint32_t>(i), i == 0);
    if (rc == 0) rc = r;
  }
  return rc;
}

// One call (or one block) each time the monitor wakes the runner; on GPUs the device is synchronized before it counts
// as done.
[[noreturn]] void serve(RunnerContext& h, const pkb::CandidateLibrary& lib) {
  Control& ctl = *h.control;
  ctl.done.store(ctl.seq.load());
  for (;;) {
    const uint32_t seq = freeze(ctl);
    const int op = ctl.op, slot = ctl.slot;
    if (op == kExit) _exit(0);
    int rc;
    if (op == kRunBlock) {
      rc = run_block(h, lib, ctl, seq);
    } else {
      if (slot < 0 || slot >= static_cast<int>(h.inputs.size())) die("the monitor asked for a slot that is not there");
      rc = make_call(h, lib, op, slot, seq, true);
    }
    if (h.device)
      if (std::string err = h.device->synchronize(); !err.empty()) set_error(&h, "CUDA error: " + err);
    ctl.rc = rc;
    ctl.done.store(seq);
  }
}

}  // namespace

int main() {
  void* page = mmap(nullptr, kControlBytes, PROT_READ | PROT_WRITE, MAP_SHARED, kControlFd, 0);
  if (page == MAP_FAILED) die("cannot map the control page");
  RunnerContext h;
  h.control = static_cast<Control*>(page);
  RunnerLayout layout;
  try {
    layout = json::parse(static_cast<const char*>(page) + kLayoutOffset,
                         static_cast<const char*>(page) + kLayoutOffset + h.control->layout_bytes);
  } catch (const std::exception& e) {
    die((std::string("the layout does not parse: ") + e.what()).c_str());
  }
  if (layout.ping_only) ping_only(*h.control);
  std::unique_ptr<Device> device = map_memory(h, layout);
  fill_context(h, layout);
  lock_down(h, layout);
  pkb::CandidateLibrary lib = pkb::CandidateLibrary::open(layout.library);
  if (!lib.error.empty()) set_error(&h, lib.error);
  serve(h, lib);
}
