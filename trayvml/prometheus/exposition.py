"""Prometheus exposition of the latest Sample: the collector, the HTTP server with its web config
(basic auth, TLS), and the two together as an Exporter (used by `serve` and the tray app)."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
import socket
import ssl
import stat
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder
from prometheus_client.metrics_core import Metric as PromMetric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from trayvml.core import prom_names as names
from trayvml.core.demand import PROCESS_PERIOD_S
from trayvml.core.errors import TrayvmlError
from trayvml.core.files import read_bounded
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS, Metric
from trayvml.core.sample import GpuSample, MetricState, Sample, simulation_scenario
from trayvml.nvml.specs import read_periods_s
from trayvml.prometheus import DEFAULT_PORT

log = logging.getLogger(__name__)

_GPU_LABELS = ["hostname", "uuid", "index"]
MAX_CONNECTIONS = 16  # connections served at once, each on a thread of its own
IDLE_TIMEOUT_S = 10.0  # a connection that sends nothing for this long is closed (Prometheus sends at once)
MAX_WEB_CONFIG_BYTES = 2**20  # a web config is a few lines of YAML; anything this big is not one
# A web config through a pipe (``--web-config <(gpg -d …)``) may wait on a passphrase typed in.
WEB_CONFIG_PIPE_WAIT_S = 60.0


# ---- what a scrape shows ----
def up_reason(sample: Sample) -> str:
    """ "" when the GPU values are current, else a short machine-readable reason."""
    if sample.stall is not None:
        return "driver_not_responding"
    if sample.unavailable is not None:
        return sample.unavailable.reason.value
    return ""


@dataclass(frozen=True)
class Family:
    """A served metric family: what prometheus-client's family classes are made from."""

    kind: type[GaugeMetricFamily] | type[CounterMetricFamily] | type[InfoMetricFamily]
    name: str
    documentation: str
    labels: tuple[str, ...]

    def build(self) -> PromMetric:
        return self.kind(self.name, self.documentation, labels=list(self.labels))


# A series: its label values, and its value (an info series: its facts, the labels that follow).
Row = tuple[tuple[str, ...], "float | dict[str, str]"]

_UP = Family(
    GaugeMetricFamily,
    names.UP,
    "1 when the GPU values are current, else 0 (trayvml_down_info says why).",
    ("hostname",),
)
_DOWN = Family(
    InfoMetricFamily,
    names.DOWN_INFO[: -len("_info")],
    "Why trayvml_up is 0 (reason: starting, driver_not_responding, or why NVML is unusable); absent while it is 1.",
    ("hostname",),
)
_WHEN = Family(
    GaugeMetricFamily, names.SAMPLE_TIME.family, "When the values served were read (Unix time).", ("hostname",)
)
_SIMULATED = Family(
    GaugeMetricFamily,
    names.SIMULATED,
    "1 when the GPUs served are simulated (trayvml --simulate), 0 when they are real.",
    ("hostname", "scenario"),
)
_INFO = Family(
    InfoMetricFamily,
    names.GPU_INFO[: -len("_info")],
    "Facts about each GPU; state: lost (it fell off the bus), asleep (runtime-suspended, not queried so that it"
    " stays asleep) or resting (an idle laptop GPU not queried between slow polls, so that it may sleep), where it"
    " is, as its other series are then absent for that reason, not for want of support.",
    tuple(_GPU_LABELS),
)
_TOTAL = Family(GaugeMetricFamily, names.MEMORY_TOTAL.family, "Memory total", tuple(_GPU_LABELS))
# The process lists are read less often than the rest (a list costs the driver milliseconds a GPU):
# the process series say so, as the scrape's timestamp is the sample's.
_EVERY = f" (process lists are read every {PROCESS_PERIOD_S:g} s)"
_PROCS = Family(
    GaugeMetricFamily,
    names.PROCESS_MEMORY.family,
    "GPU memory used by each process" + _EVERY,
    (*_GPU_LABELS, "pid", "name", "user", "kind"),
)
_JOBS = Family(
    InfoMetricFamily,
    names.PROCESS_JOB_INFO[: -len("_info")],
    "The job each GPU process works for: its notebook (or Jupyter kernel, its notebook not known), container, "
    "Slurm job, systemd unit, terminal session or process tree (kind says which); job_name: a Slurm job's name, "
    "where known" + _EVERY + ".",
    ("hostname", "pid", "job", "kind"),
)


