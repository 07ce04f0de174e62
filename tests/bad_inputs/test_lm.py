"""Bad inputs to figaroh's Levenberg–Marquardt solver (``figaroh.tools._lm``).

The solver answers like ``scipy.optimize.least_squares(method="lm")`` (same
ValueError messages); the backend switch ``FIGAROH_LM_BACKEND`` names the
variable and the accepted values.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from bad_inputs._harness import BadInput, case_id, run_case
from figaroh.errors import FigarohError
from figaroh.tools._lm import least_squares_lm, lm_backend


def _f(x):
    return np.array([x[0] - 1.0, x[1] + 2.0, x[0] * x[1]])


def _j(x):
    return np.array([[1.0, 0.0], [0.0, 1.0], [x[1], x[0]]])


def _backend(value):
    def call(_):
        old = os.environ.get("FIGAROH_LM_BACKEND")
        os.environ["FIGAROH_LM_BACKEND"] = value
        try:
            return lm_backend()
        finally:
            if old is None:
                os.environ.pop("FIGAROH_LM_BACKEND")
            else:
                os.environ["FIGAROH_LM_BACKEND"] = old

    return call


def _fit_ok(_):
    res = least_squares_lm(_f, np.zeros(2), _j)
    return "pass" if res.success else "fail"


CASES = [
    BadInput(
        "backend_unknown_name",
        _backend("minpack"),
        raises=(FigarohError, ValueError),
        match="FIGAROH_LM_BACKEND='minpack'.*'figaroh'.*'scipy'",
    ),
    BadInput(
        "fewer_residuals_than_parameters",
        lambda _: least_squares_lm(lambda x: _f(x)[:1], np.zeros(2), lambda x: _j(x)[:1]),
        raises=ValueError,
        match="number of residuals is less than the number of variables",
        already_good=True,
    ),
    BadInput(
        "non_finite_initial_residuals",
        lambda _: least_squares_lm(lambda x: _f(x) + np.inf, np.zeros(2), _j),
        raises=ValueError,
        match="Residuals are not finite in the initial point",
        already_good=True,
    ),
    BadInput(
        "max_nfev_zero",
        lambda _: least_squares_lm(_f, np.zeros(2), _j, max_nfev=0),
        raises=ValueError,
        match="max_nfev.*positive integer",
        already_good=True,
    ),
    BadInput(
        "x0_two_dimensional",
        lambda _: least_squares_lm(_f, np.zeros((1, 2)), _j),
        raises=ValueError,
        match="x0.*at most 1 dimension",
        already_good=True,
    ),
    BadInput("well_posed_fit_converges", _fit_ok, verdict="pass", already_good=True),
]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)
