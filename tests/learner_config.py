"""``LearnerConfig`` as the learner's own tests build it: plain math, whatever the run knobs' defaults.

The knobs' defaults are the 8B run's (a KL term, temperature 0.7, truncated importance sampling);
tests of the learner's arithmetic compare against references computed without those, so they
say so here, once, rather than rely on a default.
"""

from __future__ import annotations

from halo.settings.trainer import LearnerConfig

PLAIN = {"kl_coef": 0.0, "temperature": 1.0, "tis_cap": None, "learning_rate": 1e-5}


def plain_config(**overrides) -> LearnerConfig:
    return LearnerConfig(**(PLAIN | overrides))
