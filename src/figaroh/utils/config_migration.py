"""Convert legacy flat configuration files to the unified format.

Legacy files hold a top-level ``calibration:`` mapping (``calib_level``,
``base_frame``, ``markers`` ...) and/or an ``identification:`` mapping of
one-element lists (``robot_params``, ``problem_params``,
``processing_params``, ``tls_params``). This module maps them onto the
unified layout (``robot.properties`` + ``tasks.calibration`` /
``tasks.identification``), i.e. the inverse of ``unified_to_legacy_config``
and :func:`figaroh.identification.config.unified_to_legacy_identif_config`.
The mapping itself (pure dictionaries) lives in
:mod:`figaroh.utils._legacy_unified` and is re-exported here; this module adds
the files, the self check and the command line.

Command line::

    python -m figaroh.utils.config_migration --input OLD.yaml --output NEW.yaml \\
        [--task auto|calibration|identification] [--template base|manipulator|humanoid] \\
        [--urdf robot.urdf] [--robot-name NAME]
    python -m figaroh.utils.config_migration OLD.yaml NEW.yaml

(the ``figaroh migrate-config OLD NEW`` command; the ``figaroh-migrate-config``
console script is its deprecated alias). The output is written
atomically (:func:`figaroh.utils.fileio.atomic_write`: a temporary file
beside it, mode ``0o666 & ~umask``, never inside a sealed archived run) and
the temporary file is parsed with
:class:`~figaroh.utils.config_parser.UnifiedConfigParser` before it replaces
anything. ``extends`` is written only when the chosen template exists
relative to the output file (the ``TEMPLATE_PATHS`` location or a
``templates/`` folder next to / above it); otherwise the file is written
self-contained (no ``extends``; every migrated value is explicit). With
``--urdf`` the result is round-tripped through ``create_task_config`` and the
``unified_to_legacy_*`` converters and compared with the legacy values
(:func:`self_check`); a mismatch makes the command exit with status 1.

Legacy quirks handled: the YAML string ``None`` means "no value"; numbers
written as ``1e-6`` (a string for YAML 1.1) are converted to floats; keys
the unified schema has no place for are preserved under ``custom.legacy_*``.
"""

from __future__ import annotations

import argparse
import copy
import logging
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from figaroh.calibration.config import unified_to_legacy_config
from figaroh.identification.config import unified_to_legacy_identif_config
from figaroh.utils._legacy_unified import (
    TASKS,
    TEMPLATE_PATHS,
    clean_value,
    convert_legacy_to_unified,
    has_section,
    legacy_block,
    legacy_calibration_to_unified,
    legacy_identification_to_unified,
    merge_unified_sections,
    nonzero_regularization,
)
from figaroh.utils.error_handling import ConfigurationError
from figaroh.utils.fileio import atomic_write, make_folder
from figaroh.utils.unified_config import (
    UnifiedConfigParser,
    _load_yaml_mapping,
    create_task_config,
    is_unified_config,
)

logger = logging.getLogger(__name__)

__all__ = [
    "TEMPLATE_PATHS",
    "legacy_calibration_to_unified",
    "legacy_identification_to_unified",
    "merge_unified_sections",
    "convert_legacy_to_unified",
    "self_check",
    "migrate_file",
    "main",
]

