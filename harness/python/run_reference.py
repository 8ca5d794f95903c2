"""Runs a problem's reference.py on inputs pkb wrote, and writes its outputs for comparison.

pkb launches the W ranks itself (harness/src/launch/jobs.cpp), one process each, with the env:// rendezvous
variables MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK (no torchrun: Debian's torch 1.13 torchrun
takes other flags and crashes on Python 3.11):
  RANK=r WORLD_SIZE=W ... python3 run_reference.py --problem-dir problems/NNN_slug --io DIR --trials 0,1,2 --device cpu
Reads DIR/trialT/inputs.rankR.safetensors (tensors by name, scalars in the metadata as "scalar.NAME"), calls
solution(*args) in problem.json's argument order, and writes DIR/trialT/py.rankR.safetensors with the outputs
named as problem.json lists them. Every rank leaves DIR/py.rankR.json: {"status": "ok"}, {"status": "skip",
"reason": ...} when this machine cannot run the check (exit 3), or {"status": "error", "error": the exception's
first line, "where": the innermost reference.py frame} (exit 1). Several `--problem-dir P --io DIR` pairs run in
one launch (torch imported and the process group set up once), in order, until the first that is not "ok".

Safetensors are read and written here (the format is an 8-byte header length, a JSON header and the raw bytes):
Debian packages no `safetensors` module. On gloo (CPU), collectives that old torch's gloo lacks are expressed
with ones it has; see install_gloo_shims.
"""
import argparse
import ctypes
import datetime
import importlib.util
import inspect
import json
import math
import os
import re
import statistics
import struct
import sys
import time
import traceback
import warnings

try:
    import torch
    import torch.distributed as dist
    TORCH_MISSING = None
except Exception as e:  # noqa: BLE001 - pkb looked only for torch's files (importing costs ~1.6 s): say why, as a skip
    torch = dist = None
    TORCH_MISSING = f"{sys.executable} cannot import torch: {e}"

from dispatch_pin import DispatchPin
from rotation import initial_hold_us, next_hold_us, rotation_calls, rotation_count  # pkb-rank's rules

SKIP_EXIT = 3  # every rank raised CannotRunHere: pkb reports a skip with the reason, not a failure


class CannotRunHere(Exception):
    """This machine's torch cannot run the check (e.g. gloo without bf16): a skip, not a disagreement."""


# safetensors dtype names <-> torch dtypes (the subset pkb writes: harness/src/core/dtype.cpp).
DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "F64": torch.float64,
          "I8": torch.int8, "U8": torch.uint8, "I16": torch.int16, "I32": torch.int32, "I64": torch.int64,
          "BOOL": torch.bool} if torch else {}
NAMES = {v: k for k, v in DTYPES.items()}


