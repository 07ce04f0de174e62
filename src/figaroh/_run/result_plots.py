"""Figures of a results dictionary: the plotting half of the results manager.

:class:`ResultPlots` is the plotting mixin of
:class:`figaroh.utils.results_manager.ResultsManager`: per-joint effort
comparison and residuals, base parameters, calibration residuals and poses,
optimal-design weights and trajectories.

* **matplotlib is imported lazily** inside the plotting functions, never at
  module import; missing matplotlib turns a plot into a warning.
* Files only when asked: with ``output_dir`` the figures are written there as
  PNG files, atomically and under names no other save holds, and their paths
  are returned. Without it nothing is written: with an interactive backend the
  figures are shown (``plt.show()``), otherwise (non-interactive backend such
  as ``Agg``, ``MPLBACKEND=Agg``, or a Linux session without ``DISPLAY`` /
  ``WAYLAND_DISPLAY``) they are drawn and left open for the caller, as
  figaroh 1.0.2 leaves them (``plt.gcf()``, ``plt.savefig``, or the
  ``last_figures`` of the manager).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import IO, Any

import numpy as np

from figaroh._run.results_files import claim_stem
from figaroh.utils.fileio import atomic_write, make_folder

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike

__all__ = ["ResultPlots"]

# ---------------------------------------------------------------------------
# matplotlib helpers (lazy)
# ---------------------------------------------------------------------------


def _import_pyplot() -> Any | None:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning("matplotlib is not installed: plotting skipped (pip install matplotlib)")
        return None
    return plt


def _is_headless() -> bool:
    """True when figures cannot be shown (non-interactive backend / no display)."""
    import matplotlib

    backend = str(matplotlib.get_backend()).lower()
    try:
        from matplotlib.backends import BackendFilter, backend_registry

        non_interactive = set(backend_registry.list_builtin(BackendFilter.NON_INTERACTIVE))
    except ImportError:  # matplotlib < 3.9
        non_interactive = {b.lower() for b in getattr(matplotlib.rcsetup, "non_interactive_bk", [])}
    if backend in non_interactive:
        return True
    if "inline" in backend or "nbagg" in backend or "ipympl" in backend or "widget" in backend:
        return False  # notebook backends render without a display server
    if sys.platform.startswith("linux"):
        return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return False


def _as_float_vector(name: str, value: Any) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {type(value).__name__}") from exc
    return arr.ravel()


def _per_joint_columns(vec: np.ndarray, n_joints: int, name: str = "torque") -> np.ndarray:
    """Reshape a joint-major stacked vector into ``(L, n_joints)`` columns.

    The stacking convention is ``[τ_1(t_1..t_L), τ_2(t_1..t_L), ...]``, hence
    ``vec.reshape(n_joints, -1).T``.

    Args:
        vec: Stacked vector of length ``n_joints·L``.
        n_joints: Number of stacked blocks (fit joints).
        name: Name used in error messages.

    Returns:
        Array of shape ``(L, n_joints)``; column ``j`` is block ``j``.

    Raises:
        ValueError: ``n_joints`` < 1 or the length is not a multiple of it.
    """
    vec = np.asarray(vec).ravel()
    if int(n_joints) < 1:
        raise ValueError(f"n_joints must be >= 1, got {n_joints}")
    if vec.size % int(n_joints):
        raise ValueError(
            f"{name} has {vec.size} entries, not a multiple of n_joints={n_joints}: pass the "
            "number of stacked joint blocks (len(_fit_blocks()))"
        )
    return vec.reshape(int(n_joints), -1).T


#: Panels of the segment layout of an optimal trajectory design (``results`` of
#: ``BaseOptimalTrajectory``): key, y label, whether the columns are q (else v) indices.
_SEGMENT_PANELS = (
    ("P_F", "q [rad]", True),
    ("V_F", "dq [rad/s]", False),
    ("A_F", "ddq [rad/s²]", False),
)


def _select_columns(a: np.ndarray, cols: Sequence[int] | None, which: str, key: str) -> np.ndarray:
    """Columns ``cols`` of the (N, n) array ``a`` (all when None), range-checked."""
    if cols is None:
        return a
    idx = [int(i) for i in cols]
    if any(i < -a.shape[1] or i >= a.shape[1] for i in idx):
        raise ValueError(
            f"{which} {idx} out of range for trajectories[{key!r}] with {a.shape[1]} columns"
        )
    return a[:, idx]


def _as_samples(key: str, val: Any) -> np.ndarray:
    a = np.asarray(val, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.size == 0:
        raise ValueError(f"trajectories[{key!r}] must be a non-empty (N, n) array")
    return a


def _segment_list(trajectories: Mapping, key: str) -> list:
    """The per-segment arrays of ``trajectories[key]`` (one array: one segment)."""
    val = trajectories[key]
    if isinstance(val, np.ndarray) and val.ndim <= 2:
        return [val]
    segments = list(val)
    if not segments:
        raise ValueError(f"trajectories[{key!r}] holds no segment")
    return segments


def _segment_panels(
    trajectories: Mapping, q_indices: Sequence[int] | None, v_indices: Sequence[int] | None
) -> list[tuple[str, list[tuple[np.ndarray | None, np.ndarray]]]]:
    """``[(y label, [(t or None, (N_s, n) columns) per segment])]`` of the segment layout.

    ``P_F`` columns are selected by ``q_indices``, ``V_F``/``A_F`` columns by
    ``v_indices``; ``T_F`` (per-segment times (N_s,) or (N_s, 1) [s]) gives the
    abscissae when present and of matching length.
    """
    times = _segment_list(trajectories, "T_F") if "T_F" in trajectories else None
    panels = []
    for key, label, is_q in _SEGMENT_PANELS:
        if key not in trajectories:
            continue
        segments = _segment_list(trajectories, key)
        if times is not None and len(times) != len(segments):
            raise ValueError(
                f"trajectories['T_F'] has {len(times)} segments but trajectories[{key!r}] "
                f"{len(segments)}"
            )
        lines = []
        for s, val in enumerate(segments):
            a = _as_samples(f"{key}[{s}]", val)
            cols = q_indices if is_q else v_indices
            a = _select_columns(a, cols, "q_indices" if is_q else "v_indices", f"{key}[{s}]")
            t = None
            if times is not None:
                t = np.asarray(times[s], dtype=float).ravel()
                if t.size != a.shape[0]:
                    raise ValueError(
                        f"trajectories['T_F'][{s}] has {t.size} times but "
                        f"trajectories[{key!r}][{s}] {a.shape[0]} samples"
                    )
            lines.append((t, a))
        panels.append((label, lines))
    return panels


def _trajectory_panels(
    trajectories: Any, q_indices: Sequence[int] | None, v_indices: Sequence[int] | None
) -> list[tuple[str, list[tuple[np.ndarray | None, np.ndarray]]]]:
    """``[(y label, [(t or None, (N, n) columns), ...])]``: one panel per trajectory entry.

    The segment layout (a mapping with ``P_F``, as ``BaseOptimalTrajectory``
    produces) gives one panel per ``P_F``/``V_F``/``A_F`` with one line set per
    segment; any other mapping one panel per entry; a bare array one panel.
    """
    if isinstance(trajectories, Mapping) and "P_F" in trajectories:
        return _segment_panels(trajectories, q_indices, v_indices)
    items = (
        list(trajectories.items()) if isinstance(trajectories, Mapping) else [("q", trajectories)]
    )
    panels: list[tuple[str, list[tuple[np.ndarray | None, np.ndarray]]]] = []
    for key, val in items:
        a = _as_samples(str(key), val)
        is_q = str(key) in ("q", "position", "positions")
        cols = q_indices if is_q else v_indices
        a = _select_columns(a, cols, "q_indices" if is_q else "v_indices", str(key))
        panels.append((str(key), [(None, a)]))
    return panels


def _require_figures(figures: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``figures``, refused when empty (no calibration data was given or stored)."""
    if not figures:
        raise ValueError(
            "no calibration data to plot: pass the arrays or store 'rms residuals by "
            "samples' / 'PEE measured (2D array)' / 'calibrated parameters values'"
        )
    return figures


