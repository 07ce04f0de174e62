"""What ``figaroh identify`` and ``figaroh calibrate`` run, usable from Python too.

Each workflow has an *input* phase (robot, configuration, data) and a
*compute* phase. Any error of the input phase — a missing file, a malformed
configuration, a CSV without the expected columns — is raised as a
:class:`CLIError` with exit code :data:`EXIT_BAD_INPUT` and a one-line
message; errors of the compute phase propagate unchanged.

Importing this module imports the identification and calibration packages;
:mod:`figaroh.cli.main` imports it only when ``identify`` or ``calibrate`` runs.
The exit codes, :class:`CLIError` and the threshold parser live in
:mod:`figaroh.cli.common` and are importable from here too.
"""

from __future__ import annotations

import contextlib
import csv
import io
import logging
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, Sequence, Tuple

from figaroh._run.uncertainty import ParameterTable
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.calibration.settings import DEFAULT_SETTINGS as _CALIBRATION_DEFAULTS
from figaroh.cli.bag_identification import BagIdentification
from figaroh.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_OK,
    INPUT_ERRORS,
    CLIError,
    one_line,
    require_file,
)
from figaroh.cli.csv_identification import CSVIdentification, resolve_csv_path
from figaroh.cli.thresholds import build_thresholds, parse_threshold
from figaroh.data.bag_source import PoseBagOptions, is_bag_path
from figaroh.identification._confidence import base_parameter_table
from figaroh.identification.base_identification import SOLVE_DEFAULTS, BaseIdentification
from figaroh.identification.quality_report import effort_unit_text
from figaroh.tools.exceptions import RobotLoadError
from figaroh.tools.report import calibration_rmse_text, calibrator_parameter_table
from figaroh.tools.robot import Robot
from figaroh.utils.error_handling import CalibrationError
from figaroh.utils.fileio import atomic_write_text, make_folder

logger = logging.getLogger(__name__)

__all__ = [
    "CLI_SOLVE_DEFAULTS",
    "BagInput",
    "CommandLineCalibration",
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_OK",
    "INPUT_ERRORS",
    "CLIError",
    "input_phase",
    "one_line",
    "build_thresholds",
    "load_robot_model",
    "parse_threshold",
    "require_file",
    "run_calibration",
    "run_identification",
    "solve_settings",
    "base_parameter_table",
    "calibration_rmse_text",
    "calibrator_parameter_table",
    "effort_unit_text",
    "confidence_columns",
    "write_parameter_csv",
]


#: What ``figaroh identify`` passes to :meth:`BaseIdentification.solve
#: <figaroh.identification.base_identification.BaseIdentification.solve>`
#: when no option overrides it: :data:`SOLVE_DEFAULTS` (one table, so the
#: command and the Python call give the same numbers on the same log — both
#: low-pass filter and keep every 10th sample; ``--decimate N`` changes the
#: factor, ``--no-decimate`` fits every sample) with the choices of a terminal
#: command: no plots, no files written by ``solve()`` itself (the command
#: writes its own), the report printed unless ``-q``; ``wls`` comes from
#: ``problem.wls`` of the configuration unless ``--wls`` / ``--no-wls``.
CLI_SOLVE_DEFAULTS = MappingProxyType(
    {
        **SOLVE_DEFAULTS,
        "plotting": False,
    }
)


class _NoSteps:
    """Stand-in for :class:`~figaroh.cli.progress.Steps` when no bar is wanted."""

    def start(self, name: str) -> None:  # noqa: D102 - trivial
        logger.debug("step: %s", name)


#: What a bad input raises while a task reads it (reported as exit code 2).
_INPUT_OR_CALIBRATION_ERRORS: tuple[type[BaseException], ...] = (*INPUT_ERRORS, CalibrationError)


