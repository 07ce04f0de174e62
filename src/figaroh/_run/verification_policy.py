"""The acceptance policy of a run: the thresholds and the scope its verdict is judged with.

A task configuration may carry the policy once, so that every entry point
judges a run the same way::

    tasks:
      identification:
        verification:
          scope: prediction                 # execution | prediction (default prediction)
          thresholds:
            validation_rmse:elbow_joint: 1.5            # a number: a maximum
            validation_correlation: {threshold: 0.9, comparison: min}
          confidence_level: 0.95            # of the parameters' confidence intervals

``confidence_level`` (a fraction in (0, 1), 0.95 when absent) is the level of
the confidence intervals the reports give for every parameter
(:mod:`figaroh._run.confidence`); it changes no estimate and no verdict.

:func:`parse_verification_section` validates the section when the
configuration is read (a malformed entry raises
:class:`~figaroh.utils.error_handling.ConfigurationError` naming the key and
the fix) and normalises every threshold to ``{"threshold": float,
"comparison": "max"|"min", "required": bool}``; the converted task
configuration (``identif_config`` / ``calib_config``) keeps it under the key
``"verification"``.

:func:`resolve_policy` is the one rule ``verify()``, the exports and the
command line apply: an argument left at its default (``thresholds=None``,
``scope="prediction"``) takes the configuration's value; an explicit
argument wins.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Dict, Tuple

from figaroh._run.confidence import CONFIG_KEY as _LEVEL_KEY
from figaroh._run.confidence import check_confidence_level
from figaroh.utils.error_handling import ConfigurationError

__all__ = [
    "CONFIG_KEY",
    "DEFAULT_SCOPE",
    "SCOPES",
    "config_policy",
    "is_default_request",
    "parse_verification_section",
    "resolve_policy",
]

#: Key of the policy in a task configuration and in the converted config dict.
CONFIG_KEY = "verification"
#: Scope of ``verify()`` when neither the caller nor the configuration names one.
DEFAULT_SCOPE = "prediction"
#: Scopes a configuration may name.
SCOPES = ("execution", "prediction")
_SECTION_KEYS = ("scope", "thresholds", _LEVEL_KEY)
_THRESHOLD_KEYS = ("threshold", "comparison", "required")

Thresholds = Dict[str, Dict[str, Any]]


def _threshold_entry(
    name: str, spec: Any, where: str, error: type[Exception] = ConfigurationError
) -> Dict[str, Any]:
    """One threshold of the section as ``{"threshold", "comparison", "required"}``."""
    key = f"{where}.thresholds.{name}"
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(_THRESHOLD_KEYS))
        if unknown:
            raise error(
                f"{key}: unknown keys {unknown}; a threshold is a number (a maximum) or "
                "{threshold: VALUE, comparison: max|min, required: true|false}"
            )
        if "threshold" not in spec:
            raise error(
                f"{key}: no 'threshold' value; write {name}: VALUE (a maximum) or "
                f"{name}: {{threshold: VALUE, comparison: min}}"
            )
        value, comparison = spec["threshold"], spec.get("comparison", "max")
        required = spec.get("required", True)
    else:
        value, comparison, required = spec, "max", True
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(
            f"{key}: the limit must be a number, got {value!r}; write {name}: 1.5 "
            "(a YAML number, without quotes or unit)"
        )
    if not math.isfinite(float(value)):
        raise error(f"{key}: the limit must be finite, got {value!r}")
    if comparison not in ("max", "min"):
        raise error(
            f"{key}: comparison must be 'max' (pass when the metric is at most the limit) "
            f"or 'min' (at least), got {comparison!r}"
        )
    if not isinstance(required, bool):
        raise error(f"{key}: required must be true or false, got {required!r}")
    return {"threshold": float(value), "comparison": comparison, "required": required}


def parse_verification_section(
    section: Any, where: str, error: type[Exception] = ConfigurationError
) -> Dict[str, Any]:
    """Validate a ``verification`` section and normalise it.

    Args:
        section: The section's value (a mapping with ``scope`` and/or ``thresholds``).
        where: Dotted key of the section, for messages
            (e.g. ``"tasks.identification.verification"``).
        error: Exception class raised (the task's configuration error).

    Returns:
        ``{"scope": "execution"|"prediction", "thresholds": {name: {"threshold":
        float, "comparison": "max"|"min", "required": bool}}}`` (scope
        ``"prediction"`` when absent, thresholds ``{}`` when absent), plus
        ``"confidence_level": float`` when the section gives one.

    Raises:
        ConfigurationError: (or ``error``) Not a mapping, an unknown key, an unknown scope,
            a malformed threshold, or a confidence level outside (0, 1); the
            message names the key and the fix.
    """
    if section is None:
        section = {}
    if not isinstance(section, Mapping):
        raise error(
            f"{where}: expected a mapping {{scope: prediction, thresholds: {{METRIC: LIMIT}}}}, "
            f"got {section!r}"
        )
    unknown = sorted(set(section) - set(_SECTION_KEYS))
    if unknown:
        raise error(
            f"{where}: unknown keys {unknown}; the section holds 'scope', 'thresholds' and "
            "'confidence_level'"
        )
    scope = section.get("scope", DEFAULT_SCOPE)
    if scope is None:
        scope = DEFAULT_SCOPE
    if scope not in SCOPES:
        raise error(
            f"{where}.scope: {scope!r} is not a scope; use 'prediction' (held-out data and "
            "limits decide) or 'execution' (finite numerical outputs only)"
        )
    thresholds = section.get("thresholds") or {}
    if not isinstance(thresholds, Mapping):
        raise error(f"{where}.thresholds: expected a mapping METRIC: LIMIT, got {thresholds!r}")
    out: Dict[str, Any] = {
        "scope": scope,
        "thresholds": {
            str(name): _threshold_entry(str(name), spec, where, error)
            for name, spec in thresholds.items()
        },
    }
    if section.get(_LEVEL_KEY) is not None:
        out[_LEVEL_KEY] = check_confidence_level(
            section[_LEVEL_KEY], f"{where}.{_LEVEL_KEY}", error
        )
    return out


def config_policy(config: Mapping[str, Any] | None) -> Tuple[Thresholds | None, str | None]:
    """``(thresholds, scope)`` of a converted task configuration (None, None without a section).

    ``thresholds`` is None when the section gives none (the task's empty
    default policy then applies).
    """
    section = (config or {}).get(CONFIG_KEY) if isinstance(config, Mapping) else None
    if not isinstance(section, Mapping):
        return None, None
    thresholds = section.get("thresholds") or None
    copied = {k: dict(v) for k, v in thresholds.items()} if thresholds else None
    return copied, section.get("scope")


def is_default_request(thresholds: Any, scope: str) -> bool:
    """True when ``thresholds``/``scope`` are the defaults of ``verify()`` (nothing asked)."""
    return thresholds is None and scope == DEFAULT_SCOPE


def resolve_policy(
    thresholds: Mapping[str, Mapping[str, Any]] | None,
    scope: str,
    config: Mapping[str, Any] | None,
) -> Tuple[Mapping[str, Mapping[str, Any]] | None, str]:
    """The thresholds and scope a verdict is judged with.

    An argument left at its default takes the configuration's value:
    ``thresholds=None`` → ``verification.thresholds`` (None when absent: the
    task's empty default policy), ``scope="prediction"`` →
    ``verification.scope`` (``"prediction"`` when absent). An explicit
    argument wins.

    Args:
        thresholds: The caller's thresholds, or None.
        scope: The caller's scope.
        config: The converted task configuration (``identif_config`` / ``calib_config``).

    Returns:
        ``(thresholds, scope)``.
    """
    config_thresholds, config_scope = config_policy(config)
    if thresholds is None:
        thresholds = config_thresholds
    if scope == DEFAULT_SCOPE and config_scope is not None:
        scope = config_scope
    return thresholds, scope
