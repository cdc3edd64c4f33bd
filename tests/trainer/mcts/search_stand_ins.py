"""What the MCTS search tests share: the in-process stand-ins (tests/trainer/stand_ins.py) extended by
snapshot and restore (the env state is the list of actions taken), the search settings, scripted
policies, an env whose re-entry of one inner node drifts, and a reward that pays a milestone.
"""

from __future__ import annotations

from halo.schemas import Action, ResetResponse, Snapshot, ValidationResult
from halo.schemas.search_settings import MCTSConfig
from tests.trainer.stand_ins import EnvStandIn, RewardStandIn, Session, click

SUCCESS = Action(action="terminate", status="success")


class SnapshotEnv(EnvStandIn):
    """The stand-in env with snapshot/restore: a snapshot is the action list; restore replays it."""

    def __init__(self) -> None:
        super().__init__()
        self.restored: list[tuple[str, str]] = []  # (snapshot's screenshot, restored screenshot)
        self.validations = 0

    async def snapshot(self, session_id: str) -> Snapshot:
        s = self.sessions[session_id]
        state = {"actions": list(s.actions), "seed": s.seed, "max_steps": s.max_steps}
        return Snapshot(
            task_id=s.task_id, url=f"http://site.test/{len(s.actions)}", step=len(s.actions), storage_state=state
        )

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        st = snapshot.storage_state
        sid = self._new(Session(snapshot.task_id, st["seed"], st["max_steps"], list(st["actions"])))
        return ResetResponse(observation=self._observe(sid))

    async def validate(self, session_id: str) -> ValidationResult:
        self.validations += 1
        return ValidationResult(task_id=self.sessions[session_id].task_id, success=False, reward=0.0)


def cfg(**fields) -> MCTSConfig:
    """The tests below the widening ones check the search that executes all K children at once."""
    return MCTSConfig(
        **{"simulations": 6, "max_children": 3, "max_depth": 3, "critic": "progress", "widening": 0.0, **fields}
    )


def root_succeeds(n: int, i: int) -> list[Action | None]:
    """At every expansion: a click, the success, and an answer that does not parse; rollouts click."""
    return [click(100), SUCCESS, None][:n] if n > 1 else [click(100)]


def rollout_succeeds(n: int, i: int) -> list[Action | None]:
    """Expansions click (no child ends the episode at once); every rollout's first action succeeds."""
    return [click(100 * (k + 1)) for k in range(n)] if n > 1 else [SUCCESS]


def distinct_clicks(n: int, i: int) -> list[Action | None]:
    """K distinct clicks at every expansion (the first proposed twice); rollouts click once."""
    return [click(100), click(100), *(click(100 * (k + 2)) for k in range(n - 2))] if n > 1 else [click(50)]


class DriftingInnerEnv(SnapshotEnv):
    """Restores of one inner node's state (after ``click(100)``, the root's first child) come back
    one action further: that node is refused when re-entered; the root and every other node re-enter."""

    def __init__(self) -> None:
        super().__init__()
        self.drifted = 0

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        if snapshot.storage_state["actions"] == [click(100).short()]:
            self.drifted += 1
            state = {**snapshot.storage_state, "actions": [click(100).short(), "drifted"]}
            snapshot = snapshot.model_copy(update={"storage_state": state})
        return await super().restore(snapshot)


class MilestoneReward(RewardStandIn):
    """The stand-in reward, paying the milestone ``checked`` for a click at x = 999."""

    async def reward(self, request):
        out = await super().reward(request)
        a = request.action
        if a is not None and a.coordinate is not None and a.coordinate[0] == 999:
            out.milestones = ["checked"]
        return out
