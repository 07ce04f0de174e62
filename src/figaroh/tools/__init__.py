"""figaroh.tools subpackage."""
