"""The acceptance limits of ``figaroh identify`` / ``figaroh calibrate``.

``--threshold NAME=VALUE[:min|max]`` and the dedicated limit options become
the ``thresholds`` mapping ``verify()`` judges (``{name: {"threshold",
"comparison"}}``). Everything a user can get wrong is refused here with exit
code ``2`` before the long steps: a malformed or non-finite value, a negative
maximum of an error metric (it can never pass), a name that is not a verdict
metric of the command (with the closest name and the valid ones), a per-joint
limit on a joint that is not fitted, and a prediction policy that covers only
part of the outputs (then the verdict could only be ``not_evaluated``).

Importing this module is cheap (standard library and :mod:`figaroh.cli.common`).
"""

from __future__ import annotations

import difflib
import math
import re
from typing import Any, Dict, Mapping, Sequence

from figaroh.cli.common import CLIError

__all__ = [
    "CALIBRATE_METRICS",
    "IDENTIFY_METRICS",
    "POLICY_HINT",
    "build_thresholds",
    "check_calibration_limits",
    "check_identification_limits",
    "check_metric_names",
    "parse_threshold",
]


def parse_threshold(text: str) -> tuple[str, Dict[str, Any]]:
    """Parse ``NAME=VALUE[:min|max]`` (default ``max``) into a threshold entry.

    Example: ``validation_rmse:elbow_joint=1.5`` or ``validation_correlation=0.9:min``.

    Raises:
        CLIError: Malformed text or a non-finite value (exit 2).
    """
    name, sep, rest = text.rpartition("=")
    if not sep or not name:
        raise CLIError(f"--threshold {text!r}: expected NAME=VALUE[:min|max]")
    value, _, comparison = rest.partition(":")
    comparison = comparison or "max"
    if comparison not in ("min", "max"):
        raise CLIError(f"--threshold {text!r}: the comparison must be 'min' or 'max'")
    try:
        threshold = float(value)
    except ValueError:
        raise CLIError(f"--threshold {text!r}: {value!r} is not a number") from None
    if not math.isfinite(threshold):
        raise CLIError(f"--threshold {text!r}: the limit must be a finite number")
    if comparison == "max" and threshold < 0 and _ERROR_METRIC.search(name):
        raise CLIError(
            f"--threshold {text!r}: {name} is never negative, so a maximum of {threshold:g} "
            "can never pass; give a limit >= 0"
        )
    return name, {"threshold": threshold, "comparison": comparison}


#: Verdict metrics of ``figaroh identify`` (``<joint>``: a fitted joint of the URDF).
IDENTIFY_METRICS: tuple[str, ...] = (
    "condition_number",
    "rmse",
    "validation_correlation",
    "validation_unpredictable_joints",
    "validation_improvement_pct",
    "validation_rmse:<joint>",
    "validation_abs_bias:<joint>",
    "validation_peak_error:<joint>",
    "training_rmse:<joint>",
    "training_abs_bias:<joint>",
    "training_peak_error:<joint>",
)
#: Verdict metrics of ``figaroh calibrate`` (``training_*``: without held-out data).
CALIBRATE_METRICS: tuple[str, ...] = (
    "condition_number",
    "rmse",
    "outlier_percentage",
    "position_rmse_mm",
    "orientation_rmse_deg",
    "training_position_rmse_mm",
    "training_orientation_rmse_deg",
)
_METRICS = {"identify": IDENTIFY_METRICS, "calibrate": CALIBRATE_METRICS}
#: Metrics that are errors (never negative): a negative maximum can never pass.
_ERROR_METRIC = re.compile(r"(rmse|abs_bias|peak_error|condition_number|outlier_percentage)")


def _metric_pattern(name: str) -> str:
    """``validation_rmse:elbow_joint`` → ``validation_rmse:<joint>``."""
    head, sep, _ = name.partition(":")
    return f"{head}:<joint>" if sep else name


