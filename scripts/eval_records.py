"""Helpers shared by the scripts that tabulate pkb eval --json records (summarize_evals.py, compare_evals.py)."""
import json


def load(path):
    """The record at path, or None where there is none (a crashed pkb, a missing file, no JSON)."""
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return None


def median_us(record, key):
    """timing[key].median_us of a record (key: candidate, baseline_libtorch_nccl, ...), or None."""
    t = ((record or {}).get("timing") or {}).get(key)
    return t.get("median_us") if isinstance(t, dict) else None


def fmt(x, spec="{:.1f}"):
    return spec.format(x) if isinstance(x, (int, float)) else "-"
