"""Prints a markdown table from pkb eval --json records: status, baselines, candidate time, speedups, SOL%."""
import json
import sys


def us(t):
    return t.get("median_us") if isinstance(t, dict) else None


def fmt(x, spec="{:.1f}"):
    return spec.format(x) if isinstance(x, (int, float)) else "-"


rows = []
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
    except (OSError, ValueError):
        rows.append(f"| {path} | no record | | | | | | |")
        continue
    t = r.get("timing", {})
    roof = r.get("roofline", {})
    py, cpp, cand = us(t.get("baseline_pytorch_eager")), us(t.get("baseline_libtorch_nccl")), us(t.get("candidate"))
    rows.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
        r["problem"]["folder"], r["status"], fmt(py), fmt(cpp), fmt(cand),
        fmt(py / cand if py and cand else None, "{:.2f}x"), fmt(cpp / cand if cpp and cand else None, "{:.2f}x"),
        fmt(100 * roof["sol_candidate"] if roof.get("sol_candidate") else None, "{:.0f}%"),
        fmt(t.get("candidate", {}).get("cv", 0) * 100 if isinstance(t.get("candidate"), dict) else None, "{:.1f}%")))
print("| problem | status | PyTorch eager µs | libtorch+NCCL µs | candidate µs | vs eager | vs libtorch | SOL% (link/HBM roofline) | CV |")
print("|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