def series(sample: Sample | None, hostname: str) -> Iterator[tuple[Family, list[Row]]]:
    """What a scrape shows, family by family in the order served; ``hostname`` before the first sample."""
    if sample is None:
        yield _UP, [((hostname,), 0.0)]
        yield _DOWN, [((hostname,), {"reason": "starting"})]
        return
    host = sample.system.hostname if sample.system else hostname
    reason = up_reason(sample)
    yield _UP, [((host,), 0.0 if reason else 1.0)]
    yield _DOWN, [((host,), {"reason": reason})] if reason else []
    yield _WHEN, [((host,), sample.timestamp_s)]
    yield _SIMULATED, [((host, simulation_scenario(sample.simulation)), 1.0 if sample.simulation else 0.0)]
    yield from _gpus(sample, host)
    if sample.host is not None:
        for served, value in zip(_served(HOST_METRICS, ("hostname",)), sample.host.values, strict=True):
            if served is not None:
                family, scale = served
                # NaN: not known yet (a rate's first reading); no series
                yield family, [((host,), value / scale)] if value == value else []


def _not_answering(gpu: GpuSample) -> str:
    """Why a GPU has no values to serve, as the info series' state label says it; "" where it answers."""
    if gpu.lost:
        return names.GPU_LOST
    if gpu.asleep:
        return names.GPU_ASLEEP
    if gpu.resting:
        return names.GPU_RESTING
    return ""


def _gpus(sample: Sample, host: str) -> Iterator[tuple[Family, list[Row]]]:
    driver = sample.system.driver_version if sample.system else ""
    info: list[Row] = []
    total: list[Row] = []
    procs: list[Row] = []
    jobs: list[Row] = []
    shown_jobs: set[int] = set()
    families = _served(GPU_METRICS, tuple(_GPU_LABELS))  # None: a metric not served
    values: list[list[Row]] = [[] for _ in families]
    for gpu, device in zip(sample.gpus, sample.devices, strict=True):
        labels = (host, device.uuid, str(gpu.index))
        facts = {"name": device.name, "driver": driver, "pci_bus_id": device.pci_bus_id}
        if device.mig_parent_index >= 0:  # a MIG device: the board it is carved from (whose
            # memory and processes it shares: summed with the board, they counted twice)
            facts[names.MIG_PARENT_LABEL] = str(device.mig_parent_index)
            facts[names.GPU_INSTANCE_LABEL] = str(device.gpu_instance_id)
        if sample.simulation:  # on the info series only: the frequent series keep their labels
            facts["simulated"] = "true"
        # Not answering: a reader would take its absent series for metrics not supported.
        silent = _not_answering(gpu)
        if silent:
            facts[names.GPU_STATE_LABEL] = silent
        info.append((labels, facts))
        if device.memory_total_bytes == device.memory_total_bytes:
            total.append((labels, device.memory_total_bytes))
        for served, rows, value, state in zip(families, values, gpu.values, gpu.states, strict=True):
            # A value that is not current or not supported has no series: absent is "not known".
            if served is not None and state is MetricState.OK and value == value:
                rows.append((labels, value / served[1]))
        # The processes of a list read now (or held since its last reading): not a list the reader
        # kept of a GPU it no longer reads (a MIG instance destroyed, for up to 10 s a phantom).
        listed = gpu.processes if gpu.state("process_count") is MetricState.OK else ()
        for proc in listed:
            if proc.used_memory_bytes == proc.used_memory_bytes:
                procs.append(((*labels, str(proc.pid), proc.name, proc.user, proc.kind), proc.used_memory_bytes))
            job = proc.attribution
            if job.job and proc.pid not in shown_jobs:  # a process on two GPUs is one job
                shown_jobs.add(proc.pid)
                facts = {"job": job.job, "kind": job.job_kind}
                if job.job_kind == "slurm" and job.slurm_job_name:  # only here: never a frequent series' label
                    facts["job_name"] = job.slurm_job_name
                jobs.append(((host, str(proc.pid)), facts))
    yield _INFO, info
    yield _TOTAL, total
    for served, rows in zip(families, values, strict=True):
        if served is not None:
            yield served[0], rows
    yield _PROCS, procs
    yield _JOBS, jobs


