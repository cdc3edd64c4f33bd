"""The reward function on hand-built states, every domain (fast: no I/O)."""

from __future__ import annotations

from pathlib import Path

import pytest

from halo.schemas import ActionParseError, StateSummary
from halo.settings import REPO_ROOT
from halo_reward.core import EpisodeMemory, ScoringOptions, score
from halo_reward.rules import RuleBook
from tests.reward.helpers import click, request, state

RULES = RuleBook.load(REPO_ROOT / "configs" / "rewards")
MILESTONE = ScoringOptions(mode="milestone")
POTENTIAL = ScoringOptions(mode="potential", gamma=0.99)

# The seeds' tables (zilloft and omnizon's order_placed: our weights), in the order a solution reaches them.
TABLES = {
    "gomail": [
        ("compose_opened", 0.3),
        ("recipient_filled", 0.2),
        ("subject_filled", 0.2),
        ("send_clicked", 0.2),
        ("message_sent", 0.5),
    ],
    "gocalendar": [
        ("create_clicked", 0.3),
        ("title_entered", 0.2),
        ("datetime_set", 0.2),
        ("save_clicked", 0.2),
        ("event_created", 0.5),
    ],
    "omnizon": [
        ("search_results", 0.2),
        ("product_page", 0.3),
        ("add_to_cart", 0.3),
        ("cart_page", 0.3),
        ("checkout", 0.4),
        ("order_placed", 0.5),
    ],
    "zilloft": [
        ("search", 0.2),
        ("filters_applied", 0.2),
        ("listing_viewed", 0.3),
        ("home_saved", 0.3),
        ("agent_contacted", 0.4),
    ],
    "playground": [("field_filled", 0.3), ("submitted", 0.3)],
}


def run(domain: str, states: list[StateSummary], opts: ScoringOptions = MILESTONE, actions=None, **last):
    """Score the transitions states[i] -> states[i+1] in order; returns the breakdowns."""
    memory, outs = EpisodeMemory(), []
    for i in range(len(states) - 1):
        extra = last if i == len(states) - 2 else {}
        act = actions[i] if actions else click(10 + i, 10)
        req = request(states[i], states[i + 1], domain=domain, step=i, action=act, **extra)
        out, memory = score(req, memory, RULES.for_domain(domain), opts)
        outs.append(out)
    return outs, memory


def progression(domain: str) -> list[StateSummary]:
    """Reset state, then one more progress flag per step (the clones record them in their state)."""
    flags: dict[str, bool] = {}
    states = [state(url=f"http://sites/{domain}/", progress={})]
    for i, (name, _) in enumerate(TABLES[domain]):
        flags[name] = True
        states.append(state(url=f"http://sites/{domain}/p{i}", progress=flags, extra={"page": i}))
    return states


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_each_milestone_pays_its_weight_once_in_order(domain: str) -> None:
    outs, memory = run(domain, progression(domain), task_success=True, terminated=True)
    assert [o.milestones for o in outs] == [[name] for name, _ in TABLES[domain]]
    for out, (_, weight) in zip(outs, TABLES[domain], strict=True):
        assert out.progress == pytest.approx(weight)
        assert out.validity == pytest.approx(0.1) and out.novelty == pytest.approx(0.2)
        assert out.loop_penalty == 0 and not out.infra_error
    assert outs[-1].success_bonus == 10.0
    assert set(memory.reached) == {name for name, _ in TABLES[domain]}
    assert all(o.total > 0 for o in outs)  # cumulative reward rises at every step


@pytest.mark.parametrize("domain", sorted(TABLES))
def test_potential_mode_telescopes_and_still_rises(domain: str) -> None:
    outs, _ = run(domain, progression(domain), POTENTIAL)
    phi = 0.0
    for out, (_, weight) in zip(outs, TABLES[domain], strict=True):
        assert out.progress == pytest.approx(0.99 * (phi + weight) - phi)
        phi += weight
        assert out.total > 0
    # Ending the episode: phi(terminal) = 0, so the shaping returns what it lent (policy invariance).
    end, _ = run(domain, [*progression(domain), progression(domain)[-1]], POTENTIAL, terminated=True)
    assert end[-1].progress == pytest.approx(-phi)


def test_milestone_already_shown_at_reset_is_not_paid() -> None:
    start = state(progress={"compose_opened": True})
    outs, _ = run("gomail", [start, state(progress={"compose_opened": True, "recipient_filled": True})])
    assert outs[0].milestones == ["recipient_filled"]


