"""The learner calls every rank makes are declared once: ``ranks.CALLS`` names them, and the
``Leader`` the run loop holds has exactly one method per name, which tells that name to the other
ranks. A call added to one and not the other would run on rank 0 alone and leave the followers
waiting in a collective."""

from __future__ import annotations

import inspect

from halo_trainer.learner.ranks import CALLS, Leader


def _leader_calls(leader: type) -> dict[str, str]:
    """Public methods of ``leader`` (not its properties or ``of``) -> their source."""
    return {
        name: inspect.getsource(member)
        for name, member in vars(leader).items()
        if inspect.isfunction(member) and not name.startswith("_")
    }


def test_every_learner_call_of_the_ranks_is_one_leader_method_that_tells_it() -> None:
    methods = _leader_calls(Leader)
    assert set(methods) == set(CALLS)
    untold = [name for name, source in methods.items() if f'self._call("{name}"' not in source]
    assert not untold


def test_a_call_declared_on_one_side_only_is_caught() -> None:
    class Extra(Leader):
        def merge_adapters(self) -> None:  # a learner call no rank would be told of
            return None

    assert set(_leader_calls(Extra)) - set(CALLS) == {"merge_adapters"}
