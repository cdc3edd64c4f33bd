"""One declaration per run setting (``halo.schemas.knobs``): every other place a knob appears derives from it.

Fails when a knob gets a second default or a second name: a model field spelled like a knob with
its own default, a field under a retired spelling, a yaml that drifted from the table, a profile
that declares instead of overriding, a command line that lacks a knob or names it otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest
import typer
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticUndefined

import halo.schemas
import halo.settings
from halo.cli.knob_options import add_knob_arguments
from halo.cli.main import app
from halo.schemas import RunSpec, SamplingParams, knob_notes, knobs, rl_config_file
from halo.schemas.search_settings import MCTSConfig
from halo.settings.trainer import RUN_OWNED_LEARNER_FIELDS, LearnerConfig, TrainerSettings
from halo_trainer.config import TOP_LEVEL, RunConfig, load_defaults, resolve

ROOT = Path(__file__).resolve().parents[2]
# Spellings a knob had before it had one name; none may come back as a field or a key.
RETIRED = {"clip_eps", "searches_per_iteration", "max_completion_tokens", "lr", "num_simulations", "ucb_constant"}


def test_the_run_defaults_file_is_the_rendered_table() -> None:
    text = (ROOT / rl_config_file.YAML_PATH).read_text()
    assert text == rl_config_file.render_yaml(), (
        f"{rl_config_file.YAML_PATH} differs from the knobs declared in shared/halo/schemas/knobs.py: edit the "
        "declaration, then `python -m halo.schemas.rl_config_file --write`"
    )


def test_the_docs_table_is_the_rendered_table() -> None:
    assert rl_config_file.render_markdown() in (ROOT / "docs" / "knobs.md").read_text(), (
        "docs/knobs.md's table differs from the knobs: `python -m halo.schemas.rl_config_file --markdown`"
    )


def test_knob_names_are_unique_and_every_default_is_a_value_of_its_type() -> None:
    names = [k.name for k in knobs.KNOBS]
    assert len(names) == len(set(names))
    assert not set(names) & RETIRED
    for k in knobs.KNOBS:
        assert k.section in knobs.SECTIONS, k.name
        TypeAdapter(k.type).validate_python(k.default)  # a default outside the knob's own bounds fails here
        assert len(k.help) > 20, f"{k.name}: a knob says what it decides"


def test_profiles_override_knobs_and_declare_none() -> None:
    for profile, overrides in knobs.PROFILES.items():
        for name, override in overrides.items():
            assert name in knobs.BY_NAME, f"profile {profile} declares {name!r}, which is no knob"
            k = knobs.BY_NAME[name]
            TypeAdapter(k.type).validate_python(override.value)
            assert override.value != k.default, f"profile {profile} sets {name} to its default: no override"
            assert override.why, f"profile {profile}: say why {name} differs"


def _fields(model: type[BaseModel]) -> dict:
    return model.model_fields


def test_each_model_has_the_knobs_of_its_part_with_their_defaults_and_help() -> None:
    def check(model: type[BaseModel], expected: list[knobs.Knob], default: str) -> None:
        fields = _fields(model)
        for k in expected:
            field = fields[k.name]
            assert field.description == k.help, f"{model.__name__}.{k.name}"
            if default == "default":
                assert field.default == k.default, f"{model.__name__}.{k.name}"
            elif default == "optional":
                assert field.default is None, f"{model.__name__}.{k.name}"
            else:  # resolved: required, or what a run saved before the knob ran with
                want = PydanticUndefined if k.before is knobs.UNSET else k.before
                assert field.default == want, f"{model.__name__}.{k.name}"

    check(MCTSConfig, knobs.in_section("mcts"), "default")
    check(SamplingParams, knobs.in_section("sampling"), "resolved")
    check(RunSpec, [k for k in knobs.KNOBS if k.request], "optional")
    check(RunConfig, TOP_LEVEL, "resolved")
    check(LearnerConfig, [k for k in knobs.KNOBS if k.learner], "default")
    assert {k.name for k in knobs.KNOBS if k.learner} == RUN_OWNED_LEARNER_FIELDS
    assert set(_fields(MCTSConfig)) == {k.name for k in knobs.in_section("mcts")}
    assert set(_fields(SamplingParams)) - {"schema_version"} == {k.name for k in knobs.in_section("sampling")}
    not_knobs = {"schema_version", "domain", "tasks", "algorithm", "name"}
    assert set(_fields(RunSpec)) - not_knobs == {k.name for k in knobs.KNOBS if k.request}
    assert set(_fields(RunConfig)) - {"run_id", "domain", "tasks", "algorithm", "profile", "sampling", "mcts"} == {
        k.name for k in TOP_LEVEL
    }


def _models() -> list[type[BaseModel]]:
    """Every pydantic model of the schema and settings packages and of the trainer's run config."""
    modules = ["halo_trainer.config"]
    for package in (halo.schemas, halo.settings):
        modules += [package.__name__] + [f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(package.__path__)]
    found = set()
    for name in modules:
        for _, obj in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            if issubclass(obj, BaseModel) and obj is not BaseModel:
                found.add(obj)
    return sorted(found, key=lambda m: m.__name__)