# Fields compared by self_check: (legacy block, legacy key, identif_config key).
_IDENTIF_CHECKS = (
    ("robot_params", "q_lim_def", "q_lim_def"),
    ("robot_params", "dq_lim_def", "dq_lim_def"),
    ("robot_params", "ddq_lim_def", "ddq_lim_def"),
    ("robot_params", "tau_lim_def", "torque_lim_def"),
    ("robot_params", "fv", "fv"),
    ("robot_params", "fs", "fs"),
    ("robot_params", "Ia", "Ia"),
    ("robot_params", "offset", "off"),
    ("robot_params", "reduction_ratio", "reduction_ratio"),
    ("robot_params", "ratio_essential", "ratio_essential"),
    ("robot_params", "Iam6", "Iam6"),
    ("robot_params", "fvm6", "fvm6"),
    ("robot_params", "fsm6", "fsm6"),
    ("problem_params", "active_joints", "active_joints"),
    ("problem_params", "is_external_wrench", "is_external_wrench"),
    ("problem_params", "is_joint_torques", "is_joint_torques"),
    ("problem_params", "force_torque", "force_torque"),
    ("problem_params", "external_wrench_offsets", "external_wrench_offsets"),
    ("problem_params", "has_friction", "has_friction"),
    ("problem_params", "has_actuator_inertia", "has_actuator_inertia"),
    ("problem_params", "has_joint_offset", "has_joint_offset"),
    ("problem_params", "has_coupled_wrist", "has_coupled_wrist"),
    ("processing_params", "ts", "ts"),
    ("processing_params", "cut_off_frequency_butterworth", "cut_off_frequency_butterworth"),
)
# (legacy key, calib_config key)
_CALIB_CHECKS = (
    ("calib_level", "calib_model"),
    ("non_geom", "non_geom"),
    ("base_frame", "start_frame"),
    ("tool_frame", "end_frame"),
    ("free_flyer", "free_flyer"),
    ("base_pose", "base_pose"),
    ("tip_pose", "tip_pose"),
    ("coeff_regularize", "coeff_regularize"),
    ("outlier_eps", "outlier_eps"),
    ("data_file", "data_file"),
    ("sample_configs_file", "sample_configs_file"),
    ("nb_sample", "NbSample"),
    ("base_to_ref_frame", "base_to_ref_frame"),
    ("ref_frame", "ref_frame"),
)


# ---------------------------------------------------------------------------
# self check
# ---------------------------------------------------------------------------


def _values_equal(expected: Any, got: Any) -> bool:
    if isinstance(expected, bool) or isinstance(got, bool):
        return isinstance(expected, bool) and isinstance(got, bool) and expected == got
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(float(expected), float(got), rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        return len(expected) == len(got) and all(
            _values_equal(a, b) for a, b in zip(expected, got, strict=True)
        )
    if hasattr(got, "tolist") and isinstance(expected, (list, tuple)):
        return _values_equal(expected, got.tolist())
    return expected == got


def _load_unified(unified_doc: Any) -> dict[str, Any]:
    if isinstance(unified_doc, (str, os.PathLike)):
        return UnifiedConfigParser(unified_doc).parse()
    if not isinstance(unified_doc, Mapping):
        raise ValueError(
            f"unified_doc must be a path or a mapping, got {type(unified_doc).__name__}"
        )
    doc = copy.deepcopy(dict(unified_doc))
    doc.pop("extends", None)  # cannot be resolved without a file location
    return doc


class _CheckResult:
    """The outcome of :func:`self_check` being accumulated (mismatches, checked, notes)."""

    def __init__(self) -> None:
        self.mismatches: dict[str, dict[str, Any]] = {}
        self.checked: list[str] = []
        self.notes: list[str] = []

    def mismatch(self, key: str, expected: Any, got: Any) -> None:
        self.mismatches[key] = {"expected": expected, "got": got}

    def compare(self, name: str, expected: Any, got: Any) -> None:
        self.checked.append(name)
        if not _values_equal(expected, got):
            self.mismatch(name, expected, got)

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": not self.mismatches,
            "mismatches": self.mismatches,
            "checked": self.checked,
            "notes": self.notes,
        }


def _task_config(robot: Any, config: Mapping[str, Any], name: str, out: _CheckResult):
    """``create_task_config`` of task ``name``; ``None`` (noted) when disabled or failing."""
    task = (config.get("tasks") or {}).get(name)
    if isinstance(task, Mapping) and task.get("enabled", True) is False:
        out.notes.append(f"tasks.{name} is disabled in the unified document: not compared")
        return None
    try:
        return create_task_config(robot, config, name)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        out.mismatch(f"{name}._conversion", "task config", f"{type(exc).__name__}: {exc}")
        return None


