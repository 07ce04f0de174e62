"""The records of a drift report: flags, per-quantity results, the report, its input error.

:func:`figaroh.fleet.drift.analyse_drift` and
:func:`figaroh.fleet.drift.drift_report` return a :class:`DriftReport`: one
:class:`ParameterDrift` per compared quantity, each with its
:class:`DriftFlag` s. The rule that makes them is described in
:mod:`figaroh.fleet.drift`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from figaroh.errors import FigarohError
from figaroh.fleet.index_schema import HistoryPoint
from figaroh.fleet.parameter_identity import STABLE

__all__ = [
    "AGAINST_FLEET",
    "AGAINST_HISTORY",
    "RULE_FDR",
    "RULE_K",
    "DriftFlag",
    "DriftInputError",
    "DriftReport",
    "ParameterDrift",
]

#: ``DriftFlag.against`` of a comparison with the robot's own previous runs.
AGAINST_HISTORY = "history"
#: ``DriftFlag.against`` of a comparison with the other robots of the same session.
AGAINST_FLEET = "fleet"
#: ``DriftReport.rule`` of the false-discovery-rate rule (the default).
RULE_FDR = "fdr"
#: ``DriftReport.rule`` of the ``|z| > k`` threshold rule.
RULE_K = "k"
#: Factor turning a median absolute deviation into a σ (Gaussian consistency):

_AGAINST = (AGAINST_HISTORY, AGAINST_FLEET)


class DriftInputError(FigarohError, ValueError):
    """Bad input of the drift analysis (NaN value, negative σ, bad k or q, unknown name)."""


@dataclass(frozen=True)
class DriftFlag:
    """One flagged comparison: a run of one robot whose parameter moved.

    Attributes:
        robot_id: Robot of the run.
        run_id: Run flagged (against the history under the default rule: the
            first run of the moved level).
        name: Parameter that moved.
        session_time: Session time of the run (ISO-8601).
        value: The run's value ``x`` (parameter unit); under the default rule
            against the history, the mean of the ``runs`` runs from this one on.
        reference: Mean of the robot's earlier runs (``against="history"``)
            or median of the other robots in the session (``"fleet"``)
            (parameter unit).
        scale: Standard deviation of ``value − reference`` the difference is
            judged against (parameter unit, > 0).
        z: ``(value − reference) / scale`` (dimensionless, signed).
        against: ``"history"`` or ``"fleet"``.
        session: Session label of the run.
        p: Two-sided p-value of ``z`` (default rule; None under the ``k`` rule).
        q_value: Benjamini–Hochberg q-value of the flag's (robot, quantity)
            cell (default rule; None under the ``k`` rule).
        runs: Runs averaged in ``value`` (1 but for history flags of the default rule).
        structure: Base-parameter structure of the quantity (``""``: stable).
    """

    robot_id: str
    run_id: str
    name: str
    session_time: str
    value: float
    reference: float
    scale: float
    z: float
    against: str
    session: str = ""
    p: float | None = None
    q_value: float | None = None
    runs: int = 1
    structure: str = STABLE

    @property
    def difference(self) -> float:
        """``value − reference`` (parameter unit)."""
        return self.value - self.reference


def _frozen_mapping(data: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True)
class ParameterDrift:
    """Drift analysis of one quantity over the fleet.

    Attributes:
        name: Parameter name.
        robots: Robot id → its points in time order (session time, run id).
        fleet_median: Session → median over robots of the session (parameter
            unit); sessions in time order.
        fleet_spread: Session → ``1.4826·MAD`` over robots of the session
            (parameter unit).
        flags: Flags of this quantity (robot, time, against order).
        session_times: Session → earliest session time of its runs (ISO-8601).
        structure: Base-parameter structure signature of the runs compared
            (``""`` for a stable quantity: per-joint terms, calibration parameters).
        q_values: Robot → Benjamini–Hochberg q-value of its cell (default rule;
            empty under the ``k`` rule; robots without a comparison are absent).
        sigma_scale: Factor ``√λ ≥ 1`` the default rule applied to the recorded
            σ in the history comparisons (1: the runs scatter as their σ say;
            1 under the ``k`` rule).
    """

    name: str
    robots: Mapping[str, tuple[HistoryPoint, ...]]
    fleet_median: Mapping[str, float]
    fleet_spread: Mapping[str, float]
    flags: tuple[DriftFlag, ...]
    session_times: Mapping[str, str] = field(default_factory=_frozen_mapping)
    structure: str = STABLE
    q_values: Mapping[str, float] = field(default_factory=_frozen_mapping)
    sigma_scale: float = 1.0

    @property
    def flagged_robots(self) -> tuple[str, ...]:
        """Robots with at least one flag on this quantity (sorted)."""
        return tuple(sorted({f.robot_id for f in self.flags}))


@dataclass(frozen=True)
class DriftReport:
    """Drift of every analysed quantity.

    Attributes:
        k: Threshold of the ``k`` rule (a comparison flags when ``|z| > k``);
            None under the default false-discovery-rate rule.
        parameters: One :class:`ParameterDrift` per quantity (sorted by name,
            then structure).
        flags: Every flag (robot, time, parameter, against order).
        flagged_robots: Robots with at least one flag (sorted).
        min_history: Earlier runs a history comparison needs.
        min_fleet: Other robots of the session a fleet comparison needs.
        q: False-discovery-rate level of the default rule (None under the ``k`` rule).
        cutoff: The default rule's level within a flagged cell, ``q·R/N`` for ``R``
            flagged of ``N`` cells (0 when nothing is flagged): a comparison of a
            flagged cell is a flag when its within-cell adjusted p-value is at most this.
        cells: (robot, quantity) cells with at least one comparison: the tests
            the false-discovery rate is controlled over.
        window: The history window read (``"all sessions"``, ``"last 30
            sessions"``, ``"since 2026-03-01T00:00:00+00:00"`` …; ``""`` when the
            points were given directly).
    """

    k: float | None
    parameters: tuple[ParameterDrift, ...]
    flags: tuple[DriftFlag, ...]
    flagged_robots: tuple[str, ...]
    min_history: int = 1
    min_fleet: int = 2
    q: float | None = None
    cutoff: float = 0.0
    cells: int = 0
    window: str = ""

    @property
    def rule(self) -> str:
        """:data:`RULE_K` when ``k`` is set, else :data:`RULE_FDR`."""
        return RULE_K if self.k is not None else RULE_FDR

    @property
    def robots(self) -> tuple[str, ...]:
        """Every robot with at least one point (sorted)."""
        return tuple(sorted({r for p in self.parameters for r in p.robots}))

    def parameter(self, name: str, structure: str | None = None) -> ParameterDrift:
        """The analysis of parameter ``name`` (of base-parameter ``structure`` when given).

        Raises:
            KeyError: ``name`` was not analysed, or it was analysed under
                several structures and ``structure`` is not given.
        """
        found = [
            p
            for p in self.parameters
            if p.name == name and (structure is None or p.structure == structure)
        ]
        if len(found) == 1:
            return found[0]
        if not found:
            raise KeyError(f"parameter {name!r} is not in this drift report")
        raise KeyError(
            f"parameter {name!r} is analysed under {len(found)} base-parameter structures "
            f"({', '.join(p.structure for p in found)}); pass structure="
        )
