"""The reader's field values and GPM metrics: what their fills cost, and what they read (P13, P3'').

    PYTHONSAFEPATH=1 PYTHONPATH=<tree> .venv/bin/python benchmarks/bench_fields.py [--dump FILE]

Timing: on 8 simulated H100s (``training``, every metric demanded, as serve reads), the fill of
each field batch and each GPM answer on its last answer, as a tick runs them: best of 7 rounds of
2000 ticks, in µs a tick. The driver's calls are not in it (they were made once, before).

``--dump FILE``: every value, state, NVLink link and lower bound of 12 ticks of two real-driver
recordings (tests/recordings, replayed) and three simulations, as JSON, to compare two trees'
reading field by field (``cmp`` the two files). A GB10's memory is this machine's own, read at the
time: it differs between runs.
"""

from __future__ import annotations

import argparse
import json
import timeit
from pathlib import Path

import trayvml
from trayvml.core.clock import ManualClock
from trayvml.nvml.sim import parse_spec
from trayvml.source import Source

RECORDINGS = Path(__file__).resolve().parent.parent / "tests" / "recordings"
TICKS = 2000
SPECS = (
    f"replay={RECORDINGS / 'h100-580-busy.jsonl'}",
    f"replay={RECORDINGS / 'h200-580-busy.jsonl'}",
    "training:gpus=h100*2+rtx4090,start=1800",
    "idle:gpus=gb10+laptop,start=100",
    "training:gpus=h100*2,start=1800",
)


def timing() -> None:
    clock = ManualClock(1_795_000_000.0)
    source = Source(parse_spec("training:gpus=h100*8,start=1800,past=0"), clock, host=False)
    try:
        for _ in range(3):
            source.sample()
            clock.advance_s(1)
        reader = source.reader
        scheduler = reader.scheduler
        gpus = reader._gpus or []
        batches = [(g, op.batch) for g in gpus for op in g.active if op.batch is not None]
        gpm = [(g, op, op.call(g.handle)) for g in gpus for op in g.active if op.name == "nvmlGpmMetricsGet"]

        def fill_fields() -> None:
            for g, batch in batches:
                scheduler._fill_fields(g, batch)

        def fill_gpm() -> None:
            for g, op, answer in gpm:
                op.fill(g, answer)

        fields = sum(len(batch.fields) for _, batch in batches)
        best = min(timeit.repeat(fill_fields, number=TICKS, repeat=7)) / TICKS
        print(f"field batches of 8 GPUs ({len(batches)} batches, {fields} fields): {best * 1e6:.1f} µs a tick")
        best = min(timeit.repeat(fill_gpm, number=TICKS, repeat=7)) / TICKS
        print(f"GPM answers of 8 GPUs: {best * 1e6:.1f} µs a tick")
    finally:
        source.close()


def dump(path: Path) -> None:
    rows = []
    for spec in SPECS:
        clock = ManualClock(1_795_000_000.0)
        # A replay answers as recorded, on the machine's clock; a simulation follows ``clock``.
        source = (
            Source(parse_spec(spec), host=False)
            if spec.startswith("replay")
            else Source(parse_spec(spec), clock, host=False)
        )
        try:
            for _ in range(12):
                sample = source.sample()
                clock.advance_s(1.0)
                for g in sample.gpus:
                    links = g.nvlink_link_tx_bytes_per_s + g.nvlink_link_rx_bytes_per_s
                    row: list[str | None] = [None if v != v else repr(v) for v in g.values]
                    row += [state.name for state in g.states]
                    row += [repr(x) for x in links]
                    row += sorted(g.lower_bounds)
                    rows.append(row)
        finally:
            source.close()
    path.write_text(json.dumps(rows))
    print(f"{len(rows)} GPU samples written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help="write what is read to this JSON file instead of timing")
    args = parser.parse_args()
    print(f"trayvml from {trayvml.__file__}")
    if args.dump:
        dump(args.dump)
    else:
        timing()


if __name__ == "__main__":
    main()
