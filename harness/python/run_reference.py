"""Runs a problem's reference.py under torchrun on inputs pkb wrote, and writes its outputs for comparison.

Launched by `pkb validate` (and the evaluation's PyTorch-eager baseline) as
  python3 -m torch.distributed.run --standalone --nproc-per-node W run_reference.py \
      --problem-dir problems/NNN_slug --io DIR --trials 0,1,2 --device cuda
Reads DIR/trialT/inputs.rankR.safetensors (tensors by name, scalars in the metadata as "scalar.NAME"), calls
solution(*args) in problem.json's argument order, and writes DIR/trialT/py.rankR.safetensors with the outputs
named as problem.json lists them.
"""
import argparse
import importlib.util
import json
import os
import sys

import torch
import torch.distributed as dist
from safetensors import safe_open
from safetensors.torch import save_file


def load_solution(problem_dir):
    spec = importlib.util.spec_from_file_location("pkb_reference", os.path.join(problem_dir, "reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solution


def load_args(problem, path, device):
    with safe_open(path, framework="pt", device=str(device)) as f:
        metadata = f.metadata() or {}
        args = []
        for entry in problem["inputs"]:
            name = entry["name"]
            if "value" in entry:
                args.append(int(metadata["scalar." + name]))
            else:
                args.append(f.get_tensor(name))
    return args


def as_output_list(result):
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem-dir", required=True)
    parser.add_argument("--io", required=True)
    parser.add_argument("--trials", default="0")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--time", action="store_true", help="time solution() on the first trial's inputs")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--iters", type=int, default=100)
    opts = parser.parse_args()

    rank = int(os.environ["RANK"])
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    if opts.device == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")

    with open(os.path.join(opts.problem_dir, "problem.json")) as f:
        problem = json.load(f)
    output_names = [o["name"] for o in problem["outputs"]]
    solution = load_solution(opts.problem_dir)

    for trial in [int(t) for t in opts.trials.split(",")]:
        trial_dir = os.path.join(opts.io, f"trial{trial}")
        args = load_args(problem, os.path.join(trial_dir, f"inputs.rank{rank}.safetensors"), device)
        outputs = as_output_list(solution(*args))
        if opts.device == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        if len(outputs) != len(output_names):
            sys.exit(f"rank {rank}: solution returned {len(outputs)} outputs, problem.json lists {len(output_names)}")
        tensors = {name: t.detach().to("cpu").contiguous() for name, t in zip(output_names, outputs)}
        save_file(tensors, os.path.join(trial_dir, f"py.rank{rank}.safetensors"))

    if opts.time:
        first = int(opts.trials.split(",")[0])
        args = load_args(problem, os.path.join(opts.io, f"trial{first}", f"inputs.rank{rank}.safetensors"), device)
        stats = time_solution(solution, args, opts, device)
        if rank == 0:
            with open(os.path.join(opts.io, "timing.py.json"), "w") as f:
                json.dump(stats, f, indent=2)

    dist.destroy_process_group()


def rotation_copies(args, device):
    """As many input copies as exceed 3x L2 (capped at 64), the same rule pkb-rank uses."""
    nbytes = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))
    if device.type != "cuda" or nbytes == 0:
        return 2
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    return max(1, min(64, 3 * l2 // nbytes + 1))


def time_solution(solution, args, opts, device):
    """Times solution() like pkb times candidates: a cross-rank barrier before each iteration (an all-reduce of
    one element on the stream, untimed), per-iteration CUDA events, rotated input copies, slowest rank per
    iteration."""
    copies = [args] + [[a.clone() if isinstance(a, torch.Tensor) else a for a in args]
                       for _ in range(rotation_copies(args, device) - 1)]
    token = torch.zeros(1, device=device)
    for i in range(opts.warmup):
        dist.all_reduce(token)
        solution(*copies[i % len(copies)])
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(opts.iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(opts.iters)]
    for i in range(opts.iters):
        dist.all_reduce(token)
        starts[i].record()
        solution(*copies[i % len(copies)])
        ends[i].record()
    torch.cuda.synchronize()
    mine = torch.tensor([1e3 * s.elapsed_time(e) for s, e in zip(starts, ends)], dtype=torch.float64, device=device)
    gathered = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
    dist.all_gather(gathered, mine)
    slowest = torch.stack(gathered).max(dim=0).values.cpu()
    mean = slowest.mean().item()
    std = slowest.std().item() if len(slowest) > 1 else 0.0
    return {"median_us": slowest.median().item(), "mean_us": mean, "min_us": slowest.min().item(),
            "max_us": slowest.max().item(), "stddev_us": std, "cv": std / mean if mean > 0 else 0.0,
            "iters": len(slowest), "input_copies": len(copies), "iter_us": slowest.tolist()}


if __name__ == "__main__":
    main()