def read_safetensors(path):
    """(tensors by name, metadata) from a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + header_len])
    metadata = header.pop("__metadata__", None) or {}
    body = memoryview(data)[8 + header_len:]
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = DTYPES[entry["dtype"]]
        if end > begin:
            flat = torch.frombuffer(bytearray(body[begin:end]), dtype=dtype)
        else:
            flat = torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(entry["shape"])
    return tensors, metadata


def write_safetensors(path, tensors):
    header, chunks, offset = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    encoded = json.dumps(header).encode()
    encoded += b" " * ((8 - len(encoded) % 8) % 8)  # data section 8-byte aligned, as the format recommends
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + b"".join(chunks))
    os.replace(tmp, path)


def install_gloo_shims():
    """gloo in torch 1.13 has no all_gather_into_tensor / reduce_scatter_tensor (and later versions still lack
    reduce_scatter): on gloo they are expressed with all_gather into a list and all_reduce, which every version
    has. Same results (a SUM's order may differ, within the check's tolerance); only the synchronous form the
    references use."""

    def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
        assert not async_op, "the gloo shim is synchronous"
        parts = [torch.empty_like(input_tensor) for _ in range(dist.get_world_size(group))]
        dist.all_gather(parts, input_tensor.contiguous(), group=group)
        output_tensor.copy_(torch.cat([p.reshape(-1) for p in parts]).view(output_tensor.shape))

    def reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False):
        assert not async_op, "the gloo shim is synchronous"
        reduced = input.clone()
        dist.all_reduce(reduced, op=op, group=group)
        mine = reduced.reshape(dist.get_world_size(group), -1)[dist.get_rank(group)]
        output.copy_(mine.view(output.shape))

    # gloo has no all-to-all either: point-to-point pairs, one message each way per peer.
    def global_rank(group, q):
        if group is None:
            return q
        to_global = getattr(dist, "get_global_rank", None) or dist.distributed_c10d._get_global_rank
        return to_global(group, q)

    def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
        assert not async_op, "the gloo shim is synchronous"
        me, requests = dist.get_rank(group), []
        for q in range(dist.get_world_size(group)):
            if q == me:
                output_tensor_list[q].copy_(input_tensor_list[q])
                continue
            requests.append(dist.isend(input_tensor_list[q].contiguous(), global_rank(group, q), group=group))
            requests.append(dist.irecv(output_tensor_list[q], global_rank(group, q), group=group))
        for r in requests:
            r.wait()

    def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
        size = dist.get_world_size(group)
        outs = list(output.split(output_split_sizes or [output.shape[0] // size] * size))
        recv = [torch.empty_like(o) for o in outs]
        all_to_all(recv, list(input.split(input_split_sizes or [input.shape[0] // size] * size)), group, async_op)
        for o, r in zip(outs, recv):
            o.copy_(r)

    dist.all_gather_into_tensor = all_gather_into_tensor
    dist.reduce_scatter_tensor = reduce_scatter_tensor
    dist.all_to_all = all_to_all
    dist.all_to_all_single = all_to_all_single


def require_gloo_dtypes(dtypes):
    """Probes a one-element all-reduce per reduced-precision dtype of the inputs. gloo rejects an unsupported
    dtype before communicating, on every rank alike, so all ranks skip together."""
    for dtype in sorted({d for d in dtypes if d in (torch.bfloat16, torch.float16)}, key=str):
        try:
            dist.all_reduce(torch.zeros(1, dtype=dtype))
        except RuntimeError as e:
            raise CannotRunHere(f"gloo in torch {torch.__version__} has no {str(dtype).replace('torch.', '')} "
                                f"collectives ({first_line(e)})") from None


def missing_torch_feature(exc):
    """"torch 1.13 has no torch.float8_e4m3fn" when reference.py uses something this torch lacks, else None."""
    m = re.fullmatch(r"module '(torch[\w.]*)' has no attribute '(\w+)'", str(exc))
    if isinstance(exc, AttributeError) and m:
        return f"torch {torch.__version__} has no {m.group(1)}.{m.group(2)}"
    return None


def first_line(exc):
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else "")[:300]


def describe(exc, problem_dir):
    """The exception's type and first line, and the innermost frame in reference.py (else the innermost one)."""
    frames = traceback.extract_tb(exc.__traceback__)
    reference = os.path.realpath(os.path.join(problem_dir, "reference.py"))
    in_reference = [f for f in frames if os.path.realpath(f.filename) == reference]
    where = ""
    if frames:
        f = (in_reference or frames)[-1]
        where = f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}: {(f.line or '').strip()}"
    return {"error": f"{type(exc).__name__}: {first_line(exc)}", "where": where}


