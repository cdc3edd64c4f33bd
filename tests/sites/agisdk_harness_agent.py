"""agisdk 0.3.5's own harness, unmodified, with a scripted agent that replays a reference solution.

Run by tests/sites/test_agisdk_harness.py in a subprocess whose environment points Chromium at
``halo_sites.real_proxy`` (``https_proxy``) and trusts its CA, exactly as docs/sites.md tells a user:

    python tests/sites/agisdk_harness_agent.py v2.omnizon-1 <solution.json> <results dir>

Prints the harness's record for the task as one JSON line (``cum_reward`` is 1.0 on SUCCESS).
"""

from __future__ import annotations

import dataclasses
import json
import sys

from agisdk.REAL.browsergym.experiments import AbstractAgentArgs, Agent
from agisdk.REAL.harness import harness

WIDTH, HEIGHT = 1280, 720  # the harness's default browser_dimensions


def as_code(action: dict) -> str:
    """One reference action (``halo.schemas.Action`` JSON) as the Playwright code BrowserGym runs."""
    kind, target = action["action"], action.get("element_id")
    where = f"page.locator('[data-halo-id={json.dumps(target)}]')" if target else None
    if kind in ("left_click", "triple_click"):
        clicks = 3 if kind == "triple_click" else 1
        if where:
            return f"{where}.click(click_count={clicks})"
        x, y = action["coordinate"]
        return f"page.mouse.click({x * WIDTH / 1000}, {y * HEIGHT / 1000}, click_count={clicks})"
    if kind == "type":
        return (f"{where}.click()\n" if where else "") + f"page.keyboard.type({json.dumps(action['text'])})"
    if kind == "key":
        return f"page.keyboard.press({json.dumps('+'.join(action['keys']))})"
    if kind in ("terminate", "answer"):
        # agisdk ends an episode at the agent's message: its evaluator gets it as the model response.
        return f"send_message_to_user({json.dumps(action.get('text') or 'Done')})"
    raise ValueError(f"no BrowserGym code for {kind!r}")


class ReplayAgent(Agent):
    action_set = None  # BrowserGym then runs the agent's actions as Playwright code, unmapped

    def __init__(self, actions: list[dict]) -> None:
        self.code = [as_code(a) for a in actions]

    def obs_preprocessor(self, obs: dict) -> dict:
        # The replay reads nothing; dropping the text fields also spares the loop's token counts,
        # whose tiktoken encoding would be downloaded on first use (nothing is, on these machines).
        if obs.get("last_action_error"):
            sys.stderr.write(f"action error: {obs['last_action_error']}\n")
        return {k: v for k, v in obs.items() if not isinstance(v, str)}

    def get_action(self, obs: dict) -> tuple[str, dict]:
        return (self.code.pop(0) if self.code else "send_message_to_user('Done')"), {}


@dataclasses.dataclass
class ReplayAgentArgs(AbstractAgentArgs):
    actions: list = dataclasses.field(default_factory=list)

    def make_agent(self) -> Agent:
        return ReplayAgent(self.actions)


def main() -> None:
    task_name, solution, results_dir = sys.argv[1:4]
    with open(solution, encoding="utf-8") as f:
        actions = json.load(f)
    run = harness(
        agentargs=ReplayAgentArgs(actions=actions),
        task_name=task_name,
        headless=True,
        max_steps=len(actions) + 2,
        results_dir=results_dir,
        use_cache=False,
        num_workers=1,
    )
    record = run.run()[task_name]
    sys.stdout.write(json.dumps({k: record.get(k) for k in ("cum_reward", "err_msg", "n_steps")}, default=str) + "\n")


if __name__ == "__main__":
    main()