def _every_family() -> Iterator[Family]:
    """Every family a scrape can show, for a registry to know the names (``name[]`` filters)."""
    yield from (_UP, _DOWN, _WHEN, _SIMULATED, _INFO, _TOTAL)
    for served in (*_served(GPU_METRICS, tuple(_GPU_LABELS)), *_served(HOST_METRICS, ("hostname",))):
        if served is not None:
            yield served[0]
    yield from (_PROCS, _JOBS)


_served_cache: dict[tuple[int, tuple[str, ...]], tuple[tuple[Metric, ...], list[tuple[Family, float] | None]]] = {}


def _served(metrics: tuple[Metric, ...], labels: tuple[str, ...]) -> list[tuple[Family, float] | None]:
    """Each catalog metric's family and what its values are divided by to serve them; None: not served.
    Made once per catalog table (a test may serve another)."""
    cached = _served_cache.get((id(metrics), labels))
    if cached is None or cached[0] is not metrics:
        cached = _served_cache[(id(metrics), labels)] = (metrics, [_family(m, labels) for m in metrics])
    return cached[1]


# Served with the sample's time but read less often (as the process series are), the cadences of
# the reader's table (nvml/specs.py): a counter among them steps every few seconds, smooth to a
# rate() over 15 s or more, not to an irate() of 1 s scrapes.
_READ_EVERY_S = read_periods_s()


def _family(metric: Metric, labels: tuple[str, ...]) -> tuple[Family, float] | None:
    name = names.name_of(metric)
    if name is None:
        return None
    kind = CounterMetricFamily if name.counter else GaugeMetricFamily
    text = _help(metric, host=labels == ("hostname",))
    if metric.key in _READ_EVERY_S:
        text += f" (read every {_READ_EVERY_S[metric.key]:g} s)"
    return Family(kind, name.family, text, labels), names.per_base_unit(metric.unit)


def _help(metric: Metric, host: bool) -> str:
    """The catalog's label as a served family's HELP: a percentage is served as a ratio, so "(% of
    time)" said 100 where the series says 1; a host's metric named as the host's ("CPU" alone)."""
    text = metric.label
    if names.per_base_unit(metric.unit) == 100.0:
        text = (
            text.replace("(% of ", "(share of ").replace(")", ", 0 to 1)") if "(% of " in text else f"{text} (0 to 1)"
        )
    if host:
        first = text[0] if text[1:2].isupper() else text[0].lower()  # ("CPU", "RAM" stay as they are)
        text = f"This machine's {first}{text[1:]}"
    return text


class _Families:
    """A collector of ready-made families, for an encoder to render."""

    def __init__(self, families: Iterable[PromMetric]) -> None:
        self._families = families

    def collect(self) -> Iterable[PromMetric]:
        return self._families