def load_solution(problem_dir):
    spec = importlib.util.spec_from_file_location("pkb_reference", os.path.join(problem_dir, "reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.solution


def load_args(problem, path, device):
    tensors, metadata = read_safetensors(path)
    args = []
    for entry in problem["inputs"]:
        name = entry["name"]
        args.append(int(metadata["scalar." + name]) if "value" in entry else tensors[name].to(device))
    return args


def as_output_list(result):
    if isinstance(result, (list, tuple)):
        return list(result)
    return [result]


def use_ieee_fp32():
    """fp32 math in IEEE fp32, never TF32: PyTorch lets cuDNN convolutions use TF32 by default (and cuBLAS matmuls
    where allow_tf32 is on), so on Ampere and later GPUs an fp32 reference would be a TF32 one. The legacy flags exist
    in every torch from 1.13 on and keep the newer per-operator settings in step (newer torch warns that they are
    deprecated: silenced); NVIDIA_TF32_OVERRIDE is not needed. As pkb-rank's use_ieee_fp32 does."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False
        if hasattr(torch, "set_float32_matmul_precision"):  # torch >= 1.12
            torch.set_float32_matmul_precision("highest")


def fp32_math():
    """The fp32 settings in effect, read back: the rank record's and timing.py.json's `fp32_math`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cudnn, cublas = bool(torch.backends.cudnn.allow_tf32), bool(torch.backends.cuda.matmul.allow_tf32)
        precision = torch.get_float32_matmul_precision() if hasattr(torch, "get_float32_matmul_precision") else "highest"
    return {"ieee": not cudnn and not cublas and precision == "highest", "tf32_cudnn": cudnn, "tf32_cublas": cublas,
            "float32_matmul_precision": precision}


def init_process_group(opts, rank):
    """The process group and this rank's device, set up once for every problem of the launch."""
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    # A peer that died leaves the others blocked; pkb kills the group, this only bounds a stray process.
    timeout = datetime.timedelta(seconds=opts.timeout)
    if opts.device == "cuda":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        # device_id (torch >= 2.3) binds the communicator to the GPU at once, as torchrun-era runs did.
        bind = {"device_id": device} if "device_id" in inspect.signature(dist.init_process_group).parameters else {}
        dist.init_process_group("nccl", init_method="env://", timeout=timeout, **bind)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo", init_method="env://", timeout=timeout)
        install_gloo_shims()
    return device


def run_problem(opts, rank, device, problem_dir, io):
    with open(os.path.join(problem_dir, "problem.json")) as f:
        problem = json.load(f)
    output_names = [o["name"] for o in problem["outputs"]]
    solution = load_solution(problem_dir)
    use_ieee_fp32()  # per problem: one reference.py of the launch cannot change the next one's math
    trials = [int(t) for t in opts.trials.split(",")]

    for i, trial in enumerate(trials):
        trial_dir = os.path.join(io, f"trial{trial}")
        args = load_args(problem, os.path.join(trial_dir, f"inputs.rank{rank}.safetensors"), device)
        if i == 0 and opts.device == "cpu":
            require_gloo_dtypes(a.dtype for a in args if isinstance(a, torch.Tensor))
        outputs = as_output_list(solution(*args))
        if opts.device == "cuda":
            torch.cuda.synchronize()
        dist.barrier()
        if len(outputs) != len(output_names):
            raise RuntimeError(f"solution returned {len(outputs)} outputs, problem.json lists {len(output_names)}")
        write_safetensors(os.path.join(trial_dir, f"py.rank{rank}.safetensors"), dict(zip(output_names, outputs)))

    if opts.time:
        args = load_args(problem, os.path.join(io, f"trial{trials[0]}", f"inputs.rank{rank}.safetensors"), device)
        # --timing-repeats: whole timings in a row; the first is the record's, all medians show the spread.
        runs = []
        for _ in range(opts.timing_repeats):
            with DispatchPin() as pin:  # the CPUs pkb chose for this rank (PKB_DISPATCH_*)
                runs.append(time_solution(solution, args, opts, device))
            runs[-1].update(dispatch_cpu=pin.cpu, **({"dispatch_note": pin.note} if pin.cpu < 0 else {}))
        stats = runs[0]
        stats["repeat_medians_us"] = [r["median_us"] for r in runs]
        stats["repeat_paper_medians_us"] = [r["paper"]["median_us"] for r in runs]
        if "device" in stats:
            stats["repeat_device_medians_us"] = [r["device"].get("median_us") for r in runs]
        stats["repeat_host_probe_us"] = [statistics.median(r["host_probe_us"]) for r in runs]
        stats["fp32_math"] = fp32_math()
        if rank == 0:
            with open(os.path.join(io, "timing.py.json"), "w") as f:
                json.dump(stats, f, indent=2)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem-dir", required=True, action="append",
                        help="repeated with --io: several problems in one launch")
    parser.add_argument("--io", required=True, action="append")
    parser.add_argument("--trials", default="0")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--time", action="store_true", help="time solution() on the first trial's inputs")
    # The timing options, spelled as pkb-rank's (worker/timing_cli.h); pkb always passes them all.
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--paper-warmup", type=int, default=500)
    parser.add_argument("--paper-iters", type=int, default=100)
    parser.add_argument("--min-reps", type=int, default=3)
    parser.add_argument("--max-reps", type=int, default=5)
    parser.add_argument("--ci-target", type=float, default=0.01)
    parser.add_argument("--timing-budget", type=float, default=2.0)
    parser.add_argument("--paper-warmup-budget", type=float, default=1.0)
    parser.add_argument("--timing-repeats", type=int, default=1)
    parser.add_argument("--rep-gap-ms", type=float, default=0.0)
    parser.add_argument("--device-iters", type=int, default=50)
    parser.add_argument("--timeout", type=float, default=600, help="collective timeout, seconds")
    parser.add_argument("--gate-lib", help="time the calls through the call gate's flags (libpkb_eager_gate.so)")
    opts = parser.parse_args()
    if len(opts.problem_dir) != len(opts.io):
        parser.error("--problem-dir and --io come in pairs")

    rank = int(os.environ["RANK"])
    world = int(os.environ.get("WORLD_SIZE", 1))
    device = None
    # Problems run in order. The first that does not end "ok" ends the launch (its peers may be blocked in a
    # collective); pkb launches again for the problems after it.
    for problem_dir, io in zip(opts.problem_dir, opts.io):
        try:
            if TORCH_MISSING:
                raise CannotRunHere(TORCH_MISSING)
            if device is None:
                device = init_process_group(opts, rank)
            run_problem(opts, rank, device, problem_dir, io)
            record, code = {"status": "ok", "fp32_math": fp32_math(), "host_threads": torch.get_num_threads()}, 0
        except CannotRunHere as e:
            record, code = {"status": "skip", "reason": str(e)}, SKIP_EXIT
            if TORCH_MISSING:
                record["scope"] = "launch"  # no problem of this launch can run: pkb skips them all, launching no more
        except Exception as e:  # noqa: BLE001 - any failure of reference.py becomes the rank's record
            traceback.print_exc()
            missing = missing_torch_feature(e)
            if missing:
                record, code = {"status": "skip", "reason": missing}, SKIP_EXIT
            else:
                # "time" lets pkb report the first rank that failed, not the peers that lost it.
                record, code = dict(status="error", time=time.time(), **describe(e, problem_dir)), 1
        record_path = os.path.join(io, f"py.rank{rank}.json")
        with open(record_path + ".tmp", "w") as f:
            json.dump(record, f)
        os.replace(record_path + ".tmp", record_path)
        if code != 0:
            break
    if rank == 0:
        # Rank 0 hosts the rendezvous store: leaving early would break peers still using it (a skip they are about
        # to record would turn into "connection reset"). Peers blocked after an error never record; pkb kills them.
        wait_for_records(io, world, 30 if code != 1 else 2)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip teardown: a failed rank's peers may still block in a collective, and pkb kills them.
    os._exit(code)


def wait_for_records(io, world, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(os.path.exists(os.path.join(io, f"py.rank{r}.json")) for r in range(world)):
            return
        time.sleep(0.02)


def rotation_copies(args, device, opts, budget_bytes=2 << 30):
    """Input copies for timing: pkb-rank's rule (rotation.py) on CUDA, 2 on CPU ranks (as pkb-rank)."""
    if device.type != "cuda":
        return 2
    nbytes = sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))
    calls = rotation_calls(opts.warmup, opts.paper_warmup, opts.iters, opts.paper_iters, opts.max_reps,
                           opts.device_iters)
    return rotation_count(nbytes, torch.cuda.get_device_properties(device).L2_cache_size, budget_bytes, calls)


