// Which input copy each call of a timing uses, which call of a copy is checked, and how many copies fit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "spec/problem_spec.h"
#include "worker/timing_options.h"

namespace pkb {

// Escape-probe calls after the repetitions.
constexpr int kEscapeProbeCalls = 5;

// Which input copy each call uses. Warm-up calls cycle over copies [0, warmup_copies); timed calls (ordinal j:
// repetition j / calls_per_rep; within it the pkb block's calls, the paper block's, the device view's) and probe calls
// use the copies after those: copy warmup_copies + j where there is one per ordinal (fresh = copies - warmup_copies
// >= calls()). Where memory holds fewer, each fresh copy serves one call, and the calls on fresh copies are spread
// evenly over the pkb blocks' ordinals first (the method that compares fresh calls with repeated ones and scores the
// fresh median, timing.repeat_faster), the copies left over evenly over the other ordinals; every other ordinal
// revisits a warm-up copy (j mod warmup_copies: contents the warm-ups met, kept out of L2 by their rotation). So calls
// on fresh and on repeated contents alternate through the whole timing and a burst of load hits both alike: while the
// fresh copies went to the first ordinals, a burst over the first repetition read as memoizing on honest kernels.
// When every copy is a warm-up copy (references: plain rotation) timed calls cycle over all of them; a plan without a
// layout (reps 0) cycles over its fresh copies.
struct CopyPlan {
  int copies = 1, warmup_copies = 1;
  // The timed ordinals' layout (copy_plan sets it from the timing options): `reps` repetitions (max_reps) of per_rep
  // ordinals whose first pkb_per_rep are the pkb block's, then the escape probe's kEscapeProbeCalls.
  int reps = 0, per_rep = 0, pkb_per_rep = 0;
  int calls() const { return reps > 0 ? reps * per_rep + kEscapeProbeCalls : 0; }
  int warmup_copy(int i) const { return i % warmup_copies; }
  int timed_copy(int j) const { return use(j).copy; }
  // Whether timed ordinal j is the only call of its copy: contents no other call met (warm-ups included).
  bool fresh_call(int j) const { return use(j).fresh; }
  // The first repetition whose timed calls use copy k (-1: none within max_reps).
  int first_rep_of(int copy, const TimingOptions& o) const;
  // The copy a reference-pass draw names: draw i checks repetition i (i < max_reps), later draws repetition 0,
  // which always runs; within it, call (draw % calls_per_rep).
  int checked_copy(int i, uint64_t draw, const TimingOptions& o) const;

 private:
  struct Use {
    bool fresh;
    int copy;
  };
  Use use(int j) const;
};
// Which call of each copy is its capture, the one the driver checks: every call of a captured copy that runs replaces
// the kept one with probability 1/visits (a reservoir of one), so each of a copy's calls is equally likely to be the
// checked one, wherever it sits (a revisit, any position of a back-to-back block). Drawn by the monitor alone, before
// the call's readback is enqueued; a call's draw depends on nothing the candidate sees.
class CaptureDraw {
 public:
  CaptureDraw() = default;
  CaptureDraw(int copies, uint64_t seed) : visits_(copies, 0), draw_(seed) {}
  // One more call of `copy` ran (or is about to): whether it is now the kept one. A copy that is not captured is
  // never kept, nor counted.
  bool keep(int copy, bool captured) { return captured && draw_() % static_cast<uint64_t>(++visits_.at(copy)) == 0; }
  int visits(int copy) const { return visits_.at(copy); }  // calls of a captured copy so far

 private:
  std::vector<int> visits_;
  std::mt19937_64 draw_;
};

// A plan of `copies` with the first `warmup_copies` the warm-up rotation, laid out for timing options o.
CopyPlan copy_plan(int copies, int warmup_copies, const TimingOptions& o);

// Memory per rank that timing copies may take (their inputs; captures of outputs come on top).
// (3 GiB on GPUs: a 2 MiB input's 1346 copies, one per timed and probe call, fit; 2 GiB did before the device
// view's calls took copies of their own.)
constexpr size_t kTimingCopyBudgetCuda = size_t{3} << 30;
// Memory per rank a baseline's rotation may take on GPUs (run_reference.py's rotation_copies uses the same).
constexpr size_t kRotationBudgetCuda = size_t{2} << 30;
constexpr size_t kTimingCopyBudgetCpu = size_t{32} << 20;

// Copies of `input_bytes` that together exceed 3x the L2 cache (at least 1), within `budget_bytes` and no more than
// `calls`, the calls that rotate over them: the rotation that keeps a call's inputs out of L2. A copy past the
// last call would never be used (4 KiB inputs want 46081 copies; a default timing makes 1510 calls).
// harness/python/rotation.py is the same rule for run_reference.py (a unit test holds the two together).
int rotation_copies(size_t input_bytes, size_t l2_bytes, size_t budget_bytes, size_t calls);
// The calls of one timing that rotate over its copies: the warm-ups and max_reps repetitions of every method.
inline size_t rotation_calls(const TimingOptions& o) {
  return static_cast<size_t>(o.warmup_calls()) + static_cast<size_t>(o.max_timed_calls());
}
// Copies for timing a candidate: the L2 rotation for the warm-ups, then one fresh copy per timed and probe
// call of the largest plan (so memoizing on content never pays), within a memory budget per rank.
CopyPlan timing_copies(size_t input_bytes, size_t l2_bytes, const TimingOptions& o, size_t budget_bytes);

// Bytes one copy of a rank's inputs (or outputs) takes in the symmetric heap: every tensor at its largest shape over
// the ranks, aligned. The same on every rank, unlike the rank's own tensors (scatter's root holds W slices).
size_t heap_copy_bytes(const ProblemSpec& spec, const RunShape& run, bool inputs);

// The candidate timing plan of an evaluation, one for the whole world: the reference pass draws its checked copies
// from it and the candidate pass rotates over it, so both must size it from the same bytes on every rank.
CopyPlan world_timing_copies(const ProblemSpec& spec, const RunShape& run, bool cuda, const TimingOptions& o);

}  // namespace pkb