@contextlib.contextmanager
def input_phase(what: str) -> Iterator[None]:
    """Turn the input errors raised inside the block into :class:`CLIError` (exit 2)."""
    try:
        yield
    except CLIError:
        raise
    except FileNotFoundError as exc:
        raise CLIError(f"{what}: {one_line(exc)}") from exc
    except _INPUT_OR_CALIBRATION_ERRORS as exc:
        raise CLIError(f"{what}: {one_line(exc)}") from exc
    except Exception as exc:  # noqa: BLE001 - yaml and loader errors have their own types
        if type(exc).__module__.startswith("yaml"):
            raise CLIError(f"{what}: invalid YAML: {one_line(exc)}") from exc
        raise


def load_robot_model(
    urdf: str | os.PathLike,
    package_dirs: Sequence[str] | None = None,
    free_flyer: bool = False,
):
    """A dynamics-only :class:`~figaroh.tools.robot.Robot` (meshes are not needed).

    Args:
        urdf: URDF file. ``package://`` mesh URIs are never resolved here.
        package_dirs: Extra folders holding ``package://`` packages.
        free_flyer: Add a floating-base (free-flyer) root joint.

    Raises:
        CLIError: The URDF is missing or invalid (exit 2).
    """
    require_file(urdf, "URDF")
    with input_phase(f"cannot load the URDF {urdf}"):
        try:
            return Robot(
                str(urdf),
                package_dirs=list(package_dirs) if package_dirs else None,
                isFext=free_flyer,
                load_geometry=False,
            )
        except RobotLoadError as exc:
            raise ValueError(one_line(exc)) from exc


