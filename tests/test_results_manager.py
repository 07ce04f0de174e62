"""ResultsManager: file round trips, atomic non-clobbering saves, headless plots."""

from __future__ import annotations

import csv
import dataclasses
import enum
import json
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import yaml

matplotlib.use("Agg")

import matplotlib.image as mpimg  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from figaroh.utils import results_manager as rm  # noqa: E402
from figaroh.utils.error_handling import FigarohExampleError  # noqa: E402
from figaroh.utils.results_manager import (  # noqa: E402
    InvalidResultsError,
    ResultsManager,
    ResultsManagerError,
    _per_joint_columns,
    plot_with_fallback,
)

JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint"]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------
# fixtures
# ---------------------------------------------------------------------------


@pytest.fixture
def ident_results() -> dict:
    """An identification result built like BaseIdentification._store_results.

    Stacked joint-major efforts τ = W φ + noise for 3 joints × 80 samples, φ̂ by
    least squares, relative std devs and condition number computed from W.
    """
    rng = np.random.default_rng(7)
    n_j, n_s, n_b = len(JOINTS), 80, 6
    W = rng.normal(size=(n_j * n_s, n_b))
    phi = np.array([1.5, -0.3, 0.02, 4.0, 0.7, -2.2])
    tau = W @ phi + 0.05 * rng.normal(size=n_j * n_s)
    phi_hat, *_ = np.linalg.lstsq(W, tau, rcond=None)
    tau_est = W @ phi_hat
    sigma2 = np.sum((tau - tau_est) ** 2) / (W.shape[0] - n_b)
    std_pct = np.round(100 * np.sqrt(np.diag(sigma2 * np.linalg.inv(W.T @ W))) / np.abs(phi_hat), 2)
    names = ["m1", "mx2 + 0.5*m3", "Izz3", "fv1", "fs2", "off3"]
    rmse = float(np.sqrt(np.mean((tau - tau_est) ** 2)))
    return {
        "base regressor": W,
        "base parameters": dict(zip(names, phi_hat.tolist(), strict=True)),
        "base parameters values": phi_hat,
        "base parameters names": names,
        "condition number": np.linalg.cond(W),
        "torque estimated": tau_est,
        "torque processed": tau,
        "std dev of estimated param": std_pct,
        "effort rmse": rmse,
        "rmse norm (N/m)": rmse,
        "num samples": 800,
        "identification config": {
            "active_joints": JOINTS,
            "sampling_frequency": 100.0,
            "has_friction": True,
            "cutoff_frequency_butterworth": 5.0,
        },
        "task type": "identification",
        "stages": [{"stage": "fit", "status": "ok", "reason": "", "metrics": {}}],
        "validation_metrics": {
            "effort_rmse": 0.061,
            "per_joint_rmse": {j: 0.05 + 0.01 * i for i, j in enumerate(JOINTS)},
            "r2_elbow": float("nan"),
            "n_samples": 40,
        },
    }


@pytest.fixture
def manager(ident_results) -> ResultsManager:
    return ResultsManager("identification", "ur10", ident_results)


@pytest.fixture
def no_show(monkeypatch):
    """Fail the test if plt.show() is called (it would block in a script)."""

    def _show(*_a, **_k):
        raise AssertionError("plt.show() must not be called without a display")

    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(plt, "show", _show)
    plt.close("all")  # figures another test left open are not this test's
    yield
    assert plt.get_fignums() == [], "figures were left open"


