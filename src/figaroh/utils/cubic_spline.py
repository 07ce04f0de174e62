"""Waypoint splines of the exciting-trajectory design, and random waypoint pools.

The trajectory through waypoints ``y_0 … y_m`` at times ``t_0 < … < t_m`` is
built as figaroh 1.0.2 builds it with ``ndcurves``: one ``exact_cubic``
through the two waypoints of every interval ``[t_k, t_{k+1}]``, the pieces
joined in a ``piecewise`` curve. On interval ``k`` (``T = t_{k+1} − t_k``,
``s = (t − t_k)/T ∈ [0, 1]``) every active joint follows

* without waypoint constraints (velocity *or* acceleration waypoints not
  given): the rest-to-rest cubic ``exact_cubic`` builds through two points,

  .. math:: q(s) = y_k + (y_{k+1} − y_k)(3s² − 2s³),

  zero velocity at both waypoints, peak speed ``1.5·|Δy|/T`` at ``s = 1/2``,
  acceleration ``±6·Δy/T²`` at the waypoints (it jumps there). Waypoint
  velocities given without accelerations are ignored, as in 1.0.2;
* with ``curve_constraints`` (velocity **and** acceleration waypoints given,
  as the trajectory optimiser passes them): the quintic ``exact_cubic``
  builds to meet position, velocity ``ẏ`` and acceleration ``ÿ`` at both
  ends,

  .. math::

      q(s) = H_0 y_k + T H_1 ẏ_k + T² H_2 ÿ_k + H_5 y_{k+1} + T H_4 ẏ_{k+1} + T² H_3 ÿ_{k+1},

  ``H_0 = 1 − 10s³ + 15s⁴ − 6s⁵``, ``H_1 = s − 6s³ + 8s⁴ − 3s⁵``,
  ``H_2 = (s² − 3s³ + 3s⁴ − s⁵)/2``, ``H_3 = (s³ − 2s⁴ + s⁵)/2``,
  ``H_4 = −4s³ + 7s⁴ − 3s⁵``, ``H_5 = 10s³ − 15s⁴ + 6s⁵``. With zero waypoint
  velocities and accelerations (the optimiser's) each piece is a
  rest-to-rest move with continuous acceleration whose peak speed is
  ``(15/8)·|Δy|/T`` at mid-interval.

Velocities and accelerations are the time derivatives of these polynomials
(``d/dt = (1/T)·d/ds``). The tests check both forms against ``ndcurves``
itself (``exact_cubic`` with and without ``curve_constraints`` in a
``piecewise``) to 1e-10 on random waypoints.

The trajectory is *linear* in the waypoint values: on a fixed time grid
``q = P_y y + P_v ẏ + P_a ÿ`` with basis matrices from :func:`spline_basis`,
which the trajectory optimiser uses to evaluate many perturbed trajectories
at once (moving waypoint ``k`` changes the two pieces that touch it only).

Sampling (:func:`sample_times`) is 1.0.2's: ``dt = 1/freq``,
``N = int((t_m − t_0)/dt) + 1`` samples at ``t_0 + i·dt``. A last sample
beyond ``t_m`` by round-off, where ``ndcurves`` raises "out of range", is
evaluated at ``t_m``.

Units: time [s], frequency [Hz], positions [rad] (prismatic [m]), velocities
[rad/s], accelerations [rad/s²], efforts [N·m] (prismatic [N]).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence, Tuple

import numpy as np
import pinocchio as pin
from numpy.polynomial import polynomial as npoly

from figaroh.errors import FigarohError

logger = logging.getLogger(__name__)

__all__ = [
    "k",
    "REST_PEAK_SPEED",
    "SplineShapeError",
    "SplineBasis",
    "spline_basis",
    "is_constrained",
    "peak_velocities",
    "sample_times",
    "CubicSpline",
    "WaypointsGeneration",
    "calc_torque",
    "init_robot",
]

#: Acceleration pool scale: accelerations are drawn within ``k ×`` the velocity limits.
k = 1.5

#: Peak speed of a rest-to-rest piece in units of ``|Δy|/T``: 1.5 for the
#: unconstrained cubic, 15/8 for the constrained quintic (``True`` key).
REST_PEAK_SPEED = {False: 1.5, True: 15.0 / 8.0}

# Shape functions as polynomial coefficients in s (columns: powers s⁰ … s⁵), and
# the power of T that scales them: (coefficients, T power) per waypoint input.
_CUBIC_SHAPES = {
    "y0": (np.array([1.0, 0.0, -3.0, 2.0, 0.0, 0.0]), 0),
    "y1": (np.array([0.0, 0.0, 3.0, -2.0, 0.0, 0.0]), 0),
}
_QUINTIC_SHAPES = {
    "y0": (np.array([1.0, 0.0, 0.0, -10.0, 15.0, -6.0]), 0),
    "v0": (np.array([0.0, 1.0, 0.0, -6.0, 8.0, -3.0]), 1),
    "a0": (np.array([0.0, 0.0, 0.5, -1.5, 1.5, -0.5]), 2),
    "y1": (np.array([0.0, 0.0, 0.0, 10.0, -15.0, 6.0]), 0),
    "v1": (np.array([0.0, 0.0, 0.0, -4.0, 7.0, -3.0]), 1),
    "a1": (np.array([0.0, 0.0, 0.0, 0.5, -1.0, 0.5]), 2),
}
_POWERS = np.arange(6)


class SplineShapeError(FigarohError, ValueError, AssertionError):
    """Waypoint arrays or time points have the wrong shape/values.

    Subclasses ``AssertionError`` (upstream asserted the shapes) and
    ``ValueError``.
    """


def is_constrained(vel_waypoints: Any, acc_waypoints: Any) -> bool:
    """Whether the pieces get ``curve_constraints``: both waypoint arrays given (1.0.2's rule)."""
    return vel_waypoints is not None and acc_waypoints is not None


def _monomials(s: np.ndarray, order: int) -> np.ndarray:
    """``d^order/ds^order`` of ``[1, s, …, s⁵]`` at ``s`` (N, 6)."""
    s = np.asarray(s, dtype=float)[:, None]
    if order == 0:
        return s**_POWERS
    factor = np.ones(6)
    for i in range(order):
        factor = factor * np.clip(_POWERS - i, 0, None)
    return factor * s ** np.clip(_POWERS - order, 0, None)


@dataclass(frozen=True)
class SplineBasis:
    """Basis matrices of the waypoint spline on a time grid (each (N, n_wps)).

    ``q = pos_y @ y + pos_v @ ẏ + pos_a @ ÿ`` (and likewise ``vel_*`` for dq,
    ``acc_*`` for ddq) where ``y``/``ẏ``/``ÿ`` are one joint's waypoint
    positions/velocities/accelerations; the ``*_v`` and ``*_a`` matrices are
    None for the unconstrained spline (waypoint velocities and accelerations
    do not enter it).

    Attributes:
        t: Sample times (N,) [s].
        interval: Index ``k`` of the piece used at each sample (N,) (sample
            times in ``[t_k, t_{k+1})``, the last one in the last piece — the
            piece ``ndcurves.piecewise`` evaluates).
        constrained: Whether the pieces are the constrained quintics.
        pos_y, vel_y, acc_y: Position-waypoint basis [1], [1/s], [1/s²].
        pos_v, vel_v, acc_v: Velocity-waypoint basis [s], [1], [1/s] (or None).
        pos_a, vel_a, acc_a: Acceleration-waypoint basis [s²], [s], [1] (or None).
    """

    t: np.ndarray
    interval: np.ndarray
    constrained: bool
    pos_y: np.ndarray
    vel_y: np.ndarray
    acc_y: np.ndarray
    pos_v: np.ndarray | None = None
    vel_v: np.ndarray | None = None
    acc_v: np.ndarray | None = None
    pos_a: np.ndarray | None = None
    vel_a: np.ndarray | None = None
    acc_a: np.ndarray | None = None

    def evaluate(
        self,
        waypoints: np.ndarray,
        vel_waypoints: np.ndarray | None = None,
        acc_waypoints: np.ndarray | None = None,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, dq, ddq)`` of shape (N, n_joints) for waypoints (n_joints, n_wps).

        Velocity/acceleration waypoints are used by the constrained basis only
        (None: zero there).
        """
        y = np.asarray(waypoints, dtype=float).T
        q, dq, ddq = self.pos_y @ y, self.vel_y @ y, self.acc_y @ y
        if not self.constrained:
            return q, dq, ddq
        for arr, (P, V, A) in (
            (vel_waypoints, (self.pos_v, self.vel_v, self.acc_v)),
            (acc_waypoints, (self.pos_a, self.vel_a, self.acc_a)),
        ):
            if arr is None:
                continue
            x = np.asarray(arr, dtype=float).T
            if np.any(x):
                q += P @ x
                dq += V @ x
                ddq += A @ x
        return q, dq, ddq


def _check_time_points(time_points: Any, n_wps: int | None = None) -> np.ndarray:
    tps = np.asarray(time_points, dtype=float).ravel()
    if n_wps is not None and tps.size != n_wps:
        raise SplineShapeError(
            f"time_points has {tps.size} entries but there are {n_wps} waypoints [s]"
        )
    if tps.size < 2:
        raise SplineShapeError("at least two time points (waypoints) are needed")
    if not np.all(np.isfinite(tps)) or np.any(np.diff(tps) <= 0):
        raise SplineShapeError(f"time_points must be finite and strictly increasing [s], got {tps}")
    return tps


def sample_times(freq: float, time_points: Any) -> np.ndarray:
    """Sample instants as figaroh 1.0.2 takes them: ``t_min + i·dt``, ``i = 0 … int(T/dt)``.

    ``dt = 1/freq`` and ``T = t_max − t_min``; the count ``int(T/dt) + 1``
    truncates, so when ``T/dt`` falls just below an integer by round-off the
    last sample is one ``dt`` before ``t_max`` (as in 1.0.2).

    Args:
        freq: Sampling frequency [Hz].
        time_points: Waypoint times [s].

    Returns:
        (N,) sample times [s].
    """
    if not np.isfinite(freq) or freq <= 0:
        raise ValueError(f"freq must be a positive sampling frequency [Hz], got {freq!r}")
    tps = _check_time_points(time_points)
    dt = 1.0 / float(freq)
    n = int((tps[-1] - tps[0]) / dt) + 1
    return tps[0] + np.arange(n) * dt


def spline_basis(time_points: Any, t: Any, constrained: bool = False) -> SplineBasis:
    """Basis matrices of the waypoint spline through ``time_points`` at times ``t``.

    Args:
        time_points: Waypoint times (n_wps,) [s], strictly increasing.
        t: Evaluation times (N,) [s] within ``[t_0, t_end]`` (clamped to it).
        constrained: The quintic pieces (velocity and acceleration waypoints
            given) instead of the rest-to-rest cubics (see the module doc).

    Returns:
        The :class:`SplineBasis`.
    """
    tps = _check_time_points(time_points)
    t = np.asarray(t, dtype=float).ravel()
    n_wps = tps.size
    idx = np.clip(np.searchsorted(tps, t, side="right") - 1, 0, n_wps - 2)
    T = tps[idx + 1] - tps[idx]
    s = np.clip((t - tps[idx]) / T, 0.0, 1.0)
    shapes = _QUINTIC_SHAPES if constrained else _CUBIC_SHAPES
    rows = np.arange(t.size)
    mono = [_monomials(s, order) for order in range(3)]
    mats: dict = {}
    for name, (coef, power) in shapes.items():
        col = idx if name.endswith("0") else idx + 1
        for order, label in enumerate(("pos", "vel", "acc")):
            key = f"{label}_{name[0]}"
            if key not in mats:
                mats[key] = np.zeros((t.size, n_wps))
            mats[key][rows, col] += (mono[order] @ coef) * T ** (power - order)
    return SplineBasis(t, idx, bool(constrained), **mats)


def peak_velocities(
    time_points: Any,
    waypoints: np.ndarray,
    vel_waypoints: np.ndarray | None = None,
    acc_waypoints: np.ndarray | None = None,
) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Extreme velocity of every joint over every interval, in continuous time.

    The velocity of a piece is a polynomial in ``s`` (quadratic for the
    cubic, quartic for the quintic); its extremum over ``[0, 1]`` is at an
    end (a waypoint velocity) or at an interior zero of the acceleration.
    Rest-to-rest pieces (every piece of the unconstrained spline, and the
    quintics with zero waypoint velocities and accelerations) peak at
    ``s = 1/2`` with ``v = c·(y_{k+1} − y_k)/T`` (``c`` = 1.5 or 15/8,
    :data:`REST_PEAK_SPEED`). Bounding these values bounds the velocity at
    every instant.

    Args:
        time_points: Waypoint times (n_wps,) [s].
        waypoints: Positions (n_joints, n_wps) [rad].
        vel_waypoints: Waypoint velocities (n_joints, n_wps) [rad/s].
        acc_waypoints: Waypoint accelerations (n_joints, n_wps) [rad/s²]; the
            quintic pieces are used when both are given (see the module doc).

    Returns:
        ``(v_peak, dv_dy0, dv_dy1)``, each (n_wps − 1, n_joints): the velocity
        of largest magnitude [rad/s] and its derivatives with respect to the
        interval's first and last waypoint positions [1/s] (exact: the
        acceleration vanishes at an interior extremum, and the position shape
        functions have zero slope at the ends).
    """
    tps = _check_time_points(time_points)
    y = np.asarray(waypoints, dtype=float)
    constrained = is_constrained(vel_waypoints, acc_waypoints)
    T = np.diff(tps)[:, None]
    dy = (y[:, 1:] - y[:, :-1]).T
    c = REST_PEAK_SPEED[constrained]
    v_peak = c * dy / T
    dy1 = np.broadcast_to(c / T, v_peak.shape).copy()
    dy0 = -dy1
    if not constrained:
        return v_peak, dy0, dy1
    vel = np.asarray(vel_waypoints, dtype=float)
    acc = np.asarray(acc_waypoints, dtype=float)
    inputs = {
        "v0": vel[:, :-1].T,
        "v1": vel[:, 1:].T,
        "a0": acc[:, :-1].T,
        "a1": acc[:, 1:].T,
    }
    moving = np.zeros(v_peak.shape, dtype=bool)
    for arr in inputs.values():
        moving |= arr != 0
    inputs.update(y0=y[:, :-1].T, y1=y[:, 1:].T)
    d_coef = {name: npoly.polyder(coef) for name, (coef, _) in _QUINTIC_SHAPES.items()}
    for kk, j in zip(*np.nonzero(moving), strict=True):
        Tk = T[kk, 0]
        # velocity polynomial in s (coefficients of s⁰ … s⁴) [rad/s]
        poly = sum(
            inputs[name][kk, j] * Tk ** (_QUINTIC_SHAPES[name][1] - 1) * d_coef[name]
            for name in _QUINTIC_SHAPES
        )
        roots = npoly.polyroots(npoly.polyder(poly))
        real = roots.real[(np.abs(roots.imag) <= 1e-12) & (roots.real > 0) & (roots.real < 1)]
        s_cand = np.concatenate([[0.0, 1.0], real])
        v_cand = npoly.polyval(s_cand, poly)
        best = int(np.argmax(np.abs(v_cand)))
        s_star = s_cand[best]
        v_peak[kk, j] = v_cand[best]
        dy0[kk, j] = npoly.polyval(s_star, d_coef["y0"]) / Tk
        dy1[kk, j] = npoly.polyval(s_star, d_coef["y1"]) / Tk
    return v_peak, dy0, dy1


def _finite_limits(values: np.ndarray, what: str, names: Sequence[str], unit: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    bad = [n for n, v in zip(names, values, strict=True) if not np.isfinite(v) or abs(v) >= 1e300]
    if bad:
        raise ValueError(
            f"joint(s) {bad} have no finite {what} limit [{unit}] in the model; "
            "set <limit .../> in the URDF or remove them from active_joints"
        )
    return values


class CubicSpline:
    """Waypoint-spline trajectories of the active joints within softened limits.

    Args:
        robot: Robot with a Pinocchio ``model`` (and ``q0``).
        num_waypoints: Number of waypoints (≥ 2).
        active_joints: Names of the (1-DoF) joints that move.
        soft_lim: Fraction of each range removed from the limits (scalar in
            [0, 0.5)). The pairs are shrunk sequentially, as upstream:
            ``upper ← upper − s·|upper − lower|`` then
            ``lower ← lower + s·|upper_new − lower|``.

    Attributes:
        act_Jid, act_Jname, act_J, act_idxq, act_idxv: Active joint ids, names,
            joint models and their q/v indices.
        dim_q, dim_v: Waypoint array shape ``(n_active, num_waypoints)``.
        upper_q, lower_q: Position limits [rad] / [m].
        upper_dq, lower_dq: Velocity limits [rad/s] (``lower = −upper`` before softening).
        upper_effort, lower_effort: Effort limits [N·m] / [N].

    Raises:
        ValueError: Unknown or multi-DoF joint, bad ``soft_lim``, or a
            non-finite limit.
    """

    def __init__(
        self, robot, num_waypoints: int, active_joints: Sequence[str], soft_lim: float = 0
    ):
        model = getattr(robot, "model", None)
        if model is None or not callable(getattr(model, "getJointId", None)):
            raise TypeError("robot must expose a Pinocchio model as robot.model")
        self.robot = robot
        self.model = model
        if int(num_waypoints) != num_waypoints or num_waypoints < 2:
            raise ValueError(f"num_waypoints must be an integer ≥ 2, got {num_waypoints!r}")
        self.num_waypoints = int(num_waypoints)
        if isinstance(active_joints, str) or not len(active_joints):
            raise ValueError("active_joints must be a non-empty list of joint names")
        names = list(model.names)
        unknown = [j for j in active_joints if j not in names]
        if unknown:
            raise ValueError(f"unknown active joint(s) {unknown}; the model has {names[1:]}")
        self.act_Jname = [str(j) for j in active_joints]
        self.act_Jid = [int(model.getJointId(j)) for j in self.act_Jname]
        self.act_J = [model.joints[j] for j in self.act_Jid]
        multi = [
            n for n, j in zip(self.act_Jname, self.act_J, strict=True) if j.nq != 1 or j.nv != 1
        ]
        if multi:
            raise ValueError(
                f"active joints must have one position and one velocity DoF; {multi} do not"
            )
        self.act_idxq = [int(j.idx_q) for j in self.act_J]
        self.act_idxv = [int(j.idx_v) for j in self.act_J]
        n = len(self.act_idxq)
        self.dim_q = (n, self.num_waypoints)
        self.dim_v = (n, self.num_waypoints)

        if np.ndim(soft_lim) != 0:
            raise ValueError(f"soft_lim must be a scalar fraction in [0, 0.5), got {soft_lim!r}")
        soft_lim = float(soft_lim)
        if not 0.0 <= soft_lim < 0.5:
            raise ValueError(f"soft_lim must be in [0, 0.5), got {soft_lim}")
        self.soft_lim = soft_lim

        jn = self.act_Jname
        self.upper_q = _finite_limits(
            model.upperPositionLimit[self.act_idxq], "position", jn, "rad"
        )
        self.lower_q = _finite_limits(
            model.lowerPositionLimit[self.act_idxq], "position", jn, "rad"
        )
        self.upper_dq = _finite_limits(model.velocityLimit[self.act_idxv], "velocity", jn, "rad/s")
        self.lower_dq = -self.upper_dq
        self.upper_effort = _finite_limits(model.effortLimit[self.act_idxv], "effort", jn, "N·m")
        self.lower_effort = -self.upper_effort
        if soft_lim > 0:
            for lo, hi in (("lower_q", "upper_q"), ("lower_dq", "upper_dq")):
                self._soften(lo, hi, soft_lim)
            self._soften("lower_effort", "upper_effort", soft_lim)

    def _soften(self, lo: str, hi: str, s: float) -> None:
        lower, upper = getattr(self, lo).copy(), getattr(self, hi).copy()
        upper = upper - s * np.abs(upper - lower)
        lower = lower + s * np.abs(upper - lower)
        setattr(self, hi, upper)
        setattr(self, lo, lower)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(joints={self.act_Jname}, num_waypoints={self.num_waypoints}, "
            f"soft_lim={self.soft_lim})"
        )

    # ------------------------------------------------------------------ evaluation
    def _check_waypoints(self, waypoints, vel_waypoints, acc_waypoints):
        wps = np.asarray(waypoints, dtype=float)
        if wps.shape != self.dim_q:
            raise SplineShapeError(
                f"waypoints must have shape dim_q = {self.dim_q} (n_active, num_waypoints), "
                f"got {wps.shape}"
            )
        if not np.all(np.isfinite(wps)):
            raise SplineShapeError("waypoints contain NaN or inf")
        out = [wps]
        for name, arr in (("vel_waypoints", vel_waypoints), ("acc_waypoints", acc_waypoints)):
            if arr is None:
                out.append(None)
                continue
            arr = np.asarray(arr, dtype=float)
            if arr.shape != self.dim_v:
                raise SplineShapeError(f"{name} must have shape {self.dim_v}, got {arr.shape}")
            if not np.all(np.isfinite(arr)):
                raise SplineShapeError(f"{name} contains NaN or inf")
            out.append(arr)
        if (out[1] is None) != (out[2] is None):
            given = "vel_waypoints" if out[1] is not None else "acc_waypoints"
            logger.debug(
                "%s ignored: the pieces get velocity and acceleration constraints only when "
                "both are given",
                given,
            )
        return out

    def get_active_config(
        self,
        freq: float,
        time_points: Any,
        waypoints: np.ndarray,
        vel_waypoints: np.ndarray | None = None,
        acc_waypoints: np.ndarray | None = None,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Sample the active joints' trajectory (see the module doc for the pieces).

        Args:
            freq: Sampling frequency [Hz].
            time_points: Waypoint times (num_waypoints,) or (num_waypoints, 1) [s].
            waypoints: Positions (n_active, num_waypoints) [rad].
            vel_waypoints: Waypoint velocities (n_active, num_waypoints) [rad/s].
            acc_waypoints: Waypoint accelerations (n_active, num_waypoints)
                [rad/s²]. With both given every piece is the quintic meeting
                them (``exact_cubic`` with ``curve_constraints``); otherwise
                every piece is the rest-to-rest cubic and a lone velocity or
                acceleration array is ignored.

        Returns:
            ``(t (N, 1), q (N, n_active), dq, ddq)`` with ``N = int(T·freq) + 1``
            (:func:`sample_times`).
        """
        wps, vel, acc = self._check_waypoints(waypoints, vel_waypoints, acc_waypoints)
        tps = _check_time_points(time_points, self.num_waypoints)
        t = sample_times(freq, tps)
        basis = spline_basis(tps, t, constrained=is_constrained(vel, acc))
        q, dq, ddq = basis.evaluate(wps, vel, acc)
        return t.reshape(-1, 1), q, dq, ddq

    def get_full_config(
        self,
        freq: float,
        time_points: Any,
        waypoints: np.ndarray,
        vel_waypoints: np.ndarray | None = None,
        acc_waypoints: np.ndarray | None = None,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Like :meth:`get_active_config` but full-size: ``(t, q (N, nq), v (N, nv), a (N, nv))``.

        Inactive joints stay at ``robot.q0`` (Pinocchio neutral when absent) with zero
        velocity and acceleration.
        """
        t, qa, dqa, ddqa = self.get_active_config(
            freq, time_points, waypoints, vel_waypoints, acc_waypoints
        )
        return (t,) + self.to_full(qa, dqa, ddqa)

    def to_full(
        self, q_act: np.ndarray, dq_act: np.ndarray, ddq_act: np.ndarray
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Embed active-joint arrays (N, n_active) into full (N, nq) / (N, nv) arrays."""
        N = q_act.shape[0]
        q0 = getattr(self.robot, "q0", None)
        q0 = pin.neutral(self.model) if q0 is None else np.asarray(q0, dtype=float)
        q = np.tile(q0, (N, 1))
        v = np.zeros((N, self.model.nv))
        a = np.zeros((N, self.model.nv))
        q[:, self.act_idxq] = q_act
        v[:, self.act_idxv] = dq_act
        a[:, self.act_idxv] = ddq_act
        return q, v, a

    # ------------------------------------------------------------------ checks
    def check_cfg_constraints(
        self,
        q: np.ndarray,
        v: np.ndarray | None = None,
        tau: np.ndarray | None = None,
        soft_lim: float = 0,
    ) -> bool:
        """Whether a sampled trajectory violates the **model** limits.

        Violations: position outside ``[lower + δ, upper − δ]`` with
        ``δ = soft_lim·|upper − lower|``; ``|v| > (1 − soft_lim)·velocityLimit``;
        ``|tau| > (1 − soft_lim)·effortLimit`` (active joints only). Each
        violation is logged at DEBUG level.

        Args:
            q: Configurations (N, nq) [rad].
            v: Velocities (N, nv) [rad/s] or None.
            tau: Efforts (N, nv) or joint-major flat (nv·N,) [N·m], or None.
            soft_lim: Margin fraction.

        Returns:
            True if any limit is violated.
        """
        model = self.model
        q = np.atleast_2d(np.asarray(q, dtype=float))
        if q.shape[1] != model.nq:
            raise ValueError(f"q must have nq = {model.nq} columns, got {q.shape}")
        violated = False
        lo = model.lowerPositionLimit[self.act_idxq]
        hi = model.upperPositionLimit[self.act_idxq]
        delta = soft_lim * np.abs(hi - lo)
        qa = q[:, self.act_idxq]
        bad = (qa < lo + delta) | (qa > hi - delta)
        if bad.any():
            violated = True
            logger.debug("position limit violated by joints %s", self._names(bad))
        if v is not None:
            v = np.atleast_2d(np.asarray(v, dtype=float))
            va = v[:, self.act_idxv]
            bad = np.abs(va) > (1 - soft_lim) * np.abs(model.velocityLimit[self.act_idxv])
            if bad.any():
                violated = True
                logger.debug("velocity limit violated by joints %s", self._names(bad))
        if tau is not None:
            tau = np.asarray(tau, dtype=float)
            if tau.ndim == 1:
                tau = tau.reshape(model.nv, -1).T
            ta = tau[:, self.act_idxv]
            bad = np.abs(ta) > (1 - soft_lim) * np.abs(model.effortLimit[self.act_idxv])
            if bad.any():
                violated = True
                logger.debug("effort limit violated by joints %s", self._names(bad))
        return violated

    def _names(self, bad: np.ndarray) -> list:
        return [self.act_Jname[j] for j in np.flatnonzero(bad.any(axis=0))]

    def check_self_collision(self) -> bool:
        """Placeholder kept for compatibility: always False (no collision checking here).

        Use :class:`figaroh.optimal.contraints.TrajectoryConstraintManager` or
        :class:`figaroh.tools.robotcollisions.CollisionManager` instead.
        """
        return False

    def plot_spline(self, t: np.ndarray, p: np.ndarray, v: np.ndarray, a: np.ndarray):
        """Plot positions, velocities and accelerations of the active joints.

        Args:
            t: Times (N,) or (N, 1) [s].
            p: Positions (N, nq) or (N, n_active) [rad].
            v: Velocities (N, nv) or (N, n_active) [rad/s].
            a: Accelerations, same layout [rad/s²].

        Returns:
            The matplotlib Figure (not shown).
        """
        import matplotlib.pyplot as plt

        t = np.asarray(t, dtype=float).ravel()
        arrays = []
        for arr, idx in ((p, self.act_idxq), (v, self.act_idxv), (a, self.act_idxv)):
            arr = np.asarray(arr, dtype=float)
            arrays.append(arr if arr.shape[1] == len(idx) else arr[:, idx])
        fig, axes = plt.subplots(3, 1, sharex=True, figsize=(10, 8))
        labels = ("q [rad]", "dq [rad/s]", "ddq [rad/s²]")
        for ax, arr, label in zip(axes, arrays, labels, strict=True):
            for j, name in enumerate(self.act_Jname):
                ax.plot(t, arr[:, j], label=name)
            ax.set_ylabel(label)
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize="small", ncol=2)
        axes[-1].set_xlabel("t [s]")
        fig.tight_layout()
        return fig


class WaypointsGeneration(CubicSpline):
    """Random waypoint generator on pools of evenly spaced feasible values.

    Constructed with ``soft_lim=0`` (the limits are the model's; margins are
    given per pool through ``soft_limit_pool``). ``n_set = 10`` values per
    joint and pool.

    Args:
        robot, num_waypoints, active_joints: See :class:`CubicSpline`.
        soft_lim: Ignored (upstream compatibility).
        rng: ``numpy.random.Generator`` or seed for reproducible draws; None
            uses NumPy's global random state (``np.random.seed`` applies).

    Attributes:
        n_set: Pool size (10).
        pool_q, pool_dq, pool_ddq: (n_set, n_active) pools [rad], [rad/s], [rad/s²].
        soft_limit_pool_default: Zero margins, shape (3, n_active).
    """

    def __init__(
        self,
        robot,
        num_waypoints: int,
        active_joints: Sequence[str],
        soft_lim: float = 0,
        rng: Any = None,
    ):
        super().__init__(robot, num_waypoints, active_joints, soft_lim=0)
        self.n_set = 10
        n = len(self.act_idxq)
        self.pool_q = np.zeros((self.n_set, n))
        self.pool_dq = np.zeros((self.n_set, n))
        self.pool_ddq = np.zeros((self.n_set, n))
        self.soft_limit_pool_default = np.zeros((3, n))
        if rng is None or isinstance(rng, np.random.Generator):
            self.rng = rng
        else:
            self.rng = np.random.default_rng(rng)

    def _choice(self, pool: np.ndarray, size: int) -> np.ndarray:
        if self.rng is None:
            return np.random.choice(pool, size=size, replace=True)
        return self.rng.choice(pool, size=size, replace=True)

    def gen_rand_pool(self, soft_limit_pool: np.ndarray | None = None) -> None:
        """Fill the pools with ``n_set`` evenly spaced values per joint.

        Args:
            soft_limit_pool: (3, n_active) margin fractions (rows: position,
                velocity, acceleration); None → zeros. Positions from
                ``lower + l·range`` to ``upper − l·range``; velocities likewise;
                accelerations from ``k·(upper_dq − l·range_dq)`` down to
                ``k·(lower_dq + l·range_dq)``.
        """
        n = len(self.act_idxq)
        pool = self.soft_limit_pool_default if soft_limit_pool is None else soft_limit_pool
        pool = np.asarray(pool, dtype=float)
        if pool.shape != (3, n):
            raise SplineShapeError(f"soft_limit_pool must have shape (3, {n}), got {pool.shape}")
        rq = self.upper_q - self.lower_q
        rdq = self.upper_dq - self.lower_dq
        self.pool_q = np.linspace(
            self.lower_q + pool[0] * rq, self.upper_q - pool[0] * rq, self.n_set
        )
        self.pool_dq = np.linspace(
            self.lower_dq + pool[1] * rdq, self.upper_dq - pool[1] * rdq, self.n_set
        )
        self.pool_ddq = np.linspace(
            k * (self.upper_dq - pool[2] * rdq), k * (self.lower_dq + pool[2] * rdq), self.n_set
        )

    def check_repeat_wp(self, wp_list: Sequence[float]) -> bool:
        """True if two consecutive entries of ``wp_list`` are equal.

        Args:
            wp_list: Successive waypoint values of one joint [rad].

        Returns:
            Whether a value repeats its predecessor (a still joint).
        """
        arr = np.asarray(wp_list, dtype=float).ravel()
        return bool(np.any(arr[1:] == arr[:-1]))

    def gen_rand_wp(
        self,
        wp_init: np.ndarray | None = None,
        vel_wp_init: np.ndarray | None = None,
        acc_wp_init: np.ndarray | None = None,
        vel_set_zero: bool = True,
        acc_set_zero: bool = True,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Random waypoints drawn from the pools (call :meth:`gen_rand_pool` first).

        Positions are drawn from the pool (the first fixed to ``wp_init`` when
        given) with no two consecutive values equal (each waypoint uniformly
        among the pool values that differ from its predecessor — the
        distribution of redrawing until no repeat). Velocities and
        accelerations are zero (random from the pools when the ``*_set_zero``
        flags are False) except the first column, set to ``vel_wp_init`` /
        ``acc_wp_init`` when given (upstream set the accelerations from
        ``vel_wp_init``, a slip).

        Returns:
            ``(wps, vel_wps, acc_wps)``, each (n_active, num_waypoints).
        """
        n, m = self.dim_q
        if not np.any(self.pool_q):
            self.gen_rand_pool()
        wps = np.zeros((n, m))
        vel = np.zeros((n, m))
        acc = np.zeros((n, m))
        init = None if wp_init is None else np.asarray(wp_init, dtype=float).ravel()
        for j in range(n):
            pool = self.pool_q[:, j]
            if np.unique(pool).size < 2:
                raise RuntimeError(
                    f"cannot draw non-repeating waypoints for joint {self.act_Jname[j]}: its "
                    "position pool has a single value (zero range or soft_limit_pool ≥ 0.5)"
                )
            column = np.empty(m)
            column[0] = self._choice(pool, 1)[0] if init is None else init[j]
            # drawing each waypoint among the pool values that differ from its predecessor
            # gives the same distribution as redrawing whole columns until no repeat
            for w in range(1, m):
                column[w] = self._choice(pool[pool != column[w - 1]], 1)[0]
            wps[j] = column
            if not vel_set_zero:
                vel[j] = self._choice(self.pool_dq[:, j], m)
            if not acc_set_zero:
                acc[j] = self._choice(self.pool_ddq[:, j], m)
        if vel_wp_init is not None:
            vel[:, 0] = np.asarray(vel_wp_init, dtype=float).ravel()
        if acc_wp_init is not None:
            acc[:, 0] = np.asarray(acc_wp_init, dtype=float).ravel()
        return wps, vel, acc

    def gen_equal_wp(
        self,
        wp_init: np.ndarray | None = None,
        vel_wp_init: np.ndarray | None = None,
        acc_wp_init: np.ndarray | None = None,
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Waypoints increasing by ``(upper_q − lower_q)/20`` per step from ``wp_init``.

        ``wp_init`` defaults to ``lower_q``. Returns ``(wps, vel_wps, acc_wps)``
        with zero velocities/accelerations except the given first columns.
        """
        n, m = self.dim_q
        start = self.lower_q if wp_init is None else np.asarray(wp_init, dtype=float).ravel()
        step = (self.upper_q - self.lower_q) / 20.0
        wps = start[:, None] + step[:, None] * np.arange(m)[None, :]
        vel = np.zeros((n, m))
        acc = np.zeros((n, m))
        if vel_wp_init is not None:
            vel[:, 0] = np.asarray(vel_wp_init, dtype=float).ravel()
        if acc_wp_init is not None:
            acc[:, 0] = np.asarray(acc_wp_init, dtype=float).ravel()
        return wps, vel, acc


def calc_torque(N: int, robot, q: np.ndarray, v: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Inverse-dynamics efforts of N samples, stacked joint-major.

    Args:
        N: Number of samples.
        robot: Robot with a Pinocchio model.
        q: (N, nq) [rad]; v: (N, nv) [rad/s]; a: (N, nv) [rad/s²].

    Returns:
        (nv·N,) array; entry ``j·N + i`` is the RNEA effort [N·m] of DoF ``j``
        at sample ``i``.
    """
    model = robot.model
    q = np.asarray(q, dtype=float).reshape(-1, model.nq)
    v = np.asarray(v, dtype=float).reshape(-1, model.nv)
    a = np.asarray(a, dtype=float).reshape(-1, model.nv)
    if not (q.shape[0] == v.shape[0] == a.shape[0] == int(N)):
        raise ValueError(
            f"q, v, a must have N = {N} rows, got {q.shape[0]}, {v.shape[0]}, {a.shape[0]}"
        )
    backend = getattr(robot, "backend", None)
    if backend is not None and hasattr(backend, "compute_inverse_dynamics_batch"):
        tau = np.asarray(backend.compute_inverse_dynamics_batch(q, v, a), dtype=float)
    else:
        data = model.createData()
        tau = np.empty((q.shape[0], model.nv))
        for i in range(q.shape[0]):  # one Pinocchio call per sample
            tau[i] = pin.rnea(model, data, q[i], v[i], a[i])
    return tau.T.reshape(-1).copy()


def init_robot(robot) -> None:
    """Frames forward kinematics at ``robot.q0`` (neutral when absent)."""
    q0 = getattr(robot, "q0", None)
    q0 = pin.neutral(robot.model) if q0 is None else q0
    pin.framesForwardKinematics(robot.model, robot.data, np.asarray(q0, dtype=float))
