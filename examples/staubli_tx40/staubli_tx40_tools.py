"""Stäubli TX40 dynamic identification from real motor-side logs.

``TX40Identification`` turns the TX40 controller log (motor encoder positions
[rad] and motor currents, one CSV each, 5000 Hz) into joint quantities and
adds what the generic :class:`~figaroh.identification.base_identification.BaseIdentification`
does not know about this robot:

* **Drive chain** (reduction ratios ``n_j`` and motor torque constants
  ``Kt_j``). The wrist is coupled: motor 6 turns with ``q_m6 = n6·(q5 + q6)``,
  so the motor → joint matrix is ``N = diag(n)`` with ``N[5, 4] = n6`` and
  ``q = N⁻¹ q_m``; the controller zero differs from the MDH zero of the URDF by
  ``q2 −= π/2``, ``q3 += π/2``. By virtual work the joint torques are
  ``τ = Nᵀ τ_m`` with ``τ_m = diag(Kt) i_m``, i.e. ``T = diag(n)`` with
  ``T[4, 5] = n6``.
* **Coupled-wrist parameters** ``Iam6`` [kg·m²], ``fvm6`` [N·m·s/rad] and
  ``fsm6`` [N·m]: three extra regressor columns — rows of joint 5 get
  ``[a6, v6, sign(v5 + v6)]``, rows of joint 6 get ``[a5, v5, sign(v5 + v6)]``
  (``sign`` is 0 where ``|v5 + v6|`` is below the optional
  ``problem.coulomb_deadband``, as in the ``fs`` columns).
* **Edge trimming**: ``5·nbutter`` samples are dropped at both ends
  (zero-phase filter transients).
* **Per-joint sample selection** (overrides ``_mask_rows``): the rows of joint
  ``j`` where the filtered ``|dq_j|`` is below its threshold ``dq_lim_def[j]``
  are not fitted — near zero speed the Coulomb model ``fs·sign(dq)`` is wrong
  (stiction, velocity sign noise) and would bias the friction estimates. The
  joint blocks then have different lengths, so the per-block helpers (WLS
  variances, per-joint residuals) are overridden to use the true block sizes.
* **Essential parameters** (Pham & Gautier) with ``ratio_essential``, see
  :func:`figaroh.identification.essential.essential_parameters`.

Config keys read beyond the generic ones (see ``config/staubli_tx40_unified_config.yaml``):
``robot.properties.drives.motor_torque_constants`` (6 values [N·m/A]) and
``tasks.identification.sample_selection.{min_joint_speed (6 values [rad/s]),
edge_samples}``.
"""

from __future__ import annotations

import csv
import logging
import math
import os
from pathlib import Path

import numpy as np

from figaroh.identification.base_identification import BaseIdentification
from figaroh.identification.essential import EssentialParameters, essential_parameters
from figaroh.identification.exceptions import (
    IdentificationConfigError,
    IdentificationDataError,
    IdentificationStateError,
)
from figaroh.tools.joint_terms import term
from figaroh.utils.config_parser import UnifiedConfigParser

logger = logging.getLogger(__name__)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONFIG = HERE / "config" / "staubli_tx40_unified_config.yaml"
DEFAULT_DATA_DIR = ROOT.parent / "shared" / "data" / "staubli_tx40"
URDF_NAME = "tx40_mdh_modified.urdf"
POSITION_FILE = "pos_read_data.csv"
CURRENT_FILE = "curr_data.csv"
CSV_COLUMNS = [f"Joint_{i}" for i in range(1, 7)]
TX40_JOINTS = [f"joint_{i}" for i in range(1, 7)]
#: Controller zero → MDH (URDF) zero: q2 −= π/2, q3 += π/2 [rad].
JOINT_ZERO_SHIFT = np.array([0.0, -math.pi / 2, math.pi / 2, 0.0, 0.0, 0.0])
COUPLED_WRIST_PARAMETERS = ("Iam6", "fvm6", "fsm6")


