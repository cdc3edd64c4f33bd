"""The Compose contract's machinery: every service's settings, resolved from exactly what Compose gives its container.

`docker-compose config` (Debian's Compose 1.29, or the v2 plugin) renders docker-compose.yml with
the values a fresh `.env` written by `make up` gives (a token, nothing else); the repository's own
`.env` and this process's environment are kept out. Each container's environment is its image's
`ENV` lines (from its Dockerfile, build arguments applied) overlaid by the file's `environment:`.
Each service's own settings class is then built from that environment alone (`_env_file=None`), and
the wiring is checked on the resolved values, not on the text of the file. `wiring_problems`
returns every problem found, so one failure names all of them.

The tests are test_compose_wiring.py (the stack's wiring and exposure), test_compose_one_shot_steps.py
(the model download and the GPU pre-flight) and test_compose_make_and_launch.py (the Makefile's
choice of stack, launch.sh, teardown.sh).
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
