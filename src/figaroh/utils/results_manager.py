"""Plotting and saving of identification / calibration / optimal-design results.

:class:`ResultsManager` wraps the ``result`` dictionary of a task
(``BaseIdentification.result``, ``BaseCalibration.results_data``, ...) and

* plots it — per-joint effort comparison and residuals, base parameters,
  calibration residuals, optimal-design weights and trajectories;
* saves it — YAML, CSV, JSON and NPZ files plus a ``<prefix>_metadata.yaml``
  summary — and returns ``{format: path}``. The files hold the parameters,
  uncertainties, metrics, configuration, stages and provenance; the task's
  per-sample arrays (:data:`ARRAY_KEYS`: regressors, effort trajectories,
  residuals) only on request (``include_arrays=True``), in the NPZ file.

Conventions
-----------
* **matplotlib is imported lazily** inside the plotting functions, never at
  module import. Without a display (non-interactive backend such as ``Agg``,
  ``MPLBACKEND=Agg``, or a Linux session without ``DISPLAY`` /
  ``WAYLAND_DISPLAY``) figures are written as PNG files into ``output_dir``
  and their paths are returned; ``plt.show()`` is only called with an
  interactive backend. Missing matplotlib turns a plot into a warning.
* **Atomic, non-clobbering files.** Every file is written to a temporary file
  in the destination folder, flushed, then renamed (through
  :func:`figaroh.utils.fileio.atomic_write`); a failure removes the
  temporary file (and the files already written by the same
  :meth:`ResultsManager.save_results` call), so a crash never leaves a
  partial file. A save never overwrites another one, even from another
  process at the same second: names carry a timestamp and the file-name stem
  is reserved by exclusive creation of a hidden claim file before writing;
  a taken or claimed name gets a numbered suffix ``_1``, ``_2``, ...
* **Non-finite values.** JSON files are written with ``allow_nan=False``;
  NaN and ±inf are stored as ``null``. YAML keeps them as the native YAML
  floats ``.nan`` / ``.inf`` / ``-.inf`` (read back as floats by
  ``yaml.safe_load``); CSV cells hold ``nan`` / ``inf`` / ``-inf`` (parsed by
  ``float``). YAML is written with a safe dumper only and NPZ archives
  never contain pickles (``np.load(..., allow_pickle=False)`` reads them).
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from figaroh._run.results_files import (
    ARRAY_KEYS,
    array_entries,
    claim_stem,
    split_arrays,
    summary_statistics,
    to_plain,
    write_csv,
    write_json,
    write_npz,
    write_yaml,
)
from figaroh.utils.error_handling import FigarohError, FigarohExampleError, setup_example_logging
from figaroh.utils.fileio import atomic_write

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike

__all__ = [
    "ARRAY_KEYS",
    "InvalidResultsError",
    "ResultsManager",
    "ResultsManagerError",
    "SUPPORTED_FORMATS",
    "TASK_TYPES",
    "plot_calibration_results",
    "plot_identification_results",
    "plot_with_fallback",
    "save_results",
    # Re-exported for figaroh 1.0.2 compatibility.
    "FigarohExampleError",
    "setup_example_logging",
]

#: Task types accepted by :class:`ResultsManager`.
TASK_TYPES: tuple[str, ...] = (
    "calibration",
    "identification",
    "optimal_calibration",
    "optimal_trajectory",
)

#: File formats accepted by :meth:`ResultsManager.save_results`.
SUPPORTED_FORMATS: tuple[str, ...] = ("yaml", "csv", "json", "npz")

_EXTENSIONS = {"yaml": ".yaml", "csv": ".csv", "json": ".json", "npz": ".npz"}
_WRITERS: dict[str, Callable[[Path, Mapping[str, Any]], str | None]] = {
    "yaml": write_yaml,
    "csv": write_csv,
    "json": write_json,
    "npz": write_npz,
}
_METADATA_SUFFIX = "_metadata.yaml"
_BAD_PREFIX = re.compile(r"[\\/\x00]")


class InvalidResultsError(FigarohError, AssertionError, ValueError):
    """Bad ``task_type`` or ``results_data`` given to :class:`ResultsManager`.

    Subclasses ``AssertionError`` (the figaroh 1.0.2 contract) and ``ValueError``,
    and is raised explicitly, so it also fires under ``python -O``.
    """


class ResultsManagerError(FigarohError, ValueError):
    """Bad argument of :meth:`ResultsManager.save_results` (format, prefix).

    A :class:`~figaroh.utils.error_handling.FigarohExampleError` (the figaroh 1.0.2
    contract of ``save_results``) that is also a ``ValueError``.
    """


def _timestamp() -> str:
    return _dt.datetime.now().strftime("%Y%m%d_%H%M%S")


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


# ---------------------------------------------------------------------------
# ResultsManager
# ---------------------------------------------------------------------------


def _check_formats(save_formats: Any) -> list[str]:
    """The requested formats, lower-case and without duplicates (default yaml + csv)."""
    formats = ["yaml", "csv"] if save_formats is None else save_formats
    if isinstance(formats, str):
        formats = [formats]
    formats = [str(f).lower() for f in formats]
    unknown = [f for f in formats if f not in SUPPORTED_FORMATS]
    if unknown:
        raise ResultsManagerError(
            f"save_formats contains unsupported format(s) {unknown}; "
            f"choose from {list(SUPPORTED_FORMATS)}"
        )
    formats = list(dict.fromkeys(formats))
    return formats


def _check_prefix(file_prefix: str | None) -> None:
    """Refuse an empty prefix or one holding path separators."""
    if file_prefix is not None and (not str(file_prefix) or _BAD_PREFIX.search(file_prefix)):
        raise ResultsManagerError(
            f"file_prefix {file_prefix!r} must be a non-empty file-name stem without path "
            "separators (use output_dir for the folder)"
        )


def _trajectory_panels(
    trajectories: Any, q_indices: Sequence[int] | None, v_indices: Sequence[int] | None
) -> list[tuple[str, np.ndarray]]:
    """``[(name, (N, n) selected columns)]``: one panel per trajectory entry."""
    items = (
        list(trajectories.items()) if isinstance(trajectories, Mapping) else [("q", trajectories)]
    )
    arrays = []
    for key, val in items:
        a = np.asarray(val, dtype=float)
        if a.ndim == 1:
            a = a[:, None]
        if a.ndim != 2 or a.size == 0:
            raise ValueError(f"trajectories[{key!r}] must be a non-empty (N, n) array")
        cols = q_indices if str(key) in ("q", "position", "positions") else v_indices
        if cols is not None:
            idx = [int(i) for i in cols]
            if any(i < -a.shape[1] or i >= a.shape[1] for i in idx):
                which = "q_indices" if cols is q_indices else "v_indices"
                raise ValueError(
                    f"{which} {idx} out of range for trajectories[{key!r}] with "
                    f"{a.shape[1]} columns"
                )
            a = a[:, idx]
        arrays.append((str(key), a))
    return arrays


def _require_figures(figures: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``figures``, refused when empty (no calibration data was given or stored)."""
    if not figures:
        raise ValueError(
            "no calibration data to plot: pass the arrays or store 'rms residuals by "
            "samples' / 'PEE measured (2D array)' / 'calibrated parameters values'"
        )
    return figures


