"""A policy server with a key (``HALO_POLICY_API_KEY``, vLLM's own ``VLLM_API_KEY``): every ``/v1``
request without it is refused, adapter loading included, while ``/health`` stays open for probes;
the client given the key (``HALO_TRAINER_POLICY_API_KEY``) is served. On the real vLLM CPU server.
A replica listens on its node's address, so without a key anyone who reaches the node could load
an adapter into the policy."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from halo.policy_client import PolicyClient
from halo.settings.policy import PolicySettings
from halo_policy.server import build_env
from tests.policy.conftest import policy_server

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

KEY = "test-key-9f2c"


def test_the_key_reaches_vllm_in_its_environment_only() -> None:
    assert build_env(PolicySettings(api_key=KEY, _env_file=None), base={})["VLLM_API_KEY"] == KEY
    assert "VLLM_API_KEY" not in build_env(PolicySettings(_env_file=None), base={})


async def test_a_server_with_a_key_refuses_requests_without_it(tiny_model_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "policy.log"
    with policy_server(tiny_model_dir, log, HALO_POLICY_API_KEY=KEY) as port:
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            assert (await http.get("/health")).status_code == 200
            assert (await http.get("/v1/models")).status_code == 401
            wrong = {"Authorization": "Bearer not-the-key"}
            assert (await http.get("/v1/models", headers=wrong)).status_code == 401
            load = {"lora_name": "intruder", "lora_path": str(tmp_path)}
            assert (await http.post("/v1/load_lora_adapter", json=load)).status_code == 401
        served = PolicySettings(_env_file=None).served_model_name
        async with PolicyClient(base, served, api_key=KEY, max_retries=0) as client:
            assert served in [m["id"] for m in await client.models()]
    assert KEY not in log.read_text(errors="replace")  # the command line vLLM was started with, logged
