"""What changes under a running monitor: NVML going away and coming back, the set of GPUs changing."""

from __future__ import annotations

import pynvml as N

from tests.helpers import simulated_source
from tests.ui_helpers import open_menu
from trayvml.commands.csvlog import CsvLog, parse_fields
from trayvml.core.errors import UnavailableReason
from trayvml.history.timeline import History

RETRY_S = 10.0  # the reader tries NVML again this often (trayvml/nvml: RETRY_PERIOD_S)


def test_a_log_writes_whole_rows_while_nvml_goes_away_and_comes_back(tmp_path) -> None:
    source, clock, library = simulated_source("training:gpus=h100*2,start=1800")
    path = tmp_path / "gpus.csv"
    log = CsvLog(str(path), parse_fields("index,utilization.gpu,memory.used"))
    written = [log.append(source.sample())]
    library.fail("nvmlDeviceGetUtilizationRates", N.NVML_ERROR_DRIVER_NOT_LOADED)  # the module unloaded
    gone = []
    for _ in range(3):
        clock.advance_s(1.0)
        sample = source.sample()
        gone.append(sample)
        written.append(log.append(sample))
    library.failures.clear()  # the driver is back
    for _ in range(int(RETRY_S) + 1):
        clock.advance_s(1.0)
        written.append(log.append(source.sample()))
    log.close()
    assert written[:4] == [2, 0, 0, 0]  # no rows of old or made-up values while NVML is away
    for sample in gone:
        assert sample.gpus == () and sample.unavailable is not None
        assert sample.unavailable.reason is UnavailableReason.DRIVER_NOT_LOADED
    assert written[-1] == 2  # back after the retry period
    lines = path.read_text().splitlines()
    assert lines[0] == "index, utilization.gpu [%], memory.used [MiB]"
    assert len(lines) == 1 + sum(written) and all(line.count(",") == 2 for line in lines)


def test_the_history_and_the_tray_follow_a_change_in_the_number_of_gpus(qapp) -> None:
    from trayvml.ui.tray import Tray

    history = History()
    tray = Tray()
    four, clock4, _ = simulated_source("training:gpus=h100*4,start=1800")
    for _ in range(3):
        sample = four.sample()
        history.append(sample)
        tray.update(sample)
        open_menu(tray)
        clock4.advance_s(1.0)
    assert history.gpu_count == 4 and sum(a.isVisible() for a in tray.gpu_actions) == 4
    four.close()  # a driver reload later, only two GPUs answer
    two, clock2, _ = simulated_source("training:gpus=h100*2,start=1800")
    clock2.advance_s(10.0)
    sample = two.sample()
    history.append(sample)
    tray.update(sample)
    open_menu(tray)
    assert history.gpu_count == 2 and sum(a.isVisible() for a in tray.gpu_actions) == 2
    series = history.gpu_series("utilization_gpu_percent", sample.timestamp_s - 60, sample.timestamp_s, 100)
    assert series is not None and series.mean.shape[1] == 2  # one column per GPU there is now
    assert "2 H100" not in tray.icon.toolTip() and "1 H100" in tray.icon.toolTip()


def test_a_counter_that_goes_back_gives_no_rate_for_that_tick_then_rates_again() -> None:
    source, clock, library = simulated_source("training:gpus=h100,start=1800")
    rates = []
    for tick in range(5):
        # A 64-bit counter starts again (the driver reloads) between ticks 2 and 3. (The 32-bit
        # PCIe byte counters wrap instead: tests/test_driver_quirks.py.)
        if tick == 3:
            library.restart_counter(N.NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX)
        rates.append(source.sample().gpus[0].value("nvlink_tx_bytes_per_s"))
        clock.advance_s(1.0)
    assert rates[1] > 0 and rates[2] > 0  # a busy GPU moves bytes
    assert rates[3] != rates[3]  # NaN: not a negative rate (nor, unsigned, a huge one)
    assert 0 < rates[4] < 18 * 50e9  # then per second again, within what 18 NVLink 4 links carry


def test_a_gpu_lost_while_nvml_was_away_keeps_its_name_and_bus_id() -> None:
    source, clock, library = simulated_source("training:gpus=h100*2,start=1800")
    before = source.sample().devices[1]
    library.fail("nvmlDeviceGetUtilizationRates", N.NVML_ERROR_DRIVER_NOT_LOADED)  # the module unloaded
    clock.advance_s(1.0)
    assert source.sample().gpus == ()
    library.failures.clear()
    library.fail("nvmlDeviceGetName", N.NVML_ERROR_GPU_IS_LOST, gpu=1)  # back, but GPU 1 is not
    clock.advance_s(RETRY_S + 1)
    sample = source.sample()
    assert sample.gpus[1].lost
    assert sample.devices[1] == before  # as last read: "NVIDIA H100 …" at its bus id, not "(name unknown)"