PAPER_WARMUP_CHUNK = 50


def next_paper_warmup_chunk(opts, done, elapsed_s):
    """The paper warm-up's next chunk after done calls took elapsed_s seconds, 0 to stop:
    TimingOptions::next_paper_warmup_chunk."""
    if done >= opts.paper_warmup or elapsed_s >= opts.paper_warmup_budget:
        return 0
    return min(PAPER_WARMUP_CHUNK, opts.paper_warmup - done)


def median_ci_ranks(n):
    """1-based ranks bounding the median's ~95% interval (pkb's median_ci_ranks)."""
    half = 0.98 * math.sqrt(n)
    lo, hi = math.floor(n / 2 - half), math.ceil(n / 2 + 1 + half)
    return min(max(lo, 1), n), min(max(hi, 1), n)


def summarize(values):
    """Median, IQR and the median's 95% CI, exactly as pkb's summarize (worker/timing.cpp)."""
    v, n = sorted(values), len(values)
    if n == 0:
        return {k: 0.0 for k in ("median_us", "mean_us", "min_us", "max_us", "stddev_us", "cv", "q25_us", "q75_us",
                                 "iqr_us", "ci95_low_us", "ci95_high_us", "ci95_half_rel")}

    def quantile(q):
        pos = q * (n - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, n - 1)
        return v[lo] + (pos - lo) * (v[hi] - v[lo])

    mean = sum(v) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else 0.0
    lo, hi = median_ci_ranks(n) if n >= 6 else (1, n)
    med = quantile(0.5)
    return {"median_us": med, "mean_us": mean, "min_us": v[0], "max_us": v[-1], "stddev_us": std,
            "cv": std / mean if mean > 0 else 0.0, "q25_us": quantile(0.25), "q75_us": quantile(0.75),
            "iqr_us": quantile(0.75) - quantile(0.25), "ci95_low_us": v[lo - 1], "ci95_high_us": v[hi - 1],
            "ci95_half_rel": (v[hi - 1] - v[lo - 1]) / (2 * med) if med > 0 else 0.0}


