"""The Compose contract: every service's settings, resolved from exactly what Compose gives its container.

`docker-compose config` (Debian's Compose 1.29, or the v2 plugin) renders docker-compose.yml with
the values a fresh `.env` written by `make up` gives (a token, nothing else); the repository's own
`.env` and this process's environment are kept out. Each container's environment is its image's
`ENV` lines (from its Dockerfile, build arguments applied) overlaid by the file's `environment:`.
Each service's own settings class is then built from that environment alone (`_env_file=None`), and
the wiring is checked on the resolved values, not on the text of the file. `wiring_problems`
returns every problem found, so one failure names all of them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from pydantic_settings import BaseSettings

from halo.settings.env import EnvSettings
from halo.settings.policy import GPU_DEFAULT_MODEL, PolicySettings
from halo.settings.reward import RewardSettings
from halo.settings.sites import SitesSettings
from halo.settings.trainer import TrainerSettings
from halo_policy.server import served_model
from halo_trainer.api.runs import learner_model, same_model
from halo_trainer.config import load_defaults, profile_for, resolve

ROOT = Path(__file__).resolve().parents[2]
CPU_OVERRIDE = ROOT / "docker-compose.cpu.yml"
POLICY_PORT_OVERRIDE = ROOT / "docker-compose.policy-port.yml"
TWO_GPU_OVERRIDE = ROOT / "docker-compose.two-gpu.yml"
TOKEN = "contract-test-token"

SETTINGS: dict[str, type[BaseSettings]] = {
    "halo_policy": PolicySettings,
    "halo_env": EnvSettings,
    "halo_sites": SitesSettings,
    "halo_reward": RewardSettings,
    "halo_trainer": TrainerSettings,
}
REDIS_PORT = 6379
# Fields naming a server outside the stack (or an environment variable), never a Compose service.
EXTERNAL_URL_FIELDS = {"openai_base_url", "real_base_url", "real_site_urls"}
# A service's own address (used for links it hands out), not a service it calls.
SELF_URL_FIELDS = {"public_url", "url"}


# --- rendering ------------------------------------------------------------------------------------
def compose_command() -> list[str]:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    pytest.fail("neither `docker compose` nor `docker-compose` is installed (scripts/setup.sh installs one)")


def render(
    tmp: Path, *files: Path, variables: Mapping[str, str] | None = None, env_text: str = ""
) -> subprocess.CompletedProcess[str]:
    """`config` of the given files with exactly ``variables`` (plus PATH/HOME) and an env file holding
    ``env_text`` (empty by default), which is also the file the trainer's ``env_file`` reads."""
    env_file = tmp / "compose.env"
    env_file.write_text(env_text)  # keeps the repository's .env out: only `variables` reach the file
    variables = {"HALO_ENV_FILE": str(env_file), **(variables or {})}
    args = [*compose_command(), "--project-directory", str(ROOT), "--env-file", str(env_file)]
    for f in files or (ROOT / "docker-compose.yml",):
        args += ["-f", str(f)]
    base = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    return subprocess.run([*args, "config"], cwd=tmp, env={**base, **variables}, capture_output=True, text=True)


def load(tmp: Path, *files: Path, variables: Mapping[str, str] | None = None) -> dict[str, Any]:
    result = render(tmp, *files, variables={"HALO_TRAINER_API_TOKEN": TOKEN, **(variables or {})})
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


# --- images: ENV and the command a container runs ---------------------------------------------------
def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def _substitute(value: str, args: Mapping[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), ""), value)


def image_environment(service: Mapping[str, Any]) -> dict[str, str]:
    """The ``ENV`` a service's image sets (its Dockerfile's, build arguments applied)."""
    build = service.get("build")
    if not build:
        return {}
    dockerfile = Path(build["context"]) / build.get("dockerfile", "Dockerfile")
    given = {k: "" if v is None else str(v) for k, v in (build.get("args") or {}).items()}
    args: dict[str, str] = {}
    env: dict[str, str] = {}
    for word, rest in _instructions(dockerfile):
        if word == "ARG":
            name, _, default = rest.partition("=")
            args[name] = given.get(name, _substitute(default.strip('"'), args))
        elif word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = _substitute(value, {**args, **env})
    return env


def _words(value: Any) -> list[str]:
    return shlex.split(value) if isinstance(value, str) else list(value or [])


def _command(service: Mapping[str, Any]) -> list[str]:
    """What the container runs: the service's entrypoint (which drops the image's CMD) and command,
    each falling back to the image's ENTRYPOINT / CMD."""
    image: dict[str, list[str]] = {"ENTRYPOINT": [], "CMD": []}
    build = service.get("build")
    if build:
        for word, rest in _instructions(Path(build["context"]) / build.get("dockerfile", "Dockerfile")):
            if word in image:
                image[word] = yaml.safe_load(rest)  # the JSON (exec) form
    if service.get("entrypoint") is not None:
        return _words(service["entrypoint"]) + _words(service.get("command"))
    return image["ENTRYPOINT"] + (_words(service["command"]) if service.get("command") else image["CMD"])


