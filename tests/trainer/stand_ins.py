"""In-process stand-ins for the env, reward and policy clients: the rollout code's three services.

They answer with the same ``halo.schemas`` types the real clients return and fail with the real
transport errors, so ``halo_trainer.rollout.play`` and the workers run unchanged; what they do is
scripted and recorded, so tests can say which fork was continued or which model was asked. The
real services are exercised by tests/e2e.

The env's "site" is a counter: a session's state is the list of actions taken in it, its
screenshot the hash of that list. ``terminate`` ends an episode; ``fail_steps`` makes a step fail
on the infrastructure (an exception, as a dead browser's env service answers).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from halo.policy_client import Candidate, SampleResult
from halo.schemas import (
    JOB_ADAPTER,
    Action,
    ActionParseError,
    ForkMethod,
    ForkResponse,
    JobKind,
    Observation,
    ParseErrorReason,
    PolicyVersion,
    ResetResponse,
    RewardBreakdown,
    RewardRequest,
    RolloutJob,
    SamplingParams,
    ScreenshotRef,
    StepResponse,
    Viewport,
)
from halo.schemas.tasks import TaskReachability
from halo.transport import ServiceUnavailable
from halo_trainer.rollout.play import Services


def click(x: int, y: int = 500) -> Action:
    return Action(action="left_click", coordinate=(x, y))


@dataclass
class Session:
    task_id: str
    seed: int
    max_steps: int
    actions: list[str] = field(default_factory=list)


class EnvStandIn:
    def __init__(self, tasks: dict[str, bool] | None = None) -> None:
        self.sessions: dict[str, Session] = {}
        self.closed: list[str] = []
        self.resets: list[tuple[str, int]] = []  # (task, seed)
        self.forks: list[tuple[str, int]] = []  # (parent session, n)
        self.steps: list[tuple[str, str]] = []  # (session, action)
        self.fail_steps: set[str] = set()  # action shorts whose step fails on the infrastructure
        self.fail_resets = False
        self.down = False  # every call fails, as when nothing listens
        self.tasks = tasks if tasks is not None else {"local.playground-1": True}
        self.leases = 0
        self._ids = itertools.count()

    def _check_up(self) -> None:
        if self.down:
            raise ServiceUnavailable("env", "env service at http://127.0.0.1:9 is not reachable")

    def _observe(self, sid: str) -> Observation:
        s = self.sessions[sid]
        digest = hashlib.sha256(repr((s.task_id, s.seed, s.actions)).encode()).hexdigest()
        return Observation(
            session_id=sid,
            task_id=s.task_id,
            goal="click the button",
            step=len(s.actions),
            url=f"http://site.test/{len(s.actions)}",
            screenshot=ScreenshotRef(sha256=digest, width=1280, height=720),
        )

    def _new(self, session: Session) -> str:
        sid = f"session-{next(self._ids):04d}"
        self.sessions[sid] = session
        return sid

    async def reset(self, task_id: str, seed: int = 0, max_steps: int = 30, run_id: str = "") -> ResetResponse:
        self._check_up()
        if self.fail_resets:
            raise ServiceUnavailable("env", "503: no browser context is free")
        self.resets.append((task_id, seed))
        sid = self._new(Session(task_id, seed, max_steps))
        return ResetResponse(observation=self._observe(sid))

    async def fork(self, session_id: str, n: int) -> ForkResponse:
        self._check_up()
        self.forks.append((session_id, n))
        s = self.sessions[session_id]
        copies = [self._new(Session(s.task_id, s.seed, s.max_steps, list(s.actions))) for _ in range(n)]
        return ForkResponse(
            parent_id=session_id,
            method=ForkMethod.SNAPSHOT,
            sessions=[ResetResponse(observation=self._observe(c)) for c in copies],
        )

    async def step(self, session_id: str, action: Action) -> StepResponse:
        self._check_up()
        self.steps.append((session_id, action.short()))
        if action.short() in self.fail_steps:
            raise ServiceUnavailable("env", f"browser of {session_id} crashed")
        s = self.sessions[session_id]
        s.actions.append(action.short())
        terminated = action.action.value == "terminate"
        truncated = not terminated and len(s.actions) >= s.max_steps
        info = {"task_success": action.status == "success"} if terminated else {}
        return StepResponse(
            observation=self._observe(session_id), terminated=terminated, truncated=truncated, info=info
        )

    async def close(self, session_id: str) -> None:
        self.closed.append(session_id)
        self.sessions.pop(session_id, None)

    async def screenshot(self, sha256: str) -> bytes:
        self._check_up()
        return b"\x89PNG " + sha256.encode()

    @contextlib.asynccontextmanager
    async def hold_lease(self, owner: str | None = None) -> AsyncIterator[None]:
        self.leases += 1
        try:
            yield
        finally:
            self.leases -= 1

    async def reachability(self, domain: str, timeout_s: float = 3.0) -> list[TaskReachability]:
        self._check_up()
        return [
            TaskReachability(
                task_id=t,
                backend="local" if t.startswith("local.") else "real",
                origin=f"http://{t.split('-')[0]}.test",
                reachable=ok,
                reason="" if ok else "connection refused",
            )
            for t, ok in self.tasks.items()
            if domain in t
        ]

    async def domains(self) -> list[str]:
        self._check_up()
        return sorted({t.split(".", 1)[1].rsplit("-", 1)[0] for t in self.tasks})

    async def aclose(self) -> None:
        pass


class RewardStandIn:
    """Pays ``x / 1000`` for a click at x (so the rightmost candidate is the best), 0 otherwise."""

    def __init__(self) -> None:
        self.requests: list[RewardRequest] = []

    async def reward(self, request: RewardRequest) -> RewardBreakdown:
        self.requests.append(request)
        if request.infra_error:
            return RewardBreakdown(transition_id=request.transition_id, infra_error=True)
        a = request.action
        total = a.coordinate[0] / 1000 if a is not None and a.coordinate is not None else 0.0
        return RewardBreakdown(transition_id=request.transition_id, total=total)

    async def aclose(self) -> None:
        pass


class PolicyStandIn:
    """Answers each request with ``script(n, step_index)``: the actions of its n candidates.

    ``None`` in a script's answer is a candidate that did not parse.
    """

    base_model = "halo-base"

    def __init__(self, script: Callable[[int, int], list[Action | None]] | None = None) -> None:
        self.script = script or (lambda n, i: [click(100 * (k + 1)) for k in range(n)])
        self.requests: list[dict] = []  # model, n, temperature, seed, history

    async def sample_actions(self, screenshot_png, goal, history=(), n=8, temperature=1.0, seed=None, **kw):
        self.requests.append(
            {"model": kw.get("model"), "n": n, "temperature": temperature, "seed": seed, "history": list(history)}
        )
        actions = self.script(n, len(self.requests) - 1)
        return SampleResult(
            model=kw.get("model") or self.base_model,
            prompt_token_ids=[1, 2, 3],
            candidates=[_candidate(i, a) for i, a in enumerate(actions)],
            latency_s=0.0,
        )

    async def aclose(self) -> None:
        pass


def _candidate(index: int, action: Action | None) -> Candidate:
    error = None if action is not None else ActionParseError(reason=ParseErrorReason.NO_TOOL_CALL, detail="no call")
    return Candidate(
        index=index,
        text=action.short() if action else "I would click",
        action=action,
        parse_error=error,
        token_ids=[7, 8],
        logprobs=[-0.5, -0.25],
    )


def fixed_policy(version: PolicyVersion) -> Callable[[str], Awaitable[PolicyVersion]]:
    async def current(run_id: str) -> PolicyVersion:
        return version

    return current


def services(
    env: EnvStandIn | None = None,
    policy: PolicyStandIn | None = None,
    reward: RewardStandIn | None = None,
    current: Callable[[str], Awaitable[PolicyVersion]] | None = None,
) -> Services:
    return Services(
        env=env or EnvStandIn(),
        policy=policy or PolicyStandIn(),
        reward=reward or RewardStandIn(),
        current_policy=current or fixed_policy(version0("run-a")),
    )


def version0(run_id: str) -> PolicyVersion:
    return PolicyVersion(run_id=run_id, version=0, adapter_name="halo-base", created_at=0.0)


def job_for(run_id: str = "run-a", kind: JobKind = "train_step_group", **fields) -> RolloutJob:
    """A job of ``kind`` with the tests' usual values (``fields`` override them), validated as the
    job stream validates it. A search job needs its ``mcts`` settings passed."""
    base = {
        "job_id": f"{run_id}-j0",
        "run_id": run_id,
        "task_id": "local.playground-1",
        "group_id": f"{run_id}-j0",
        "policy": version0(run_id),
        "temperature": 1.0,
        "seed": 7,
        "max_steps": 2,
        "sampling": SamplingParams(max_tokens=64, structured_outputs="regex", history_limit=8, viewport=Viewport()),
    }
    if kind in ("train_step_group", "train_episode_group"):
        base["group_size"] = 3
    elif kind == "eval":
        del base["temperature"]  # eval jobs are greedy
    return JOB_ADAPTER.validate_python({**base, **fields, "kind": kind})
