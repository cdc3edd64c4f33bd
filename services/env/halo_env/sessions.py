"""Sessions: the environment's core loop.

    create(task)   lease a context -> backend.setup (the site's /config) -> observe
    step(action)   execute -> settle -> observe, all under one timeout -> at the end: /finish + evals
    fork(n)        capture browser state -> n contexts rewound or restored to it (or reset + replay)
    snapshot / restore, validate, close; a reaper closes idle sessions and those of expired leases

An action the page cannot take is the agent's error: it is reported in the observation and the
step counts. A failure of the browser is an infrastructure error, answered and repaired by
``recovery.py``. Opening a page in a leased context (reset, fork, restore, rebuild) is
``opening.py``; reading a page into an observation is ``observation.py``. Checking a snapshot before
a restore is ``snapshot_checks.py``; judging an episode, ``validation.py``; the reset states kept
for rewinds, ``initial_states.py``. Parts of the manager live beside it: finding a task's backend
(``task_lookup.py``), leases and the reaper (``reaping.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from playwright.async_api import Error as PlaywrightError

from halo.schemas import (
    Action,
    ActionType,
    CreateSessionRequest,
    ForkMethod,
    ForkResponse,
    Observation,
    ResetResponse,
    SessionInfo,
    Snapshot,
    StepResponse,
    Task,
    ValidationResult,
    Viewport,
    new_id,
)
from halo.screenshots import ScreenshotStore
from halo.service import ServiceError, replace_lone_surrogates
from halo.settings.env import EnvSettings
from halo_env import browser_state, metrics
from halo_env.backends.base import TaskBackend
from halo_env.executor import InfraError, Pointer, execute
from halo_env.initial_states import InitialStates
from halo_env.leases import LeaseBook
from halo_env.observation import PageObserver
from halo_env.opening import PageOpener
from halo_env.pool import BrowserPool, PoolExhausted
from halo_env.reaping import SessionReaping
from halo_env.recovery import Recovery
from halo_env.session import ENDS_EPISODE, Session
from halo_env.snapshot_checks import check_snapshot
from halo_env.task_lookup import TaskLookup
from halo_env.validation import read_site_state, validate_session

logger = logging.getLogger("halo.env.sessions")


class SessionManager(TaskLookup, SessionReaping):
    def __init__(
        self, settings: EnvSettings, pool: BrowserPool, backends: list[TaskBackend], store: ScreenshotStore
    ) -> None:
        self.s = settings
        self.pool = pool
        self.backends = backends
        self.store = store
        self.viewport = Viewport(width=settings.viewport_width, height=settings.viewport_height)
        self.public_url = (settings.public_url or f"http://{settings.host}:{settings.port}").rstrip("/")
        self._sessions: dict[str, Session] = {}
        self._fork_slots = asyncio.Semaphore(settings.fork_parallelism)
        self._initial_states = InitialStates()
        self.leases = LeaseBook(settings.lease_ttl_s)
        self.observer = PageObserver(settings, store, self.viewport, self.public_url)
        self.opener = PageOpener(settings, self.observer)
        self.recovery = Recovery(settings, pool, self.opener)
        pool.on_browser_lost = lambda browser: self.recovery.browser_lost(self._sessions.values(), browser)

    # -- lookup ---------------------------------------------------------------------------------
    def get(self, session_id: str) -> Session:
        session = self._sessions.get(session_id)
        if session is None or session.closed:
            raise ServiceError(404, f"unknown session {session_id[:80]!r} (closed, reaped or never created)")
        return session

    def list(self) -> list[SessionInfo]:
        return [s.info() for s in self._sessions.values()]

    # -- create / restore / fork ------------------------------------------------------------------
    async def create(self, req: CreateSessionRequest) -> ResetResponse:
        backend, task = self.task(req.task_id)
        if req.lease_id is not None:
            self.leases.live(req.lease_id)  # refuse before a context is taken
        run_id = req.run_id or self.s.real_run_id
        # A reset of the clones is deterministic (task, seed, run id): the state its first
        # observation captured is rewound into a parked page instead of loading /config again.
        initial, initial_obs = self._initial_states.get((task.id, req.seed, run_id))
        return await self._spawn(
            task,
            backend,
            req.max_steps,
            run_id,
            req.seed,
            state=None,
            kind="reset",
            lease_id=req.lease_id,
            rewind_to=initial,
            like=initial_obs,
        )

    async def restore(self, snapshot: Snapshot, lease_id: str | None = None) -> ResetResponse:
        backend, task = self.task(snapshot.task_id)
        if lease_id is not None:
            self.leases.live(lease_id)  # refuse before a context is taken
        plan = check_snapshot(snapshot, backend, task, self.s)
        return await self._spawn(
            task,
            backend,
            plan.max_steps,
            plan.run_id,
            0,
            state=plan.state,
            kind="restore",
            lease_id=lease_id,
            prefix=list(snapshot.actions),
            step=snapshot.step,
            answer=snapshot.answer,
            rewind_to=plan.rewind_to,
        )

    async def fork(self, session_id: str, n: int, method: ForkMethod | None = None) -> ForkResponse:
        """``n`` copies of the session. ``method`` None: rewind into parked pages where there are
        some, snapshot restore for the rest (replay for replay backends); else only that method."""
        parent = self.get(session_id)
        backend_method = parent.backend.fork_method
        allowed = (
            {ForkMethod.REWIND, ForkMethod.SNAPSHOT} if backend_method is ForkMethod.SNAPSHOT else {backend_method}
        )
        if method is not None and method not in allowed:
            names = ", ".join(sorted(m.value for m in allowed))
            raise ServiceError(422, f"{parent.task.id} forks by {names}, not {method.value}")
        async with parent.lock:
            await self.recovery.settled(parent)
            if parent.infra_end is not None:  # the browser's failure, not the episode's end: say so
                raise ServiceError(
                    503, f"the session's browser failed and its episode was cut short: {parent.infra_end}"
                )
            if parent.ended:
                raise ServiceError(409, "the episode has ended; there is nothing to fork")
            state = None
            if backend_method is ForkMethod.SNAPSHOT:
                state = await self.recovery.guarded(
                    browser_state.capture(parent.lease, self.s.evaluate_timeout_s, (parent.pointer.x, parent.pointer.y))
                )
            rewind_to = state if method in (None, ForkMethod.REWIND) else None
            # The fork slots bound concurrent page loads. A child that will rewind a parked page
            # loads nothing, so those children start at once: a step group's forks are one wave of
            # rewinds, not n/fork_parallelism (a parked page another call takes first means a load
            # outside the slots, bounded by n).
            app_key = browser_state.rewind_key(rewind_to) if rewind_to is not None else None
            rewinds = self.pool.parked_at(app_key) if app_key else 0

            async def child(i: int) -> ResetResponse:
                async with contextlib.nullcontext() if i < rewinds else self._fork_slots:
                    return await self._spawn(
                        parent.task,
                        parent.backend,
                        parent.max_steps,
                        parent.run_id,
                        parent.seed,
                        state=state,
                        kind="fork",
                        prefix=list(parent.actions),
                        step=parent.step,
                        answer=parent.answer,
                        pointer=Pointer(parent.pointer.x, parent.pointer.y),
                        lease_id=parent.lease_id,  # a fork belongs to its parent's owner
                        rewind_to=rewind_to,
                        like=parent.last_obs,
                    )

            results = await asyncio.gather(*(child(i) for i in range(n)), return_exceptions=True)
            parent.last_used_at = time.time()
        made = [r for r in results if isinstance(r, ResetResponse)]
        failed = [r for r in results if not isinstance(r, ResetResponse)]
        if failed:
            for r in made:
                await self.close(r.observation.session_id)
            first = failed[0]
            if isinstance(first, ServiceError):
                raise first
            raise ServiceError(502, f"fork failed: {type(first).__name__}: {str(first)[:200]}")
        used = {r.info["method"] for r in made}
        # One method when every child used it; a mix (parked pages ran out) reports the slower.
        overall = ForkMethod.REWIND if used == {ForkMethod.REWIND.value} else backend_method
        return ForkResponse(parent_id=parent.id, method=overall, sessions=made)

    async def _spawn(
        self,
        task: Task,
        backend: TaskBackend,
        max_steps: int,
        run_id: str,
        seed: int,
        *,
        state: dict[str, Any] | None,
        kind: str,
        prefix: list[Action] | None = None,
        step: int = 0,
        answer: str | None = None,
        pointer: Pointer | None = None,
        lease_id: str | None = None,
        rewind_to: dict[str, Any] | None = None,
        like: Observation | None = None,
    ) -> ResetResponse:
        """A new session at ``state`` (None: the task's reset, and the replay of ``prefix``);
        ``rewind_to`` is that state too, used instead when a page parked at its app is free, and
        ``like`` its observation when known (a rewound page that reads the same reuses its screenshot)."""
        t0 = time.perf_counter()
        app_url = browser_state.rewind_key(rewind_to) if rewind_to is not None else None
        try:
            lease = await self.pool.acquire(app_url)
        except PoolExhausted as exc:
            raise ServiceError(503, f"no browser context is free: {exc}; close sessions or retry later") from None
        except (PlaywrightError, TimeoutError) as exc:
            raise ServiceError(503, f"could not start a browser: {str(exc)[:300]}") from None
        session = Session(
            id=new_id("sess"),
            task=task,
            backend=backend,
            lease=lease,
            max_steps=max_steps,
            run_id=run_id,
            seed=seed,
            step=step,
            actions=list(prefix or []),
            answer=answer,
            pointer=pointer or Pointer(),
            lease_id=lease_id,
        )
        rewound = app_url is not None and lease.app_url == app_url
        try:
            if rewound:
                obs, checkpoint = await self.opener.open(session, rewind_to, rewind=True, like=like)
            else:
                obs, checkpoint = await self.opener.open(session, state)
        except (PlaywrightError, InfraError, TimeoutError) as exc:
            await self.pool.discard(lease)
            detail = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            raise ServiceError(502, f"could not open {task.id} at {backend.site_url(task)}: {detail}") from None
        except BaseException:
            await self.pool.discard(lease)
            raise
        session.last_obs, session.checkpoint = obs, checkpoint
        session.last_used_at = time.time()  # idle time starts now, not before a slow reset
        if lease_id is not None:
            try:  # the lease may have expired while the page loaded: its owner is gone
                self.leases.attach(lease_id, session.id)
            except ServiceError:
                await self.pool.discard(lease)
                raise
        self._sessions[session.id] = session
        metrics.SESSIONS.set(len(self._sessions))
        seconds = time.perf_counter() - t0
        metrics.RESET_SECONDS.observe(seconds)
        if kind == "reset" and not rewound and backend.fork_method is ForkMethod.SNAPSHOT:
            self._initial_states.remember((task.id, seed, run_id), checkpoint, obs)
        method = ForkMethod.REWIND.value if rewound else "setup" if kind == "reset" else backend.fork_method.value
        metrics.RESETS.labels(kind, method).inc()
        info = {"backend": backend.name, "kind": kind, "method": method, "seconds": round(seconds, 4)}
        return ResetResponse(observation=obs, info=info)

    # -- step -----------------------------------------------------------------------------------
    async def step(self, session_id: str, action: Action) -> StepResponse:
        session = self.get(session_id)
        async with session.lock:
            await self.recovery.settled(session)
            session.last_used_at = time.time()
            if session.pending_infra is not None:  # the browser died between steps; the action is not taken
                message, session.pending_infra = session.pending_infra, None
                # A browser lost between steps is as much an infrastructure error as one lost during a
                # step: both count toward max_infra_errors (which path sees it is a race). A session
                # that could not be rebuilt is already truncated and says so.
                return self.recovery.answer(session, message, count=not session.truncated)
            if session.ended:
                raise ServiceError(409, "the episode has ended (terminated or truncated): fork or create a session")
            t0 = time.perf_counter()
            pointer = Pointer(session.pointer.x, session.pointer.y)
            try:
                error, obs, checkpoint = await asyncio.wait_for(
                    self._act(session, action, pointer), self.s.step_timeout_s
                )
            except TimeoutError:
                metrics.INFRA_ERRORS.labels("timeout").inc()
                return self.recovery.failed_step(
                    session, f"the page stopped responding: step abandoned after {self.s.step_timeout_s:g} s"
                )
            except (InfraError, PlaywrightError) as exc:
                metrics.INFRA_ERRORS.labels("browser").inc()
                first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                return self.recovery.failed_step(session, f"browser failure: {first}")

            session.step += 1
            session.actions.append(action)
            session.pointer = pointer
            session.checkpoint = checkpoint
            if action.action is ActionType.ANSWER:
                session.answer = action.text
            # A clone whose state says `done` (the Playground after its one submission) allows no
            # more interaction: the episode ends here, so success is credited to this step.
            site_done = bool((obs.site_state or {}).get("done"))
            session.terminated = action.action in ENDS_EPISODE or site_done
            session.truncated = not session.terminated and session.step >= session.max_steps
            reward, info = 0.0, {"seconds": 0.0}
            if session.ended:
                result = await validate_session(session, obs.site_state, self.s.navigation_timeout_s)
                reward = result.reward if result.success else 0.0
                info.update(task_success=result.success, finish_state=result.finish_state, validation=result.details)
                if action.action is ActionType.TERMINATE:
                    info["agent_status"] = action.status
            obs = obs.model_copy(
                update={"terminated": session.terminated, "truncated": session.truncated, "answer": session.answer}
            )
            session.last_obs = obs
            seconds = time.perf_counter() - t0
            info["seconds"] = round(seconds, 4)
            metrics.STEP_SECONDS.observe(seconds)
            metrics.STEPS.labels("agent_error" if error else "ok").inc()
            return StepResponse(
                observation=obs, reward=reward, terminated=session.terminated, truncated=session.truncated, info=info
            )

    async def _act(
        self, session: Session, action: Action, pointer: Pointer
    ) -> tuple[str | None, Observation, dict[str, Any]]:
        page = session.lease.page
        if session.lease.crashed:
            raise InfraError("the page crashed")
        error = await execute(page, action, self.viewport, pointer, self.s.default_wait_s)
        if action.action not in ENDS_EPISODE and action.action is not ActionType.WAIT:
            await self.observer.settle(page)
        if session.popups:  # a link opened a new tab: observe the page it leads to
            await asyncio.gather(*session.popups, return_exceptions=True)
            await self.observer.settle(page)
        obs, checkpoint = await self.observer.observe(session, error, step=session.step + 1, pointer=pointer)
        return error, obs, checkpoint

    # -- snapshot / validate / close ------------------------------------------------------------
    async def snapshot(self, session_id: str) -> Snapshot:
        session = self.get(session_id)
        async with session.lock:
            await self.recovery.settled(session)
            session.last_used_at = time.time()
            state = await self.recovery.guarded(
                browser_state.capture(session.lease, self.s.evaluate_timeout_s, (session.pointer.x, session.pointer.y))
            )
            return browser_state.to_snapshot(
                replace_lone_surrogates(state),  # forks copy the page's storage exactly; the wire cannot
                session.task.id,
                session.step,
                session.actions,
                session.answer,
                max_steps=session.max_steps,
                run_id=session.run_id,
            )

    async def validate(self, session_id: str) -> ValidationResult:
        session = self.get(session_id)
        async with session.lock:
            await self.recovery.settled(session)
            session.last_used_at = time.time()
            site_state = await read_site_state(session.lease.page, self.s.evaluate_timeout_s)
            return await validate_session(session, site_state, self.s.navigation_timeout_s)

    async def close(self, session_id: str) -> None:
        session = self._sessions.pop(session_id, None)
        if session is None:
            raise ServiceError(404, f"unknown session {session_id[:80]!r}")
        session.closed = True
        if session.lease_id is not None:
            self.leases.detach(session.lease_id, session_id)
        if session.recovery is not None and not session.recovery.done():
            session.recovery.cancel()
            with contextlib.suppress(BaseException):
                await session.recovery
        async with session.lock:
            with contextlib.suppress(Exception):
                await session.backend.teardown(session.lease.page)
            app_url = browser_state.rewind_url(session.checkpoint) if session.checkpoint else None
            if app_url and session.infra_errors == 0 and session.lease.page.url.split("#")[0] == app_url:
                await self.pool.park(session.lease, browser_state.rewind_key(session.checkpoint))
            else:
                await self.pool.release(session.lease, reusable=session.infra_errors == 0)
        metrics.SESSIONS.set(len(self._sessions))

    async def close_all(self) -> None:
        for session_id in list(self._sessions):
            with contextlib.suppress(Exception):
                await self.close(session_id)
