"""Prints a markdown table from pkb eval --json records: status, baselines, candidate time, speedups, SOL%.
A record whose ranks shared a GPU (timing.contended) timed contention, not the kernel: its times are shown, its
speedups and SOL% are not (as in pkb's own reports)."""
import sys

from eval_records import fmt, load, median_us

rows = []
for path in sys.argv[1:]:
    r = load(path)
    if r is None:
        rows.append(f"| {path} | no record | | | | | | |")
        continue
    t = r.get("timing", {})
    roof = r.get("roofline", {})
    py, cpp, cand = (median_us(r, k) for k in ("baseline_pytorch_eager", "baseline_libtorch_nccl", "candidate"))
    claims = not t.get("contended")
    rows.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
        r["problem"]["folder"], r["status"] + ("" if claims else " (ranks shared a GPU)"), fmt(py), fmt(cpp),
        fmt(cand), fmt(py / cand if claims and py and cand else None, "{:.2f}x"),
        fmt(cpp / cand if claims and cpp and cand else None, "{:.2f}x"),
        fmt(100 * roof["sol_candidate"] if claims and roof.get("sol_candidate") else None, "{:.0f}%"),
        fmt(t.get("candidate", {}).get("cv", 0) * 100 if isinstance(t.get("candidate"), dict) else None, "{:.1f}%")))
print("| problem | status | PyTorch eager µs | libtorch+NCCL µs | candidate µs | vs eager | vs libtorch | SOL% (link/HBM roofline) | CV |")
print("|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
