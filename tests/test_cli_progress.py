"""``figaroh trajectory`` and ``figaroh postures``: progress on a terminal, results when piped.

Each command runs as ``python -m figaroh.cli`` twice on the UR10 with small
sizes: once on a pseudo-terminal (:mod:`pty`: stdout and stderr are the
terminal, so the progress bar is drawn and must show the optimiser's
iterations) and once with pipes (only the result lines, nothing else, on
stdout; on stderr nothing, or the one-line verdict of an optimiser that did
not converge). The trajectory runs stop at IPOPT's iteration limit: the
command says so in one line and exits 1, unless the fallback is accepted.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import termios

import pytest

from conftest import ROOT
from figaroh._run.optimisation_trace import OptimisationTrace, StageOutcome, TraceEntry
from figaroh.cli import design_commands
from figaroh.cli import main as cli_main
from figaroh.cli.common import CLIError
from figaroh.cli.progress import Steps, iteration_text

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
#: 3 waypoints at 20 Hz, 2 IPOPT iterations, a seed whose first initial guess is feasible.
TINY = ("--waypoints", 3, "--frequency", 20, "--ipopt-max-iterations", 2, "--seed", 30)


def _env() -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg", COLUMNS="160")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _on_terminal(*args) -> tuple[int, str]:
    """Run ``python -m figaroh.cli ARGS`` on a pseudo-terminal (160 columns); (code, output)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "figaroh.cli", *map(str, args)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=_env(),
        cwd=ROOT,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=600), b"".join(chunks).decode(errors="replace")


def _piped(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "figaroh.cli", *map(str, args)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=ROOT,
        timeout=600,
    )


# ---------------------------------------------------------------------------
# trajectory
# ---------------------------------------------------------------------------
def test_trajectory_progress_on_a_terminal_result_lines_when_piped(ur10_urdf, tmp_path):
    pytest.importorskip("cyipopt")
    base = ("trajectory", CONFIG, "--urdf", ur10_urdf, *TINY)
    code, shown = _on_terminal(*base, "-o", tmp_path / "tty")
    assert code == 1, shown
    # the bar shows IPOPT's iterations (redrawn at most every 0.1 s: the first always)
    assert "IPOPT iteration 0: objective " in shown, shown
    assert "constraint violation" in shown and "\r" in shown
    assert "IPOPT did not converge (segment 1: max iterations" in shown

    piped = _piped(*base, "-o", tmp_path / "pipe")
    assert piped.returncode == 1, piped.stderr
    lines = piped.stdout.splitlines()
    assert lines[:2] == [
        f"wrote {tmp_path / 'pipe' / 'trajectory.csv'}",
        f"wrote {tmp_path / 'pipe' / 'trajectory_summary.yaml'}",
    ]
    assert len(lines) == 3 and lines[2].startswith("designed 1 segment(s) for 6 joints of ur10")
    (error,) = piped.stderr.splitlines()  # one line, no bar, no iteration
    assert error.startswith("figaroh trajectory: error: IPOPT did not converge (segment 1: ")
    assert "limit 2 iterations" in error and "--accept-fallback" in error
    assert "--ipopt-max-iterations" in error
    assert "iteration 0:" not in piped.stdout + piped.stderr and "\r" not in piped.stderr


# ---------------------------------------------------------------------------
# postures
# ---------------------------------------------------------------------------
def test_postures_progress_on_a_terminal_result_lines_when_piped(ur10_urdf, tmp_path):
    pytest.importorskip("picos")
    pytest.importorskip("cvxopt")
    base = ("postures", CONFIG, "--urdf", ur10_urdf, "--n-candidates", 30)
    code, shown = _on_terminal(*base, "-o", tmp_path / "tty")
    assert code == 0, shown
    assert "SOCP iteration 0: objective" in shown and "constraint violation" in shown

    code, quiet = _on_terminal(*base, "-o", tmp_path / "quiet", "-q")
    assert code == 0 and quiet == "", quiet  # -q: nothing, not even on a terminal

    piped = _piped(*base, "-o", tmp_path / "pipe")
    assert piped.returncode == 0 and piped.stderr == ""
    lines = piped.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("selected ") and "of 30 postures" in lines[0]
    assert lines[1:] == [
        f"wrote {tmp_path / 'pipe' / 'postures.csv'}",
        f"wrote {tmp_path / 'pipe' / 'postures.yaml'}",
    ]


# ---------------------------------------------------------------------------
# the outcome check and the progress detail, in process
# ---------------------------------------------------------------------------
def _trace(*outcomes: StageOutcome) -> OptimisationTrace:
    trace = OptimisationTrace()
    for outcome in outcomes:
        trace = trace.with_outcome(outcome)
    return trace


def test_check_outcome_refuses_a_fallback_unless_accepted(capsys):
    args = argparse.Namespace(quiet=False)
    converged = _trace(StageOutcome("ipopt:segment 1", "converged", "IPOPT Solve_Succeeded"))
    design_commands.check_outcome(args, converged, "IPOPT", "raise --ipopt-max-iterations")
    assert capsys.readouterr().out == ""
    kept = _trace(
        StageOutcome("ipopt:segment 1", "converged", "IPOPT Solve_Succeeded"),
        StageOutcome("ipopt:segment 2", "fallback", "kept the initial guess: ..."),
    )
    with pytest.raises(CLIError) as info:
        design_commands.check_outcome(args, kept, "IPOPT", "raise --ipopt-max-iterations")
    assert info.value.code == 1
    assert info.value.message.startswith(
        "IPOPT did not converge (segment 2: fallback — kept the initial guess"
    )
    assert "segment 1" not in info.value.message and "--accept-fallback" in info.value.message
    args.accept_fallback = True
    design_commands.check_outcome(args, kept, "IPOPT", "raise --ipopt-max-iterations")
    out = capsys.readouterr().out
    assert out.startswith("accepted with --accept-fallback: IPOPT did not converge (segment 2")
    args.quiet = True
    design_commands.check_outcome(args, kept, "IPOPT", "raise --ipopt-max-iterations")
    assert capsys.readouterr().out == ""


def test_steps_detail_shows_the_latest_iteration_on_the_bar():
    entry = TraceEntry("ipopt:segment 1", 12, 117.25, 0.37)
    assert iteration_text(entry) == (
        "IPOPT iteration 12: objective 117.25, constraint violation 3.7e-01"
    )
    assert iteration_text(TraceEntry("lm:pass 2", 3, 0.5)) == "LM iteration 3: objective 0.5"
    drawn = io.StringIO()
    with Steps(["solve"], enabled=True, stream=drawn, desc="trajectory") as steps:
        steps.start("solve")
        steps.detail(iteration_text(entry))
    assert "IPOPT iteration 12: objective 117.25" in drawn.getvalue()
    hidden = io.StringIO()
    with Steps(["solve"], enabled=False, stream=hidden) as steps:
        steps.start("solve")
        steps.detail("x")
    assert hidden.getvalue() == "" and steps.details == 1


def test_accepted_fallback_exits_0_with_a_note(ur10_urdf, tmp_path):
    pytest.importorskip("cyipopt")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main.main(
            [
                "trajectory",
                str(CONFIG),
                "--urdf",
                str(ur10_urdf),
                "-o",
                str(tmp_path),
                *map(str, TINY),
                "--accept-fallback",
            ]
        )
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[2].startswith("designed 1 segment(s)")
    assert lines[3].startswith(
        "accepted with --accept-fallback: IPOPT did not converge (segment 1: max iterations"
    )
    summary = (tmp_path / "trajectory_summary.yaml").read_text()
    assert "status: max_iterations" in summary
