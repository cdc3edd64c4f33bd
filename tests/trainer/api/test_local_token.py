"""The local stack's token: made once per data folder, the user's alone, and what the CLI sends.

The CLI test runs ``halo runs stop`` against the trainer's real app (served on a free port, its run
manager on a Redis of the module's own): the token it sends comes from the user's file alone.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import redis
import redis.asyncio as aioredis
from pydantic import SecretStr
from typer.testing import CliRunner

from halo.cli import main as cli
from halo.local_token import ensure_token, read_token, token_path
from halo.policy_client import PolicyClient
from halo.schemas import RunSpec, RunState, RunStatus
from halo.screenshots import ScreenshotStore
from halo.settings.trainer import TrainerSettings
from halo_trainer import keys
from halo_trainer.api.app import create_app
from halo_trainer.api.runs import RunManager
from tests.trainer.serve_app import serve
from tests.trainer.stand_ins import EnvStandIn


def test_the_stack_token_is_made_once_random_and_readable_by_its_owner_only(tmp_path: Path) -> None:
    settings = TrainerSettings(_env_file=None, data_dir=tmp_path)
    assert read_token(settings) == ""
    token = ensure_token(settings)
    assert len(token) == 48 and ensure_token(settings) == token == read_token(settings)
    path = token_path(settings)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)  # a copy made readable to others: the user's alone again at the next `up`
    assert ensure_token(settings) == token and stat.S_IMODE(path.stat().st_mode) == 0o600
    other = TrainerSettings(_env_file=None, data_dir=tmp_path / "other")
    assert ensure_token(other) != token  # one per data folder: each stack its own
    # HALO_TRAINER_API_TOKEN is the one setting: when set, it is the token, and no file is made.
    given = TrainerSettings(_env_file=None, data_dir=tmp_path / "given", api_token=SecretStr("set-by-user"))
    assert ensure_token(given) == read_token(given) == "set-by-user" and not token_path(given).exists()


@pytest.fixture
def trainer(clean_redis: str, tmp_path: Path):
    """The trainer's app with the stack's token from the data folder, one run running."""
    settings = TrainerSettings(_env_file=None, data_dir=tmp_path / "data", redis_url=clean_redis)
    settings = settings.model_copy(update={"api_token": SecretStr(ensure_token(settings))})
    status = RunStatus(
        run_id="r1", state=RunState.RUNNING, spec=RunSpec(domain="playground"), created_at=1, updated_at=1
    )
    redis.Redis.from_url(clean_redis).hset(keys.RUNS, "r1", status.model_dump_json())
    manager = RunManager(
        settings,
        aioredis.from_url(clean_redis),
        PolicyClient("http://127.0.0.1:9", "halo-base"),
        ScreenshotStore(tmp_path / "shots"),
        EnvStandIn(),
    )
    app = create_app(settings)
    app.state.manager = manager
    with serve(app, lifespan="off") as url:
        yield settings, int(url.rsplit(":", 1)[1])


def test_the_cli_sends_the_token_from_the_users_file(trainer, clean_redis: str, monkeypatch, tmp_path: Path) -> None:
    settings, port = trainer
    monkeypatch.delenv("HALO_TRAINER_API_TOKEN", raising=False)
    monkeypatch.setenv("HALO_TRAINER_PORT", str(port))
    monkeypatch.setenv("HALO_DATA_DIR", str(tmp_path / "elsewhere"))  # no token file there
    refused = CliRunner().invoke(cli.app, ["runs", "stop", "r1"])
    assert refused.exit_code == 1 and "401" in refused.output and "halo stack token" in refused.output
    assert not redis.Redis.from_url(clean_redis).sismember(keys.STOPPED_RUNS, "r1")

    monkeypatch.setenv("HALO_DATA_DIR", str(settings.data_dir))
    printed = CliRunner().invoke(cli.app, ["stack", "token"])
    assert printed.exit_code == 0 and printed.output.strip() == settings.api_token.get_secret_value()
    stopped = CliRunner().invoke(cli.app, ["runs", "stop", "r1"])
    assert stopped.exit_code == 0, stopped.output
    assert redis.Redis.from_url(clean_redis).sismember(keys.STOPPED_RUNS, "r1")


def test_a_client_made_before_the_stack_wrote_its_token_sends_it(trainer, clean_redis: str, tmp_path: Path) -> None:
    """`halo train` on a fresh data folder makes its client, then starts the stack, whose `up` writes
    the token the trainer then requires: the client reads it at each request, not when it was made
    (a newcomer's first `make train` answered 401 before)."""
    from halo.cli import train_commands

    settings, port = trainer
    fresh = TrainerSettings(_env_file=None, data_dir=tmp_path / "fresh", port=port)
    with train_commands._client(fresh) as client:
        assert client.post("/runs/r1/stop", json={}).status_code == 401  # no token anywhere yet
        token_path(fresh).parent.mkdir(parents=True)
        token_path(fresh).write_text(settings.api_token.get_secret_value() + "\n")  # what `halo stack up` does
        stopped = client.post("/runs/r1/stop", json={})
    assert stopped.status_code == 200, stopped.text
    assert redis.Redis.from_url(clean_redis).sismember(keys.STOPPED_RUNS, "r1")
