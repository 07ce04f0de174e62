"""Bad inputs of the URDF export: a named error naming the parameter/element/file, nothing written.

Every refusal is a :class:`~figaroh.tools.urdf_exporter.URDFExportError` (a
``FigarohError`` and a ``ValueError``) or a ``URDFNotFoundError`` (a
``FileNotFoundError``); the output file never appears. Rows marked
``already_good`` were right before and are kept as regression guards.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh.errors import FigarohError
from figaroh.tools.urdf_exporter import (
    URDFExportError,
    URDFNotFoundError,
    export_urdf,
    joint_term_parameters,
    read_joint_dynamics,
)
from figaroh.utils.fileio import SEAL_MARKER, SealedRunError

ARM = """<?xml version="1.0"?>
<robot name="arm">
  <link name="base"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="l1"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="{axis}"/>
    <dynamics damping="{damping}" friction="0.0"/>
    <limit effort="10" lower="-3" upper="3" velocity="2"/>
  </joint>
  <link name="l1">
    <inertial>
      <origin xyz="{com}" rpy="0 0 0"/>
      <mass value="2.0"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.015"/>
    </inertial>
  </link>
</robot>
"""


def _arm(tmp: Path, axis: str = "0 0 1", com: str = "0 0 0.1", damping: str = "0.0") -> Path:
    path = tmp / "arm.urdf"
    path.write_text(ARM.format(axis=axis, com=com, damping=damping))
    return path


def _export(params: dict, urdf: Callable[[Path], Path] = _arm, **kwargs: Any):
    def call(tmp: Path):
        nominal = urdf(tmp)
        out = tmp / "out" / "arm_x.urdf"
        out.parent.mkdir(exist_ok=True)
        try:
            return export_urdf(nominal, params, output_path=kwargs.pop("output", out), **kwargs)
        finally:
            assert not out.exists(), "a refused export wrote its output"

    return call


def _text(text: str) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "arm.urdf"
        path.write_text(text)
        return path

    return make


def _sealed(tmp: Path):
    run = tmp / "run"
    run.mkdir()
    (run / SEAL_MARKER).write_text("run\n")
    return export_urdf(_arm(tmp), {"fv_j1": 1.0}, output_path=run / "arm.urdf")


def _missing(tmp: Path):
    return export_urdf(tmp / "nope.urdf", {"fv_j1": 1.0})


def _same_file(tmp: Path):
    nominal = _arm(tmp)
    return export_urdf(nominal, {"fv_j1": 1.0}, output_path=nominal)


def _dynamics(damping: str):
    return lambda tmp: read_joint_dynamics(_arm(tmp, damping=damping))


CASES: list[BadInput] = [
    BadInput(
        "unknown_name",
        _export({"zz_j1": 1.0}),
        URDFExportError,
        r"Unknown parameter.*zz_j1.*Recognized",
        already_good=True,
    ),
    BadInput(
        "unknown_joint",
        _export({"fv_j9": 1.0}),
        URDFExportError,
        r"fv_j9 \(no joint 'j9'\)",
        already_good=True,
    ),
    BadInput(
        "nan_value",
        _export({"fs_j1": float("nan")}),
        URDFExportError,
        r"'fs_j1'.*not finite",
        already_good=True,
    ),
    BadInput(
        "text_value",
        _export({"fv_j1": "fast"}),
        URDFExportError,
        r"'fv_j1'.*not a number",
        already_good=True,
    ),
    BadInput(
        "params_not_mapping",
        _export([("fv_j1", 1.0)]),  # type: ignore[arg-type]
        URDFExportError,
        r"params must be a mapping",
        already_good=True,
    ),
    BadInput(
        "bad_merged_bodies",
        _export({"fv_j1": 1.0}, merged_bodies="merge"),
        URDFExportError,
        r"merged_bodies must be one of",
        already_good=True,
    ),
    BadInput(
        "inconsistent_inertia",
        _export({"Izz_j1": 5.0}),
        URDFExportError,
        r"joint 'j1'.*not physically consistent.*allow_infeasible=True",
        already_good=True,
    ),
    BadInput(
        "zero_axis_offset",
        _export({"offsetRevoluteUnaligned_j1": 0.1}, urdf=lambda t: _arm(t, axis="0 0 0")),
        URDFExportError,
        r"joint 'j1': zero <axis>",
        already_good=True,
    ),
    BadInput(
        "malformed_origin",
        _export({"fv_j1": 1.0, "m_j1": 2.5}, urdf=lambda t: _arm(t, com="0 0")),
        URDFExportError,
        r"inertial origin xyz must hold 3 numbers",
        already_good=True,
    ),
    BadInput(
        "not_xml",
        _export({"fv_j1": 1.0}, urdf=_text("<robot><link></robot>")),
        URDFExportError,
        r"not valid XML",
        already_good=True,
    ),
    BadInput(
        "not_a_robot",
        _export({"fv_j1": 1.0}, urdf=_text("<mujoco/>")),
        URDFExportError,
        r"root element is <mujoco>, not <robot>",
        already_good=True,
    ),
    BadInput("missing_nominal", _missing, URDFNotFoundError, r"URDF not found.*nope\.urdf"),
    BadInput("output_is_nominal", _same_file, URDFExportError, r"nominal URDF itself"),
    BadInput("sealed_run", _sealed, SealedRunError, r"archived run", already_good=True),
    BadInput(
        "term_prefix_unknown",
        lambda tmp: joint_term_parameters({"fv_j1": 1.0}, ["j1"], prefixes=("fc",)),
        URDFExportError,
        r"\['fc'\] are not joint terms; choose among",
    ),
    BadInput(
        "term_ratio_missing",
        lambda tmp: joint_term_parameters({"fv_j1": 1.0}, ["j1"], motor_side_ratios={}),
        URDFExportError,
        r"no gear ratio for joint 'j1'",
    ),
    BadInput(
        "dynamics_not_numeric",
        _dynamics("high"),
        URDFExportError,
        r"malformed joint 'j1' dynamics damping 'high'",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_refusals_are_figaroh_errors_and_builtins():
    assert issubclass(URDFExportError, FigarohError) and issubclass(URDFExportError, ValueError)
    assert issubclass(URDFNotFoundError, FigarohError)
    assert issubclass(URDFNotFoundError, FileNotFoundError)
