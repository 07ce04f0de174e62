"""Bad inputs when saving results and archiving runs.

Each row is a user action and the reaction owed: a named exception whose
message names the argument and the fix, or (where figaroh 1.0.2 returned
quietly and a script must keep running) a warning.
"""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path

import numpy as np
import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh._run.archive import archive_run, compute_run_dir
from figaroh._run.task_services import RunServices
from figaroh.identification.base_identification import BaseIdentification
from figaroh.utils.results_manager import (
    InvalidResultsError,
    ResultsManager,
    ResultsManagerError,
)


class _Unsolved(RunServices):
    _hooks = dataclasses.replace(BaseIdentification._hooks, is_solved=lambda run: False)
    results_manager = None


def _manager() -> ResultsManager:
    return ResultsManager("identification", "ur10", {"base parameters values": np.ones(3)})


def _solved_object() -> types.SimpleNamespace:
    return types.SimpleNamespace(
        _run_provenance={
            "run_id": "bad-input-run",
            "task": "identification",
            "timestamps": {"run_finished": "2026-01-01T00:00:00+00:00"},
        },
        identif_config={"robot": "ur10"},
        result={"base parameters names": ["m1"], "base parameters values": [1.0]},
        stages=None,
    )


def _save_into_file(tmp: Path) -> None:
    target = tmp / "taken.txt"
    target.write_text("not a folder", encoding="utf-8")
    _manager().save_results(output_dir=target)


def _archive_twice(tmp: Path) -> None:
    obj = _solved_object()
    first = archive_run(obj, compute_run_dir(obj, tmp / "runs"))
    second = archive_run(obj, first)  # the sealed folder is never written again
    assert second != first


CASES: list[BadInput] = [
    BadInput(
        "save_results before solve()",
        lambda tmp: _Unsolved().save_results(str(tmp)),
        match=r"Run solve\(\) first",
    ),
    BadInput(
        "output_dir is an existing file",
        _save_into_file,
        raises=ResultsManagerError,
        match=r"output_dir .*taken\.txt.* is a file, not a folder",
    ),
    BadInput(
        "unknown save format",
        lambda tmp: _manager().save_results(output_dir=tmp, save_formats=["xml"]),
        raises=ResultsManagerError,
        match=r"unsupported format.*'xml'.*choose from",
        already_good=True,
    ),
    BadInput(
        "file_prefix with a path separator",
        lambda tmp: _manager().save_results(output_dir=tmp, file_prefix="a/b"),
        raises=ResultsManagerError,
        match=r"file_prefix 'a/b' must be .* without path separators",
        already_good=True,
    ),
    BadInput(
        "results not a dict",
        lambda tmp: _manager().save_results([1, 2, 3], output_dir=tmp),
        raises=ResultsManagerError,
        match=r"results must be a dict",
        already_good=True,
    ),
    BadInput(
        "unknown task type",
        lambda tmp: ResultsManager("identify", "ur10"),
        raises=InvalidResultsError,
        match=r"task_type must be one of",
        already_good=True,
    ),
    BadInput(
        "archive_run before solve()",
        lambda tmp: archive_run(types.SimpleNamespace(), tmp / "run"),
        raises=AttributeError,
        match=r"Run solve\(\) first",
        already_good=True,
    ),
    BadInput(
        "archiving into a sealed run goes to a new folder",
        _archive_twice,
        match=r"already archived; archiving this run to .* instead",
        already_good=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case: BadInput, tmp_path: Path) -> None:
    run_case(case, tmp_path)
