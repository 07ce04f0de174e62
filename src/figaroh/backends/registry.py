"""The backend registry: names, availability and construction of the dynamics backends.

:func:`get_backend` creates a backend by name; the MuJoCo backend module (and
MuJoCo) is imported only when a MuJoCo backend is created.
"""

from __future__ import annotations

from typing import Any, Callable

import figaroh.backends as _backends
from figaroh._optional import is_installed

from .base import DynamicsBackend
from .pinocchio import PinocchioBackend

__all__ = ["MUJOCO_AVAILABLE", "get_backend", "get_backend_info", "list_backends"]

#: Whether the ``mujoco`` package is installed (looked up with
#: :func:`importlib.util.find_spec` when this module is imported; MuJoCo itself
#: is not imported). :func:`list_backends` looks again at each call.
MUJOCO_AVAILABLE: bool = is_installed("mujoco")

#: Backend name → (its class, imported on first use; Python package it needs; install command).
_REGISTRY: dict[str, tuple[Callable[[], type[DynamicsBackend]], str, str]] = {
    "pinocchio": (lambda: PinocchioBackend, "pinocchio", "pip install pin"),
    "mujoco": (lambda: _backends.mujoco.MuJoCoBackend, "mujoco", 'pip install "figaroh[mujoco]"'),
}

_INFO = {
    "pinocchio": {
        "name": "Pinocchio",
        "description": "Rigid-body dynamics with analytical derivatives (Stack of Tasks)",
        "formats": ["urdf"],
        "license": "BSD-2-Clause",
        "performance": "fast (C++ with Python bindings)",
        "use_cases": ["identification", "calibration", "trajectory optimisation"],
        "install": "pip install pin",
    },
    "mujoco": {
        "name": "MuJoCo",
        "description": (
            "Physics simulator (DeepMind); rigid-body dynamics of MJCF and URDF models, "
            "regressor through a Pinocchio mirror of the compiled model"
        ),
        "formats": ["mjcf", "urdf"],
        "license": "Apache-2.0",
        "performance": "fast (C with Python bindings)",
        "use_cases": ["identification", "simulation", "MJCF models"],
        "install": 'pip install "figaroh[mujoco]"',
    },
    "genesis": {
        "name": "Genesis",
        "description": "Not shipped",
        "formats": [],
        "license": "Apache-2.0",
        "performance": "n/a",
        "use_cases": [],
        "install": "not available in this release",
    },
    "isaacsim": {
        "name": "Isaac Sim",
        "description": "Not shipped",
        "formats": [],
        "license": "proprietary",
        "performance": "n/a",
        "use_cases": [],
        "install": "not available in this release",
    },
}


def list_backends() -> dict[str, bool]:
    """Availability of every known backend name (no backend is imported)."""
    return {name: name in _REGISTRY and is_installed(_REGISTRY[name][1]) for name in _INFO}


def get_backend_info(backend: str) -> dict[str, Any]:
    """Static information about a backend, plus ``available``.

    Args:
        backend: Backend name (case-insensitive).

    Returns:
        ``{"name", "description", "formats", "license", "performance",
        "use_cases", "install", "available"}``.

    Raises:
        ValueError: Unknown backend name.
    """
    key = str(backend).lower()
    if key not in _INFO:
        raise ValueError(f"Unknown backend '{backend}'. Known backends: {sorted(_INFO)}")
    return {**_INFO[key], "available": list_backends()[key]}


def get_backend(
    backend: str = "pinocchio", model_path: str | None = None, **kwargs: Any
) -> DynamicsBackend:
    """Create a backend by name.

    Args:
        backend: ``"pinocchio"`` or ``"mujoco"`` (case-insensitive).
        model_path: Robot description file (URDF; MJCF or URDF for MuJoCo).
        **kwargs: Options of the backend class.

    Raises:
        ValueError: Unknown backend, backend whose package is not installed
            (the message names the install command), or no ``model_path``.
    """
    key = str(backend).lower()
    available = [n for n, ok in list_backends().items() if ok]
    if key not in _REGISTRY:
        raise ValueError(f"Backend '{backend}' not available. Available backends: {available}")
    backend_class, package, install = _REGISTRY[key]
    if not is_installed(package):
        raise ValueError(
            f"Backend '{backend}' not available: the '{package}' package is not installed. "
            f"Install with: {install}. Available backends: {available}"
        )
    if model_path is None:
        raise ValueError("model_path is required")
    return backend_class()(model_path, **kwargs)
