"""figaroh.calibration subpackage."""