def check_metric_names(names: Sequence[str], command: str) -> None:
    """Refuse a ``--threshold`` name that is not a verdict metric of ``command``.

    Per-joint names (``validation_rmse:<joint>``) are checked for their joint
    by ``verify()`` once the robot is loaded.

    Raises:
        CLIError: An unknown name, with the valid names and the closest one (exit 2).
    """
    valid = _METRICS[command]
    for name in names:
        if _metric_pattern(name) in valid:
            continue
        close = difflib.get_close_matches(_metric_pattern(name), valid, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise CLIError(
            f"--threshold {name!r}: not a verdict metric of figaroh {command}; {hint}"
            f"valid names: {', '.join(valid)}"
        )


def build_thresholds(
    texts: Sequence[str] | None,
    per_metric: Mapping[str, float] | None = None,
    command: str | None = None,
) -> Dict[str, Dict[str, Any]]:
    """Thresholds from ``--threshold`` texts plus ``{metric: maximum}`` limits.

    Args:
        texts: ``NAME=VALUE[:min|max]`` texts of ``--threshold``.
        per_metric: Extra ``{metric: maximum}`` limits (the dedicated options).
        command: ``"identify"`` or ``"calibrate"``: check the ``--threshold``
            names against its metrics (None: no check).

    Raises:
        CLIError: A malformed text or an unknown metric name (exit 2).
    """
    out: Dict[str, Dict[str, Any]] = {}
    for name, value in (per_metric or {}).items():
        out[name] = {"threshold": float(value), "comparison": "max"}
    parsed = [parse_threshold(text) for text in texts or ()]
    if command is not None:
        check_metric_names([name for name, _ in parsed], command)
    for name, entry in parsed:
        out[name] = entry
    return out


#: What to add when the prediction verdict lacks a limit, per command.
POLICY_HINT = {
    "identify": "give --rmse-limit TAU or --threshold validation_rmse:<joint>=TAU for every "
    "fitted joint (or tasks.identification.verification.thresholds in the configuration), "
    "or use --scope execution",
    "calibrate": "give --position-limit-mm and/or --orientation-limit-deg for every measured "
    "output (or tasks.calibration.verification.thresholds in the configuration), or use "
    "--scope execution",
}


def check_calibration_limits(
    thresholds: Dict[str, Any], scope: str, calib_config: Mapping[str, Any]
) -> None:
    """A prediction verdict needs a limit on every measured output: refuse a partial one.

    With markers measuring position and orientation (``measurability``), a
    position limit alone leaves the prediction policy incomplete, so the
    verdict could only be ``not_evaluated``; say which limit is missing.

    Raises:
        CLIError: Some measured outputs have a limit and others none (exit 2).
    """
    if scope != "prediction":
        return
    measured = [bool(m) for m in calib_config.get("measurability", [True] * 3 + [False] * 3)]
    needed = []
    if any(measured[:3]):
        needed.append(("position_rmse_mm", "--position-limit-mm MM", "position"))
    if any(measured[3:]):
        needed.append(("orientation_rmse_deg", "--orientation-limit-deg DEG", "orientation"))
    given = [n for n in needed if n[0] in thresholds]
    missing = [n for n in needed if n[0] not in thresholds]
    if given and missing:
        raise CLIError(
            f"the markers measure {' and '.join(n[2] for n in needed)} (measurability "
            f"{measured}): a prediction verdict needs a limit on each; add "
            + " and ".join(f"{n[1]} (or --threshold {n[0]}=VALUE)" for n in missing)
            + ", or use --scope execution"
        )


def check_identification_limits(thresholds: Dict[str, Any], scope: str, ident: Any) -> None:
    """Per-joint limits must name fitted joints, and cover all of them in the prediction scope.

    Raises:
        CLIError: A limit on a joint that is not fitted, or (prediction scope)
            some fitted joints have a ``validation_rmse`` limit and others none
            (exit 2).
    """
    joints = list(ident.fit_joints())
    for name in thresholds:
        head, sep, joint = name.partition(":")
        if sep and joint not in joints:
            raise CLIError(
                f"--threshold {name!r} names joint {joint!r}, which is not a fitted joint of "
                f"this identification; use one of {joints}"
            )
    if scope != "prediction":
        return
    given = [j for j in joints if f"validation_rmse:{j}" in thresholds]
    missing = [j for j in joints if f"validation_rmse:{j}" not in thresholds]
    if given and missing:
        raise CLIError(
            f"a prediction verdict needs a validation_rmse limit for every fitted joint; "
            f"missing {missing}: add --threshold validation_rmse:<joint>=TAU for each, use "
            "--rmse-limit TAU for all, or use --scope execution"
        )
