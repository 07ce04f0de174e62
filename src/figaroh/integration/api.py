"""One-call dynamic identification: robot model + CSV logs + configuration → base parameters.

:class:`RobotIdentificationSystem` runs the whole
:class:`~figaroh.identification.base_identification.BaseIdentification`
workflow (filtering, regressor, zero-column elimination, QR base parameters,
least squares, quality and validation metrics) on the robot model of any
registered backend, with the data read from CSV files::

    system = RobotIdentificationSystem.from_urdf("ur10.urdf")
    result = system.identify_parameters("ur10.yaml", data_dir="logs/train")
    result.phi_base, result.params_base, result.rms_error

The effort model is τ = W(q, q̇, q̈) φ [N·m, N], identified in the base
parameters φ_b = M θ (θ the standard parameters: per body m [kg], m·c [kg·m],
I [kg·m²], plus the friction / armature / offset terms the configuration
enables).

**Backends.** On ``"pinocchio"`` the robot's own Pinocchio model is used. On
``"mujoco"`` the model is the one MuJoCo compiles from the file (MJCF or URDF),
and the regressor is evaluated on its Pinocchio mirror (same tree, joint axes,
inertias and gravity; see :mod:`figaroh.backends.mujoco`), so an MJCF-only robot
can be identified and the parameters are those of the MuJoCo bodies.

**Data.** ``data_dir`` (argument, else ``tasks.identification.data.data_dir`` of
the configuration, relative to the configuration file) names either

* a CSV file, or a folder holding ``identification.csv`` (or a single
  ``*.csv``), in the layout of :mod:`figaroh.cli.csv_identification`
  (header ``t, q_<joint>…, [dq_<joint>…], [ddq_<joint>…], tau_<joint>…, [mask]``);
* or a folder holding one headerless, comma-separated file per signal,
  ``q.csv`` and ``tau.csv`` plus optional ``dq.csv`` and ``ddq.csv`` (one
  column per active joint, one row per sample, in the order of
  ``robot.properties.joints.active_joints``). The file names can be changed
  with ``tasks.identification.data.data_files: {q: …, dq: …, ddq: …, tau: …}``.
  The samples are taken ``ts = 1 / sampling_frequency`` apart.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from figaroh.backends import get_backend
from figaroh.backends.base import DynamicsBackend
from figaroh.backends.pinocchio import PinocchioBackend
from figaroh.identification.settings import DEFAULT_SETTINGS as _IDENTIFICATION_DEFAULTS
from figaroh.integration._data import SystemIdentification
from figaroh.tools.load_robot import load_robot

logger = logging.getLogger(__name__)

#: Keyword arguments of :meth:`RobotIdentificationSystem.from_urdf` given to the robot loader.
_LOADER_KWARGS = ("load_geometry", "freeflyer_ori", "freeflyer_limits", "robot_pkg")


@dataclass
class IdentificationResult:
    """Outcome of :meth:`RobotIdentificationSystem.identify_parameters`.

    Attributes:
        phi_base: Identified base parameters φ_b (n_base,), SI units.
        params_base: Their names/expressions, e.g. ``"m_wrist_1_link + …"``.
        phi_standard: Standard parameters θ reconstructed from φ_b (only when
            the configuration enables ``reconstruction``), else None.
        rms_error: Effort RMSE of the fit ‖τ − W_b φ_b‖/√n [N·m or N].
        correlation: Pearson correlation of measured and fitted efforts.
        backend: Name of the backend the identification ran on.
        model_path: Robot description file.
        config: The flat identification settings (``identif_config``).
        raw: The full ``result`` dict of the identification.
        params_standard: Names of ``phi_standard`` (None without reconstruction).
    """

    phi_base: np.ndarray | None = None
    params_base: List[str] | None = None
    phi_standard: np.ndarray | None = None
    rms_error: float | None = None
    correlation: float | None = None
    backend: str = ""
    model_path: str = ""
    config: Dict[str, Any] | None = None
    raw: Dict[str, Any] | None = None
    params_standard: List[str] | None = field(default=None)

    @property
    def base_parameters(self) -> Dict[str, float]:
        """``{name: value}`` of the base parameters (empty before identification)."""
        if self.phi_base is None or self.params_base is None:
            return {}
        return dict(zip(self.params_base, np.asarray(self.phi_base).tolist(), strict=True))

    def __repr__(self) -> str:
        n = 0 if self.phi_base is None else len(self.phi_base)
        rms = "None" if self.rms_error is None else f"{self.rms_error:.4g}"
        return (
            f"IdentificationResult(backend='{self.backend}', n_base={n}, rms_error={rms}, "
            f"model_path='{self.model_path}')"
        )


class _BackendRobot:
    """Robot view of a backend's Pinocchio model, for the identification workflow.

    Exposes what :class:`BaseIdentification` reads: ``model``, ``data``,
    ``q0`` (the backend's reference configuration), ``v0``, ``robot_urdf``,
    ``isFext`` and a Pinocchio ``backend`` for the regressor.
    """

    def __init__(self, backend: DynamicsBackend):
        import pinocchio as pin

        if isinstance(backend, PinocchioBackend):
            model, data = backend.model, backend.data
        else:
            model = getattr(backend, "pinocchio_model", None)
            if model is None:
                raise NotImplementedError(
                    f"{type(backend).__name__} exposes no Pinocchio model ('pinocchio_model') "
                    "to evaluate the regressor on; identification needs one"
                )
            data = model.createData()
        self.model, self.data = model, data
        q0 = pin.neutral(model)
        neutral = getattr(backend, "neutral_configuration", None)
        convert = getattr(backend, "pinocchio_configuration", None)
        if callable(neutral) and callable(convert):
            q0 = convert(neutral())
        self.q0 = np.asarray(q0, dtype=float)
        self.v0 = np.zeros(model.nv)
        self.robot_urdf = str(backend.model_path or "")
        self.isFext = any(j.shortname() == "JointModelFreeFlyer" for j in model.joints)
        self.backend = (
            backend
            if isinstance(backend, PinocchioBackend)
            else PinocchioBackend.from_model(model, data)
        )

    @property
    def nq(self) -> int:
        return int(self.model.nq)

    @property
    def nv(self) -> int:
        return int(self.model.nv)


def _config_path(config) -> str:
    if not isinstance(config, (str, os.PathLike)):
        raise ValueError(
            f"config must be the path of a unified configuration YAML file, got "
            f"{type(config).__name__}"
        )
    path = Path(config)
    if not path.is_file():
        raise FileNotFoundError(f"Configuration file not found: {path}")
    return str(path)


class RobotIdentificationSystem:
    """Dynamic parameter identification of one robot on a chosen backend.

    Args:
        robot: A :class:`~figaroh.tools.robot.Robot` (or any object with a
            Pinocchio ``model``, ``data``, ``q0`` and ``robot_urdf``), or a
            :class:`~figaroh.backends.base.DynamicsBackend` instance.
        backend_name: Registered backend (``"pinocchio"``, ``"mujoco"``).
            For a backend other than Pinocchio, the backend is created from
            ``robot.robot_urdf`` (or the ``model_path`` keyword).
        **kwargs: Options of the backend (e.g. ``rigid_body`` for MuJoCo) and
            ``model_path``.

    Attributes:
        robot: The robot given (None when built from a backend or MJCF).
        identification_robot: The robot view whose model the identification uses.
        identification: The :class:`BaseIdentification` of the last run.
        result: The :class:`IdentificationResult` of the last run.

    Raises:
        ValueError: Unknown or unavailable backend, or no model file for it.
    """

    def __init__(self, robot, backend_name: str = "pinocchio", **kwargs: Any):
        name = str(backend_name).lower()
        model_path = kwargs.pop("model_path", None)
        if isinstance(robot, DynamicsBackend):
            backend, robot = robot, None
        elif name == "pinocchio":
            own = getattr(robot, "backend", None)
            backend = (
                own
                if isinstance(own, PinocchioBackend)
                else PinocchioBackend.from_model(robot.model, getattr(robot, "data", None))
            )
        else:
            path = model_path or getattr(robot, "robot_urdf", None)
            if not path:
                raise ValueError(
                    f"The '{name}' backend is built from a model file: the robot has no "
                    "robot_urdf, pass model_path="
                )
            backend = get_backend(name, str(path), **kwargs)
        self._backend_name = name
        self._backend = backend
        self.robot = robot
        if robot is not None and isinstance(backend, PinocchioBackend):
            self.identification_robot = robot
        else:
            self.identification_robot = _BackendRobot(backend)
        self.model_path = str(
            model_path or getattr(robot, "robot_urdf", None) or backend.model_path or ""
        )
        self.identification: SystemIdentification | None = None
        self.result: IdentificationResult | None = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_urdf(
        cls,
        urdf_path: str,
        backend: str = "pinocchio",
        package_dirs=None,
        free_flyer: bool = False,
        **kwargs: Any,
    ) -> RobotIdentificationSystem:
        """Load a URDF with :func:`figaroh.tools.load_robot.load_robot` and wrap it.

        Args:
            urdf_path: URDF file.
            backend: Backend name.
            package_dirs: Mesh package folders (see ``load_robot``).
            free_flyer: Add a free-flyer root joint (floating base).
            **kwargs: ``load_geometry`` (default False: identification needs no
                meshes), ``freeflyer_ori``, ``freeflyer_limits``, ``robot_pkg``
                go to the loader; the rest to the backend.
        """
        loader_kwargs = {k: kwargs.pop(k) for k in _LOADER_KWARGS if k in kwargs}
        loader_kwargs.setdefault("load_geometry", False)
        robot = load_robot(
            str(urdf_path),
            package_dirs=package_dirs,
            isFext=free_flyer,
            loader="figaroh",
            **loader_kwargs,
        )
        return cls(robot, backend, **kwargs)

    @classmethod
    def from_mjcf(cls, mjcf_path: str, backend: str = "mujoco", **kwargs: Any):
        """Identification system of an MJCF model, compiled by MuJoCo.

        Args:
            mjcf_path: MJCF file.
            backend: Must be ``"mujoco"``.
            **kwargs: Options of :class:`~figaroh.backends.mujoco.MuJoCoBackend`.

        Raises:
            ValueError: ``backend`` is not ``"mujoco"``, or MuJoCo is not installed.
        """
        if str(backend).lower() != "mujoco":
            raise ValueError(
                f"from_mjcf needs the 'mujoco' backend (got '{backend}'); "
                "load URDF files with from_urdf"
            )
        return cls(get_backend("mujoco", str(mjcf_path), **kwargs), "mujoco")

    # ------------------------------------------------------------------ properties
    @property
    def backend(self) -> DynamicsBackend:
        """The dynamics backend."""
        return self._backend

    @property
    def backend_name(self) -> str:
        """Name of the backend (lower case)."""
        return self._backend_name

    @property
    def nq(self) -> int:
        """Configuration size of the backend's model."""
        return int(self._backend.nq)

    @property
    def nv(self) -> int:
        """Velocity size (DOFs) of the backend's model."""
        return int(self._backend.nv)

    def __repr__(self) -> str:
        return (
            f"RobotIdentificationSystem(backend='{self._backend_name}', nq={self.nq}, nv={self.nv})"
        )

    # ------------------------------------------------------------------ identification
    def identify_parameters(
        self,
        config,
        data_dir=None,
        truncate=None,
        decimate=_IDENTIFICATION_DEFAULTS.decimate,
        decimation_factor=_IDENTIFICATION_DEFAULTS.decimation_factor,
        zero_tolerance=_IDENTIFICATION_DEFAULTS.zero_tolerance,
        plotting=False,
        save_results=False,
        **kwargs: Any,
    ) -> IdentificationResult:
        """Identify the base parameters from CSV logs.

        Args:
            config: Path of the unified configuration YAML (``tasks.identification``).
            data_dir: Training data (see the module docstring); default
                ``tasks.identification.data.data_dir``.
            truncate: Optional ``(start, end)`` sample range to keep.
            decimate: Low-pass and down-sample the rows by ``decimation_factor``.
            decimation_factor: Down-sampling factor.
            zero_tolerance: Squared column norm under which a regressor column is dropped.
                Defaults of these three: see
                :class:`~figaroh.identification.settings.IdentificationSettings`.
            plotting: Plot measured vs identified efforts.
            save_results: Save the results under ``results/``.
            **kwargs: Further options of :meth:`BaseIdentification.solve`
                (e.g. ``wls=True``, ``html_report=True``).

        Returns:
            The :class:`IdentificationResult`.

        Raises:
            ValueError: ``config`` is not a path, or no data source is given.
            FileNotFoundError: The configuration or a data file is missing.
        """
        path = _config_path(config)
        ident = SystemIdentification(self.identification_robot, path, data_dir)
        ident.initialize(truncate=truncate)
        ident.solve(
            decimate=decimate,
            decimation_factor=decimation_factor,
            zero_tolerance=zero_tolerance,
            plotting=plotting,
            save_results=save_results,
            **kwargs,
        )
        recon = getattr(ident, "_recon_result", None)
        params_base = ident.params_base
        if params_base is None:
            raise RuntimeError(
                "the identification finished without base parameters (params_base is None)"
            )
        self.identification = ident
        self.result = IdentificationResult(
            phi_base=np.asarray(ident.phi_base, dtype=float),
            params_base=list(params_base),
            phi_standard=None if recon is None else np.asarray(recon.theta_r, dtype=float),
            rms_error=None if ident.rms_error is None else float(ident.rms_error),
            correlation=None if ident.correlation is None else float(ident.correlation),
            backend=self._backend_name,
            model_path=self.model_path,
            config=ident.identif_config,
            raw=ident.result,
            params_standard=None if recon is None else list(recon.params_r),
        )
        return self.result


__all__ = ["IdentificationResult", "RobotIdentificationSystem"]
