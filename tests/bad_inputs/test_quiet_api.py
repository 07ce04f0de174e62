"""Bad inputs of the quiet API, ``figaroh init`` robot names and the trajectory extra.

Each row is a user action with the reaction owed: a named exception (or exit
code 2 with one stderr line) naming the field and the fix.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from conftest import ROOT
from figaroh.cli.main import main
from figaroh.errors import MissingDependencyError
from figaroh.identification.base_identification import BaseIdentification
from figaroh.optimal.base_optimal_trajectory import BaseOptimalTrajectory
from figaroh.tools.load_robot import load_robot

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"


class Exit(Exception):
    """What a command did: ``exit <code>: <stderr>``."""


def _cli(*args) -> None:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    raise Exit(f"exit {code}: {err.getvalue().strip()}")


def _trajectory_without_cyipopt(tmp: Path) -> None:
    robot = load_robot("ur10", load_geometry=False)
    opt = BaseOptimalTrajectory(robot, ["shoulder_pan_joint", "elbow_joint"], CONFIG)
    saved = sys.modules.get("cyipopt", None)
    sys.modules["cyipopt"] = None  # import fails as if not installed
    try:
        opt.solve(stack_reps=1)
    finally:
        if saved is None:
            sys.modules.pop("cyipopt", None)
        else:
            sys.modules["cyipopt"] = saved


def _verbose_positionally(tmp: Path) -> None:
    BaseIdentification.solve(object(), True, 10, 0.001, False, False, False, False, False)


CASES: list[BadInput] = [
    BadInput(
        "trajectory_solve_without_cyipopt",
        _trajectory_without_cyipopt,
        MissingDependencyError,
        r'pip install "figaroh\[ipopt\]"',
        already_good=True,
    ),
    BadInput(
        "verbose_is_keyword_only",
        _verbose_positionally,
        TypeError,
        r"positional argument",
    ),
    BadInput(
        "init_unknown_robot_name",
        lambda tmp: _cli("init", "ur10_robo", "-o", tmp / "a.yaml", "-q"),
        Exit,
        r"^exit 2: figaroh init: error: .*ur10_robo.*figaroh robots",
    ),
    BadInput(
        "init_missing_urdf_file",
        lambda tmp: _cli("init", tmp / "none.urdf", "-o", tmp / "a.yaml", "-q"),
        Exit,
        r"^exit 2: figaroh init: error: .*none\.urdf",
        already_good=True,
    ),
    BadInput(
        "init_by_name_is_good",
        lambda tmp: _cli("init", "ur10", "-o", tmp / "a.yaml", "-q"),
        Exit,
        r"^exit 0: $",
        already_good=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)
