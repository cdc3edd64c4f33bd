"""``halo doctor``: the first-boot self-check of a running stack, against the stack's own vLLM and the
learner a run would get here. ``runner`` runs the checks in order; each concern is a module beside it:
the screenshot and the samples (``samples``), the served model (``served``), one adapter
(``adapter``), the log-prob parity (``parity``), one update's time and memory (``update``,
``peak_memory``) and the table (``table``). The report's schema is ``halo.schemas.doctor``."""