def repetitions_done(opts, reps, pkb, paper, elapsed_s):
    """pkb's stop rule: the CI target after min_reps, the budget after one repetition, or max_reps."""
    if reps >= opts.min_reps and pkb["ci95_half_rel"] <= opts.ci_target and paper["ci95_half_rel"] <= opts.ci_target:
        return "ci_target"
    if reps >= opts.max_reps:
        return "max_reps"
    if reps >= 1 and elapsed_s >= opts.timing_budget:
        return "budget"
    return None


THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80  # power cap, hw slowdown, sw/hw thermal, power brake
THROTTLE_NAMES = {0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
                  0x80: "hw_power_brake_slowdown"}


class Clocks:
    """GPU clocks and throttle reasons through NVML (ctypes; "unavailable" without it), as pkb-rank records them."""

    def __init__(self, device):
        self.note, self.samples, self.seen, self.lib, self.dev = None, [], 0, None, None
        if device.type != "cuda":
            self.note = "unavailable: CPU ranks"
            return
        try:
            lib = ctypes.CDLL("libnvidia-ml.so.1")
            if lib.nvmlInit_v2() != 0:
                raise OSError("nvmlInit failed")
            props, dev = torch.cuda.get_device_properties(device), ctypes.c_void_p()
            if hasattr(props, "pci_bus_id"):
                bus = f"{getattr(props, 'pci_domain_id', 0):08x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
                rc = lib.nvmlDeviceGetHandleByPciBusId_v2(bus.encode(), ctypes.byref(dev))
            else:
                rc = lib.nvmlDeviceGetHandleByUUID(f"GPU-{props.uuid}".encode(), ctypes.byref(dev))
            if rc != 0:
                raise OSError("NVML does not know this rank's GPU")
            self.lib, self.dev = lib, dev
        except (OSError, AttributeError) as e:
            self.note = f"unavailable: {e}"

    def sample(self, rep, when):
        if not self.lib:
            return
        s, v, r = {"rep": rep, "when": when}, ctypes.c_uint(), ctypes.c_ulonglong()
        for key, clock in (("sm_mhz", 1), ("mem_mhz", 2)):
            if self.lib.nvmlDeviceGetClockInfo(self.dev, clock, ctypes.byref(v)) == 0:
                s[key] = v.value
        if self.lib.nvmlDeviceGetTemperature(self.dev, 0, ctypes.byref(v)) == 0:
            s["temp_c"] = v.value
        if self.lib.nvmlDeviceGetPowerUsage(self.dev, ctypes.byref(v)) == 0:
            s["power_w"] = v.value / 1000
        if self.lib.nvmlDeviceGetCurrentClocksThrottleReasons(self.dev, ctypes.byref(r)) == 0:
            s["reasons"] = hex(r.value)
            self.seen |= r.value & THROTTLE_MASK
        self.samples.append(s)

    def to_json(self):
        if not self.lib:
            return {"available": False, "note": self.note}
        return {"available": True, "throttled": self.seen != 0,
                "throttle_reasons": [n for b, n in sorted(THROTTLE_NAMES.items()) if self.seen & b],
                "samples": self.samples}