def _read_csv(path: str) -> dict[str, list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    return {name: [r[i] for r in body if r[i] != ""] for i, name in enumerate(header)}


# ---------------------------------------------------------------------------
# construction
# ---------------------------------------------------------------------------


def test_constructor_validates_task_type_and_keeps_reference(ident_results):
    with pytest.raises(AssertionError, match="task_type must be one of"):
        ResultsManager("dynamics", "ur10")
    with pytest.raises(AssertionError, match="task type"):
        ResultsManager("calibration", "ur10", ident_results)
    with pytest.raises(InvalidResultsError, match="results_data must be a dict"):
        ResultsManager("identification", "ur10", [1, 2])
    m = ResultsManager("IDENTIFICATION", "ur10", ident_results)
    assert m.task_type == "identification"
    assert m.result is ident_results  # later updates by the task are visible
    ident_results["stages"] = []
    assert m.result["stages"] == []
    empty: dict = {}
    assert ResultsManager("calibration", results_data=empty).result is empty
    text = repr(m)
    assert "identification" in text and "ur10" in text and f"n_entries={len(ident_results)}" in text


def test_class_constants():
    assert set(ResultsManager.COLORS) == {
        "measured",
        "identified",
        "calibrated",
        "optimal",
        "reference",
        "residual",
    }
    assert ResultsManager.PLOT_STYLES["identification"]["figsize"] == (12, 8)
    assert ResultsManager.PLOT_STYLES["calibration"]["figsize"] == (14, 10)
    assert ResultsManager.PLOT_STYLES["optimal_calibration"]["figsize"] == (10, 8)
    assert ResultsManager.PLOT_STYLES["optimal_trajectory"]["figsize"] == (15, 10)
    assert all(s["dpi"] == 100 for s in ResultsManager.PLOT_STYLES.values())


def test_module_import_does_not_import_matplotlib():
    code = "import sys, figaroh.utils.results_manager; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------
# saving: round trips
# ---------------------------------------------------------------------------


def test_save_yaml_csv_npz_round_trip(manager, ident_results, tmp_path):
    saved = manager.save_results(output_dir=tmp_path, save_formats=["yaml", "csv", "npz"])
    assert set(saved) == {"yaml", "csv", "npz", "metadata"}
    for path in saved.values():
        assert Path(path).parent == tmp_path and Path(path).is_file()
    assert Path(saved["yaml"]).name.startswith("ur10_identification_")

    phi = ident_results["base parameters values"]
    names = ident_results["base parameters names"]

    # YAML: exact floats, names, nested config, NaN kept as .nan
    with open(saved["yaml"], encoding="utf-8") as fh:
        y = yaml.safe_load(fh)
    assert y["base parameters names"] == names
    assert y["base parameters values"] == phi.tolist()
    for per_sample in ("torque processed", "torque estimated", "base regressor"):
        assert per_sample not in y  # per-sample arrays: NPZ only, on request
    assert y["condition number"] == float(ident_results["condition number"])
    assert y["base parameters"] == dict(zip(names, phi.tolist(), strict=True))
    assert y["identification config"] == ident_results["identification config"]
    assert y["num samples"] == 800 and y["task type"] == "identification"
    assert y["stages"] == ident_results["stages"]
    vm = y["validation_metrics"]
    assert math.isnan(vm["r2_elbow"])
    assert vm["per_joint_rmse"] == ident_results["validation_metrics"]["per_joint_rmse"]

    # CSV: 1-D columns, 2-D split into <key>_<i>, scalars one-element, exact floats
    cols = _read_csv(saved["csv"])
    assert cols["base parameters names"] == names
    assert [float(x) for x in cols["base parameters values"]] == phi.tolist()
    assert [float(x) for x in cols["std dev of estimated param"]] == (
        ident_results["std dev of estimated param"].tolist()
    )
    assert not [c for c in cols if c.startswith(("torque", "base regressor"))]
    assert [float(x) for x in cols["rmse norm (N/m)"]] == [ident_results["rmse norm (N/m)"]]
    assert cols["num samples"] == ["800"] and cols["task type"] == ["identification"]
    assert "identification config" not in cols and "validation_metrics" not in cols

    # NPZ: pickle-free, arrays exact, mappings as JSON text
    with np.load(saved["npz"], allow_pickle=False) as z:
        assert np.array_equal(z["base parameters values"], phi)
        assert "base regressor" not in z.files and "torque processed" not in z.files
        assert z["base parameters names"].tolist() == names
        assert float(z["rmse norm (N/m)"]) == ident_results["rmse norm (N/m)"]
        assert int(z["num samples"]) == 800
        assert (
            json.loads(str(z["identification config"])) == (ident_results["identification config"])
        )
        assert json.loads(str(z["validation_metrics"]))["r2_elbow"] is None


def test_metadata_contents(manager, ident_results, tmp_path):
    saved = manager.save_results(output_dir=tmp_path)  # default formats yaml + csv
    assert set(saved) == {"yaml", "csv", "metadata"}
    with open(saved["metadata"], encoding="utf-8") as fh:
        meta = yaml.safe_load(fh)
    assert meta["task_type"] == "identification" and meta["robot_name"] == "ur10"
    assert meta["files"] == {k: Path(v).name for k, v in saved.items() if k != "metadata"}
    W = ident_results["base regressor"]
    assert meta["data_shapes"]["base regressor"] == {"shape": list(W.shape), "dtype": "float64"}
    tau = ident_results["torque processed"]
    st = meta["summary_statistics"]["torque processed"]
    assert st == {
        "mean": float(tau.mean()),
        "std": float(tau.std()),
        "min": float(tau.min()),
        "max": float(tau.max()),
    }


def test_json_format_is_strict_and_nan_becomes_null(manager, tmp_path):
    saved = manager.save_results(output_dir=tmp_path, save_formats=["json"])
    text = Path(saved["json"]).read_text(encoding="utf-8")

    def reject(token):
        raise AssertionError(f"non-standard JSON token {token}")

    data = json.loads(text, parse_constant=reject)
    assert data["validation_metrics"]["r2_elbow"] is None
    assert data["base parameters names"] == manager.result["base parameters names"]


def test_unknown_objects_are_saved_as_text(tmp_path):
    class Opaque:
        def __str__(self) -> str:
            return "opaque-object"

    m = ResultsManager("calibration", "tiago", {"obj": Opaque(), "x": np.arange(3.0)})
    saved = m.save_results(output_dir=tmp_path, save_formats=["yaml", "json", "npz"])
    assert yaml.safe_load(Path(saved["yaml"]).read_text())["obj"] == "opaque-object"
    assert json.loads(Path(saved["json"]).read_text())["obj"] == "opaque-object"


def test_module_save_results_positional_call_like_optimal_calibration(tmp_path):
    results = {
        "optimal_configurations": {"q": [[0.1, 0.2], [0.3, 0.4]]},
        "selected_weights": {"0": 0.7, "3": 0.3},
        "minimum_configurations": 2,
        "calibration_config": {"NbSample": 10},
        "condition_number": 3.2,
    }
    saved = ResultsManager("optimal_calibration", "tiago").save_results(
        results, tmp_path, save_formats=["yaml", "csv"]
    )
    assert yaml.safe_load(Path(saved["yaml"]).read_text()) == results
    saved2 = rm.save_results(results, "optimal_calibration", tmp_path, robot_name="tiago")
    assert saved2["yaml"] != saved["yaml"]


# ---------------------------------------------------------------------------
# saving: errors, no clobbering, atomicity
# ---------------------------------------------------------------------------


def test_empty_results_and_bad_arguments(tmp_path, caplog):
    m = ResultsManager("identification", "ur10")
    with caplog.at_level(logging.ERROR, logger=rm.__name__):
        assert m.save_results(output_dir=tmp_path) == {}
    assert "No results to save" in caplog.text
    m.result["x"] = np.ones(3)
    with pytest.raises(ResultsManagerError, match="unsupported format.*'xml'"):
        m.save_results(output_dir=tmp_path / "new", save_formats=["yaml", "xml"])
    assert not (tmp_path / "new").exists()
    err = pytest.raises(ResultsManagerError, m.save_results, output_dir=tmp_path, file_prefix="a/b")
    assert isinstance(err.value, FigarohExampleError) and isinstance(err.value, ValueError)


def test_second_save_never_overwrites(manager, tmp_path, monkeypatch):
    first = manager.save_results(output_dir=tmp_path, file_prefix="run", save_formats=["yaml"])
    before = Path(first["yaml"]).read_bytes()
    manager.result["num samples"] = 999
    second = manager.save_results(output_dir=tmp_path, file_prefix="run", save_formats=["yaml"])
    assert Path(first["yaml"]).name == "run.yaml"
    assert Path(second["yaml"]).name == "run_1.yaml"
    assert Path(second["metadata"]).name == "run_1_metadata.yaml"
    assert Path(first["yaml"]).read_bytes() == before
    assert yaml.safe_load(Path(second["yaml"]).read_text())["num samples"] == 999

    # Default (timestamped) names within the same second get a numbered suffix.
    monkeypatch.setattr(rm, "_timestamp", lambda: "20240101_000000")
    a = manager.save_results(output_dir=tmp_path, save_formats=["csv"])
    b = manager.save_results(output_dir=tmp_path, save_formats=["csv"])
    assert Path(a["csv"]).name == "ur10_identification_20240101_000000.csv"
    assert Path(b["csv"]).name == "ur10_identification_20240101_000000_1.csv"


def test_crash_during_write_leaves_no_partial_file(manager, tmp_path, monkeypatch):
    def broken_dump(data, stream=None, **kw):
        stream.write("base parameters values:\n- 1.0\n- ")  # half-written document
        raise OSError("disk full")

    monkeypatch.setattr(yaml, "dump", broken_dump)
    with pytest.raises(FigarohExampleError, match="Failed to save results: disk full"):
        manager.save_results(output_dir=tmp_path, save_formats=["yaml", "csv"])
    assert list(tmp_path.iterdir()) == []


def test_crash_in_later_format_rolls_back_the_call(manager, tmp_path, monkeypatch):
    kept = manager.save_results(output_dir=tmp_path, file_prefix="good", save_formats=["yaml"])
    kept_files = sorted(p.name for p in tmp_path.iterdir())
    real = np.lib.format.write_array
    calls = []

    def flaky(fp, array, *a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("interrupted")
        return real(fp, array, *a, **k)

    monkeypatch.setattr(np.lib.format, "write_array", flaky)
    with pytest.raises(FigarohExampleError, match="interrupted"):
        manager.save_results(output_dir=tmp_path, save_formats=["yaml", "csv", "npz"])
    assert sorted(p.name for p in tmp_path.iterdir()) == kept_files
    assert yaml.safe_load(Path(kept["yaml"]).read_text())["num samples"] == 800


def test_failed_rename_removes_temporary_file(manager, tmp_path, monkeypatch):
    def no_replace(src, dst):
        raise PermissionError("read-only destination")

    monkeypatch.setattr(rm.os, "replace", no_replace)
    with pytest.raises(FigarohExampleError, match="read-only"):
        manager.save_results(output_dir=tmp_path, save_formats=["npz"])
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------
# _convert_for_serialization
# ---------------------------------------------------------------------------


class _Mode(enum.Enum):
    FAST = "fast"


@dataclasses.dataclass
class _Verdict:
    passed: np.bool_
    metrics: dict
    limits: tuple


def test_convert_for_serialization_is_strict_json():
    data = {
        "arr": np.array([[1.0, np.nan], [np.inf, -2.5]]),
        "ints": np.arange(3),
        "i64": np.int64(7),
        "f32": np.float32(0.5),
        "flag": np.bool_(True),
        "tuple": (1, np.float64(2.0)),
        "set": {3, 1, 2},
        "path": Path("/tmp/x.yaml"),
        "mode": _Mode.FAST,
        "verdict": _Verdict(np.bool_(False), {"rmse": np.float64(-np.inf)}, (0.1, 0.2)),
        np.int64(4): "numpy key",
        "nested": [{"a": np.array([1, 2])}, None, "s"],
        "nan": float("nan"),
    }
    out = ResultsManager._convert_for_serialization(data)
    text = json.dumps(out, allow_nan=False)
    assert json.loads(text) == json.loads(json.dumps(out))
    assert out["arr"] == [[1.0, None], [None, -2.5]]
    assert out["ints"] == [0, 1, 2]
    assert out["i64"] == 7.0 and isinstance(out["i64"], float)  # upstream: numpy int → float
    assert out["f32"] == 0.5 and type(out["f32"]) is float
    assert out["flag"] is True
    assert out["tuple"] == [1, 2.0]
    assert out["set"] == [1, 2, 3]
    assert out["path"] == "/tmp/x.yaml"
    assert out["mode"] == "fast"
    assert out["verdict"] == {"passed": False, "metrics": {"rmse": None}, "limits": [0.1, 0.2]}
    assert out[4] == "numpy key" and type(next(k for k in out if k == 4)) is int
    assert out["nested"] == [{"a": [1, 2]}, None, "s"]
    assert out["nan"] is None
    # "keep" leaves non-finite floats for YAML; unknown objects are returned unchanged
    kept = ResultsManager._convert_for_serialization({"x": np.float64(np.nan)}, non_finite="keep")
    assert math.isnan(kept["x"])
    sentinel = object()
    assert ResultsManager._convert_for_serialization([sentinel])[0] is sentinel
    m = ResultsManager("identification")
    assert m._convert_for_serialization({"v": np.float64(1.5)}) == {"v": 1.5}


# ---------------------------------------------------------------------------
# plotting
# ---------------------------------------------------------------------------


def test_per_joint_columns_follow_joint_major_stacking():
    blocks = [np.arange(5.0) + 10 * j for j in range(3)]
    cols = _per_joint_columns(np.concatenate(blocks), 3)
    assert cols.shape == (5, 3)
    for j in range(3):
        assert np.array_equal(cols[:, j], blocks[j])
    with pytest.raises(ValueError, match="not a multiple of n_joints=4"):
        _per_joint_columns(np.arange(15.0), 4)


def test_identification_plots_written_as_png_headless(manager, tmp_path, no_show):
    assert rm._is_headless()
    paths = manager.plot_identification_results(
        n_joints=len(JOINTS), joint_names=JOINTS, output_dir=tmp_path, file_prefix="ur10"
    )
    assert [Path(p).name for p in paths] == ["ur10_torques.png", "ur10_parameters.png"]
    for p in paths:
        assert Path(p).read_bytes()[:8] == PNG_MAGIC
    img = mpimg.imread(paths[0])
    assert img.shape[:2] == (800, 1200)  # 12×8 in at 100 dpi
    # a second call does not overwrite the first figures
    again = manager.plot_identification_results(
        n_joints=3, joint_names=JOINTS, output_dir=tmp_path, file_prefix="ur10"
    )
    assert [Path(p).name for p in again] == ["ur10_torques_1.png", "ur10_parameters_1.png"]


def test_identification_plot_panels_hold_each_joint_block(manager, ident_results, monkeypatch):
    captured = {}

    def fake_finish(self, plt_, figures, output_dir, file_prefix, show):
        captured.update(dict(figures))
        return []

    monkeypatch.setattr(ResultsManager, "_finish", fake_finish)
    manager.plot_identification_results(n_joints=3, joint_names=JOINTS)
    fig = captured["torques"]
    try:
        tau = ident_results["torque processed"].reshape(3, -1)
        est = ident_results["torque estimated"].reshape(3, -1)
        axes = np.array(fig.axes).reshape(3, 2)
        for j in range(3):
            assert np.array_equal(axes[j, 0].lines[0].get_ydata(), tau[j])
            assert np.array_equal(axes[j, 0].lines[1].get_ydata(), est[j])
            assert np.allclose(axes[j, 1].lines[0].get_ydata(), tau[j] - est[j])
            assert JOINTS[j] in axes[j, 0].get_ylabel()
        cond = ident_results["condition number"]
        assert f"Condition: {cond:.2e}" in fig._suptitle.get_text()
        title = fig._suptitle.get_text()
        assert f"RMSE: {ident_results['rmse norm (N/m)']:.6f} N·m (training set)" in title
        bars = captured["parameters"].axes[0].patches
        heights = [b.get_height() for b in bars]
        assert np.allclose(heights, ident_results["base parameters values"])
    finally:
        plt.close("all")


def test_identification_plot_errors_are_logged_not_raised(tmp_path, caplog, no_show):
    m = ResultsManager("identification", "ur10")
    with caplog.at_level(logging.ERROR, logger=rm.__name__):
        out = m.plot_identification_results(
            np.ones(12), np.ones(10), n_joints=2, output_dir=tmp_path
        )
    assert out == [] and "tau_identified" in caplog.text
    with pytest.raises(ValueError, match="not a multiple of n_joints=5"):
        m.plot_identification_results(
            np.ones(12), np.ones(12), n_joints=5, output_dir=tmp_path, raise_errors=True
        )
    assert list(tmp_path.iterdir()) == []


def test_interactive_backend_shows_and_writes_only_when_asked(manager, tmp_path, monkeypatch):
    shown = []
    from figaroh._run import result_plots

    monkeypatch.setattr(result_plots, "_is_headless", lambda: False)
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(1))
    monkeypatch.chdir(tmp_path)
    try:
        out = manager.plot_identification_results(n_joints=3)
        assert out == [] and shown == [1]
        assert list(tmp_path.iterdir()) == []
        folder = tmp_path / "figs"
        out = manager.plot_identification_results(n_joints=3, output_dir=folder)
        assert shown == [1, 1] and sorted(os.listdir(folder)) == sorted(Path(p).name for p in out)
        assert len(out) == 2
    finally:
        plt.close("all")


def _plot_every_method(tmp_path):
    """Call every ResultsManager plotting method (and the module helpers) once.

    Returns ``[(name, returned paths, manager.last_figures or None)]``.
    """
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 1.0, 20)
    pee = rng.normal(size=(3, 10))
    ident = ResultsManager("identification", "arm")
    cal = ResultsManager(
        "calibration",
        "arm",
        {
            "PEE measured (2D array)": pee,
            "PEE estimated (2D array)": pee + 1e-3,
            "rms residuals by samples": np.abs(rng.normal(size=(1, 10))),
            "calibrated parameters values": [0.1, 0.2],
            "calibrated parameters names": ["a", "b"],
        },
    )
    oc = ResultsManager("optimal_calibration", "arm")
    ot = ResultsManager("optimal_trajectory", "arm")
    calls = [
        (
            "identification",
            ident,
            lambda: ident.plot_identification_results(
                np.arange(40.0), np.arange(40.0) + 0.1, [1.0, 2.0], ["p1", "p2"], n_joints=2
            ),
        ),
        ("calibration", cal, lambda: cal.plot_calibration_results()),
        (
            "optimal_calibration",
            oc,
            lambda: oc.plot_optimal_calibration_results(
                {"q": np.zeros((3, 2))}, rng.uniform(size=6), condition_numbers=[3.0, 2.0]
            ),
        ),
        (
            "optimal_trajectory",
            ot,
            lambda: ot.plot_optimal_trajectory_results({"q": np.outer(t, [1.0, 2.0])}, 4.0),
        ),
        (
            "module identification",
            None,
            lambda: rm.plot_identification_results(np.arange(10.0), np.arange(10.0), n_joints=2),
        ),
        (
            "module calibration",
            None,
            lambda: rm.plot_calibration_results(residuals=np.ones((1, 5))),
        ),
    ]
    return [(name, call(), None if m is None else m.last_figures) for name, m, call in calls]


