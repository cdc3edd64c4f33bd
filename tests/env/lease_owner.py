"""A stand-in for a rollout worker process: holds an env session lease, opens sessions under it
(a reset and a fork of it; with ``restore``, also a session restored from the reset's snapshot, as
an MCTS search re-enters a node), prints their ids as one JSON line, then waits.

``python -m tests.env.lease_owner <env url> <owner> [restore]``. Closing its stdin ends it gracefully
(the lease is released); SIGKILL is what the lease tests do to it.
"""

from __future__ import annotations

import asyncio
import json
import sys

from halo.clients import EnvClient


async def main(url: str, owner: str, restore: bool = False) -> None:
    async with EnvClient(url) as env, env.hold_lease(owner):
        reset = await env.reset("fixture.actions")
        parent = reset.observation.session_id
        fork = await env.fork(parent, 2)
        ids = [parent] + [s.observation.session_id for s in fork.sessions]
        if restore:
            restored = await env.restore(await env.snapshot(parent))
            ids.append(restored.observation.session_id)
        print(json.dumps({"lease_id": env.lease_id, "sessions": ids}), flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the test closes stdin (or kills us)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3:] == ["restore"]))