def _as_float_array(name: str, value: Any) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric, got {type(value).__name__}") from exc


def _effort_columns(
    tm_raw: Any, te_raw: Any, n_joints: int | None, joint_names: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """``(tm, te, measured (L, n), identified (L, n), names)`` of the efforts.

    A 2-D ``(L, n)`` effort array is used as given (column ``j`` = joint ``j``,
    whatever ``n_joints`` says); a stacked joint-major vector is split into
    ``n_joints`` columns (``vec.reshape(n_joints, -1).T``), or into the column
    count of the other array when that one is 2-D.
    """
    if tm_raw is None or te_raw is None:
        raise ValueError(
            "no effort data: pass tau_measured/tau_identified or store "
            "'torque processed'/'torque estimated' in the results"
        )
    tm_arr = _as_float_array("tau_measured", tm_raw)
    te_arr = _as_float_array("tau_identified", te_raw)
    if tm_arr.size == 0 or tm_arr.size != te_arr.size or max(tm_arr.ndim, te_arr.ndim) > 2:
        raise ValueError(
            f"tau_measured has shape {tm_arr.shape} and tau_identified {te_arr.shape}: they "
            "must be the same non-empty stacked vector or (samples, joints) array"
        )
    if tm_arr.ndim == 2 or te_arr.ndim == 2:
        nj = (tm_arr if tm_arr.ndim == 2 else te_arr).shape[1]
        if n_joints is not None and int(n_joints) != nj:
            logger.debug("2-D efforts have %d columns: n_joints=%s not used", nj, n_joints)
        m_cols = tm_arr if tm_arr.ndim == 2 else _per_joint_columns(tm_arr, nj, "tau_measured")
        e_cols = te_arr if te_arr.ndim == 2 else _per_joint_columns(te_arr, nj, "tau_identified")
        if m_cols.shape != e_cols.shape:
            raise ValueError(
                f"tau_measured has shape {tm_arr.shape} and tau_identified {te_arr.shape}: "
                "2-D efforts must be (samples, joints) arrays of the same shape"
            )
    else:
        nj = n_joints if n_joints is not None else (len(joint_names) if joint_names else 1)
        m_cols = _per_joint_columns(tm_arr, nj, "tau_measured")
        e_cols = _per_joint_columns(te_arr, nj, "tau_identified")
    names = list(joint_names) if joint_names is not None else []
    if len(names) != nj:
        if names:
            logger.warning(
                "joint_names has %d names for %d joint blocks: using generic names",
                len(names),
                nj,
            )
        names = [f"joint {j + 1}" for j in range(nj)]
    return m_cols.T.ravel(), e_cols.T.ravel(), m_cols, e_cols, names


def _time_axis(time_vector: Any, n_samples: int) -> tuple[np.ndarray, str]:
    """``(x, label)``: the time stamps [s] when they match ``n_samples``, else the sample index."""
    x = np.arange(n_samples)
    xlabel = "Sample"
    if time_vector is not None:
        t = _as_float_vector("time_vector", time_vector)
        if t.size == n_samples:
            x, xlabel = t, "Time [s]"
        else:
            logger.warning(
                "time_vector has %d entries, expected %d per joint: using sample index",
                t.size,
                n_samples,
            )
    return x, xlabel


def _save_png(fig: Any, stream: IO[bytes], *, dpi: float) -> None:
    """Write the matplotlib figure ``fig`` to ``stream`` as PNG at ``dpi`` [dots/inch]."""
    fig.savefig(stream, format="png", dpi=dpi)


class ResultPlots:
    """Plotting methods of :class:`~figaroh.utils.results_manager.ResultsManager` (mixin).

    The host class provides ``result`` (the results dict), ``robot_name``, ``task_type``,
    ``COLORS``, ``style`` (``{"figsize", "dpi"}``) and ``_default_stem()``
    (the file-name stem of saved figures).

    Attributes:
        last_figures: ``{kind: Figure}`` drawn by the last plotting call
            (``{}`` before any, or after a failed one); closed when they were
            written to files and not shown.
    """

    last_figures: dict[str, Any]
    result: Mapping[str, Any]
    robot_name: str
    task_type: str
    COLORS: dict[str, str]
    style: dict[str, Any]

    def _default_stem(self) -> str:
        raise NotImplementedError

    # -- plotting infrastructure -----------------------------------------

    def _finish(
        self,
        plt: Any,
        figures: list[tuple[str, Any]],
        output_dir: PathLike | None,
        file_prefix: str | None,
        show: bool | None,
    ) -> list[str]:
        """Write the figures when asked, show them when possible, else leave them drawn.

        * ``output_dir`` given: each figure is written as ``<stem>_<kind>.png``
          there (and closed unless it is shown);
        * ``show`` (None: a display is available): ``plt.show()``;
        * neither: nothing is written and the figures stay open, drawn (the
          behaviour of a non-interactive backend without a save request).

        Returns:
            The paths of the written PNG files.
        """
        headless = _is_headless()
        if show and headless:
            logger.warning(
                "show=True but no display / non-interactive backend: figures drawn, not shown"
            )
        if show is None:
            show = not headless
        paths: list[str] = []
        if output_dir is not None:
            paths = self._write_pngs(figures, output_dir, file_prefix)
        if show and not headless:
            plt.show()
        elif output_dir is not None:
            for _, fig in figures:
                plt.close(fig)
        return paths

    def _write_pngs(
        self, figures: list[tuple[str, Any]], output_dir: PathLike, file_prefix: str | None
    ) -> list[str]:
        """Write each figure as ``<output_dir>/<stem>_<kind>.png`` (atomic, never clobbering)."""
        folder = make_folder(output_dir)
        stem = file_prefix or self._default_stem()
        paths: list[str] = []
        for kind, fig in figures:
            with claim_stem(folder, f"{stem}_{kind}", [".png"]) as name:
                path = folder / f"{name}.png"
                paths.append(
                    atomic_write(
                        path,
                        partial(_save_png, fig, dpi=self.style["dpi"]),
                        binary=True,
                    )
                )
            logger.info("Saved %s plot: %s", kind, path)
        return paths

    def _run_plot(
        self, label: str, build: Callable[[Any], list[tuple[str, Any]]], raise_errors: bool, **kw
    ) -> list[str]:
        plt = _import_pyplot()
        if plt is None:
            return []
        figures: list[tuple[str, Any]] = []
        try:
            figures = build(plt)
            self.last_figures = dict(figures)
            return self._finish(plt, figures, **kw)
        except Exception as exc:
            for _, fig in figures:
                plt.close(fig)
            self.last_figures = {}
            if raise_errors:
                raise
            logger.error("%s plot failed: %s", label, exc)
            return []

    def _pick(self, given: Any, key: str) -> Any:
        """``given``, or ``self.result[key]`` (``None`` when absent) if ``given`` is None."""
        return self.result.get(key) if given is None else given

    def _figsize(self, n_rows: int = 1, row_height: float = 2.2) -> tuple[float, float]:
        width, height = self.style["figsize"]
        return (width, max(height, row_height * n_rows))

    # -- identification ---------------------------------------------------

    def plot_identification_results(
        self,
        tau_measured: Any = None,
        tau_identified: Any = None,
        parameter_values: Any = None,
        parameter_names: Sequence[str] | None = None,
        time_vector: Any = None,
        joint_names: Sequence[str] | None = None,
        n_joints: int | None = None,
        title: str = "Identification Results",
        *,
        output_dir: PathLike | None = None,
        file_prefix: str | None = None,
        show: bool | None = None,
        raise_errors: bool = False,
    ) -> list[str]:
        """Per-joint effort comparison, residuals and base parameters.

        The stacked effort vectors are joint-major
        (``τ = [τ_1(t_1..t_L), ..., τ_n(t_1..t_L)]``) and are reshaped into
        ``(L, n_joints)`` columns with ``vec.reshape(n_joints, -1).T``; a 2-D
        ``(L, n)`` effort array is used as given, one column per joint. Figure
        ``torques``: one row per joint, measured vs identified effort (left)
        and residual ``τ_meas − τ_ident`` with its RMSE (right); figure
        ``parameters``: bar chart of the base parameters with error bars
        ``|φ_i|·σ%_i/100`` when ``"std dev of estimated param"`` matches.
        The title shows ``Condition: {cond:.2e} | RMSE: {rmse:.6f} N·m (training set)``.

        Args:
            tau_measured: Stacked measured efforts [N·m or N], or an
                ``(L, n)`` array; default ``result["torque processed"]``.
            tau_identified: Stacked predicted efforts [N·m or N], same layout;
                default ``result["torque estimated"]``.
            parameter_values: Base parameters (SI units of each parameter:
                [kg], [kg·m], [kg·m²], ...); default ``"base parameters values"``.
            parameter_names: Their names; default ``"base parameters names"``.
            time_vector: Per-joint time stamps [s] (length ``L``); sample index
                when omitted or of the wrong length.
            joint_names: Names of the ``n_joints`` blocks.
            n_joints: Number of stacked joint blocks of 1-D efforts; default
                ``len(joint_names)`` or 1 (2-D efforts have their own columns).
            title: Figure title.
            output_dir: Folder to write the PNG files into; None (default)
                writes nothing (the figures are shown with a display, left
                drawn and open otherwise).
            file_prefix: PNG name stem; default
                ``<robot>_<task>_<timestamp>``; files are ``<stem>_torques.png``
                and ``<stem>_parameters.png``.
            show: ``None`` = show iff a display is available.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files (``[]`` without ``output_dir`` or on
            error); the figures are ``last_figures["torques"]`` and
            ``last_figures["parameters"]``.
        """

        def build(plt: Any) -> list[tuple[str, Any]]:
            tm_raw = self._pick(tau_measured, "torque processed")
            te_raw = self._pick(tau_identified, "torque estimated")
            tm, te, m_cols, e_cols, names = _effort_columns(tm_raw, te_raw, n_joints, joint_names)
            x, xlabel = _time_axis(time_vector, m_cols.shape[0])
            fig = self._effort_figure(
                plt, x, xlabel, m_cols, e_cols, names, self._identification_title(title, tm, te)
            )
            figures = [("torques", fig)]

            values = self._pick(parameter_values, "base parameters values")
            if values is not None and np.size(values) > 0:
                figures.append(("parameters", self._parameter_bar(plt, values, parameter_names)))
            return figures

        return self._run_plot(
            "identification",
            build,
            raise_errors,
            output_dir=output_dir,
            file_prefix=file_prefix,
            show=show,
        )

    def _effort_figure(
        self,
        plt: Any,
        x: np.ndarray,
        xlabel: str,
        m_cols: np.ndarray,
        e_cols: np.ndarray,
        names: Sequence[str],
        suptitle: str,
    ) -> Any:
        """One row per joint: measured vs identified effort [N·m] and the residual with its RMSE."""
        nj = m_cols.shape[1]
        residual = m_cols - e_cols
        rmse_j = np.sqrt(np.nanmean(residual**2, axis=0))

        fig, axes = plt.subplots(nj, 2, figsize=self._figsize(nj), squeeze=False, sharex=True)
        for j in range(nj):
            ax = axes[j, 0]
            ax.plot(x, m_cols[:, j], color=self.COLORS["measured"], lw=1, label="Measured")
            ax.plot(x, e_cols[:, j], color=self.COLORS["identified"], lw=1, label="Identified")
            ax.set_ylabel(f"{names[j]}\n[N·m]")
            ax.grid(True, alpha=0.3)
            ax_r = axes[j, 1]
            ax_r.plot(x, residual[:, j], color=self.COLORS["residual"], lw=1)
            ax_r.axhline(0.0, color=self.COLORS["reference"], lw=0.8)
            ax_r.set_title(f"{names[j]} residual, RMSE {rmse_j[j]:.4g} N·m", fontsize=9)
            ax_r.grid(True, alpha=0.3)
        axes[0, 0].legend(loc="upper right", fontsize=8)
        axes[0, 0].set_title("Effort comparison", fontsize=10)
        axes[-1, 0].set_xlabel(xlabel)
        axes[-1, 1].set_xlabel(xlabel)
        fig.suptitle(suptitle)
        fig.tight_layout()
        return fig

    def _identification_title(self, title: str, tm: np.ndarray, te: np.ndarray) -> str:
        parts = []
        cond = self.result.get("condition number")
        if cond is not None:
            parts.append(f"Condition: {float(cond):.2e}")
        rmse = self.result.get("rmse norm (N/m)", self.result.get("effort rmse"))
        if rmse is None:
            rmse = float(np.sqrt(np.nanmean((tm - te) ** 2)))
        parts.append(f"RMSE: {float(rmse):.6f} N·m (training set)")
        return f"{title} ({self.robot_name})\n" + " | ".join(parts)

    def _parameter_bar(self, plt: Any, values: Any, names: Sequence[str] | None) -> Any:
        phi = _as_float_vector("parameter_values", values)
        labels = names if names is not None else self.result.get("base parameters names")
        labels = [str(n) for n in labels] if labels is not None else []
        if len(labels) != phi.size:
            labels = [str(i) for i in range(phi.size)]
        err = None
        std = self.result.get("std dev of estimated param")
        if std is not None and np.size(std) == phi.size:
            err = np.abs(phi) * np.abs(_as_float_vector("std dev", std)) / 100.0
        fig, ax = plt.subplots(figsize=self.style["figsize"])
        idx = np.arange(phi.size)
        ax.bar(idx, phi, yerr=err, color=self.COLORS["identified"], alpha=0.8, capsize=2)
        ax.set_xticks(idx)
        ax.set_xticklabels(labels, rotation=90, fontsize=7 if phi.size > 20 else 9)
        ax.set_ylabel("Value [SI unit of each parameter]")
        bars = "" if err is None else "; error bars ±σ"
        ax.set_title(f"Identified base parameters (n = {phi.size}{bars})")
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        return fig

    # -- calibration ------------------------------------------------------

    def plot_calibration_results(
        self,
        measured_poses: Any = None,
        estimated_poses: Any = None,
        residuals: Any = None,
        parameter_values: Any = None,
        parameter_names: Sequence[str] | None = None,
        outlier_indices: Sequence[int] | None = None,
        title: str = "Calibration Results",
        *,
        output_dir: PathLike | None = None,
        file_prefix: str | None = None,
        show: bool | None = None,
        raise_errors: bool = False,
    ) -> list[str]:
        """Calibration residual distribution, measured vs estimated, parameters.

        Figures (each only when its data exists): ``errors`` — residual norm of
        every marker at every sample [mm], excluded (outlier) samples drawn in
        grey and hatched; ``poses`` — measured vs estimated value of each
        measured component (one panel per row of the 2-D arrays, [m] or
        [rad]); ``parameters`` — bar chart of calibrated parameters.

        Args:
            measured_poses: 2-D measured array; default
                ``result["PEE measured (2D array)"]``.
            estimated_poses: 2-D estimated array (same shape); default
                ``result["PEE estimated (2D array)"]``.
            residuals: Either the residual components, one row per point
                (``(NbMarkers·NbSample, n_components)``, marker-major, at most
                six columns, as ``result["residuals"]``) whose row norms are
                plotted, or residual norms [m] (``(NbMarkers, NbSample)`` as
                ``result["rms residuals by samples"]``, or flat). Default:
                ``result["rms residuals by samples"]``, else
                ``result["residuals"]``.
            parameter_values: Calibrated values ([m] / [rad]); default
                ``result["calibrated parameters values"]``.
            parameter_names: Their names; default
                ``result["calibrated parameters names"]``.
            outlier_indices: Sample indices excluded from the fit; default
                ``result["outlier indices"]``.
            title: Figure title.
            output_dir: Folder to write the PNG files into; None (default)
                writes nothing.
            file_prefix: PNG name stem.
            show: ``None`` = show iff a display is available.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files (``[]`` without ``output_dir``); the
            figures are in ``last_figures``.
        """

        def build(plt: Any) -> list[tuple[str, Any]]:
            figures: list[tuple[str, Any]] = []
            dist = self._residual_norms(residuals)
            if dist is not None:
                figures.append(
                    ("errors", self._calibration_error_figure(plt, dist, outlier_indices, title))
                )
            meas = self._pick(measured_poses, "PEE measured (2D array)")
            est = self._pick(estimated_poses, "PEE estimated (2D array)")
            if meas is not None and est is not None and np.size(meas) > 0:
                figures.append(("poses", self._calibration_pose_figure(plt, meas, est, title)))
            values = self._pick(parameter_values, "calibrated parameters values")
            if values is not None and np.size(values) > 0:
                names = self._pick(parameter_names, "calibrated parameters names")
                figures.append(
                    ("parameters", self._calibration_parameter_figure(plt, values, names))
                )
            return _require_figures(figures)

        return self._run_plot(
            "calibration",
            build,
            raise_errors,
            output_dir=output_dir,
            file_prefix=file_prefix,
            show=show,
        )

    def _calibration_error_figure(
        self, plt: Any, dist: np.ndarray, outlier_indices: Any, title: str
    ) -> Any:
        """Bar chart of the residual norm [mm] of each marker at each sample (outliers hatched)."""
        d = dist * 1e3
        outliers = self._pick(outlier_indices, "outlier indices")
        bad = {int(i) for i in (outliers if outliers is not None else [])}
        fig, ax = plt.subplots(figsize=self.style["figsize"])
        samples = np.arange(d.shape[1])
        width = 0.8 / d.shape[0]
        grey = [k for k in samples if k in bad]
        for k in range(d.shape[0]):
            ax.bar(samples + k * width, d[k], width=width, label=f"marker {k + 1}")
            if grey:
                ax.bar(
                    np.asarray(grey) + k * width,
                    d[k, grey],
                    width=width,
                    color=self.COLORS["reference"],
                    hatch="//",
                    label="excluded sample" if k == 0 else None,
                )
        ax.set_xlabel("Sample")
        ax.set_ylabel("Residual norm [mm]")
        ax.set_title(f"{title} ({self.robot_name}): residual per sample")
        ax.legend(fontsize=8)
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        return fig

    def _calibration_pose_figure(self, plt: Any, meas: Any, est: Any, title: str) -> Any:
        """Measured vs estimated value of each measured component, one panel per row."""
        m = np.atleast_2d(np.asarray(meas, dtype=float))
        e = np.atleast_2d(np.asarray(est, dtype=float))
        if m.shape != e.shape:
            raise ValueError(f"measured_poses has shape {m.shape} but estimated_poses {e.shape}")
        n_rows = m.shape[0]
        fig, axes = plt.subplots(
            n_rows, 1, figsize=self._figsize(n_rows), squeeze=False, sharex=True
        )
        for i in range(n_rows):
            ax = axes[i, 0]
            ax.plot(m[i], "o", ms=3, color=self.COLORS["measured"], label="Measured")
            ax.plot(e[i], "x", ms=3, color=self.COLORS["calibrated"], label="Estimated")
            rmse = float(np.sqrt(np.nanmean((m[i] - e[i]) ** 2)))
            ax.set_ylabel(f"component {i + 1}\n[m or rad]")
            ax.set_title(f"component {i + 1}: RMSE {rmse:.4g} (m or rad)", fontsize=9)
            ax.grid(True, alpha=0.3)
        axes[0, 0].legend(fontsize=8)
        axes[-1, 0].set_xlabel("Point × sample")
        fig.suptitle(f"{title} ({self.robot_name}): measured vs estimated")
        fig.tight_layout()
        return fig

    def _calibration_parameter_figure(self, plt: Any, values: Any, names: Any) -> Any:
        """Bar chart of the calibrated parameters [m or rad]."""
        phi = _as_float_vector("parameter_values", values)
        labels = [str(n) for n in names] if names is not None else []
        if len(labels) != phi.size:
            labels = [str(i) for i in range(phi.size)]
        fig, ax = plt.subplots(figsize=self.style["figsize"])
        idx = np.arange(phi.size)
        ax.bar(idx, phi, color=self.COLORS["calibrated"], alpha=0.8)
        ax.set_xticks(idx)
        ax.set_xticklabels(labels, rotation=90, fontsize=7 if phi.size > 20 else 9)
        ax.set_ylabel("Value [m or rad]")
        ax.set_title(f"Calibrated parameters (n = {phi.size})")
        ax.grid(True, axis="y", alpha=0.3)
        fig.tight_layout()
        return fig

    def _residual_norms(self, residuals: Any) -> np.ndarray | None:
        """Residual norms [m] as ``(NbMarkers, NbSample)`` (see :meth:`plot_calibration_results`).

        Residual components (a 2-D array with more rows than columns and at
        most six columns) are reduced to per-point norms; flat norms are split
        into ``NbMarkers`` rows when ``result["number of samples"]`` divides
        their count (marker-major layout).
        """
        if residuals is None:
            residuals = self.result.get("rms residuals by samples")
            if residuals is None:
                residuals = self.result.get("residuals")
        if residuals is None or np.size(residuals) == 0:
            return None
        arr = np.asarray(residuals, dtype=float)
        if arr.ndim == 2 and arr.shape[1] <= 6 and arr.shape[0] > arr.shape[1]:
            arr = np.linalg.norm(arr, axis=1)
        if arr.ndim == 2:
            return arr
        flat = arr.reshape(-1)
        n_samples = self.result.get("number of samples")
        if isinstance(n_samples, (int, np.integer)) and n_samples > 0:
            if flat.size % int(n_samples) == 0:
                return flat.reshape(-1, int(n_samples))
        return flat.reshape(1, -1)

    # -- optimal design ---------------------------------------------------

    def plot_optimal_calibration_results(
        self,
        configurations: Any,
        weights: Any,
        condition_numbers: Any = None,
        information_matrix: Any = None,
        title: str = "Optimal Calibration Results",
        *,
        output_dir: PathLike | None = None,
        file_prefix: str | None = None,
        show: bool | None = None,
        raise_errors: bool = False,
    ) -> list[str]:
        """Weights of the candidate postures, criterion history, information matrix.

        Args:
            configurations: Selected postures (mapping or array; only their
                count is shown).
            weights: Weight of each candidate posture (mapping name → weight,
                or sequence) [-].
            condition_numbers: Optional criterion/condition-number history [-].
            information_matrix: Optional square information matrix (shown as
                ``log10|M_ij|``).
            title: Figure title.
            output_dir: Folder to write ``<stem>_optimal_calibration.png``
                into; None (default) writes nothing.
            file_prefix: PNG name stem.
            show: ``None`` = show iff a display is available.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files (``[]`` without ``output_dir``); the
            figure is ``last_figures["optimal_calibration"]``.
        """

        def build(plt: Any) -> list[tuple[str, Any]]:
            w = np.asarray(
                list(weights.values()) if isinstance(weights, Mapping) else weights, dtype=float
            ).ravel()
            if w.size == 0:
                raise ValueError("weights is empty: nothing to plot")
            extra = [condition_numbers is not None, information_matrix is not None]
            n_panels = 1 + sum(extra)
            fig, axes = plt.subplots(1, n_panels, figsize=self.style["figsize"], squeeze=False)
            ax = axes[0, 0]
            ws = np.sort(w)[::-1]
            ax.semilogy(
                np.arange(ws.size),
                np.clip(ws, 1e-12, None),
                "o",
                ms=3,
                color=self.COLORS["optimal"],
            )
            ax.set_xlabel("Candidate (sorted)")
            ax.set_ylabel("Weight (log)")
            ax.set_title(f"Weights ({_count(configurations)} selected)")
            ax.grid(True, alpha=0.3)
            col = 1
            if condition_numbers is not None:
                c = _as_float_vector("condition_numbers", condition_numbers)
                axes[0, col].plot(c, color=self.COLORS["reference"])
                axes[0, col].set_xlabel("Iteration / number of postures")
                axes[0, col].set_title("Criterion")
                axes[0, col].grid(True, alpha=0.3)
                col += 1
            if information_matrix is not None:
                m = np.asarray(information_matrix, dtype=float)
                im = axes[0, col].imshow(np.log10(np.abs(m) + 1e-16), cmap="viridis")
                fig.colorbar(im, ax=axes[0, col], label="log10|M_ij|")
                axes[0, col].set_title("Information matrix")
            fig.suptitle(f"{title} ({self.robot_name})")
            fig.tight_layout()
            return [("optimal_calibration", fig)]

        return self._run_plot(
            "optimal calibration",
            build,
            raise_errors,
            output_dir=output_dir,
            file_prefix=file_prefix,
            show=show,
        )

    def plot_optimal_trajectory_results(
        self,
        trajectories: Any,
        condition_number: float | None,
        joint_names: Sequence[str] | None = None,
        title: str = "Optimal Trajectory Results",
        q_indices: Sequence[int] | None = None,
        v_indices: Sequence[int] | None = None,
        *,
        time_vector: Any = None,
        output_dir: PathLike | None = None,
        file_prefix: str | None = None,
        show: bool | None = None,
        raise_errors: bool = False,
    ) -> list[str]:
        """Joint trajectories of an optimal excitation design.

        Args:
            trajectories: One of

                * the segment layout of
                  :class:`~figaroh.optimal.BaseOptimalTrajectory` (its
                  ``results``): ``{"T_F": [t (N_s, 1) [s], ...], "P_F": [q
                  (N_s, nq) [rad], ...], "V_F": [dq (N_s, nv) [rad/s], ...],
                  "A_F": [ddq (N_s, nv) [rad/s²], ...]}`` — one panel per
                  ``P_F``/``V_F``/``A_F`` with every segment drawn against its
                  ``T_F`` times (other keys are ignored);
                * a mapping such as ``{"q": (N, n), "dq": (N, n), "ddq": (N,
                  n)}`` (one panel row per entry);
                * an ``(N, n)`` position array [rad or m].
            condition_number: Condition number of the design's base regressor
                [-] (shown in the title).
            joint_names: Names of the plotted columns (after selection).
            title: Figure title.
            q_indices: Columns to plot of the position arrays (``P_F``, ``q``,
                or a bare array), e.g. the active joints' ``idx_q`` in a full
                ``(N, nq)`` configuration; default all columns.
            v_indices: Columns to plot of the velocity/acceleration arrays
                (``V_F``, ``A_F``, every other mapping entry), e.g. the active
                ``idx_v``; default all columns.
            time_vector: Time stamps [s] (length ``N``) of arrays without ``T_F``.
            output_dir: Folder to write ``<stem>_trajectory.png`` into; None
                (default) writes nothing.
            file_prefix: PNG name stem.
            show: ``None`` = show iff a display is available.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files (``[]`` without ``output_dir``); the
            figure is ``last_figures["trajectory"]``.
        """

        def build(plt: Any) -> list[tuple[str, Any]]:
            panels = _trajectory_panels(trajectories, q_indices, v_indices)
            fig, axes = plt.subplots(
                len(panels), 1, figsize=self._figsize(len(panels), 3.0), squeeze=False
            )
            timed = time_vector is not None
            n_cols = panels[0][1][0][1].shape[1]
            for i, (label, lines) in enumerate(panels):
                ax = axes[i, 0]
                for seg, (t, a) in enumerate(lines):
                    if t is not None:
                        x, timed = t, True
                    elif time_vector is not None and np.size(time_vector) == a.shape[0]:
                        x = _as_float_vector("time_vector", time_vector)
                    else:
                        x = np.arange(a.shape[0])
                    names = list(joint_names) if joint_names is not None else []
                    if len(names) != a.shape[1]:
                        names = [f"joint {j + 1}" for j in range(a.shape[1])]
                    for j in range(a.shape[1]):
                        ax.plot(
                            x,
                            a[:, j],
                            lw=1,
                            color=f"C{j % 10}",
                            label=names[j] if seg == 0 else None,
                        )
                ax.set_ylabel(label)
                ax.grid(True, alpha=0.3)
            axes[0, 0].legend(fontsize=7, ncol=min(4, n_cols))
            axes[-1, 0].set_xlabel("Time [s]" if timed else "Sample")
            cond = "n/a" if condition_number is None else f"{float(condition_number):.2e}"
            fig.suptitle(f"{title} ({self.robot_name}) | Condition: {cond}")
            fig.tight_layout()
            return [("trajectory", fig)]

        return self._run_plot(
            "optimal trajectory",
            build,
            raise_errors,
            output_dir=output_dir,
            file_prefix=file_prefix,
            show=show,
        )


def _count(configurations: Any) -> int:
    if configurations is None:
        return 0
    if isinstance(configurations, Mapping):
        for v in configurations.values():
            if hasattr(v, "__len__"):
                return len(v)
        return len(configurations)
    return len(configurations) if hasattr(configurations, "__len__") else 0