def halo_module(service: Mapping[str, Any]) -> str | None:
    words = _command(service)
    return next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "-m" and words[i + 1] in SETTINGS), None)


def container_environment(service: Mapping[str, Any]) -> dict[str, str]:
    given = service.get("environment") or {}
    if isinstance(given, list):
        given = dict(item.split("=", 1) for item in given)
    return {**image_environment(service), **{k: "" if v is None else str(v) for k, v in given.items()}}


@contextmanager
def only_environment(environment: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` is exactly ``environment`` inside (settings, and helpers that build their own)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(environment)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Stack:
    """A rendered Compose file with each service's settings resolved from its container's environment."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = config
        self.services: dict[str, dict[str, Any]] = dict(config["services"])
        self.settings: dict[str, Any] = {}
        self.env: dict[str, dict[str, str]] = {}
        self.derived: dict[str, dict[str, Any]] = {}
        for name, service in self.services.items():
            module = halo_module(service)
            if module is None:
                continue
            self.env[name] = container_environment(service)
            with only_environment(self.env[name]):
                s = SETTINGS[module](_env_file=None)
                self.settings[name] = s
                if isinstance(s, PolicySettings):
                    self.derived[name] = {"model": served_model(s, build=False)}
                elif isinstance(s, TrainerSettings):
                    self.derived[name] = {"model": learner_model(s, build=False)}

    def by_type(self, cls: type) -> tuple[str, Any]:
        found = [(n, s) for n, s in self.settings.items() if type(s) is cls]
        assert len(found) == 1, f"expected one {cls.__name__} service, found {[n for n, _ in found]}"
        return found[0]

    def host_network(self, name: str) -> bool:
        return self.services[name].get("network_mode") == "host"

    def listen_port(self, name: str) -> int:
        if name in self.settings:
            return int(self.settings[name].port)
        command = _command(self.services[name])
        if "--port" in command:
            return int(command[command.index("--port") + 1])
        return REDIS_PORT


def _published(service: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(host address, container port) of each published port, in v1's short or v2's long form."""
    out = []
    for port in service.get("ports") or []:
        if isinstance(port, dict):
            out.append((port.get("host_ip") or "0.0.0.0", int(port["target"])))
            continue
        parts = str(port).split("/")[0].split(":")
        address = parts[0] if len(parts) == 3 else "0.0.0.0"
        out.append((address, int(parts[-1])))
    return out


def _mounts(service: Mapping[str, Any]) -> dict[str, str]:
    """Container path -> named volume (or host folder) mounted there."""
    out = {}
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            out[volume["target"]] = volume.get("source", "")
        else:
            source, target = str(volume).split(":")[:2]
            out[target] = source
    return out


def _volume_of(service: Mapping[str, Any], path: Path) -> tuple[str, str] | None:
    """(volume, mount point) holding ``path`` in the container, the deepest mount first."""
    for target, source in sorted(_mounts(service).items(), key=lambda kv: -len(kv[0])):
        if path == Path(target) or Path(target) in path.parents:
            return source, target
    return None


def one_shot_services(services: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """Services that run once and exit (the model step): never restarted, waited for by exit status."""
    return {
        name
        for name, service in services.items()
        if str(service.get("restart", "no")) == "no" and not service.get("healthcheck")
    }


def _probe(service: Mapping[str, Any]) -> str:
    test = (service.get("healthcheck") or {}).get("test") or []
    return " ".join(test) if isinstance(test, list) else str(test)


# --- the contract -----------------------------------------------------------------------------------
def wiring_problems(stack: Stack, *, expect_target: str | None = None) -> list[str]:
    """Every way the rendered stack's wiring is wrong (empty: it is right)."""
    problems: list[str] = []
    services = stack.services

    # Every URL a service calls names another Compose service and the port it listens on.
    for name, settings in stack.settings.items():
        for field, value in settings.model_dump().items():
            if not field.endswith("_url") or field in EXTERNAL_URL_FIELDS | SELF_URL_FIELDS or not value:
                continue
            url = urlsplit(str(value))
            where = f"{name}.{field}={value}"
            if url.hostname not in services or url.hostname == name:
                problems.append(f"{where}: the host is not another Compose service")
                continue
            if url.port != stack.listen_port(url.hostname):
                problems.append(f"{where}: {url.hostname} listens on {stack.listen_port(url.hostname)}")
            if stack.host_network(name):
                # Host networking: names reach 127.0.0.1 only through extra_hosts.
                given = services[name].get("extra_hosts") or {}
                hosts = given if isinstance(given, dict) else dict(re.split("[:=]", h, maxsplit=1) for h in given)
                if hosts.get(url.hostname) != "127.0.0.1":
                    problems.append(f"{where}: host networking without extra_hosts {url.hostname}:127.0.0.1")
            if services[url.hostname].get("network_mode") != services[name].get("network_mode"):
                problems.append(f"{where}: {name} and {url.hostname} are not on the same network")

    # Each service listens where the others (and its healthcheck) look for it.
    for name, settings in stack.settings.items():
        reachable = {"127.0.0.1", "localhost"} if stack.host_network(name) else {"0.0.0.0", "::"}
        if settings.host not in reachable:
            problems.append(f"{name} binds {settings.host}: other containers cannot reach it")

    # Each healthcheck probes readiness on the port the service listens on; a one-shot step has
    # none, and whoever depends on it waits for its successful exit instead.
    one_shot = one_shot_services(services)
    for name, service in services.items():
        probe = _probe(service)
        if name in one_shot:
            pass
        elif name in stack.settings:
            path = "/health" if isinstance(stack.settings[name], PolicySettings) else "/ready"
            wanted = f"127.0.0.1:{stack.listen_port(name)}{path}"
            if wanted not in probe:
                problems.append(f"{name}: healthcheck {probe!r} does not probe {wanted}")
        elif "redis-cli" in probe:
            port = stack.listen_port(name)
            if port != REDIS_PORT and f"-p {port}" not in probe:
                problems.append(f"{name}: healthcheck {probe!r} does not ping port {port}")
        else:
            problems.append(f"{name}: no readiness healthcheck ({probe!r})")
        for dep, condition in (service.get("depends_on") or {}).items():
            if dep in one_shot:
                if condition != {"condition": "service_completed_successfully"}:
                    problems.append(f"{name} starts before the one-shot {dep} has completed successfully")
            elif condition != {"condition": "service_healthy"}:
                problems.append(f"{name} starts before {dep} is healthy")

    # One policy: the target and the model reach vLLM and the trainer alike.
    (pname, policy), (tname, trainer) = stack.by_type(PolicySettings), stack.by_type(TrainerSettings)
    # vLLM starts after every one-shot step: the weights downloaded, the cards checked (a card too
    # small for vLLM's share otherwise restarts it in a loop).
    for step in sorted(one_shot - set(services[pname].get("depends_on") or {})):
        problems.append(f"{pname} does not wait for the one-shot {step}")
    if policy.target != trainer.target:
        problems.append(f"targets differ: {pname} {policy.target}, {tname} {trainer.target}")
    if expect_target and trainer.target != expect_target:
        problems.append(f"the stack runs the {trainer.target} target, not {expect_target}")
    served, trained = stack.derived[pname]["model"], stack.derived[tname]["model"]
    if not same_model(served, trained):
        problems.append(f"vLLM serves {served} but the learner loads {trained}")
    if expect_target == "gpu" and served != GPU_DEFAULT_MODEL:
        problems.append(f"the gpu stack serves {served}, not {GPU_DEFAULT_MODEL}")
    if policy.served_model_name != trainer.policy_model_name:
        problems.append(f"vLLM serves {policy.served_model_name!r}, the trainer samples {trainer.policy_model_name!r}")
    cfg = resolve_run(trainer)
    if cfg.lora_r > policy.max_lora_rank:
        problems.append(f"runs train LoRA rank {cfg.lora_r} but vLLM accepts at most {policy.max_lora_rank}")
    ename, env = stack.by_type(EnvSettings)
    if (cfg.sampling.viewport.width, cfg.sampling.viewport.height) != (env.viewport_width, env.viewport_height):
        problems.append(f"the prompt describes {cfg.sampling.viewport} but {ename} renders a different viewport")
    if stack.env[pname].get("VLLM_ALLOW_RUNTIME_LORA_UPDATING") != "1":
        problems.append(f"{pname}: runtime LoRA loading is off (VLLM_ALLOW_RUNTIME_LORA_UPDATING)")

    # The adapter folder the trainer writes is one vLLM reads: same volume, same path.
    adapters = Path(trainer.runs_dir) / "<run>" / "adapters"
    written = _volume_of(services[tname], adapters)
    if written is None:
        problems.append(f"{tname} writes adapters to {adapters}, which is on no volume")
    elif _mounts(services[pname]).get(written[1]) != written[0]:
        problems.append(f"{pname} does not mount volume {written[0]} at {written[1]} (where adapters are written)")

    # The open run API never listens beyond loopback.
    if (problem := trainer.exposure_problem()) is not None:
        problems.append(f"{tname}: {problem}")
    return problems


def resolve_run(trainer: TrainerSettings):
    from halo.schemas import RunSpec

    defaults = load_defaults(ROOT / "configs" / "rl_config.yaml")
    return resolve(
        RunSpec(domain="playground"), "contract", ["local.playground-1"], defaults, profile_for(trainer.target)
    )


def exposure_problems(stack: Stack) -> list[str]:
    """Ports on other addresses than loopback, and vLLM's (LoRA admin routes) at all."""
    problems = []
    policy_name, _ = stack.by_type(PolicySettings)
    for name, service in stack.services.items():
        for address, port in _published(service):
            if address not in ("127.0.0.1", "::1"):
                problems.append(f"{name} publishes {port} on {address}")
            if name == policy_name:
                problems.append(f"{name} publishes {port}: vLLM's runtime LoRA routes leave the stack")
    return problems


# --- tests --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpu_stack(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    return Stack(load(tmp_path_factory.mktemp("compose")))


def test_the_gpu_stack_is_wired_service_to_service(gpu_stack: Stack):
    assert wiring_problems(gpu_stack, expect_target="gpu") == []


def test_the_gpu_target_reaches_vllm_and_the_trainer(gpu_stack: Stack):
    _, policy = gpu_stack.by_type(PolicySettings)
    tname, trainer = gpu_stack.by_type(TrainerSettings)
    assert (policy.target, policy.resolved_dtype()) == ("gpu", "bfloat16")
    assert (trainer.target, trainer.resolved_device()) == ("gpu", "cuda")
    assert gpu_stack.derived[tname]["model"] == GPU_DEFAULT_MODEL
    cfg = resolve_run(trainer)
    assert cfg.profile is None and cfg.learning_rate == 1e-6  # the seeds' values, not the tiny profile
    assert cfg.sampling.structured_outputs == "off"
    for name in (gpu_stack.by_type(PolicySettings)[0], tname):
        devices = gpu_stack.services[name]["deploy"]["resources"]["reservations"]["devices"]
        assert devices[0]["capabilities"] == ["gpu"], name


def test_ports_are_published_on_loopback_and_vllm_not_at_all(gpu_stack: Stack, tmp_path: Path):
    assert exposure_problems(gpu_stack) == []
    assert {n for n, s in gpu_stack.services.items() if _published(s)} == {"env", "reward", "trainer"}
    # Opting in to every interface leaves vLLM unpublished; its own opt-in stays on loopback.
    public = Stack(load(tmp_path, variables={"HALO_BIND_ADDRESS": "0.0.0.0"}))
    assert {(n, a) for n, s in public.services.items() for a, _ in _published(s)} == {
        ("env", "0.0.0.0"),
        ("reward", "0.0.0.0"),
        ("trainer", "0.0.0.0"),
    }
    debug = Stack(load(tmp_path, ROOT / "docker-compose.yml", POLICY_PORT_OVERRIDE))
    assert _published(debug.services["policy"]) == [("127.0.0.1", 8000)]


def test_the_stack_does_not_start_without_a_trainer_token(gpu_stack: Stack, tmp_path: Path):
    result = render(tmp_path)
    assert result.returncode != 0
    assert "HALO_TRAINER_API_TOKEN" in result.stderr and "make up" in result.stderr
    _, trainer = gpu_stack.by_type(TrainerSettings)
    assert trainer.host == "0.0.0.0" and trainer.api_token.get_secret_value() == TOKEN


def test_the_trainer_refuses_a_public_address_without_a_token(tmp_path: Path):
    """`python -m halo_trainer` exits with one clear line, before anything starts."""
    open_public = TrainerSettings(_env_file=None, host="0.0.0.0", api_token="")
    assert "HALO_TRAINER_API_TOKEN" in (open_public.exposure_problem() or "")
    for host in ("127.0.0.1", "localhost", "::1"):
        assert TrainerSettings(_env_file=None, host=host, api_token="").exposure_problem() is None
    assert TrainerSettings(_env_file=None, host="0.0.0.0", api_token="t").exposure_problem() is None
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALO_")}
    env |= {"HALO_TRAINER_HOST": "0.0.0.0", "HALO_TRAINER_API_TOKEN": "", "HALO_DATA_DIR": str(tmp_path)}
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "halo_trainer"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2
    assert "refusing to serve the run API on 0.0.0.0" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.skipif(not CPU_OVERRIDE.exists(), reason="docker-compose.cpu.yml is not in this checkout")
def test_the_cpu_override_is_wired_the_same_way_on_host_networking(tmp_path: Path):
    stack = Stack(load(tmp_path, ROOT / "docker-compose.yml", CPU_OVERRIDE))
    assert wiring_problems(stack, expect_target="cpu") == []
    _, trainer = stack.by_type(TrainerSettings)
    assert resolve_run(trainer).profile == "tiny"
    # Host networking: every service binds loopback, so nothing is reachable from outside the machine.
    assert all(stack.host_network(n) for n in stack.services)
    assert all(s.host in ("127.0.0.1", "localhost") for s in stack.settings.values())


def _mutated(stack: Stack, service: str, **environment: str | None) -> Stack:
    config = yaml.safe_load(yaml.safe_dump(stack.config))
    env = config["services"][service].setdefault("environment", {})
    for key, value in environment.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return Stack(config)


@pytest.mark.parametrize(
    ("service", "environment", "expected"),
    [
        # The pre-fix wiring: nothing told the trainer its target or model; HALO_TRAINER_MODEL unread.
        ("trainer", {"HALO_TRAINER_TARGET": None, "HALO_TRAINER_MODEL": None}, "targets differ"),
        ("trainer", {"HALO_TRAINER_POLICY_URL": None}, "not another Compose service"),
        ("trainer", {"HALO_TRAINER_ENV_URL": "http://env:8000"}, "env listens on 8100"),
        ("trainer", {"HALO_TRAINER_API_TOKEN": ""}, "without a token"),
        ("policy", {"HALO_POLICY_MODEL": "/data/models/other"}, "the learner loads"),
        ("policy", {"HALO_POLICY_SERVED_MODEL_NAME": "base"}, "the trainer samples"),
        ("env", {"HALO_ENV_HOST": "127.0.0.1"}, "other containers cannot reach it"),
        ("trainer", {"HALO_DATA_DIR": "/srv"}, "on no volume"),
    ],
)
def test_the_contract_catches_broken_wiring(gpu_stack: Stack, service: str, environment: dict, expected: str):
    problems = wiring_problems(_mutated(gpu_stack, service, **environment), expect_target="gpu")
    assert any(expected in p for p in problems), problems


def test_the_contract_catches_public_ports(gpu_stack: Stack):
    config = yaml.safe_load(yaml.safe_dump(gpu_stack.config))
    config["services"]["policy"]["ports"] = ["8000:8000"]
    problems = exposure_problems(Stack(config))
    assert any("policy publishes 8000 on 0.0.0.0" in p for p in problems)
    assert any("runtime LoRA routes" in p for p in problems)


def test_no_secret_is_written_into_the_file():
    text = (ROOT / "docker-compose.yml").read_text()
    assert "sk-" not in text
    for service in yaml.safe_load(text)["services"].values():
        for key, value in (service.get("environment") or {}).items():
            if any(word in key for word in ("KEY", "TOKEN", "SECRET", "PASSWORD")):
                assert str(value).startswith("${"), key


# --- the model step: the download before vLLM's startup budget ----------------------------------------
def _model_script(service: Mapping[str, Any]) -> str:
    words = _command(service)
    assert words[:2] == ["python3", "-c"], words
    return words[2]


def _run_model_step(service: Mapping[str, Any], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The step's own script, with this environment's Python and huggingface_hub, offline."""
    import sys

    env = {
        "PATH": os.environ.get("PATH", ""),
        **container_environment(service),
        "HF_HOME": str(tmp_path / "hf"),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, "-c", _model_script(service)], env=env, capture_output=True, text=True, timeout=120
    )


def test_vllm_starts_only_after_the_model_step_filled_the_shared_cache(gpu_stack: Stack):
    services = gpu_stack.services
    model = services["model"]
    assert one_shot_services(services) == {"model", "preflight"}
    assert str(model["restart"]) == "no" and "healthcheck" not in model
    assert services["policy"]["depends_on"]["model"] == {"condition": "service_completed_successfully"}
    # Same model name as vLLM and the learner, into the same Hugging Face cache volume and path.
    pname, policy = gpu_stack.by_type(PolicySettings)
    assert container_environment(model)["HALO_POLICY_MODEL"] == policy.model == GPU_DEFAULT_MODEL
    cache = "/root/.cache/huggingface"
    assert _mounts(model)[cache] == _mounts(services[pname])[cache] == _mounts(services["trainer"])[cache]
    assert _mounts(model)[cache] in gpu_stack.config["volumes"]
    assert "deploy" not in model  # no GPU for a download
    assert halo_module(model) is None  # not a second policy server


def test_the_contract_catches_vllm_not_waiting_for_the_model_step(gpu_stack: Stack):
    config = yaml.safe_load(yaml.safe_dump(gpu_stack.config))
    config["services"]["policy"]["depends_on"] = {"model": {"condition": "service_started"}}
    problems = wiring_problems(Stack(config), expect_target="gpu")
    assert any("before the one-shot model has completed successfully" in p for p in problems), problems


def _preflight_args(service: Mapping[str, Any]) -> dict[str, str]:
    words = _command(service)
    assert words[:3] == ["python", "-m", "halo.cli.gpu_preflight"], words
    return dict(zip(words[3::2], words[4::2], strict=True))


def _card(service: Mapping[str, Any]) -> str:
    (device,) = service["deploy"]["resources"]["reservations"]["devices"]
    (card,) = device["device_ids"]
    return card


@pytest.mark.parametrize("two_cards", [False, True])
def test_vllm_starts_only_after_the_gpu_preflight_checked_its_cards(tmp_path: Path, two_cards: bool):
    """The pre-flight reads the cards the policy and the trainer get, vLLM's share as the policy gets it
    and the trainer's settings (its env file, its image with the memory plan), on one card and on two."""
    if two_cards:
        stack = Stack(
            load(tmp_path, ROOT / "docker-compose.yml", TWO_GPU_OVERRIDE, variables={"HALO_TRAINER_GPU": "1"})
        )
    else:
        stack = Stack(load(tmp_path))
    services = stack.services
    preflight, pname, tname = services["preflight"], *(stack.by_type(c)[0] for c in (PolicySettings, TrainerSettings))
    assert services[pname]["depends_on"]["preflight"] == {"condition": "service_completed_successfully"}
    assert "preflight" in one_shot_services(services) and halo_module(preflight) is None
    assert preflight["build"]["dockerfile"] == services[tname]["build"]["dockerfile"] == "Dockerfile.trainer"
    assert preflight.get("env_file") == services[tname].get("env_file")
    args = _preflight_args(preflight)
    assert (args["--policy-gpu"], args["--trainer-gpu"]) == (_card(services[pname]), _card(services[tname]))
    assert (args["--policy-gpu"] != args["--trainer-gpu"]) == two_cards
    (device,) = preflight["deploy"]["resources"]["reservations"]["devices"]
    assert device["count"] in ("all", -1) and "utility" in device["capabilities"]  # nvidia-smi on every card
    env = container_environment(preflight)
    with only_environment(env):
        policy_side, trainer_side = PolicySettings(_env_file=None), TrainerSettings(_env_file=None)
    policy, trainer = stack.settings[pname], stack.settings[tname]
    assert policy_side.gpu_memory_utilization == policy.gpu_memory_utilization == (0.90 if two_cards else 0.45)
    assert trainer_side.target == trainer.target == "gpu"
    assert trainer_side.model == trainer.model == GPU_DEFAULT_MODEL
    cache = "/root/.cache/huggingface"
    assert _mounts(preflight)[cache] == _mounts(services[tname])[cache]  # a cached config of another model
    assert trainer_side.policy_shares_card == trainer.policy_shares_card == (not two_cards)


def test_the_contract_catches_vllm_not_waiting_for_the_preflight(gpu_stack: Stack):
    config = yaml.safe_load(yaml.safe_dump(gpu_stack.config))
    del config["services"]["policy"]["depends_on"]["preflight"]
    problems = wiring_problems(Stack(config), expect_target="gpu")
    assert "policy does not wait for the one-shot preflight" in problems, problems


@pytest.mark.skipif(not CPU_OVERRIDE.exists(), reason="docker-compose.cpu.yml is not in this checkout")
def test_the_preflight_has_nothing_to_check_on_the_cpu_target(tmp_path: Path):
    import sys

    stack = Stack(load(tmp_path, ROOT / "docker-compose.yml", CPU_OVERRIDE))
    preflight = stack.services["preflight"]
    assert preflight["image"] == stack.services["trainer"]["image"]  # one image, built once
    assert stack.services["policy"]["depends_on"]["preflight"] == {"condition": "service_completed_successfully"}
    env = {"PATH": "/usr/bin:/bin", **container_environment(preflight), "HALO_DATA_DIR": str(tmp_path)}
    words = _command(preflight)
    result = subprocess.run(
        [sys.executable, *words[1:]], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0 and "nothing to check" in result.stdout, result.stderr


@pytest.mark.skipif(not CPU_OVERRIDE.exists(), reason="docker-compose.cpu.yml is not in this checkout")
def test_the_model_step_is_a_no_op_on_the_cpu_target(tmp_path: Path):
    stack = Stack(load(tmp_path, ROOT / "docker-compose.yml", CPU_OVERRIDE))
    model = stack.services["model"]
    assert stack.services["policy"]["depends_on"]["model"] == {"condition": "service_completed_successfully"}
    assert container_environment(model)["HALO_POLICY_MODEL"] == ""
    assert model["image"] == stack.services["policy"]["image"]  # one image, built once
    result = _run_model_step(model, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "nothing to download" in result.stdout and not (tmp_path / "hf").exists()


def test_the_model_step_skips_a_local_folder_and_fails_clearly_without_the_model(gpu_stack: Stack, tmp_path: Path):
    folder = tmp_path / "weights"
    folder.mkdir()
    service = {**gpu_stack.services["model"], "environment": {"HALO_POLICY_MODEL": str(folder)}}
    local = _run_model_step(service, tmp_path)
    assert local.returncode == 0 and "nothing to download" in local.stdout, local.stderr
    missing = _run_model_step(gpu_stack.services["model"], tmp_path)  # offline, empty cache
    assert missing.returncode == 1
    assert f"cannot reach {GPU_DEFAULT_MODEL}" in missing.stderr and "not in the cache" in missing.stderr
    assert "Traceback" not in missing.stderr


# --- the Makefile's choice of stack, and launch.sh / teardown.sh -----------------------------------------
def _make(tmp_path: Path, *args: str, env_file: str | None = None) -> subprocess.CompletedProcess[str]:
    """`make -n` (prints, runs nothing) in a clean environment with its own env file."""
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env["ENV_FILE"] = str(tmp_path / "env")
    if env_file is not None:
        (tmp_path / "env").write_text(env_file)
    return subprocess.run(["make", "-s", "-n", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_train_keeps_the_embedded_default_without_a_compose_marker(tmp_path: Path):
    result = _make(tmp_path, "train", "DOMAIN=gomail", env_file="OPENAI_API_KEY=x\n")
    assert result.returncode == 0, result.stderr
    assert "scripts/setup.sh" in result.stdout and ".venv/bin/halo train --domain gomail" in result.stdout
    assert "exec" not in result.stdout


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize("stack", ["compose", "compose-cpu"])
def test_make_train_runs_the_cli_inside_the_trainer_after_make_up(tmp_path: Path, stack: str):
    result = _make(
        tmp_path,
        "train",
        "DOMAIN=omnizon",
        "EPISODES=3",
        "TASK=v2.omnizon-1 v2.omnizon-2",
        env_file=f"HALO_STACK={stack}\n",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "setup.sh" not in out and ".venv" not in out  # nothing on the host
    assert "trainer is not running: run" in out and "make up" in out  # checked first, never a fallback
    line = next(x for x in out.splitlines() if "trainer halo train" in x)
    assert line.endswith(
        "exec $tty trainer halo train --domain omnizon --episodes 3 --task v2.omnizon-1 --task v2.omnizon-2 --no-stack"
    )
    assert ("scripts/compose_cpu.sh" in line) == (stack == "compose-cpu")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_up_records_the_stack_and_a_bad_stack_is_refused(tmp_path: Path):
    up = _make(tmp_path, "up", env_file="")
    assert up.returncode == 0, up.stderr
    assert "HALO_STACK=compose" in up.stdout and "run --rm model" in up.stdout and "up -d" in up.stdout
    for args, env_file in ((["train", "STACK=gpu"], ""), (["train"], "HALO_STACK=nonsense\n")):
        bad = _make(tmp_path, *args, env_file=env_file)
        assert bad.returncode != 0 and "use one of local compose compose-cpu" in bad.stderr
    local_up = _make(tmp_path, "up", "STACK=local", env_file="")
    assert "STACK=local is the embedded stack" in local_up.stdout  # printed by the recipe, which exits 2


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
@pytest.mark.parametrize(
    ("env_file", "args", "expected"),
    [
        ("", [], ".venv/bin/halo stack down"),  # no marker: the embedded default
        ("HALO_STACK=local\n", [], ".venv/bin/halo stack down"),
        ("HALO_STACK=compose\n", [], " down"),
        ("HALO_STACK=compose\n", ["VOLUMES=1"], " down -v"),
        ("HALO_STACK=compose-cpu\n", [], "scripts/compose_cpu.sh down"),
        ("", ["STACK=compose"], " down"),  # the command line overrides .env, as for train
    ],
)
def test_make_down_stops_the_stack_this_checkout_runs(tmp_path: Path, env_file: str, args: list[str], expected: str):
    result = _make(tmp_path, "down", *args, env_file=env_file)
    assert result.returncode == 0, result.stderr
    lines = [x for x in result.stdout.splitlines() if x.strip()]
    embedded = expected.startswith(".venv")
    assert any(expected in x for x in lines), result.stdout
    # Never both: the embedded stack's down does not touch Compose (whose config needs the trainer
    # token .env only has after `make up`), and Compose's down does not touch the local processes.
    assert embedded == ("halo stack down" in result.stdout)
    assert embedded != any(x.rstrip().endswith((" down", " down -v")) and "compose" in x for x in lines)


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_stack_down_stays_the_embedded_stack_down(tmp_path: Path):
    for env_file in ("", "HALO_STACK=compose\n"):
        result = _make(tmp_path, "stack-down", env_file=env_file)
        assert result.returncode == 0, result.stderr
        assert ".venv/bin/halo stack down" in result.stdout and "compose" not in result.stdout


def _fake_tools(tmp_path: Path) -> dict[str, str]:
    """A PATH whose `make` records its arguments (one call per line) and whose `docker` exists."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "make").write_text(f'#!/bin/sh\necho "$*" >> {tmp_path}/make.calls\n')
    (bin_dir / "docker").write_text("#!/bin/sh\nexit 0\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "ENV_FILE": str(tmp_path / "env")}


def _script(tmp_path: Path, name: str, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    result = subprocess.run(
        ["bash", str(ROOT / name), *args], env=_fake_tools(tmp_path), capture_output=True, text=True, timeout=30
    )
    calls = tmp_path / "make.calls"
    return result, calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bogus"], "unknown argument '--bogus'"),
        (["--episodes"], "--episodes needs a value"),
        (["--episodes", "ten"], "--episodes 'ten': a positive integer"),
        (["--episodes", "0"], "a positive integer"),
        (["--task", "--episodes", "3"], "--task needs a value"),
        (["--task", "v2.omnizon-1;rm"], "a task id such as v2.omnizon-1"),
        (["--domain", "Omnizon!"], "a site name"),
        (["--stack", "gpu"], "compose or compose-cpu"),
        (["extra"], "unknown argument 'extra'"),
    ],
)
def test_launch_sh_refuses_bad_flags_with_a_usage_message(tmp_path: Path, args: list[str], message: str):
    result, calls = _script(tmp_path, "launch.sh", *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Usage: ./launch.sh" in result.stderr
    assert calls == []  # nothing started


def test_launch_sh_is_make_up_then_make_train(tmp_path: Path):
    help_ = subprocess.run(["bash", str(ROOT / "launch.sh"), "--help"], capture_output=True, text=True)
    assert help_.returncode == 0 and "--skip-setup" in help_.stdout and "--episodes N" in help_.stdout
    result, calls = _script(tmp_path, "launch.sh", "--task", "v2.omnizon-1", "--episodes", "20")
    assert result.returncode == 0, result.stderr
    assert calls == ["up", "train STACK=compose DOMAIN=omnizon EPISODES=20 TASK=v2.omnizon-1"]


def test_launch_sh_skip_setup_trains_only_and_keeps_the_recorded_stack(tmp_path: Path):
    (tmp_path / "env").write_text("HALO_STACK=compose-cpu\n")
    result, calls = _script(
        tmp_path, "launch.sh", "--skip-setup", "--task", "local.playground-1", "--task", "local.playground-2"
    )
    assert result.returncode == 0, result.stderr
    assert calls == ["train STACK=compose-cpu DOMAIN=playground TASK=local.playground-1 local.playground-2"]


def test_teardown_sh_is_make_down(tmp_path: Path):
    result, calls = _script(tmp_path, "teardown.sh")
    assert result.returncode == 0 and calls == ["down"]
    (tmp_path / "make.calls").unlink()
    result, calls = _script(tmp_path, "teardown.sh", "--volumes", "--stack", "compose-cpu")
    assert result.returncode == 0 and calls == ["down STACK=compose-cpu VOLUMES=1"]
    bad, _ = _script(tmp_path, "teardown.sh", "--force")
    assert bad.returncode == 2 and "unknown argument '--force'" in bad.stderr and "Usage: ./teardown.sh" in bad.stderr


def test_every_trainer_setting_of_the_env_file_reaches_the_trainer(tmp_path: Path):
    """The settings the memory plan's refusal names, set in the stack's env file, reach the trainer's
    container and its settings; the stack's own wiring still wins over the file."""
    text = (
        "HALO_TRAINER_LEARNER__MICRO_BATCH_SIZE=2\nHALO_TRAINER_LEARNER__GRADIENT_CHECKPOINTING=true\n"
        "HALO_TRAINER_DTYPE=float32\nHALO_TRAINER_MEMORY_CHECK=false\nHALO_TRAINER_ENV_URL=http://elsewhere:1\n"
    )
    result = render(tmp_path, variables={"HALO_TRAINER_API_TOKEN": TOKEN}, env_text=text)
    assert result.returncode == 0, result.stderr
    _, trainer = Stack(yaml.safe_load(result.stdout)).by_type(TrainerSettings)
    assert (trainer.learner.micro_batch_size, trainer.learner.gradient_checkpointing) == (2, True)
    assert (trainer.dtype, trainer.memory_check) == ("float32", False)
    assert trainer.env_url == "http://env:8100"


def test_the_trainer_on_the_gpu_target_without_a_card_refuses_in_seconds(tmp_path: Path):
    """`python -m halo_trainer` on the gpu target where torch finds no CUDA device (this machine, or a
    container the NVIDIA runtime gave no card) exits with one line naming both fixes, before it
    waits on any service; before, it started and logged the env's absence once a second."""
    import sys
    import time

    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HALO_")}
    env |= {"HALO_TRAINER_TARGET": "gpu", "HALO_DATA_DIR": str(tmp_path), "HALO_TRAINER_PORT": "1"}
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "halo_trainer"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert "torch finds no CUDA device" in result.stderr and "HALO_TRAINER_TARGET=cpu" in result.stderr
    assert "Traceback" not in result.stderr and time.monotonic() - started < 60
