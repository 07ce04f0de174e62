"""Units of the joint efforts of a Pinocchio model (``N·m`` revolute, ``N`` prismatic)."""

from __future__ import annotations

from typing import Any

__all__ = ["effort_unit"]


def effort_unit(model: Any, joint_name: str) -> str:
    """Unit of a joint's effort from its Pinocchio joint type (``"N·m"``, ``"N"``).

    Args:
        model: A Pinocchio model (``names`` and ``joints``).
        joint_name: Name of one of its joints.

    Returns:
        ``"N·m"`` for a revolute (or any rotational) joint, ``"N"`` for a
        prismatic one, ``"N, N·m"`` for a planar joint and ``""`` for a name
        that is not a model joint.
    """
    names = list(model.names)
    if joint_name not in names:
        return ""
    kind = model.joints[names.index(joint_name)].shortname()
    if "Planar" in kind:
        return "N, N·m"
    if kind.startswith("JointModelP"):
        return "N"
    return "N·m"