def host_probe_us():
    """Microseconds for a fixed chain of dependent integer operations in the interpreter: the host's speed as the
    dispatching thread sees it (pkb-rank's host_probe_us runs a machine-code chain, so the two differ in scale)."""
    x, t0 = 0x9E3779B9, time.perf_counter()
    for _ in range(2000):
        x = (x * 1103515245 + 12345) & 0xFFFFFFFF
    return 1e6 * (time.perf_counter() - t0)


class EagerGate:
    """The calls' windows through the call gate's flags on two streams of this process (libpkb_eager_gate.so,
    harness/src/runtime/eager_gate.cu): the instrument of the libtorch baseline's gated view, so that a candidate in a
    runner and both baselines pay the same flag operations (docs/design/runner-and-gate.md, the gate's toll)."""

    def __init__(self, path, device, windows):
        lib = ctypes.CDLL(path)
        lib.pkb_eager_gate_open.restype = ctypes.c_void_p
        lib.pkb_eager_gate_open.argtypes = [ctypes.c_int, ctypes.c_int]
        for f in (lib.pkb_eager_gate_begin, lib.pkb_eager_gate_end):
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
        lib.pkb_eager_gate_elapsed_us.restype = ctypes.c_double
        lib.pkb_eager_gate_elapsed_us.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.pkb_eager_gate_error.restype = ctypes.c_char_p
        lib.pkb_eager_gate_flags.restype = ctypes.c_char_p
        lib.pkb_eager_gate_flags.argtypes = [ctypes.c_void_p]
        self.lib = lib
        index = device.index if device.index is not None else torch.cuda.current_device()
        self.gate = lib.pkb_eager_gate_open(index, windows)
        if not self.gate:
            raise RuntimeError(f"the eager gate ({path}): {self.error()}")
        self.flags = lib.pkb_eager_gate_flags(self.gate).decode()

    def error(self):
        return self.lib.pkb_eager_gate_error().decode(errors="replace")

    def _stream(self):
        return ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)

    def begin(self, i):
        if self.lib.pkb_eager_gate_begin(self.gate, i, self._stream()) != 0:
            raise RuntimeError(f"the eager gate: {self.error()}")

    def end(self, i):
        if self.lib.pkb_eager_gate_end(self.gate, i, self._stream()) != 0:
            raise RuntimeError(f"the eager gate: {self.error()}")

    def elapsed_us(self, i):
        us = self.lib.pkb_eager_gate_elapsed_us(self.gate, i)
        if us < 0:
            raise RuntimeError(f"the eager gate: {self.error()}")
        return us


def time_solution(solution, args, opts, device):
    """Times solution() with both of pkb's methods, as pkb-rank times references and candidates
    (harness/src/worker/timing.h): warm-ups, then repetitions of a pkb block (a cross-rank barrier before each
    call: an all-reduce of one element on the stream, untimed; per-call events; slowest rank per call) and a paper
    block (calls back to back, per-call events, per-rank mean, maximum over ranks), alternating which goes first,
    until both medians' CIs are within the target, the budget is spent or max_reps ran. Inputs rotate over copies
    exceeding 3x L2; host clocks on CPU."""
    timing = ReferenceTiming(solution, args, opts, device)
    timing.warm_up()
    return timing.repeat_until_done()


