"""Prometheus exposition of the latest Sample: the collector, the HTTP server with its web config
(basic auth, TLS), and the two together as an Exporter (used by `serve` and the tray app)."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import ipaddress
import logging
import re
import secrets
import socket
import ssl
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.metrics_core import Metric as PromMetric
from prometheus_client.registry import Collector

from trayvml.core import prom_names as names
from trayvml.core.errors import TrayvmlError
from trayvml.core.i18n import translate
from trayvml.core.metrics import GPU_METRICS, HOST_METRICS, Metric
from trayvml.core.sample import MetricState, Sample
from trayvml.prometheus import DEFAULT_PORT

log = logging.getLogger(__name__)

_GPU_LABELS = ["hostname", "uuid", "index"]
MAX_CONNECTIONS = 16  # connections served at once, each on a thread of its own
IDLE_TIMEOUT_S = 10.0  # a connection that sends nothing for this long is closed (Prometheus sends at once)


# ---- what a scrape shows ----
def up_reason(sample: Sample) -> str:
    """ "" when the GPU values are current, else a short machine-readable reason."""
    if sample.stall is not None:
        return "driver_not_responding"
    if sample.unavailable is not None:
        return sample.unavailable.reason.value
    return ""


def simulation_scenario(sample: Sample) -> str:
    """The simulated scenario's name ("training"), "" for real GPUs."""
    return sample.simulation.removeprefix("simulated GPUs ").strip("()") if sample.simulation else ""


class SampleCollector(Collector):
    """Renders the latest sample; ``latest`` returns it (None before the first read)."""

    def __init__(self, latest: Callable[[], Sample | None], hostname: str | None = None) -> None:
        self._latest = latest
        self._hostname = hostname or socket.gethostname()

    def collect(self) -> Iterator[PromMetric]:
        sample = self._latest()
        up = GaugeMetricFamily(
            names.UP, "1 when the GPU values are current; 0 says why in reason.", labels=["hostname", "reason"]
        )
        if sample is None:
            up.add_metric([self._hostname, "starting"], 0.0)
            yield up
            return
        host = sample.system.hostname if sample.system else self._hostname
        reason = up_reason(sample)
        up.add_metric([host, reason], 0.0 if reason else 1.0)
        yield up
        when = GaugeMetricFamily(
            names.SAMPLE_TIME.family, "When the values served were read (Unix time).", labels=["hostname"]
        )
        when.add_metric([host], sample.timestamp_s)
        yield when
        simulated = GaugeMetricFamily(
            names.SIMULATED,
            "1 when the GPUs served are simulated (trayvml --simulate), 0 when they are real.",
            labels=["hostname", "scenario"],
        )
        simulated.add_metric([host, simulation_scenario(sample)], 1.0 if sample.simulation else 0.0)
        yield simulated
        yield from self._gpus(sample, host)
        if sample.host is not None:
            for metric, value in zip(HOST_METRICS, sample.host.values, strict=True):
                served = _family(metric, ["hostname"])
                if served is None:
                    continue
                family, scale = served
                if value == value:  # NaN: not known yet (a rate's first reading); no series
                    family.add_metric([host], value / scale)
                yield family

    def _gpus(self, sample: Sample, host: str) -> Iterable[PromMetric]:
        driver = sample.system.driver_version if sample.system else ""
        info = InfoMetricFamily(
            names.GPU_INFO[: -len("_info")], "Facts about each GPU.", labels=["hostname", "uuid", "index"]
        )
        total = GaugeMetricFamily(names.MEMORY_TOTAL.family, "Memory total", labels=_GPU_LABELS)
        procs = GaugeMetricFamily(
            names.PROCESS_MEMORY.family,
            "GPU memory used by each process",
            labels=[*_GPU_LABELS, "pid", "name", "user", "kind"],
        )
        jobs = InfoMetricFamily(
            names.PROCESS_JOB_INFO[: -len("_info")],
            "The job each GPU process works for: its notebook, container, Slurm job, systemd unit, "
            "terminal session or process tree (kind says which); job_name: a Slurm job's name, where known.",
            labels=["hostname", "pid", "job", "kind"],
        )
        shown_jobs: set[int] = set()
        families = [_family(metric, _GPU_LABELS) for metric in GPU_METRICS]  # None: a metric not served
        for gpu, device in zip(sample.gpus, sample.devices, strict=True):
            labels = [host, device.uuid, str(gpu.index)]
            facts = {"name": device.name, "driver": driver, "pci_bus_id": device.pci_bus_id}
            if sample.simulation:  # on the info series only: the frequent series keep their labels
                facts["simulated"] = "true"
            info.add_metric(labels, facts)
            if device.memory_total_bytes == device.memory_total_bytes:
                total.add_metric(labels, device.memory_total_bytes)
            for served, value, state in zip(families, gpu.values, gpu.states, strict=True):
                # A value that is not current or not supported has no series: absent is "not known".
                if served is not None and state is MetricState.OK and value == value:
                    family, scale = served
                    family.add_metric(labels, value / scale)
            for proc in gpu.processes:
                if proc.used_memory_bytes == proc.used_memory_bytes:
                    procs.add_metric([*labels, str(proc.pid), proc.name, proc.user, proc.kind], proc.used_memory_bytes)
                job = proc.attribution
                if job.job and proc.pid not in shown_jobs:  # a process on two GPUs is one job
                    shown_jobs.add(proc.pid)
                    facts = {"job": job.job, "kind": job.job_kind}
                    if job.job_kind == "slurm" and job.slurm_job_name:  # only here: never a frequent series' label
                        facts["job_name"] = job.slurm_job_name
                    jobs.add_metric([host, str(proc.pid)], facts)
        yield info
        yield total
        for served in families:
            if served is not None:
                yield served[0]
        yield procs
        yield jobs


