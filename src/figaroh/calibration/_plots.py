"""Basic matplotlib plots of a solved calibration (matplotlib imported on use)."""

from __future__ import annotations

import logging

import numpy as np

from figaroh.calibration._pipeline.results import poses_2d
from figaroh.utils.error_handling import CalibrationError

logger = logging.getLogger(__name__)

__all__ = ["CalibrationPlots"]


class CalibrationPlots:
    """Mixin of :class:`~figaroh.calibration.base_calibration.BaseCalibration`."""

    def _require_calibrated(self) -> None:
        if self.STATUS != "CALIBRATED":
            raise CalibrationError("Calibration not performed yet")

    def plot_errors_distribution(self):
        """Bar chart of the per-sample residual norm of each marker [m]."""
        self._require_calibrated()
        import matplotlib.pyplot as plt

        K = self._PEE_dist.shape[0]
        fig, axes = plt.subplots(K, 1, squeeze=False)
        for k in range(K):
            axes[k, 0].bar(np.arange(self._PEE_dist.shape[1]), self._PEE_dist[k])
            axes[k, 0].set_ylabel(f"marker {k + 1} error [m]")
        axes[-1, 0].set_xlabel("sample")
        return fig

    def plot_3d_poses(self, INCLUDE_UNCALIB: bool = False):
        """Measured vs estimated marker positions in 3-D (position components)."""
        self._require_calibrated()
        import matplotlib.pyplot as plt

        meas = np.asarray(self.results_data["PEE measured (2D array)"])
        est = np.asarray(self.results_data["PEE estimated (2D array)"])
        fig = plt.figure()
        ax = fig.add_subplot(projection="3d")
        if meas.shape[1] >= 3:
            ax.scatter(*meas[:, :3].T, marker="o", label="measured")
            ax.scatter(*est[:, :3].T, marker="x", label="calibrated")
            if INCLUDE_UNCALIB:
                nom = self.get_pose_from_measure(np.zeros_like(self.var_))
                n2 = poses_2d(nom, self._spec())
                ax.scatter(*n2[:, :3].T, marker="^", label="nominal")
        ax.legend()
        return fig

    def plot_joint_configurations(self):
        """Active joint values of every posture against their limits."""
        if self.q_measured is None:
            raise CalibrationError("Call load_data_set() first")
        import matplotlib.pyplot as plt

        idx = self.calib_config["config_idx"]
        fig, ax = plt.subplots()
        for a, i in enumerate(idx):
            ax.plot(np.full(len(self.q_measured), a), self.q_measured[:, i], "o", ms=3)
            ax.plot([a - 0.3, a + 0.3], [self.model.lowerPositionLimit[i]] * 2, "k-")
            ax.plot([a - 0.3, a + 0.3], [self.model.upperPositionLimit[i]] * 2, "k-")
        ax.set_xticks(range(len(idx)))
        ax.set_xticklabels(
            [self.model.names[j] for j in self.calib_config["actJoint_idx"]], rotation=45
        )
        return fig
