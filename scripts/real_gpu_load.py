"""Loads on GPU 0 for ``scripts/real-gpu-check``. Needs PyTorch with CUDA.

    python3 scripts/real_gpu_load.py SECONDS [MODE]

MODE ``busy`` (default): bf16 matrix products (tensor cores) and a 1 GiB device-to-device copy
(DRAM bandwidth) in turn, with 16 GiB held, so that every activity metric and the process list have
something to show. ``light``: small products with pauses (about a fifth of the SMs' time) and 2 GiB
held: a second process beside ``busy``, for the per-process answer key (nvidia-smi pmon). ``pcie``:
host-to-device and device-to-host copies from pinned memory at once, on two streams, printing each
second the bytes it moved each way: the answer key for the PCIe throughput (no driver counter in it).
``fp`` (needs CuPy): FP64, FP32 and FP16 multiply-add loops in turn, for GPM's FP64, FP32 and FP16
activity (the busy load's bf16 products run on the tensor cores: 0 in all three).
"""

import os
import sys
import time

import torch


def busy(seconds: float) -> None:
    held = torch.empty(16 * 2**30, dtype=torch.uint8, device="cuda")  # memory.used shows it
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    source = torch.empty(2**30, dtype=torch.uint8, device="cuda")
    target = torch.empty_like(source)
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        for _ in range(4):
            a @ b
        target.copy_(source)
        torch.cuda.synchronize()
        rounds += 1
    print(f"load: {rounds} rounds, {held.numel() >> 30} GiB held", flush=True)


def light(seconds: float) -> None:
    held = torch.empty(2 * 2**30, dtype=torch.uint8, device="cuda")
    a = torch.randn(2048, 2048, device="cuda")
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        began = time.monotonic()
        for _ in range(20):
            a @ a
        torch.cuda.synchronize()
        time.sleep(4 * (time.monotonic() - began))  # busy a fifth of the time
    print(f"load: light, {held.numel() >> 30} GiB held", flush=True)


def pcie(seconds: float) -> None:
    size = 256 * 2**20
    host_in = torch.empty(size, dtype=torch.uint8).pin_memory()
    host_out = torch.empty(size, dtype=torch.uint8).pin_memory()
    device_in = torch.empty(size, dtype=torch.uint8, device="cuda")
    device_out = torch.empty(size, dtype=torch.uint8, device="cuda")
    up, down = torch.cuda.Stream(), torch.cuda.Stream()
    end = time.monotonic() + seconds
    second = time.monotonic()
    h2d = d2h = 0
    while time.monotonic() < end:
        with torch.cuda.stream(up):
            device_in.copy_(host_in, non_blocking=True)
        with torch.cuda.stream(down):
            host_out.copy_(device_out, non_blocking=True)
        up.synchronize()
        down.synchronize()
        h2d += size
        d2h += size
        now = time.monotonic()
        if now - second >= 1.0:
            # Wall-clock stamp: nvidia-smi's and the recording's lines are matched by it.
            spent = now - second
            print(f"pcie: {time.time():.3f} h2d {h2d / spent:.0f} d2h {d2h / spent:.0f} B/s", flush=True)
            second, h2d, d2h = now, 0, 0


# FP64, FP32 and FP16 multiply-adds in a loop on values held in registers: the FMA pipes busy, no
# tensor cores (a float64 product runs on them on Hopper: GPM counts it as tensor activity) and no
# upcast (PyTorch computes half element-wise ops in float).
FMA_KERNELS = r"""
#include <cuda_fp16.h>
extern "C" __global__ void f64(double* x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; double a = x[i];
    for (int k = 0; k < 8192; k++) a = fma(a, 0.999, 0.001);
    x[i] = a;
}
extern "C" __global__ void f32(float* x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; float a = x[i];
    for (int k = 0; k < 8192; k++) a = fmaf(a, 0.999f, 0.001f);
    x[i] = a;
}
extern "C" __global__ void f16(__half2* x) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; __half2 a = x[i];
    const __half2 m = __float2half2_rn(0.999f), c = __float2half2_rn(0.001f);
    for (int k = 0; k < 2048; k++) a = __hfma2(a, m, c);  // a shorter loop: FP16's share told from FP64's
    x[i] = a;
}
"""


def fp(seconds: float) -> None:
    import cupy

    module = cupy.RawModule(code=FMA_KERNELS)
    threads, blocks = 256, 132 * 64
    buffers = {
        name: cupy.full(threads * blocks * (2 if name == "f16" else 1), 0.5, dtype)
        for name, dtype in (("f64", cupy.float64), ("f32", cupy.float32), ("f16", cupy.float16))
    }
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        for name, buffer in buffers.items():
            module.get_function(name)((blocks,), (threads,), (buffer,))
        cupy.cuda.Device().synchronize()
        rounds += 1
    print(f"load: fp, {rounds} rounds", flush=True)


def main() -> None:
    seconds = float(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "busy"
    print(f"load: pid {os.getpid()} {mode}", flush=True)
    {"busy": busy, "light": light, "pcie": pcie, "fp": fp}[mode](seconds)


if __name__ == "__main__":
    main()