class ReferenceTiming:
    """One timing's state: the input copies, the instruments (events, the eager gate or host clocks), the values
    each method collected and the device view's hold. The stages are time_solution's, in order."""

    def __init__(self, solution, args, opts, device):
        self.solution, self.opts, self.device = solution, opts, device
        self.copies = [args] + [[a.clone() if isinstance(a, torch.Tensor) else a for a in args]
                                for _ in range(rotation_copies(args, device, opts) - 1)]
        self.token = torch.zeros(1, device=device)
        self.cuda = device.type == "cuda"
        self.clocks = Clocks(device)
        self.longest_issue_us = 0.0  # the host's time to issue one warm-up call: sizes the device view's hold
        self.paper_warmup = 0
        self.pkb_values, self.paper_values, self.device_values = [], [], []
        self.device_calls, self.device_unheld = 0, 0
        self.device_view = self.cuda and opts.device_iters > 0
        self.device_on = self.device_view  # until a block holds no call
        self.gate = None

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def call(self, k):
        self.solution(*self.copies[k % len(self.copies)])

    def pkb_warmup(self):  # at the start, and again after each --rep-gap-ms pause
        for i in range(self.opts.warmup):
            dist.all_reduce(self.token)
            h0 = time.perf_counter()
            self.call(i)
            self.longest_issue_us = max(self.longest_issue_us, 1e6 * (time.perf_counter() - h0))

    def warm_up(self):
        """The pkb warm-up, then (as pkb-rank) the paper warm-up in synchronized chunks until paper_warmup ran or its
        budget is spent, rank 0's clock deciding for every rank (the calls hold collectives); then the instruments."""
        opts, device = self.opts, self.device
        self.pkb_warmup()
        w0 = time.monotonic()
        while True:
            chunk = torch.tensor([next_paper_warmup_chunk(opts, self.paper_warmup, time.monotonic() - w0)],
                                 dtype=torch.int64, device=device)
            dist.broadcast(chunk, 0)
            if int(chunk.item()) == 0:
                break
            for _ in range(int(chunk.item())):
                self.call(opts.warmup + self.paper_warmup)
                self.paper_warmup += 1
            self.sync()
        self.sync()
        dist.barrier()
        longest = max(opts.iters, opts.paper_iters, opts.device_iters if self.device_view else 0)
        if self.cuda:
            self.starts = [torch.cuda.Event(enable_timing=True) for _ in range(longest)]
            self.ends = [torch.cuda.Event(enable_timing=True) for _ in range(longest)]
        if self.cuda and opts.gate_lib:
            self.gate = EagerGate(opts.gate_lib, device, longest)
        self.hold_us = initial_hold_us(self.longest_issue_us)
        self.cycles_per_us = sm_cycles_per_us(device) if self.device_view else 0

    def timed_calls(self, count, base, barrier):
        """count calls from copy base on, each by the gate's windows, events or the host clock; their times (us)."""
        times = []
        for i in range(count):
            if barrier:
                dist.all_reduce(self.token)
            if self.gate:
                self.gate.begin(i)
                self.call(base + i)
                self.gate.end(i)
            elif self.cuda:
                self.starts[i].record()
                self.call(base + i)
                self.ends[i].record()
            else:
                t0 = time.perf_counter()
                self.call(base + i)
                times.append(1e6 * (time.perf_counter() - t0))
        self.sync()
        if self.gate:
            return [self.gate.elapsed_us(i) for i in range(count)]
        if self.cuda:
            return [1e3 * self.starts[i].elapsed_time(self.ends[i]) for i in range(count)]
        return times

    def pkb_block(self, base):
        mine = torch.tensor(self.timed_calls(self.opts.iters, base, True), dtype=torch.float64, device=self.device)
        gathered = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, mine)
        self.pkb_values.extend(torch.stack(gathered).max(dim=0).values.cpu().tolist())

    def paper_block(self, base):
        dist.barrier()
        dist.all_reduce(self.token)  # every rank starts together, then no barrier until the end
        times = self.timed_calls(self.opts.paper_iters, base, False)
        mean = torch.tensor([sum(times) / len(times)], dtype=torch.float64, device=self.device)
        dist.all_reduce(mean, op=dist.ReduceOp.MAX)
        self.paper_values.append(mean.item())

    def device_block(self):
        """The device view (worker/timing.h): every call behind a hold (torch.cuda._sleep, in SM cycles), the device
        barrier after it, and a call counts when no rank's GPU had reached its start before the host issued it."""
        opts, held = self.opts, []
        for i in range(opts.device_iters):
            k = opts.warmup + opts.paper_warmup + self.device_calls
            self.device_calls += 1
            torch.cuda._sleep(int(self.hold_us * self.cycles_per_us))
            dist.all_reduce(self.token)
            self.starts[i].record()
            h0 = time.perf_counter()
            self.call(k)
            issue_us = 1e6 * (time.perf_counter() - h0)
            held.append(not self.starts[i].query())
            self.ends[i].record()
            if not held[-1] or 2 * issue_us > self.hold_us:
                self.hold_us = next_hold_us(self.hold_us, issue_us)
        self.sync()
        mine = torch.tensor([1e3 * self.starts[i].elapsed_time(self.ends[i]) if held[i] else -1.0
                             for i in range(opts.device_iters)], dtype=torch.float64, device=self.device)
        gathered = [torch.empty_like(mine) for _ in range(dist.get_world_size())]
        dist.all_gather(gathered, mine)
        every = torch.stack(gathered)
        ok = (every >= 0).all(dim=0)
        self.device_values.extend(every.max(dim=0).values[ok].cpu().tolist())
        self.device_unheld += int((~ok).sum().item())
        if not bool(ok.any()):  # every rank sees the same gathered values, so all stop together
            self.device_on = False

    def repeat_until_done(self):
        """Repetitions (pkb and paper blocks, alternating which goes first; the device block after) until rank 0's
        stop rule ends them; the timing's record."""
        opts = self.opts
        per_rep, reps, stopped, t0, probes = opts.iters + opts.paper_iters, 0, None, time.monotonic(), []
        while stopped is None:
            base = reps * per_rep
            if reps > 0 and opts.rep_gap_ms > 0:  # as pkb-rank: a pause, then the pkb warm-up again
                time.sleep(opts.rep_gap_ms / 1e3)
                self.pkb_warmup()
                self.sync()
                dist.barrier()
            probes.append(host_probe_us())
            self.clocks.sample(reps, "before")
            if reps % 2 == 0:
                self.pkb_block(base)
                self.paper_block(base + opts.iters)
            else:
                self.paper_block(base + opts.iters)
                self.pkb_block(base)
            if self.device_on:
                self.device_block()
            self.clocks.sample(reps, "after")
            reps += 1
            reason = repetitions_done(opts, reps, summarize(self.pkb_values), summarize(self.paper_values),
                                      time.monotonic() - t0)
            code = torch.tensor([["", "ci_target", "max_reps", "budget"].index(reason or "")], device=self.device)
            dist.broadcast(code, 0)  # rank 0 decides for everyone
            stopped = [None, "ci_target", "max_reps", "budget"][int(code.item())]
        return self.record(reps, stopped, probes)

    def record(self, reps, stopped, probes):
        throttled = torch.tensor([1 if self.clocks.seen else 0], device=self.device)
        dist.all_reduce(throttled, op=dist.ReduceOp.MAX)
        stats = summarize(self.pkb_values)
        paper = summarize(self.paper_values)
        paper.update(reps=len(self.paper_values), rep_us=self.paper_values)
        stats.update(method="pkb", iters=len(self.pkb_values), iter_us=self.pkb_values, paper=paper, reps=reps,
                     stopped_by=stopped, paper_warmup_calls=self.paper_warmup, input_copies=len(self.copies),
                     clocks=self.clocks.to_json(), throttled=bool(throttled.item()), host_probe_us=probes,
                     instrument="call_gate_one_process" if self.gate else "events")
        if self.gate:
            stats["gate_flags"] = self.gate.flags
        if self.device_view:
            device_stats = summarize(self.device_values) if self.device_values else {
                "note": f"no call was held on every rank: the GPU started each before the host had issued it (at a "
                        f"{int(self.hold_us)} us hold), so the call waits on the GPU from the host inside"}
            device_stats.update(calls=self.device_calls, unheld=self.device_unheld, hold_us=self.hold_us,
                                call_us=self.device_values)
            stats["device"] = device_stats
        return stats


def sm_cycles_per_us(device):
    """torch.cuda._sleep spins for SM cycles: the device's SM clock in MHz (its maximum where known, so a hold errs
    long; a hold that comes out short only costs unheld calls, which grow it)."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device.index or 0)
        return float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:  # noqa: BLE001 - no NVML: H100/H200's boost clock is ~2 GHz
        return 2000.0


if __name__ == "__main__":
    main()
