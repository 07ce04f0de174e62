"""Pinocchio implementation of :class:`~figaroh.backends.base.DynamicsBackend`.

Besides the per-sample methods of the interface, :meth:`PinocchioBackend.compute_regressor_batch`
and :meth:`PinocchioBackend.compute_inverse_dynamics_batch` evaluate many samples
with the Python overhead of a single preallocated loop.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pinocchio as pin

from figaroh._optional import is_installed

from .base import DynamicsBackend

logger = logging.getLogger(__name__)

#: Whether the ``pinocchio`` package is installed. It is a core dependency that
#: this module imports, so the flag is True wherever the module imports.
PINOCCHIO_AVAILABLE: bool = is_installed("pinocchio")


class PinocchioBackend(DynamicsBackend):
    """Dynamics computed by Pinocchio.

    Args:
        model_path: URDF file to load (``None`` together with :meth:`from_model`).
        **kwargs: ``free_flyer``/``isFext`` (add a free-flyer root),
            ``package_dirs``, ``verbose``.

    Raises:
        RuntimeError: The model could not be loaded.
    """

    def __init__(self, model_path: str | None = None, **kwargs: Any):
        super().__init__(model_path, **kwargs)
        # pinocchio.Model / pinocchio.Data (untyped); loaded below, or set by from_model.
        self._model: Any = None
        self._data: Any = None
        if model_path is not None:
            free_flyer = bool(kwargs.get("free_flyer", kwargs.get("isFext", False)))
            try:
                if free_flyer:
                    self._model = pin.buildModelFromUrdf(str(model_path), pin.JointModelFreeFlyer())
                else:
                    self._model = pin.buildModelFromUrdf(str(model_path))
            except Exception as exc:  # noqa: BLE001 - Pinocchio raises several types
                raise RuntimeError(
                    f"Failed to load model {model_path} with Pinocchio: {exc}"
                ) from exc
            self._data = self._model.createData()

    @classmethod
    def from_model(cls, model: Any, data: Any = None, **kwargs: Any) -> PinocchioBackend:
        """Wrap an existing Pinocchio model/data without reloading (shares them)."""
        backend = cls(None, **kwargs)
        backend._model = model
        backend._data = data if data is not None else model.createData()
        return backend

    # ------------------------------------------------------------------ properties
    @property
    def model(self) -> Any:
        """The wrapped ``pinocchio.Model``."""
        return self._model

    @property
    def data(self) -> Any:
        """The wrapped ``pinocchio.Data``."""
        return self._data

    @property
    def nq(self) -> int:
        return int(self._model.nq)

    @property
    def nv(self) -> int:
        return int(self._model.nv)

    @property
    def model_format(self) -> str:
        return "urdf"

    def get_model_object(self) -> Any:
        """The wrapped ``pinocchio.Model``."""
        return self._model

    # ------------------------------------------------------------------ per-sample dynamics
    def compute_mass_matrix(self, q: np.ndarray) -> np.ndarray:
        M = pin.crba(self._model, self._data, np.asarray(q, dtype=float))
        M = np.triu(M) + np.triu(M, 1).T
        return np.array(M, copy=True)

    def compute_coriolis_matrix(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return np.array(
            pin.computeCoriolisMatrix(
                self._model, self._data, np.asarray(q, float), np.asarray(v, float)
            ),
            copy=True,
        )

    def compute_gravity_vector(self, q: np.ndarray) -> np.ndarray:
        return np.array(
            pin.computeGeneralizedGravity(self._model, self._data, np.asarray(q, float)), copy=True
        )

    def compute_forward_kinematics(self, q: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
        pin.forwardKinematics(self._model, self._data, np.asarray(q, float))
        pin.updateFramePlacements(self._model, self._data)
        out: dict[str, dict[str, np.ndarray]] = {}
        for fid in range(1, self._model.nframes):
            M = self._data.oMf[fid]
            out[self._model.frames[fid].name] = {
                "position": np.array(M.translation, copy=True),
                "orientation": np.array(M.rotation, copy=True),
                "transformation": np.array(M.homogeneous, copy=True),
            }
        return out

    def get_frame_id(self, frame: str) -> int:
        """Index of ``frame``; ``ValueError`` listing the frames when unknown."""
        if not self._model.existFrame(frame):
            names = [f.name for f in self._model.frames]
            raise ValueError(f"Unknown frame '{frame}'. Available frames: {names}")
        return int(self._model.getFrameId(frame))

    def compute_jacobian(self, q: np.ndarray, frame: str) -> np.ndarray:
        fid = self.get_frame_id(frame)
        J = pin.computeFrameJacobian(self._model, self._data, np.asarray(q, float), fid, pin.LOCAL)
        return np.array(J, copy=True).reshape(6, self.nv)

    def compute_regressor(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        Y = pin.computeJointTorqueRegressor(
            self._model,
            self._data,
            np.asarray(q, float),
            np.asarray(v, float),
            np.asarray(a, float),
        )
        Y = np.array(Y, copy=True)
        return Y.reshape(self.nv, -1) if Y.ndim == 1 else Y

    def compute_inverse_dynamics(self, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
        return np.array(
            pin.rnea(
                self._model,
                self._data,
                np.asarray(q, float),
                np.asarray(v, float),
                np.asarray(a, float),
            ),
            copy=True,
        )

    def compute_forward_dynamics(self, q: np.ndarray, v: np.ndarray, tau: np.ndarray) -> np.ndarray:
        return np.array(
            pin.aba(
                self._model,
                self._data,
                np.asarray(q, float),
                np.asarray(v, float),
                np.asarray(tau, float),
            ),
            copy=True,
        )

    # ------------------------------------------------------------------ batched
    def compute_regressor_batch(
        self, Q: np.ndarray, V: np.ndarray, A: np.ndarray, out: np.ndarray | None = None
    ) -> np.ndarray:
        """Joint-torque regressors of N samples, stacked DOF-major.

        Args:
            Q: Configurations (N, nq).
            V: Velocities (N, nv) [rad/s].
            A: Accelerations (N, nv) [rad/s²].
            out: Optional preallocated (nv, N, ≥10·nbodies) array written in place.

        Returns:
            Array (nv, N, 10·nbodies): ``out[j, i]`` is row j of sample i's regressor.
        """
        model, data = self._model, self._data
        n = Q.shape[0]
        ncols = 10 * (model.njoints - 1)
        if out is None:
            out = np.empty((self.nv, n, ncols))
        regressor = pin.computeJointTorqueRegressor
        if not (len(Q) == len(V) == len(A) == out.shape[1]):
            raise ValueError(
                f"Q, V, A and out must hold the same number of samples, got "
                f"{len(Q)}, {len(V)}, {len(A)} and {out.shape[1]}"
            )
        # target[i] is out[:, i, :ncols]; an integer index is the cheapest
        # numpy setitem. (A plain bytecode loop also lets a helper thread take
        # the GIL, see regressor._BackgroundCopy; a C-driven map would not.)
        target = out.transpose(1, 0, 2)[:, :, :ncols]
        for i, q, v, a in zip(range(n), Q, V, A, strict=True):
            target[i] = regressor(model, data, q, v, a)
        return out

    def compute_inverse_dynamics_batch(
        self, Q: np.ndarray, V: np.ndarray, A: np.ndarray
    ) -> np.ndarray:
        """Inverse dynamics of N samples: array (N, nv) [N·m]."""
        model, data = self._model, self._data
        rnea = pin.rnea
        rows = [rnea(model, data, q, v, a) for q, v, a in zip(Q, V, A, strict=True)]
        return np.array(rows).reshape(-1, self.nv)

    # ------------------------------------------------------------------ extras
    def compute_difference(self, q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
        return np.array(
            pin.difference(self._model, np.asarray(q1, float), np.asarray(q2, float)), copy=True
        )

    def compute_integrate(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Configuration reached from ``q`` by velocity ``v`` in unit time."""
        return np.array(
            pin.integrate(self._model, np.asarray(q, float), np.asarray(v, float)), copy=True
        )

    def random_configuration(self) -> np.ndarray:
        """A random configuration within the model's position limits.

        ``pinocchio.randomConfiguration``: uniform between ``lowerPositionLimit``
        and ``upperPositionLimit`` (finite limits required), uniformly random
        unit quaternions for spherical and free-flyer joints.
        """
        return np.array(pin.randomConfiguration(self._model), copy=True)

    def get_inertias(self) -> list[Any]:
        return list(self._model.inertias)

    def get_joint_names(self) -> list[str]:
        return list(self._model.names[1:])

    def get_frame_names(self) -> list[str]:
        return [f.name for f in self._model.frames]
