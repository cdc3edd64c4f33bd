"""The MCTS tree on hand-made trees: preference pairs, the best path, a success found, the critic's agreement."""

from __future__ import annotations

import pytest

from halo_trainer.mcts.tree import Preference
from tests.trainer.mcts.hand_made_trees import child, new_tree


def test_pairs_at_explored_nodes_with_theta() -> None:
    # alpha 0: q is the critic's score whatever the rollouts gave, so the gaps are set by hand.
    tree = new_tree(alpha=0.0)
    hi, mid, low = child(tree, 0, 1, 0.9), child(tree, 0, 2, 0.5), child(tree, 0, 3, 0.45)
    tie = child(tree, 0, 4, 0.45)
    # A node nobody visited is not explored: no pairs from the root yet, nor below it.
    assert tree.preference_pairs(0.1) == []
    untried = child(tree, 0, 5, 0.0)  # never visited: in no pair, though 0.9 - 0.0 passes any theta
    for i in (hi, mid, low, tie):
        tree.backup(i, 0.0)
    assert all(untried not in (p.chosen, p.rejected) for p in tree.preference_pairs(0.0))
    pairs = tree.preference_pairs(0.1)
    assert [(p.chosen, p.rejected) for p in pairs] == [(hi, mid), (hi, low), (hi, tie)]
    assert pairs[0] == Preference(node=0, chosen=hi, rejected=mid, chosen_q=0.9, rejected_q=0.5)
    # The 0.05 gap between mid and low counts for theta 0.04, not for 0.06.
    assert (mid, low) in [(p.chosen, p.rejected) for p in tree.preference_pairs(0.04)]
    assert (mid, low) not in [(p.chosen, p.rejected) for p in tree.preference_pairs(0.06)]
    # Equal Q is never a preference, even with theta 0.
    all_pairs = [(p.chosen, p.rejected) for p in tree.preference_pairs(0.0)]
    assert len(all_pairs) == 5 and (low, tie) not in all_pairs and (tie, low) not in all_pairs
    assert tree.preference_pairs(1.0) == []
    with pytest.raises(ValueError):
        tree.preference_pairs(-0.1)


@pytest.mark.parametrize("untried_critic", [0.5, 0.6])
def test_pairs_only_between_explored_children(untried_critic: float) -> None:
    # The critic's favourite v (0.6) is visited first and its rollout fails: q 0.3. Its sibling u was
    # never tried, so its q is its critic score alone (0.5, or 0.6 when the critic scores both
    # equally): comparing them would prefer u for being untried, which is no evidence.
    tree = new_tree(alpha=0.5)
    v, u = child(tree, 0, 1, 0.6), child(tree, 0, 2, untried_critic)
    tree.backup(v, 0.0)
    assert tree.node(v).q == pytest.approx(0.3) and tree.node(u).q == pytest.approx(untried_critic)
    assert tree.preference_pairs(0.1) == []
    tree.backup(u, 1.0)  # once tried, u's success is evidence: u over v
    assert [(p.chosen, p.rejected) for p in tree.preference_pairs(0.1)] == [(u, v)]


def test_pairs_use_the_composite_q_after_search() -> None:
    # The critic prefers a; the search finds only b succeeds: with alpha 0.5 b wins, with alpha 0 a does.
    for alpha, expected in ((0.5, "b"), (0.0, "a")):
        tree = new_tree(alpha=alpha)
        a, b = child(tree, 0, 1, 0.8), child(tree, 0, 2, 0.2)
        for _ in range(3):
            tree.backup(a, 0.0)
            tree.backup(b, 1.0)
        (pair,) = tree.preference_pairs(0.1)
        assert pair.chosen == {"a": a, "b": b}[expected]


def test_an_unvisited_terminal_child_is_valued_by_its_known_outcome() -> None:
    # Seen in a fixed-target run: a keyboard answer that succeeded, never visited, had q = its critic
    # score 0.3 and was the rejected action against a failed click near the button (critic 0.9).
    tree = new_tree(alpha=0.5)
    near_miss = child(tree, 0, 1, 0.9, terminal=True, success=False)
    success = child(tree, 0, 2, 0.3, terminal=True, success=True)
    open_child = child(tree, 0, 3, 0.2)  # not terminal: nothing known yet, the critic alone
    # A terminal child's value is its outcome alone: the critic does not enter it.
    assert tree.node(success).q == 1.0
    assert tree.node(near_miss).q == 0.0
    assert tree.node(open_child).q == pytest.approx(0.2)
    assert all(tree.node(i).q_mcts is None and tree.node(i).visits == 0 for i in (near_miss, success, open_child))
    tree.backup(near_miss, 0.0)
    pairs = [(p.chosen, p.rejected) for p in tree.preference_pairs(0.1)]
    assert (success, near_miss) in pairs and all(rejected != success for _, rejected in pairs)
    tree.backup(success, 1.0)  # the first visit backs up the same value: q does not move
    assert tree.node(success).q_mcts == 1.0 and tree.node(success).q == 1.0
    tree.set_critic(success, 0.0)  # a ranking critic ranking it again changes nothing either
    assert tree.node(success).q == 1.0


