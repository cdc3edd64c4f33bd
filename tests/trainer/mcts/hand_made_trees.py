"""Hand-made MCTS trees for the tree's tests: a root, and children added by a click at x with a critic score."""

from __future__ import annotations

from halo.schemas import Action, ActionParseError, ParseErrorReason, SamplingParams, Viewport
from halo_trainer.mcts.tree import Tree

SHOT = "a" * 64


def click(x: int) -> Action:
    return Action(action="left_click", coordinate=(x, 10))


def bad() -> ActionParseError:
    return ActionParseError(reason=ParseErrorReason.BAD_JSON, detail="invalid JSON")


def new_tree(alpha: float = 0.5, c: float = 1.0) -> Tree:
    return Tree.start(
        search_id="search-1",
        run_id="run-1",
        task_id="playground-1",
        goal="press the blue button",
        sampling=SamplingParams(max_tokens=64, structured_outputs="regex", history_limit=8, viewport=Viewport()),
        alpha=alpha,
        ucb_c=c,
        state_ref="sess-root",
        url="http://site/",
        screenshot_sha256=SHOT,
    )


def child(tree: Tree, parent: int, x: int, q_critic: float | None = None, **kw) -> int:
    return tree.add_child(parent, action=click(x), completion_token_ids=[1, 2], behaviour_logprobs=[-0.1, -0.2],
                          q_critic=q_critic, **kw).id  # fmt: skip