class _Renderer:
    """One exposition format's text of a sample, from pieces its prometheus-client encoder rendered.

    Rendering every series through prometheus-client cost about 3 ms for 8 GPUs (its label
    escaping and sorting, each line each time). Here each family's header and each series' name
    and labels are rendered once by the encoder itself and kept while the series is served, so a
    new sample only formats its values (with prometheus-client's own float formatting): the same
    bytes, about 4 times cheaper (tests/test_serve_cache.py checks them against the encoder).
    """

    def __init__(self, encoder: Callable[[Any], bytes]) -> None:
        self._encode = encoder
        self._trailer = encoder(_Families(())).decode()  # "# EOF\n" in OpenMetrics
        self._heads: dict[Family, str] = {}
        # By family name and labels: (the series' name and labels, its last value, its last line).
        self._lines: dict[str, dict[tuple[str, ...], tuple[str, object, str]]] = {}

    def render(self, families: Iterable[tuple[Family, list[Row]]]) -> bytes:
        out: list[str] = []
        # What the next sample starts from: the series shown now, each with its last value and line.
        served: dict[str, dict[tuple[str, ...], tuple[str, object, str]]] = {}
        go = floatToGoString
        for family, rows in families:
            head = self._heads.get(family)
            if head is None:
                head = self._heads[family] = self._text(family.build())
            out.append(head)
            before = self._lines.get(family.name, {})
            now = served[family.name] = {}
            for labels, value in rows:
                if isinstance(value, dict):  # an info series: its facts are labels too; its value is always 1
                    key = (*labels, *value.keys(), *value.values())
                    kept = before.get(key)
                    if kept is None:
                        line = self._line(family, head, labels, value)
                        kept = (line, 1.0, line)
                else:
                    key = labels
                    kept = before.get(key)
                    if kept is None:
                        prefix = self._line(family, head, labels, value, prefix=True)
                        kept = (prefix, value, f"{prefix}{go(value)}\n")
                    elif kept[1] != value or not value:  # 0.0 and -0.0 are equal but read differently
                        kept = (kept[0], value, f"{kept[0]}{go(value)}\n")
                now[key] = kept
                out.append(kept[2])
        self._lines = served
        out.append(self._trailer)
        return "".join(out).encode()

    def _text(self, family: PromMetric) -> str:
        return self._encode(_Families([family])).decode()[: -len(self._trailer) or None]

    def _line(
        self, family: Family, head: str, labels: tuple[str, ...], value: float | dict[str, str], prefix: bool = False
    ) -> str:
        """A series' line as the encoder renders it; ``prefix``: without its value."""
        built = family.build()
        built.add_metric(list(labels), value)  # type: ignore[attr-defined]
        line = self._text(built)[len(head) :]
        if prefix:
            number = f" {floatToGoString(value)}\n"
            assert line.endswith(number), line  # the encoder put the value last, as every format does
            return line[: -len(number) + 1]
        return line


MAX_FORMATS = 4  # formats (content types) kept rendered at once; an Accept header can ask for many


class SampleCollector(Collector):
    """Renders the latest sample; ``latest`` returns it (None before the first read).

    :meth:`collect` gives prometheus-client's families (what its own WSGI app and encoders use);
    :meth:`payload` the bytes of a format for the latest sample, rendered at most once per sample.
    """

    def __init__(self, latest: Callable[[], Sample | None], hostname: str | None = None) -> None:
        self._latest = latest
        self._hostname = hostname or socket.gethostname()
        self._lock = threading.Lock()
        self._renderers: dict[str, _Renderer] = {}
        self._rendered: object = self  # the sample the payloads are of (self: none yet)
        self._payloads: dict[tuple[str, bool], bytes] = {}

    def describe(self) -> list[PromMetric]:
        # Without it a registry knows none of the names (auto-describe is off: it would render a
        # scrape at registration), and a ``name[]`` filter answered no series at all.
        return [family.build() for family in _every_family()]

    def collect(self) -> Iterator[PromMetric]:
        yield from self._families(self._latest())

    def _families(self, sample: Sample | None) -> Iterator[PromMetric]:
        for family, rows in series(sample, self._hostname):
            built = family.build()
            for labels, value in rows:
                built.add_metric(list(labels), value)  # type: ignore[attr-defined]
            yield built

    def payload(self, content_type: str, encoder: Callable[[Any], bytes], gzipped: bool) -> bytes:
        """The latest sample in the format ``content_type`` (made by ``encoder``), gzipped or not."""
        sample = self._latest()
        with self._lock:  # scrapes at the same time wait for one render rather than each making one
            if sample is not self._rendered:
                self._rendered, self._payloads = sample, {}
            body = self._payloads.get((content_type, gzipped))
            if body is not None:
                return body
            plain = self._payloads.get((content_type, False))
            if plain is None:
                renderer = self._renderers.get(content_type)
                if renderer is None and len(self._renderers) < MAX_FORMATS:
                    renderer = self._renderers[content_type] = _Renderer(encoder)
                if renderer is None:
                    # The sample this scrape already has: asking ``latest`` again could wait its bound twice.
                    # Not kept either: prometheus-client names the content type with the version a
                    # client asks for, and 3000 versions kept 130 MiB until the next sample.
                    plain = encoder(_Families(self._families(sample)))
                    return gzip.compress(plain, GZIP_LEVEL) if gzipped else plain
                plain = renderer.render(series(sample, self._hostname))
                self._payloads[(content_type, False)] = plain
            body = self._payloads[(content_type, gzipped)] = gzip.compress(plain, GZIP_LEVEL) if gzipped else plain
            return body


