"""After ``solve(wls=True)``: ``result["base parameters"]`` keeps the OLS values (figaroh 1.0.2).

1.0.2 replaces ``phi_base``, ``tau_estimated`` and ``result["base parameters values"]``
by the WLS estimate but stores the decomposer's name → value dict, the least-squares
estimate, under ``result["base parameters"]``.
"""

from __future__ import annotations

import numpy as np
import pytest

from conftest import load_example


@pytest.fixture(scope="module")
def ur10_runs(tmp_path_factory):
    example = load_example("ur10/identification.py", "ur10_identification_wls_dict")
    folder = tmp_path_factory.mktemp("ur10_wls")
    runs = {}
    for wls in (False, True):
        ident = example.run(str(folder), 1500, 0.5, 0, quiet=True)
        ident.solve(decimate=False, plotting=False, save_results=False, wls=wls, verbose=False)
        runs[wls] = ident
    return runs


def test_wls_values_replace_phi_base_but_not_the_name_value_dict(ur10_runs):
    ols, wls = ur10_runs[False], ur10_runs[True]
    names = list(ols.params_base)
    assert list(wls.params_base) == names
    ols_dict = ols.result["base parameters"]
    # the dict is the OLS estimate in both runs
    assert wls.result["base parameters"] == ols_dict
    np.testing.assert_array_equal(np.array([ols_dict[n] for n in names]), ols.phi_base)
    # the values, phi_base and the estimated efforts are the WLS estimate
    assert not np.array_equal(wls.phi_base, ols.phi_base)
    np.testing.assert_array_equal(wls.result["base parameters values"], wls.phi_base)
    np.testing.assert_allclose(
        wls.result["torque estimated"], wls.dynamic_regressor_base @ wls.phi_base, rtol=1e-12
    )
