"""The MCTS tree on hand-made trees: UCB1 and PUCT, backup, composite Q, expansion, the tree file, the settings.

Preference pairs, the best path and the tree's summary: test_mcts_tree_pairs.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from halo.actions import INVALID_ACTION_KEY, canonical_action
from halo.schemas import Action, SearchTree
from halo.schemas.search_settings import Critic, MCTSConfig, Reference
from halo_trainer.mcts.tree import Tree, composite_q, critic_priors, load_tree, ucb1
from tests.trainer.mcts.hand_made_trees import bad, child, click, new_tree

# --- values ----------------------------------------------------------------------------------


def test_composite_q() -> None:
    assert composite_q(0.8, 0.2, 0.5) == pytest.approx(0.5)
    assert composite_q(0.8, 0.2, 0.75) == pytest.approx(0.65)
    assert composite_q(0.8, 0.2, 1.0) == 0.8 and composite_q(0.8, 0.2, 0.0) == 0.2
    assert composite_q(None, 0.3, 0.5) == 0.3  # unvisited: the critic alone
    assert composite_q(0.4, None, 0.5) == 0.4  # no critic score: the search alone
    assert composite_q(None, None, 0.5) == 0.0


def test_ucb1_formula() -> None:
    assert ucb1(0.3, 9, 6, 1.0) == pytest.approx(0.3 + math.sqrt(math.log(9) / 7))
    assert ucb1(0.3, 9, 0, 2.0) == pytest.approx(0.3 + 2.0 * math.sqrt(math.log(9)))
    assert ucb1(0.3, 0, 0, 1.0) == 0.3 and ucb1(0.3, 1, 0, 1.0) == 0.3  # ln 1 = 0: no bonus yet


# --- selection -------------------------------------------------------------------------------


def three_children(c: float) -> tuple[Tree, int, int, int]:
    """Root visited 9 times: A 6 times (q_mcts 0.5, critic 0.1), B 3 times (q_mcts 0.2, critic 0.6),
    C never (critic 0.2). Composite q with alpha 0.5: A 0.3, B 0.4, C 0.2."""
    tree = new_tree(alpha=0.5, c=c)
    a, b, cc = child(tree, 0, 1, 0.1), child(tree, 0, 2, 0.6), child(tree, 0, 3, 0.2)
    for value in (1, 0, 1, 0, 1, 0):
        tree.backup(a, value)
    for value in (0.6, 0, 0):
        tree.backup(b, value)
    return tree, a, b, cc


def test_backup_running_means_and_composite_q() -> None:
    tree, a, b, cc = three_children(1.0)
    assert [tree.node(i).visits for i in (0, a, b, cc)] == [9, 6, 3, 0]
    assert tree.node(a).q_mcts == pytest.approx(0.5) and tree.node(b).q_mcts == pytest.approx(0.2)
    assert tree.node(0).q_mcts == pytest.approx(3.6 / 9)
    assert tree.node(cc).q_mcts is None
    assert [tree.node(i).q for i in (a, b, cc)] == pytest.approx([0.3, 0.4, 0.2])
    assert tree.record.simulations == 9


@pytest.mark.parametrize(("c", "expected"), [(1.0, "C"), (0.1, "B"), (0.0, "B")])
def test_ucb1_selection_by_hand(c: float, expected: str) -> None:
    # ln 9 = 2.1972. c=1: A 0.3+0.5603, B 0.4+0.7412, C 0.2+1.4823 -> C.
    # c=0.1: A 0.3560, B 0.4741, C 0.3482 -> B. c=0: the highest composite q, B.
    tree, a, b, cc = three_children(c)
    assert tree.select_child(0) == {"A": a, "B": b, "C": cc}[expected]


def test_selection_ties_go_to_the_first_child_and_critic_breaks_fresh_nodes() -> None:
    tree = new_tree()
    first = child(tree, 0, 1, 0.5)
    child(tree, 0, 2, 0.5)
    assert tree.select_child(0) == first
    tree.backup(0, 0.0)  # the root's own visit: N = 1, ln N = 0, UCB1 is the critic's order
    third = child(tree, 0, 3, 0.9)
    assert tree.select_child(0) == third


def test_selection_follows_the_search_value_not_the_critic_alone() -> None:
    # The critic prefers a (0.9) to b (0.1); a's two rollouts fail, b's two succeed. Equal visits give
    # equal exploration bonuses, so UCB1 ranks by q: a 0.45, b 0.55. The critic alone would pick a.
    tree = new_tree(alpha=0.5, c=1.0)
    a, b = child(tree, 0, 1, 0.9), child(tree, 0, 2, 0.1)
    for _ in range(2):
        tree.backup(a, 0.0)
        tree.backup(b, 1.0)
    assert tree.select_child(0) == b
    assert tree.select_leaf() == b


def test_select_leaf_descends_to_an_unexpanded_or_terminal_node() -> None:
    tree = new_tree(c=0.0)
    a, b = child(tree, 0, 1, 0.2), child(tree, 0, 2, 0.7)
    assert tree.select_leaf() == b
    b1 = child(tree, b, 5, 0.1)
    b2 = child(tree, b, 6, 0.3, terminal=True, success=True)
    assert tree.select_leaf() == b2  # terminal: selection stops there
    assert tree.node(b2).history == [click(2).short(), click(6).short()]
    with pytest.raises(ValueError, match="terminal"):
        child(tree, b2, 7)
    with pytest.raises(ValueError, match="no children"):
        tree.select_child(a)
    assert b1 != a


# --- expansion -------------------------------------------------------------------------------


class Cand:
    def __init__(self, action: Action | None, text: str) -> None:
        self.action, self.text = action, text


def test_new_candidates_merge_same_canonical_action_and_keep_max_children() -> None:
    tree = new_tree()
    cands = [
        Cand(click(1), "a"),
        Cand(click(1), "a again, other whitespace"),
        Cand(None, "garbage"),
        Cand(click(2), "b"),
        Cand(None, "other garbage"),
        Cand(Action(action="type", text="hi"), "c"),
    ]
    kept = tree.new_candidates(0, cands, max_children=5)
    assert [(c.text, n) for c, n in kept] == [("a", 2), ("garbage", 2), ("b", 1), ("c", 1)]
    assert [(c.text, n) for c, n in tree.new_candidates(0, cands, max_children=2)] == [("a", 2), ("garbage", 2)]
    # Keys already expanded are not proposed again, and they count toward max_children.
    tree.add_child(0, action=click(1), proposals=2)
    tree.add_child(0, action=None, parse_error=bad(), proposals=2)
    assert [c.text for c, _ in tree.new_candidates(0, cands, max_children=3)] == ["b"]
    assert tree.new_candidates(0, cands, max_children=2) == []


def test_add_child_records_edge_and_state() -> None:
    tree = new_tree()
    node = tree.add_child(
        0,
        action=None,
        parse_error=bad(),
        completion_text="{oops",
        completion_token_ids=[5, 6, 7],
        behaviour_logprobs=[-1.0, -2.0, -3.0],
        policy_version=3,
        state_ref="sess-x",
        reward=-0.5,
        q_critic=0.1,
    )
    assert node.action_key == INVALID_ACTION_KEY and node.depth == 1 and node.parent == 0
    assert node.history == []  # nothing was executed
    assert tree.root.children == {INVALID_ACTION_KEY: node.id}
    assert node.q == 0.1 and node.q_mcts is None and node.visits == 0
    with pytest.raises(ValueError, match="already has a child"):
        tree.add_child(0, action=None, parse_error=bad())
    with pytest.raises(ValueError, match="exactly one"):
        tree.add_child(0, action=click(1), parse_error=bad())
    with pytest.raises(ValueError, match="behaviour log-probs"):
        tree.add_child(0, action=click(1), completion_token_ids=[1], behaviour_logprobs=[])


def test_canonical_action_is_exact() -> None:
    assert canonical_action(click(1)) == canonical_action(Action(action="left_click", coordinate=(1, 10)))
    assert canonical_action(click(1)) != canonical_action(click(2))
    assert canonical_action(Action(action="key", keys=["ctrl", "a"])) != canonical_action(
        Action(action="key", keys=["a", "ctrl"])
    )
    assert canonical_action(None) == INVALID_ACTION_KEY


# --- backup with dense returns ---------------------------------------------------------------


def test_dense_return_adds_the_rewards_of_the_edges_below() -> None:
    tree = new_tree(alpha=1.0)
    a = child(tree, 0, 1, reward=0.2)
    a1 = child(tree, a, 2, reward=0.5)
    tree.backup(a1, 1.0, dense_return=True)  # a1: 0.5 + 1 = 1.5; a: 0.2 + 1.5 = 1.7; root: 1.7
    tree.backup(a1, 0.0, dense_return=True)  # a1: 0.5; a: 0.7; root: 0.7
    assert tree.node(a1).q_mcts == pytest.approx(1.0)
    assert tree.node(a).q_mcts == pytest.approx(1.2)
    assert tree.node(0).q_mcts == pytest.approx(1.2)
    sparse = new_tree(alpha=1.0)
    s = child(sparse, 0, 1, reward=0.2)
    s1 = child(sparse, s, 2, reward=0.5)
    sparse.backup(s1, 1.0)
    sparse.backup(s1, 0.0)
    assert [sparse.node(i).q_mcts for i in (0, s, s1)] == pytest.approx([0.5, 0.5, 0.5])


# --- the tree file ---------------------------------------------------------------------------


def searched_tree() -> Tree:
    tree = new_tree()
    tree.root.prompt_token_ids = [10, 11, 12]
    a = child(tree, 0, 1, 0.9, url="http://site/a", screenshot_sha256="b" * 64, state_ref="sess-a")
    tree.add_child(0, action=None, parse_error=bad(), q_critic=0.0)
    a1 = child(tree, a, 2, 0.3, terminal=True, success=True, reward=1.0)
    tree.backup(a1, 1.0)
    tree.backup(2, 0.0)
    tree.record.env_steps = 3
    return tree


def test_tree_file_round_trip(tmp_path: Path) -> None:
    tree = searched_tree()
    path = tree.save(tmp_path / "trees")
    assert path == tmp_path / "trees" / "search-1.json"
    assert [p.name for p in path.parent.iterdir()] == ["search-1.json"]  # no temp file left
    loaded = load_tree(path)
    assert loaded.record == tree.record
    assert loaded.record.best_path == [0, 1, 3]
    raw = json.loads(path.read_text())
    assert raw["nodes"][3]["success"] is True and raw["nodes"][1]["q"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.9)
    assert loaded.preference_pairs(0.1) == tree.preference_pairs(0.1) != []
    prompt = loaded.prompt(0)
    assert prompt.goal == "press the blue button" and prompt.prompt_token_ids == [10, 11, 12]
    with pytest.raises(ValueError, match="never expanded"):
        loaded.prompt(1)


def test_loading_a_bad_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="t.json: not a search tree"):
        load_tree(path)
    good = searched_tree().record.model_dump(mode="json")
    broken = json.loads(json.dumps(good))
    broken["nodes"][3]["parent"] = 2  # node 1 lists node 3 as its child, node 3 names node 2
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="does not name node 1 as parent"):
        load_tree(path)
    broken = json.loads(json.dumps(good))
    broken["nodes"][1]["id"] = 5
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="position"):
        load_tree(path)
    broken = json.loads(json.dumps(good))
    broken["best_path"] = [0, 3]
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="best_path"):
        load_tree(path)
    broken = json.loads(json.dumps(good))
    broken["nodes"][0]["colour"] = "red"
    path.write_text(json.dumps(broken))
    with pytest.raises(ValueError, match="colour"):
        load_tree(path)
    SearchTree.model_validate(good)  # the unbroken record is valid


# --- settings --------------------------------------------------------------------------------


def test_settings_defaults_and_bounds() -> None:
    cfg = MCTSConfig()
    assert (cfg.simulations, cfg.ucb_c, cfg.max_children, cfg.alpha, cfg.theta, cfg.beta) == (
        50,
        1.414,
        5,
        0.5,
        0.1,
        0.1,
    )
    assert cfg.critic is Critic.SELF and cfg.reference is Reference.ITERATION and cfg.rpo_alpha == 0.0
    assert MCTSConfig(critic="progress").critic is Critic.PROGRESS
    for bad_field in ({"max_children": 1}, {"alpha": 1.5}, {"beta": 0}, {"critic": "oracle"}, {"simulation": 5}):
        with pytest.raises(ValueError):
            MCTSConfig(**bad_field)


def test_puct_selection_follows_the_critics_prior() -> None:
    """With selection puct the exploration bonus follows the critic's prior
    (``q + c * P * sqrt(N) / (1 + n)``). alpha 1, so q is the search's value alone: a (0.3, critic
    0.9) and b (0.5, critic 0.1), two visits each (N = 4, c = 1). UCB1 gives both the same bonus and
    picks b; PUCT gives a 0.3 + 0.9 * 2 / 3 = 0.9 against b's 0.5 + 0.1 * 2 / 3 = 0.57."""
    picks = {}
    for selection in ("ucb1", "puct"):
        tree = new_tree(alpha=1.0)
        tree.selection = selection
        a, b = child(tree, 0, 1, 0.9), child(tree, 0, 2, 0.1)
        for value in (0.3, 0.3):
            tree.backup(a, value)
        for value in (0.5, 0.5):
            tree.backup(b, value)
        picks[selection] = {a: "a", b: "b"}[tree.select_child(0)]
    assert picks == {"ucb1": "b", "puct": "a"}
    assert critic_priors([tree.node(a), tree.node(b)]) == pytest.approx([0.9, 0.1])
    with pytest.raises(ValueError, match="selection"):
        Tree(new_tree().record, selection="greedy")
