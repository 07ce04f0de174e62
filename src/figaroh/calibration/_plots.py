"""Basic matplotlib plots of a solved calibration (matplotlib imported on use).

Plain functions of arrays; ``BaseCalibration.plot_errors_distribution``,
``plot_3d_poses`` and ``plot_joint_configurations`` call them with the
instance's results.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["errors_distribution", "joint_configurations", "poses_3d"]


def errors_distribution(sample_errors: np.ndarray) -> Any:
    """Bar chart of the (K, N) per-sample residual norm of each marker [m]."""
    import matplotlib.pyplot as plt

    K = sample_errors.shape[0]
    fig, axes = plt.subplots(K, 1, squeeze=False)
    for k in range(K):
        axes[k, 0].bar(np.arange(sample_errors.shape[1]), sample_errors[k])
        axes[k, 0].set_ylabel(f"marker {k + 1} error [m]")
    axes[-1, 0].set_xlabel("sample")
    return fig


def poses_3d(measured: np.ndarray, estimated: np.ndarray, nominal: np.ndarray | None) -> Any:
    """Measured vs estimated (and nominal) marker positions in 3-D; (N, ≥3) arrays [m]."""
    import matplotlib.pyplot as plt

    fig = plt.figure()
    ax = fig.add_subplot(projection="3d")
    if measured.shape[1] >= 3:
        ax.scatter(*measured[:, :3].T, marker="o", label="measured")
        ax.scatter(*estimated[:, :3].T, marker="x", label="calibrated")
        if nominal is not None:
            ax.scatter(*nominal[:, :3].T, marker="^", label="nominal")
    ax.legend()
    return fig


def joint_configurations(
    q: np.ndarray,
    columns: Sequence[int],
    lower: np.ndarray,
    upper: np.ndarray,
    labels: Sequence[str],
) -> Any:
    """Joint values of every posture (configuration ``columns`` of ``q``) against their limits."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    for a, i in enumerate(columns):
        ax.plot(np.full(len(q), a), q[:, i], "o", ms=3)
        ax.plot([a - 0.3, a + 0.3], [lower[i]] * 2, "k-")
        ax.plot([a - 0.3, a + 0.3], [upper[i]] * 2, "k-")
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels(list(labels), rotation=45)
    return fig
