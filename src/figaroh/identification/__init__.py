"""figaroh.identification subpackage."""
