"""Runtime LoRA: publish v1 then v2 under new names while requests are in flight, then unload them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from halo.policy_client import PolicyClient
from halo.settings.policy import PolicySettings
from halo.transport import ServiceRejected

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


@pytest.fixture(scope="session")
def adapter_dirs(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from halo_model.lora import random_adapter

    root = tmp_path_factory.mktemp("adapters")
    return (
        random_adapter(tiny_model_dir, root / "v1", seed=1),
        random_adapter(tiny_model_dir, root / "v2", seed=2),
    )


async def _served(client: PolicyClient) -> set[str]:
    return {m["id"] for m in await client.models()}


@pytest.mark.browser
async def test_hot_swap_under_load(
    vllm_server: PolicySettings, adapter_dirs: tuple[Path, Path], screenshot_png: bytes
) -> None:
    v1_dir, v2_dir = adapter_dirs
    run = f"t{uuid.uuid4().hex[:6]}"
    v1, v2 = f"{run}-v1", f"{run}-v2"
    # Unconstrained and 300 tokens long: each request stays in flight for seconds on the CPU.
    long = {"min_tokens": 300, "ignore_eos": True}
    async with PolicyClient.from_settings(vllm_server, structured_outputs="off", max_tokens=300) as client:

        def sample(seed: int) -> asyncio.Task:
            return asyncio.create_task(
                client.sample_actions(screenshot_png, "Send an email", n=4, seed=seed, extra_body=long)
            )

        base_greedy, _ = await client.sample_single(screenshot_png, "Send an email")
        on_base = [sample(s) for s in range(3)]
        await asyncio.sleep(0.2)
        load_v1_s = await client.publish_adapter(v1, str(v1_dir))
        assert client.current_model == v1
        on_v1 = [sample(s) for s in range(10, 13)]
        await asyncio.sleep(0.2)
        await client.publish_adapter(v2, str(v2_dir))
        assert client.current_model == v2
        assert {v1, v2} <= await _served(client)  # publishing keeps the previous version: its owner unloads it
        on_v2 = [sample(s) for s in range(20, 23)]
        results = await asyncio.gather(*on_base, *on_v1, *on_v2)  # no request failed

        assert [r.model for r in results] == [vllm_server.served_model_name] * 3 + [v1] * 3 + [v2] * 3
        assert load_v1_s < 5.0
        await client.unload_adapter(v1)
        served = await _served(client)
        assert v1 not in served and v2 in served

        v2_greedy, _ = await client.sample_single(screenshot_png, "Send an email")
        assert v2_greedy.token_ids != base_greedy.token_ids  # the adapter changes the policy
        v2_again, _ = await client.sample_single(screenshot_png, "Send an email", model=v2)
        assert v2_again.token_ids == v2_greedy.token_ids

        with pytest.raises(ServiceRejected, match="already loaded"):
            await client.publish_adapter(v2, str(v1_dir))  # a version is never reloaded in place
        await client.unload_adapter(v2)
        assert v2 not in await _served(client)
