"""Benchmark table (not a test): the same candidates evaluated two ways (two folders of pkb eval --json records,
matched by file name), their medians side by side. Usage: python3 scripts/compare_evals.py DIR_A DIR_B [label_a label_b]
Prints, per record: status both ways, the candidate's and the libtorch+NCCL baseline's median (us) and their
B/A ratios, the candidate's paper-method median (the repetitions' per-call means) and its B/A ratio, the speedups, and
the evaluation's wall beyond compile (s)."""
import glob
import os
import sys

from eval_records import fmt, load, median_us as median


def beyond_compile(r):
    w = (r or {}).get("wall") or {}
    return w.get("total_s", 0) - w.get("compile_s", 0) if w else None


def ratio(b, a):
    return b / a if a and b else None


def paper_us(r):
    p = (((r or {}).get("timing") or {}).get("candidate") or {}).get("paper")
    return p.get("median_us") if isinstance(p, dict) else None


a_dir, b_dir = sys.argv[1], sys.argv[2]
la, lb = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else ("A", "B")
print(f"A = {la}, B = {lb}")
print("| record | status A / B | candidate us A / B (B/A) | baseline us A / B (B/A) | candidate paper us A / B (B/A) | "
      "speedup A / B | beyond compile s A / B |")
print("|---|---|---|---|---|---|---|")
ratios, paper_ratios = [], []
for path in sorted(glob.glob(os.path.join(a_dir, "*.json"))):
    name = os.path.basename(path)
    a, b = load(path), load(os.path.join(b_dir, name))
    ca, cb = median(a, "candidate"), median(b, "candidate")
    ba, bb = median(a, "baseline_libtorch_nccl"), median(b, "baseline_libtorch_nccl")
    sa = ((a or {}).get("timing") or {}).get("speedup")
    sb = ((b or {}).get("timing") or {}).get("speedup")
    pa, pb = paper_us(a), paper_us(b)
    for x in (ratio(cb, ca), ratio(bb, ba)):
        if x:
            ratios.append(x)
    if ratio(pb, pa):
        paper_ratios.append(ratio(pb, pa))
    print(f"| {name[:-5]} | {(a or {}).get('status', 'none')} / {(b or {}).get('status', 'none')} | "
          f"{fmt(ca)} / {fmt(cb)} ({fmt(ratio(cb, ca), '{:.2f}')}) | {fmt(ba)} / {fmt(bb)} ({fmt(ratio(bb, ba), '{:.2f}')}) | "
          f"{fmt(pa)} / {fmt(pb)} ({fmt(ratio(pb, pa), '{:.2f}')}) | {fmt(sa, '{:.2f}')} / {fmt(sb, '{:.2f}')} | {fmt(beyond_compile(a))} / {fmt(beyond_compile(b))} |")
if ratios:
    print(f"B/A median ratios: min {min(ratios):.2f}, max {max(ratios):.2f}, "
          f"within 10%: {sum(0.9 <= x <= 1.1 for x in ratios)} of {len(ratios)}")
if paper_ratios:
    print(f"candidate paper B/A: min {min(paper_ratios):.2f}, max {max(paper_ratios):.2f}, "
          f"within 5%: {sum(0.95 <= x <= 1.05 for x in paper_ratios)} of {len(paper_ratios)}")
