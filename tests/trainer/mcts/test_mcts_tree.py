"""The MCTS tree on hand-made trees: UCB1, backup, composite Q, pairs, best path, the tree file."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from halo.actions import INVALID_ACTION_KEY, canonical_action
from halo.schemas import Action, ActionParseError, ParseErrorReason, SamplingParams, SearchTree, Viewport
from halo.schemas.search_settings import Critic, MCTSConfig, Reference
from halo_trainer.mcts.tree import Preference, Tree, composite_q, critic_priors, load_tree, ucb1

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


# --- preference pairs and best path ----------------------------------------------------------


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
    # A terminal child's value is its outcome alone: the critic does not enter it (issue 47).
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
    """Issue 47, defect 2: on local.playground-11 the Playground pays `submitted` (0.3) on any Submit,
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
    """Issue 47, item 2: with selection puct the exploration bonus follows the critic's prior
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
