"""A Go-Explore-style ceiling for search over exact browser states.

Keep the highest-progress state found so far, re-enter it exactly (the env's snapshot and restore),
sample one action there from the policy, repeat until the env-step budget is spent or a step
succeeds::

    kept = [root]                                     # the start: a fresh reset on the job's task and seed
    while env steps < budget:
        s = re-enter kept[-1]                          # restore its snapshot; another screen: refused,
                                                       # dropped, and the state kept before it is used
        a = policy.sample(s, n=1)                      # the job's temperature, a seed per try
        execute a in s; reward it against the memory of the kept state's path
        if the episode ended: success -> stop (the path is kept[-1]'s actions + a); else try again
        elif a paid a milestone: kept.append(the new state)   # progress = milestones on its path

Progress is the number of milestones the reward service paid along a state's path (its memory
follows the path, so none is paid twice); a state is kept only when it has strictly more than the
one it came from, so the kept states form one chain from the root. It is the ceiling a search comparison asks
for: if returning exactly to the best state and trying again cannot beat independent sampled
episodes on a task, no tree search will there; if it can, MCTS must be measured against it too.

Sampling and executing a step are the rollout code's (``sample_candidates``, ``execute_candidate``),
so the policy, env and reward service see the same requests as in a GRPO episode or a search. The
root is re-entered by a fresh reset (what a sampled episode starts from); any other state by
``POST /sessions/restore`` of its snapshot, which must show the state's recorded screenshot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from halo.schemas import Action, Observation, RolloutJob
from halo_trainer.mcts.search_state import ReentryRefused, StateStore
from halo_trainer.rollout.play import (
    RunStopped,
    Services,
    StopCheck,
    episode_ended,
    execute_candidate,
    sample_candidates,
)

logger = logging.getLogger("halo.trainer.go_explore")


@dataclass(frozen=True)
class Kept:
    """A state Go-Explore returns to: how to re-enter it and what its path holds."""

    state_ref: str | None  # its snapshot in the state store; None for the root (re-entered by reset)
    screenshot_sha256: str
    actions: tuple[Action, ...]  # from the task's start
    history: tuple[str, ...]  # the prompt's history (``Action.short()``), as a sampled episode builds it
    milestones: tuple[str, ...]  # paid along its path, in order: its progress is their number
    edge: str | None  # the reward transition into it, so rewards are scored against its path's memory


@dataclass
class GoExploreResult:
    success: bool  # a step ended the episode with the task's success
    path: list[Action]  # the actions from the start to that success, else to the last state kept
    env_steps: int  # actions executed (restores and snapshots are not steps)
    tries: int  # actions sampled (one that did not parse takes no env step)
    reentries: int = 0  # restores of a kept state
    reentry_mismatches: int = 0  # ... that showed another screen: that state was dropped
    infra_errors: int = 0
    kept: list[Kept] = field(default_factory=list)  # the kept states, root first

    @property
    def progress(self) -> int:
        """Milestones on the path of the best state kept."""
        return len(self.kept[-1].milestones) if self.kept else 0

    def summary(self) -> dict:
        return {
            "success": self.success,
            "env_steps": self.env_steps,
            "tries": self.tries,
            "reentries": self.reentries,
            "reentry_mismatches": self.reentry_mismatches,
            "infra_errors": self.infra_errors,
            "progress": self.progress,
            "milestones": list(self.kept[-1].milestones) if self.kept else [],
            "path": [a.short() for a in self.path],
        }


async def go_explore(
    svc: Services,
    job: RolloutJob,
    budget: int,
    run_dir: Path,
    stopped: StopCheck | None = None,
    max_tries: int | None = None,
) -> GoExploreResult:
    """Go-Explore on ``job``'s task and seed within ``budget`` env steps (``job.max_steps`` is the
    horizon, as in a sampled episode). ``max_tries`` bounds the samples, for a policy whose answers
    never parse (they take no env step); by default 4 x the budget."""
    if budget < 1:
        raise ValueError(f"the env-step budget must be at least 1, got {budget}")
    states = StateStore(Path(run_dir) / "snapshots")
    limit = max_tries if max_tries is not None else 4 * budget
    root = await svc.env.reset(job.task_id, seed=job.seed, max_steps=job.max_steps, run_id=job.run_id)
    await svc.env.close(root.observation.session_id)
    kept = [Kept(None, root.observation.screenshot.sha256, (), (), (), None)]
    result = GoExploreResult(success=False, path=[], env_steps=0, tries=0, kept=kept)
    episode = f"{job.job_id}-go"
    while result.env_steps < budget and result.tries < limit:
        if stopped is not None and result.tries > 0 and await stopped():
            raise RunStopped(f"go-explore {job.job_id} abandoned at try {result.tries}: run {job.run_id} was stopped")
        best = kept[-1]
        try:
            obs = await _reenter(svc, job, states, best, result)
        except ReentryRefused:
            kept.pop()  # never the root: a reset is the start itself
            continue
        session, try_no = obs.session_id, result.tries
        result.tries += 1
        try:
            depth = len(best.actions)
            [cand], _, _ = await sample_candidates(svc, job, obs, list(best.history), 1, depth, episode=try_no)
            tid = f"{episode}-t{try_no}"
            branch = await execute_candidate(svc, job, episode, depth, obs, session, cand, tid, tid, best.edge)
            result.env_steps += cand.action is not None
            if branch.infra_error:
                result.infra_errors += 1
                continue
            if cand.action is None or branch.step is None:
                continue  # did not parse: nothing ran
            path = (*best.actions, cand.action)
            if episode_ended(branch):
                if branch.step.info.get("task_success"):
                    result.success, result.path = True, list(path)
                    break
                continue
            if branch.reward.milestones:
                snapshot = states.put(await svc.env.snapshot(session))
                kept.append(
                    Kept(
                        snapshot,
                        branch.step.observation.screenshot.sha256,
                        path,
                        (*best.history, cand.action.short()),
                        (*best.milestones, *branch.reward.milestones),
                        tid,
                    )
                )
        finally:
            await svc.env.close(session)
    if not result.success:
        result.path = list(kept[-1].actions)
    logger.info(
        "go-explore %s: %d env steps, %d tries, progress %d, success %s",
        job.job_id,
        result.env_steps,
        result.tries,
        result.progress,
        result.success,
    )
    return result


async def _reenter(
    svc: Services, job: RolloutJob, states: StateStore, best: Kept, result: GoExploreResult
) -> Observation:
    """A new session in ``best``'s state: a reset for the root, else a restore of its snapshot that
    must show its recorded screenshot (``ReentryRefused`` when it does not; the session is closed)."""
    if best.state_ref is None:
        reset = await svc.env.reset(job.task_id, seed=job.seed, max_steps=job.max_steps, run_id=job.run_id)
        return reset.observation
    obs = (await svc.env.restore(states.get(best.state_ref))).observation
    result.reentries += 1
    if obs.screenshot.sha256 != best.screenshot_sha256:
        result.reentry_mismatches += 1
        await svc.env.close(obs.session_id)
        logger.warning(
            "go-explore %s: a kept state re-entered with screenshot %s, recorded %s; dropped",
            job.job_id,
            obs.screenshot.sha256[:12],
            best.screenshot_sha256[:12],
        )
        raise ReentryRefused("a kept state re-entered with another screen")
    return obs
