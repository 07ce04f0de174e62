"""The drift report's window: ``since`` and ``last N`` sessions selected with SQL.

* :func:`read_window` returns exactly the rows a full read of the index,
  filtered in Python, keeps — for ``since`` (times with ``Z``, ``+00:00``,
  other offsets and naive), ``last N`` sessions, ``task``, ``names`` and
  their combinations;
* the query walks the window's runs and reads their parameters by primary
  key (no scan of the parameters table);
* each run's base-parameter structure comes from all its names, also when
  ``names`` narrows the values;
* ``drift_report`` / ``figaroh fleet report`` with ``--since`` / ``--last``
  judge only the window (a spike before it is not flagged).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone

import pytest

from figaroh.cli.main import main
from figaroh.fleet import history_window
from figaroh.fleet.drift import DriftInputError, drift_report
from figaroh.fleet.history_window import WindowError, read_window, unknown_names
from figaroh.fleet.parameter_identity import run_structures
from figaroh.fleet.record import ParameterEstimate, RunRecord
from figaroh.fleet.run_index import RunIndex, index_path

#: Session → time of each robot's run (different spellings of UTC, other offsets, naive).
TIMES = {
    "s0": "2026-03-01T02:00:00Z",
    "s1": "2026-03-02T04:00:00+02:00",  # 02:00 UTC
    "s2": "2026-03-03T02:00:00",  # naive: UTC
    "s3": "2026-03-04T02:00:00+00:00",
    "s4": "2026-03-04T23:30:00-03:00",  # 2026-03-05T02:30 UTC
    "s5": "2026-03-06T02:00:00Z",
}
ROBOTS = ("r0", "r1", "r2", "r3", "r4", "r5")


def epoch(text) -> float:
    moment = text if isinstance(text, datetime) else datetime.fromisoformat(str(text))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def record(robot, session, params, task="identification", time=None):
    run = f"{robot}-{session}-{task[:3]}"
    return RunRecord(
        run_id=run,
        job_id=run,
        robot_id=robot,
        task=task,
        session=session,
        session_time=time or TIMES[session],
        started="2026-03-01T08:00:00+00:00",
        finished="2026-03-01T08:01:00+00:00",
        config_sha256="0" * 64,
        data_sha256={},
        verdict_status="pass",
        passed=True,
        metrics={},
        parameters=tuple(ParameterEstimate(n, v, s) for n, v, s in params),
    )


def fill(index: RunIndex) -> None:
    """6 robots × 6 sessions; r1's friction spikes in s1 only; r5 has its own structure."""
    for r, robot in enumerate(ROBOTS):
        coef = "0.4" if robot == "r5" else "0.5723"
        for k, session in enumerate(TIMES):
            if robot == "r4" and session == "s2":
                continue  # a missed night
            fs = 4.0 + 0.001 * r + (1.0 if (robot == "r1" and session == "s1") else 0.0)
            index.add(
                record(
                    robot,
                    session,
                    [
                        ("fs_elbow_joint", fs, 0.01),
                        ("fv_elbow_joint", 2.0 + 0.001 * k, 0.01),
                        ("Ixx_elbow_joint", 0.5, 0.001),
                        (f"Iyz_elbow_joint - {coef}*my_wrist_1_joint", 0.3, 0.001),
                    ],
                )
            )
    index.add(record("r0", "s5", [("d_px_1", 0.001, 1e-4)], task="calibration"))


@pytest.fixture
def index(tmp_path):
    with RunIndex(index_path(tmp_path / "archive")) as idx:
        fill(idx)
        yield idx


def as_rows(points):
    return [
        (p.robot_id, p.run_id, p.session, p.session_time, p.name, p.value, p.sigma) for p in points
    ]


def python_window(index, *, names=None, task=None, since=None, last=None):
    """The window computed from a full read of the index, in Python."""
    runs = [r for r in index.runs() if task is None or r.task == task]
    if since is not None:
        runs = [r for r in runs if epoch(r.session_time) >= epoch(since)]
    if last is not None:
        first: dict[str, float] = {}
        for r in runs:
            first[r.session] = min(first.get(r.session, float("inf")), epoch(r.session_time))
        recent = sorted(first, key=lambda s: (first[s], s), reverse=True)[:last]
        runs = [r for r in runs if r.session in recent]
    keep = {r.run_id for r in runs}
    full = index.parameter_history(None)
    return [p for p in full if p.run_id in keep and (names is None or p.name in names)], keep


WINDOWS = [
    {},
    {"since": "2026-03-03T02:00:00Z"},
    {"since": "2026-03-03T02:00:00+00:00"},
    {"since": "2026-03-03T05:00:00+03:00"},  # 02:00 UTC
    {"since": datetime(2026, 3, 4, 3, 0)},  # naive: UTC, between s3 and s4
    {"since": datetime(2026, 3, 5, 2, 30, tzinfo=timezone.utc)},  # exactly s4
    {"last": 1},
    {"last": 2},
    {"last": 3},
    {"last": 6},
    {"last": 99},
    {"last": 2, "since": "2026-03-02T00:00:00Z"},
    {"last": 1, "task": "calibration"},
    {"task": "identification", "since": "2026-03-05T00:00:00Z"},
    {"names": ["fs_elbow_joint"], "last": 3},
    {"names": ["Ixx_elbow_joint", "d_px_1"], "since": "2026-03-04"},
]