def test_progress_flags_outside_the_table_pay_nothing_on_fixed_sites() -> None:
    outs, _ = run("gomail", [state(), state(progress={"surprise": True})])
    assert outs[0].milestones == [] and outs[0].progress == 0


def test_playground_flags_come_from_the_task() -> None:
    outs, _ = run("playground", [state(), state(progress={"option_picked": True})])
    assert outs[0].milestones == ["option_picked"] and outs[0].progress == pytest.approx(0.3)


def test_unknown_domain_gets_shaping_only() -> None:
    outs, _ = run("dashdish", [state(url="https://d/"), state(url="https://d/menu", progress={"x": True})])
    assert outs[0].milestones == [] and outs[0].total == pytest.approx(0.3)


# --- sites that expose no state: URL and accessibility-tree patterns ------------------------------


def test_gomail_page_fallback() -> None:
    inbox = state(exposed=False, axtree='[1] button "Compose"\n[2] link "Inbox"')
    compose = state(exposed=False, axtree=inbox.axtree + '\n[3] dialog "New Message"\n  [4] textbox "To"')
    filled = state(exposed=False, axtree=compose.axtree + ' value="bob@example.com"\n  [5] button "Send"')
    sent = state(exposed=False, axtree='[1] button "Compose"\n[9] status "Message sent"')
    outs, _ = run("gomail", [inbox, compose, filled, sent])
    assert outs[0].milestones == ["compose_opened"]
    assert outs[1].milestones == ["recipient_filled", "send_clicked"]
    assert outs[2].milestones == ["message_sent"]


def test_omnizon_url_fallback() -> None:
    urls = ["/", "/search?q=mug", "/product/12", "/cart", "/checkout"]
    states = [state(url=f"https://omnizon.example{u}", exposed=False) for u in urls]
    outs, _ = run("omnizon", states)
    assert [o.milestones for o in outs] == [["search_results"], ["product_page"], ["cart_page"], ["checkout"]]


def test_real_style_nested_diff_detects_sent_mail_and_orders() -> None:
    sent = {"initialfinaldiff": {"added": {"email": {"emails": {"e-77": {"sent": True, "to": "bob"}}}}}}
    outs, _ = run("gomail", [state(), state(extra=sent)])
    assert outs[0].milestones == ["message_sent"]
    order = {"initialfinaldiff": {"added": {"order": {"orders": {"o1": {"items": []}}}}}}
    outs, _ = run("omnizon", [state(url="https://o/"), state(url="https://o/done", extra=order)])
    assert outs[0].milestones == ["order_placed"]


def test_progress_markers_are_authoritative_when_the_site_keeps_them() -> None:
    cart = {"initialfinaldiff": {"updated": {"cart": {"items": {"p1": {"quantity": 2}}}}}}
    # A clone's marked state: changing a quantity is not "add to cart" unless the site says so.
    outs, _ = run("omnizon", [state(progress={}), state(progress={}, extra=cart)])
    assert outs[0].milestones == []
    # A state without markers (hosted REAL's /finish): the diff rule decides.
    outs, _ = run("omnizon", [state(), state(extra=cart)])
    assert outs[0].milestones == ["add_to_cart"]


# --- general shaping ------------------------------------------------------------------------------


def test_invalid_and_action_error_and_infra() -> None:
    rules = RULES.for_domain("gomail")
    bad = ActionParseError(reason="bad_json", detail="invalid JSON")
    out, mem = score(request(state(), state(), parse_error=bad), EpisodeMemory(), rules, MILESTONE)
    assert out.validity == -0.5 and out.total == -0.5
    out, _ = score(request(state(), state(), action_error="no element 'zz'"), mem, rules, MILESTONE)
    assert out.validity == -0.5
    memory = EpisodeMemory(steps=3, reached={"compose_opened": 1})
    crashed = request(state(), state(progress={"message_sent": True}), infra_error=True, task_success=True)
    out, after = score(crashed, memory, rules, MILESTONE)
    assert out.infra_error and out.total == 0 and out.milestones == [] and after == memory


def test_novelty_then_loop_on_return() -> None:
    a, b = state(url="http://sites/gomail/"), state(url="http://sites/gomail/?folder=sent")
    outs, _ = run("gomail", [a, b, a, b])
    assert outs[0].novelty == pytest.approx(0.2)
    assert outs[1].loop_penalty == -1.0 and outs[2].loop_penalty == -1.0


