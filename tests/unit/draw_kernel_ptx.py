#!/usr/bin/env python3
"""The GPU's input generator must give the host's bits (core/element_draw.h), which holds only if nvcc fuses no
multiply with an add: a fused multiply-add rounds once where the host rounds twice. Compiles the generator's kernel
at -O3 to PTX and fails on any fma or mad, and on any multiply without an explicit rounding mode (PTX lets the
code generator fuse an unmodified mul with a following add). Usage: draw_kernel_ptx.py NVCC SOURCE INCLUDE_DIR"""
import re
import subprocess
import sys
import tempfile

nvcc, source, include = sys.argv[1:4]
with tempfile.TemporaryDirectory() as tmp:
    ptx_path = f"{tmp}/draw.ptx"
    subprocess.run([nvcc, "-O3", "-arch=sm_90", "-std=c++17", "-I", include, "-ptx", source, "-o", ptx_path],
                   check=True)
    ptx = open(ptx_path).read()
entry = re.search(r"\.entry\s+(\S*draw_kernel_under_test\S*)\(", ptx)
if not entry:
    sys.exit("no draw kernel in the PTX")
body = ptx[entry.start():ptx.find("\n}\n", entry.start())]
fused = re.findall(r"\b(?:fma|mad)\.[\w.]*f(?:32|64)\b", body)
unrounded = re.findall(r"\bmul\.f64\b", body)
rounded = re.findall(r"\b(?:mul|add|div|sqrt)\.rn\.f64\b", body)
print(f"draw kernel: {len(body.splitlines())} PTX lines, {len(rounded)} explicitly rounded f64 operations, "
      f"{len(fused)} fused, {len(unrounded)} f64 multiplies without a rounding mode")
if not rounded:
    sys.exit("the kernel has no rounded f64 operations: is the normal draw missing?")
if fused or unrounded:
    sys.exit(f"the generator may not give the host's bits on the GPU: {sorted(set(fused + unrounded))}")
