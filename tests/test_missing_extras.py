"""Every optional extra: its feature, called without the package, names the extra to install.

Each row hides one optional package (``sys.modules[name] = None`` makes its
import fail as if it were not installed) and calls a public entry point of the
feature that needs it. The call must raise
:class:`~figaroh.errors.MissingDependencyError` (a ``FigarohError`` and an
``ImportError``) whose message names ``figaroh[<extra>]``, at the call and
not later.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from figaroh.errors import FigarohError, MissingDependencyError


@dataclass(frozen=True)
class ExtraCase:
    extra: str
    hidden: tuple[str, ...]
    call: Callable[..., object]
    #: The exception the call documents (``get_backend`` keeps 1.0.2's ValueError).
    raises: type[BaseException] = MissingDependencyError


def _clarabel_projection(_):
    from figaroh.identification import physical_consistency as pc

    p10 = np.array([1.0, 0.1, 0.1, 0.1, 0.5, 0.0, 0.0, 0.5, 0.0, 0.5])
    return pc.project_p10_lmi(p10, solver="clarabel")


def _mujoco_backend(ur10_urdf):
    from figaroh.backends.mujoco import MuJoCoBackend

    return MuJoCoBackend(str(ur10_urdf))


def _mujoco_by_name(ur10_urdf):
    from figaroh.backends import get_backend

    return get_backend("mujoco", str(ur10_urdf))


def _meshcat_colors(_):
    from figaroh.visualisation.colors import require_meshcat

    return require_meshcat()


def _ipopt_problem(_):
    from figaroh.tools.robotipopt import require_cyipopt

    return require_cyipopt()


def _fleet_batch(tmp_path):
    from figaroh.fleet import run_batch

    return run_batch([], archive_root=tmp_path / "fleet", progress=False)


CASES = [
    ExtraCase("fast", ("clarabel",), _clarabel_projection),
    ExtraCase("mujoco", ("mujoco",), _mujoco_backend),
    ExtraCase("mujoco", ("mujoco",), _mujoco_by_name, ValueError),
    ExtraCase("meshcat", ("meshcat", "meshcat.geometry"), _meshcat_colors),
    ExtraCase("ipopt", ("cyipopt",), _ipopt_problem),
    ExtraCase("fleet", ("distributed",), _fleet_batch),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.extra}-{c.call.__name__.strip('_')}")
def test_a_missing_extra_is_named_at_the_call(case, monkeypatch, ur10_urdf, tmp_path):
    for name in case.hidden:
        monkeypatch.setitem(sys.modules, name, None)
    argument = ur10_urdf if case.extra == "mujoco" else tmp_path
    with pytest.raises(case.raises) as info:
        case.call(argument)
    if case.raises is MissingDependencyError:
        assert isinstance(info.value, FigarohError) and isinstance(info.value, ImportError)
    assert f"figaroh[{case.extra}]" in str(info.value), str(info.value)
