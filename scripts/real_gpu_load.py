"""Loads on GPU 0 for ``scripts/real-gpu-check``. Needs PyTorch with CUDA.

    python3 scripts/real_gpu_load.py SECONDS [MODE]

MODE ``busy`` (default): bf16 matrix products (tensor cores) and a 1 GiB device-to-device copy
(DRAM bandwidth) in turn, with 16 GiB held, so that every activity metric and the process list have
something to show. ``light``: small products with pauses (about a fifth of the SMs' time) and 2 GiB
held: a second process beside ``busy``, for the per-process answer key (nvidia-smi pmon). ``pcie``:
host-to-device and device-to-host copies from pinned memory at once, on two streams, printing each
second the bytes it moved each way: the answer key for the PCIe throughput (no driver counter in it).
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


def main() -> None:
    seconds = float(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "busy"
    print(f"load: pid {os.getpid()} {mode}", flush=True)
    {"busy": busy, "light": light, "pcie": pcie}[mode](seconds)


if __name__ == "__main__":
    main()
