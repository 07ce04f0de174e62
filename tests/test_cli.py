"""The ``figaroh`` command line: same numbers as the Python API, exit codes, one-line errors.

Truths: the Python API on the same files (UR10Identification of the example,
BaseCalibration), the simulation ground truth (URDF inertias + friction, the
injected calibration errors), exact CSV round trips, and the process itself
(exit code, stderr) run as a subprocess.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, load_example
from figaroh.cli import csv_identification as ci
from figaroh.cli.main import main
from figaroh.cli.progress import Steps
from figaroh.identification._confidence import base_parameter_table

_ur10 = load_example("ur10/identification.py", "ur10_identification")
_ur10_cal = load_example("ur10/calibration.py", "ur10_calibration_example")

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
N = 1500
NOISE = 0.5  # [N·m]


def _run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python -m figaroh.cli ARGS`` as a separate process."""
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run(
        [sys.executable, "-m", "figaroh.cli", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def _in_process(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def _read_params(path: Path) -> tuple[list[str], dict[str, np.ndarray]]:
    """Names and columns of a parameter CSV (numbers as float arrays, the grade as text)."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    names = [r[0] for r in body]
    cols = {
        h: np.array([r[k] if h == "grade" else float(r[k]) for r in body])
        for k, h in enumerate(header)
        if k
    }
    return names, cols


def _assert_one_line_error(proc: subprocess.CompletedProcess, *needles: str) -> None:
    err = proc.stderr.strip()
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert err.count("\n") == 0, err
    assert "Traceback" not in proc.stderr
    assert err.startswith("figaroh "), err
    for needle in needles:
        assert needle in err, err


@pytest.fixture(scope="module")
def ur10(ur10_urdf):
    from figaroh.tools.robot import Robot

    return Robot(str(ur10_urdf), load_geometry=False)


@pytest.fixture(scope="module")
def ident_data(ur10, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_ident")
    train, validation = _ur10.generate_ur10_data(folder / "data", N, NOISE, seed=3, robot=ur10)
    return folder, train, validation


@pytest.fixture(scope="module")
def python_api(ur10, ident_data):
    _, train, validation = ident_data
    ident = _ur10.UR10Identification(ur10, CONFIG, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()):
        ident.solve(plotting=False)  # the defaults of figaroh identify too
    return ident


@pytest.fixture(scope="module")
def cli_run(ident_data, ur10_urdf):
    folder, train, validation = ident_data
    out = folder / "out"
    code, stdout, stderr = _in_process(
        "identify", CONFIG, "--urdf", ur10_urdf, "--data", train,
        "--validation-data", validation, "-o", out, "--rmse-limit", 3 * NOISE,
        "--archive", "-q",
    )  # fmt: skip
    return code, stdout, stderr, out


# ---------------------------------------------------------------------------
# identify
# ---------------------------------------------------------------------------
def test_identify_gives_the_python_api_base_parameters(cli_run, python_api):
    code, stdout, stderr, out = cli_run
    assert code == 0, stderr
    assert stdout == "" and stderr == ""  # --quiet
    names, cols = _read_params(out / "base_parameters.csv")
    assert names == list(python_api.params_base)
    np.testing.assert_allclose(cols["value"], python_api.phi_base, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        cols["std_relative_pct"], python_api.std_relative, rtol=1e-12, atol=1e-12
    )
    # the columns added after the 1.0.2 ones: σ, the 95 % interval and the reports' grade
    assert list(cols)[:2] == ["value", "std_relative_pct"]
    table = base_parameter_table(python_api)
    np.testing.assert_allclose(cols["sigma"], table.column("sigma"), rtol=1e-9)
    np.testing.assert_allclose(cols["ci_low"], table.column("ci_low"), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(cols["ci_high"], table.column("ci_high"), rtol=1e-9, atol=1e-12)
    assert set(cols["confidence_level"]) == {0.95}
    assert list(cols["grade"]) == [r.grade.label for r in table.rows]
    verdict = json.loads((out / "identification_verification.json").read_text())
    assert verdict["scope"] == "prediction" and verdict["passed"] is True


def test_identify_recovers_the_simulated_truth(cli_run, python_api):
    """Independent truth: URDF inertias + the simulated friction, mapped to base parameters."""
    from figaroh.identification.identification_tools import base_param_from_standard

    _, _, _, out = cli_run
    names, cols = _read_params(out / "base_parameters.csv")
    theta = dict(python_api.standard_parameter)
    for j, joint in enumerate(python_api.identif_config["active_joints"]):
        theta[f"fv_{joint}"], theta[f"fs_{joint}"] = _ur10.UR10_FV[j], _ur10.UR10_FS[j]
    truth = np.asarray(base_param_from_standard(theta, names))
    sigma = cols["std_relative_pct"] / 100 * np.abs(cols["value"])
    assert np.max(np.abs(cols["value"] - truth) / sigma) < 5.0


def test_identify_exit_1_when_the_verdict_fails(ident_data, ur10_urdf, tmp_path):
    _, train, validation = ident_data
    code, stdout, _ = _in_process(
        "identify", CONFIG, "--urdf", ur10_urdf, "--data", train,
        "--validation-data", validation, "-o", tmp_path, "--rmse-limit", 0.2 * NOISE,
    )  # fmt: skip
    assert code == 1
    assert "verdict (prediction scope): fail" in stdout
    assert "validation_rmse:elbow_joint" in stdout
    # a prediction verdict without independent data cannot pass either
    code, _, _ = _in_process(
        "identify", CONFIG, "--urdf", ur10_urdf, "--data", train, "-o", tmp_path,
        "--rmse-limit", 10.0, "-q",
    )  # fmt: skip
    assert code == 1


def test_identify_physical_fit_exports_a_consistent_urdf(ident_data, ur10_urdf, tmp_path):
    import pinocchio as pin

    _, train, validation = ident_data
    urdf_out = tmp_path / "ur10_fit.urdf"
    code, _, err = _in_process(
        "identify", CONFIG, "--urdf", ur10_urdf, "--data", train,
        "--validation-data", validation, "-o", tmp_path, "--select-stage", "physical_fit",
        "--export-urdf", urdf_out, "--scope", "execution", "-q",
    )  # fmt: skip
    assert code == 0, err
    names, cols = _read_params(tmp_path / "selected_parameters.csv")
    model = pin.buildModelFromUrdf(str(urdf_out))
    for j in range(1, model.njoints):
        inertia = model.inertias[j]
        assert inertia.mass == pytest.approx(cols["value"][names.index(f"m_{model.names[j]}")])
        # physical consistency of every exported link: positive mass, PSD rotational inertia
        assert inertia.mass > 0
        assert np.linalg.eigvalsh(inertia.inertia).min() > -1e-9


def test_identify_archive_then_report(cli_run):
    _, _, _, out = cli_run
    run_dirs = sorted((out / "runs").glob("*/identification/*"))
    assert len(run_dirs) == 1
    proc = _run("report", run_dirs[0])
    assert proc.returncode == 0, proc.stderr
    assert "verdict      pass (scope prediction" in proc.stdout
    assert run_dirs[0].name in proc.stdout
    listing = _run("report", out / "runs")
    assert listing.returncode == 0 and "1 archived run(s)" in listing.stdout


def test_archived_report_shows_the_cli_verdict(cli_run):
    """The report's verdict panel is the verdict of the command's limits, not verify()'s default."""
    code, _, _, out = cli_run
    assert code == 0
    (run_dir,) = sorted((out / "runs").glob("*/identification/*"))
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    assert '<div class="verdict-panel" data-status="pass">' in html
    assert "validation_rmse:elbow_joint" in html


def test_report_exit_codes(cli_run, tmp_path):
    _, _, _, out = cli_run
    data = json.loads((out / "identification_verification.json").read_text())
    data["passed"], data["status"] = False, "fail"
    data["checks"][0].update(status="fail", passed=False)
    failing = tmp_path / "failing_verification.json"
    failing.write_text(json.dumps(data))
    proc = _run("report", failing)
    assert proc.returncode == 1 and "FAIL" in proc.stdout
    _assert_one_line_error(_run("report", tmp_path / "missing"), "not found")
    _assert_one_line_error(_run("report", tmp_path), "not an archived run")


# ---------------------------------------------------------------------------
# bad input: exit 2, one line, no traceback
# ---------------------------------------------------------------------------
def test_missing_files_give_exit_2_and_one_line(ident_data, ur10_urdf, tmp_path):
    _, train, _ = ident_data
    missing = tmp_path / "nope.yaml"
    _assert_one_line_error(
        _run("identify", missing, "--urdf", ur10_urdf, "--data", train),
        "configuration file not found",
        str(missing),
    )
    _assert_one_line_error(
        _run("identify", CONFIG, "--urdf", tmp_path / "r.urdf", "--data", train),
        "URDF file not found",
    )
    _assert_one_line_error(
        _run("identify", CONFIG, "--urdf", ur10_urdf, "--data", tmp_path / "logs"),
        "trajectory data not found",
    )
    _assert_one_line_error(
        _run("calibrate", CONFIG, "--urdf", ur10_urdf, "--data", tmp_path / "c.csv"),
        "calibration data not found",
    )


@pytest.mark.parametrize(
    "text, needle",
    [
        ("robot: [unclosed\n  name: x\n", "Invalid YAML"),
        (
            f'extends: "{CONFIG}"\ntasks:\n  identification:\n    select_stage: best\n',
            "select_stage",
        ),
        ("identification:\n  robot_params: []\n", "legacy"),
    ],
    ids=["yaml-syntax", "bad-value", "legacy-format"],
)
def test_malformed_config_gives_exit_2_and_one_line(text, needle, ident_data, ur10_urdf, tmp_path):
    _, train, _ = ident_data
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    _assert_one_line_error(
        _run("identify", cfg, "--urdf", ur10_urdf, "--data", train), "invalid configuration", needle
    )


def test_malformed_data_gives_exit_2_and_one_line(ur10_urdf, tmp_path):
    bad = tmp_path / "identification.csv"
    bad.write_text("t,q_shoulder_pan_joint\n0,1\n")
    _assert_one_line_error(
        _run("identify", CONFIG, "--urdf", ur10_urdf, "--data", tmp_path),
        "lacks the columns",
        "tau_shoulder_pan_joint",
    )
    _assert_one_line_error(
        _run("calibrate", CONFIG, "--urdf", ur10_urdf, "--data", bad), "missing columns"
    )
    _assert_one_line_error(
        _run("identify", CONFIG, "--urdf", ur10_urdf, "--data", tmp_path, "--threshold", "x"),
        "NAME=VALUE",
    )
    _assert_one_line_error(  # refused before the fit: the base fit has no link inertials
        _run("identify", CONFIG, "--urdf", ur10_urdf, "--data", tmp_path, "--export-urdf", "x"),
        "select the 'physical_fit' or 'reconstruction' stage",
    )


# ---------------------------------------------------------------------------
# calibrate
# ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def calib_data(ur10, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli_calib")
    train, test, truth = _ur10_cal.simulate_ur10_calibration(
        folder, robot=ur10, n_train=40, n_test=50
    )
    return folder, train, test, truth


def test_calibrate_recovers_the_injected_errors(calib_data, ur10, ur10_urdf, tmp_path):
    import pinocchio as pin

    from figaroh.calibration import calibration_tools as ct
    from figaroh.calibration.base_calibration import BaseCalibration

    _, train, test, truth = calib_data
    code, _, err = _in_process(
        "calibrate", CONFIG, "--urdf", ur10_urdf, "--data", train, "--validation-data", test,
        "--position-limit-mm", 0.01, "--orientation-limit-deg", 0.001,
        "--export-urdf", tmp_path / "ur10_cal.urdf", "-o", tmp_path, "-q",
    )  # fmt: skip
    assert code == 0, err
    names, cols = _read_params(tmp_path / "calibration_parameters.csv")
    assert set(names) == set(truth)
    est = dict(zip(names, cols["value"], strict=True))
    assert max(abs(est[n] - v) for n, v in truth.items()) < 1e-6  # [m, rad]
    assert list(cols)[:2] == ["value", "std_dev"]
    assert {"sigma", "ci_low", "ci_high", "confidence_level", "grade"} <= set(cols)
    np.testing.assert_array_equal(cols["sigma"], cols["std_dev"])
    assert np.all(cols["ci_low"] <= cols["value"]) and np.all(cols["value"] <= cols["ci_high"])
    # the generic path is exactly BaseCalibration on the same file
    ref = BaseCalibration(ur10, str(CONFIG))
    ref.calib_config.update(known_baseframe=False, known_tipframe=False)
    ref.set_data_file(train)
    ref.initialize()
    with contextlib.redirect_stdout(io.StringIO()), pytest.warns(UserWarning):
        ref.solve(enable_logging=False)
    np.testing.assert_allclose(cols["value"], ref.var_, rtol=0, atol=1e-12)
    # the exported URDF + fitted frames reproduce the measured poses
    model = pin.buildModelFromUrdf(str(tmp_path / "ur10_cal.urdf"))
    frames = {n: est[n] for n in ref.metrology_frames()}
    cfg = dict(ref.calib_config, param_name=list(frames))
    poses = ct.evaluate_poses(model, model.createData(), list(frames.values()), ref.q_measured, cfg)
    measured = ref.PEE_measured.reshape(6, -1).T
    assert np.abs(poses.p[:, 0] - measured[:, :3]).max() < 1e-8


def test_calibrate_exit_1_when_the_limit_is_missed(calib_data, ur10_urdf, tmp_path):
    folder, _, _, _ = calib_data
    noisy_train, noisy_test, _ = _ur10_cal.simulate_ur10_calibration(
        folder / "noisy", n_train=40, n_test=50, pos_noise=1e-3, rot_noise=1e-3, seed=5
    )
    code, stdout, _ = _in_process(
        "calibrate", CONFIG, "--urdf", ur10_urdf, "--data", noisy_train,
        "--validation-data", noisy_test, "--position-limit-mm", 0.1,
        "--orientation-limit-deg", 1.0, "-o", tmp_path,
    )  # fmt: skip
    assert code == 1
    assert "failed: position_rmse_mm" in stdout


# ---------------------------------------------------------------------------
# compare, migrate-config, robots
# ---------------------------------------------------------------------------
def test_compare_preloads_both_runs_safely(cli_run, tmp_path):
    _, _, _, out = cli_run
    a = out / "identification_verification.json"
    data = json.loads(a.read_text())
    data["metadata"]["note"] = "</script><script>alert(1)</script>"
    b = tmp_path / "b_verification.json"
    b.write_text(json.dumps(data))
    page = tmp_path / "cmp" / "page.html"
    proc = _run("compare", a, b, "-o", page)
    assert proc.returncode == 0, proc.stderr
    html = page.read_text()
    label = f"{data['metadata']['run_id']} \\u00b7 {data['metadata']['model']['robot_name']}"
    assert f'window.figarohCompare.load("a", "{label} (A)"' in html  # one run twice: A/B
    assert f'window.figarohCompare.load("b", "{label} (B)"' in html
    assert "</script><script>alert(1)" not in html  # "</" is escaped inside the script
    preload = html[html.rindex("<script>\n(function () {") :]
    assert preload.index("</script>") == preload.index("})();\n</script>") + len("})();\n")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    _assert_one_line_error(_run("compare", a, bad, "-o", page), "not valid JSON")
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}')
    _assert_one_line_error(_run("compare", a, other, "-o", page), "not a verification export")


def test_migrate_config(tmp_path, ur10_urdf):
    from figaroh.utils.config_parser import is_unified_config

    old = tmp_path / "legacy.yaml"
    old.write_text(
        "calibration:\n  calib_level: full_params\n  non_geom: False\n  base_frame: universe\n"
        "  tool_frame: wrist_3_link\n  markers:\n    - ref_joint: wrist_3_joint\n"
        "      measure: [True, True, True, True, True, True]\n  free_flyer: False\n"
        "  nb_sample: 29\n  data_file: data/calibration.csv\n"
    )
    new = tmp_path / "unified.yaml"
    proc = _run("migrate-config", old, new, "--urdf", ur10_urdf)
    assert proc.returncode == 0, proc.stderr
    assert is_unified_config(new)
    _assert_one_line_error(_run("migrate-config", tmp_path / "none.yaml", new), "not found")


def test_robots_lists_loadable_urdfs(ur10_urdf):
    proc = _run("robots", "--paths")
    assert proc.returncode == 0, proc.stderr
    paths = proc.stdout.split()
    assert str(ur10_urdf) in paths
    assert all(Path(p).is_file() for p in paths)
    names = _run("robots")
    assert names.returncode == 0, names.stderr
    assert "ur10" in names.stdout.split() or "ur10," in names.stdout
    assert len(names.stdout.splitlines()) < 40  # names by source, not 69 paths


def test_urdf_option_accepts_a_robot_name(ident_data, tmp_path):
    _, train, validation = ident_data
    code, _, err = _in_process(
        "identify", CONFIG, "--urdf", "ur10", "--data", train,
        "--validation-data", validation, "-o", tmp_path, "--scope", "execution", "-q",
    )  # fmt: skip
    assert code == 0, err
    code, _, err = _in_process(
        "identify", CONFIG, "--urdf", "ur1O", "--data", train, "-o", tmp_path / "x", "-q",
    )  # fmt: skip
    assert code == 2 and "ur10" in err


# ---------------------------------------------------------------------------
# CSV layout, progress, cheap import, entry point
# ---------------------------------------------------------------------------
def test_csv_layouts_read_the_same_trajectory(ur10, tmp_path):
    joints = list(_ur10.UR10_JOINTS)
    rng = np.random.default_rng(0)
    t = np.arange(20) * 0.01
    q, dq, ddq, tau = (rng.normal(size=(20, 6)) for _ in range(4))
    path = ci.write_trajectory_csv(tmp_path / "a.csv", joints, t, q, tau, dq=dq, ddq=ddq)
    traj = ci.read_trajectory_csv(path, joints, model=ur10.model)
    for got, want in ((traj.t, t), (traj.q, q), (traj.dq, dq), (traj.ddq, ddq), (traj.effort, tau)):
        np.testing.assert_array_equal(got, want)  # 17 digits: exact round trip
    assert set(traj.effort_unit) == {"N·m"} and traj.clock == "recorded"
    assert list(traj.source.files) == [str(path)]
    # the TrajectoryData.to_csv layout (q:<joint>, metadata line) is read too
    other = tmp_path / "b.csv"
    traj.to_csv(other)
    again = ci.read_trajectory_csv(other, joints, model=ur10.model)
    np.testing.assert_array_equal(again.q, q)
    np.testing.assert_array_equal(again.effort, tau)
    # reversed column order, no t column (clock assumed), a mask column, extra columns
    header = ["mask", "comment"] + [f"tau_{j}" for j in joints] + [f"q_{j}" for j in joints]
    mask = (np.arange(20) % 5 != 0).astype(int)
    rows = np.column_stack([mask, np.zeros(20), tau, q])
    third = tmp_path / "c.csv"
    third.write_text(
        ",".join(header) + "\n" + "\n".join(",".join(repr(float(v)) for v in r) for r in rows)
    )
    traj3 = ci.read_trajectory_csv(third, joints, model=ur10.model, sample_period=0.01)
    np.testing.assert_array_equal(traj3.q, q)
    assert traj3.dq is None and traj3.clock == "assumed"
    np.testing.assert_allclose(traj3.t, t)
    np.testing.assert_array_equal(traj3.mask, mask.astype(bool))


def test_csv_errors_name_the_problem(tmp_path):
    joints = ["a", "b"]
    p = tmp_path / "x.csv"
    p.write_text("t,q_a,q_b,dq_a,tau_a,tau_b\n0,1,2,3,4,5\n0.1,1,2,3,4,5\n")
    with pytest.raises(ValueError, match=r"\['dq_b'\]"):
        ci.read_trajectory_csv(p, joints)
    p.write_text("q_a,q_b,tau_a,tau_b\n1,2,3,4\n")
    with pytest.raises(ValueError, match="no 't' column"):
        ci.read_trajectory_csv(p, joints)
    p.write_text("t,q_a,q_b,tau_a,tau_b\n0,1,2,x,4\n")
    with pytest.raises(ValueError, match="cannot parse"):
        ci.read_trajectory_csv(p, joints)
    (tmp_path / "y.csv").write_text("t\n")
    with pytest.raises(ValueError, match="several CSV files"):
        ci.resolve_csv_path(tmp_path)
    with pytest.raises(FileNotFoundError):
        ci.resolve_csv_path(tmp_path / "missing")


def test_progress_bar_shows_steps_and_quiet_hides_it():
    stream = io.StringIO()
    with Steps(["load", "solve"], enabled=True, stream=stream, desc="identify") as steps:
        steps.start("load")
        steps.start("solve")
    text = stream.getvalue()
    assert "identify: load 0/2" in text and "identify: solve 1/2" in text
    quiet = io.StringIO()
    with Steps(["load"], enabled=False, stream=quiet) as steps:
        steps.start("load")
    assert quiet.getvalue() == "" and steps.done == ["load"]
    # auto mode: no bar on a stream that is not a terminal
    assert Steps(["x"], enabled=None, stream=io.StringIO()).enabled is False


def test_importing_the_cli_is_cheap():
    code = (
        "import sys, figaroh, figaroh.cli.main; "
        "print(sorted(m for m in ('numpy', 'pinocchio', 'scipy') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_console_script_entry_point():
    pyproject = (ROOT / "pyproject.toml").read_text()
    scripts = pyproject.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    assert 'figaroh = "figaroh.cli.main:main"' in scripts.splitlines()
    proc = _run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("figaroh ")
    exe = Path(sys.executable).with_name("figaroh")
    if exe.exists():  # installed by `pip install -e .`
        out = subprocess.run([str(exe), "--help"], capture_output=True, text=True)
        assert out.returncode == 0 and "identify" in out.stdout


def test_csv_validation_source_resolves_beside_the_config(ur10, ident_data, tmp_path, monkeypatch):
    """A relative held-out path in a config means "next to the YAML" unless it exists here."""
    _, train, validation = ident_data
    ident = ci.CSVIdentification(ur10, CONFIG, data_dir=train)
    beside = Path(os.path.relpath(validation, CONFIG.parent))
    # a working directory deeper than the path climbs, so its ".." parts stay inside it
    here = tmp_path.joinpath(*[f"d{i}" for i in range(beside.parts.count("..") + 1)])
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    assert not beside.exists()  # not reachable from the current directory
    resolved = Path(ident.resolve_validation_source(str(beside)))
    assert resolved.resolve() == Path(validation).resolve()
    # a path that exists from the current directory is kept as typed
    (here / "held.csv").write_text("x")
    assert ident.resolve_validation_source("held.csv") == "held.csv"
    # a name that exists nowhere is passed on unchanged (the loader reports it)
    assert ident.resolve_validation_source("no_such_log") == "no_such_log"
