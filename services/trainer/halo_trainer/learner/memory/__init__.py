"""The learner's memory plan: will a run's learner fit on its card beside vLLM? Computed before the
model loads, from the model's sizes (``dims``), what each part of a step holds (``parts``) and the fit
on a card (``fit``); ``plan`` is its entry point (the trainer's run-start check, ``halo memory-plan``)."""
