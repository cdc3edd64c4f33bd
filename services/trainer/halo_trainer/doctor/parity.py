"""Check 3: the learner's log-probs against vLLM's on the same samples, free-form and under the run's
regex grammar: the mean |learner - vLLM| per token, which the trainer logs as
``train/behaviour_logprob_gap`` and warns about above ``behaviour_gap_alarm``.

The samples go through the trainer's own batching (``learner_batch``: the prompt rebuilt and checked
against vLLM's token ids, the grammar's masks replayed), the learner's own scoring
(``Learner.logprobs``, at the run's temperature) and the objective's own statistic (``policy_loss``),
so the figure is the one a run's first update would log.
"""

from __future__ import annotations

from halo.policy_client import PolicyClient
from halo.schemas import SamplingParams
from halo.schemas.doctor import DoctorCheck
from halo.screenshots import ScreenshotStore
from halo_model.inputs import PromptMismatch
from halo_trainer.doctor.samples import Screen, transitions
from halo_trainer.learner.batching import learner_batch
from halo_trainer.learner.learner import Learner, LearnerBatch
from halo_trainer.learner.objective import policy_loss

TITLE = {"off": "parity free-form", "regex": "parity grammar"}


class Unscorable(RuntimeError):
    """No sample of a request could be scored by the learner."""


async def sampled_batch(
    policy: PolicyClient,
    learner: Learner,
    processor,
    screen: Screen,
    sampling: SamplingParams,
    store: ScreenshotStore,
    n: int,
    temperature: float,
) -> LearnerBatch:
    """``n`` candidates of the base model (the learner's adapter starts as a no-op) as a learner batch,
    with advantages of alternating sign so that an update has a gradient."""
    result = await policy.sample_actions(
        screen.png, screen.goal, n=n, temperature=temperature, seed=7, sampling=sampling, model=policy.base_model
    )
    # As the learner leaves them out of an update: a sampled image or video placeholder has no image to fill it.
    config = learner.model.get_base_model().config
    vision = {config.image_token_id, config.video_token_id}
    kept = [c for c in result.candidates if not vision.intersection(c.token_ids) and c.token_ids]
    if not kept:
        raise Unscorable(f"all {n} samples hold a vision placeholder token")
    rows = transitions(result, kept, screen, store.put(screen.png), sampling)
    signs = [1.0 if i % 2 == 0 else -1.0 for i in range(len(rows))]
    return learner_batch(rows, signs, processor, store, use_behaviour_logprobs=True, vocab_size=learner.vocab_size)


def gap(learner: Learner, batch: LearnerBatch) -> tuple[float, int]:
    """(mean |learner - vLLM| per completion token, tokens) before any update."""
    ours = learner.logprobs(batch).cpu()
    _, stats = policy_loss(ours, batch.behaviour_logprobs, batch.advantages, batch.inputs.completion_mask)
    return stats.summary()["behaviour_logprob_gap"], int(stats.tokens)


async def parity(
    policy: PolicyClient,
    learner: Learner,
    processor,
    screen: Screen,
    sampling: SamplingParams,
    store: ScreenshotStore,
    *,
    n: int,
    temperature: float,
    alarm: float,
) -> tuple[DoctorCheck, LearnerBatch | None]:
    """The check under ``sampling.structured_outputs``, and the batch it scored (None when it could not)."""
    name = TITLE[sampling.structured_outputs]
    try:
        batch = await sampled_batch(policy, learner, processor, screen, sampling, store, n, temperature)
    except PromptMismatch as exc:
        return DoctorCheck(
            name=name,
            ok=False,
            detail=f"the learner's prompt is not vLLM's: {str(exc)[:160]}",
            fix="the trainer and vLLM must load the same model and image budget (HALO_TRAINER_MODEL and "
            "HALO_TRAINER_MAX_PIXELS as the policy's)",
        ), None
    except Unscorable as exc:
        return DoctorCheck(name=name, ok=False, detail=str(exc), fix="run it again (another draw)"), None
    figure, tokens = gap(learner, batch)
    detail = f"{len(batch)} samples, {tokens} tokens at T={temperature:g}"
    ok = figure <= alarm
    fix = None
    if not ok:
        fix = (
            "the learner does not score what vLLM samples: give both the same dtype (HALO_TRAINER_DTYPE, "
            "HALO_POLICY_DTYPE) and model; docs/policy.md, Log-prob parity"
        )
    check = DoctorCheck(
        name=name, ok=ok, figure=figure, unit="nats/token", bound="<=", threshold=alarm, detail=detail, fix=fix
    )
    return check, batch
