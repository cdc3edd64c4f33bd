"""`python -m halo_policy` as a process: a clear non-zero exit when vLLM cannot start or its engine dies."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from halo.policy_client import PolicyClient
from halo.policy_errors import EngineDead
from halo.transport import ServiceUnavailable
from tests.policy.conftest import start_policy_server, stop_policy_server, wait_listening
from tests.policy.test_client_errors import PNG_1x1

pytestmark = [pytest.mark.slow, pytest.mark.vllm]


def test_a_model_folder_that_is_not_there_fails_before_vllm_starts(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    proc, _ = start_policy_server(tmp_path / "no-such-model", log)
    try:
        code = proc.wait(timeout=120)
    finally:
        stop_policy_server(proc)
    text = log.read_text(errors="replace")
    assert code == 2
    assert f"policy server failed to start: HALO_POLICY_MODEL={tmp_path / 'no-such-model'} is not a folder" in text
    assert "starting vLLM" not in text and "Traceback" not in text


def test_a_flag_vllm_refuses_fails_with_vllms_own_line(tiny_model_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    proc, _ = start_policy_server(tiny_model_dir, log, HALO_POLICY_EXTRA_ARGS='["--no-such-flag"]')
    try:
        code = proc.wait(timeout=300)
    finally:
        stop_policy_server(proc)
    text = log.read_text(errors="replace")
    assert code == 1
    assert "policy server failed to start: vLLM exited with code 2 before becoming healthy" in text
    assert "last vLLM output" in text and "unrecognized arguments: --no-such-flag" in text


async def test_engine_death_is_reported_and_the_launcher_exits_non_zero(tiny_model_dir: Path, tmp_path: Path) -> None:
    import psutil

    log = tmp_path / "server.log"
    proc, port = start_policy_server(tiny_model_dir, log, HALO_POLICY_WARMUP="false")
    try:
        wait_listening(proc, log)
        engine = [
            p
            for p in psutil.Process(proc.pid).children(recursive=True)
            if "EngineCore" in " ".join(p.cmdline() + [p.name()])
        ]
        assert engine, "no EngineCore process under the server"
        os.kill(engine[0].pid, signal.SIGKILL)  # a process this test started
        async with PolicyClient(f"http://127.0.0.1:{port}", "halo-base", max_retries=0) as client:
            with pytest.raises((EngineDead, ServiceUnavailable)):
                for _ in range(30):  # the API server notices the dead engine within a few requests
                    await client.sample_actions(PNG_1x1, "goal", n=1, max_tokens=4)
        assert proc.wait(timeout=120) != 0
        assert "vLLM exited with code" in log.read_text(errors="replace")
    finally:
        stop_policy_server(proc)
