"""Generic identification from a ROS bag of joint states (used by ``figaroh identify --bag``).

:class:`BagIdentification` is the bag twin of
:class:`~figaroh.cli.csv_identification.CSVIdentification`: a
:class:`~figaroh.identification.base_identification.BaseIdentification` whose
:meth:`~BagIdentification.load_trajectory_data` reads ``sensor_msgs/JointState``
messages (ROS 1 ``.bag``, ROS 2 bag folder with sqlite3 or MCAP storage, or a
bare ``.mcap`` file) with :func:`figaroh.data.bag_source.trajectory_from_bag`.
On the same samples it gives the numbers ``CSVIdentification`` gives.

Settings come from ``tasks.identification.data.bag`` of the configuration
(:class:`~figaroh.data.bag_source.JointStateBagOptions`), overridden by the
constructor's arguments::

    data:
      bag:
        joint_topics: /joint_states        # or a list, one topic per joint group
        resample: none                     # none | linear | cubic
        effort: joint_effort               # or motor_current (then motor_constants)
        validation_path: logs/held_out.mcap

The time base of the training bag becomes the ``time_base`` data check of the
verdict (gaps, duplicates, out-of-order stamps and jitter, with the numbers).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Sequence

from figaroh.cli.csv_identification import path_beside_config, read_configured_csv
from figaroh.data.bag_source import (
    BagTrajectory,
    JointStateBagOptions,
    is_bag_path,
    trajectory_from_bag,
)
from figaroh.data.trajectory import TrajectoryData
from figaroh.identification.base_identification import BaseIdentification

logger = logging.getLogger(__name__)

__all__ = ["BagIdentification"]


class BagIdentification(BaseIdentification):
    """Dynamic identification of any robot from a ROS bag of joint states.

    Args:
        robot: The :class:`~figaroh.tools.robot.Robot`.
        config_file: Unified configuration YAML (``tasks.identification``).
        bag: Training bag (None: ``tasks.identification.data.bag.path``).
        topic: JointState topic, or one per joint group (None: the configured
            ``joint_topics``, else the bag's only JointState topic).
        validation_bag: Held-out bag (or CSV); sets ``validation_data_file``
            (None: ``data.bag.validation_path``, else ``data.validation_data_file``).
        resample: ``none``, ``linear`` or ``cubic`` (None: the configured one, ``none``).

    Example:
        ```python
        robot = Robot("ur10.urdf", load_geometry=False)
        ident = BagIdentification(robot, "ur10.yaml", bag="logs/run1.mcap")
        ident.initialize()
        ident.solve(decimate=False, plotting=False)
        ```
    """

    def __init__(
        self,
        robot: Any,
        config_file: str | os.PathLike,
        bag: str | os.PathLike | None = None,
        topic: str | Sequence[str] | None = None,
        validation_bag: str | os.PathLike | None = None,
        resample: str | None = None,
    ) -> None:
        super().__init__(robot, str(config_file))
        section = self.identif_config.get("bag") or {}
        self.bag_options = JointStateBagOptions.from_config(
            section, joint_topics=topic, resample=resample
        )
        path = bag if bag is not None else section.get("path")
        if not path:
            raise ValueError(
                "BagIdentification needs a bag: pass bag=... or set "
                "tasks.identification.data.bag.path"
            )
        self.bag_path = Path(path_beside_config(str(path), self._config_file_path))
        held_out = validation_bag if validation_bag is not None else section.get("validation_path")
        if held_out:
            self.identif_config["validation_data_file"] = str(held_out)
        self.bag_trajectory: BagTrajectory | None = None  # the training bag, once loaded

    def __repr__(self) -> str:
        return super().__repr__()[:-1] + f", bag={str(self.bag_path)!r})"

    def resolve_validation_source(self, source: str) -> str:
        """Held-out bag path: as given when it exists, else beside the config file."""
        return path_beside_config(source, self._config_file_path)

    def _read_bag(self, path: str | os.PathLike) -> BagTrajectory:
        config = self.identif_config
        fs = (config.get("filter_config") or {}).get("sampling_frequency") or 1.0 / float(
            config["ts"]
        )
        return trajectory_from_bag(
            path,
            [str(j) for j in config["active_joints"]],
            float(fs),
            model=self.model,
            options=self.bag_options,
            reduction_ratios=config.get("reduction_ratio"),
        )

    def load_trajectory_data(self, data_source: str | None = None) -> TrajectoryData:
        """Read the training bag, or the held-out log ``data_source`` (a bag or a CSV file).

        Args:
            data_source: Held-out bag or CSV (None: the training bag).

        Returns:
            The trajectory, columns in ``identif_config["active_joints"]`` order.
        """
        if data_source is not None and not is_bag_path(data_source):
            return read_configured_csv(data_source, self)
        read = self._read_bag(data_source if data_source is not None else self.bag_path)
        if data_source is None:
            self.bag_trajectory = read
        return read.trajectory

    def process_data(self, truncate=None):
        """:meth:`BaseIdentification.process_data`, then the ``time_base`` data check."""
        super().process_data(truncate)
        if self.bag_trajectory is not None:
            finding = self.bag_trajectory.finding()
            if not finding.passed:
                logger.warning("Data check %s failed: %s", finding.check, finding.message)
            self.data_checks = self.data_checks.with_findings(finding)
            self._record_data_stage()
