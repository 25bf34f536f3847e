"""Shutting down one's own Jupyter kernel through its server's REST API (no Qt).

The kernel is found by trayvml.host.attribution (``Attributor.own_kernel``: this user's kernel,
run by this user's server, with the token from that server's runtime file); here its server is
asked ``DELETE /api/kernels/<kernel_id>``, as JupyterLab's "Shut Down Kernel" does. The server
ends the kernel's process; the notebook file is not touched.
"""

from __future__ import annotations

from collections.abc import Callable

from trayvml.core.i18n import translate
from trayvml.host.attribution import KernelSession

SHUTDOWN_WAIT_S = 5.0  # the server waits for the kernel to end before it answers

Delete = Callable[[str, str, float], int]
"""DELETE ``url`` with Jupyter's ``token``, waiting at most the given seconds: the HTTP status;
raises urllib.error.HTTPError for an error status, OSError where no answer came."""


def _delete(url: str, token: str, timeout_s: float) -> int:
    import urllib.request  # on use: the idle tray imports no HTTP

    request = urllib.request.Request(url, method="DELETE", headers={"Authorization": f"token {token}"})
    # The server is on this machine; a proxy from the environment must not see the token.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=timeout_s) as answer:
        return int(answer.status)


def shut_down_kernel(kernel: KernelSession, wait_s: float = SHUTDOWN_WAIT_S, delete: Delete = _delete) -> str:
    """Asks the kernel's server to shut it down; "" once it has, else one sentence saying why not."""
    import urllib.error

    url = f"{kernel.server_url}/api/kernels/{kernel.kernel_id}"
    server = kernel.server_url
    try:
        delete(url, kernel.token, wait_s)
    except urllib.error.HTTPError as error:
        error.close()
        if error.code == 404:
            return translate("jupyter", "The kernel of {notebook} is already gone from its Jupyter server.").format(
                notebook=kernel.notebook
            )
        if error.code in (401, 403):
            return translate(
                "jupyter",
                "The Jupyter server at {server} refused to shut the kernel down (HTTP {code}): "
                "it does not accept the token in its runtime file.",
            ).format(server=server, code=error.code)
        return translate(
            "jupyter", "The Jupyter server at {server} answered HTTP {code}: the kernel was not shut down."
        ).format(server=server, code=error.code)
    except OSError as error:  # URLError too: its reason says why (refused, timed out)
        reason = getattr(error, "reason", error)
        if isinstance(error, TimeoutError) or isinstance(reason, TimeoutError):
            return translate(
                "jupyter",
                "The Jupyter server at {server} did not answer within {seconds} s: the kernel may still run.",
            ).format(server=server, seconds=f"{wait_s:g}")
        return translate(
            "jupyter", "The Jupyter server at {server} no longer answers ({reason}): the kernel was not shut down."
        ).format(server=server, reason=reason)
    return ""