def _family(metric: Metric, labels: list[str]) -> tuple[GaugeMetricFamily | CounterMetricFamily, float] | None:
    """A catalog metric's family, and what its values are divided by to serve them; None: not served."""
    name = names.name_of(metric)
    if name is None:
        return None
    kind = CounterMetricFamily if name.counter else GaugeMetricFamily
    return kind(name.family, metric.label, labels=labels), names.per_base_unit(metric.unit)


# ---- where to listen ----
def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT`` or ``:PORT`` (every address) into (host, port); raises TrayvmlError."""
    host, sep, port_text = text.rpartition(":")
    if not sep:
        host, port_text = text, str(DEFAULT_PORT)
    host = host.strip("[]")
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
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        unreadable = translate("serve", "Cannot read the web config file {path}: {error}.")
        raise TrayvmlError(unreadable.format(path=path, error=error.strerror)) from None
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


class _QuietHandler(WSGIRequestHandler):
    timeout = IDLE_TIMEOUT_S  # on every receive (and the TLS handshake): a silent client is let go

    def handle(self) -> None:
        # A client that went silent, hung up or spoke no TLS: nothing to answer, nothing to log.
        with contextlib.suppress(TimeoutError, ConnectionError, ssl.SSLError):
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:
        """No line per scrape on stderr."""


class _BoundedServer(ThreadingWSGIServer):
    """A thread per connection, at most ``max_connections`` at a time: one more is closed at once.

    Without a bound, every idle connection held a thread (3,000 connections, 3,000 threads); a
    Prometheus server scrapes with one connection at a time, so a small bound costs it nothing.
    """

    max_connections = MAX_CONNECTIONS
    request_queue_size = 128  # the listen backlog: a burst is taken (and refused) rather than left to retry its SYN

    def server_activate(self) -> None:
        super().server_activate()
        self._slots = threading.BoundedSemaphore(self.max_connections)

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
    """prometheus-client's WSGI app on a threading WSGI server, on a daemon thread."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: str,
        port: int,
        web: WebConfig | None = None,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
    ) -> None:
        web = web or WebConfig()
        app = make_wsgi_app(registry)
        if web.users:
            app = _with_basic_auth(app, web.users)

        class Server(_BoundedServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        Server.max_connections = max_connections

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
    ``trayvml serve`` passes a :class:`SamplingLoop`'s.
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
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SampleCollector(latest))
        self.server = MetricsServer(self.registry, host, port, web, max_connections, idle_timeout_s)

    def close(self) -> None:
        self.server.close()