def _check_identification(robot: Any, section: Mapping[str, Any], tc: Mapping, out) -> None:
    """Compare the legacy identification blocks with ``unified_to_legacy_identif_config``."""
    try:
        identif = unified_to_legacy_identif_config(robot, tc)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        out.mismatch("identification._conversion", "identif_config", f"{type(exc).__name__}: {exc}")
        return
    blocks = {
        b: legacy_block(section, b) for b in ("robot_params", "problem_params", "processing_params")
    }
    for block, legacy_key, key in _IDENTIF_CHECKS:
        expected = blocks[block].get(legacy_key)
        if expected is not None:
            out.compare(f"identification.{key}", expected, identif.get(key))


def _check_calibration(robot: Any, cal: Mapping[str, Any], tc: Mapping, out) -> None:
    """Compare the legacy calibration fields with ``unified_to_legacy_config``."""
    try:
        calib = unified_to_legacy_config(robot, tc)
    except Exception as exc:  # noqa: BLE001 - reported, never raised
        out.mismatch("calibration._conversion", "calib_config", f"{type(exc).__name__}: {exc}")
        return
    for legacy_key, key in _CALIB_CHECKS:
        expected = cal.get(legacy_key)
        if expected is None:
            continue
        if legacy_key == "coeff_regularize" and nonzero_regularization(expected):
            out.notes.append(
                f"calibration.coeff_regularize = {expected!r} is not supported "
                "and was migrated as 0 (kept under custom.legacy_calibration_params)"
            )
            expected = 0.0
        out.compare(f"calibration.{key}", expected, calib.get(key))
    markers = cal.get("markers") or []
    if markers and isinstance(markers[0], Mapping) and markers[0].get("measure"):
        out.compare("calibration.measurability", markers[0]["measure"], calib.get("measurability"))
        out.compare("calibration.NbMarkers", len(markers), calib.get("NbMarkers"))


def self_check(robot: Any, legacy_config: Mapping[str, Any], unified_doc: Any) -> dict[str, Any]:
    """Round-trip check of a migration.

    The unified document is flattened with ``create_task_config`` and
    converted with ``unified_to_legacy_identif_config`` /
    ``unified_to_legacy_config``; every field of a fixed list that the legacy
    file specifies (``None`` means unspecified) is compared with the legacy
    value (floats to 1e-9 relative tolerance; ``ts`` [s] is compared after the
    1/ts → sampling_frequency → 1/f round trip; a non-zero legacy
    ``coeff_regularize``, which the migration writes as 0, is expected as 0
    and listed in ``notes``).

    Args:
        robot: Object with ``.model`` (and ``.q0``/``.data`` for calibration).
        legacy_config: Parsed legacy document.
        unified_doc: Unified document (mapping; its ``extends`` is ignored) or
            the path of the written unified file (fully parsed).

    Returns:
        ``{"ok": bool, "mismatches": {"<task>.<field>": {"expected", "got"}},
        "checked": [names], "notes": [str]}``. A conversion failure is
        reported as the mismatch ``"<task>._conversion"``.
    """
    out = _CheckResult()
    config = _load_unified(unified_doc)
    if has_section(legacy_config, "identification"):
        tc = _task_config(robot, config, "identification", out)
        if tc is not None:
            _check_identification(robot, legacy_config["identification"], tc, out)
    if has_section(legacy_config, "calibration"):
        tc = _task_config(robot, config, "calibration", out)
        if tc is not None:
            cal = {k: clean_value(v) for k, v in legacy_config["calibration"].items()}
            _check_calibration(robot, cal, tc, out)
    return out.as_dict()


# ---------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------


class _UrdfRobot:
    """Minimal robot (``model``, ``data``, ``q0``) built from a URDF for the self-check."""

    def __init__(self, urdf: str | os.PathLike, free_flyer: bool = False) -> None:
        import pinocchio as pin

        path = Path(urdf)
        if not path.is_file():
            raise ConfigurationError(f"URDF file not found: {path} (--urdf)")
        try:
            if free_flyer:
                self.model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
            else:
                self.model = pin.buildModelFromUrdf(str(path))
        except Exception as exc:  # noqa: BLE001
            raise ConfigurationError(f"Cannot build a Pinocchio model from {path}: {exc}") from exc
        self.data = self.model.createData()
        self.q0 = pin.neutral(self.model)
        self.urdf = str(path)

    def __repr__(self) -> str:
        return f"_UrdfRobot(urdf='{self.urdf}', nq={self.model.nq}, nv={self.model.nv})"


