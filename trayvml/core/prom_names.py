"""Names in the Prometheus exposition (``trayvml serve``, and read back from a remote host).

Each catalog metric says its own name (``Metric.prom``, ``Metric.counter`` in
``trayvml/core/metrics.py``); this module holds the rules that follow from Prometheus's
conventions alone: one prefix, the base unit in the name (:data:`UNIT_SUFFIX`), ratios 0-1 instead
of percent, hertz instead of MHz (:func:`per_base_unit`), and counters (values that only grow)
ending in ``_total``; and the names of the series that are not catalog metrics.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from trayvml.core.metrics import Metric
from trayvml.core.units import Unit

PREFIX = "trayvml_"


@dataclass(frozen=True)
class PromName:
    name: str  # without the prefix
    counter: bool = False  # a value that only grows (until the driver reloads): exposed as *_total

    @property
    def full(self) -> str:
        """The name a scrape shows (a counter's family is named without ``_total``; its sample with)."""
        return PREFIX + self.name + ("_total" if self.counter else "")

    @property
    def family(self) -> str:
        return PREFIX + self.name


# The base unit a served name ends in, by the catalog's unit; a unit without one (a count, a
# P-state, a flag) adds nothing, and the catalog's name says what is counted.
UNIT_SUFFIX: Mapping[Unit, str] = {
    Unit.PERCENT: "_ratio",
    Unit.BYTES: "_bytes",
    Unit.BYTES_PER_S: "_bytes_per_second",
    Unit.CELSIUS: "_celsius",
    Unit.WATTS: "_watts",
    Unit.JOULES: "_joules",
    Unit.MHZ: "_hertz",
    Unit.LANES: "_lanes",
}


def name_of(metric: Metric) -> PromName | None:
    """The name a catalog metric is served under (``Metric.prom`` with its unit's suffix); None: not served."""
    if metric.prom is None:
        return None
    return PromName(metric.prom + UNIT_SUFFIX.get(metric.unit, ""), metric.counter)


# Series that are not catalog metrics.
# 1: the GPU values are current; 0: not, and DOWN_INFO says why. No label of its own but the host's:
# a label whose value changes starts a series anew, and avg_over_time(trayvml_up[1d]) broke at each.
UP = PREFIX + "up"
DOWN_INFO = PREFIX + "down_info"  # while UP is 0, its ``reason`` label (trayvml before 0.1: UP's own)
GPU_INFO = PREFIX + "gpu_info"
# Its ``state`` label, where a GPU is not answering for a reason of its own (absent otherwise).
GPU_STATE_LABEL = "state"
GPU_LOST = "lost"
GPU_ASLEEP = "asleep"
# On a MIG device's info series: the index of the GPU it is carved from, and its GPU instance id.
MIG_PARENT_LABEL = "mig_parent_index"
GPU_INSTANCE_LABEL = "gpu_instance_id"
GPU_RESTING = "resting"  # an idle laptop GPU the reader let go of NVML for (read again every so often)
# Which job each GPU process works for: an info series of its own, so that the job (a notebook's
# path, a container) is never a label of the frequent series, whose cardinality it would multiply.
PROCESS_JOB_INFO = PREFIX + "process_job_info"
# 1 with a ``scenario`` label when the GPUs served are simulated (``--simulate``), 0 for real ones: a
# reader (trayvml's remote hosts, a dashboard) can tell made-up numbers from real ones.
SIMULATED = PREFIX + "simulated"
MEMORY_TOTAL = PromName("gpu_memory_total_bytes")  # a DeviceInfo fact, needed to turn memory into a ratio
PROCESS_MEMORY = PromName("gpu_process_memory_used_bytes")
SAMPLE_TIME = PromName("sample_timestamp_seconds")  # when the values served were read


def per_base_unit(unit: Unit) -> float:
    """How many of the catalog's unit make one Prometheus base unit: divide by it to serve, multiply
    to read back (percent -> ratio: 100; MHz -> Hz: 1e-6). Division keeps 94 % as 0.94 exactly."""
    if unit is Unit.PERCENT:
        return 100.0
    if unit is Unit.MHZ:
        return 1e-6
    return 1.0
