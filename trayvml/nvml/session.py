"""The NVML session: start, stop, retry while NVML is unavailable, the XID event set, and the
one place that says what a failed call means (:func:`classify`)."""

from __future__ import annotations

import ctypes
import logging
from typing import Any

import pynvml as N

from trayvml.core.errors import NvmlUnavailable, UnavailableReason
from trayvml.core.sample import MetricState

log = logging.getLogger(__name__)

RETRY_PERIOD_S = 10.0  # how often to try NVML again when it could not start
_MAX_SHUTDOWNS = 16  # nvmlShutdown calls to balance inits made elsewhere in this process
XID_EVENTS_PER_READ = 64  # bounded: a storm of XIDs must not stall the sampler

# Errors that mean NVML as a whole is unusable, not one metric.
FATAL = frozenset(
    {
        N.NVML_ERROR_UNINITIALIZED,
        N.NVML_ERROR_DRIVER_NOT_LOADED,
        N.NVML_ERROR_LIB_RM_VERSION_MISMATCH,
        N.NVML_ERROR_LIBRARY_NOT_FOUND,
    }
)
PERMANENT = frozenset({N.NVML_ERROR_NOT_SUPPORTED, N.NVML_ERROR_FUNCTION_NOT_FOUND})
_UNAVAILABLE_REASONS = {
    N.NVML_ERROR_LIBRARY_NOT_FOUND: UnavailableReason.LIBRARY_NOT_FOUND,
    N.NVML_ERROR_DRIVER_NOT_LOADED: UnavailableReason.DRIVER_NOT_LOADED,
    N.NVML_ERROR_LIB_RM_VERSION_MISMATCH: UnavailableReason.VERSION_MISMATCH,
    N.NVML_ERROR_NO_PERMISSION: UnavailableReason.NO_PERMISSION,
}


class NvmlDownError(Exception):
    """NVML as a whole stopped working; the reader shuts it down and retries later."""

    def __init__(self, code: int) -> None:
        error = N.NVMLError(code)
        super().__init__(str(error))
        self.why = unavailable_from(error)


def unavailable_from(error: N.NVMLError) -> NvmlUnavailable:
    reason = _UNAVAILABLE_REASONS.get(error.value, UnavailableReason.OTHER)
    return NvmlUnavailable(reason, str(error))


def classify(code: int) -> MetricState:
    """What a failed NVML call (or one field of a call) means for what it reads.

    LOST: the GPU fell off the bus. NOT_SUPPORTED: for good, do not ask again (an older variant
    may answer). NO_PERMISSION or NO_DATA: this sample only. Raises NvmlDownError where NVML as a
    whole is gone.
    """
    if code in FATAL:
        raise NvmlDownError(code)
    if code == N.NVML_ERROR_GPU_IS_LOST:
        return MetricState.LOST
    if code in PERMANENT:
        return MetricState.NOT_SUPPORTED
    if code == N.NVML_ERROR_NO_PERMISSION:
        return MetricState.NO_PERMISSION
    return MetricState.NO_DATA


def handle_value(handle: Any) -> int:
    return ctypes.cast(handle, ctypes.c_void_p).value or 0


class NvmlSession:
    def __init__(self) -> None:
        self.unavailable: NvmlUnavailable | None = None
        self.next_retry_s = 0.0
        self.started = False
        self._event_set: Any = None
        # The NVML function being called: read from another thread to say which call is stuck.
        self.current_call = ""

    def start(self, now_s: float) -> bool:
        """nvmlInit; False (with ``unavailable`` set and a retry planned) where it fails."""
        self.current_call = "nvmlInit"
        try:
            N.nvmlInit()
        except N.NVMLError as error:
            self.unavailable = unavailable_from(error)
            self.next_retry_s = now_s + RETRY_PERIOD_S
            return False
        self.started = True
        return True

    def fail(self, why: NvmlUnavailable, now_s: float) -> None:
        """Give up on this session: stop, say why, and try again in RETRY_PERIOD_S."""
        self.stop()
        self.unavailable = why
        self.next_retry_s = now_s + RETRY_PERIOD_S

    def stop(self) -> None:
        self.started = False
        try:
            if self._event_set is not None:
                N.nvmlEventSetFree(self._event_set)
            N.nvmlShutdown()
        except N.NVMLError:
            pass  # already gone: nothing left to release
        self._event_set = None

    def release(self) -> None:
        """nvmlShutdown until NVML's init count is back to zero (bounded): nothing holds the GPUs."""
        for _ in range(_MAX_SHUTDOWNS):
            try:
                N.nvmlShutdown()
            except N.NVMLError:
                break  # UNINITIALIZED: balanced
        self.started = False

    # ---- XID errors ----
    def create_event_set(self) -> None:
        try:
            self._event_set = N.nvmlEventSetCreate()
        except N.NVMLError:
            self._event_set = None

    def register_xid_events(self, handle: Any) -> MetricState:
        """OK, or the state of the XID metrics where this GPU cannot report them (LOST: the GPU)."""
        if self._event_set is None:
            return MetricState.NOT_SUPPORTED
        try:
            N.nvmlDeviceRegisterEvents(handle, N.nvmlEventTypeXidCriticalError, self._event_set)
        except N.NVMLError as error:
            return classify(error.value)
        return MetricState.OK

    def drain_xid_events(self) -> list[tuple[int, int]]:
        """(handle value, XID) of each event since the last call."""
        if self._event_set is None:
            return []
        self.current_call = "nvmlEventSetWait_v2"
        events = []
        for _ in range(XID_EVENTS_PER_READ):
            try:
                data = N.nvmlEventSetWait_v2(self._event_set, 0)
            except N.NVMLError as error:
                classify(error.value)  # raises where NVML as a whole is gone
                break  # TIMEOUT: no more events
            events.append((handle_value(data.device), int(data.eventData)))
        return events
