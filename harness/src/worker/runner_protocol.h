// What the monitor (the trusted rank program: pkb-candidate, or pkb-rank for problems with a prepare step) and the
// runner (pkb-runner, the process that holds the candidate library) share on CPU ranks: one control page and the
// symmetric heaps, nothing else (docs/design/runner-and-gate.md).
//
// The runner is frozen (SIGSTOP) whenever it is not inside a call. A call: the monitor writes op and slot into the
// page, bumps `seq`, starts its clock and sends SIGCONT; the runner makes the call, writes rc and `done = seq`, and
// stops itself; the monitor's waitpid(WUNTRACED) sees the whole process stopped and stops its clock. So the
// candidate's code runs only inside the windows the monitor times, and everything the monitor does between calls
// (poisoning, uploading inputs, capturing outputs, sending frames) happens while no candidate thread runs. Every byte
// of the page and the heaps is the candidate's to write: the monitor reads rc and done as claims (a false `done`
// leaves its outputs unfinished, which the capture shows) and keeps everything it trusts in its own memory.
// A block (kRunBlock, GPU runners' paper method): one wake for `count` calls, each timed by the monitor's call gate
// on the device (worker/call_gate.h); `done` is the block's last sequence number.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace pkb::runner {

// Descriptors the runner starts with: the control page, then one per rank's heap (rank q at kHeapFd + q).
constexpr int kControlFd = 3;
constexpr int kHeapFd = 4;

// The page: the header, then the layout JSON (shapes, names, parameters, groups) from kLayoutOffset.
constexpr size_t kControlBytes = 1 << 20;
constexpr size_t kLayoutOffset = 4096;

// kRunBlock (GPU runners, the paper method): `count` calls of pkb_run back to back in one wake, call i on input slot
// block_slots[i] and carrying sequence number seq - count + 1 + i; on GPUs each call's work waits on the stream for
// the monitor's go and is followed by its done (worker/call_gate.h), so no host sits between the calls.
enum Op : int32_t { kLoad = 0, kSetup = 1, kRun = 2, kTeardown = 3, kExit = 4, kPing = 5, kRunBlock = 6 };

// The most calls one kRunBlock carries (the control page holds their slots); a longer block is several.
constexpr int kMaxBlockCalls = 512;

struct Control {
  std::atomic<uint32_t> seq;   // monitor: the call being asked for (a block: its last call)
  std::atomic<uint32_t> done;  // runner: the last call it finished
  int32_t op;                  // monitor
  int32_t slot;                // monitor: which input slot the call reads
  int32_t rc;                  // runner: the candidate's return value (a block: the first that was not 0)
  char error[1024];            // runner: why a call failed ("" if it did not): a load error, a callback's error
  uint32_t layout_bytes;       // monitor: the layout's JSON follows the page header
  char lockdown_note[256];     // runner, before the library loads: what of its lockdown could not be applied ("" all)
  int32_t count;               // monitor, kRunBlock: how many calls
  int32_t block_slots[kMaxBlockCalls];  // monitor, kRunBlock: call i's input slot
};
static_assert(sizeof(Control) <= 4096, "the layout starts at kLayoutOffset");

// Why a kRunBlock's count and slots do not fit a runner with `slots` input slots, or "" when they do. The runner dies
// on a bad one, as on a bad slot: its monitor never writes one.
inline std::string block_error(int32_t count, const int32_t* block_slots, int slots) {
  if (count < 1 || count > kMaxBlockCalls)
    return "a block of " + std::to_string(count) + " calls (1 to " + std::to_string(kMaxBlockCalls) + ")";
  for (int i = 0; i < count; ++i)
    if (block_slots[i] < 0 || block_slots[i] >= slots)
      return "slot " + std::to_string(block_slots[i]) + " (of " + std::to_string(slots) + ") for call " +
             std::to_string(i) + " of a block";
  return "";
}

// Per rank, in rank 0's heap at the layout's sync offset: a cache line each for the runners' barrier and symm_alloc.
struct SyncLine {
  std::atomic<uint64_t> barrier_epoch;
  std::atomic<uint64_t> alloc_seq;
  std::atomic<uint64_t> alloc_bytes;
  char pad[40];
};
static_assert(sizeof(SyncLine) == 64);

// GPU runners' call gate (worker/call_gate.h): every call's window is timed on the device by the monitor's events,
// and the runner's stream is chained to them through these flags. Host memory both processes map (the monitor's
// host segment, registered for the device): the runner's "about to call" and the monitor's "stop waiting".
struct GateHostFlags {
  alignas(64) std::atomic<uint32_t> armed;  // runner: the call it makes next, written just before it makes it
  alignas(64) std::atomic<uint32_t> abort;  // monitor: the call whose waits end now (it ended, however it ended)
  char pad[64];
};
// Device memory in the monitor's heap (the runner opened it by CUDA IPC): the monitor's stream writes go once the
// window has started; the runner's stream waits for it before the call's work and writes done after it.
struct GateDeviceFlags {
  uint32_t go;
  uint32_t pad0[31];
  uint32_t done;
  uint32_t pad1[31];
};
static_assert(sizeof(GateHostFlags) == 192 && sizeof(GateDeviceFlags) == 256);

}  // namespace pkb::runner