def _locate_template(template: str, out_dir: Path) -> str | None:
    """``extends`` value reaching ``template`` from ``out_dir``, or None if it does not exist."""
    if template in TEMPLATE_PATHS:
        rel = TEMPLATE_PATHS[template]
        if (out_dir / rel).is_file():
            return rel
        file_name = Path(rel).name
        for directory in (
            out_dir / "templates",
            out_dir.parent / "templates",
            out_dir.parent.parent / "templates",
        ):
            candidate = directory / file_name
            if candidate.is_file():
                return Path(os.path.relpath(candidate.resolve(), out_dir)).as_posix()
        return None
    path = Path(template).expanduser()
    if not path.is_file():
        raise ConfigurationError(
            f"Template '{template}' is neither one of {sorted(TEMPLATE_PATHS)} nor an existing file"
        )
    try:
        return Path(os.path.relpath(path.resolve(), out_dir)).as_posix()
    except ValueError:  # different drive on Windows
        return str(path.resolve())


def _default_robot_name(input_path: Path) -> str:
    stem = input_path.stem
    for suffix in ("_config", "_configuration"):
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


class _Dumper(yaml.SafeDumper):
    """Safe dumper: block mappings, flow-style lists of scalars, no anchors/aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(not isinstance(v, (list, dict)) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_Dumper.add_representer(list, _represent_list)


def _dump_yaml(doc: Mapping[str, Any]) -> str:
    return yaml.dump(
        doc,
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=100,
    )


def _ordered_document(doc: Mapping[str, Any], name: str, extends: str | None) -> dict:
    """The unified document in file order (extends, meta, robot, tasks, custom)."""
    ordered: dict[str, Any] = {}
    if extends is not None:
        ordered["extends"] = extends
    ordered["meta"] = doc["meta"]
    ordered["robot"] = {"name": name, **doc.get("robot", {})}
    for key in ("tasks", "custom"):
        if key in doc:
            ordered[key] = doc[key]
    return ordered


def _write_checked(src: Path, dst: Path, ordered: Mapping[str, Any]) -> None:
    """Write ``ordered`` to ``dst`` atomically, only once the written file parses."""
    header = (
        f"# Unified configuration migrated from {src.name}\n"
        "# by python -m figaroh.utils.config_migration (review before use).\n"
    )
    text = header + _dump_yaml(ordered)

    def parses(tmp: str) -> None:
        try:
            UnifiedConfigParser(tmp).parse()
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"Migrated configuration for {src} does not parse: {exc}"
            ) from exc

    atomic_write(dst, lambda stream: stream.write(text), check=parses, suffix=".yaml")


def migrate_file(
    input_path: str | os.PathLike,
    output_path: str | os.PathLike,
    task: str = "auto",
    template: str = "base",
    urdf: str | os.PathLike | None = None,
    robot_name: str | None = None,
) -> dict[str, Any]:
    """Migrate a legacy file and write the unified result atomically.

    Args:
        input_path: Legacy YAML file.
        output_path: Unified YAML file to write (its directory is created).
        task: ``"auto"``, ``"calibration"`` or ``"identification"``.
        template: Template name (see :data:`TEMPLATE_PATHS`) or path of a
            template file. ``extends`` is written only if the template exists
            relative to the output file; otherwise the file is self-contained.
        urdf: Optional URDF enabling :func:`self_check`.
        robot_name: ``robot.name`` to write (default: the URDF model name, else
            the input file name without ``_config``).

    Returns:
        ``{"output", "extends", "robot_name", "self_check"}`` (``self_check``
        is None without a URDF).

    Raises:
        ConfigurationError: missing/invalid input, input already unified,
            output equal to input, or a result that does not parse.
        ValueError: unknown task or template name.
    """
    src = Path(input_path).expanduser().resolve()
    dst = Path(output_path).expanduser().resolve()
    if not src.is_file():
        raise ConfigurationError(f"Legacy configuration file not found: {src}")
    if src == dst:
        raise ConfigurationError(f"--output must differ from --input ({src})")
    legacy = _load_yaml_mapping(src)
    if is_unified_config(src):
        raise ConfigurationError(f"{src} already uses the unified configuration format")
    template_name = template if template in TEMPLATE_PATHS else "base"
    try:
        doc = convert_legacy_to_unified(legacy, template_name, task)
    except ValueError as exc:
        raise ConfigurationError(f"Cannot migrate {src}: {exc}") from exc

    robot = None
    if urdf is not None:
        raw_calib = legacy.get("calibration")
        calib: Mapping[str, Any] = raw_calib if isinstance(raw_calib, Mapping) else {}
        robot = _UrdfRobot(urdf, free_flyer=bool(clean_value(calib.get("free_flyer")) or False))
    name = (
        robot_name or (robot.model.name if robot is not None else None) or _default_robot_name(src)
    )

    make_folder(dst.parent)
    extends = _locate_template(template, dst.parent)
    if extends is None:
        logger.warning(
            "template '%s' not found relative to %s: writing a self-contained file without "
            "'extends'",
            template,
            dst,
        )
    _write_checked(src, dst, _ordered_document(doc, name, extends))
    logger.info("Wrote unified configuration %s (extends: %s)", dst, extends)

    report: dict[str, Any] = {
        "output": str(dst),
        "extends": extends,
        "robot_name": name,
        "self_check": None,
    }
    if robot is not None:
        report["self_check"] = self_check(robot, legacy, dst)
    return report


def _build_arg_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m figaroh.utils.config_migration",
        description="Convert a legacy flat figaroh configuration to the unified format.",
    )
    parser.add_argument("legacy", nargs="?", help="legacy YAML file (same as --input)")
    parser.add_argument("unified", nargs="?", help="unified YAML file to write (same as --output)")
    parser.add_argument("--input", "-i", help="legacy YAML file")
    parser.add_argument("--output", "-o", help="unified YAML file to write")
    parser.add_argument(
        "--task",
        choices=("auto",) + TASKS,
        default="auto",
        help="section(s) to migrate (default: every section present)",
    )
    parser.add_argument(
        "--template",
        default="base",
        help="base, manipulator, humanoid, or the path of a template YAML (default: base)",
    )
    parser.add_argument("--urdf", help="robot URDF; enables the round-trip self-check")
    parser.add_argument(
        "--robot-name", help="robot.name to write (default: URDF model name or file name)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status.

    0: written (and self-check passed, if requested); 1: written but the
    self-check found mismatches; 2: usage or input error (nothing written).
    """
    parser = _build_arg_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.input and args.legacy and args.input != args.legacy:
        parser.print_usage(sys.stderr)
        sys.stderr.write(
            "error: give the legacy file either positionally or with --input, not both\n"
        )
        return 2
    if args.output and args.unified and args.output != args.unified:
        parser.print_usage(sys.stderr)
        sys.stderr.write(
            "error: give the output file either positionally or with --output, not both\n"
        )
        return 2
    source = args.input or args.legacy
    target = args.output or args.unified
    if not source or not target:
        parser.print_usage(sys.stderr)
        sys.stderr.write("error: both the legacy input and the unified output file are required\n")
        return 2
    try:
        report = migrate_file(
            source,
            target,
            task=args.task,
            template=args.template,
            urdf=args.urdf,
            robot_name=args.robot_name,
        )
    except (ConfigurationError, ValueError, OSError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    sys.stdout.write(f"Wrote {report['output']}")
    sys.stdout.write(
        f" (extends: {report['extends']})\n" if report["extends"] else " (self-contained)\n"
    )
    check = report["self_check"]
    if check is None:
        return 0
    if check["ok"]:
        sys.stdout.write(f"Self-check passed ({len(check['checked'])} fields compared)\n")
        return 0
    sys.stderr.write("Self-check FAILED:\n")
    for key, diff in check["mismatches"].items():
        sys.stderr.write(f"  {key}: expected {diff['expected']!r}, got {diff['got']!r}\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