@pytest.mark.parametrize("model", _models(), ids=lambda m: m.__name__)
def test_no_model_has_a_field_under_a_retired_spelling(model: type[BaseModel]) -> None:
    assert not set(_fields(model)) & RETIRED


def test_the_trainer_settings_declare_no_run_knob() -> None:
    """A service setting spelled like a run knob would be a second default for it (the learner's
    run-owned fields are the knobs' own, and refused in the environment)."""
    assert not set(_fields(TrainerSettings)) & set(knobs.BY_NAME)
    with pytest.raises(ValueError, match="belong to each run's config"):
        TrainerSettings(_env_file=None, learner={"kl_coef": 0.5})


def test_the_yaml_keys_are_knob_names_and_resolve_to_the_declared_defaults() -> None:
    defaults = load_defaults(rl_config_file.YAML_PATH)
    keys = {key for section, entries in defaults.items() if section != "profiles" for key in entries}
    assert keys == set(knobs.BY_NAME)
    cfg = resolve(RunSpec(domain="playground"), "r", ["t"], defaults, None)
    for k in TOP_LEVEL:
        value = getattr(cfg, k.name)
        assert value == k.default or (k.name == "report_to" and value == ()), k.name


def test_a_defaults_file_or_profile_with_a_key_that_is_no_knob_is_refused() -> None:
    defaults = load_defaults(rl_config_file.YAML_PATH)
    with pytest.raises(ValueError, match="clip_eps is not a knob"):
        resolve(RunSpec(domain="playground"), "r", ["t"], {**defaults, "grpo": {"clip_eps": 0.2}}, None)
    with pytest.raises(ValueError, match="declares none"):
        resolve(RunSpec(domain="playground"), "r", ["t"], {**defaults, "profiles": {"x": {"lr": 1.0}}}, "x")


def test_halo_train_has_an_option_per_request_knob_under_its_name() -> None:
    command = typer.main.get_command(app).commands["train"]
    options = {opt for param in command.params for opt in param.opts}
    for k in knobs.KNOBS:
        assert (k.flag in options) == k.request, k.name
    assert "--lr" in options  # the seeds' spelling of learning_rate
    assert "--searches-per-iteration" not in options


@pytest.mark.parametrize("sections", [knobs.GRPO_SECTIONS, knobs.SECTIONS], ids=["grpo", "mcts"])
def test_the_seed_scripts_take_every_request_knob_of_their_sections(sections) -> None:
    parser = argparse.ArgumentParser()
    names = add_knob_arguments(parser, sections)
    assert names == [k.name for k in knobs.KNOBS if k.request and k.section in sections]
    args = parser.parse_args(["--lr", "0.001", "--num_generations", "4"])
    assert (args.learning_rate, args.num_generations) == (0.001, 4)


def test_a_sampling_message_from_before_describe_tools_reads_as_described() -> None:
    """A job or transition queued before the knob existed was sampled with the tool description:
    it parses after an upgrade and says so; a message without an older field is still refused."""
    from halo.schemas.env import Viewport

    old = {"max_tokens": 32, "structured_outputs": "regex", "history_limit": 8, "viewport": Viewport().model_dump()}
    assert SamplingParams.model_validate(old).describe_tools is True
    with pytest.raises(ValidationError, match="history_limit"):
        SamplingParams.model_validate({k: v for k, v in old.items() if k != "history_limit"})


def test_a_knob_is_declared_by_keyword_with_a_one_line_help_and_its_notes_are_in_the_docs() -> None:
    with pytest.raises(TypeError):
        knobs.Knob("x", "run", int, 1, "a help that is long enough")  # type: ignore[misc]
    docs = (ROOT / "docs" / "knobs.md").read_text()
    for k in knobs.KNOBS:
        assert "\n" not in k.help and len(k.help) <= 120, f"{k.name}: one line; the rest goes to knob_notes.NOTES"
        if k.docs:
            assert f"\n### {k.name}\n" in docs, f"{k.name}: docs/knobs.md has no anchor #{k.name}"
    assert set(knob_notes.NOTES) <= set(knobs.BY_NAME), "a note for what is no knob"
    assert knobs.knob("seed_contrast").docs == "docs/knobs.md#seed_contrast" and knobs.knob("seed").docs is None
    for line in rl_config_file.render_yaml().splitlines():
        assert len(line) <= 200, line  # one-line comments, no paragraph in the yaml


def test_every_section_holds_knobs_and_the_moved_ones_name_the_section_they_left() -> None:
    assert {k.section for k in knobs.KNOBS} == set(knobs.SECTIONS)
    moved = {k.name for k in knobs.KNOBS if k.old_section}
    assert {"episodes", "seed", "learning_rate", "eval_every", "max_steps", "max_grad_norm"} <= moved
    assert all(knobs.knob(n).old_section == "grpo" and knobs.knob(n).section in ("run", "learner") for n in moved)


def test_halo_train_help_shows_each_knobs_unit_default_and_docs_link() -> None:
    """Typer renders help as rich markup: an unescaped "[updates]" would be taken for a tag and vanish."""
    from typer.testing import CliRunner

    out = CliRunner().invoke(app, ["train", "--help-all"], env={"COLUMNS": "250", "TERMINAL_WIDTH": "250"}).output
    assert "[updates]" in out and "(default [none]" in out
    assert "docs/knobs.md#warmup_steps" in out
