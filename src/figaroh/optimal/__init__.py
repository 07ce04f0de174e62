"""figaroh.optimal subpackage."""
