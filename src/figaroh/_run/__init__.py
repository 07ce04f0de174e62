"""Run services shared by identification and calibration (private).

One concept per module: stage records (:mod:`.stages`), git and environment
provenance (:mod:`.git`, :mod:`.provenance`), the run archive
(:mod:`.archive`), verification verdicts (:mod:`.verdict`), strict JSON
(:mod:`.json_io`), HTML pieces (:mod:`.html`, :mod:`.charts`, :mod:`.page`)
and the :class:`~figaroh._run.task_services.RunServices` base of the run
classes. The public names are re-exported by :mod:`figaroh.tools.stages`,
:mod:`figaroh.tools.provenance` and :mod:`figaroh.tools.run_archive`.
"""