@pytest.mark.parametrize(
    "window", WINDOWS, ids=lambda w: ",".join(f"{k}={v}" for k, v in w.items())
)
def test_the_window_is_exactly_the_python_filtered_history(index, window):
    got = read_window(index, **window)
    expected, runs = python_window(index, **window)
    assert sorted(as_rows(got.points)) == sorted(as_rows(expected))
    assert as_rows(got.points) == sorted(
        as_rows(got.points), key=lambda r: (r[4], r[0], r[3], r[1])
    )
    # every run's structure comes from all its names, whatever ``names`` reads
    all_names: dict[str, list[str]] = {}
    for p in index.parameter_history(None):
        all_names.setdefault(p.run_id, []).append(p.name)
    assert dict(got.structures) == run_structures({r: all_names[r] for r in runs})
    sessions = {r.session for r in index.runs() if r.run_id in runs}
    assert list(got.sessions) == sorted(sessions, key=lambda s: epoch(TIMES[s]))


def test_the_window_reads_parameters_by_primary_key(index, monkeypatch):
    statements: list[str] = []
    connect = history_window._connect

    def traced(path):
        conn = connect(path)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(history_window, "_connect", traced)
    read_window(index, last=2, names=["fs_elbow_joint"])
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 3
    with sqlite3.connect(index.path) as conn:
        for sql in selects:
            plan = " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql))
            assert "SCAN p" not in plan and "SCAN parameters" not in plan, plan
            if "parameters" in sql:
                assert "SEARCH p USING" in plan, plan


def test_structures_separate_the_robot_with_its_own_trajectory(index):
    window = read_window(index, names=["Ixx_elbow_joint"], last=2)
    structures = {window.structures[p.run_id] for p in window.points}
    assert len(structures) == 2  # r5's regrouping differs from the others'
    report = drift_report(index, names=["Ixx_elbow_joint"])
    assert sorted(len(p.robots) for p in report.parameters) == [1, 5]


def test_unknown_names(index):
    assert unknown_names(index, ["fs_elbow_joint", "nope", "d_px_1"]) == ["nope"]
    assert unknown_names(index, ["d_px_1"], task="identification") == ["d_px_1"]
    assert unknown_names(index.path, ["d_px_1"], task="calibration") == []


def test_bad_windows(index, tmp_path):
    with pytest.raises(WindowError, match="last must be"):
        read_window(index, last=0)
    with pytest.raises(WindowError, match="ISO-8601"):
        read_window(index, since="last tuesday")
    with pytest.raises(WindowError, match="not one string"):
        read_window(index, names="fs_elbow_joint")
    with pytest.raises(WindowError, match="no run index"):
        read_window(tmp_path / "missing.sqlite")


def test_a_spike_before_the_window_is_not_flagged(index):
    full = drift_report(index, task="identification")
    assert full.flagged_robots == ("r1",) and full.window == "all sessions"
    assert {f.name for f in full.flags} == {"fs_elbow_joint"}
    for window in ({"last": 3}, {"since": "2026-03-03T00:00:00Z"}):
        report = drift_report(index, task="identification", **window)
        assert report.flagged_robots == ()
        assert {p.session for par in report.parameters for v in par.robots.values() for p in v} <= {
            "s2",
            "s3",
            "s4",
            "s5",
        }
    assert drift_report(index, last=3).window == "last 3 sessions"
    assert drift_report(index, last=1, since="2026-03-01").window == (
        "last 1 session, since 2026-03-01T00:00:00+00:00"
    )
    with pytest.raises(DriftInputError, match="last must be"):
        drift_report(index, last=-2)


def test_cli_report_window(index, tmp_path, capsys):
    archive = index.path.parent
    page = tmp_path / "drift.html"
    base = ["fleet", "report", "--archive", str(archive), "--task", "identification"]
    assert main([*base, "-o", str(page)]) == 1
    out = capsys.readouterr().out
    assert "flagged robots: r1" in out and "false-discovery rate 0.05; all sessions" in out
    assert main([*base, "--last", "3", "-o", str(page)]) == 0
    out = capsys.readouterr().out
    assert "flagged robots: none" in out and "last 3 sessions" in out
    assert 'data-window="last 3 sessions"' in page.read_text(encoding="utf-8")
    assert main([*base, "--since", "2026-03-03", "-o", str(page)]) == 0
    assert "since 2026-03-03T00:00:00+00:00" in capsys.readouterr().out
    assert main([*base, "--k", "3", "-o", str(page)]) == 1
    assert "(k = 3; all sessions)" in capsys.readouterr().out
    assert main([*base, "--q", "0.01", "--last", "2", "-o", str(page)]) == 0
    assert "false-discovery rate 0.01; last 2 sessions" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--last", "0"], "--last"),
        (["--since", "someday"], "ISO-8601"),
        (["--q", "1.5"], "q must be"),
        (["--q", "0.05", "--k", "3"], "not allowed with argument"),
    ],
)
def test_cli_report_bad_window(index, tmp_path, capsys, args, message):
    archive = index.path.parent
    code = main(
        ["fleet", "report", "--archive", str(archive), "-o", str(tmp_path / "d.html"), *args]
    )
    assert code == 2 and message in capsys.readouterr().err
