"""The identification cases of the golden kit (outputs of figaroh 1.0.2) pass field by field.

Each case runs in a fresh interpreter through the kit's own runner
(``../shared/golden/run.py``), which compares every recorded field with the
output of this library; skipped when the shared folder is absent.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
RUNNER = SHARED / "golden" / "run.py"

#: case → number of recorded fields.
CASES = {"filter_rest": 80, "ur10_ident_sim": 110, "tiago_ident_real": 36}


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden_identification_case(case, tmp_path):
    if not RUNNER.is_file() or not (SHARED / "data").is_dir():
        pytest.skip(f"golden kit not found at {RUNNER}")
    env = {**os.environ, "GOLDEN_WORK": str(tmp_path), "GOLDEN_SHOW": "20"}
    proc = subprocess.run(
        [sys.executable, str(RUNNER), str(SHARED), case],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    found = re.search(rf"^{case}: (\d+) passed, (\d+) failed", proc.stdout, re.M)
    assert found, proc.stdout + proc.stderr
    passed, failed = int(found.group(1)), int(found.group(2))
    assert (passed, failed) == (CASES[case], 0), proc.stdout
    assert proc.returncode == 0
