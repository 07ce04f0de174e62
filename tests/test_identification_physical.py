"""select_stage through the public BaseIdentification API: config → solve → verify → URDF."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pinocchio as pin
import pytest

from conftest import load_example

_ur10 = load_example("ur10/identification.py", "ur10_identification")

N = 2000


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    robot = _ur10.load_ur10()
    folder = tmp_path_factory.mktemp("phys")
    return (
        robot,
        folder,
        _ur10.generate_ur10_data(folder / "data", N, noise_std=0.5, seed=4, robot=robot),
    )


def _config(folder, body: str):
    path = folder / f"cfg_{abs(hash(body))}.yaml"
    path.write_text(
        f'extends: "{_ur10.CONFIG}"\ntasks:\n  identification:\n{body}', encoding="utf-8"
    )
    return path


def _solve(data, body):
    robot, folder, (train, validation) = data
    ident = _ur10.UR10Identification(robot, _config(folder, body), data_dir=train)
    ident.identif_config["validation_data_file"] = str(validation)
    ident.initialize()
    with contextlib.redirect_stdout(io.StringIO()) as out:
        ident.solve(decimate=False, plotting=False)
    return ident, out.getvalue()


def test_physical_fit_selected_verified_and_exported(data, tmp_path):
    ident, report = _solve(data, "    select_stage: physical_fit\n")
    sel = ident.selected
    assert sel is not None and sel.accepted and sel.stage == "physical_fit"
    assert "Reported estimate: physical_fit" in report
    assert ident.result["validation_metrics"]["estimate_stage"] == "physical_fit"
    fit_rmse = ident.result["selected"]["effort_rmse_fit"]
    assert ident.rms_error <= fit_rmse * (1 + 1e-9) <= 1.05 * ident.rms_error
    verdict = ident.verify(scope="execution")
    assert verdict.selected_stage == "physical_fit" and verdict.passed, verdict.status
    nominal = _ur10.load_ur10().robot_urdf
    out = ident.export_urdf(nominal, output_path=str(tmp_path / "ur10_fit.urdf"))
    # the exported URDF reproduces the rigid-body part of the fit's efforts
    model = pin.buildModelFromUrdf(out)
    data_ = model.createData()
    q, dq, ddq = (ident.processed_data[k] for k in ("positions", "velocities", "accelerations"))
    values = np.asarray(sel.values)
    names = list(ident.standard_parameter)
    rigid = np.array(
        [
            v if not n.startswith(("fv_", "fs_", "Ia_", "off_")) else 0.0
            for n, v in zip(names, values, strict=True)
        ]
    )
    expected = (ident.dynamic_regressor @ rigid).reshape(model.nv, -1).T
    got = np.array([pin.rnea(model, data_, q[i], dq[i], ddq[i]) for i in range(0, N, 50)])
    np.testing.assert_allclose(got, expected[::50], rtol=1e-6, atol=1e-6 * np.abs(expected).max())
    assert [s.stage for s in ident.stages][-1] == "export"


def test_default_stage_has_no_selection_and_cannot_export(data, tmp_path):
    ident, _ = _solve(data, "    problem:\n      wls: false\n")
    assert ident.selected is None and "selected" not in ident.result
    with pytest.raises(ValueError, match="no link inertials"):
        ident.export_urdf(_ur10.load_ur10().robot_urdf, output_path=str(tmp_path / "x.urdf"))
    assert not (tmp_path / "x.urdf").exists()


def test_bad_select_stage_in_config_is_refused(data):
    robot, folder, (train, _) = data
    with pytest.raises(ValueError, match="select_stage"):
        _ur10.UR10Identification(robot, _config(folder, "    select_stage: best\n"), data_dir=train)


def test_physical_consistency_projects_the_reconstructed_fit_end_to_end(data, tmp_path):
    body = (
        "    physical_consistency:\n      enabled: true\n"
        "    reconstruction:\n      enabled: true\n      method: nullspace\n"
    )
    ident, _ = _solve(data, body)
    pc = ident.result["physical consistency"]
    assert pc["source"] == "reconstruction"
    theta = ident._recon_result.as_dict()
    assert all(pc["raw_parameters"][n] == v for n, v in theta.items())
    projection = pc.get("projection")
    if projection is not None:  # some reconstructed link was infeasible
        assert isinstance(projection["projected_links"], int)
        assert projection["projected_links"] + len(projection["failed_links"]) == len(
            pc["feasibility"]
        )
    html = open(ident.export_html_report(output_dir=str(tmp_path)), encoding="utf-8").read()
    assert "reconstructed fit" in html
    # without a reconstruction there is nothing identified to check
    ident2, _ = _solve(data, "    physical_consistency:\n      enabled: true\n")
    pc2 = ident2.result["physical consistency"]
    assert pc2["status"] == "skipped" and "source" not in pc2
    assert next(s for s in ident2.stages if s.stage == "physical").status == "not_run"
    html2 = open(ident2.export_html_report(output_dir=str(tmp_path / "b")), encoding="utf-8").read()
    assert "nothing identified to check" in html2
