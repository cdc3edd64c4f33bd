"""The sidecar beside each vLLM replica: it joins the replica into the registry once the replica
serves every live adapter version, refreshes its heartbeat, and takes it out the moment it does not.

Run one per replica (``halo cluster replica --id gpu0 --url http://10.0.0.2:8000 --max-loras 4``).
Each beat asks the replica for ``/v1/models``:

- it answers and lists every live version: the record is refreshed (``adapters`` = what it lists);
- it answers but lacks a live version (it restarted, an unload went wrong): it is deregistered at
  once and joins again, which loads the live versions before it registers (``AdapterFanout.join``),
  so no job is routed to it meanwhile;
- it does not answer: it is deregistered; it joins again once it answers.

A replica whose machine does not see the head's data folder (``record.fetches_adapters``, the store
is ``http``) also serves the fan-out's load requests meanwhile: it fetches each adapter folder from
the store into this machine's data folder and loads that copy (``AdapterFanout.serve_loads``).

No Ray here: a replica is a plain HTTP server, whoever started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from halo.adapter_fanout import AdapterFanout
from halo.schemas.cluster import ReplicaRecord
from halo.transport import CallError

logger = logging.getLogger("halo_cluster.replica_sidecar")


async def beat_once(fanout: AdapterFanout, record: ReplicaRecord, joined: bool) -> bool:
    """One heartbeat; returns whether the replica is registered after it."""
    registry = fanout.registry
    try:
        if not joined:
            loaded = await fanout.join(record)
            logger.info("replica %s joined (loaded %s)", record.replica_id, loaded or "nothing")
            return True
        served = await fanout.served(record)
        lacking = set(await fanout.versions()) - served
        if lacking:
            logger.warning("replica %s lacks %s (restarted?): out until it has them", record.replica_id, lacking)
            await registry.deregister(record.replica_id)
            return False
        await registry.register(record.model_copy(update={"adapters": sorted(served)}))
        return True
    except CallError as exc:
        if joined:
            logger.warning("replica %s does not answer (%s): deregistered", record.replica_id, exc)
        await registry.deregister(record.replica_id)
        return False


async def run_sidecar(fanout: AdapterFanout, record: ReplicaRecord, every_s: float, stop: Callable[[], bool]) -> None:
    joined = False
    loads = asyncio.create_task(fanout.serve_loads(record, stop)) if record.fetches_adapters else None
    try:
        while not stop():
            if loads is not None and loads.done():
                loads.result()  # it failed (Redis lost): fail the sidecar, whose owner restarts it
            joined = await beat_once(fanout, record, joined)
            await asyncio.sleep(every_s)
    finally:
        if loads is not None:
            loads.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await loads
        await fanout.registry.deregister(record.replica_id)
