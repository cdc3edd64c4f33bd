"""`halo doctor` end to end on the embedded stack (CPU target): every check passes against the stack's
own vLLM and env service, the report is written, and the table shows one line per check."""

from __future__ import annotations

import pytest

from halo.schemas.doctor import DoctorReport

pytestmark = [pytest.mark.slow, pytest.mark.vllm, pytest.mark.browser]

CHECKS = [
    "env screenshot",
    "served model",
    "adapter",
    "parity free-form",
    "parity grammar",
    "update time",
    "update memory",
]


def test_every_check_passes_on_the_cpu_target(stack, tmp_path) -> None:
    out = tmp_path / "doctor.json"
    done = stack.halo("doctor", "--out", str(out), timeout=900)
    print(done.stdout)
    assert done.returncode == 0, done.stdout + done.stderr
    report = DoctorReport.model_validate_json(out.read_text())
    assert [c.name for c in report.checks] == CHECKS and report.ok
    by_name = {c.name: c for c in report.checks}
    assert "env service" in by_name["env screenshot"].detail
    # Both sides float32 on the CPU: the gap is rounding (tests/policy/test_parity.py bounds it per token).
    for name in ("parity free-form", "parity grammar"):
        assert by_name[name].figure is not None and by_name[name].figure < 1e-4, by_name[name]
    assert 0 < by_name["update memory"].figure <= by_name["update memory"].threshold
    for check in report.checks:
        assert f"{check.name:<17} ok" in done.stdout
    assert "all checks passed" in done.stdout


def test_a_stack_without_vllm_fails_with_what_to_do(stack, tmp_path) -> None:
    stack.env = {**stack.env, "HALO_TRAINER_POLICY_URL": "http://127.0.0.1:9"}  # put back by the fixture
    out = tmp_path / "doctor.json"
    done = stack.halo("doctor", "--out", str(out), timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    report = DoctorReport.model_validate_json(out.read_text())
    assert [(c.name, c.ok) for c in report.checks] == [("env screenshot", True), ("served model", False)]
    assert "-> vLLM at http://127.0.0.1:9 does not answer" in done.stdout
