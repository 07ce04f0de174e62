"""``python -m figaroh.cli``: the ``figaroh`` command line."""

from figaroh.cli.main import main

raise SystemExit(main())
