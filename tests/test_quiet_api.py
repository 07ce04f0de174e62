"""A quiet, predictable API: ``verbose=False``, plots that never write files, one defaults table.

Truths: the printed report captured by ``capsys`` (present by default, absent
with ``verbose=False``), the numbers of the same fit both ways (bit for bit),
the files found in a temporary working directory after ``plotting=True``
(none), and the ``figaroh identify`` parameters against ``solve()`` on the
same CSV (to 1e-12).
"""

from __future__ import annotations

import contextlib
import csv
import inspect
import io
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, load_example
from figaroh.calibration.base_calibration import BaseCalibration
from figaroh.cli.main import main
from figaroh.cli.workflows import CLI_SOLVE_DEFAULTS, solve_settings
from figaroh.identification.base_identification import SOLVE_DEFAULTS, BaseIdentification

_ur10 = load_example("ur10/identification.py", "ur10_identification")
_ur10_cal = load_example("ur10/calibration.py", "ur10_calibration_example")

CONFIG = ROOT / "config" / "ur10_unified_config.yaml"
N = 400
NOISE = 0.5  # [N·m]


@pytest.fixture(scope="module")
def ur10(ur10_urdf):
    from figaroh.tools.robot import Robot

    return Robot(str(ur10_urdf), load_geometry=False)


@pytest.fixture(scope="module")
def ident_data(ur10, tmp_path_factory):
    folder = tmp_path_factory.mktemp("quiet_ident")
    return _ur10.generate_ur10_data(folder / "data", N, NOISE, seed=5, robot=ur10)


