"""Fleet scale: many identification / calibration jobs on Dask, a run index and drift reports."""
