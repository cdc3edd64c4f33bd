"""Sessions: the environment's core loop.

    create(task)   lease a context -> backend.setup (the site's /config) -> observe
    step(action)   execute -> settle -> observe, all under one timeout -> at the end: /finish + evals
    fork(n)        capture browser state -> n fresh contexts restored to it (or reset + replay)
    snapshot / restore, validate, close; a reaper closes idle sessions and those of expired leases

Failure policy. An action the page cannot take is the agent's error: it is reported in the
observation and the step counts. A failure of the browser (a crash, a dead process, a page that
stops answering, e.g. ``while (true) {}``) is an infrastructure error: the step answers within
``step_timeout_s`` with the previous observation and ``last_action_error_kind = "infra"``, the
action does not count, and the session is rebuilt in a fresh context from its last checkpoint (the
browser state captured with every observation) before its next request is served.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import Browser, Page
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError
from pydantic import ValidationError

from halo.schemas import (
    Action,
    ActionType,
    CreateSessionRequest,
    ErrorKind,
    ForkMethod,
    ForkResponse,
    Observation,
    ResetResponse,
    ScreenshotRef,
    SessionInfo,
    Snapshot,
    StepResponse,
    Task,
    ValidationResult,
    Viewport,
    new_id,
)
from halo.schemas.env import LeaseInfo, LeaseReleased
from halo.screenshots import ScreenshotStore
from halo.service import ServiceError, replace_lone_surrogates
from halo.settings.env import EnvSettings
from halo_env import browser_state, metrics
from halo_env.allowlist import NetworkGuard
from halo_env.backends.base import TaskBackend, TaskUnavailable
from halo_env.executor import InfraError, Pointer, execute
from halo_env.leases import LeaseBook
from halo_env.page_js import OBSERVE
from halo_env.pool import BrowserPool, Lease, PoolExhausted

logger = logging.getLogger("halo.env.sessions")

_ENDS_EPISODE = (ActionType.TERMINATE, ActionType.ANSWER)
_CAPTURE_REFUSED = "Unable to capture screenshot"
_NAVIGATING = ("Execution context was destroyed", "navigation", "Cannot find context")


@dataclass(eq=False)
class Session:
    id: str
    task: Task
    backend: TaskBackend
    lease: Lease
    max_steps: int
    run_id: str
    seed: int = 0
    step: int = 0
    actions: list[Action] = field(default_factory=list)
    pointer: Pointer = field(default_factory=Pointer)
    answer: str | None = None
    terminated: bool = False
    truncated: bool = False
    infra_errors: int = 0
    created_at: float = field(default_factory=time.time)
    last_used_at: float = field(default_factory=time.time)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_obs: Observation | None = None
    checkpoint: dict[str, Any] | None = None  # browser state at last_obs, for recovery
    pending_infra: str | None = None  # a failure noticed between steps (browser lost), told at the next step
    recovery: asyncio.Task | None = None
    popups: set[asyncio.Task] = field(default_factory=set)  # new tabs being folded into the session's tab
    closed: bool = False
    lease_id: str | None = None  # the owner's session lease (halo_env.leases); None: idle TTL only

    @property
    def ended(self) -> bool:
        return self.terminated or self.truncated

    def info(self) -> SessionInfo:
        return SessionInfo(
            session_id=self.id,
            task_id=self.task.id,
            step=self.step,
            created_at=self.created_at,
            last_used_at=self.last_used_at,
            terminated=self.terminated,
            truncated=self.truncated,
            lease_id=self.lease_id,
        )


class SessionManager:
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
        self.leases = LeaseBook(settings.lease_ttl_s)
        pool.on_browser_lost = self._on_browser_lost

    # -- lookup ---------------------------------------------------------------------------------
    def backend_for(self, task_id: str) -> TaskBackend:
        for backend in self.backends:
            if backend.handles(task_id):
                return backend
        raise ServiceError(404, f"unknown task {task_id!r}: no backend serves this id (use local.* or v2.*)")

    def task(self, task_id: str) -> tuple[TaskBackend, Task]:
        backend = self.backend_for(task_id)
        try:
            return backend, backend.get_task(task_id)
        except KeyError:
            raise ServiceError(404, f"unknown task {task_id!r}") from None
        except TaskUnavailable as exc:
            raise ServiceError(503, str(exc)) from None

    def tasks(self, domain: str | None) -> list[Task]:
        out: list[Task] = []
        for backend in self.backends:
            with contextlib.suppress(TaskUnavailable):
                out.extend(backend.list_tasks(domain))
        return out

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
        return await self._spawn(
            task, backend, req.max_steps, run_id, req.seed, state=None, kind="reset", lease_id=req.lease_id
        )

    async def restore(self, snapshot: Snapshot) -> ResetResponse:
        backend, task = self.task(snapshot.task_id)
        meta = snapshot.storage_state.get("halo_page") or {}
        max_steps = meta.get("max_steps") if isinstance(meta.get("max_steps"), int) else 30
        max_steps = min(max(max_steps, 1), 500)
        if snapshot.step > 10_000 or len(snapshot.actions) > 500:
            raise ServiceError(422, "snapshot step or action prefix is implausibly long (max 500 actions)")
        run_id = meta.get("run_id") if isinstance(meta.get("run_id"), str) else self.s.real_run_id
        allowed = backend.allowed_origins(task) | set(self.s.extra_allowed_origins)
        probe = NetworkGuard()
        probe.configure(allowed)
        if not snapshot.url.startswith(("http://", "https://")) or not probe.allows(snapshot.url):
            raise ServiceError(422, f"snapshot url {snapshot.url[:200]!r} is not on the task's site")
        try:
            state = browser_state.from_snapshot(snapshot)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ServiceError(422, f"invalid snapshot: storage_state.{where}: {err['msg']}") from None
        if state["page"].get("origin") and not probe.allows(state["page"]["origin"]):
            raise ServiceError(422, "snapshot storage belongs to an origin outside the task's site")
        if backend.fork_method is not ForkMethod.SNAPSHOT:
            state = None
        return await self._spawn(
            task,
            backend,
            max(max_steps, min(snapshot.step + 1, 10_001)),
            run_id,
            0,
            state=state,
            kind="restore",
            prefix=list(snapshot.actions),
            step=snapshot.step,
            answer=snapshot.answer,
        )

    async def fork(self, session_id: str, n: int) -> ForkResponse:
        parent = self.get(session_id)
        async with parent.lock:
            await self._settled(parent)
            if parent.ended:
                raise ServiceError(409, "the episode has ended; there is nothing to fork")
            method = parent.backend.fork_method
            state = None
            if method is ForkMethod.SNAPSHOT:
                state = await self._guarded(
                    browser_state.capture(parent.lease, self.s.evaluate_timeout_s, (parent.pointer.x, parent.pointer.y))
                )

            async def child() -> ResetResponse:
                async with self._fork_slots:
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
                    )

            results = await asyncio.gather(*(child() for _ in range(n)), return_exceptions=True)
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
        return ForkResponse(parent_id=parent.id, method=method, sessions=made)

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
    ) -> ResetResponse:
        t0 = time.perf_counter()
        try:
            lease = await self.pool.acquire()
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
        try:
            budget = self.s.navigation_timeout_s * 2 + self.s.step_timeout_s * (1 + len(session.actions))
            await asyncio.wait_for(self._build(session, state), budget)
            obs, checkpoint = await asyncio.wait_for(self._observe(session), self.s.step_timeout_s)
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
        metrics.RESETS.labels(kind).inc()
        metrics.SESSIONS.set(len(self._sessions))
        seconds = time.perf_counter() - t0
        metrics.RESET_SECONDS.observe(seconds)
        method = backend.fork_method.value if kind != "reset" else None
        info = {"backend": backend.name, "kind": kind, "seconds": round(seconds, 4)}
        if method:
            info["method"] = method
        return ResetResponse(observation=obs, info=info)

    async def _build(self, session: Session, state: dict[str, Any] | None) -> None:
        """Bring a freshly leased context to the session's state: restore a capture, or reset + replay."""
        lease = session.lease
        lease.guard.configure(session.backend.allowed_origins(session.task) | set(self.s.extra_allowed_origins))

        def on_popup(popup: Page) -> None:
            task = asyncio.ensure_future(self._follow_popup(session, popup))
            session.popups.add(task)
            task.add_done_callback(session.popups.discard)

        lease.page.on("popup", on_popup)
        if state is not None:
            await browser_state.restore(lease, state)
            return
        await session.backend.setup(lease.page, session.task, session.run_id, session.seed)
        if session.actions:  # replay fork: the same actions from the same reset
            replay_pointer = Pointer()
            for action in session.actions:
                if action.action not in _ENDS_EPISODE:
                    await execute(lease.page, action, self.viewport, replay_pointer, self.s.default_wait_s)
                    await self._settle(lease.page)
            session.pointer = replay_pointer

    async def _follow_popup(self, session: Session, popup: Page) -> None:
        """One tab per session: a link that opens a new tab is followed in the session's own tab."""
        with contextlib.suppress(PlaywrightError):
            await popup.wait_for_load_state("commit", timeout=self.s.navigation_timeout_s * 1000)
        url = popup.url
        with contextlib.suppress(PlaywrightError):
            await popup.close()
        if url.startswith("http") and session.lease.guard.allows(url) and not session.lease.page.is_closed():
            with contextlib.suppress(PlaywrightError):
                await session.lease.page.goto(url, wait_until="commit")

    # -- step -----------------------------------------------------------------------------------
    async def step(self, session_id: str, action: Action) -> StepResponse:
        session = self.get(session_id)
        async with session.lock:
            await self._settled(session)
            session.last_used_at = time.time()
            if session.pending_infra is not None:  # the browser died between steps; the action is not taken
                message, session.pending_infra = session.pending_infra, None
                return self._infra_answer(session, message, count=False)
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
                return self._infra_failure(
                    session, f"the page stopped responding: step abandoned after {self.s.step_timeout_s:g} s"
                )
            except (InfraError, PlaywrightError) as exc:
                metrics.INFRA_ERRORS.labels("browser").inc()
                first = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                return self._infra_failure(session, f"browser failure: {first}")

            session.step += 1
            session.actions.append(action)
            session.pointer = pointer
            session.checkpoint = checkpoint
            if action.action is ActionType.ANSWER:
                session.answer = action.text
            # A clone whose state says `done` (the Playground after its one submission) allows no
            # more interaction: the episode ends here, so success is credited to this step.
            site_done = bool((obs.site_state or {}).get("done"))
            session.terminated = action.action in _ENDS_EPISODE or site_done
            session.truncated = not session.terminated and session.step >= session.max_steps
            reward, info = 0.0, {"seconds": 0.0}
            if session.ended:
                result = await self._validate(session, obs.site_state)
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
        if action.action not in _ENDS_EPISODE and action.action is not ActionType.WAIT:
            await self._settle(page)
        if session.popups:  # a link opened a new tab: observe the page it leads to
            await asyncio.gather(*session.popups, return_exceptions=True)
            await self._settle(page)
        obs, checkpoint = await self._observe(session, error, step=session.step + 1, pointer=pointer)
        return error, obs, checkpoint

    async def _settle(self, page: Page) -> None:
        """Give the page time to react, and to finish a navigation the action started."""
        await asyncio.sleep(self.s.settle_ms / 1000)
        with contextlib.suppress(PlaywrightTimeoutError):
            await page.wait_for_load_state("load", timeout=self.s.navigation_timeout_s * 1000)

    async def _observe(
        self, session: Session, error: str | None = None, step: int | None = None, pointer: Pointer | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        lease = session.lease
        raw, png = await self._capture(session)
        cookies = await lease.context.cookies()
        sha = self.store.put(png)
        blocked, navigation = lease.guard.drain()
        metrics.BLOCKED.inc(len(blocked))
        if navigation is not None and error is None:
            error = f"navigation to {navigation[:200]} was blocked: only the task's site may be opened"
        p = pointer or session.pointer
        obs = Observation(
            session_id=session.id,
            task_id=session.task.id,
            goal=session.task.goal,
            step=session.step if step is None else step,
            url=raw["url"],
            title=(raw.get("title") or "")[:300],
            screenshot=ScreenshotRef(
                sha256=sha,
                width=self.viewport.width,
                height=self.viewport.height,
                url=f"{self.public_url}/screenshots/{sha}",
            ),
            axtree=raw.get("axtree") or "",
            last_action_error=error,
            last_action_error_kind=ErrorKind.AGENT if error else None,
            answer=session.answer,
            site_state=raw.get("siteState") if isinstance(raw.get("siteState"), dict) else None,
            blocked_requests=blocked,
            terminated=session.terminated,
            truncated=session.truncated,
        )
        checkpoint = {"url": raw["url"], "cookies": cookies, "page": raw.get("state"), "pointer": [p.x, p.y]}
        return obs, checkpoint

    async def _capture(self, session: Session) -> tuple[dict[str, Any], bytes]:
        """Read the page (url, ids, AX tree, site state) and take its screenshot.

        Chromium can refuse a capture ("Unable to capture screenshot") in the moment a link with
        target=_blank opens its new tab, before Playwright's `popup` event has reached
        `_follow_popup` (seen under load in the full test run). That is not a broken browser:
        fold the popup in, make sure the session's tab is in front and read the page again.
        """
        page = session.lease.page
        for attempt in range(3):
            raw = await self._evaluate(page)
            try:
                png = await page.screenshot(type="png", caret="hide", animations=self.s.screenshot_animations)
                return raw, png
            except PlaywrightError as exc:
                if attempt == 2 or _CAPTURE_REFUSED not in str(exc):
                    raise
            await asyncio.sleep(self.s.settle_ms / 1000)  # time for the popup event to arrive
            if session.popups:
                await asyncio.gather(*session.popups, return_exceptions=True)
                await self._settle(page)
            await page.bring_to_front()
        raise AssertionError("unreachable")

    async def _evaluate(self, page: Page) -> dict[str, Any]:
        for attempt in range(3):
            try:
                raw = await asyncio.wait_for(
                    page.evaluate(OBSERVE, {"maxChars": self.s.axtree_max_chars, "capture": True}),
                    self.s.evaluate_timeout_s,
                )
                # A page's text may hold lone surrogates (JavaScript strings allow them); they
                # cannot be encoded into the answer, so they become U+FFFD here, where they enter.
                return replace_lone_surrogates(raw)
            except PlaywrightError as exc:  # a navigation replaced the document under the script: observe the new one
                if attempt == 2 or not any(m in str(exc) for m in _NAVIGATING):
                    raise
                with contextlib.suppress(PlaywrightTimeoutError):
                    await page.wait_for_load_state("load", timeout=self.s.navigation_timeout_s * 1000)
        raise AssertionError("unreachable")

    # -- infrastructure failures ------------------------------------------------------------------
    def _infra_failure(self, session: Session, message: str) -> StepResponse:
        logger.warning("session %s step %d: %s", session.id[:13], session.step, message)
        session.pending_infra = None  # this answer tells the client; do not tell it twice
        self._start_recovery(session)
        return self._infra_answer(session, message, count=True)

    def _infra_answer(self, session: Session, message: str, count: bool) -> StepResponse:
        if count:
            session.infra_errors += 1
            if session.infra_errors >= self.s.max_infra_errors:
                session.truncated = True
                message += f" ({session.infra_errors} infrastructure errors: the episode is truncated)"
        metrics.STEPS.labels("infra_error").inc()
        assert session.last_obs is not None
        obs = session.last_obs.model_copy(
            update={
                "last_action_error": message,
                "last_action_error_kind": ErrorKind.INFRA,
                "blocked_requests": [],
                "truncated": session.truncated,
            }
        )
        return StepResponse(
            observation=obs,
            truncated=session.truncated,
            info={"infra_error": True, "action_taken": False, "restored_to_step": session.step},
        )

    def _start_recovery(self, session: Session) -> None:
        if session.recovery is None or session.recovery.done():
            session.recovery = asyncio.create_task(self._recover(session))

    async def _recover(self, session: Session) -> None:
        """Replace the session's context with a fresh one rebuilt from its last checkpoint."""
        t0 = time.perf_counter()
        await self.pool.discard(session.lease)
        if session.closed:
            return
        try:
            session.lease = await self.pool.acquire()
            state = session.checkpoint if session.backend.fork_method is ForkMethod.SNAPSHOT else None
            budget = self.s.navigation_timeout_s * 2 + self.s.step_timeout_s * (1 + len(session.actions))
            await asyncio.wait_for(self._build(session, state), budget)
            obs, checkpoint = await asyncio.wait_for(self._observe(session), self.s.step_timeout_s)
            # Keep what the client was last shown; adopt the fresh screenshot and ids of the rebuilt page.
            session.last_obs, session.checkpoint = obs, checkpoint
            logger.info("session %s rebuilt in %.2f s", session.id[:13], time.perf_counter() - t0)
        except Exception as exc:  # the session cannot continue: say so at its next request
            logger.warning("session %s could not be rebuilt: %s", session.id[:13], exc)
            session.truncated = True
            session.pending_infra = f"the session could not be rebuilt after an infrastructure error: {str(exc)[:200]}"

    def _on_browser_lost(self, browser: Browser) -> None:
        for session in list(self._sessions.values()):
            if session.lease.slot.browser is browser and not session.closed:
                if not session.lock.locked():  # an in-flight step reports the failure itself
                    session.pending_infra = "the browser process died; the session was rebuilt from its last state"
                metrics.INFRA_ERRORS.labels("browser_lost").inc()
                self._start_recovery(session)

    async def _settled(self, session: Session) -> None:
        """Wait for a running recovery; then the session is usable (or marked truncated)."""
        if session.recovery is not None and not session.recovery.done():
            with contextlib.suppress(Exception):
                await session.recovery
        if session.closed:
            raise ServiceError(404, f"unknown session {session.id[:80]!r} (closed)")

    async def _guarded(self, coro: Any) -> Any:
        """Run a page operation outside a step; a browser failure is a 503 that the client may retry."""
        try:
            return await coro
        except (PlaywrightError, InfraError, TimeoutError) as exc:
            raise ServiceError(503, f"the session's browser failed: {str(exc)[:200] or type(exc).__name__}") from None

    # -- snapshot / validate / close ------------------------------------------------------------
    async def snapshot(self, session_id: str) -> Snapshot:
        session = self.get(session_id)
        async with session.lock:
            await self._settled(session)
            session.last_used_at = time.time()
            state = await self._guarded(
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
            await self._settled(session)
            session.last_used_at = time.time()
            site_state = None
            with contextlib.suppress(PlaywrightError, TimeoutError):
                raw = await asyncio.wait_for(
                    session.lease.page.evaluate("() => window.__HALO__ ? window.__HALO__.finish() : null"),
                    self.s.evaluate_timeout_s,
                )
                site_state = replace_lone_surrogates(raw) if isinstance(raw, dict) else None
            return await self._validate(session, site_state)

    async def _validate(self, session: Session, site_state: dict[str, Any] | None) -> ValidationResult:
        task, backend = session.task, session.backend
        try:
            finish = await asyncio.wait_for(
                backend.finish_state(session.lease.page, task, site_state), self.s.navigation_timeout_s
            )
        except (PlaywrightError, TimeoutError) as exc:
            return ValidationResult(task_id=task.id, success=None, reward=0.0, details=[f"/finish unreadable: {exc}"])
        try:
            return await backend.validate(task, finish, session.answer)
        except Exception as exc:  # an evaluator failure is "not evaluable", never a failed task or a 500
            logger.exception("validation of %s failed", task.id)
            return ValidationResult(
                task_id=task.id,
                success=None,
                reward=0.0,
                details=[f"evaluator error: {type(exc).__name__}: {str(exc)[:200]}"],
                finish_state=finish,
            )

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
            await self.pool.release(session.lease, reusable=session.infra_errors == 0)
        metrics.SESSIONS.set(len(self._sessions))

    async def reap(self) -> int:
        """Close unleased sessions unused for longer than the TTL; returns how many."""
        now = time.time()
        idle = [
            s
            for s in self._sessions.values()
            if s.lease_id is None and now - s.last_used_at > self.s.session_ttl_s and not s.lock.locked()
        ]
        for s in idle:
            logger.info("reaping session %s (idle %.0f s)", s.id[:13], now - s.last_used_at)
            with contextlib.suppress(ServiceError):
                await self.close(s.id)
            metrics.REAPED.inc()
        return len(idle)

    # -- leases ---------------------------------------------------------------------------------
    def renew_lease(self, lease_id: str) -> LeaseInfo:
        return self.leases.renew(lease_id).info()

    async def release_lease(self, lease_id: str) -> LeaseReleased:
        lease = self.leases.pop(lease_id)
        if lease is None:
            raise ServiceError(404, f"unknown lease {lease_id[:80]!r} (expired, released or never created)")
        return LeaseReleased(lease_id=lease_id, sessions_closed=await self._close_many(lease.sessions))

    async def expire_leases(self) -> int:
        """Close every session of the leases whose heartbeat stopped; returns how many sessions."""
        closed = 0
        for lease in self.leases.pop_expired():
            n = await self._close_many(lease.sessions)
            logger.warning(
                "lease %s of %s expired (no heartbeat for %.1f s): closed its %d sessions",
                lease.id[:14],
                lease.owner,
                time.monotonic() - lease.renewed_mono,
                n,
            )
            metrics.LEASE_EXPIRED_SESSIONS.inc(n)
            closed += n
        return closed

    async def _close_many(self, session_ids: set[str]) -> int:
        # Concurrently: a session in the middle of a step is closed when the step ends (its lock),
        # which must not hold up the others.
        results = await asyncio.gather(*(self.close(sid) for sid in list(session_ids)), return_exceptions=True)
        metrics.SESSIONS.set(len(self._sessions))
        return sum(r is None for r in results)

    async def reap_forever(self) -> None:
        """Expire leases every ``lease_sweep_s``; reap idle sessions every ``reap_interval_s``."""
        sweep_s = self.lease_sweep_s
        last_reap = time.monotonic()
        while True:
            await asyncio.sleep(min(sweep_s, self.s.reap_interval_s))
            try:
                await self.expire_leases()
                if time.monotonic() - last_reap >= self.s.reap_interval_s:
                    last_reap = time.monotonic()
                    await self.reap()
            except Exception:  # the reaper must outlive any one bad session
                logger.exception("reaper sweep failed")

    @property
    def lease_sweep_s(self) -> float:
        # A dead owner's sessions close within ttl + one sweep; a second at most keeps that near the TTL.
        return min(1.0, self.s.lease_ttl_s / 4)

    async def close_all(self) -> None:
        for session_id in list(self._sessions):
            with contextlib.suppress(Exception):
                await self.close(session_id)
