"""``figaroh view``: show a URDF in the browser (viser), optionally replaying logged joints.

The robot is drawn with its visual meshes (``package://`` URIs resolved as
for loading the robot). Without ``--data`` one slider per joint poses it;
with ``--data`` (a CSV with ``q_<joint>`` columns [rad or m], e.g. an
identification log or ``figaroh trajectory``'s ``trajectory.csv``) a sample
slider and a play button replay the logged configurations. ``--config``
restricts the joints to the configuration's active joints.

The viewer needs the ``viz`` extra (viser, yourdfpy, trimesh:
``pip install "figaroh[viz]"``); without it the command exits 2 saying so.
``--dry-run`` loads the URDF meshes and the data and checks them without
starting the server. Otherwise the command serves until Ctrl-C (exit 130).

The server listens on ``--host`` (default ``127.0.0.1``: this machine only).
A host beyond the loopback (``0.0.0.0``, ``::``, a LAN address or name)
exposes the viewer, the robot model and the replayed data to every machine
that can reach the port; the command says so in a warning (one stderr line)
before serving.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np

from figaroh.cli.common import EXIT_BAD_INPUT, EXIT_OK, CLIError, require_file, say, steps_for
from figaroh.cli.workflows import input_phase
from figaroh.data.text_csv import csv_rows, read_csv_text
from figaroh.tools.robot_paths import candidate_package_roots, find_package
from figaroh.tools.robotvisualization import (
    ViewerUnavailableError,
    create_viser_server,
    require_viewer_package,
)
from figaroh.utils.unified_config import UnifiedConfigParser

__all__ = ["is_loopback_host", "read_joint_samples", "view", "warn_if_exposed"]

logger = logging.getLogger(__name__)

#: Replay rate of ``--data`` when the file has no ``t`` column [Hz].
DEFAULT_REPLAY_HZ = 50.0


def is_loopback_host(host: str) -> bool:
    """Whether binding ``host`` reaches this machine only.

    ``localhost`` (any case), an IPv4 address in ``127.0.0.0/8`` and ``::1``
    are the loopback; anything else (``0.0.0.0``, ``::`` and ``""``: every
    interface; a LAN address; another host name) is not.
    """
    name = host.strip().strip("[]")
    if name.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def warn_if_exposed(args: argparse.Namespace) -> None:
    """Warn (log record, one stderr line through the CLI) when ``--host`` is beyond the loopback."""
    if is_loopback_host(str(args.host)):
        return
    port = f"port {args.port}" if args.port else "the port printed below"
    logger.warning(
        "figaroh view --host %r binds beyond the loopback: every machine that can reach "
        "%s of this one can open the viewer and see the robot model and the replayed "
        "data (no password); use --host 127.0.0.1 (the default) to keep it on this machine",
        args.host,
        port,
    )


def _viewer_modules() -> Tuple[Any, Any]:
    """``(yourdfpy, ViserUrdf)``; a missing package is bad input naming the ``viz`` extra."""
    try:
        require_viewer_package("viser", "figaroh view")
        yourdfpy = require_viewer_package("yourdfpy", "figaroh view (URDF meshes)")
        extras = require_viewer_package("viser.extras", "figaroh view (URDF display)")
    except ViewerUnavailableError as exc:
        raise CLIError(str(exc), EXIT_BAD_INPUT) from exc
    return yourdfpy, extras.ViserUrdf


def _filename_handler(urdf: Path, package_dirs: Sequence[str] | None):
    roots = candidate_package_roots(urdf, package_dirs)

    def handler(fname: str) -> str:
        if fname.startswith("package://"):
            pkg, _, rel = fname[len("package://") :].partition("/")
            found = find_package(pkg, roots)
            return str(found / rel) if found is not None else fname
        if fname.startswith("file://"):
            return fname[len("file://") :]
        path = Path(fname)
        return str(path if path.is_absolute() else urdf.parent / path)

    return handler


def read_joint_samples(
    path: Path, joints: Sequence[str]
) -> Tuple[np.ndarray, np.ndarray, List[str]]:
    """The ``t`` and ``q_<joint>`` columns of a CSV log.

    Args:
        path: CSV file with a header row.
        joints: Joints that may appear as ``q_<joint>`` columns.

    Returns:
        ``(t (N,) [s], q (N, k) [rad or m], the k joints found)``; ``t`` is
        ``k / 50 Hz`` when the file has no ``t`` column.

    Raises:
        CLIError: no ``q_<joint>`` column of a known joint, no row, or a
            non-numeric value (exit 2).
    """
    try:
        rows = csv_rows(path, read_csv_text(path, "--data"), "--data")
    except ValueError as exc:  # not text, or not CSV: the message names the file
        raise CLIError(str(exc)) from exc
    if not rows:
        raise CLIError(f"--data {path} is empty; give a CSV with q_<joint> columns")
    header = [h.strip() for h in rows[0]]
    found = [j for j in joints if f"q_{j}" in header]
    if not found:
        raise CLIError(
            f"--data {path} has no q_<joint> column of the model's joints; expected e.g. "
            f"q_{joints[0]}"
        )
    cols = [header.index(f"q_{j}") for j in found]
    try:
        table = np.array([[float(r[c]) for c in cols] for r in rows[1:]], dtype=float)
        t = (
            np.array([float(r[header.index("t")]) for r in rows[1:]])
            if "t" in header
            else np.arange(len(rows) - 1) / DEFAULT_REPLAY_HZ
        )
    except (ValueError, IndexError) as exc:
        raise CLIError(f"--data {path}: non-numeric or missing value ({exc})") from exc
    if table.size == 0:
        raise CLIError(f"--data {path} has a header but no sample row")
    return t, table.reshape(len(rows) - 1, len(found)), found


def _config_joints(config: str, urdf_joints: Sequence[str]) -> List[str]:
    with input_phase(f"cannot read the configuration {config}"):
        cfg = UnifiedConfigParser(config).parse()
    joints = list(
        ((cfg.get("robot") or {}).get("properties") or {}).get("joints", {}).get("active_joints")
        or []
    )
    unknown = [j for j in joints if j not in urdf_joints]
    if unknown:
        raise CLIError(
            f"--config {config}: active joints {unknown} are not joints of the URDF "
            f"(its joints: {', '.join(urdf_joints)})"
        )
    return joints or list(urdf_joints)


def _configurations(urdf_model: Any, joints: Sequence[str], q: np.ndarray) -> np.ndarray:
    """(N, n_actuated) yourdfpy configurations: the logged joints set, the others 0."""
    names = list(urdf_model.actuated_joint_names)
    cfg = np.zeros((len(q), len(names)))
    for k, j in enumerate(joints):
        cfg[:, names.index(j)] = q[:, k]
    return cfg


def _serve(server: Any, vis: Any, urdf_model: Any, joints: Sequence[str], data) -> None:
    """GUI: per-joint sliders, or a sample slider + play over the logged configurations."""
    names = list(urdf_model.actuated_joint_names)
    if data is None:
        values = np.zeros(len(names))
        limits = {j.name: j.limit for j in urdf_model.robot.joints}
        for name in joints:
            lim = limits.get(name)
            lo = float(lim.lower) if lim is not None and lim.lower is not None else -np.pi
            hi = float(lim.upper) if lim is not None and lim.upper is not None else np.pi
            slider = server.gui.add_slider(name, min=lo, max=hi, step=1e-3, initial_value=0.0)

            def moved(_event, name=name, slider=slider) -> None:
                values[names.index(name)] = slider.value
                vis.update_cfg(values)

            slider.on_update(moved)
        vis.update_cfg(values)
        while True:
            time.sleep(0.5)
    t, cfg = data
    sample = server.gui.add_slider("sample", min=0, max=len(cfg) - 1, step=1, initial_value=0)
    playing = server.gui.add_checkbox("play", initial_value=True)
    sample.on_update(lambda _event: vis.update_cfg(cfg[int(sample.value)]))
    vis.update_cfg(cfg[0])
    dt = float(np.median(np.diff(t))) if len(t) > 1 else 1.0 / DEFAULT_REPLAY_HZ
    while True:
        time.sleep(max(dt, 1e-3))
        if playing.value:
            sample.value = (int(sample.value) + 1) % len(cfg)


def view(args: argparse.Namespace) -> int:
    """``figaroh view``: exit 0 after ``--dry-run``; otherwise serve until interrupted."""
    urdf = require_file(args.urdf, "URDF")
    if args.config:
        require_file(args.config, "--config")
    if args.data:
        require_file(args.data, "--data")
    yourdfpy, ViserUrdf = _viewer_modules()
    names = ["load URDF", "read data", "build scene"]
    with steps_for(args, names) as steps:
        steps.start("load URDF")
        with input_phase(f"cannot load the URDF {urdf}"):
            model = yourdfpy.URDF.load(
                str(urdf),
                filename_handler=_filename_handler(urdf, args.package_dir),
                build_scene_graph=True,
                load_meshes=True,
                build_collision_scene_graph=False,
                load_collision_meshes=False,
            )
        urdf_joints = list(model.actuated_joint_names)
        joints = _config_joints(str(args.config), urdf_joints) if args.config else urdf_joints
        steps.start("read data")
        data = None
        if args.data:
            t, q, found = read_joint_samples(Path(args.data), joints)
            data = (t, _configurations(model, found, q))
        steps.start("build scene")
        summary: Dict[str, Any] = {
            "joints": len(joints),
            "meshes": len(getattr(model.scene, "geometry", {}) or {}),
            "samples": 0 if data is None else len(data[1]),
        }
        if args.dry_run:
            say(
                args,
                f"{urdf.name}: {summary['joints']} joints, {summary['meshes']} meshes, "
                f"{summary['samples']} samples (dry run: no server started)",
            )
            return EXIT_OK
        warn_if_exposed(args)
        server = create_viser_server(host=args.host, port=args.port)
        vis = ViserUrdf(server, urdf_or_path=model, root_node_name="/robot", load_meshes=True)
    say(args, f"viewer at http://{args.host}:{server.get_port()} (Ctrl-C to stop)")
    try:
        _serve(server, vis, model, joints, data)
    finally:
        server.stop()
    return EXIT_OK  # pragma: no cover - _serve returns only by an exception