def _ident(ur10, ident_data):
    train, validation = ident_data
    ident = _ur10.UR10Identification(ur10, CONFIG, data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    return ident


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------------------
# verbose
# ---------------------------------------------------------------------------
def test_identification_report_by_default_and_silence_with_verbose_false(ur10, ident_data, capsys):
    loud = _ident(ur10, ident_data)
    phi_loud = loud.solve(decimate=False, plotting=False)
    out = capsys.readouterr().out
    assert "Stages:" in out and "Condition:" in out
    quiet = _ident(ur10, ident_data)
    phi_quiet = quiet.solve(decimate=False, plotting=False, verbose=False)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""
    np.testing.assert_array_equal(phi_quiet, phi_loud)
    np.testing.assert_array_equal(quiet.std_relative, loud.std_relative)
    assert quiet.rms_error == loud.rms_error
    # the report is still there on demand
    quiet.print_quality_report()
    assert capsys.readouterr().out == out


def test_custom_solver_prints_nothing_either_way(ur10, ident_data, capsys):
    a = _ident(ur10, ident_data)
    phi_a = a.solve_with_custom_solver(method="lstsq")
    b = _ident(ur10, ident_data)
    phi_b = b.solve_with_custom_solver(method="lstsq", verbose=False)
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(phi_a, phi_b)


def test_switches_are_keyword_only_after_the_1_0_2_parameters():
    for method, last in (
        (BaseIdentification.solve, "wls"),
        (BaseIdentification.solve_with_custom_solver, "save_results"),
        (BaseCalibration.solve, "html_report"),
    ):
        params = inspect.signature(method).parameters
        names = list(params)
        assert params["verbose"].kind is inspect.Parameter.KEYWORD_ONLY
        assert params["verbose"].default is True
        assert params["save_plots"].kind is inspect.Parameter.KEYWORD_ONLY
        assert params["save_plots"].default is None
        assert names.index(last) < names.index("verbose")


@pytest.fixture(scope="module")
def calib_data(ur10, tmp_path_factory):
    folder = tmp_path_factory.mktemp("quiet_calib")
    train, _, _ = _ur10_cal.simulate_ur10_calibration(folder, robot=ur10, n_train=30, n_test=10)
    return train


def _calib(ur10, train):
    calib = BaseCalibration(ur10, str(CONFIG))
    calib.calib_config.update(known_baseframe=False, known_tipframe=False)
    calib.set_data_file(train)
    calib.initialize()
    return calib


@pytest.mark.filterwarnings("ignore:Using default cost function")
def test_calibration_report_by_default_and_silence_with_verbose_false(ur10, calib_data, capsys):
    loud = _calib(ur10, calib_data)
    loud.solve(enable_logging=False)
    assert "calibration" in capsys.readouterr().out.lower()
    quiet = _calib(ur10, calib_data)
    quiet.solve(enable_logging=False, verbose=False)
    assert capsys.readouterr().out == ""
    np.testing.assert_array_equal(quiet.var_, loud.var_)


# ---------------------------------------------------------------------------
# plotting writes no file unless asked
# ---------------------------------------------------------------------------
@pytest.fixture
def headless(monkeypatch, tmp_path):
    import matplotlib

    monkeypatch.setenv("MPLBACKEND", "Agg")
    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    import matplotlib.pyplot as plt

    plt.close("all")


def test_identification_plotting_writes_no_file(ur10, ident_data, headless):
    ident = _ident(ur10, ident_data)
    ident.solve(decimate=False, verbose=False)  # plotting=True is the default
    assert _files(headless) == []
    ident.plot_results()  # the direct call neither
    assert _files(headless) == []
    ident.results_manager = None  # the basic-plot path neither
    ident.plot_results()
    assert _files(headless) == []


def test_identification_save_plots_writes_png_files_there(ur10, ident_data, headless):
    ident = _ident(ur10, ident_data)
    ident.solve(decimate=False, verbose=False, save_plots="figures")
    written = _files(headless)
    assert written and all(p.suffix == ".png" and p.parent.name == "figures" for p in written)


@pytest.mark.filterwarnings("ignore:Using default cost function")
def test_calibration_plotting_writes_no_file(ur10, calib_data, headless):
    calib = _calib(ur10, calib_data)
    calib.solve(enable_logging=False, verbose=False, plotting=True)
    assert _files(headless) == []
    calib.solve(enable_logging=False, verbose=False, plotting=True, save_plots="figures")
    written = _files(headless)
    assert written and all(p.suffix == ".png" and p.parent.name == "figures" for p in written)


# ---------------------------------------------------------------------------
# one defaults table, API and CLI
# ---------------------------------------------------------------------------
def test_solve_signature_is_the_defaults_table():
    params = inspect.signature(BaseIdentification.solve).parameters
    assert {k: params[k].default for k in SOLVE_DEFAULTS} == dict(SOLVE_DEFAULTS)
    assert set(CLI_SOLVE_DEFAULTS) == set(SOLVE_DEFAULTS)
    differ = {k for k in SOLVE_DEFAULTS if CLI_SOLVE_DEFAULTS[k] != SOLVE_DEFAULTS[k]}
    assert differ == {"plotting"}  # the same numbers from both entry points


@pytest.mark.parametrize("doc", ["docs/cli.md", "docs/configuration.md"])
def test_the_defaults_are_documented(doc):
    text = (ROOT / doc).read_text()
    section = text.split("## Defaults", 1)[1].split("\n## ", 1)[0]
    for key, value in SOLVE_DEFAULTS.items():
        row = next((r for r in section.splitlines() if r.startswith(f"| `{key}`")), None)
        assert row is not None, f"{doc}: no row for {key}"
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == f"`{value!r}`", (doc, key, cells)
        assert cells[2] == f"`{CLI_SOLVE_DEFAULTS[key]!r}`" or key in ("verbose", "wls"), cells


def test_solve_settings_maps_the_decimate_option():
    assert solve_settings()["decimate"] is CLI_SOLVE_DEFAULTS["decimate"]
    assert solve_settings(0)["decimate"] is False
    s = solve_settings(5, wls=True)
    assert (s["decimate"], s["decimation_factor"], s["wls"]) == (True, 5, True)
    assert solve_settings(config_wls=True)["wls"] is True


def _cli_params(*args) -> dict[str, float]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    assert code in (0, 1), err.getvalue()
    folder = Path(args[args.index("-o") + 1])
    with open(folder / "base_parameters.csv", newline="") as fh:
        rows = list(csv.reader(fh))[1:]
    return {r[0]: float(r[1]) for r in rows}


@pytest.mark.parametrize("decimate", [None, 0, 5])
def test_cli_and_api_give_the_same_parameters(ur10, ur10_urdf, ident_data, tmp_path, decimate):
    train, validation = ident_data
    extra = {None: [], 0: ["--no-decimate"]}.get(decimate, ["--decimate", decimate])
    cli = _cli_params(
        "identify", CONFIG, "--urdf", ur10_urdf, "--data", train,
        "--validation-data", validation, "-o", tmp_path / "out", "-q", *extra,
    )  # fmt: skip
    ident = _ident(ur10, ident_data)
    settings = solve_settings(decimate, None, bool(ident.identif_config.get("wls", False)))
    if decimate is None:  # no option: solve()'s own default decimation
        assert {k: settings[k] for k in ("decimate", "decimation_factor")} == {
            k: SOLVE_DEFAULTS[k] for k in ("decimate", "decimation_factor")
        }
    phi = ident.solve(**settings, verbose=False)
    assert list(cli) == list(ident.params_base)
    np.testing.assert_allclose(list(cli.values()), phi, rtol=0, atol=1e-12)


def test_docs_defaults_section_names_units():
    text = (ROOT / "docs" / "configuration.md").read_text()
    section = text.split("## Defaults", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"decimation_factor.*samples", section)


def test_optimal_postures_plotting_writes_no_file(ur10_urdf, headless, capsys):
    pytest.importorskip("picos")
    example = load_example("ur10/optimal_config.py", "ur10_optimal_config_example")
    opt = example.make_optimizer(ur10_urdf, CONFIG, n_candidates=30, seed=1)
    opt.solve()  # plotting=True is the default
    assert _files(headless) == []
    assert capsys.readouterr().out == ""
