"""The tree of one MCTS search: UCB1 selection, backup, best path, preference pairs, the tree file.

Pure bookkeeping over ``halo.schemas.SearchTree`` (the record is the tree: what is written to the
run folder is exactly what the search used). Nothing here talks to the env, reward or policy; the
search driver does, and calls these in the order of a simulation:

1. ``select_leaf``: from the root, repeatedly take the child maximising UCB1 on the composite Q,
   ``q(s,a) + c * sqrt(ln N(s) / (1 + n(s,a)))``, until a node with no children (or a terminal one).
2. expansion: sample K actions there; ``new_candidates`` merges those with the same canonical action
   (``halo.actions.canonical_action``) and drops those already tried (K bounds one request's
   proposals, not a node's children). With progressive widening (the driver's default) one of them
   is executed per visit and a node may hold ``ceil((n + 1) ** w)`` children after n visits, so
   ``select_leaf`` also stops at a node that may take one more; without it all are executed at
   once, each in a fork. Each is scored by the critic and recorded with ``add_child``. Selection
   never enters a node the driver closed (``closed``: nothing more can be learnt below it).
3. a rollout from one new child with the current policy (the driver's), giving the task's success
   (1/0) and the rollout's rewards.
4. ``backup``: every node on the path from that child to the root takes the value into its running
   mean ``q_mcts`` (with ``dense_return``, the rollout's rewards and those of the edges below it).

The composite value is ``q = alpha * q_mcts + (1 - alpha) * q_critic``. An unvisited node has no
``q_mcts``; its ``q`` is the critic's score alone, so the critic orders children nobody has tried
yet (on their first visit ``ln N(s) = 0`` and UCB1 is the critic's choice). A terminal node is the
exception: the episode ended there with the task's verdict, so its value is known and is that
outcome alone, 1 or 0 (its backed-up ``q_mcts`` once visited), never mixed with the critic: a
critic that scores a failed Submit for the milestone its click paid must not make the failure worth
as much as a sibling's real progress. After the search, at each explored node, two
explored children (visited, or terminal) whose ``q`` differ by at least ``theta`` give a preference pair (``preference_pairs``),
and ``best_path`` follows the most visited children. The search found a success
(``success_found``) when a node on the tree ended the task with success or a backed-up success
value was above 0 (a rollout that succeeded is not a node).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Container, Sequence
from itertools import combinations
from pathlib import Path
from typing import Protocol, TypeVar

from halo.actions import canonical_action
from halo.schemas import Action, ActionParseError, PromptRecord, SamplingParams
from halo.schemas.search import Preference, SearchTree, TreeNode


class Proposal(Protocol):
    """What ``new_candidates`` needs of a sampled candidate (the policy client's ``Candidate`` fits)."""

    @property
    def action(self) -> Action | None: ...


P = TypeVar("P", bound=Proposal)


def composite_q(q_mcts: float | None, q_critic: float | None, alpha: float) -> float:
    """``alpha * q_mcts + (1 - alpha) * q_critic``; whichever is known when only one is (0 if neither)."""
    if q_mcts is None:
        return 0.0 if q_critic is None else q_critic
    if q_critic is None:
        return q_mcts
    return alpha * q_mcts + (1.0 - alpha) * q_critic


def ucb1(q: float, parent_visits: int, visits: int, c: float) -> float:
    """``q + c * sqrt(ln N / (1 + n))``; ``N`` is taken as at least 1, so a fresh parent adds no bonus."""
    return q + c * math.sqrt(math.log(max(parent_visits, 1)) / (1 + visits))


def puct(q: float, prior: float, parent_visits: int, visits: int, c: float) -> float:
    """``q + c * P * sqrt(N) / (1 + n)`` (AlphaZero's PUCT): the bonus follows the prior ``P``."""
    return q + c * prior * math.sqrt(parent_visits) / (1 + visits)


def critic_priors(children: Sequence[TreeNode]) -> list[float]:
    """The critic's scores normalised over ``children`` (a node without one counts 0); uniform when
    their sum is 0."""
    scores = [ch.q_critic or 0.0 for ch in children]
    total = sum(scores)
    if total <= 0:
        return [1.0 / len(children)] * len(children)
    return [x / total for x in scores]


class Tree:
    def __init__(self, record: SearchTree, selection: str = "ucb1") -> None:
        self.record = record
        # ucb1 or puct (the search's `selection`); how the tree was searched, not part of the file
        if selection not in ("ucb1", "puct"):
            raise ValueError(f"selection must be ucb1 or puct, got {selection!r}")
        self.selection = str(selection)
        # The tree file has no field for it: a loaded tree knows only its nodes' successes.
        self.successful_backups = 0

    @classmethod
    def start(
        cls,
        *,
        search_id: str,
        run_id: str,
        task_id: str,
        goal: str,
        sampling: SamplingParams,
        alpha: float,
        ucb_c: float,
        state_ref: str | None,
        url: str,
        screenshot_sha256: str | None,
        selection: str = "ucb1",
    ) -> Tree:
        """A tree holding only the root: the task's first observation."""
        root = TreeNode(id=0, state_ref=state_ref, url=url, screenshot_sha256=screenshot_sha256)
        record = SearchTree(
            search_id=search_id,
            run_id=run_id,
            task_id=task_id,
            goal=goal,
            sampling=sampling,
            alpha=alpha,
            ucb_c=ucb_c,
            nodes=[root],
        )
        return cls(record, selection)

    # --- reading -----------------------------------------------------------------------------

    @property
    def root(self) -> TreeNode:
        return self.record.nodes[0]

    def node(self, node_id: int) -> TreeNode:
        return self.record.nodes[node_id]

    def children(self, node_id: int) -> list[TreeNode]:
        return [self.record.nodes[i] for i in self.record.nodes[node_id].children.values()]

    def path(self, node_id: int) -> list[int]:
        """Node ids from the root to ``node_id``."""
        out = [node_id]
        while (parent := self.record.nodes[out[-1]].parent) is not None:
            out.append(parent)
        return out[::-1]

    def prompt(self, node_id: int) -> PromptRecord:
        """The policy's input at this node, as the learner rebuilds it (set once the node was expanded)."""
        node = self.node(node_id)
        if node.screenshot_sha256 is None or not node.prompt_token_ids:
            raise ValueError(f"node {node_id} was never expanded: it has no screenshot or prompt tokens")
        return PromptRecord(
            goal=self.record.goal,
            history=list(node.history),
            screenshot_sha256=node.screenshot_sha256,
            prompt_token_ids=list(node.prompt_token_ids),
        )

    # --- selection -----------------------------------------------------------------------------

    def select_child(self, node_id: int, closed: Container[int] = ()) -> int:
        """The child maximising UCB1 on the composite Q (with ``selection`` puct: PUCT, the prior the
        critic's scores normalised over all the node's children), among those not in ``closed``;
        ties go to the child added first."""
        parent = self.node(node_id)
        children = self.children(node_id)
        options = [i for i, ch in enumerate(children) if ch.id not in closed]
        if not options:
            raise ValueError(f"node {node_id} has no children to select from")
        c = self.record.ucb_c
        if self.selection == "puct":
            priors = critic_priors(children)
            best = max(options, key=lambda i: puct(children[i].q, priors[i], parent.visits, children[i].visits, c))
        else:
            best = max(options, key=lambda i: ucb1(children[i].q, parent.visits, children[i].visits, c))
        return children[best].id

    def select_leaf(self, widen: Callable[[TreeNode], bool] | None = None, closed: Container[int] = ()) -> int:
        """Descend from the root by ``select_child`` to a node with no children, or a terminal one;
        with ``widen``, stop too at a node that may take one more child (progressive widening).
        Children in ``closed`` are never entered; a node all of whose children are is returned."""
        node = self.root
        while node.children and not node.terminal and not (widen is not None and widen(node)):
            if all(i in closed for i in node.children.values()):
                break
            node = self.node(self.select_child(node.id, closed))
        return node.id

    # --- expansion -----------------------------------------------------------------------------

    def new_candidates(
        self, node_id: int, candidates: Sequence[P], max_children: int | None = None
    ) -> list[tuple[P, int]]:
        """The distinct actions among ``candidates`` that are not yet children, each with how many
        candidates proposed it, in sampling order; with ``max_children``, only so many that the node
        has at most that many (the search passes none: K bounds a request's proposals, not a node's
        children)."""
        existing = self.node(node_id).children
        firsts: dict[str, P] = {}
        counts: dict[str, int] = {}
        for cand in candidates:
            key = canonical_action(cand.action)
            if key in existing:
                continue
            firsts.setdefault(key, cand)
            counts[key] = counts.get(key, 0) + 1
        keys = list(firsts)
        if max_children is not None:
            keys = keys[: max(max_children - len(existing), 0)]
        return [(firsts[key], counts[key]) for key in keys]

    def add_child(
        self,
        parent_id: int,
        *,
        action: Action | None,
        parse_error: ActionParseError | None = None,
        completion_text: str = "",
        completion_token_ids: Sequence[int] = (),
        behaviour_logprobs: Sequence[float] = (),
        policy_version: int = 0,
        proposals: int = 1,
        state_ref: str | None = None,
        url: str = "",
        screenshot_sha256: str | None = None,
        reward: float = 0.0,
        terminal: bool = False,
        success: bool | None = None,
        q_critic: float | None = None,
    ) -> TreeNode:
        """Record the candidate ``action`` of ``parent_id`` and the state executing it led to."""
        parent = self.node(parent_id)
        if parent.terminal:
            raise ValueError(f"node {parent_id} is terminal: the episode ended there")
        if (action is None) == (parse_error is None):
            raise ValueError("exactly one of action and parse_error must be given")
        if len(completion_token_ids) != len(behaviour_logprobs):
            raise ValueError(
                f"{len(completion_token_ids)} completion tokens but {len(behaviour_logprobs)} behaviour log-probs"
            )
        key = canonical_action(action)
        if key in parent.children:
            raise ValueError(f"node {parent_id} already has a child for {key}")
        child = TreeNode(
            id=len(self.record.nodes),
            parent=parent_id,
            depth=parent.depth + 1,
            action_key=key,
            action=action,
            parse_error=parse_error,
            completion_text=completion_text,
            completion_token_ids=list(completion_token_ids),
            behaviour_logprobs=list(behaviour_logprobs),
            policy_version=policy_version,
            proposals=proposals,
            state_ref=state_ref,
            url=url,
            screenshot_sha256=screenshot_sha256,
            # An answer that did not parse executes nothing, so it does not enter the prompt's history.
            history=[*parent.history, action.short()] if action is not None else list(parent.history),
            reward=reward,
            terminal=terminal,
            success=success,
            q_critic=q_critic,
            q=self._first_q(terminal, success, q_critic),
        )
        self.record.nodes.append(child)
        parent.children[key] = child.id
        return child

    def set_critic(self, node_id: int, q_critic: float) -> None:
        """The critic's new score of a node (a ranking critic ranks a node's children again each
        time one is added); its composite follows."""
        node = self.node(node_id)
        node.q_critic = q_critic
        node.q = self._q(node)

    def _first_q(self, terminal: bool, success: bool | None, q_critic: float | None) -> float:
        """The composite of a child nobody has visited. A terminal child's outcome is already known
        (the episode ended there with the task's verdict), so its value is that outcome, 1 or 0, and
        the critic does not enter it; otherwise an unvisited success would rank by the critic alone,
        below a failed click the critic liked that happened to be visited, and become the rejected
        action of a pair, and a failed Submit the critic scores for its `submitted` milestone (0.5 x 0
        + 0.5 x 0.3) would tie real progress and be the chosen action against every sibling without
        it. ``q_mcts`` stays None (no return was backed up); the first visit sets it."""
        if terminal:
            return float(bool(success))
        return composite_q(None, q_critic, self.record.alpha)

    def _q(self, node: TreeNode) -> float:
        """A node's composite value: a terminal node's is its outcome (its backed-up value once
        visited), any other's ``alpha * q_mcts + (1 - alpha) * q_critic``."""
        if node.q_mcts is None:
            return self._first_q(node.terminal, node.success, node.q_critic)
        if node.terminal:
            return node.q_mcts
        return composite_q(node.q_mcts, node.q_critic, self.record.alpha)

    # --- backup --------------------------------------------------------------------------------

    def backup(self, node_id: int, value: float, dense_return: bool = False, rollout_return: float = 0.0) -> None:
        """One simulation's result: ``value`` is the sparse value the path earned below ``node_id``
        (the task's success, 1/0), ``rollout_return`` the rewards of the rollout from it. Each node on
        the path to the root takes the return of the edge into it into its running mean; with
        ``dense_return`` that return adds the rollout's rewards and those of the path's edges from
        that node down."""
        if value > 0:
            self.successful_backups += 1
        ret = value + (rollout_return if dense_return else 0.0)
        for i in reversed(self.path(node_id)):
            node = self.record.nodes[i]
            if dense_return:
                ret += node.reward
            node.visits += 1
            node.q_mcts = ret if node.q_mcts is None else node.q_mcts + (ret - node.q_mcts) / node.visits
            node.q = self._q(node)
        self.record.simulations += 1

    # --- results -------------------------------------------------------------------------------

    def best_path(self) -> list[int]:
        """The most visited path (``SearchTree.most_visited_path``)."""
        return self.record.most_visited_path()

    def preference_pairs(self, theta: float) -> list[Preference]:
        """The tree's preference pairs at ``theta`` (``SearchTree.preference_pairs``, which the viewer reads too)."""
        return self.record.preference_pairs(theta)

    def critic_agreement(self) -> float | None:
        """Among pairs of visited siblings, the share the critic orders as their ``q_mcts`` does
        (ties on either side left out); None when no pair is comparable."""
        agree = total = 0
        for node in self.record.nodes:
            scored = [ch for ch in self.children(node.id) if ch.q_mcts is not None and ch.q_critic is not None]
            for a, b in combinations(scored, 2):
                by_search = (a.q_mcts > b.q_mcts) - (a.q_mcts < b.q_mcts)
                by_critic = (a.q_critic > b.q_critic) - (a.q_critic < b.q_critic)
                if by_search and by_critic:
                    total += 1
                    agree += by_search == by_critic
        return agree / total if total else None

    def success_found(self) -> bool:
        """Whether the search reached the task's success anywhere: at a node, or in a rollout (whose
        steps are not nodes, but whose success was backed up as a value above 0)."""
        return self.successful_backups > 0 or any(n.success for n in self.record.nodes)

    def summary(self) -> dict[str, float]:
        """Per-search metrics: size, depth, whether a success was found, best-path length."""
        nodes = self.record.nodes
        agreement = self.critic_agreement()
        out = {
            "nodes": float(len(nodes)),
            "depth": float(max(n.depth for n in nodes)),
            "success_found": float(self.success_found()),
            "best_path_length": float(len(self.best_path()) - 1),
            "simulations": float(self.record.simulations),
            "env_steps": float(self.record.env_steps),
        }
        if agreement is not None:
            out["critic_agreement"] = agreement
        return out

    # --- the tree file -------------------------------------------------------------------------

    def save(self, directory: Path | str) -> Path:
        """Write ``<directory>/<search_id>.json`` (with the best path) atomically: a reader sees the
        previous file or the new one, never half of one."""
        self.record.best_path = self.best_path()
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{self.record.search_id}.json"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.record.model_dump_json(), encoding="utf-8")
        os.replace(tmp, path)
        return path


def load_tree(path: Path | str) -> Tree:
    """Read a tree file; a file that is not one raises ValueError naming the file and the problem."""
    return Tree(SearchTree.read(path))
