"""The tree one MCTS search builds (Agent Q), as written to ``<run>/trees/<search_id>.json``.

A search job produces it on a rollout worker and the trainer stores and learns from it, so it is a
wire message like a ``RolloutResult``. Node ``i`` is ``nodes[i]``; node 0 is the root (the task's
first observation). Every other node is the state reached by executing one candidate action of its
parent in a fork of the parent's state: the node carries both that edge (the sampled completion,
with the token ids and behaviour log-probs DPO needs) and the state it led to.

Values: ``q_mcts`` is the running mean of the returns backed up through the node (None until it is
visited); ``q_critic`` is the critic's score of the action at the parent's state; ``q`` is the
composite ``alpha * q_mcts + (1 - alpha) * q_critic`` the search selected and paired by (the
critic's score alone while the node is unvisited). ``halo_trainer.mcts.tree`` keeps them consistent.

What is read off a finished tree, its most visited path and its preference pairs, is defined here
on the record (``SearchTree.most_visited_path``, ``SearchTree.preference_pairs``): the DPO step and
the run viewer read the same pairs from the same file.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Annotated

from pydantic import Field, ValidationError, model_validator

from halo.schemas.actions import Action, ActionParseError
from halo.schemas.base import Message
from halo.schemas.env import TaskId
from halo.schemas.reward import Id
from halo.schemas.rollout import SamplingParams

NodeId = Annotated[int, Field(ge=0)]


class TreeNode(Message):
    id: NodeId
    parent: NodeId | None = None  # None for the root only
    depth: Annotated[int, Field(ge=0)] = 0  # actions from the root

    # The edge from the parent: the candidate that led here (unset on the root).
    action_key: str | None = None  # canonical action (halo.actions.canonical_action); siblings differ
    action: Action | None = None
    parse_error: ActionParseError | None = None
    completion_text: str = ""
    completion_token_ids: list[int] = Field(default_factory=list)
    behaviour_logprobs: list[float] = Field(default_factory=list)  # per completion token, from vLLM
    policy_version: Annotated[int, Field(ge=0)] = 0  # the adapter version that proposed it
    proposals: Annotated[int, Field(ge=0)] = 0  # how many of the parent's K samples were this action

    # The state.
    state_ref: str | None = None  # the env's handle to re-enter this state (None once released)
    url: str = ""
    screenshot_sha256: str | None = None  # GET /screenshots/{sha256} on the env service
    history: list[str] = Field(default_factory=list)  # actions from the root, oldest first (Action.short)
    prompt_token_ids: list[int] = Field(default_factory=list)  # the prompt here as vLLM saw it, once expanded
    reward: float = 0.0  # the reward service's total for the edge into this node
    terminal: bool = False  # the episode ended here (terminate/answer, or the env ended it)
    success: bool | None = None  # the task's validated verdict when terminal (None: not evaluated)

    # Search statistics.
    visits: Annotated[int, Field(ge=0)] = 0
    q_mcts: float | None = None
    q_critic: float | None = None
    q: float = 0.0
    children: dict[str, NodeId] = Field(default_factory=dict)  # action_key -> node id


def explored(node: TreeNode) -> bool:
    """Whether the action into ``node`` was tried: visited, or terminal (its outcome came with it)."""
    return node.visits > 0 or node.terminal


@dataclass(frozen=True)
class Preference:
    """At ``node``'s state, the action into ``chosen`` is preferred to the action into ``rejected``."""

    node: int
    chosen: int
    rejected: int
    chosen_q: float
    rejected_q: float


