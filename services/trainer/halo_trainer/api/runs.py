"""Runs: their folders and the task that trains them (their status in Redis: ``registry``).

One run trains at a time per trainer process (the learner owns the accelerator). A run whose
status says ``running`` when the trainer starts was interrupted by a crash: it is resumed from its
last checkpoint automatically. Whether a run may be created is decided here (``RunRefused``), so
the API's routes only translate.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
import logging
import secrets
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import redis.asyncio as aioredis
from pydantic import ValidationError
from redis.exceptions import RedisError

from halo.policy_client import PolicyClient
from halo.schemas import Algorithm, RunPhase, RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings import resolved
from halo.settings.trainer import TrainerSettings
from halo.transport import CallError
from halo_trainer import keys
from halo_trainer.api.capabilities import learner_refusals, refusals, replica_refusals, served_capabilities
from halo_trainer.api.registry import RunRegistry
from halo_trainer.api.task_sets import TaskProbe, TaskSet, TaskSetError, choose_tasks
from halo_trainer.checks.prompt_check import PromptCheckFailed
from halo_trainer.config import DefaultsError, RunConfig, checked_defaults, profile_for, resolve, saved_run
from halo_trainer.learner.for_run import learner_model as learner_model  # the tests' and tools' import
from halo_trainer.mcts.search import check_critic
from halo_trainer.observe.trackers import Trackers
from halo_trainer.observe.trackers import missing as missing_trackers

if TYPE_CHECKING:  # the loops import torch: loaded when a run starts, not with the API
    from halo_trainer.loop_parts.loop import Loop

logger = logging.getLogger("halo.trainer.runs")


class ModelMismatch(RuntimeError):
    """The model the learner would load is not the one the policy server serves."""


class MemoryPlanRefused(RuntimeError):
    """The run's memory plan (``halo_trainer.learner.memory.plan``) does not fit the learner's card."""


class RunRefused(Exception):
    """The run cannot be created; ``status`` is the HTTP answer (409 busy, 422 bad request, 503 env down)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def same_model(a: str, b: str) -> bool:
    """Hugging Face names compare as text; folders compare as resolved paths."""
    if a == b:
        return True
    pa, pb = Path(a), Path(b)
    return (pa.is_absolute() or pa.exists()) and (pb.is_absolute() or pb.exists()) and pa.resolve() == pb.resolve()


def loop_class(algorithm: Algorithm) -> type[Loop]:
    """The run's loop, from the one table of them (``halo_trainer.loops.LOOPS``; imports torch)."""
    from halo_trainer.loops import LOOPS

    return LOOPS[algorithm]


def new_run_id(spec: RunSpec) -> str:
    return f"{spec.name or spec.domain}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


