"""What a real driver does when the wall clock is set back and then forward again, for
``scripts/real-gpu-check``'s ``clockstep`` step. Run it as root on a lent GPU machine only: it sets
this machine's clock back STEP_S seconds and puts it right again (by CLOCK_BOOTTIME, which no
setting moves), also when it fails part-way.

    python3 scripts/real_gpu_clockstep.py [STEP_S] [HOLD_S]

nvml.h calls the driver's stamps "CPU timestamp[s] ... since 1970": which clock, and whether a step
of the wall clock moves them, is what trayvml's reader (nvml/schedule.py) and the simulated driver
must get right. This asks the driver, with a process busy on the GPU: the field values' timestamps,
the process utilization samples asked since the last one seen and since 0, and GPM's metrics
between samples taken a second apart. It prints one JSON object per probe, each with the wall and
boot-time clocks. (An H100 on 580.159.04: tests/recordings/h100-580-clockstep.probe.txt.)
"""

from __future__ import annotations

import json
import signal
import sys
import time

import pynvml as N

from trayvml.nvml.gpm import GpmSampler

FIELDS = {
    "energy": N.NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION,
    "power_instant": N.NVML_FI_DEV_POWER_INSTANT,
    "pcie_replay": N.NVML_FI_DEV_PCIE_REPLAY_COUNTER,
    "pcie_tx_bytes": N.NVML_FI_DEV_PCIE_COUNT_TX_BYTES,
}


def boot_s() -> float:
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def say(phase: str, **values: object) -> None:
    print(json.dumps({"phase": phase, "wall_s": round(time.time(), 6), "boot_s": round(boot_s(), 6), **values}))


def fields(handle: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for (name, _), value in zip(FIELDS.items(), N.nvmlDeviceGetFieldValues(handle, list(FIELDS.values())), strict=True):
        out[name] = {"ret": value.nvmlReturn, "stamp_us": value.timestamp, "value_u64": value.value.ullVal}
    return out


def utilization(handle: object, since_us: int) -> object:
    try:
        samples = N.nvmlDeviceGetProcessUtilization(handle, since_us)
    except N.NVMLError as error:
        return {"error": str(error), "code": error.value}
    return [{"pid": s.pid, "stamp_us": s.timeStamp, "sm": s.smUtil, "mem": s.memUtil} for s in samples]


def newest(answer: object, default: int) -> int:
    return max((s["stamp_us"] for s in answer), default=default) if isinstance(answer, list) else default


def gpm(sampler: GpmSampler, handle: object) -> object:
    try:
        answer = sampler.read(handle)
    except N.NVMLError as error:
        return {"error": str(error)}
    if answer is None:
        return None
    codes, values = answer
    ids = [read.metric_id for read in sampler.reads]
    return {int(m): [int(r), float(v)] for m, r, v in zip(ids, codes, values, strict=True)}


def probe(phase: str, handle: object, since_us: int, sampler: GpmSampler) -> int:
    since = utilization(handle, since_us)
    latest = utilization(handle, 0)
    say(phase, fields=fields(handle), since_us=since_us, util_since=since, util_latest=latest, gpm=gpm(sampler, handle))
    return max(newest(since, since_us), newest(latest, since_us))


def main() -> int:
    step_s = float(sys.argv[1]) if len(sys.argv) > 1 else 3600.0
    hold_s = float(sys.argv[2]) if len(sys.argv) > 2 else 4.0
    # `timeout` ends this with SIGTERM: as an exception, so that the clock is put right (finally).
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(1))
    N.nvmlInit()
    handle = N.nvmlDeviceGetHandleByIndex(0)
    sampler = GpmSampler()
    wall0, boot0 = time.time(), boot_s()  # the right time is wall0 + (boot_s() - boot0) throughout
    seen = 0
    try:
        for _ in range(3):
            seen = probe("before", handle, seen, sampler)
            time.sleep(1)
        time.clock_settime(time.CLOCK_REALTIME, wall0 + (boot_s() - boot0) - step_s)
        say("set back", step_s=step_s)
        end = boot_s() + hold_s
        while boot_s() < end:
            seen = probe("back", handle, seen, sampler)
            time.sleep(1)
    finally:
        time.clock_settime(time.CLOCK_REALTIME, wall0 + (boot_s() - boot0))
        say("set right")
    for _ in range(3):
        seen = probe("after", handle, seen, sampler)
        time.sleep(1)
    sampler.free()
    N.nvmlShutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
