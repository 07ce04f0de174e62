"""Lazy names of :mod:`figaroh.data` (read by ``lazy_loader.attach_stub``)."""

from . import (
    adoption as adoption,
)
from . import (
    bag_errors as bag_errors,
)
from . import (
    bag_reader as bag_reader,
)
from . import (
    bag_records as bag_records,
)
from . import (
    bag_source as bag_source,
)
from . import (
    bag_storage as bag_storage,
)
from . import (
    bag_time as bag_time,
)
from . import (
    observations as observations,
)
from . import (
    protocol as protocol,
)
from . import (
    source as source,
)
from . import (
    text_csv as text_csv,
)
from . import (
    trajectory as trajectory,
)
from . import (
    trajectory_csv as trajectory_csv,
)
from . import (
    trajectory_fields as trajectory_fields,
)
from .adoption import (
    adopt_trajectory as adopt_trajectory,
)
from .adoption import (
    adopt_trajectory_for as adopt_trajectory_for,
)
from .adoption import (
    trajectory_mask as trajectory_mask,
)
from .bag_errors import (
    BagError as BagError,
)
from .bag_reader import (
    JOINT_STATE_TYPES as JOINT_STATE_TYPES,
)
from .bag_reader import (
    POSE_TYPES as POSE_TYPES,
)
from .bag_reader import (
    bag_summary as bag_summary,
)
from .bag_reader import (
    read_joint_states as read_joint_states,
)
from .bag_reader import (
    read_poses as read_poses,
)
from .bag_reader import (
    select_topics as select_topics,
)
from .bag_records import (
    BagSummary as BagSummary,
)
from .bag_records import (
    JointStateArrays as JointStateArrays,
)
from .bag_records import (
    PoseArrays as PoseArrays,
)
from .bag_records import (
    TopicInfo as TopicInfo,
)
from .bag_storage import (
    BAG_STORAGES as BAG_STORAGES,
)
from .bag_storage import (
    bag_files as bag_files,
)
from .bag_time import (
    RESAMPLE_METHODS as RESAMPLE_METHODS,
)
from .bag_time import (
    StillWindow as StillWindow,
)
from .bag_time import (
    TimeBaseReport as TimeBaseReport,
)
from .bag_time import (
    analyse_time_base as analyse_time_base,
)
from .bag_time import (
    average_postures as average_postures,
)
from .bag_time import (
    poses_in_windows as poses_in_windows,
)
from .bag_time import (
    resample as resample,
)
from .bag_time import (
    still_windows as still_windows,
)
from .observations import (
    DOF as DOF,
)
from .observations import (
    PoseObservations as PoseObservations,
)
from .protocol import (
    Protocol as Protocol,
)
from .protocol import (
    ProtocolSession as ProtocolSession,
)
from .source import (
    DataSource as DataSource,
)
from .source import (
    Session as Session,
)
from .source import (
    file_sha256 as file_sha256,
)
from .text_csv import (
    NotTextCSVError as NotTextCSVError,
)
from .text_csv import (
    read_csv_text as read_csv_text,
)
from .trajectory import (
    CLOCKS as CLOCKS,
)
from .trajectory import (
    DRIVE_KINDS as DRIVE_KINDS,
)
from .trajectory import (
    EFFORT_KINDS as EFFORT_KINDS,
)
from .trajectory import (
    FORCE_UNITS as FORCE_UNITS,
)
from .trajectory import (
    JOINT_FORCE as JOINT_FORCE,
)
from .trajectory import (
    JOINT_TORQUE as JOINT_TORQUE,
)
from .trajectory import (
    LOAD_FRACTION as LOAD_FRACTION,
)
from .trajectory import (
    MOTOR_CURRENT as MOTOR_CURRENT,
)
from .trajectory import (
    MOTOR_TORQUE as MOTOR_TORQUE,
)
from .trajectory import (
    TORQUE_UNITS as TORQUE_UNITS,
)
from .trajectory import (
    TrajectoryData as TrajectoryData,
)
from .trajectory import (
    TrajectoryDataError as TrajectoryDataError,
)