class RunManager:
    """Starts, stops and resumes the run task; builds its learner (heavy imports happen here, lazily)."""

    def __init__(
        self,
        settings: TrainerSettings,
        redis: aioredis.Redis,
        policy: PolicyClient,
        store: ScreenshotStore,
        env: TaskProbe,
    ) -> None:
        self.settings, self.redis, self.policy, self.store, self.env = settings, redis, policy, store, env
        self.registry = RunRegistry(redis, settings.runs_dir)
        self.active: dict[str, tuple[asyncio.Task, asyncio.Event]] = {}
        self._creating = asyncio.Lock()
        self._shutting_down = False

    def busy(self) -> str | None:
        return next(iter(self.active), None)

    async def create(self, spec: RunSpec) -> RunStatus:
        """Check the request, choose its tasks, write its folder and start training it.

        Raises ``RunRefused`` for settings the run cannot use (a tracker not installed, an openai
        critic without its key: 422), while another run trains (409), and when the task set cannot be made
        (``choose_tasks``: 422 or 503).
        """
        if absent := missing_trackers(spec.report_to or []):
            raise RunRefused(
                422, f"report_to names {absent}, not installed in the trainer: pip install {' '.join(absent)}"
            )
        async with self._creating:  # two requests at once: the second sees the first's run as busy
            if (busy := self.busy()) is not None:
                raise RunRefused(409, f"run {busy} is training; stop it first (one run per trainer)")
            try:
                chosen = await choose_tasks(self.env, spec)
            except TaskSetError as exc:
                raise RunRefused(exc.status, str(exc)) from exc
            return await self._create(spec, chosen)

    async def _create(self, spec: RunSpec, chosen: TaskSet) -> RunStatus:
        run_id = new_run_id(spec)
        run_dir = self.settings.runs_dir / run_id
        profile = profile_for(self.settings.target)
        try:
            defaults = checked_defaults(self.settings.rl_config, profile)
        except DefaultsError as exc:  # the trainer's setup, not the request: fix the file, restart
            raise RunRefused(503, f"{exc}; fix it (HALO_TRAINER_RL_CONFIG) and restart the trainer") from exc
        try:
            cfg = resolve(spec, run_id, chosen.tasks, defaults, profile)
        except ValidationError as exc:  # knobs each valid alone that do not go together (RunConfig's checks)
            raise RunRefused(422, "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())) from exc
        if cfg.mcts is not None:
            try:
                check_critic(cfg.mcts)
            except ValueError as exc:
                raise RunRefused(422, str(exc)) from exc
        # What the policy server advertises it can serve (api/capabilities): refused before the run exists.
        caps = await served_capabilities(self.redis, self.settings)
        problems = learner_refusals(cfg, self.settings)
        problems += refusals(cfg, caps, self.policy.base_url) if caps is not None else []
        problems += await replica_refusals(cfg, self.redis, self.settings)
        if problems:
            raise RunRefused(max(s for s, _ in problems), "; ".join(m for _, m in problems))
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.json").write_text(
            json.dumps({"run": cfg.model_dump(mode="json"), "trainer": resolved(self.settings)}, indent=1)
        )
        logger.info("run %s resolved config: %s", run_id, cfg.model_dump_json())
        now = time.time()
        status = RunStatus(
            run_id=run_id,
            state=RunState.PENDING,
            spec=spec,
            created_at=now,
            updated_at=now,
            episodes_total=cfg.episodes,
            run_dir=str(run_dir),
            tasks_left_out=chosen.left_out,
            task_set_note=chosen.note,
        )
        await self.registry.save(status)
        self._start(cfg, status)
        return status

    async def resume_interrupted(self) -> None:
        for status in await self.registry.all():
            if status.state in (RunState.RUNNING, RunState.PENDING, RunState.STOPPING) and not self.busy():
                if status.run_dir and not Path(status.run_dir).resolve().is_relative_to(
                    self.settings.runs_dir.resolve()
                ):
                    # Another checkout's trainer on the same Redis made it: its folder, code and
                    # adapters are that checkout's, and its own trainer resumes it.
                    logger.warning(
                        "run %s is not this trainer's (its folder %s is outside %s): left alone",
                        status.run_id,
                        status.run_dir,
                        self.settings.runs_dir,
                    )
                    continue
                if await self.redis.sismember(keys.STOPPED_RUNS, status.run_id):
                    status.state = RunState.STOPPED  # asked to stop before the trainer went down
                    await self.registry.save(status)
                    await self._unload_adapters(status.run_id)  # what its last trainer had loaded
                    continue
                cfg_path = Path(status.run_dir or "") / "config.json"
                if not cfg_path.exists():
                    status.state, status.error = RunState.FAILED, "interrupted before its config was written"
                    await self.registry.save(status)
                    continue
                try:
                    cfg = saved_run(json.loads(cfg_path.read_text()))
                except (ValidationError, ValueError, KeyError) as exc:
                    # A config from an older trainer (no sampling section, say) cannot be resumed
                    # faithfully; fail that run rather than the trainer's start.
                    status.state, status.error = RunState.FAILED, f"cannot resume: config.json is not valid: {exc}"
                    await self.registry.save(status)
                    continue
                logger.info("resuming interrupted run %s", status.run_id)
                self._start(cfg, status)

    async def stop(self, run_id: str) -> None:
        task_stop = self.active.get(run_id)
        if task_stop is not None:
            task_stop[1].set()
        await self.redis.sadd(keys.STOPPED_RUNS, run_id)

    async def shutdown(self) -> None:
        """Process exit: stop loops at their next check; the status stays `running` so a restart resumes."""
        self._shutting_down = True
        for task, stop in self.active.values():
            stop.set()
            task.cancel()
        await asyncio.gather(*(t for t, _ in self.active.values()), return_exceptions=True)

    def _start(self, cfg: RunConfig, status: RunStatus) -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(self._train(cfg, status, stop), name=f"run-{cfg.run_id}")
        self.active[cfg.run_id] = (task, stop)

    def _learner_parts(self, cfg: RunConfig):
        from halo_trainer.learner import ranks
        from halo_trainer.learner.for_run import learner_parts

        parts = learner_parts(self.settings, cfg)
        self.check_memory(cfg, parts)
        device, dtype = self.settings.resolved_device(), self.settings.resolved_dtype()
        # At the run's temperature (learner_cfg.temperature); under torchrun every rank builds its own.
        learner = ranks.lead(parts.model_path, parts.config, device=device, dtype=dtype, seed=cfg.seed)
        return learner, parts.processor

    def check_memory(self, cfg: RunConfig, parts) -> None:
        """The run's memory plan, before the model is loaded: on the gpu target a plan that does not
        fit the learner's card (beside vLLM's share unless HALO_TRAINER_POLICY_SHARES_CARD=false)
        refuses the run with the setting to change (``MemoryPlanRefused``); on the cpu target it is
        only logged (the host's RAM is not checked: the tiny model needs a few hundred MB)."""
        from halo_trainer.learner import ranks
        from halo_trainer.learner.for_run import memory_plan

        result = memory_plan(self.settings, cfg, parts, learner_gpus=ranks.world_size())  # sharded under torchrun
        if self.settings.target != "gpu":
            logger.info("run %s: learner memory %.2f GiB (cpu target, not checked)", cfg.run_id, result.peak_gib)
            return
        logger.info("run %s %s", cfg.run_id, result.table())
        if not result.fits and self.settings.memory_check:
            raise MemoryPlanRefused(f"{result.verdict()} (`halo memory-plan` prints the whole plan)")
        if not result.fits:
            logger.warning(
                "run %s: the memory plan does not fit; HALO_TRAINER_MEMORY_CHECK=false lets it start", cfg.run_id
            )

    async def check_served_model(self) -> None:
        """Refuse to train a model other than the one vLLM serves (its ``/v1/models`` ``root``).

        The learner's log-probs and adapters are only meaningful for the served weights; a mismatch
        (a trainer set to the tiny model beside an 8B vLLM, say) would otherwise train on garbage.
        An unreachable server is not an error here: the run loop waits for it.
        """
        try:
            served = {m.get("id"): m for m in await self.policy.models()}
        except CallError as exc:
            logger.warning("cannot check the served model yet (%s); the run loop will wait for vLLM", exc)
            return
        name = self.settings.policy_model_name
        if name not in served:
            raise ModelMismatch(
                f"vLLM at {self.policy.base_url} serves no model named {name!r} (HALO_TRAINER_POLICY_MODEL_NAME); "
                f"it serves {sorted(str(k) for k in served)}"
            )
        root = str(served[name].get("root") or "")
        mine = learner_model(self.settings, build=False)
        if not same_model(root, mine):
            raise ModelMismatch(
                f"the trainer would train {mine} but vLLM serves {root} as {name!r}: set HALO_TRAINER_MODEL "
                "(and HALO_TRAINER_TARGET) to the policy server's model"
            )

    async def check_served_prompt(self, cfg: RunConfig, processor) -> None:
        """Before any job: the learner's processor must rebuild the prompt vLLM tokenises
        (``prompt_check``); an unreachable server is not an error here (the run loop waits for it)."""
        from halo_trainer.checks.prompt_check import served_prompt_problem

        try:
            problem = await served_prompt_problem(self.policy, processor, cfg.sampling, self.settings.policy_model_name)
        except CallError as exc:
            logger.warning("cannot check the served prompt yet (%s); the run loop will wait for vLLM", exc)
            return
        if problem is not None:
            raise PromptCheckFailed(problem)

    async def _unload_adapters(self, run_id: str) -> None:
        """A run that ended without its loop (stopped while no trainer ran it): its adapters out of
        vLLM; an unreachable server is logged (a restarted vLLM has none of them anyway)."""
        try:
            await self.policy.unload_run_adapters(run_id)
        except CallError as exc:
            logger.warning("run %s: could not unload its adapters from vLLM (%s)", run_id, exc)

    @staticmethod
    async def _release_weights(loop: Loop) -> None:
        """Give vLLM its base weights back after a full-weights run (``PolicyPublisher.release``);
        a failure is logged, never turned into the run's outcome."""
        try:
            await loop.release_weights()
        except Exception:
            logger.exception(
                "run %s: could not give vLLM its base weights back; restart the policy server", loop.cfg.run_id
            )

    async def _train(self, cfg: RunConfig, status: RunStatus, stop: asyncio.Event) -> None:
        await import_off_loop()  # the imports below are then lookups
        from halo_trainer.checks.tower_check import check_tower_lora
        from halo_trainer.learner import ranks
        from halo_trainer.loop_parts.parts import LoopStatus
        from halo_trainer.observe.plots import plot_run

        async def report(now: LoopStatus) -> None:
            status.updates, status.policy_version = now.updates, now.version
            status.episodes_done, status.adapter_name = now.episodes_done, now.adapter_name
            status.latest_metrics, status.phase = now.metrics, now.phase
            if status.state is RunState.PENDING:
                status.state = RunState.RUNNING
            await self.registry.save(status)

        async def report_phase(phase: RunPhase) -> None:
            status.phase = phase
            await self.registry.save(status, phase_only=True)

        run_dir = Path(status.run_dir or "")
        trackers: Trackers | None = None
        loop: Loop | None = None
        learner = None
        try:
            status.state = RunState.RUNNING
            # Loading the learner's model is the first slow step (minutes for the 8B): say so.
            status.phase = RunPhase(kind="starting", label="loading the learner's model", started_at=time.time())
            await self.registry.save(status)
            await self.check_served_model()
            learner, processor = await asyncio.to_thread(self._learner_parts, cfg)
            await self.check_served_prompt(cfg, processor)
            await check_tower_lora(self.policy, learner, cfg, run_dir)  # a vision-side lora_target only
            config = cfg.model_dump(mode="json")
            trackers = await asyncio.to_thread(Trackers.open, cfg.report_to, run_dir, cfg.run_id, config)
            # Each algorithm's loop is its own file, all built from the same parts (loop_parts).
            loop = loop_class(cfg.algorithm)(
                cfg,
                redis=self.redis,
                policy=self.policy,
                learner=learner,
                processor=processor,
                store=self.store,
                run_dir=Path(status.run_dir or ""),
                settings=self.settings,
                status_cb=report,
                trackers=trackers,
                phase_cb=report_phase,
            )
            outcome = await loop.run(stop)
            if outcome == "stopped" and self._shutting_down:
                # The cancellation can be lost (seen in tests: a cancel during a Redis pipeline call),
                # and the loop then ends on the stop event: still a process exit, not a user's stop.
                self.active.pop(cfg.run_id, None)
                return
            status.state = RunState.FINISHED if outcome == "finished" else RunState.STOPPED
            await self._release_weights(loop)
            await asyncio.to_thread(plot_run, Path(status.run_dir or ""))
        except asyncio.CancelledError:
            self.active.pop(cfg.run_id, None)
            raise  # process shutdown: the run stays `running` and resumes on restart
        except (MemoryPlanRefused, PromptCheckFailed) as exc:  # a settings problem, told as such: no stack trace
            logger.error("run %s refused: %s", cfg.run_id, exc)
            status.state, status.error = RunState.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
        except Exception as exc:
            logger.exception("run %s failed", cfg.run_id)
            status.state, status.error = RunState.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
            if loop is not None:
                await self._release_weights(loop)
        finally:
            if trackers is not None:
                await asyncio.to_thread(trackers.close)
            if learner is not None:
                ranks.end_run()  # under torchrun the other ranks drop theirs
            loop = learner = None
            release_accelerator_memory()
        status.phase = None  # a phase describes a run in progress only
        try:
            await self._record_end(status)
        finally:
            # Busy until the end is recorded: a shutdown meanwhile cancels this task rather than
            # closing Redis under it (whose error no one would then read).
            self.active.pop(cfg.run_id, None)

    async def _record_end(self, status: RunStatus) -> None:
        """The run's final status and its ``done`` event (one transaction), retried until Redis takes
        them: a run whose Redis drops at its very end is recorded once Redis is back, and its
        watchers are told. A trainer shutdown meanwhile ends the wait; the run is then still
        ``running`` in Redis, and the next trainer resumes it and ends it from its final checkpoint.
        The shutdown flag is read as well as the cancellation, because a cancel that lands inside a
        Redis call can be lost (see ``_train``), and the retries would then outlive the process's
        shutdown, which waits for them: a hang seen at load ~15 with Redis down."""
        delay = 0.5
        while not self._shutting_down:
            try:
                await self.registry.save(status, done=True)
                return
            except (RedisError, OSError) as exc:
                logger.warning(
                    "run %s ended %s, but Redis did not take it (%s: %s); again in %.1f s",
                    status.run_id,
                    status.state.value,
                    type(exc).__name__,
                    exc,
                    delay,
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)


# What a run's loop imports (torch, transformers, peft): seconds, loaded only when a run starts.
LOOP_MODULES = (
    "halo_trainer.loops",
    "halo_trainer.checks.tower_check",
    "halo_trainer.loop_parts.parts",
    "halo_trainer.observe.plots",
)


async def import_off_loop(modules: tuple[str, ...] = LOOP_MODULES) -> None:
    """Import ``modules`` in a thread. Imported on the event loop they stalled it for as long as the
    import took (4.8 s on a quiet 2-core machine, ~11 s at load 10), and everything else on that
    loop stopped: the in-process workers' Redis reads hit redis-py's default 5 s socket timeout, and
    the env session lease, renewed by a task on the same loop, expired (docs/testing.md)."""
    await asyncio.to_thread(lambda: [importlib.import_module(m) for m in modules])


def release_accelerator_memory() -> None:
    """After a run, whatever its end: its learner collected and the CUDA allocator's cache handed
    back, so the next run (or vLLM, on a shared card) finds the memory free. torch is only asked
    when a run has imported it."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