def test_headless_plots_draw_into_figures_and_write_no_file(tmp_path, monkeypatch):
    """Agg, no output_dir: every plotting call draws (figures open, lines/bars present) and
    writes nothing in the working directory (figaroh 1.0.2 wrote no file either)."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("plt.show() without display"))
    monkeypatch.chdir(tmp_path)
    plt.close("all")
    try:
        results = _plot_every_method(tmp_path)
        for name, paths, figures in results:
            assert paths == [], name
            if figures is not None:
                assert figures, name
                for kind, fig in figures.items():
                    assert plt.fignum_exists(fig.number), (name, kind)
                    assert any(ax.lines or ax.patches for ax in fig.axes), (name, kind)
        assert len(plt.get_fignums()) == 2 + 3 + 1 + 1 + 1 + 1  # every figure stays open
        assert list(tmp_path.iterdir()) == []
    finally:
        plt.close("all")


def test_headless_plots_write_pngs_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(plt, "show", lambda *a, **k: pytest.fail("plt.show() without display"))
    monkeypatch.chdir(tmp_path)
    m = ResultsManager("optimal_trajectory", "arm")
    t = np.linspace(0.0, 1.0, 20)
    paths = m.plot_optimal_trajectory_results({"q": np.outer(t, [1.0])}, 1.0, output_dir="out")
    assert [Path(p).parent.name for p in paths] == ["out"]
    assert Path(paths[0]).read_bytes()[:8] == PNG_MAGIC
    assert sorted(os.listdir(tmp_path)) == ["out"]
    assert not plt.fignum_exists(m.last_figures["trajectory"].number)  # written, then closed


def _segment_layout(n_segments=2, t_s=1.0, n_wps=3, freq=10, nq=7, nv=6):
    """Exactly what BaseOptimalTrajectory.results holds after solve(): per segment
    T_F (Ns, 1) [s] starting at s·t_s, P_F (Ns, nq), V_F/A_F (Ns, nv), plus its other keys."""
    rng = np.random.default_rng(1)
    Ns = int((n_wps - 1) * t_s * freq) + 1
    res = {"T_F": [], "P_F": [], "V_F": [], "A_F": []}
    for s in range(n_segments):
        res["T_F"].append((s * t_s + np.arange(Ns) / freq).reshape(-1, 1))
        res["P_F"].append(rng.normal(size=(Ns, nq)))
        res["V_F"].append(rng.normal(size=(Ns, nv)))
        res["A_F"].append(rng.normal(size=(Ns, nv)))
    res.update(
        iteration_data=[{"iterations": [0, 1], "obj_values": [3.0, 2.0]}] * n_segments,
        final_regressor_shape=(Ns * nv, 12),
        waypoints=[rng.normal(size=(3, n_wps))] * n_segments,
        condition_number=[2.0] * n_segments,
        objective="condition_number",
        failures=[],
    )
    return res


def test_trajectory_plot_draws_the_segment_layout(tmp_path, monkeypatch):
    """T_F/P_F/V_F/A_F lists of per-segment arrays: one panel per P_F/V_F/A_F, every segment
    drawn against its own times, P_F columns by q_indices, V_F/A_F columns by v_indices."""
    monkeypatch.chdir(tmp_path)
    res = _segment_layout()
    q_idx, v_idx = [1, 4, 6], [0, 3, 5]
    m = ResultsManager("optimal_trajectory", "arm")
    assert (
        m.plot_optimal_trajectory_results(
            res, 12.3, ["a", "b", "c"], q_indices=q_idx, v_indices=v_idx, raise_errors=True
        )
        == []
    )
    fig = m.last_figures["trajectory"]
    try:
        axes = fig.axes
        assert [ax.get_ylabel() for ax in axes] == ["q [rad]", "dq [rad/s]", "ddq [rad/s²]"]
        for ax, key, cols in zip(axes, ("P_F", "V_F", "A_F"), (q_idx, v_idx, v_idx), strict=True):
            assert len(ax.lines) == 2 * 3  # segments × joints
            for s in range(2):
                for j, col in enumerate(cols):
                    line = ax.lines[3 * s + j]
                    np.testing.assert_array_equal(line.get_xdata(), res["T_F"][s].ravel())
                    np.testing.assert_array_equal(line.get_ydata(), res[key][s][:, col])
                    assert line.get_color() == ax.lines[j].get_color()  # one colour per joint
        assert [ln.get_label() for ln in axes[0].lines[:3]] == ["a", "b", "c"]
        assert axes[-1].get_xlabel() == "Time [s]"
        assert "1.23e+01" in fig._suptitle.get_text()
    finally:
        plt.close(fig)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ValueError, match=r"T_F'\]\[1\] has 3 times"):
        bad = _segment_layout()
        bad["T_F"][1] = bad["T_F"][1][:3]
        m.plot_optimal_trajectory_results(bad, 1.0, raise_errors=True)
    plt.close("all")


def test_two_dimensional_efforts_are_used_as_given(tmp_path):
    """An (L, n) effort array keeps its columns whatever n_joints says (a stacked vector
    would be split joint-major into n_joints blocks)."""
    L = 30
    tau = np.column_stack([np.sin(np.arange(L) * (j + 1)) for j in range(3)])
    est = tau + 0.01
    m = ResultsManager("identification", "arm")
    for n_joints in (None, 3, 2, 6):
        m.plot_identification_results(tau, est, n_joints=n_joints, raise_errors=True)
        fig = m.last_figures["torques"]
        axes = np.array(fig.axes).reshape(3, 2)
        for j in range(3):
            np.testing.assert_array_equal(axes[j, 0].lines[0].get_ydata(), tau[:, j])
            np.testing.assert_array_equal(axes[j, 0].lines[1].get_ydata(), est[:, j])
        plt.close("all")
    # one 2-D, one stacked joint-major: the stacked one is split into the same columns
    m.plot_identification_results(tau, est.T.ravel(), n_joints=5, raise_errors=True)
    axes = np.array(m.last_figures["torques"].axes).reshape(3, 2)
    np.testing.assert_array_equal(axes[2, 0].lines[1].get_ydata(), est[:, 2])
    plt.close("all")
    with pytest.raises(ValueError, match="same shape"):
        m.plot_identification_results(tau, est.reshape(L * 3 // 2, 2), raise_errors=True)
    plt.close("all")


def test_missing_matplotlib_is_a_warning(manager, tmp_path, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with caplog.at_level(logging.WARNING, logger=rm.__name__):
        assert manager.plot_identification_results(n_joints=3, output_dir=tmp_path) == []
    assert "matplotlib is not installed" in caplog.text


def test_calibration_and_optimal_plots(tmp_path, no_show):
    rng = np.random.default_rng(3)
    pee = rng.normal(size=(3, 2 * 20))
    cal = {
        "calibrated parameters names": ["d_px_1", "d_py_1", "d_pz_1"],
        "calibrated parameters values": [0.001, -0.002, 0.0005],
        "rms residuals by samples": np.abs(rng.normal(scale=1e-3, size=(2, 20))),
        "PEE measured (2D array)": pee,
        "PEE estimated (2D array)": pee + 1e-3 * rng.normal(size=pee.shape),
        "task type": "calibration",
    }
    m = ResultsManager("calibration", "tiago", cal)
    paths = m.plot_calibration_results(output_dir=tmp_path, file_prefix="cal")
    assert [Path(p).name for p in paths] == [
        "cal_errors.png",
        "cal_poses.png",
        "cal_parameters.png",
    ]
    assert mpimg.imread(paths[0]).shape[:2] == (1000, 1400)
    paths = rm.plot_calibration_results(
        residuals=cal["rms residuals by samples"], output_dir=tmp_path
    )
    assert len(paths) == 1 and Path(paths[0]).read_bytes()[:8] == PNG_MAGIC

    oc = ResultsManager("optimal_calibration", "tiago")
    paths = oc.plot_optimal_calibration_results(
        {"q": np.zeros((5, 7))},
        rng.uniform(size=30),
        condition_numbers=np.linspace(10, 2, 8),
        information_matrix=np.eye(4) + 0.1,
        output_dir=tmp_path,
    )
    assert len(paths) == 1 and Path(paths[0]).read_bytes()[:8] == PNG_MAGIC

    ot = ResultsManager("optimal_trajectory", "ur10")
    t = np.linspace(0, 2, 50)
    traj = {"q": np.sin(np.outer(t, [1, 2, 3])), "dq": np.cos(np.outer(t, [1, 2, 3]))}
    paths = ot.plot_optimal_trajectory_results(
        traj, 35.2, joint_names=JOINTS, time_vector=t, output_dir=tmp_path
    )
    assert len(paths) == 1 and Path(paths[0]).read_bytes()[:8] == PNG_MAGIC

    paths = rm.plot_identification_results(
        np.arange(20.0),
        np.arange(20.0) + 0.1,
        [1.0, 2.0],
        ["a", "b"],
        output_dir=tmp_path,
        n_joints=2,
    )
    assert len(paths) == 2


# ---------------------------------------------------------------------------
# plot_with_fallback
# ---------------------------------------------------------------------------


def test_plot_with_fallback_runs_fallback_and_warns(caplog):
    log = logging.getLogger("figaroh.test.fallback")
    calls = []

    def primary():
        raise RuntimeError("reshape failed")

    def fallback():
        calls.append("fallback")
        return "basic"

    with caplog.at_level(logging.WARNING, logger=log.name):
        assert plot_with_fallback(primary, fallback, log, "identification") == "basic"
    assert calls == ["fallback"]
    (record,) = [r for r in caplog.records if r.name == log.name]
    assert record.levelno == logging.WARNING
    assert "identification" in record.getMessage() and "reshape failed" in record.getMessage()


def test_plot_with_fallback_skips_fallback_on_success(caplog):
    calls = []
    with caplog.at_level(logging.WARNING):
        out = plot_with_fallback(lambda: ["a.png"], lambda: calls.append(1), None, "calibration")
    assert out == ["a.png"] and calls == [] and caplog.records == []
    with caplog.at_level(logging.WARNING, logger=rm.__name__):
        plot_with_fallback(lambda: 1 / 0, lambda: calls.append(1), None, "calibration")
    assert calls == [1] and "calibration" in caplog.text


def test_no_stray_temporary_files(manager, tmp_path, no_show):
    manager.save_results(output_dir=tmp_path, save_formats=list(rm.SUPPORTED_FORMATS))
    manager.plot_identification_results(n_joints=3, output_dir=tmp_path)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp") or p.startswith(".")]


def test_headless_detection(monkeypatch):
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "agg")
    monkeypatch.setenv("DISPLAY", ":0")
    assert rm._is_headless()  # non-interactive backend, display or not
    monkeypatch.setattr(matplotlib, "get_backend", lambda: "TkAgg")
    if sys.platform.startswith("linux"):
        monkeypatch.delenv("DISPLAY")
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        assert rm._is_headless()  # interactive backend but no display server
        monkeypatch.setenv("DISPLAY", ":0")
    assert not rm._is_headless()
    monkeypatch.setattr(
        matplotlib, "get_backend", lambda: "module://matplotlib_inline.backend_inline"
    )
    monkeypatch.delenv("DISPLAY")
    assert not rm._is_headless()


def test_csv_skipped_when_nothing_is_tabular(tmp_path, caplog):
    m = ResultsManager("calibration", "tiago", {"calibration config": {"NbSample": 3}})
    with caplog.at_level(logging.WARNING, logger=rm.__name__):
        saved = m.save_results(output_dir=tmp_path, save_formats=["csv", "yaml"])
    assert set(saved) == {"yaml", "metadata"} and "CSV not written" in caplog.text
    assert yaml.safe_load(Path(saved["yaml"]).read_text()) == {
        "calibration config": {"NbSample": 3}
    }


def test_robot_name_is_made_file_safe(tmp_path):
    m = ResultsManager("identification", "my robot/arm", {"x": np.arange(3.0)})
    saved = m.save_results(output_dir=tmp_path, save_formats=["yaml"])
    assert Path(saved["yaml"]).parent == tmp_path
    assert Path(saved["yaml"]).name.startswith("my_robot_arm_identification_")


# ---------------------------------------------------------------------------
# layout: per-sample arrays only on request, only in the NPZ
# ---------------------------------------------------------------------------


def test_include_arrays_puts_per_sample_arrays_in_the_npz_only(ident_results, tmp_path):
    data = dict(ident_results)
    data["validation_metrics"] = {
        **ident_results["validation_metrics"],
        "tau_measured_per_joint": {j: [0.1 * i, 0.2 * i] for i, j in enumerate(JOINTS)},
    }
    m = ResultsManager("identification", "ur10", data)
    saved = m.save_results(output_dir=tmp_path, save_formats=["yaml", "csv"], include_arrays=True)
    assert set(saved) == {"yaml", "csv", "npz", "metadata"}  # npz added for the arrays
    y = yaml.safe_load(Path(saved["yaml"]).read_text(encoding="utf-8"))
    assert "base regressor" not in y and "tau_measured_per_joint" not in y["validation_metrics"]
    assert y["validation_metrics"]["per_joint_rmse"] == data["validation_metrics"]["per_joint_rmse"]
    assert "tau_measured_per_joint" in data["validation_metrics"]  # the input is not modified
    with np.load(saved["npz"], allow_pickle=False) as z:
        np.testing.assert_array_equal(z["base regressor"], data["base regressor"])
        np.testing.assert_array_equal(z["torque processed"], data["torque processed"])
        np.testing.assert_array_equal(z["torque estimated"], data["torque estimated"])
        for i, j in enumerate(JOINTS):
            got = z[f"validation_metrics/tau_measured_per_joint/{j}"]
            np.testing.assert_array_equal(got, [0.1 * i, 0.2 * i])
        np.testing.assert_array_equal(z["base parameters values"], data["base parameters values"])
    meta = yaml.safe_load(Path(saved["metadata"]).read_text(encoding="utf-8"))
    assert meta["arrays"]["included"] is True
    assert meta["arrays"]["file"] == Path(saved["npz"]).name
    assert "validation_metrics/tau_measured_per_joint" in meta["arrays"]["keys"]


def test_default_metadata_names_the_arrays_left_out(manager, tmp_path):
    saved = manager.save_results(output_dir=tmp_path, save_formats=["npz"])
    meta = yaml.safe_load(Path(saved["metadata"]).read_text(encoding="utf-8"))
    assert meta["arrays"] == {
        "included": False,
        "file": None,
        "keys": ["base regressor", "torque estimated", "torque processed"],
    }


def test_optimal_tasks_keep_their_trajectories(tmp_path):
    traj = {"position_segments": [np.linspace(0, 1, 50)], "condition_number": 3.0}
    saved = ResultsManager("optimal_trajectory", "ur10").save_results(
        traj, tmp_path, save_formats=["yaml"]
    )
    y = yaml.safe_load(Path(saved["yaml"]).read_text(encoding="utf-8"))
    assert y["position_segments"] == [np.linspace(0, 1, 50).tolist()]


def test_stale_claim_of_a_dead_process_is_removed(manager, tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    pid = int(dead.stdout)
    from figaroh._run import results_files

    stale = tmp_path / ".run.claim"
    stale.write_text(f"{pid} {results_files._HOST}\n", encoding="utf-8")
    live = tmp_path / ".other.claim"
    live.write_text(f"{os.getpid() + 0} {results_files._HOST}\n", encoding="utf-8")
    saved = manager.save_results(output_dir=tmp_path, file_prefix="run", save_formats=["yaml"])
    assert Path(saved["yaml"]).name == "run.yaml"  # the dead claim no longer blocks the name
    assert not stale.exists() and live.exists()  # a live process's claim is kept


def test_claimed_name_is_skipped(manager, tmp_path):
    from figaroh._run import results_files

    (tmp_path / ".run.claim").write_text(f"{os.getpid()} {results_files._HOST}\n")
    saved = manager.save_results(output_dir=tmp_path, file_prefix="run", save_formats=["yaml"])
    assert Path(saved["yaml"]).name == "run_1.yaml"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".run.claim",
        "run_1.yaml",
        "run_1_metadata.yaml",
    ]


def test_blocked_statistics_of_a_large_array_match_numpy(monkeypatch):
    from figaroh._run import results_files

    monkeypatch.setattr(results_files, "_STATS_BLOCK", 64)
    arr = np.random.default_rng(3).normal(size=(50, 7))
    arr[3, 2], arr[40, 0] = np.nan, -np.inf
    got = results_files.summary_statistics(arr)
    finite = arr[np.isfinite(arr)]
    assert got["min"] == finite.min() and got["max"] == finite.max()
    np.testing.assert_allclose([got["mean"], got["std"]], [finite.mean(), finite.std()], rtol=1e-12)
    assert results_files.summary_statistics(np.full(100, np.nan))["mean"] is None
    for clean in (np.abs(arr[np.isfinite(arr)]), 1e6 + arr[np.isfinite(arr)], np.full(99, 2.5)):
        got = results_files.summary_statistics(clean)  # one-pass path, or two-pass if it cancels
        want = [clean.mean(), clean.std(), clean.min(), clean.max()]
        assert got["min"] == want[2] and got["max"] == want[3]
        np.testing.assert_allclose([got["mean"], got["std"]], want[:2], rtol=1e-9, atol=1e-12)
