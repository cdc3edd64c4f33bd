"""Rollouts: play one training or eval job (``StepGroupJob``, ``EpisodeGroupJob``, ``EvalJob``)
through the environment, policy and reward services.

Step groups (the seeds' algorithm), one group per visited state::

    obs = env.reset(task)
    repeat until the episode ends:
        N candidates = policy.sample(obs, n=N)            # one vLLM request, behaviour log-probs kept
        N-1 forks    = env.fork(session, N-1)             # identical browser state, copied
        execute candidate 0 in the session, candidate i in fork i; reward_i = reward(obs -> obs_i)
        group = N transitions sharing a group_id          # A_i = r_i - mean(r) in the learner
        continue from one branch (sampled | best | random), close the others

Episode groups: N independent episodes of the same task and seed (one sample per step); every
transition of episode i is credited the episode's return (A_i = R_i - mean(R) in the learner).
An eval job is an episode group of one greedy episode, sampled with its own policy version.

Infrastructure failures (browser crash, timeouts, a service down) are never scored: the
transition is flagged ``infra_error`` and the learner drops it.

A job whose run is stopped while it plays is abandoned before its next step (its sessions are
closed) and comes back as an infrastructure failure that nobody waits for.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from halo.clients import EnvClient, RewardClient
from halo.policy_client import Candidate, PolicyClient, SampleAborted
from halo.schemas import (
    BranchPolicy,
    EpisodeGroupJob,
    EpisodeSummary,
    ErrorKind,
    EvalJob,
    JobBase,
    Observation,
    PolicyVersion,
    PromptRecord,
    RewardBreakdown,
    RewardRequest,
    RolloutResult,
    StateSummary,
    StepGroupJob,
    StepResponse,
    Transition,
)
from halo.store.base import DataStore
from halo.transport import CallError, NotFound

logger = logging.getLogger("halo.trainer.rollout")


@dataclass
class Services:
    env: EnvClient
    policy: PolicyClient
    reward: RewardClient
    # The run's current policy version, read before every sample: a job does not pin a version,
    # each transition records the one that produced it, and the learner drops stale ones.
    current_policy: Callable[[str], Awaitable[PolicyVersion]]
    # The head's data store when this worker's data folder is not the head's (``HALO_STORE_BACKEND=http``):
    # a search's tree is added to it. None: the run folder is shared, the tree is already there.
    head_store: DataStore | None = None


StopCheck = Callable[[], Awaitable[bool]]


class RunStopped(Exception):
    """The job's run was stopped: the job is abandoned between two steps."""


async def _check_stop(stopped: StopCheck | None, job: JobBase, step: int) -> None:
    if stopped is not None and step > 0 and await stopped():
        raise RunStopped(f"abandoned at step {step}: run {job.run_id} was stopped")


@dataclass
class Branch:
    """One candidate executed in its own session (the group's original or one of its forks)."""

    candidate: Candidate
    session_id: str
    step: StepResponse | None  # None when the candidate did not parse (nothing was executed)
    reward: RewardBreakdown
    infra_error: bool


def _summary(obs: Observation) -> StateSummary:
    return StateSummary(
        url=obs.url, axtree=obs.axtree[:400_000], site_state=obs.site_state, screenshot_sha256=obs.screenshot.sha256
    )


def _domain(task_id: str) -> str:
    # local.gomail-3 / v2.gomail-3 -> gomail
    return task_id.split(".", 1)[-1].rsplit("-", 1)[0]


