"""Table-driven bad-input tests: each module is a table of cases run by ``_harness``."""