def load_tx40(data_dir: str | os.PathLike = DEFAULT_DATA_DIR):
    """The TX40 :class:`~figaroh.tools.robot.Robot` (dynamics only).

    Args:
        data_dir: Folder holding ``tx40_mdh_modified.urdf``.

    Raises:
        FileNotFoundError: The URDF is missing.
    """
    from figaroh.tools.robot import Robot

    urdf = Path(data_dir) / URDF_NAME
    if not urdf.is_file():
        raise FileNotFoundError(
            f"TX40 URDF not found: {urdf}; pass the folder holding {URDF_NAME} "
            "(default ../shared/data/staubli_tx40)"
        )
    return Robot(str(urdf), load_geometry=False)


def motor_to_joint_matrix(ratios) -> np.ndarray:
    """``N`` with ``q_m = N q``: ``diag(n)`` plus the wrist coupling ``N[5, 4] = n6``."""
    n = np.asarray(ratios, dtype=float)
    N = np.diag(n)
    N[5, 4] = n[5]
    return N


def current_to_torque_matrix(ratios, torque_constants) -> np.ndarray:
    """``T`` with ``τ = T i_m`` [N·m per A]: ``Nᵀ·diag(Kt)`` (``T[4, 5] = n6·Kt6``)."""
    return motor_to_joint_matrix(ratios).T @ np.diag(np.asarray(torque_constants, dtype=float))


def _read_log(path: Path) -> np.ndarray:
    """(N, 6) table of a TX40 log CSV with header ``Joint_1 … Joint_6``."""
    if not path.is_file():
        raise FileNotFoundError(f"TX40 log not found: {path}")
    with open(path, newline="") as f:
        header = [h.strip() for h in next(csv.reader(f), [])]
    if header != CSV_COLUMNS:
        raise IdentificationDataError(f"{path}: expected the header {CSV_COLUMNS}, got {header}")
    table = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if table.shape[1] != 6:
        raise IdentificationDataError(f"{path}: expected 6 columns, got {table.shape[1]}")
    if not np.all(np.isfinite(table)):
        i, j = np.argwhere(~np.isfinite(table))[0]
        raise IdentificationDataError(f"{path}: NaN/inf at data row {i}, column {CSV_COLUMNS[j]}")
    return table


def _six_numbers(value, key: str, positive: bool = False, nonzero: bool = False) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise IdentificationConfigError(f"{key} must be 6 numbers, got {value!r}") from exc
    if arr.size != 6 or not np.all(np.isfinite(arr)):
        raise IdentificationConfigError(
            f"{key} must be 6 finite numbers (one per joint), got {value!r}"
        )
    if positive and np.any(arr < 0):
        raise IdentificationConfigError(f"{key} must be ≥ 0, got {value!r}")
    if nonzero and np.any(arr == 0):
        raise IdentificationConfigError(f"{key} must be non-zero, got {value!r}")
    return arr


