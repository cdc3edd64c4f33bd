"""The reward of one transition: ``score(request, memory) -> (breakdown, memory')``.

Pure and synchronous (no I/O): the service around it loads the episode memory from Redis, calls
``score`` once per transition id, and stores what it returns. Everything a reader needs to know
about how a reward is made is in ``score``:

1. Infrastructure errors pay nothing and leave the memory untouched (the trainer drops them).
2. Validity: +valid for a well-formed action the page took, invalid / action_error otherwise.
3. Progress: milestones shown by the next state that neither the memory nor the previous state
   already had. ``milestone`` mode pays their weights once per episode; ``potential`` mode pays
   ``gamma * phi(s') - phi(s)`` with phi = summed weights of milestones reached (0 at the end of
   an episode when ``terminal_zero``), so shaping cannot change which policy is optimal.
4. Novelty: +novelty the first time the episode branch reaches a state (URL + state hash), at
   most ``novelty_limit`` times per episode.
5. Loop: penalty for returning to an earlier state, repeating an action that changed nothing
   from the same state, or ``stall_limit`` no-effect steps in a row.
6. Step cost, then the success bonus (once per episode) when the evaluator says success.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from halo.actions import canonical_action
from halo.schemas import RewardBreakdown, RewardRequest
from halo_reward.detect import StateView
from halo_reward.rules import DomainRules

ShapingMode = Literal["milestone", "potential"]


class EpisodeMemory(BaseModel):
    """What one episode branch remembers between transitions (stored in Redis as JSON)."""

    model_config = ConfigDict(extra="forbid")

    steps: Annotated[int, Field(ge=0)] = 0  # transitions scored on this branch (infra errors excluded)
    reached: dict[str, int] = Field(default_factory=dict)  # milestone -> step at which it was reached
    visited: list[str] = Field(default_factory=list)  # state keys, oldest first, bounded
    tried: list[str] = Field(default_factory=list)  # hashes of (state key, action), oldest first, bounded
    stall: Annotated[int, Field(ge=0)] = 0  # consecutive valid steps that changed nothing
    novelty_paid: Annotated[int, Field(ge=0)] = 0  # new states paid so far (bounded by novelty_limit)
    success_paid: bool = False
    episode_return: float = 0.0


@dataclass(frozen=True)
class ScoringOptions:
    mode: ShapingMode = "milestone"
    gamma: float = 0.99
    terminal_zero: bool = True  # potential mode: phi(terminal) = 0, as Ng et al. require
    max_remembered: int = 512  # bound on visited states and tried actions kept per branch


def _remember(items: list[str], item: str, limit: int) -> list[str]:
    items = [*items, item]
    return items[-limit:]


def score(
    req: RewardRequest, memory: EpisodeMemory, rules: DomainRules, opts: ScoringOptions
) -> tuple[RewardBreakdown, EpisodeMemory]:
    out = RewardBreakdown(transition_id=req.transition_id)
    if req.infra_error:
        out.infra_error = True
        return out, memory

    shaping = rules.shaping
    prev, nxt = StateView(req.prev), StateView(req.next)
    valid = req.action is not None and req.parse_error is None and req.action_error is None

    # 2. validity
    if req.parse_error is not None or req.action is None:
        out.validity = shaping.invalid
    elif req.action_error is not None:
        out.validity = shaping.action_error
    else:
        out.validity = shaping.valid

    # 3. progress: reached-before is the memory plus whatever the previous state already showed
    # (a milestone present at reset, or on a branch whose memory was lost, is never paid).
    before = set(memory.reached) | prev.milestones(rules)
    after = before | nxt.milestones(rules)
    newly = sorted(after - before)
    out.milestones = newly
    if opts.mode == "milestone":
        out.progress = sum(rules.weight(m) for m in newly)
    else:
        ended = req.terminated or req.truncated
        phi_next = 0.0 if (ended and opts.terminal_zero) else rules.potential(after)
        out.progress = opts.gamma * phi_next - rules.potential(before)

    # 4-5. novelty and loops, on the state key (URL + state / visible structure)
    prev_key, next_key = prev.key(rules), nxt.key(rules)
    visited = memory.visited or [prev_key]
    changed = next_key != prev_key
    stall = 0 if changed else memory.stall + int(valid)
    tried = memory.tried
    if next_key not in visited:
        # Bounded: typing ever-new text reaches ever-new states, and must not out-earn the task.
        if memory.novelty_paid < shaping.novelty_limit:
            out.novelty = shaping.novelty
    elif changed:
        out.loop_penalty = shaping.loop  # came back to a state this episode already left
    if valid and not changed and req.action is not None:
        attempt = hashlib.blake2b(f"{prev_key}|{canonical_action(req.action)}".encode(), digest_size=8).hexdigest()
        repeated = attempt in tried and req.action.action.value not in shaping.exempt_from_repeat
        stalled = shaping.stall_limit > 0 and stall >= shaping.stall_limit
        if repeated or stalled:
            out.loop_penalty = shaping.loop
        tried = _remember(tried, attempt, opts.max_remembered)

    # 6. step cost and success
    out.step_cost = shaping.step_cost
    success_paid = memory.success_paid
    if req.task_success is True and not success_paid:
        out.success_bonus = shaping.success
        success_paid = True

    out.total = round(
        out.progress + out.validity + out.novelty + out.loop_penalty + out.step_cost + out.success_bonus, 6
    )
    new_memory = EpisodeMemory(
        steps=memory.steps + 1,
        reached={**{m: req.step for m in after}, **memory.reached},
        visited=visited if next_key in visited else _remember(visited, next_key, opts.max_remembered),
        tried=tried,
        stall=stall,
        novelty_paid=memory.novelty_paid + (out.novelty != 0),
        success_paid=success_paid,
        episode_return=round(memory.episode_return + out.total, 6),
    )
    return out, new_memory
