"""`make up` on the CPU target when the policy cannot start: it ends, with one line naming the cause.

Three ways vLLM fails at start, each put in by an override file (scripts/compose_cpu.sh's
HALO_CPU_OVERRIDES): a flag vLLM refuses, a model folder that does not exist, and a memory limit the
policy container cannot start in (the kernel's OOM killer). Under `restart: unless-stopped` each one
restarts the container in a loop; `make up` must end anyway, non-zero, its last line
`error: policy ...` with the cause, and leave the policy stopped rather than restarting.

The stack runs under a project, env file and ports of its own (29xxx, Redis 26390), so it touches no
other stack on the machine; it is taken down with its volumes at the end. It builds the service images
through `make up` (seconds once cached; the base image comes from `make compose-test`). Opt-in, like
test_compose_stack.py: HALO_COMPOSE_TEST=1.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OPT_IN = "HALO_COMPOSE_TEST"
PROJECT = f"halo-up-failures-{os.getpid()}"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.compose,
    pytest.mark.skipif(
        os.environ.get(OPT_IN) != "1",
        reason=f"builds and runs the Docker Compose stack (minutes); set {OPT_IN}=1 (docs/compose.md)",
    ),
]

FAILURES = {
    "bad-flag": (
        "services:\n  policy:\n    environment:\n      HALO_POLICY_EXTRA_ARGS: '[\"--no-such-flag\"]'\n",
        "unrecognized arguments: --no-such-flag",
    ),
    "no-model-folder": (
        "services:\n  policy:\n    environment:\n      HALO_POLICY_MODEL: /data/models/no-such-model\n",
        "HALO_POLICY_MODEL=/data/models/no-such-model is not a folder here",
    ),
    "out-of-memory": (
        "services:\n  policy:\n    mem_limit: 800m\n    memswap_limit: 800m\n",
        "the out-of-memory killer killed",
    ),
}


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    folder = tmp_path_factory.mktemp("make-up")
    env_file = folder / "env"
    env_file.write_text(f"HALO_TRAINER_API_TOKEN={os.urandom(16).hex()}\n")
    env_file.chmod(0o600)
    env = {k: os.environ[k] for k in ("PATH", "HOME", "DOCKER_HOST") if k in os.environ}
    env.update(
        ENV_FILE=str(env_file),
        HALO_ENV_FILE=str(env_file),
        HALO_CPU_PROJECT=PROJECT,
        HALO_CPU_POLICY_PORT="29000",
        HALO_CPU_ENV_PORT="29100",
        HALO_CPU_REWARD_PORT="29200",
        HALO_CPU_SITES_PORT="29300",
        HALO_CPU_TRAINER_PORT="29400",
        HALO_CPU_REDIS_PORT="26390",
        HALO_EXTRA_CA_CERTS=os.environ.get("HALO_EXTRA_CA_CERTS", ""),
        FOLDER=str(folder),
    )
    yield env
    subprocess.run(
        ["bash", "scripts/compose_cpu.sh", "down", "-v", "--remove-orphans"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=300,
    )


@pytest.mark.parametrize("failure", list(FAILURES))
def test_make_up_ends_naming_why_the_policy_cannot_start(stack: dict[str, str], failure: str) -> None:
    override, cause = FAILURES[failure]
    path = Path(stack["FOLDER"]) / f"{failure}.yml"
    path.write_text(override)
    env = {**stack, "HALO_CPU_OVERRIDES": str(path)}
    # The bound is the wait's own; this timeout only keeps a regression (an endless wait) from hanging the suite.
    done = subprocess.run(
        ["make", "up", "STACK=compose-cpu"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    out = done.stdout + done.stderr
    assert done.returncode != 0, out[-4000:]
    last = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert last, out[-4000:]
    assert last[-1].startswith("error: policy ") and "at start" in last[-1] and cause in last[-1], last[-1]
    assert "stopped it (it restarted in a loop)" in last[-1]
    assert "Traceback" not in "\n".join(done.stderr.splitlines()[-3:])
    # The wait said how long it took: one line of progress per poll of note, the last one the failure's.
    waited = [int(m) for m in re.findall(r"^\[make up +(\d+)s\]", done.stderr, re.M)]
    assert waited, done.stderr[-2000:]
    print(f"{failure}: make up ended {waited[-1]} s into its wait: {last[-1][:240]}")
    state = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label=com.docker.compose.project={PROJECT}"]
        + ["--filter", "label=com.docker.compose.service=policy", "--format", "{{.State}}"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    assert state == ["exited"], state  # stopped, not restarting in a loop
