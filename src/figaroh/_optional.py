"""Optional and heavy third-party packages, imported by the call that needs them.

figaroh imports packages such as cyipopt, meshcat, viser, mujoco, clarabel,
matplotlib or ``scipy.optimize`` inside the functions that use them, so that
``import figaroh...`` stays cheap and works without the optional extras. Such a
function gets the module through :func:`require`::

    cyipopt = require("cyipopt", extra="ipopt", purpose="IPOPT trajectory optimisation")

When the package is missing, :func:`require` raises
:class:`~figaroh.errors.MissingDependencyError` (an ``ImportError``) whose
message names the package, what needs it and the install command, e.g.::

    IPOPT trajectory optimisation needs the 'cyipopt' package, which is not
    installed. Install it with: pip install "figaroh[ipopt]"

The extras are those of ``[project.optional-dependencies]`` in
``pyproject.toml``: ``ipopt`` (cyipopt, and ndcurves for 1.0.2 design
scripts), ``viz`` (viser, yourdfpy, trimesh), ``fast`` (clarabel),
``mujoco``, ``meshcat``, ``fleet`` (dask distributed), ``ros`` (rosbags, mcap,
mcap-ros2-support) and ``compat``
(pandas, rospkg, ndcurves).
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from figaroh.errors import MissingDependencyError

__all__ = ["MissingDependencyError", "is_installed", "missing_message", "require"]


def is_installed(module_name: str) -> bool:
    """Whether ``module_name`` can be found on the import path, without importing it.

    Uses :func:`importlib.util.find_spec`, so answering costs a path lookup,
    not the import of the package (``is_installed("matplotlib")`` does not
    load matplotlib; for a dotted name the parent packages are imported, as
    ``find_spec`` needs their path). A broken installation whose spec cannot
    be read counts as absent.

    Args:
        module_name: Module name (``"mujoco"``, ``"matplotlib"``).

    Returns:
        True when the module is installed.
    """
    try:
        return importlib.util.find_spec(module_name) is not None
    except (ImportError, ValueError):  # a parent package is missing or has no spec
        return False


def missing_message(
    package: str, *, extra: str | None = None, purpose: str = "", note: str = ""
) -> str:
    """The message of a :class:`MissingDependencyError` for ``package``.

    Args:
        package: Distribution name (what ``pip install`` takes).
        extra: figaroh extra that installs it; None for a core dependency
            (then the command is ``pip install <package>``).
        purpose: What needs the package, e.g. ``"The MeshCat viewer"``.
        note: Further install steps (system libraries, ...), appended.

    Returns:
        ``"<purpose> needs the '<package>' package, which is not installed.
        Install it with: pip install "figaroh[<extra>]" (or: pip install
        <package>). <note>"``.
    """
    who = purpose or "This figaroh function"
    command = (
        f'pip install "figaroh[{extra}]" (or: pip install {package})'
        if extra
        else (f"pip install {package}")
    )
    message = (
        f"{who} needs the '{package}' package, which is not installed. Install it with: {command}."
    )
    return f"{message} {note}".rstrip() if note else message


def require(
    module_name: str,
    *,
    extra: str | None = None,
    purpose: str = "",
    package: str | None = None,
    note: str = "",
    message: str | None = None,
    error: type[MissingDependencyError] = MissingDependencyError,
) -> ModuleType:
    """Import ``module_name`` or raise a :class:`MissingDependencyError` saying how to install it.

    Args:
        module_name: Module to import (``"cyipopt"``, ``"meshcat.geometry"``,
            ``"scipy.optimize"``).
        extra: figaroh extra that installs it (``"ipopt"``, ``"viz"``,
            ``"fast"``, ``"mujoco"``, ``"meshcat"``, ``"compat"``); None for a
            core dependency.
        purpose: What needs it, for the message (``"IPOPT trajectory
            optimisation"``).
        package: Distribution to install when it differs from the top-level
            module name (default: the first component of ``module_name``).
        note: Further install steps, appended to the message.
        message: The whole message, replacing the one :func:`missing_message`
            builds (for a module with a documented install text).
        error: The exception class raised, :class:`MissingDependencyError`
            or a subclass of it naming a narrower failure (the viewers'
            ``ViewerUnavailableError``).

    Returns:
        The imported module (``import_module(module_name)``).

    Raises:
        MissingDependencyError: The module (or one it imports) cannot be
            imported (``error``); chained to the original ``ImportError``.
    """
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        dist = package or module_name.partition(".")[0]
        text = message or missing_message(dist, extra=extra, purpose=purpose, note=note)
        raise error(text, package=dist, extra=extra, purpose=purpose) from exc
