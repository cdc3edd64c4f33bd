"""The reset states remembered for rewinds: (task, seed, run id) -> the reset's state and observation.

A reset of the clones is deterministic (task, seed, run id), so the state its first observation
captured can be rewound into a parked page instead of loading the site's /config again. Only states
a parked page can be rewound to are kept, at most ``_INITIAL_STATES``.
"""

from __future__ import annotations

from typing import Any

from halo.schemas import Observation
from halo_env import browser_state

_INITIAL_STATES = 256  # reset states remembered for rewinds, least recently stored dropped first

Key = tuple[str, int, str]  # (task id, seed, run id)


class InitialStates:
    def __init__(self, limit: int = _INITIAL_STATES) -> None:
        self._limit = limit
        self._states: dict[Key, tuple[dict[str, Any], Observation]] = {}

    def get(self, key: Key) -> tuple[dict[str, Any] | None, Observation | None]:
        """The reset's state and observation, or (None, None) when none is remembered."""
        return self._states.get(key, (None, None))

    def remember(self, key: Key, checkpoint: dict[str, Any], obs: Observation) -> None:
        if browser_state.rewind_url(checkpoint) is None:
            return
        self._states.pop(key, None)
        self._states[key] = (checkpoint, obs)
        while len(self._states) > self._limit:
            self._states.pop(next(iter(self._states)))