class SearchTree(Message):
    search_id: Id
    run_id: Id
    task_id: TaskId
    goal: str
    sampling: SamplingParams  # how candidates were sampled: the learner rebuilds prompts from it
    alpha: Annotated[float, Field(ge=0.0, le=1.0)]  # weight of q_mcts in the composite q
    ucb_c: Annotated[float, Field(ge=0.0)]
    simulations: Annotated[int, Field(ge=0)] = 0  # simulations run so far
    env_steps: Annotated[int, Field(ge=0)] = 0  # actions executed in the env (expansions and rollouts)
    nodes: list[TreeNode] = Field(min_length=1)
    best_path: list[NodeId] = Field(default_factory=list)  # root first; empty until the search ends

    @model_validator(mode="after")
    def _consistent(self) -> SearchTree:
        """A loaded file must be a tree: ids are positions, edges point both ways, depths add up."""
        nodes = self.nodes
        for i, node in enumerate(nodes):
            if node.id != i:
                raise ValueError(f"nodes[{i}] has id {node.id}; a node's id is its position")
            if (node.parent is None) != (i == 0):
                raise ValueError(f"node {i}: only the root (node 0) has no parent")
            if i == 0 and (node.depth != 0 or node.action_key is not None):
                raise ValueError("the root (node 0) has depth 0 and no action")
            if node.parent is not None:
                if node.parent >= i:
                    raise ValueError(f"node {i}: parent {node.parent} must come before its child")
                parent = nodes[node.parent]
                if node.action_key is None or parent.children.get(node.action_key) != i:
                    raise ValueError(f"node {i} is not its parent {node.parent}'s child under its action key")
                if node.depth != parent.depth + 1:
                    raise ValueError(f"node {i}: depth {node.depth}, parent's {parent.depth}")
            for key, child in node.children.items():
                if child >= len(nodes) or nodes[child].parent != i or nodes[child].action_key != key:
                    raise ValueError(f"node {i}: child {key!r} -> {child} does not name node {i} as parent")
        for a, b in zip(self.best_path, self.best_path[1:], strict=False):
            if b >= len(nodes) or nodes[b].parent != a:
                raise ValueError(f"best_path: {b} is not a child of {a}")
        if self.best_path and self.best_path[0] != 0:
            raise ValueError("best_path must start at the root (node 0)")
        return self

    @classmethod
    def read(cls, path: Path | str) -> SearchTree:
        """A tree file; one that is not a tree raises ValueError naming the file and the problem."""
        path = Path(path)
        try:
            return cls.model_validate_json(path.read_bytes())
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "file"
            raise ValueError(
                f"{path}: not a search tree ({exc.error_count()} errors; {where}: {first['msg']})"
            ) from None

    def children_of(self, node_id: int) -> list[TreeNode]:
        return [self.nodes[i] for i in self.nodes[node_id].children.values()]

    def most_visited_path(self) -> list[int]:
        """From the root, the most visited child (ties: higher composite Q, then the first added)
        until a node none of whose children was visited."""
        out = [0]
        while visited := [ch for ch in self.children_of(out[-1]) if ch.visits > 0]:
            out.append(max(visited, key=lambda ch: (ch.visits, ch.q)).id)
        return out

    def preference_pairs(self, theta: float) -> list[Preference]:
        """At every explored (visited and expanded) node, each pair of explored children (``explored``)
        whose composite Q differs by at least ``theta``; chosen is the higher. Ordered by node, then by Q.

        Only explored children, as Agent Q builds pairs: an untried child's ``q`` is its critic score
        alone, while a visited one's mixes in its rollouts, so comparing the two would rank by which
        was tried first (the critic's favourite, visited and failed at 0.3, would lose to an untried
        sibling's 0.5). A terminal child counts as explored: its ``q`` already takes its outcome, on
        the same scale as a visit's (``halo_trainer.mcts.tree.Tree._first_q``)."""
        if theta < 0:
            raise ValueError(f"theta must be >= 0, got {theta}")
        out: list[Preference] = []
        for node in self.nodes:
            if node.visits == 0:
                continue
            ranked = sorted((ch for ch in self.children_of(node.id) if explored(ch)), key=lambda ch: -ch.q)
            for hi, lo in combinations(ranked, 2):
                # A tie (gap 0) is never a preference, even when theta is 0.
                if hi.q - lo.q >= theta and hi.q > lo.q:
                    out.append(Preference(node.id, hi.id, lo.id, hi.q, lo.q))
        return out