async def execute_candidate(
    svc: Services,
    job: JobBase,
    episode_id: str,
    step: int,
    obs: Observation,
    session_id: str,
    cand: Candidate,
    transition_id: str,
    group_id: str,
    parent_id: str | None,
) -> Branch:
    """Run one candidate in its session and score it (``parent_id``: the transition it continues)."""
    result: StepResponse | None = None
    infra = False
    if cand.action is not None:
        try:
            result = await svc.env.step(session_id, cand.action)
            infra = result.observation.last_action_error_kind is ErrorKind.INFRA
        except CallError as exc:
            logger.warning("job %s step %d: env failed: %s", job.job_id, step, exc)
            infra = True
    nxt = result.observation if result is not None else obs
    request = RewardRequest(
        transition_id=transition_id,
        run_id=job.run_id,
        episode_id=episode_id,
        task_id=job.task_id,
        domain=_domain(job.task_id),
        goal=obs.goal[:4000],
        step=step,
        prev=_summary(obs),
        next=_summary(nxt),
        action=cand.action,
        parse_error=cand.parse_error,
        terminated=bool(result and result.terminated),
        truncated=bool(result and result.truncated),
        task_success=(result.info.get("task_success") if result is not None else None),
        infra_error=infra,
        action_error=(
            nxt.last_action_error[:2000]
            if result is not None and nxt.last_action_error and nxt.last_action_error_kind is ErrorKind.AGENT
            else None
        ),
        # Siblings of a step group share their parent, so none is scored against another's memory.
        group_id=group_id,
        parent_transition_id=parent_id,
    )
    try:
        reward = await svc.reward.reward(request)
    except CallError as exc:
        logger.warning("job %s step %d: reward failed: %s", job.job_id, step, exc)
        reward, infra = RewardBreakdown(transition_id=transition_id, infra_error=True), True
    return Branch(cand, session_id, result, reward, infra or reward.infra_error)


def _transition(
    job: JobBase,
    episode_id: str,
    group_id: str,
    step: int,
    prompt: PromptRecord,
    version: int,
    branch: Branch,
    transition_id: str,
) -> Transition:
    res = branch.step
    return Transition(
        transition_id=transition_id,
        run_id=job.run_id,
        job_id=job.job_id,
        episode_id=episode_id,
        group_id=group_id,
        task_id=job.task_id,
        step=step,
        policy_version=version,
        prompt=prompt,
        completion_text=branch.candidate.text[:20_000],
        completion_token_ids=branch.candidate.token_ids,
        behaviour_logprobs=branch.candidate.logprobs,
        sampling=job.sampling,
        action=branch.candidate.action,
        parse_error=branch.candidate.parse_error,
        reward=branch.reward,
        terminated=bool(res and res.terminated),
        truncated=bool(res and res.truncated),
        task_success=res.info.get("task_success") if res is not None else None,
        infra_error=branch.infra_error,
        next_screenshot_sha256=res.observation.screenshot.sha256 if res is not None else None,
    )


def episode_ended(branch: Branch) -> bool:
    """Whether the env ended the episode on this branch's step (terminated or truncated)."""
    res = branch.step
    return bool(res and (res.terminated or res.truncated))


def _choose(branches: Sequence[Branch], policy: BranchPolicy, rng: random.Random) -> int:
    usable = [i for i, b in enumerate(branches) if not b.infra_error] or list(range(len(branches)))
    if policy is BranchPolicy.BEST:
        return max(usable, key=lambda i: (branches[i].reward.total, -i))
    if policy is BranchPolicy.RANDOM:
        return rng.choice(usable)
    return usable[0]  # SAMPLED: candidate 0 is an ordinary on-policy sample


