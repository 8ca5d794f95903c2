"""The L2 rotation's copy count and the device view's hold rule for run_reference.py: pkb-rank's rotation_copies,
initial_hold_us and next_hold_us (harness/src/worker/timing.h), kept free of torch so that
tests/unit/timing_test.cpp can hold the two languages together."""


def rotation_count(input_bytes, l2_bytes, budget_bytes, calls):
    """Copies of input_bytes that together exceed 3x the L2 (at least 1), within budget_bytes and no more than the
    calls that rotate over them (a copy past the last call is never used)."""
    if input_bytes == 0:
        return 1
    want = 3 * l2_bytes // input_bytes + 1
    fit = max(1, budget_bytes // input_bytes)
    return max(1, min(want, fit, calls, 1 << 16))


def rotation_calls(warmup, paper_warmup, iters, paper_iters, max_reps, device_iters):
    """The calls of one timing that rotate over its copies: the warm-ups and max_reps repetitions of every method."""
    return warmup + paper_warmup + max_reps * (iters + paper_iters + device_iters)


def initial_hold_us(longest_issue_us):
    """The device view's first hold (TimingOptions' initial_hold_us, worker/timing.h)."""
    return min(MAX_HOLD_US, 2 * longest_issue_us + 50)


def next_hold_us(hold_us, issue_us):
    """The hold after an unheld call that took the host issue_us to issue (next_hold_us, worker/timing.h)."""
    return min(MAX_HOLD_US, max(2 * hold_us, 2 * issue_us + 50))


MAX_HOLD_US = 5000
