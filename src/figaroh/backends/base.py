"""Abstract dynamics backend: the interface figaroh's numerical tools compute through."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Any

import numpy as np


class DynamicsBackend(ABC):
    """Rigid-body dynamics engine wrapped behind one interface.

    Conventions: configurations ``q`` have ``nq`` entries [rad, m, unit
    quaternions]; velocities ``v`` and accelerations ``a`` have ``nv`` entries
    [rad/s, m/s] / [rad/s², m/s²]; efforts are generalized forces [N·m, N].

    Args:
        model_path: Path of the robot description the backend was built from
            (``None`` when it wraps an existing model).
        **kwargs: Backend-specific options, kept in :attr:`config`.
    """

    def __init__(self, model_path: str | None = None, **kwargs: Any):
        self._model_path = model_path
        self._config = dict(kwargs)

    # ------------------------------------------------------------------ properties
    @property
    def model_path(self) -> str | None:
        """Path of the robot description (``None`` for wrapped models)."""
        return self._model_path

    @property
    def config(self) -> dict[str, Any]:
        """Options the backend was created with."""
        return dict(self._config)

    @property
    @abstractmethod
    def nq(self) -> int:
        """Size of the configuration vector."""

    @property
    @abstractmethod
    def nv(self) -> int:
        """Size of the velocity vector (number of DOFs)."""

    @property
    @abstractmethod
    def model_format(self) -> str:
        """Description format, e.g. ``"urdf"``."""

    # ------------------------------------------------------------------ dynamics
    @abstractmethod
    def compute_mass_matrix(self, q: np.ndarray) -> np.ndarray:
        """Joint-space inertia matrix M(q), (nv, nv) [kg·m², kg]."""

    @abstractmethod
    def compute_coriolis_matrix(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Coriolis matrix C(q, v) with C v the Coriolis/centrifugal effort, (nv, nv)."""

    @abstractmethod
    def compute_gravity_vector(self, q: np.ndarray) -> np.ndarray:
        """Generalized gravity effort g(q), (nv,) [N·m]."""

    @abstractmethod
    def compute_forward_kinematics(self, q: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        """Placement of every frame: ``{frame: {"position", "orientation", "transformation"}}``."""

    @abstractmethod
    def compute_jacobian(self, q: np.ndarray, frame: str) -> np.ndarray:
        """Frame Jacobian, (6, nv), rows ``[linear; angular]``."""

    @abstractmethod
    def compute_regressor(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Joint-torque regressor Y with τ = Y θ, (nv, 10·nbodies)."""

    @abstractmethod
    def compute_inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        """Inverse dynamics τ = M(q) a + C(q, v) v + g(q), (nv,) [N·m]."""

    @abstractmethod
    def compute_forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """Forward dynamics: joint accelerations (nv,) [rad/s²] produced by ``tau``."""

    # ------------------------------------------------------------------ optional
    def compute_difference(self, q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
        """Lie-group difference ``q2 ⊖ q1`` (nv,): the velocity taking q1 to q2 in unit time."""
        raise NotImplementedError(f"{type(self).__name__} does not implement compute_difference")

    def get_inertias(self) -> list[Any]:
        """Body inertias, index 0 being the universe."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_inertias")

    def compute_dynamics_derivatives(self, q: np.ndarray, v: np.ndarray) -> dict[str, np.ndarray]:
        """Derivatives ``{"dM_dq", "dC_dq", "dC_dv", "dg_dq"}`` (optional)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement compute_dynamics_derivatives"
        )

    def get_joint_names(self) -> list[str]:
        """Joint names, universe excluded (optional)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_joint_names")

    def get_frame_names(self) -> list[str]:
        """Frame names (optional)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_frame_names")

    def get_frame_id(self, frame: str) -> int:
        """Backend index of the frame called ``frame`` (optional).

        Raises:
            ValueError: No such frame (implementations list the known ones).
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement get_frame_id")

    def compute_integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Lie-group integration ``q ⊕ v`` (nq,): the configuration reached from
        ``q`` by the constant velocity ``v`` [rad/s, m/s] in unit time (optional).

        It is the inverse of :meth:`compute_difference`:
        ``compute_difference(q, compute_integrate(q, v)) == v``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement compute_integrate")

    def random_configuration(self) -> np.ndarray:
        """A random valid configuration (nq,) within the position limits (optional)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement random_configuration")

    def get_model_object(self) -> Any:
        """The engine's native model object (e.g. ``pinocchio.Model``, ``mujoco.MjModel``)."""
        raise NotImplementedError(f"{type(self).__name__} does not implement get_model_object")

    # ------------------------------------------------------------------ context manager
    def __enter__(self) -> DynamicsBackend:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_path='{self._model_path}', "
            f"format='{self.model_format}', nq={self.nq}, nv={self.nv})"
        )
