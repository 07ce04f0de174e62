"""Bad inputs of the calibration HTML report: odd or missing results still give a report.

Each row feeds ``generate_calibration_report`` a solved-calibration look-alike
(``make_calibration_fixture``: 2 markers, 3 position DOFs, 12 validation
poses) with one field broken, and checks that the page states the problem
instead of crashing — or, for a calibration that was never solved, the named
error.
"""

from __future__ import annotations

import math
import types

import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh.tools.report import generate_calibration_report
from test_identification_report import make_calibration_fixture

NO_SERIES = "No per-pose validation residuals recorded for this run."


def _validation(calib):
    return calib.results_data["validation_metrics"]


def _series_too_short(tmp_path):
    calib = make_calibration_fixture()
    _validation(calib)["error_fitted_per_dof"]["Y (mm)"].pop()
    doc = generate_calibration_report(calib)
    assert doc.count(NO_SERIES) == 2 and "Validation" in doc


def _no_validation(tmp_path):
    calib = make_calibration_fixture()
    del calib.results_data["validation_metrics"]
    doc = generate_calibration_report(calib)
    assert doc.count(NO_SERIES) == 2 and "not computed by this calibration" in doc


def _marker_count_not_a_number(tmp_path):
    calib = make_calibration_fixture()
    _validation(calib)["n_markers"] = "two"
    assert generate_calibration_report(calib).count(NO_SERIES) == 2


def _mask_of_the_wrong_length(tmp_path):
    calib = make_calibration_fixture()
    calib.calib_config["measurability"] = [True] * 6  # 6 components, 3 DOF names
    doc = generate_calibration_report(calib)
    assert "marker 2 Z" in doc and NO_SERIES not in doc  # the DOF names decide


def _nan_in_the_nominal_series(tmp_path):
    calib = make_calibration_fixture()
    _validation(calib)["error_nominal_per_dof"]["X (mm)"][0] = math.nan
    doc = generate_calibration_report(calib)
    assert "marker 1 position ‖Δp‖" in doc and 'data-count="12"' in doc


def _value_exactly_zero(tmp_path):
    calib = make_calibration_fixture()
    ev = calib.evaluation_metrics
    ev["param_values"][1] = 0.0
    ev["param_stddev_percentage"][1] = math.inf
    doc = generate_calibration_report(calib)
    # graded against the scale of its kind (σ 0.8 mm against 10 mm), not by an infinite relative σ
    row = doc[doc.index("<td>d_py_base</td>") - 60 : doc.index("<td>d_py_base</td>")]
    assert 'class="tier-good" data-zero="true"' in row
    assert "<td>∞</td>" in doc and "not distinguishable from 0" in doc


def _no_uncertainty(tmp_path):
    calib = make_calibration_fixture()
    calib.evaluation_metrics["param_stdev"] = None
    calib.evaluation_metrics["param_stddev_percentage"] = None
    doc = generate_calibration_report(calib)
    assert doc.count('<span class="badge tier-unknown">unknown</span>') == 6


def _not_solved(tmp_path):
    generate_calibration_report(types.SimpleNamespace(evaluation_metrics=None))


CASES = [
    BadInput("validation_series_too_short", _series_too_short),
    BadInput("no_validation_metrics", _no_validation),
    BadInput("marker_count_not_a_number", _marker_count_not_a_number),
    BadInput("measurability_mask_of_the_wrong_length", _mask_of_the_wrong_length),
    BadInput("nan_in_the_nominal_series", _nan_in_the_nominal_series),
    BadInput("parameter_value_exactly_zero", _value_exactly_zero),
    BadInput("no_parameter_uncertainty", _no_uncertainty, already_good=True),
    BadInput(
        "report_of_an_unsolved_calibration",
        _not_solved,
        raises=AttributeError,
        match="Run solve\\(\\) first",
        already_good=True,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)