async def sample_candidates(
    svc: Services, job: JobBase, obs: Observation, history: list[str], n: int, step: int, episode: int = 0
):
    """Ask the policy for n candidates at obs; return them, the prompt record and the policy version.

    An eval job samples the version it carries; every other kind the run's current one.
    """
    png = await svc.env.screenshot(obs.screenshot.sha256)
    draws = job.seed if job.sampling_seed is None else job.sampling_seed
    seed = (draws * 1_000_003 + episode * 1009 + step) % (2**31 - 1)
    pinned = isinstance(job, EvalJob)
    for attempt in range(3):
        version = job.policy if pinned else await svc.current_policy(job.run_id)
        try:
            result = await svc.policy.sample_actions(
                png,
                obs.goal,
                history,
                n=n,
                temperature=job.temperature,
                seed=seed,
                model=version.adapter_name,
                sampling=job.sampling,
                job_id=job.job_id,
                run_id=job.run_id,
            )
            break
        except (SampleAborted, NotFound):
            # A full-weights run replaced the weights under this version (PolicyClient.publish_weights):
            # nothing was sampled; ask again with the version now current. Eval jobs keep theirs.
            if pinned or attempt == 2:
                raise
            logger.info(
                "job %s step %d: %s retired by a weight sync; sampling again", job.job_id, step, version.adapter_name
            )
    prompt = PromptRecord(
        goal=obs.goal,
        history=list(history),
        screenshot_sha256=obs.screenshot.sha256,
        prompt_token_ids=result.prompt_token_ids,
        replica=result.replica,
    )
    return result.candidates, prompt, version.version


@dataclass
class Trace:
    """The path an episode took (the kept branch of each step), for its EpisodeSummary."""

    episode_id: str
    shots: list[str]
    actions: list[str] = field(default_factory=list)
    ret: float = 0.0
    valid: int = 0
    success: bool | None = None
    infra: bool = False

    def record(self, branch: Branch, history: list[str]) -> Observation | None:
        """Add the branch taken; extend the prompt history; return the new observation (if any)."""
        cand = branch.candidate
        if cand.action is not None:
            history.append(cand.action.short())
        self.actions.append(cand.action.short() if cand.action else f"<invalid: {cand.parse_error.reason.value}>")
        self.valid += cand.action is not None
        self.ret += branch.reward.total
        self.infra |= branch.infra_error
        if branch.step is None:
            return None
        self.shots.append(branch.step.observation.screenshot.sha256)
        if episode_ended(branch):
            self.success = branch.step.info.get("task_success")
        return branch.step.observation

    def summary(self, job: StepGroupJob | EpisodeGroupJob | EvalJob) -> EpisodeSummary:
        return EpisodeSummary(
            run_id=job.run_id,
            job_id=job.job_id,
            episode_id=self.episode_id,
            group_id=job.group_id,
            task_id=job.task_id,
            policy_version=job.policy.version,
            purpose=job.purpose,
            steps=len(self.actions),
            episode_return=self.ret,
            success=self.success,
            valid_actions=self.valid,
            infra_error=self.infra,
            actions=self.actions,
            screenshots=self.shots,
        )


async def run_step_groups(svc: Services, job: StepGroupJob, stopped: StopCheck | None = None) -> RolloutResult:
    """One episode that branches N ways at every state (see module docstring)."""
    rng = random.Random(job.seed)
    reset = await svc.env.reset(job.task_id, seed=job.seed, max_steps=job.max_steps, run_id=job.run_id)
    session, obs = reset.observation.session_id, reset.observation
    trace = Trace(f"{job.job_id}-e0", [obs.screenshot.sha256])
    transitions: list[Transition] = []
    history: list[str] = []
    parent: str | None = None
    try:
        for step in range(job.max_steps):
            await _check_stop(stopped, job, step)
            candidates, prompt, version = await sample_candidates(svc, job, obs, history, job.group_size, step)
            # Candidate 0 runs in the session itself, the others in N-1 exact copies of it: a fork
            # costs a page load in a fresh context, the most expensive part of a step group.
            forks = [session]
            if len(candidates) > 1:
                fork = await svc.env.fork(session, len(candidates) - 1)
                forks += [f.observation.session_id for f in fork.sessions]
            ids = [f"{job.job_id}-s{step}-c{i}" for i in range(len(candidates))]
            group_id = f"{job.group_id}-s{step}"
            branches = await asyncio.gather(
                *(
                    execute_candidate(svc, job, trace.episode_id, step, obs, sid, cand, tid, group_id, parent)
                    for sid, cand, tid in zip(forks, candidates, ids, strict=True)
                )
            )
            transitions += [
                _transition(job, trace.episode_id, group_id, step, prompt, version, b, t)
                for b, t in zip(branches, ids, strict=True)
            ]
            chosen = _choose(branches, job.branch, rng)
            keep, parent = branches[chosen], ids[chosen]
            await asyncio.gather(*(svc.env.close(b.session_id) for i, b in enumerate(branches) if i != chosen))
            session = keep.session_id
            obs = trace.record(keep, history) or obs
            if keep.infra_error or episode_ended(keep):
                break
    finally:
        await svc.env.close(session)
    return RolloutResult(
        job_id=job.job_id,
        run_id=job.run_id,
        purpose=job.purpose,
        policy_version=job.policy.version,
        transitions=transitions,
        episodes=[trace.summary(job)],
    )