def _effort_columns(
    tm_raw: Any, te_raw: Any, n_joints: int | None, joint_names: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """``(tm, te, measured (L, n), identified (L, n), names)`` of stacked joint-major efforts."""
    if tm_raw is None or te_raw is None:
        raise ValueError(
            "no effort data: pass tau_measured/tau_identified or store "
            "'torque processed'/'torque estimated' in the results"
        )
    tm = _as_float_vector("tau_measured", tm_raw)
    te = _as_float_vector("tau_identified", te_raw)
    if tm.size == 0 or tm.size != te.size:
        raise ValueError(
            f"tau_measured has {tm.size} entries and tau_identified {te.size}: they "
            "must be the same non-empty stacked vector layout"
        )
    nj = n_joints if n_joints is not None else (len(joint_names) if joint_names else 1)
    m_cols = _per_joint_columns(tm, nj, "tau_measured")
    e_cols = _per_joint_columns(te, nj, "tau_identified")
    names = list(joint_names) if joint_names is not None else []
    if len(names) != nj:
        if names:
            logger.warning(
                "joint_names has %d names for %d joint blocks: using generic names",
                len(names),
                nj,
            )
        names = [f"joint {j + 1}" for j in range(nj)]
    return tm, te, m_cols, e_cols, names


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


class ResultsManager:
    """Plot and save the results dictionary of one task.

    Args:
        task_type: ``"calibration"``, ``"identification"``,
            ``"optimal_calibration"`` or ``"optimal_trajectory"``
            (case-insensitive).
        robot_name: Name used in file names and titles.
        results_data: The task's results dictionary (kept by reference, so
            later updates by the task are seen). When it has a ``"task type"``
            entry, that entry must equal ``task_type``.

    Raises:
        InvalidResultsError: (an ``AssertionError``) unknown task type,
            non-mapping ``results_data`` or mismatching ``"task type"``.

    Attributes:
        COLORS: Colour of each curve kind.
        PLOT_STYLES: Figure size [inch] and dpi per task type.
    """

    COLORS: dict[str, str] = {
        "measured": "#1f77b4",
        "identified": "#ff7f0e",
        "calibrated": "#2ca02c",
        "optimal": "#d62728",
        "reference": "#7f7f7f",
        "residual": "#9467bd",
    }

    PLOT_STYLES: dict[str, dict[str, Any]] = {
        "identification": {"figsize": (12, 8), "dpi": 100},
        "calibration": {"figsize": (14, 10), "dpi": 100},
        "optimal_calibration": {"figsize": (10, 8), "dpi": 100},
        "optimal_trajectory": {"figsize": (15, 10), "dpi": 100},
    }

    def __init__(
        self,
        task_type: str,
        robot_name: str = "robot",
        results_data: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(task_type, str) or task_type.lower() not in TASK_TYPES:
            raise InvalidResultsError(
                f"task_type must be one of {list(TASK_TYPES)}, got {task_type!r}"
            )
        self.task_type = task_type.lower()
        self.robot_name = str(robot_name) if robot_name else "robot"
        if results_data is not None and not isinstance(results_data, Mapping):
            raise InvalidResultsError(
                f"results_data must be a dict, got {type(results_data).__name__}"
            )
        if results_data:
            declared = results_data.get("task type")
            if declared is not None and str(declared).lower() != self.task_type:
                raise InvalidResultsError(
                    f"results_data['task type'] is {declared!r} but task_type is "
                    f"{self.task_type!r}: use ResultsManager({str(declared)!r}, ...)"
                )
        # Kept by reference: the task may add entries (e.g. "stages") later.
        self.result: dict[str, Any] = results_data if results_data is not None else {}
        self.logger = logger
        self.style = self.PLOT_STYLES[self.task_type]

    def __repr__(self) -> str:
        keys = list(self.result)
        shown = ", ".join(repr(k) for k in keys[:4]) + (", ..." if len(keys) > 4 else "")
        return (
            f"ResultsManager(task_type={self.task_type!r}, robot_name={self.robot_name!r}, "
            f"n_entries={len(keys)}, keys=[{shown}])"
        )

    # -- serialisation ----------------------------------------------------

    @staticmethod
    def _convert_for_serialization(data: Any, non_finite: str = "null") -> Any:
        """Recursively convert ``data`` into plain Python values.

        Mappings are walked (non-string keys that are not plain scalars become
        ``str``), lists/tuples become lists, sets become sorted lists,
        ``numpy.ndarray`` → nested list, numpy integer/floating scalars →
        ``float`` (figaroh 1.0.2 contract), numpy bool → ``bool``, dataclass
        instances → dict of their fields, objects with ``as_dict()`` /
        ``to_dict()`` → that dict, ``Path`` → ``str``, ``Enum`` → its value,
        dates → ISO text. Anything else is returned unchanged.

        Args:
            data: Value to convert.
            non_finite: ``"null"`` (default) turns NaN/±inf floats into
                ``None`` so the output passes ``json.dumps(allow_nan=False)``;
                ``"keep"`` leaves them as floats.

        Returns:
            The converted value.
        """
        if non_finite not in ("null", "keep"):
            raise ValueError(f"non_finite must be 'null' or 'keep', got {non_finite!r}")
        return to_plain(data, non_finite=non_finite, unknown="keep")

    # -- saving -----------------------------------------------------------

    def save_results(
        self,
        results: Mapping[str, Any] | None = None,
        output_dir: PathLike = "results",
        file_prefix: str | None = None,
        save_formats: Sequence[str] | None = ["yaml", "csv"],  # noqa: B006 - never mutated
        *,
        include_arrays: bool = False,
    ) -> dict[str, str]:
        """Save ``results`` (default ``self.result``) in several formats.

        The files hold the parameters, uncertainties, metrics, configuration,
        stages and provenance; the task's per-sample arrays
        (:data:`ARRAY_KEYS`) only with ``include_arrays=True``, in the NPZ.

        Files, all in ``output_dir`` (created if needed), with
        ``prefix = file_prefix`` or ``<robot_name>_<task_type>_<YYYYmmdd_HHMMSS>``
        (``_1``, ``_2``, ... appended when any target name is taken or claimed
        by a concurrent save: names are reserved by exclusive creation, so
        two processes saving into one folder at once never overwrite each
        other):

        * ``yaml`` → ``<prefix>.yaml``: the converted summary
          (``yaml.safe_dump``; NaN/inf as ``.nan``/``.inf``);
        * ``csv`` → ``<prefix>.csv``: 1-D arrays as columns, 2-D arrays split
          into ``<key>_<i>`` columns, scalars as one-element columns, shorter
          columns padded with empty cells; floats written with ``repr`` so
          they parse back exactly; mappings are skipped;
        * ``json`` → ``<prefix>.json`` (``allow_nan=False``, NaN/inf → null);
        * ``npz`` → ``<prefix>.npz`` (compressed, no pickles; non-array values
          stored as a 0-d string array holding their JSON text), plus, with
          ``include_arrays``, every per-sample array under its key path
          joined by ``"/"`` (``"torque processed"``,
          ``"validation_metrics/tau_measured_per_joint/<joint>"``);
        * always ``<prefix>_metadata.yaml``: ``task_type``, ``robot_name``,
          ``timestamp``, ``files``, ``data_shapes {key: {shape, dtype}}`` and
          ``summary_statistics {key: {mean, std, min, max}}`` (finite values)
          of the top-level numeric arrays — per-sample ones included — and
          ``arrays {included, file, keys}`` — returned under the key
          ``"metadata"``.

        Args:
            results: Dictionary to save; ``None`` uses ``self.result``.
            output_dir: Destination folder.
            file_prefix: File-name stem (no path separators).
            save_formats: Subset of ``("yaml", "csv", "json", "npz")`` (a single
                name is accepted too); default ``["yaml", "csv"]``, also used for
                ``None``. The list is only read, never modified.
            include_arrays: Also write the per-sample arrays, into the NPZ file
                (added to the formats when missing).

        Returns:
            ``{format: path}`` of the written files (``{}`` for empty results;
            ``csv`` is absent, with a warning, when nothing is tabular).

        Raises:
            ResultsManagerError: unknown format, invalid prefix, or
                ``output_dir`` is a file.
            FigarohExampleError: any write failure ("Failed to save results:
                ..."); files already written by this call are removed.
        """
        formats = _check_formats(save_formats)
        if include_arrays and "npz" not in formats:
            formats.append("npz")
        _check_prefix(file_prefix)
        data = self.result if results is None else results
        if not isinstance(data, Mapping):
            raise ResultsManagerError(f"results must be a dict, got {type(data).__name__}")
        if not data:
            logger.error("No results to save (empty results dictionary): run the task first")
            return {}

        if Path(output_dir).exists() and not Path(output_dir).is_dir():
            raise ResultsManagerError(
                f"output_dir {os.fspath(output_dir)!r} is a file, not a folder: pass a folder "
                "path (it is created if missing)"
            )
        summary, arrays = split_arrays(data, ARRAY_KEYS[self.task_type])
        saved = self._write_all(summary, arrays, include_arrays, output_dir, file_prefix, formats)
        for fmt, path in saved.items():
            logger.info("Saved %s results (%s): %s", self.task_type, fmt, path)
        return saved

    def _write_all(
        self,
        summary: Mapping[str, Any],
        arrays: Mapping[str, Any],
        include_arrays: bool,
        output_dir: Any,
        file_prefix: str | None,
        formats: list[str],
    ) -> dict[str, str]:
        """Write every format and the metadata file; on failure remove what was written."""
        written: list[str] = []
        try:
            folder = Path(output_dir)
            folder.mkdir(parents=True, exist_ok=True)
            targets = [_EXTENSIONS[f] for f in formats] + [_METADATA_SUFFIX]
            with claim_stem(folder, file_prefix or self._default_stem(), targets) as stem:
                saved: dict[str, str] = {}
                for fmt in formats:
                    content: Mapping[str, Any] = summary
                    if fmt == "npz" and include_arrays and arrays:
                        content = {**summary, **array_entries(arrays)}
                    out = _WRITERS[fmt](folder / f"{stem}{_EXTENSIONS[fmt]}", content)
                    if out is None:
                        continue
                    saved[fmt] = out
                    written.append(out)
                meta = self._metadata(summary, arrays, include_arrays, saved)
                saved["metadata"] = write_yaml(folder / f"{stem}{_METADATA_SUFFIX}", meta)
                written.append(saved["metadata"])
        except Exception as exc:
            for path in written:
                try:
                    os.unlink(path)
                except OSError:
                    pass
            raise FigarohExampleError(f"Failed to save results: {exc}") from exc
        return saved

    def _metadata(
        self,
        summary: Mapping[str, Any],
        arrays: Mapping[str, Any],
        include_arrays: bool,
        saved: Mapping[str, str],
    ) -> dict[str, Any]:
        """Content of ``<prefix>_metadata.yaml`` (see :meth:`save_results`)."""
        shapes: dict[str, Any] = {}
        stats: dict[str, Any] = {}
        for key, value in {**summary, **arrays}.items():
            if isinstance(value, np.ndarray):
                shapes[str(key)] = {"shape": list(value.shape), "dtype": str(value.dtype)}
                stat = summary_statistics(value)
                if stat is not None:
                    stats[str(key)] = stat
        included = bool(include_arrays and arrays)
        return {
            "task_type": self.task_type,
            "robot_name": self.robot_name,
            "timestamp": _dt.datetime.now().isoformat(timespec="seconds"),
            "files": {fmt: Path(p).name for fmt, p in saved.items()},
            "non_finite_encoding": {"yaml": ".nan/.inf", "json": "null", "csv": "nan/inf"},
            "data_shapes": shapes,
            "summary_statistics": stats,
            "arrays": {
                "included": included,
                "file": Path(saved["npz"]).name if included else None,
                "keys": sorted(arrays),
            },
        }

    # -- plotting infrastructure -----------------------------------------

    def _finish(
        self,
        plt: Any,
        figures: list[tuple[str, Any]],
        output_dir: PathLike,
        file_prefix: str | None,
        show: bool | None,
    ) -> list[str]:
        """Show the figures (interactive) or save them as PNG and close them."""
        headless = _is_headless()
        if show and headless:
            logger.warning("show=True but no display / non-interactive backend: saving PNG files")
        if show is None:
            show = not headless
        if show and not headless:
            plt.show()
            return []
        folder = Path(output_dir)
        paths: list[str] = []
        try:
            folder.mkdir(parents=True, exist_ok=True)
            stem = file_prefix or self._default_stem()
            for kind, fig in figures:
                with claim_stem(folder, f"{stem}_{kind}", [".png"]) as name:
                    path = folder / f"{name}.png"
                    paths.append(
                        atomic_write(
                            path,
                            lambda fh, f=fig: f.savefig(fh, format="png", dpi=self.style["dpi"]),
                            binary=True,
                        )
                    )
                logger.info("Saved %s plot: %s", kind, path)
        finally:
            for _, fig in figures:
                plt.close(fig)
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
            return self._finish(plt, figures, **kw)
        except Exception as exc:
            for _, fig in figures:
                plt.close(fig)
            if raise_errors:
                raise
            logger.error("%s plot failed: %s", label, exc)
            return []

    def _default_stem(self) -> str:
        """``<robot_name>_<task_type>_<YYYYmmdd_HHMMSS>`` (robot name made file-safe)."""
        robot = re.sub(r"[^A-Za-z0-9._-]+", "_", self.robot_name).strip("._") or "robot"
        return f"{robot}_{self.task_type}_{_timestamp()}"

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
        output_dir: PathLike = "results",
        file_prefix: str | None = None,
        show: bool | None = None,
        raise_errors: bool = False,
    ) -> list[str]:
        """Per-joint effort comparison, residuals and base parameters.

        The stacked effort vectors are joint-major
        (``τ = [τ_1(t_1..t_L), ..., τ_n(t_1..t_L)]``) and are reshaped into
        ``(L, n_joints)`` columns with ``vec.reshape(n_joints, -1).T``. Figure
        ``torques``: one row per joint, measured vs identified effort (left)
        and residual ``τ_meas − τ_ident`` with its RMSE (right); figure
        ``parameters``: bar chart of the base parameters with error bars
        ``|φ_i|·σ%_i/100`` when ``"std dev of estimated param"`` matches.
        The title shows ``Condition: {cond:.2e} | RMSE: {rmse:.6f}``.

        Args:
            tau_measured: Stacked measured efforts [N·m or N]; default
                ``result["torque processed"]``.
            tau_identified: Stacked predicted efforts [N·m or N]; default
                ``result["torque estimated"]``.
            parameter_values: Base parameters (SI units of each parameter:
                [kg], [kg·m], [kg·m²], ...); default ``"base parameters values"``.
            parameter_names: Their names; default ``"base parameters names"``.
            time_vector: Per-joint time stamps [s] (length ``L``); sample index
                when omitted or of the wrong length.
            joint_names: Names of the ``n_joints`` blocks.
            n_joints: Number of stacked joint blocks; default
                ``len(joint_names)`` or 1.
            title: Figure title.
            output_dir: Folder of the PNG files (headless mode).
            file_prefix: PNG name stem; default
                ``<robot>_<task>_<timestamp>``; files are ``<stem>_torques.png``
                and ``<stem>_parameters.png``.
            show: ``None`` = show iff a display is available; ``False`` always
                saves PNGs.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files (``[]`` when shown or on error).
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
            ax_r.set_title(f"{names[j]} residual, RMSE {rmse_j[j]:.4g}", fontsize=9)
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
        parts.append(f"RMSE: {float(rmse):.6f}")
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
        ax.set_ylabel("Value [SI]")
        ax.set_title(f"Identified base parameters (n = {phi.size})")
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
        output_dir: PathLike = "results",
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
            output_dir: Folder of the PNG files (headless mode).
            file_prefix: PNG name stem.
            show: ``None`` = show iff a display is available.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files.
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
            ax.set_ylabel(f"component {i + 1}")
            ax.set_title(f"component {i + 1}: RMSE {rmse:.4g}", fontsize=9)
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
        output_dir: PathLike = "results",
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
            output_dir: Folder of the PNG file (headless mode).
            file_prefix: PNG name stem.
            show: ``None`` = show iff a display is available.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files.
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
        output_dir: PathLike = "results",
        file_prefix: str | None = None,
        show: bool | None = None,
        raise_errors: bool = False,
    ) -> list[str]:
        """Joint trajectories of an optimal excitation design.

        Args:
            trajectories: ``(N, n)`` positions [rad or m], or a mapping such as
                ``{"q": (N, n), "dq": (N, n), "ddq": (N, n)}`` (one panel row
                per entry; [rad], [rad/s], [rad/s²]).
            condition_number: Condition number of the design's base regressor
                [-] (shown in the title).
            joint_names: Names of the plotted columns (after selection).
            title: Figure title.
            q_indices: Columns to plot of the position arrays (entries ``q``,
                or a bare array), e.g. the active joints' ``idx_q`` in a full
                ``(N, nq)`` configuration; default all columns.
            v_indices: Columns to plot of the velocity/acceleration arrays
                (every other mapping entry), e.g. the active ``idx_v``;
                default all columns.
            time_vector: Time stamps [s] (length ``N``).
            output_dir: Folder of the PNG file (headless mode).
            file_prefix: PNG name stem.
            show: ``None`` = show iff a display is available.
            raise_errors: Re-raise plotting errors instead of logging them.

        Returns:
            Paths of the written PNG files.
        """

        def build(plt: Any) -> list[tuple[str, Any]]:
            arrays = _trajectory_panels(trajectories, q_indices, v_indices)
            fig, axes = plt.subplots(
                len(arrays), 1, figsize=self._figsize(len(arrays), 3.0), squeeze=False
            )
            for i, (key, a) in enumerate(arrays):
                x = np.arange(a.shape[0])
                if time_vector is not None and np.size(time_vector) == a.shape[0]:
                    x = _as_float_vector("time_vector", time_vector)
                names = list(joint_names) if joint_names is not None else []
                if len(names) != a.shape[1]:
                    names = [f"joint {j + 1}" for j in range(a.shape[1])]
                ax = axes[i, 0]
                for j in range(a.shape[1]):
                    ax.plot(x, a[:, j], lw=1, label=names[j])
                ax.set_ylabel(key)
                ax.grid(True, alpha=0.3)
            axes[0, 0].legend(fontsize=7, ncol=min(4, arrays[0][1].shape[1]))
            axes[-1, 0].set_xlabel("Time [s]" if time_vector is not None else "Sample")
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


# ---------------------------------------------------------------------------
# module-level conveniences
# ---------------------------------------------------------------------------


def plot_with_fallback(
    primary: Callable[[], Any],
    fallback: Callable[[], Any],
    logger: logging.Logger | None,
    context: str,
) -> Any:
    """Run ``primary()``; on any exception log a warning and run ``fallback()``.

    Args:
        primary: Preferred plotting callable.
        fallback: Callable run when ``primary`` raises (its own exceptions
            propagate).
        logger: Logger receiving the warning (module logger when ``None``).
        context: What is being plotted (e.g. ``"identification"``), quoted in
            the warning.

    Returns:
        The return value of whichever callable completed.
    """
    log = logger if logger is not None else logging.getLogger(__name__)
    try:
        return primary()
    except Exception as exc:
        log.warning(
            "%s plotting failed (%s: %s); using fallback plot", context, type(exc).__name__, exc
        )
        return fallback()


def plot_identification_results(
    tau_measured: Any,
    tau_identified: Any,
    parameters: Any = None,
    parameter_names: Sequence[str] | None = None,
    robot_name: str = "robot",
    **kwargs: Any,
) -> list[str]:
    """Plot identification efforts without building a manager first.

    Args:
        tau_measured: Stacked measured efforts [N·m or N].
        tau_identified: Stacked predicted efforts [N·m or N].
        parameters: Base parameter values (SI units), or a mapping
            ``{name: value}`` (then its keys are the names).
        parameter_names: Their names (ignored when ``parameters`` is a mapping).
        robot_name: Name used in titles and file names.
        **kwargs: Forwarded to :meth:`ResultsManager.plot_identification_results`.

    Returns:
        Paths of the written PNG files.
    """
    if isinstance(parameters, Mapping):
        parameter_names = [str(k) for k in parameters]
        parameters = [float(v) for v in parameters.values()]
    manager = ResultsManager("identification", robot_name)
    return manager.plot_identification_results(
        tau_measured, tau_identified, parameters, parameter_names, **kwargs
    )


def plot_calibration_results(
    measured_poses: Any = None,
    estimated_poses: Any = None,
    residuals: Any = None,
    parameter_values: Any = None,
    parameter_names: Sequence[str] | None = None,
    robot_name: str = "robot",
    **kwargs: Any,
) -> list[str]:
    """Plot calibration results without building a manager first.

    Args:
        measured_poses: 2-D measured array ([m] / [rad]).
        estimated_poses: 2-D estimated array (same shape).
        residuals: Residual components or norms, see
            :meth:`ResultsManager.plot_calibration_results`.
        parameter_values: Calibrated parameter values ([m] / [rad]).
        parameter_names: Their names.
        robot_name: Name used in titles and file names.
        **kwargs: Forwarded to :meth:`ResultsManager.plot_calibration_results`.

    Returns:
        Paths of the written PNG files.
    """
    manager = ResultsManager("calibration", robot_name)
    return manager.plot_calibration_results(
        measured_poses,
        estimated_poses,
        residuals,
        parameter_values,
        parameter_names,
        **kwargs,
    )


def save_results(
    results: Mapping[str, Any],
    task_type: str,
    output_dir: PathLike = "results",
    robot_name: str = "robot",
    **kwargs: Any,
) -> dict[str, str]:
    """Save ``results`` with a temporary :class:`ResultsManager`.

    Args:
        results: Results dictionary.
        task_type: One of :data:`TASK_TYPES`.
        output_dir: Destination folder.
        robot_name: Name used in file names.
        **kwargs: ``file_prefix`` / ``save_formats`` / ``include_arrays`` of
            :meth:`ResultsManager.save_results`.

    Returns:
        ``{format: path}`` of the written files.
    """
    manager = ResultsManager(task_type, robot_name)
    return manager.save_results(results, output_dir, **kwargs)
