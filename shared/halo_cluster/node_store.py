"""A rollout node's first act: check that it sees the head's data through the store its plan
names, and refuse to start otherwise. The refusal is the actor's creation error, so the supervisor
reports it in ``halo cluster status`` with the probe's path, instead of a node whose env writes
screenshots the learner will never find."""

from __future__ import annotations

from halo.settings.store import StoreSettings
from halo.store import check_probe, open_store
from halo_cluster.node_plan import NodePlan


def store_settings(plan: NodePlan) -> StoreSettings:
    """The store as the plan describes it; this process's own ``HALO_STORE_*`` do not count."""
    env = plan.store
    return StoreSettings(
        _env_file=None,
        data_dir=env["HALO_DATA_DIR"],
        backend=env.get("HALO_STORE_BACKEND", "shared_fs"),
        head_url=env.get("HALO_STORE_HEAD_URL", ""),
        token=env.get("HALO_STORE_TOKEN", ""),
    )


def check_node_store(plan: NodePlan) -> None:
    """``StoreRefused`` (with the probe's path and what to do) unless this node sees the head's
    probe; a plan without a probe (a test's stub node) is not checked."""
    if not plan.probe:
        return
    store = open_store(store_settings(plan))
    try:
        check_probe(store, plan.probe)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()
