"""Nothing listens beyond the loopback unless the user asks.

* The embedded Dask cluster of ``figaroh fleet run`` (started as the fleet
  starts it, :func:`figaroh.fleet.cluster.dask_client`): every listening
  socket of this process and of its worker processes is on ``127.0.0.1``,
  and without ``dashboard`` the only ones are the scheduler's, the nannies'
  and the workers' comm ports (no dashboard port); with it, one more port,
  on ``127.0.0.1`` too, serving the dashboard.
* ``figaroh view --host H``: a host beyond the loopback gets a warning (log
  record and one stderr line) naming the exposure; a loopback host none.
"""

from __future__ import annotations

import contextlib
import io
import urllib.error
import urllib.request

import pytest

from figaroh.cli import view_command

psutil = pytest.importorskip("psutil")


def _listening(processes) -> set[tuple[str, int]]:
    out = set()
    for proc in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    out.add((conn.laddr.ip, conn.laddr.port))
    return out


def _tree() -> list:
    me = psutil.Process()
    return [me, *me.children(recursive=True)]


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _get(port: int, path: str) -> int:
    """HTTP status of ``GET http://127.0.0.1:<port><path>``."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as page:
            return page.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("dashboard", [False, True], ids=["default", "dashboard"])
def test_embedded_cluster_listens_on_loopback_only(dashboard):
    pytest.importorskip("distributed")
    from figaroh.fleet.cluster import dask_client

    before = _listening(_tree())
    with dask_client(None, n_workers=2, dashboard=dashboard) as client:
        sockets = _listening(_tree()) - before
        info = client.scheduler_info()
        comm = {_port(client.scheduler.address)}
        for address, worker in info["workers"].items():
            comm |= {_port(address), _port(worker["nanny"])}
        http = {port for _, port in sockets} - comm  # the HTTP server of every node
        scheduler_http = _port(client.dashboard_link.split("/status")[0])
        served = {port: _get(port, "/info/main/workers.html") for port in http}
        health = {port: _get(port, "/health") for port in http}
    assert sockets, "no listening socket found: the check would prove nothing"
    assert {ip for ip, _ in sockets} == {"127.0.0.1"}, sockets
    assert len(comm) == 5 and len(http) == 3 and scheduler_http in http  # scheduler + 2 workers
    assert set(health.values()) == {200}
    if dashboard:
        assert client.dashboard_link.startswith("http://127.0.0.1:")
        assert served[scheduler_http] == 200  # the cluster pages are served
    else:
        assert set(served.values()) == {404}  # /health only: no dashboard


class _Bound(Exception):
    """Raised by the stand-in server: the command got as far as binding."""


@pytest.mark.parametrize(
    ("host", "exposed"),
    [
        ("0.0.0.0", True),
        ("::", True),
        ("192.168.1.10", True),
        ("example.org", True),
        ("", True),
        ("127.0.0.1", False),
        ("127.1.2.3", False),
        ("::1", False),
        ("[::1]", False),
        ("localhost", False),
        ("LOCALHOST", False),
    ],
)
def test_view_warns_when_binding_beyond_loopback(host, exposed, ur10_urdf, monkeypatch):
    pytest.importorskip("viser")
    pytest.importorskip("yourdfpy")
    from figaroh.cli.main import main

    bound: list = []

    def server(host: str, port: int):  # instead of viser: no socket is opened
        bound.append((host, port))
        raise _Bound

    monkeypatch.setattr(view_command, "create_viser_server", server)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["view", str(ur10_urdf), "--host", host, "--port", "0"])
    assert bound == [(host, 0)] and code == 1  # the stand-in's error: exit 1
    lines = [line for line in err.getvalue().splitlines() if "loopback" in line]
    assert view_command.is_loopback_host(host) is not exposed
    if exposed:  # one stderr line (the CLI prints the log record), naming the fix
        assert len(lines) == 1 and "binds beyond the loopback" in lines[0], err.getvalue()
        assert f"--host {host!r} " in lines[0] and "--host 127.0.0.1" in lines[0]
    else:
        assert lines == []