class TX40Identification(BaseIdentification):
    """Identification of the Stäubli TX40 from motor positions and currents.

    Args:
        robot: The TX40 :class:`~figaroh.tools.robot.Robot` (see :func:`load_tx40`).
        config_file: Unified configuration (default ``config/staubli_tx40_unified_config.yaml``).
        data_dir: Folder with ``pos_read_data.csv`` (motor positions [rad]) and
            ``curr_data.csv`` (motor currents [A]).

    Attributes:
        reduction_ratios: ``n_j`` (motor/joint) [-].
        torque_constants: ``Kt_j`` [N·m/A].
        speed_thresholds: ``dq_lim_def`` [rad/s] of the per-joint row selection (None: off).
        edge_samples: Samples dropped at both ends.
        essential: Last :class:`EssentialParameters` (after :meth:`compute_essential_parameters`).

    Raises:
        IdentificationConfigError: Missing/malformed TX40 settings, or a
            setting this class cannot honour (``torque_fit_joints``,
            ``validation_data_file``).
    """

    def __init__(
        self,
        robot,
        config_file: str | os.PathLike = CONFIG,
        data_dir: str | os.PathLike = DEFAULT_DATA_DIR,
    ):
        super().__init__(robot, str(config_file))
        self.data_dir = Path(data_dir)
        cfg = self.identif_config
        if list(cfg.get("active_joints") or []) != TX40_JOINTS:
            raise IdentificationConfigError(
                f"joints.active_joints must be {TX40_JOINTS} (the six logged drives), got "
                f"{cfg.get('active_joints')}"
            )
        if cfg.get("torque_fit_joints") is not None:
            raise IdentificationConfigError(
                "problem.torque_fit_joints is not supported by TX40Identification (its per-joint "
                "row selection fits every joint); remove the key"
            )
        if cfg.get("validation_data_file"):
            raise IdentificationConfigError(
                "data.validation_data_file is not supported by TX40Identification: the base "
                "class rebuilds the held-out regressor without the coupled-wrist columns; "
                "leave it empty"
            )
        self.reduction_ratios = _six_numbers(
            cfg.get("reduction_ratio"), "mechanics.reduction_ratios", nonzero=True
        )
        unified = UnifiedConfigParser(str(config_file)).parse()
        props = (unified.get("robot") or {}).get("properties") or {}
        drives = props.get("drives") or {}
        if "motor_torque_constants" not in drives:
            raise IdentificationConfigError(
                "robot.properties.drives.motor_torque_constants is missing: give the 6 motor "
                "torque constants Kt [N·m/A] (1.0 when the log already holds motor torques)"
            )
        self.torque_constants = _six_numbers(
            drives["motor_torque_constants"], "drives.motor_torque_constants", nonzero=True
        )
        task = (unified.get("tasks") or {}).get("identification") or {}
        selection = task.get("sample_selection") or {}
        thresholds = selection.get("min_joint_speed")
        self.speed_thresholds = (
            None
            if thresholds is None
            else _six_numbers(thresholds, "sample_selection.min_joint_speed", positive=True)
        )
        nbutter = int(self.filter_config.get("filter_params", {}).get("nbutter", 4))
        self.edge_samples = int(selection.get("edge_samples", 5 * nbutter))
        if self.edge_samples < 0:
            raise IdentificationConfigError(
                f"sample_selection.edge_samples must be ≥ 0, got {self.edge_samples}"
            )
        self._row_block_sizes = None
        self.essential = None

    def __repr__(self) -> str:
        coupled = bool(self.identif_config.get("has_coupled_wrist"))
        return super().__repr__()[:-1] + f", data_dir='{self.data_dir}', coupled_wrist={coupled})"

    # ------------------------------------------------------------------ data
    def load_trajectory_data(self, data_source=None) -> dict:
        """Read the motor log: positions [rad] and currents [A] (motor side).

        Args:
            data_source: Folder holding the two CSVs (default ``self.data_dir``).

        Returns:
            ``timestamps`` (N, 1) [s] = ``k·ts``, motor ``positions`` (N, 6)
            [rad], ``velocities = accelerations = None``, motor currents as
            ``torques`` (N, 6) [A] (converted by :meth:`process_torque_data`).

        Raises:
            FileNotFoundError: A CSV is missing.
            IdentificationDataError: Bad header, NaN/inf or row-count mismatch.
        """
        folder = Path(data_source) if data_source else self.data_dir
        q_motor = _read_log(folder / POSITION_FILE)
        current = _read_log(folder / CURRENT_FILE)
        if q_motor.shape != current.shape:
            raise IdentificationDataError(
                f"{POSITION_FILE} has {q_motor.shape[0]} rows but {CURRENT_FILE} has "
                f"{current.shape[0]}; both logs must hold the same samples"
            )
        ts = float(self.identif_config["ts"])
        return {
            "timestamps": (np.arange(q_motor.shape[0]) * ts)[:, None],
            "positions": q_motor,
            "velocities": None,
            "accelerations": None,
            "torques": current,
        }

    def process_kinematics_data(self, filter_config=None):
        """Motor → joint positions ``q = N⁻¹ q_m`` + zero shift, then filter and differentiate."""
        raw = dict(self.raw_data)
        q_motor = np.asarray(raw.get("motor_positions", raw["positions"]), dtype=float)
        N = motor_to_joint_matrix(self.reduction_ratios)
        raw["motor_positions"] = q_motor
        raw["positions"] = np.linalg.solve(N, q_motor.T).T + JOINT_ZERO_SHIFT
        self.raw_data = raw
        self.filter_kinematics_data(filter_config or self.filter_config)

    def process_torque_data(self, **kwargs) -> np.ndarray:
        """Joint torques ``τ = T·i_m`` [N·m]; drop ``edge_samples`` at both ends of every signal."""
        current = np.asarray(self.raw_data["torques"], dtype=float)
        tau = current @ current_to_torque_matrix(self.reduction_ratios, self.torque_constants).T
        n, e = tau.shape[0], self.edge_samples
        if n <= 2 * e + 1:
            raise IdentificationDataError(
                f"the log has {n} samples, too few to drop {e} at both ends"
            )
        keep = slice(e, n - e)
        for key in ("timestamps", "positions", "velocities", "accelerations"):
            if self.processed_data.get(key) is not None:
                self.processed_data[key] = np.asarray(self.processed_data[key])[keep]
        if self._sample_mask is not None and len(self._sample_mask) == n:
            self._sample_mask = np.asarray(self._sample_mask)[keep]
        self.processed_data["torques"] = tau[keep]
        return self.processed_data["torques"]

    # ------------------------------------------------------------------ model
    def _wrist_dofs(self) -> tuple[int, int]:
        idxv = self.identif_config["act_idxv"]
        return int(idxv[4]), int(idxv[5])

    def calculate_full_regressor(self):
        """Base regressor plus, with a coupled wrist, the ``Iam6, fvm6, fsm6`` columns."""
        super().calculate_full_regressor()
        if not self.identif_config.get("has_coupled_wrist"):
            return
        n, nv = self.num_samples, self.model.nv
        i5, i6 = self._wrist_dofs()
        v = self.processed_data["velocities"]
        a = self.processed_data["accelerations"]
        extra = np.zeros((nv, n, 3))
        # sign(v5 + v6), 0 inside the optional Coulomb dead band, as the fs columns
        deadband = float(self.identif_config.get("coulomb_deadband") or 0.0)
        coupled_sign = term("fs").evaluate(v[:, i5] + v[:, i6], None, deadband)
        extra[i5] = np.column_stack([a[:, i6], v[:, i6], coupled_sign])
        extra[i6] = np.column_stack([a[:, i5], v[:, i5], coupled_sign])
        self.dynamic_regressor = np.hstack([self.dynamic_regressor, extra.reshape(nv * n, 3)])

    def initialize_standard_parameters(self):
        """URDF + friction/armature/offset parameters, then ``Iam6, fvm6, fsm6`` (column order)."""
        super().initialize_standard_parameters()
        if self.identif_config.get("has_coupled_wrist"):
            for key in COUPLED_WRIST_PARAMETERS:
                self.standard_parameter[key] = float(self.identif_config.get(key, 0.0))
        if len(self.standard_parameter) != self.dynamic_regressor.shape[1]:
            raise IdentificationStateError(
                f"{len(self.standard_parameter)} standard parameters for "
                f"{self.dynamic_regressor.shape[1]} regressor columns"
            )

    # ------------------------------------------------------------------ rows
    def _mask_rows(self, tau, regressor, factor=1):
        """Drop, joint by joint, the rows whose filtered ``|dq_j| < dq_lim_def[j]``.

        Decimated sample ``k`` is processed sample ``k·factor``. The valid-sample
        mask of the base class (if any) is applied too. Records the kept row
        count of each joint block in ``self._row_block_sizes``.
        """
        n_active = len(self.identif_config["act_idxv"])
        if self.speed_thresholds is None:
            tau, regressor = super()._mask_rows(tau, regressor, factor)
            self._row_block_sizes = np.full(n_active, len(tau) // n_active)
            return tau, regressor
        idxv = np.asarray(self.identif_config["act_idxv"], dtype=int)
        dq = np.asarray(self.processed_data["velocities"], float)[::factor][:, idxv]  # (L, n)
        if n_active * dq.shape[0] != len(tau) or regressor.shape[0] != len(tau):
            raise IdentificationStateError(
                f"cannot select rows: {len(tau)} effort rows, {regressor.shape[0]} regressor rows "
                f"for {n_active} joints × {dq.shape[0]} samples"
            )
        keep = np.abs(dq) >= self.speed_thresholds[None, :]
        if self._sample_mask is not None:
            keep &= np.asarray(self._sample_mask, bool)[::factor][:, None]
        sizes = keep.sum(axis=0)
        for j, name in enumerate(self.identif_config["active_joints"]):
            logger.info(
                "%s: %d of %d rows kept (|dq| >= %.4g rad/s)",
                name,
                sizes[j],
                keep.shape[0],
                self.speed_thresholds[j],
            )
        if np.any(sizes == 0):
            empty = [
                n
                for n, s in zip(self.identif_config["active_joints"], sizes, strict=True)
                if s == 0
            ]
            raise IdentificationDataError(
                f"no sample of {empty} moves faster than its sample_selection.min_joint_speed"
            )
        rows = keep.T.reshape(-1)
        self._row_block_sizes = sizes
        return tau[rows], regressor[rows]

    def _block_slices(self, n_rows: int) -> list[slice]:
        sizes = self._row_block_sizes
        if sizes is None or int(np.sum(sizes)) != n_rows:
            raise IdentificationStateError("row blocks unknown: run solve() first")
        ends = np.cumsum(sizes)
        return [slice(int(e - s), int(e)) for s, e in zip(sizes, ends, strict=True)]

    def _calculate_joint_variances(self, W_b, tau, n_blocks):
        """``σ_j² = mean(r_j²)`` of each (unequal) joint block (Gautier's WLS).

        Returns:
            ``(sig_ro_joint, diag_SIGMA)``: one variance [N²·m²] per joint block,
            and that variance repeated over the block's rows.
        """
        residual = tau - W_b @ self.phi_base
        blocks = self._block_slices(len(tau))
        sig_ro_joint = np.array([np.mean(residual[block] ** 2) for block in blocks])
        variance = np.empty_like(residual)
        for block, sigma2 in zip(blocks, sig_ro_joint, strict=True):
            variance[block] = sigma2
        self._joint_variances = variance
        return sig_ro_joint, variance

    def _compute_per_joint_stats(self):
        if self.result is None:
            return None
        measured = np.asarray(self.result["torque processed"], float)
        estimated = np.asarray(self.result["torque estimated"], float)
        stats = {"joint_names": self.fit_joints(), "mean": [], "std": [], "rmse": [], "max_abs": []}
        for block in self._block_slices(len(measured)):
            r = measured[block] - estimated[block]
            stats["mean"].append(float(r.mean()))
            stats["std"].append(float(r.std()))
            stats["rmse"].append(float(np.sqrt(np.mean(r**2))))
            stats["max_abs"].append(float(np.abs(r).max()))
        return stats

    def plot_results(self, output_dir: str = "results"):
        """Measured vs identified torque [N·m] of each joint on its fitted rows.

        (The generic plot reshapes the stacked torques into equal joint blocks,
        which the per-joint row selection does not give.) Shown with an
        interactive matplotlib backend, else saved as
        ``<output_dir>/tx40_identification.png``.

        Returns:
            The PNG path when saved, else None.
        """
        if self.result is None:
            logger.warning("No identification results to plot. Run solve() first.")
            return None
        import matplotlib
        import matplotlib.pyplot as plt

        measured = np.asarray(self.result["torque processed"], float)
        estimated = np.asarray(self.result["torque estimated"], float)
        fig, axes = plt.subplots(3, 2, figsize=(12, 9), sharex=False)
        for ax, name, block in zip(
            axes.T.ravel(), self.fit_joints(), self._block_slices(len(measured)), strict=True
        ):
            ax.plot(measured[block], lw=0.8, label="measured")
            ax.plot(estimated[block], lw=0.8, label="identified")
            ax.set_title(name)
            ax.set_ylabel("torque [N·m]")
            ax.grid(True, alpha=0.3)
        axes[0, 0].legend()
        fig.suptitle(
            f"TX40: condition {self.result['condition number']:.3g}, "
            f"correlation {self.correlation:.4f} (fitted rows)"
        )
        fig.tight_layout()
        if matplotlib.get_backend().lower() in ("agg", "pdf", "svg", "ps", "cairo", "template"):
            os.makedirs(output_dir, exist_ok=True)
            path = os.path.join(output_dir, "tx40_identification.png")
            fig.savefig(path, dpi=100)
            plt.close(fig)
            return path
        plt.show()
        return None

    def joint_correlations(self) -> dict[str, float]:
        """Pearson correlation of measured vs identified torque, per joint block."""
        if self.result is None:
            raise IdentificationStateError("run solve() first")
        measured = np.asarray(self.result["torque processed"], float)
        estimated = np.asarray(self.result["torque estimated"], float)
        return {
            name: float(np.corrcoef(measured[b], estimated[b])[0, 1])
            for name, b in zip(self.fit_joints(), self._block_slices(len(measured)), strict=True)
        }

    # ------------------------------------------------------------------ results
    def solve(
        self,
        decimate=True,
        decimation_factor=10,
        zero_tolerance=0.001,
        plotting=True,
        save_results=False,
        html_report=False,
        wls=False,
        *,
        verbose=True,
        save_plots=None,
    ):
        """Base-class solve (see there), then the essential parameters.

        The essential set is computed on the same (weighted, with ``wls``)
        least-squares problem and stored in ``result["essential parameters"]``.
        """
        phi = super().solve(
            decimate=decimate,
            decimation_factor=decimation_factor,
            zero_tolerance=zero_tolerance,
            plotting=plotting,
            save_results=save_results,
            html_report=html_report,
            wls=wls,
            verbose=verbose,
            save_plots=save_plots,
        )
        self.compute_essential_parameters()
        return phi

    def compute_essential_parameters(
        self, ratio_essential: float | None = None
    ) -> EssentialParameters:
        """Pham & Gautier essential parameters of the last fit.

        Args:
            ratio_essential: Stop ratio ``max %σ / min %σ`` (default
                ``mechanics.ratio_essential``).

        Returns:
            :class:`EssentialParameters` (also in ``self.essential`` and
            ``result["essential parameters"]`` as ``{name: value}``).
        """
        if self.result is None:
            raise IdentificationStateError("run solve() before compute_essential_parameters()")
        ratio = float(
            ratio_essential
            if ratio_essential is not None
            else self.identif_config.get("ratio_essential", 30.0)
        )
        self.essential = essential_parameters(
            self.dynamic_regressor_base,
            self.tau_noised,
            self.params_base,
            ratio_essential=ratio,
            row_weights=self._wls_row_weight,
        )
        self.result["essential parameters"] = self.essential.as_dict()
        self.result["essential std dev"] = self.essential.std_relative
        return self.essential

    def identified_friction(self) -> dict[str, dict[str, float]]:
        """Identified ``fv`` [N·m·s/rad] and ``fs`` [N·m] per joint, and the coupled-wrist terms.

        Returns:
            ``{"fv": {joint: value}, "fs": {joint: value}, "coupled": {name: value}}``
            (entries whose parameter is not a stand-alone base parameter are omitted).
        """
        if self.result is None:
            raise IdentificationStateError("run solve() first")
        values = dict(zip(self.params_base, np.asarray(self.phi_base).tolist(), strict=True))
        out = {"fv": {}, "fs": {}, "coupled": {}}
        for joint in TX40_JOINTS:
            for kind in ("fv", "fs"):
                key = f"{kind}_{joint}"
                if key in values:
                    out[kind][joint] = values[key]
        for key in COUPLED_WRIST_PARAMETERS:
            if key in values:
                out["coupled"][key] = values[key]
        return out