async def play_episode(
    svc: Services, job: StepGroupJob | EpisodeGroupJob | EvalJob, index: int, stopped: StopCheck | None = None
) -> tuple[list[Transition], EpisodeSummary]:
    """One plain episode: one sample per step (greedy when temperature is 0)."""
    reset = await svc.env.reset(job.task_id, seed=job.seed, max_steps=job.max_steps, run_id=job.run_id)
    session, obs = reset.observation.session_id, reset.observation
    trace = Trace(f"{job.job_id}-e{index}", [obs.screenshot.sha256])
    transitions: list[Transition] = []
    history: list[str] = []
    try:
        for step in range(job.max_steps):
            await _check_stop(stopped, job, step)
            [cand], prompt, version = await sample_candidates(svc, job, obs, history, 1, step, episode=index)
            tid = f"{job.job_id}-e{index}-s{step}"
            parent = transitions[-1].transition_id if transitions else None
            branch = await execute_candidate(
                svc, job, trace.episode_id, step, obs, session, cand, tid, job.group_id, parent
            )
            transitions.append(_transition(job, trace.episode_id, job.group_id, step, prompt, version, branch, tid))
            obs = trace.record(branch, history) or obs
            if branch.infra_error or episode_ended(branch):
                break
    finally:
        await svc.env.close(session)
    for t in transitions:
        t.episode_return = trace.ret
    return transitions, trace.summary(job)


async def run_episode_group(
    svc: Services, job: StepGroupJob | EpisodeGroupJob | EvalJob, stopped: StopCheck | None = None
) -> RolloutResult:
    """N full episodes of the same task and seed; advantages come from their returns."""
    played = await asyncio.gather(*(play_episode(svc, job, i, stopped) for i in range(job.group_size)))
    return RolloutResult(
        job_id=job.job_id,
        run_id=job.run_id,
        purpose=job.purpose,
        policy_version=job.policy.version,
        transitions=[t for ts, _ in played for t in ts],
        episodes=[s for _, s in played],
    )


async def run_job(
    svc: Services, job: StepGroupJob | EpisodeGroupJob | EvalJob, stopped: StopCheck | None = None
) -> RolloutResult:
    """Play a training or eval job; an infrastructure failure becomes a result that says so (never a score).

    A step group forks at every state; an episode group, an eval job and a step group of one (nothing
    to fork) play plain episodes. ``stopped`` is asked before every step after the first: True
    abandons the job there.
    """
    started = time.perf_counter()
    try:
        if isinstance(job, StepGroupJob) and job.group_size > 1:
            result = await run_step_groups(svc, job, stopped)
        else:
            result = await run_episode_group(svc, job, stopped)
    except (CallError, RunStopped) as exc:
        logger.warning("job %s failed on infrastructure: %s", job.job_id, exc)
        result = RolloutResult(
            job_id=job.job_id,
            run_id=job.run_id,
            purpose=job.purpose,
            policy_version=job.policy.version,
            infra_error=str(exc)[:1000],
        )
    result.elapsed_s = time.perf_counter() - started
    return result
