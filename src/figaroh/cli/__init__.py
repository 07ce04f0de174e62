"""The ``figaroh`` command line (console script ``figaroh = figaroh.cli.main:main``).

* :mod:`figaroh.cli.main` — argument parsing, the command table, the entry point
  (``python -m figaroh.cli`` runs it too);
* :mod:`figaroh.cli.common` — exit codes, ``CLIError``, file checks (cheap);
* :mod:`figaroh.cli.options` — value types of the numeric options (cheap);
* :mod:`figaroh.cli.thresholds` — ``--threshold`` and the limit options (cheap);
* :mod:`figaroh.cli.task_commands`, :mod:`figaroh.cli.run_commands`,
  :mod:`figaroh.cli.setup_commands` — the commands, loaded when they run;
* :mod:`figaroh.cli.workflows` — the identification and calibration runs behind
  ``figaroh identify`` / ``figaroh calibrate`` (usable from Python);
* :mod:`figaroh.cli.csv_identification` — ``CSVIdentification``, a
  :class:`~figaroh.identification.base_identification.BaseIdentification` that
  reads CSV logs (columns ``t, q_<joint>, [dq_<joint>], [ddq_<joint>], tau_<joint>``);
* :mod:`figaroh.cli.progress` — the step-level progress bar.

Importing this package is cheap: nothing heavy is imported until a command runs.
"""

import lazy_loader as _lazy

# The names and submodules of :file:`__init__.pyi` (read here, and by type
# checkers and tests/test_architecture.py) are imported on first access.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
