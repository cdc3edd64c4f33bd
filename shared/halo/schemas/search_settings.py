"""Hyper-parameters of MCTS + step-level DPO (Agent Q, Putta et al. 2024, arXiv 2408.07199).

The run's typed search settings: resolved into ``RunConfig.mcts`` by the trainer and carried by
every search job on Redis (``RolloutJob.mcts``), so the worker runs exactly the run's search. The
paper leaves alpha, theta and beta unreported; their defaults come from the public implementations
and the DPO literature, as each field's description says (docs/mcts.md has the table).
"""

from __future__ import annotations

import os
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field


class Critic(StrEnum):
    """Who scores the K candidate actions at a node (``q_critic``)."""

    SELF = "self"  # the policy's own model ranks them from the screenshot and goal (Agent Q's self-critique)
    OPENAI = "openai"  # an OpenAI-compatible endpoint ranks them (needs a key)
    PROGRESS = "progress"  # the reward service's milestone progress of each child state (no model needed)


class Reference(StrEnum):
    """The reference policy of the DPO log-ratio."""

    BASE = "base"  # the base model: the LoRA adapter disabled
    ITERATION = "iteration"  # the adapter as it was when the iteration began (Agent Q's pi_ref <- pi_theta_i)


class MCTSConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    simulations: Annotated[int, Field(ge=1, le=10_000)] = Field(
        50, description="Simulations (select, expand, roll out, back up) per search; the issue's --simulations"
    )
    ucb_c: Annotated[float, Field(ge=0.0, le=100.0)] = Field(
        1.414, description="UCB1 exploration constant; sqrt(2), UCB1's own (Auer et al. 2002), the users' --ucb_c"
    )
    max_children: Annotated[int, Field(ge=2, le=32)] = Field(
        5,
        description="Distinct candidate actions per expanded node (K); Agent Q, ExACT and Koh et al. branch 5 ways",
    )
    max_depth: Annotated[int, Field(ge=1, le=200)] = Field(
        15,
        description="Actions from the root after which a path (tree plus rollout) is cut off; "
        "a GRPO episode's max_steps, so a search sees the horizon an episode does",
    )
    alpha: Annotated[float, Field(ge=0.0, le=1.0)] = Field(
        0.5,
        description="Weight of Q_mcts in the composite Q = alpha*Q_mcts + (1-alpha)*Q_critic; "
        "unreported by Agent Q, 0.5 weighs search and critic equally",
    )
    theta: Annotated[float, Field(ge=0.0)] = Field(
        0.1,
        description="Least composite-Q gap between two children that makes a preference pair; "
        "unreported by Agent Q, the low end of 0.1-0.2 on a [0, 1] value scale",
    )
    beta: Annotated[float, Field(gt=0.0, le=10.0)] = Field(
        0.1, description="DPO inverse temperature; DPO's (Rafailov et al. 2023), TRL's and MCTS-DPO's default"
    )
    critic: Critic = Field(
        Critic.SELF,
        description="self | openai | progress; self is Agent Q's, a random-weight model cannot critique "
        "so the embedded default needs progress",
    )
    reference: Reference = Field(
        Reference.ITERATION, description="base | iteration; Agent Q refreshes the reference every iteration"
    )
    rpo_alpha: Annotated[float, Field(ge=0.0)] = Field(
        0.0,
        description="Weight of the NLL of the chosen action (RPO, Pang et al. 2024, who use 1.0); "
        "0 is Agent Q's plain DPO",
    )
    dense_return: bool = Field(
        False,
        description="Back up the rewards of the path's edges on top of the terminal success; "
        "off is Agent Q's sparse success-only value",
    )
    # The openai critic's endpoint. The key itself never travels with the run: each process that
    # searches reads it from the environment variable named here.
    critic_base_url: Annotated[str, Field(min_length=1, max_length=300, pattern=r"^https?://")] = Field(
        "https://api.openai.com/v1", description="OpenAI-compatible chat API of the openai critic (up to /v1)"
    )
    critic_model: Annotated[str, Field(min_length=1, max_length=200)] = Field(
        "gpt-4o", description="Model the openai critic asks; GPT-4o as in the issue"
    )
    critic_api_key_env: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")] = Field(
        "OPENAI_API_KEY", description="Environment variable holding the openai critic's API key"
    )

    def critic_api_key(self) -> str:
        """The openai critic's key from this process's environment ("" when unset)."""
        return os.environ.get(self.critic_api_key_env, "").strip()
