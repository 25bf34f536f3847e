"""A steady load on GPU 0 for ``scripts/real-gpu-check``: bf16 matrix products (tensor cores) and a
1 GiB device-to-device copy (DRAM bandwidth) in turn, with 16 GiB held, so that every activity metric
and the process list have something to show. Needs PyTorch with CUDA.

    python3 scripts/real_gpu_load.py SECONDS
"""

import os
import sys
import time

import torch


def main() -> None:
    seconds = float(sys.argv[1])
    print(f"load: pid {os.getpid()}", flush=True)
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


if __name__ == "__main__":
    main()
