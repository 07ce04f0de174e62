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
  module import. A plot writes PNG files only when asked, into its
  ``output_dir`` argument (their paths are returned). Without it nothing is
  written: with a display the figures are shown (``plt.show()``); with a
  non-interactive backend (``Agg``, ``MPLBACKEND=Agg``, or a Linux session
  without ``DISPLAY`` / ``WAYLAND_DISPLAY``) they are drawn and left open, as
  figaroh 1.0.2 leaves them, and are also in
  :attr:`ResultsManager.last_figures`. Missing matplotlib turns a plot into a
  warning.
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
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from figaroh._optional import is_installed
from figaroh._run.result_plots import ResultPlots
from figaroh._run.result_plots import _import_pyplot as _import_pyplot
from figaroh._run.result_plots import _is_headless as _is_headless
from figaroh._run.result_plots import _per_joint_columns as _per_joint_columns
from figaroh._run.results_files import (
    ARRAY_KEYS,
    array_entries,
    claim_stem,
    saved_sets,
    split_arrays,
    summary_statistics,
    to_plain,
    write_csv,
    write_json,
    write_npz,
    write_yaml,
)
from figaroh.utils.error_handling import FigarohError, FigarohExampleError, setup_example_logging
from figaroh.utils.fileio import make_folder

logger = logging.getLogger(__name__)

PathLike = str | os.PathLike

__all__ = [
    "ARRAY_KEYS",
    "InvalidResultsError",
    "ResultsManager",
    "ResultsManagerError",
    "SUPPORTED_FORMATS",
    "TASK_TYPES",
    "list_saved_results",
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

#: Whether matplotlib is installed (looked up with :func:`importlib.util.find_spec`
#: when this module is imported; matplotlib itself is imported by the first
#: plot). Without it a plotting call logs a warning and draws nothing.
HAS_MATPLOTLIB: bool = is_installed("matplotlib")

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


def _check_output_dir(output_dir: PathLike) -> None:
    """Refuse an ``output_dir`` that is an existing file."""
    if Path(output_dir).exists() and not Path(output_dir).is_dir():
        raise ResultsManagerError(
            f"output_dir {os.fspath(output_dir)!r} is a file, not a folder: pass a folder "
            "path (it is created if missing)"
        )


class ResultsManager(ResultPlots):
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
        last_figures: ``{kind: Figure}`` drawn by the last plotting call.
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
        self.result: Mapping[str, Any] = results_data if results_data is not None else {}
        self.logger = logger
        self.style = self.PLOT_STYLES[self.task_type]
        self.last_figures: dict[str, Any] = {}

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

        _check_output_dir(output_dir)
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
            folder = make_folder(output_dir)
            targets = [_EXTENSIONS[f] for f in formats] + [_METADATA_SUFFIX]
            stem_wanted = file_prefix or self._default_stem()
            with claim_stem(folder, stem_wanted, targets, complete=_METADATA_SUFFIX) as stem:
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
            if isinstance(exc, FigarohError):
                raise  # figaroh's named errors (a sealed run, ...) reach the caller as they are
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

    def _default_stem(self) -> str:
        """``<robot_name>_<task_type>_<YYYYmmdd_HHMMSS>`` (robot name made file-safe)."""
        robot = re.sub(r"[^A-Za-z0-9._-]+", "_", self.robot_name).strip("._") or "robot"
        return f"{robot}_{self.task_type}_{_timestamp()}"


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
        Paths of the written PNG files ([] without ``output_dir`` in kwargs).
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
        Paths of the written PNG files ([] without ``output_dir`` in kwargs).
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


def list_saved_results(output_dir: PathLike = "results") -> list[dict[str, Any]]:
    """The complete result sets :meth:`ResultsManager.save_results` wrote into a folder.

    A save writes its data files first and ``<prefix>_metadata.yaml`` last,
    so a set is complete when its metadata file exists and every file it
    lists is there. A save killed before its metadata file leaves an
    incomplete set: it is not listed, a warning names it, and the next save
    into the folder removes it.

    Args:
        output_dir: Folder the results were saved in.

    Returns:
        One dict per complete set, sorted by prefix: ``prefix``, ``task_type``,
        ``robot_name``, ``timestamp`` (from the metadata) and ``files``
        (``{format: path}``, ``"metadata"`` included).
    """
    import yaml  # ~25 ms (regex tables): paid by the call, not the import

    folder = Path(output_dir)
    done, incomplete = saved_sets(folder, _METADATA_SUFFIX)
    sets: list[dict[str, Any]] = []
    for stem, meta_path in done:
        try:
            meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            incomplete.append(f"{stem}: unreadable {meta_path.name} ({_one_line(exc)})")
            continue
        files = meta.get("files") if isinstance(meta, Mapping) else None
        if not isinstance(files, Mapping):
            incomplete.append(f"{stem}: {meta_path.name} lists no files (not a results save)")
            continue
        paths = {str(fmt): folder / str(name) for fmt, name in files.items()}
        missing = sorted(p.name for p in paths.values() if not p.is_file())
        if missing:
            incomplete.append(f"{stem}: {', '.join(missing)} missing")
            continue
        paths["metadata"] = meta_path
        sets.append(
            {
                "prefix": stem,
                "task_type": meta.get("task_type"),
                "robot_name": meta.get("robot_name"),
                "timestamp": meta.get("timestamp"),
                "files": {fmt: str(p) for fmt, p in paths.items()},
            }
        )
    for line in incomplete:
        logger.warning("%s: incomplete result set not listed: %s", folder, line)
    return sets


def _one_line(exc: BaseException) -> str:
    """``exc`` as one line (newlines collapsed)."""
    return " ".join(str(exc).split()) or type(exc).__name__


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