def write_parameter_csv(
    path: str | os.PathLike, names: Sequence[str], columns: Mapping[str, Sequence[Any]]
) -> Path:
    """Write ``parameter,<column>...`` rows; numbers with 17 significant digits (exact round trip).

    Args:
        path: Destination file (parent folders are created).
        names: Parameter names, one per row.
        columns: Column name → values aligned with ``names``: numbers, or
            strings (written as they are, e.g. a grade).

    Returns:
        The written path.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["parameter", *columns])
    cols = [[v if isinstance(v, str) else float(v) for v in values] for values in columns.values()]
    for k, name in enumerate(names):
        writer.writerow(
            [name, *(c[k] if isinstance(c[k], str) else format(c[k], ".17g") for c in cols)]
        )
    path = Path(path)
    make_folder(path.parent)
    atomic_write_text(path, buf.getvalue())
    return path


def confidence_columns(table: ParameterTable | None) -> dict[str, list[Any]]:
    """The columns a parameter CSV gains from the report's parameter table.

    ``sigma`` (absolute standard deviation, the parameter's unit), ``ci_low``
    and ``ci_high`` (the confidence interval ``θ̂ ± t_{1−α/2, n−p} σ``),
    ``confidence_level`` (its level, e.g. 0.95, on every row) and ``grade``
    (the shared grade: ``good``, ``fair``, ``poor``, ``unknown``, with
    ``· not distinguishable from 0`` when the interval holds 0).

    Args:
        table: The parameter table (None: no column).
    """
    if table is None:
        return {}
    return {
        "sigma": table.column("sigma"),
        "ci_low": table.column("ci_low"),
        "ci_high": table.column("ci_high"),
        "confidence_level": [table.level] * len(table.rows),
        "grade": [r.grade.label for r in table.rows],
    }


# ---------------------------------------------------------------------------
# identification
# ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BagInput:
    """A ROS bag as the input of ``figaroh identify --bag`` / ``calibrate --bag``.

    Attributes:
        path: The bag (ROS 1 ``.bag``, ROS 2 folder, ``.mcap`` file).
        topics: JointState topic(s) (None: configured, else the only one).
        validation_path: Held-out bag (identification).
        resample: ``none``, ``linear``, ``cubic`` (None: configured, else ``none``).
        pose_topic: Measured pose topic (calibration).
        pose_frame: Child frame of a TFMessage pose topic (calibration).
        still_window_s: Shortest still window of a posture [s] (calibration).
    """

    path: str
    topics: Tuple[str, ...] | None = None
    validation_path: str | None = None
    resample: str | None = None
    pose_topic: str | None = None
    pose_frame: str | None = None
    still_window_s: float | None = None


def _configured_identification(
    robot: Robot,
    config: str | os.PathLike,
    data: str | os.PathLike | None,
    select_stage: str | None,
    validation: str | os.PathLike | None,
    bag: BagInput | None = None,
) -> BaseIdentification:
    """A CSV (or bag) identification of ``config`` with the command-line overrides applied."""
    with input_phase(f"invalid configuration {config}"):
        ident: BaseIdentification
        if bag is not None:
            ident = BagIdentification(
                robot,
                config,
                bag=bag.path,
                topic=bag.topics,
                validation_bag=bag.validation_path,
                resample=bag.resample,
            )
        else:
            ident = CSVIdentification(robot, config, data_dir=str(data))
        if select_stage is not None:
            ident.identif_config["select_stage"] = select_stage
        if validation is not None:
            ident.identif_config["validation_data_file"] = str(validation)
    return ident


def run_identification(
    config: str | os.PathLike,
    urdf: str | os.PathLike,
    data: str | os.PathLike | None,
    *,
    bag: BagInput | None = None,
    validation: str | os.PathLike | None = None,
    select_stage: str | None = None,
    decimate: int | None = None,
    wls: bool | None = None,
    package_dirs: Sequence[str] | None = None,
    free_flyer: bool = False,
    show_report: bool = True,
    require_inertials: bool = False,
    steps: Any = None,
    check: Callable[[BaseIdentification], None] | None = None,
):
    """Identify the base parameters from CSV logs (or a ROS bag) with :class:`CSVIdentification`.

    Args:
        config: Unified configuration YAML (``tasks.identification``).
        urdf: Robot URDF.
        data: Training log (CSV file or folder, see :mod:`figaroh.cli.csv_identification`);
            None with ``bag``.
        bag: A ROS bag instead of ``data``
            (:class:`~figaroh.cli.bag_identification.BagIdentification`).
        validation: Held-out log; overrides ``data.validation_data_file``.
        select_stage: ``fit``, ``reconstruction`` or ``physical_fit``;
            overrides ``tasks.identification.select_stage``.
        decimate: Low-pass and keep every ``decimate``-th sample before the
            fit (None: :data:`CLI_SOLVE_DEFAULTS`, every 10th sample; 0: every sample).
        wls: Weighted least squares (None: ``problem.wls`` of the configuration).
        package_dirs: Extra ``package://`` folders.
        free_flyer: Floating-base robot.
        show_report: Let :meth:`solve` print the quality report on stdout.
        require_inertials: Refuse (before any computation) a run whose
            selected stage has no per-link inertials (``fit``): a URDF export
            was asked for.
        steps: A :class:`~figaroh.cli.progress.Steps` to advance (optional).
        check: Called with the configured identification before the data is
            read; raises :class:`CLIError` to stop a run that cannot give
            the asked verdict (optional).

    Returns:
        The solved :class:`~figaroh.cli.csv_identification.CSVIdentification`
        (:class:`~figaroh.cli.bag_identification.BagIdentification` with ``bag``).

    Raises:
        CLIError: Bad input (exit 2).
    """
    steps = steps or _NoSteps()
    require_file(config, "configuration file")
    if bag is not None:
        require_file(bag.path, "bag", directory_ok=True)
        if bag.validation_path is not None:
            require_file(bag.validation_path, "validation bag", directory_ok=True)
    else:
        if data is None:
            raise CLIError("give the training log: --data CSV or --bag PATH")
        require_file(data, "trajectory data", directory_ok=True)
    if validation is not None:
        require_file(validation, "validation data", directory_ok=True)
    steps.start("load robot")
    robot = load_robot_model(urdf, package_dirs, free_flyer)
    steps.start("read configuration")
    ident = _configured_identification(robot, config, data, select_stage, validation, bag)
    stage = str(ident.identif_config.get("select_stage") or "fit")
    if require_inertials and stage == "fit":
        raise CLIError(
            "a URDF export needs per-link inertials: select the 'physical_fit' or "
            "'reconstruction' stage (--select-stage or tasks.identification.select_stage)"
        )
    if check is not None:
        with input_phase(f"invalid configuration {config}"):
            check(ident)
    steps.start("load data and build the regressor")
    with input_phase("invalid trajectory data"):
        source = ident.identif_config.get("validation_data_file") or ""
        if bag is None:
            resolve_csv_path(str(data))
        if source and not is_bag_path(ident.resolve_validation_source(source)):
            resolve_csv_path(ident.resolve_validation_source(source))
        ident.initialize()
    steps.start("solve")
    _solve_identification(ident, decimate, wls, show_report)
    return ident


def solve_settings(
    decimate: int | None = None, wls: bool | None = None, config_wls: bool = False
) -> dict:
    """The ``solve()`` keyword arguments of ``figaroh identify`` (:data:`CLI_SOLVE_DEFAULTS`).

    Args:
        decimate: ``--decimate N`` (None: the table's ``decimate``; 0: no
            decimation).
        wls: ``--wls`` / ``--no-wls`` (None: ``config_wls``).
        config_wls: ``problem.wls`` of the configuration.

    Returns:
        Every key of :data:`SOLVE_DEFAULTS` except ``verbose`` and ``save_plots``.
    """
    settings = {k: v for k, v in CLI_SOLVE_DEFAULTS.items() if k not in ("verbose", "save_plots")}
    if decimate == 0:
        settings["decimate"] = False
    elif decimate is not None:
        settings.update(decimate=True, decimation_factor=int(decimate))
    settings["wls"] = bool(config_wls) if wls is None else bool(wls)
    return settings


def _solve_identification(ident, decimate: int | None, wls: bool | None, show_report: bool):
    """``ident.solve`` with the command-line choices (no plots, no files)."""
    settings = solve_settings(decimate, wls, bool(ident.identif_config.get("wls", False)))
    ident.solve(**settings, verbose=bool(show_report))


# ---------------------------------------------------------------------------
# calibration
# ---------------------------------------------------------------------------
def _pose_bag_section(section: Any, bag: BagInput) -> dict:
    """``tasks.calibration.data.bag`` with the command-line options winning (checked)."""
    merged = dict(section or {})
    overrides = {
        "pose_topic": bag.pose_topic,
        "pose_frame": bag.pose_frame,
        "joint_topics": list(bag.topics) if bag.topics else None,
        "still_window_s": bag.still_window_s,
    }
    merged.update({k: v for k, v in overrides.items() if v is not None})
    PoseBagOptions.from_config(merged)  # a bad value fails here, naming the key
    return merged


class CommandLineCalibration(BaseCalibration):
    """``BaseCalibration`` whose data file is the command's when the configuration names none.

    Args:
        robot: The :class:`~figaroh.tools.robot.Robot`.
        config_file: Unified configuration YAML (``tasks.calibration``).
        data_source: The ``--data`` CSV (or ``--bag``) of the command.

    ``BaseCalibration.__init__`` resolves ``data.source_file`` and refuses an
    empty one; the command line gives the data with ``--data`` (or ``--bag``)
    instead, so the configuration needs no ``source_file``. A configured
    ``source_file`` is kept here and replaced by :meth:`set_data_file` later,
    as before.
    """

    def __init__(self, robot: Any, config_file: str, data_source: str | os.PathLike) -> None:
        self._given_data_source = str(data_source)
        super().__init__(robot, config_file)

    def load_param(self, config_file: str, setting_type: str = "calibration") -> None:
        """:meth:`BaseCalibration.load_param`, then the given data when none is configured."""
        super().load_param(config_file, setting_type)
        if not str(self.calib_config.get("data_file") or "").strip():
            self.calib_config["data_file"] = self._given_data_source


def _configured_calibration(
    robot: Robot,
    config: str | os.PathLike,
    known_base_frame: bool,
    known_tip_frame: bool,
    measurement_std: Sequence[float] | None,
    data_source: str | os.PathLike,
) -> BaseCalibration:
    """A ``BaseCalibration`` of ``config`` with the command-line overrides applied.

    ``data_source`` (``--data`` or ``--bag``) stands for ``data.source_file``
    when the configuration leaves it empty.
    """
    calib = CommandLineCalibration(robot, str(config), data_source)
    calib.calib_config["known_baseframe"] = bool(known_base_frame)
    calib.calib_config["known_tipframe"] = bool(known_tip_frame)
    if measurement_std is not None:
        pos, rot = (float(v) for v in measurement_std)
        if not (pos > 0 and rot > 0):
            raise ValueError(f"--measurement-std must be positive, got {pos}, {rot}")
        calib.calib_config["measurement_std"] = {"position": pos, "orientation": rot}
    return calib


def run_calibration(
    config: str | os.PathLike,
    urdf: str | os.PathLike,
    data: str | os.PathLike | None,
    *,
    bag: BagInput | None = None,
    validation: str | os.PathLike | None = None,
    known_base_frame: bool = False,
    known_tip_frame: bool = False,
    measurement_std: Sequence[float] | None = None,
    method: str = "lm",
    max_iterations: int = _CALIBRATION_DEFAULTS.max_iterations,
    package_dirs: Sequence[str] | None = None,
    free_flyer: bool = False,
    show_report: bool = True,
    steps: Any = None,
    check: Callable[[BaseCalibration], None] | None = None,
):
    """Geometric calibration from a pose CSV with the generic ``BaseCalibration``.

    The CSV layout: per marker ``i`` and measured component ``x<i>, y<i>,
    z<i>`` [m] and ``phix<i>, phiy<i>, phiz<i>`` [rad, roll-pitch-yaw], then
    one column per active joint named as in the URDF [rad or m]. The default
    cost (weighted body-frame log-map residuals) is used.

    Args:
        config: Unified configuration YAML (``tasks.calibration``).
        urdf: Robot URDF.
        data: Calibration CSV (None with ``bag``).
        bag: A ROS bag of joint states and poses instead of ``data``: its still
            postures are paired with the pose topic
            (:func:`~figaroh.data.bag_source.observations_from_bag`).
        validation: Held-out CSV (same layout).
        known_base_frame: The base (measurement → robot) frame is known:
            do not estimate ``base_*``.
        known_tip_frame: The tool/marker frame is known: do not estimate
            ``pEE*``/``phiEE*``.
        measurement_std: ``(position [m], orientation [rad])`` measurement
            noise; the residual rows are weighted by ``1/σ``.
        method: ``scipy.optimize.least_squares`` method (``lm``, ``trf``, ``dogbox``).
        max_iterations: Fits of the outlier-rejection loop.
        package_dirs: Extra ``package://`` folders.
        free_flyer: Floating-base robot.
        show_report: Let :meth:`solve` print the quality report on stdout.
        steps: A :class:`~figaroh.cli.progress.Steps` to advance (optional).
        check: Called with the configured calibration before the data is
            read; raises :class:`CLIError` to stop a run that cannot give
            the asked verdict (optional).

    Returns:
        The solved calibration.

    Raises:
        CLIError: Bad input (exit 2).
    """
    steps = steps or _NoSteps()
    require_file(config, "configuration file")
    source = bag.path if bag is not None else data
    if source is None:
        raise CLIError("give the calibration data: --data CSV or --bag PATH")
    require_file(
        source, "bag" if bag is not None else "calibration data", directory_ok=bag is not None
    )
    if validation is not None:
        require_file(validation, "validation data", directory_ok=True)
    steps.start("load robot")
    robot = load_robot_model(urdf, package_dirs, free_flyer)
    steps.start("read configuration")
    with input_phase(f"invalid configuration {config}"):
        calib = _configured_calibration(
            robot, config, known_base_frame, known_tip_frame, measurement_std, source
        )
        if check is not None:
            check(calib)
    steps.start("load data")
    with input_phase("invalid calibration data"):
        if bag is not None:
            calib.calib_config["bag"] = _pose_bag_section(calib.calib_config.get("bag"), bag)
        calib.set_data_file(source)
        if validation is not None:
            calib.set_data_file(validation, validation=True)
        calib.initialize()
    steps.start("solve")
    with warnings.catch_warnings():
        # the default cost is what this generic path means to use
        warnings.filterwarnings("ignore", message="Using default cost function")
        calib.solve(method, max_iterations, enable_logging=False, verbose=bool(show_report))
    return calib
