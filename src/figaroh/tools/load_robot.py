"""Robot loaders at their figaroh 1.0.2 module path.

The loaders live in :mod:`figaroh.tools.robot` beside the :class:`Robot` model
they build (``"figaroh"``), so that neither module needs the other at import
time; the package-folder helpers live in :mod:`figaroh.tools.robot_paths`.
This module keeps the 1.0.2 names importable from here, with the robot-name
helpers (``load_robot("ur10")`` resolves a name through
:func:`resolve_robot_urdf`; :func:`robot_catalogue` lists the names).
"""

from __future__ import annotations

from .robot import (
    SUPPORTED_LOADERS,
    PackageDirs,
    Robot,
    get_available_loaders,
    list_available_robots,
    load_robot,
)
from .robot_paths import (
    MODELS_DIR_ENV,
    RobotEntry,
    UnknownRobotError,
    resolve_robot_urdf,
    robot_catalogue,
)

__all__ = [
    "MODELS_DIR_ENV",
    "SUPPORTED_LOADERS",
    "PackageDirs",
    "Robot",
    "RobotEntry",
    "UnknownRobotError",
    "get_available_loaders",
    "list_available_robots",
    "load_robot",
    "resolve_robot_urdf",
    "robot_catalogue",
]
