"""Bad robot names and template references: a named error naming the input and the fix.

Rows call ``load_robot`` / ``resolve_robot_urdf`` with misspelled names and
missing paths, and ``UnifiedConfigParser`` with an ``extends:`` naming a
template that does not exist; the good rows (a name, a shipped template from a
folder with no ``templates/``) return what was loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh.errors import FigarohError
from figaroh.tools.load_robot import UnknownRobotError, load_robot, resolve_robot_urdf
from figaroh.utils.config_parser import UnifiedConfigParser
from figaroh.utils.error_handling import ConfigurationError


def _config(tmp_path: Path, extends: str) -> Path:
    path = tmp_path / "user" / "robot.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'extends: "{extends}"\nrobot: {{name: r}}\n')
    return path


def _good_name(tmp_path: Path) -> str:
    return f"nq={load_robot('ur10', load_geometry=False).model.nq}"


def _good_template(tmp_path: Path) -> str:
    config = UnifiedConfigParser(_config(tmp_path, "templates/manipulator_robot.yaml")).parse()
    return config["robot"]["type"]


CASES: list[BadInput] = [
    BadInput(
        "misspelled_robot_name",
        lambda tmp: load_robot("ur01", load_geometry=False),
        UnknownRobotError,
        r"'ur01'.*Did you mean.*'ur10'.*figaroh robots",
    ),
    BadInput(
        "unknown_name_is_file_not_found",
        lambda tmp: resolve_robot_urdf("no_such_robot"),
        (FileNotFoundError, FigarohError),
        r"robot name 'no_such_robot' not found",
    ),
    BadInput(
        "missing_urdf_path",
        lambda tmp: load_robot(str(tmp / "absent.urdf")),
        FileNotFoundError,
        r"URDF file not found: .*absent\.urdf",
        already_good=True,
    ),
    BadInput(
        "misspelled_template",
        lambda tmp: UnifiedConfigParser(_config(tmp, "templates/manipulater_robot.yaml")).parse(),
        ConfigurationError,
        r"manipulater_robot\.yaml.*extends.*Did you mean 'manipulator_robot\.yaml'",
    ),
    BadInput("robot_by_name", _good_name, verdict="nq=6"),
    BadInput("shipped_template_outside_repository", _good_template, verdict="manipulator"),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path, ur10_urdf):
    run_case(case, tmp_path)
