"""Who a GPU process is: name, user, command line and container, looked up by host PID."""

from __future__ import annotations

import re
import shlex

import psutil

from trayvml.core.safe_text import clean
from trayvml.core.sample import ProcessDetails

# Docker, containerd, CRI-O, Podman and Kubernetes all put a 64-hex-digit id in the cgroup path.
_CONTAINER_ID = re.compile(r"(?:docker|containerd|crio|libpod|cri-containerd)[-/]?([0-9a-f]{64})|/([0-9a-f]{64})")


def container_of(pid: int) -> str:
    """The short container id a PID runs in, or "" on the host or where it cannot be read."""
    try:
        # Cgroup names are chosen by whoever made them; only the hex id matters here.
        with open(f"/proc/{pid}/cgroup", encoding="utf-8", errors="replace") as cgroup:
            text = cgroup.read()
    except OSError:
        return ""
    match = _CONTAINER_ID.search(text)
    if not match:
        return ""
    return (match.group(1) or match.group(2))[:12]


def resolve_host_process(pid: int) -> ProcessDetails | None:
    """Details of a host PID; None if it is gone or lives outside our PID namespace.

    Any user names their processes, so the text is cleaned here, where it enters (see
    core.safe_text): psutil hands undecodable bytes over surrogate-escaped, which no UTF-8
    output can encode, and control characters would reach terminals raw.
    Raises PermissionError where another user's process cannot be inspected.
    """
    try:
        proc = psutil.Process(pid)
        with proc.oneshot():
            name = proc.name()
            user = proc.username()
            try:
                command = shlex.join(proc.cmdline())
            except psutil.AccessDenied:
                command = ""
    except psutil.NoSuchProcess:
        return None  # exited, or a host PID seen from inside a container
    except psutil.AccessDenied as denied:
        raise PermissionError(f"no permission to inspect process {pid}") from denied
    return ProcessDetails(clean(name), clean(user), clean(command), container_of(pid))
