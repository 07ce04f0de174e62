"""Errors of the ROS bag data source (:mod:`figaroh.data.bag_reader` and its users).

Every class derives from :class:`BagError`, itself a
:class:`~figaroh.errors.FigarohError` and a ``ValueError`` (bad input), so a
caller can catch every bag problem with one clause. Each message names the bag,
the topic or field at fault and what to do about it.
"""

from __future__ import annotations

from figaroh.errors import FigarohError

__all__ = [
    "BagError",
    "BagJointError",
    "BagMessageTypeError",
    "BagTimeBaseError",
    "BagTopicError",
    "EffortUnitError",
    "NotABagError",
    "TruncatedBagError",
]


class BagError(FigarohError, ValueError):
    """A ROS bag cannot give the data asked of it."""


class NotABagError(BagError):
    """The path is not a ROS 1 bag, a ROS 2 bag (sqlite3 or MCAP storage) or an MCAP file."""


class BagTopicError(BagError):
    """No such topic, or several topics qualify and none was chosen (the message lists them)."""


class BagMessageTypeError(BagError):
    """The topic's message type is not one the reader accepts for this use."""


class BagJointError(BagError):
    """The joint-state messages carry none (or not all) of the model's active joints."""


class TruncatedBagError(BagError):
    """The bag is cut short before any message of the topic could be read."""


class BagTimeBaseError(BagError):
    """The stamps are irregular (gaps, duplicates, out of order) and no resampling was asked for."""


class EffortUnitError(BagError):
    """The logged effort is not joint effort and the configuration cannot convert it."""