def test_a_premature_submit_is_no_preferred_action() -> None:
    """Found in review: on local.playground-11 the Playground pays `submitted` (0.3) on any Submit,
    so the progress critic scores a failed Submit 0.3; mixed into its value (0.5 x 0 + 0.5 x 0.3 =
    0.15) it tied the first milestone and was the chosen action against every sibling without
    progress. A terminal node's value is its outcome: the failed Submit is worth 0."""
    tree = new_tree(alpha=0.5)
    submit = child(tree, 0, 1, 0.3, terminal=True, success=False)  # paid `submitted`, ended, failed
    idle = [child(tree, 0, x, 0.0) for x in (2, 3)]  # clicks that changed nothing, rolled out, failed
    checked = child(tree, 0, 4, 0.3)  # checked the SMS box (paid `boxes_checked`), rolled out, failed
    for i in (submit, *idle, checked):
        tree.backup(i, 0.0)
    assert tree.node(submit).q == 0.0 and tree.node(checked).q == pytest.approx(0.15)
    pairs = [(p.chosen, p.rejected) for p in tree.preference_pairs(0.1)]
    assert all(chosen != submit for chosen, _ in pairs), "a failed Submit is never the chosen action"
    assert (checked, submit) in pairs and all((checked, i) in pairs for i in idle)


def test_best_path_follows_visits_then_composite_q() -> None:
    tree = new_tree()
    a, b, c = child(tree, 0, 1, 0.1), child(tree, 0, 2, 0.9), child(tree, 0, 3, 0.5)
    b1, b2 = child(tree, b, 4, 0.0), child(tree, b, 5, 0.0)
    child(tree, b1, 6, 0.0)  # never visited: the path stops at b1
    tree.backup(a, 0.0)
    tree.backup(b1, 0.0)  # a and b both visited once: b has the higher composite q
    assert tree.best_path() == [0, b, b1]
    tree.backup(a, 1.0)
    tree.backup(c, 1.0)
    tree.backup(c, 1.0)
    assert tree.best_path() == [0, c]  # most visited wins over a higher q
    tree.backup(b2, 1.0)
    tree.backup(b2, 1.0)
    assert tree.best_path() == [0, b, b2]


def test_a_rollout_success_is_a_success_found() -> None:
    # The rollout from a reached the task's success; its steps are not nodes, no node has success.
    tree = new_tree()
    a, b = child(tree, 0, 1, 0.5), child(tree, 0, 2, 0.5)
    tree.backup(b, 0.0)
    assert not tree.success_found() and tree.summary()["success_found"] == 0.0
    tree.backup(a, 1.0)
    assert not any(n.success for n in tree.record.nodes) and tree.node(a).q_mcts == 1.0
    assert tree.success_found() and tree.summary()["success_found"] == 1.0
    # Dense rewards are no success: only the sparse value counts.
    dense = new_tree()
    d = child(dense, 0, 1, 0.5, reward=0.3)
    dense.backup(d, 0.0, dense_return=True, rollout_return=0.6)
    assert dense.node(d).q_mcts == pytest.approx(0.9) and not dense.success_found()
    dense.backup(d, 1.0, dense_return=True, rollout_return=0.6)
    assert dense.node(d).q_mcts == pytest.approx(1.4) and dense.success_found()
    # Without dense_return the rollout's rewards are left out.
    sparse = new_tree()
    e = child(sparse, 0, 1, 0.5, reward=0.3)
    sparse.backup(e, 0.0, rollout_return=0.6)
    assert sparse.node(e).q_mcts == 0.0


def test_critic_agreement_and_summary() -> None:
    tree = new_tree()
    a, b, c = child(tree, 0, 1, 0.9), child(tree, 0, 2, 0.1), child(tree, 0, 3, 0.5)
    assert tree.critic_agreement() is None
    tree.backup(a, 1.0)
    tree.backup(b, 0.0)
    assert tree.critic_agreement() == 1.0
    tree.backup(c, 1.0)  # a=c by search (a tie, left out); c>b agrees; so 2 of 2
    assert tree.critic_agreement() == 1.0
    tree.backup(a, 0.0)  # a 0.5 < c 1.0 by search, but critic says a > c
    assert tree.critic_agreement() == pytest.approx(2 / 3)
    c1 = child(tree, c, 4, success=True, terminal=True)
    tree.record.env_steps = 7
    s = tree.summary()
    assert s["nodes"] == 5 and s["depth"] == 2 and s["success_found"] == 1.0
    assert s["simulations"] == 4 and s["env_steps"] == 7 and s["best_path_length"] == 1
    assert c1 == 4
