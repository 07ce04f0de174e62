"""figaroh.utils subpackage."""
