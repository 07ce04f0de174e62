"""Dynamics backends: the engines figaroh's numerical tools compute through.

Only the Pinocchio backend ships; ``list_backends`` reports the others as
unavailable so scripts can test for them.
"""

from __future__ import annotations

from typing import Any

from .base import DynamicsBackend
from .pinocchio import PinocchioBackend

_BACKENDS = {"pinocchio": PinocchioBackend}

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
        "description": "Physics simulator (not shipped with this figaroh)",
        "formats": ["mjcf", "urdf"],
        "license": "Apache-2.0",
        "performance": "fast",
        "use_cases": ["simulation"],
        "install": "not available in this release",
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
    """Availability of every known backend name."""
    return {name: name in _BACKENDS for name in _INFO}


def get_backend_info(name: str) -> dict:
    """Static information about a backend, plus ``available``.

    Raises:
        ValueError: Unknown backend name.
    """
    key = str(name).lower()
    if key not in _INFO:
        raise ValueError(f"Unknown backend '{name}'. Known backends: {sorted(_INFO)}")
    return {**_INFO[key], "available": key in _BACKENDS}


def get_backend(
    backend: str = "pinocchio", model_path: str | None = None, **kwargs: Any
) -> DynamicsBackend:
    """Create a backend by name.

    Raises:
        ValueError: Unknown/unavailable backend, or no ``model_path``.
    """
    key = str(backend).lower()
    if key not in _BACKENDS:
        available = [n for n, ok in list_backends().items() if ok]
        raise ValueError(f"Backend '{backend}' not available. Available backends: {available}")
    if model_path is None:
        raise ValueError("model_path is required")
    return _BACKENDS[key](model_path, **kwargs)


__all__ = [
    "DynamicsBackend",
    "PinocchioBackend",
    "get_backend",
    "list_backends",
    "get_backend_info",
]
