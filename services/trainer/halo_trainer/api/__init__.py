"""The trainer's HTTP API: the FastAPI app (``app``), the run manager (``runs``) and task choice.

Importing this package never imports torch: a run's learner is loaded when the run starts
(``tests/test_import_rules.py`` holds the rule).
"""