def test_repeated_ineffective_action_and_stall() -> None:
    s = state()
    same = [click(1, 1)] * 2
    outs, _ = run("gomail", [s, s, s], actions=same)
    assert outs[0].total == pytest.approx(0.1) and outs[1].loop_penalty == -1.0
    outs, _ = run("gomail", [s] * 7, actions=[click(i, i) for i in range(6)])
    assert [o.loop_penalty for o in outs] == [0, 0, 0, 0, -1.0, -1.0]  # stall_limit = 5 no-effect steps


def test_success_pays_once() -> None:
    rules = RULES.for_domain("gomail")
    out, mem = score(request(state(), state(), task_success=True, terminated=True), EpisodeMemory(), rules, MILESTONE)
    assert out.success_bonus == 10.0
    out, _ = score(request(state(), state(), task_success=True, terminated=True), mem, rules, MILESTONE)
    assert out.success_bonus == 0
    out, _ = score(request(state(), state(), task_success=None, terminated=True), EpisodeMemory(), rules, MILESTONE)
    assert out.success_bonus == 0


def test_element_ids_do_not_make_a_new_state() -> None:
    a = state(exposed=False, axtree='[1] button "Compose"\n  [2] link "Inbox"')
    b = state(exposed=False, axtree='[a7] button "Compose"\n  [a8] link "Inbox"')
    rules = RULES.for_domain("gomail")
    out, _ = score(request(a, b), EpisodeMemory(), rules, MILESTONE)
    assert out.novelty == 0


# --- farming --------------------------------------------------------------------------------------


def compose_toggle(exposed: bool) -> list[StateSummary]:
    """Open and close the compose window 20 times (40 steps)."""
    if exposed:
        closed0 = state(progress={}, extra={"ui": {"compose": False}})
        opened = state(progress={"compose_opened": True}, extra={"ui": {"compose": True}})
        closed = state(progress={"compose_opened": True}, extra={"ui": {"compose": False}})
    else:
        closed0 = closed = state(exposed=False, axtree='[1] button "Compose"')
        opened = state(exposed=False, axtree='[1] button "Compose"\n[2] dialog "New Message"')
    return [closed0] + [opened, closed] * 20


@pytest.mark.parametrize("exposed", [True, False], ids=["site-state", "page-patterns"])
@pytest.mark.parametrize("opts", [MILESTONE, POTENTIAL], ids=["milestone", "potential"])
def test_farming_compose_earns_no_more_than_the_first_opening(opts: ScoringOptions, exposed: bool) -> None:
    toggles = [click(50, 50), click(90, 10)] * 20
    outs, _ = run("gomail", compose_toggle(exposed), opts, actions=toggles)
    first = outs[0].total
    assert outs[0].milestones == ["compose_opened"]
    assert sum(o.total for o in outs) <= first
    assert sum(o.progress for o in outs) <= outs[0].progress + 1e-9
    assert sum(len(o.milestones) for o in outs) == 1


def test_rules_files_are_checked(tmp_path: Path) -> None:
    (tmp_path / "gomail.yaml").write_text("milestones:\n  x:\n    weight: 1\n    page:\n      - url: '('\n")
    with pytest.raises(ValueError, match="(?s)gomail.yaml.*regular expression"):
        RuleBook.load(tmp_path)
    (tmp_path / "gomail.yaml").write_text("domain: omnizon\n")
    with pytest.raises(ValueError, match="must match the file name"):
        RuleBook.load(tmp_path)
    (tmp_path / "gomail.yaml").write_text("milestones:\n  x:\n    wieght: 1\n")
    with pytest.raises(ValueError, match="gomail.yaml"):
        RuleBook.load(tmp_path)


def test_typing_ever_new_text_earns_bounded_novelty() -> None:
    states = [state(exposed=False, axtree=f'[1] textbox "Search" value="{"x" * i}"') for i in range(31)]
    outs, memory = run("omnizon", states, actions=[click(i, 1) for i in range(30)])
    assert sum(o.novelty for o in outs) == pytest.approx(0.2 * 10) and memory.novelty_paid == 10
    assert sum(o.total for o in outs) == pytest.approx(0.1 * 30 + 0.2 * 10)