_GZIPPED = [("Content-Encoding", "gzip")]
METRICS_PATHS = frozenset({"/metrics", "/"})
NOT_FOUND = b"Not found: the metrics are at /metrics.\n"


def gzip_wanted(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header asks for gzip: named with a quality above 0 (RFC 9110
    12.5.3). prometheus-client's gzip_accepted took "gzip;q=0", which refuses it, for a yes."""
    for part in accept_encoding.split(","):
        coding, *params = (piece.strip() for piece in part.split(";"))
        if coding.lower() != "gzip":
            continue
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


GZIP_LEVEL = 6  # prometheus-client compresses at 9: 3 times the CPU for a body 3 % smaller


def cached_app(collector: SampleCollector, registry: CollectorRegistry) -> Callable[..., Any]:
    """prometheus-client's WSGI app, with a scrape of the metrics answered from ``collector.payload``
    (rendered once per sample and format). What it does not cache (other methods, ``name[]``
    filters, the favicon) goes to prometheus-client's app unchanged."""
    app = make_wsgi_app(registry)

    def cached(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        # The metrics at /metrics (and /, for whoever scrapes that); any other path is not found,
        # where prometheus-client's app answered every one (a typo'd path looked like a good target).
        if environ["PATH_INFO"] not in METRICS_PATHS:
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [NOT_FOUND]
        method, query = environ["REQUEST_METHOD"], environ.get("QUERY_STRING", "")
        if method not in ("GET", "HEAD") or "name" in query:
            return app(environ, start_response)
        encoder, content_type = choose_encoder(environ.get("HTTP_ACCEPT", ""))
        gzipped = gzip_wanted(environ.get("HTTP_ACCEPT_ENCODING", ""))
        body = collector.payload(content_type, encoder, gzipped)
        headers = [("Content-Type", content_type), *_GZIPPED[:gzipped], ("Content-Length", str(len(body)))]
        start_response("200 OK", headers)
        return [] if method == "HEAD" else [body]  # HEAD: what GET would say, without the body (405 before)

    return cached


# ---- where to listen ----
def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT`` or ``:PORT`` (every address) into (host, port); raises TrayvmlError."""
    if text.startswith("[") and "]" in text:  # [V6] or [V6]:PORT
        host, _, after = text[1:].partition("]")
        sep, port_text = (":", after[1:]) if after.startswith(":") else ("", after or str(DEFAULT_PORT))
    else:
        host, sep, port_text = text.rpartition(":")
        if not sep:
            host, port_text = text, str(DEFAULT_PORT)
        elif ":" in host:  # ::1 would be host ":" on port 1
            raise TrayvmlError(
                translate("serve", "--listen {value}: an IPv6 address goes in brackets, as [::1]:8729.").format(
                    value=repr(text)
                )
            )
    if not port_text.isascii() or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise TrayvmlError(
            translate("serve", "--listen {value}: the port must be a number from 0 to 65535.").format(value=repr(text))
        )
    return host or "0.0.0.0", int(port_text)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


# ---- the web config file (exporter-toolkit convention) ----
@dataclass(frozen=True)
class WebConfig:
    cert_file: str = ""
    key_file: str = ""
    users: dict[str, bytes] = field(default_factory=dict)  # user -> bcrypt hash


_BCRYPT = re.compile(r"\$2[abxy]?\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")


def load_web_config(path: str) -> WebConfig:
    """Reads ``tls_server_config`` (cert_file, key_file) and ``basic_auth_users`` (bcrypt hashes).

    Relative paths are relative to the file, as exporter-toolkit reads them. Raises TrayvmlError.
    """
    import yaml

    try:
        # Bounded: a device or a named pipe given here was read, or waited on, for ever.
        mode = os.stat(path).st_mode
        raw = read_bounded(Path(path), MAX_WEB_CONFIG_BYTES, mode, pipe_wait_s=WEB_CONFIG_PIPE_WAIT_S)
        if len(raw) > MAX_WEB_CONFIG_BYTES:
            large = translate("serve", "The web config file {path} is larger than {size} MiB.")
            raise TrayvmlError(large.format(path=path, size=MAX_WEB_CONFIG_BYTES >> 20))
        if stat.S_ISFIFO(mode) and not raw.strip():
            # A file may be empty (no TLS, no users); a pipe that gave nothing is a writer that failed
            # (<(gpg -d …) with a wrong passphrase), and serve would start without its users.
            empty = translate("serve", "The web config pipe {path} gave nothing; its writer may have failed.")
            raise TrayvmlError(empty.format(path=path))
        text = raw.decode("utf-8")
    except OSError as error:
        unreadable = translate("serve", "Cannot read the web config file {path}: {error}.")
        raise TrayvmlError(unreadable.format(path=path, error=error.strerror)) from None
    except UnicodeDecodeError as error:
        not_text = translate("serve", "The web config file {path} is not UTF-8 text (byte {at}).")
        raise TrayvmlError(not_text.format(path=path, at=error.start + 1)) from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as error:
        # One sentence: where, and the parser's short word for what (not its multi-line dump).
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or type(error).__name__
        if mark is not None:
            invalid = translate("serve", "The web config file {path} is not valid YAML at line {line}: {problem}.")
            raise TrayvmlError(invalid.format(path=path, line=mark.line + 1, problem=problem)) from None
        invalid = translate("serve", "The web config file {path} is not valid YAML: {problem}.")
        raise TrayvmlError(invalid.format(path=path, problem=problem)) from None
    if not isinstance(data, dict):
        raise TrayvmlError(
            translate(
                "serve", "The web config file {path} must be a mapping (tls_server_config, basic_auth_users)."
            ).format(path=path)
        )
    known = {"tls_server_config", "basic_auth_users"}  # http_server_config (headers, HTTP/2): not supported
    unknown = sorted(set(map(str, data)) - known)
    if unknown:
        strange = translate("serve", "The web config file {path} has keys trayvml does not know: {keys}.")
        raise TrayvmlError(strange.format(path=path, keys=", ".join(unknown)))
    base = Path(path).parent
    tls = data.get("tls_server_config") or {}
    users = data.get("basic_auth_users") or {}
    if not isinstance(tls, dict) or not isinstance(users, dict):
        raise TrayvmlError(
            translate(
                "serve", "The web config file {path}: tls_server_config and basic_auth_users must be mappings."
            ).format(path=path)
        )
    cert, key = tls.get("cert_file", ""), tls.get("key_file", "")
    if bool(cert) != bool(key):
        half = translate("serve", "The web config file {path}: TLS needs both cert_file and key_file.")
        raise TrayvmlError(half.format(path=path))
    for user, hashed in users.items():
        # The whole modular-crypt form (as bcrypt itself checks it at the first login): a placeholder
        # such as the README's "$2b$12$..." is refused at start, not with a traceback on a scrape.
        if not isinstance(hashed, str) or not _BCRYPT.fullmatch(hashed):
            plain = translate("serve", "The web config file {path}: the password of {user} must be a bcrypt hash.")
            raise TrayvmlError(plain.format(path=path, user=repr(user)))
    return WebConfig(
        str(base / cert) if cert else "",
        str(base / key) if key else "",
        {str(u): h.encode() for u, h in users.items()},
    )


def _with_basic_auth(app: Callable[..., Any], users: dict[str, bytes]) -> Callable[..., Any]:
    import base64

    import bcrypt

    # bcrypt is slow on purpose (tens of ms); a scrape every few seconds should not pay it each time.
    accepted: set[bytes] = set()
    salt = hashlib.sha256(str(id(users)).encode()).digest()
    # An unknown user is checked against a hash of the same cost as the users' own, so that the
    # answer takes as long as for a known one: the time to a 401 does not tell which users exist.
    rounds = max(int(h.split(b"$")[2]) for h in users.values())
    dummy = bcrypt.hashpw(secrets.token_bytes(16), bcrypt.gensalt(rounds=rounds))

    def guarded(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        header = environ.get("HTTP_AUTHORIZATION", "")
        scheme, _, encoded = header.partition(" ")
        if scheme.lower() == "basic":
            try:
                user, _, password = base64.b64decode(encoded, validate=True).decode().partition(":")
            except (ValueError, UnicodeDecodeError):
                user, password = "", ""
            hashed = users.get(user)
            token = hmac.new(salt, f"{user}\0{password}".encode(), "sha256").digest()
            if hashed is None:
                _matches(bcrypt, password, dummy)  # constant work; never a match
            elif token in accepted or _matches(bcrypt, password, hashed):
                accepted.add(token)
                return app(environ, start_response)
        start_response(
            "401 Unauthorized", [("WWW-Authenticate", 'Basic realm="trayvml"'), ("Content-Type", "text/plain")]
        )
        return [b"Unauthorized\n"]

    return guarded


def _matches(bcrypt: Any, password: str, hashed: bytes) -> bool:
    try:
        return bool(bcrypt.checkpw(password.encode(), hashed))
    except ValueError:  # bcrypt 5 refuses passwords over 72 bytes: no such password was ever set
        return False


class _KeptAliveHandler(ServerHandler):
    """wsgiref's response, as HTTP/1.1; ``reusable`` says whether the connection may carry another
    request: a whole 200 answer of a known length (wsgiref sends no chunked encoding)."""

    http_version = "1.1"
    reusable = False

    def close(self) -> None:
        # wsgiref's close() clears these (typeshed does not know them: read by name)
        status, headers, sent = (getattr(self, name, None) for name in ("status", "headers", "bytes_sent"))
        self.reusable = (
            str(status).startswith("200")
            and headers is not None
            and "Content-Length" in headers
            and sent == int(headers["Content-Length"])
        )
        super().close()


class _QuietHandler(WSGIRequestHandler):
    """Serves a connection's requests one after the other (HTTP/1.1 keep-alive, as Prometheus and
    trayvml's remote reads scrape): a connection and a thread per scrape cost serve about 0.5 ms."""

    timeout = IDLE_TIMEOUT_S  # on every receive (and the TLS handshake): a silent client is let go
    protocol_version = "HTTP/1.1"  # parse_request then reads the client's own wish to keep the connection

    def setup(self) -> None:
        super().setup()
        with contextlib.suppress(OSError):  # headers and body are two writes: no wait for an ACK between them
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self) -> None:
        # A client that went silent, hung up or spoke no TLS: nothing to answer, nothing to log.
        with contextlib.suppress(TimeoutError, ConnectionError, ssl.SSLError):
            self.close_connection = True
            self._handle_one()
            while not self.close_connection:
                self._handle_one()

    def _handle_one(self) -> None:
        self.close_connection = True
        if not self._read_request():
            return
        # Only an HTTP/1.1 GET without a body stays open: an HTTP/1.0 client waits for the close, and
        # a body the app did not read would be taken for the next request.
        keep = (
            not self.close_connection
            and self.request_version == "HTTP/1.1"
            and self.command == "GET"
            and self.headers.get("Content-Length", "0") == "0"
            and "Transfer-Encoding" not in self.headers
        )
        server: Any = self.server  # a WSGIServer: its app
        handler = _KeptAliveHandler(self.rfile, self.wfile, self.get_stderr(), self.get_environ(), multithread=False)  # type: ignore[arg-type]
        handler.request_handler = self  # type: ignore[attr-defined]  # wsgiref logs through it
        handler.run(server.get_app())
        self.close_connection = not (keep and handler.reusable)

    def _read_request(self) -> bool:
        """The request line and headers, within the idle timeout in all (the server lets go of a
        connection past it: _BoundedServer.reading); False where there is nothing to answer."""
        server: Any = self.server
        server.reading(self.connection, time.monotonic() + self.timeout)
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline:
                return False  # the client closed the connection
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.send_error(414)
                return False
            parsed = bool(self.parse_request())  # else answered with an error, and the connection closed
        finally:
            in_time = server.reading(self.connection, None)
        # Cut off by the deadline, what was read is no request (its end was the shutdown's): not run.
        return parsed and in_time

    def log_message(self, format: str, *args: Any) -> None:
        """No line per scrape on stderr."""


class _BoundedServer(ThreadingWSGIServer):
    """A thread per connection, at most ``max_connections`` at a time: one more is closed at once.

    Without a bound, every idle connection held a thread (3,000 connections, 3,000 threads); a
    Prometheus server scrapes with one connection at a time, so a small bound costs it nothing.
    """

    max_connections = MAX_CONNECTIONS
    request_queue_size = 128  # the listen backlog: a burst is taken (and refused) rather than left to retry its SYN

    request_deadline_s = IDLE_TIMEOUT_S  # a request's line and headers, all of them, within this

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Connections reading a request, and by when it must be read. The idle timeout is each
        # receive's: sixteen clients sending a byte every 8 s held every connection for good, and
        # Prometheus was refused (before any password was asked). Made before the socket is bound:
        # a port in use closes the server before it is activated.
        self._reading: dict[Any, float] = {}
        self._reading_lock = threading.Lock()
        self._closing = threading.Event()
        self._watcher: threading.Thread | None = None
        super().__init__(*args, **kwargs)

    def server_activate(self) -> None:
        super().server_activate()
        self._slots = threading.BoundedSemaphore(self.max_connections)
        self._watcher = threading.Thread(target=self._let_go_of_slow_requests, name="trayvml-serve-slow", daemon=True)
        self._watcher.start()

    def reading(self, connection: Any, until_s: float | None) -> bool:
        """``connection`` reads a request until ``until_s`` (monotonic) at most; None: it is read,
        and whether that was in time (False: the deadline's shutdown ended it)."""
        with self._reading_lock:
            if until_s is None:
                return self._reading.pop(connection, None) is not None
            self._reading[connection] = until_s
            return True

    def _let_go_of_slow_requests(self) -> None:
        while not self._closing.wait(min(1.0, self.request_deadline_s / 3)):
            now_s = time.monotonic()
            with self._reading_lock:
                late = [connection for connection, until_s in self._reading.items() if until_s < now_s]
                for connection in late:
                    del self._reading[connection]
            for connection in late:  # its thread's read ends, and the connection with it
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)

    def server_close(self) -> None:
        self._closing.set()
        super().server_close()
        if self._watcher is not None:
            self._watcher.join(2.0)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # refused at once rather than queued behind idle ones
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class MetricsServer:
    """A WSGI app (prometheus-client's, or :func:`cached_app`) on a threading WSGI server, on a daemon thread."""

    def __init__(
        self,
        app: Callable[..., Any],
        host: str,
        port: int,
        web: WebConfig | None = None,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        web = web or WebConfig()
        if web.users:
            app = _with_basic_auth(app, web.users)

        class Server(_BoundedServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        Server.max_connections = max_connections
        Server.request_deadline_s = idle_timeout_s

        class Handler(_QuietHandler):
            timeout = idle_timeout_s

        try:
            self._httpd = make_server(host, port, app, Server, handler_class=Handler)
        except OSError as error:
            cannot = translate("serve", "Cannot listen on {address}: {error}.")
            raise TrayvmlError(cannot.format(address=f"{host}:{port}", error=error.strerror or error)) from None
        self.tls = bool(web.cert_file)
        if self.tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            try:
                context.load_cert_chain(web.cert_file, web.key_file)
            except (OSError, ssl.SSLError) as error:
                self._httpd.server_close()
                cannot = translate("serve", "Cannot load the TLS certificate {path} or its key: {error}.")
                raise TrayvmlError(cannot.format(path=web.cert_file, error=error)) from None
            # The handshake on the connection's own thread, under its idle timeout: done at accept (the
            # default), a client that connects and says nothing would stop the server taking any other.
            self._httpd.socket = context.wrap_socket(
                self._httpd.socket, server_side=True, do_handshake_on_connect=False
            )
        self.host = host
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="trayvml-serve-http", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/metrics"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(2.0)


class Exporter:
    """The sampling loop, the collector and the server together: what ``serve`` and the tray app run.

    ``latest``: where samples come from. The tray app passes the samples it already takes;
    ``trayvml serve`` its :class:`SamplingLoop`'s ``fresh``, which reads when a scrape wants a sample.
    """

    def __init__(
        self,
        latest: Callable[[], Sample | None],
        host: str,
        port: int,
        web: WebConfig | None = None,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        self.collector = SampleCollector(latest)
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self.collector)
        app = cached_app(self.collector, self.registry)
        self.server = MetricsServer(app, host, port, web, max_connections, idle_timeout_s)

    def close(self) -> None:
        self.server.close()
