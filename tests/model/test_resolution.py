"""Which model a target serves and trains: one function, called by the launcher and the trainer."""

from __future__ import annotations

from pathlib import Path

from halo.settings.policy import GPU_DEFAULT_MODEL
from halo_model.resolution import resolve_model
from halo_model.tiny import default_model_dir


def test_an_explicit_model_wins_on_both_targets() -> None:
    assert resolve_model("/models/mine", "cpu") == "/models/mine"
    assert resolve_model("Org/Other-VL", "gpu") == "Org/Other-VL"


def test_the_gpu_default_is_the_8b_and_nothing_is_built() -> None:
    assert resolve_model(None, "gpu", build=True) == GPU_DEFAULT_MODEL


def test_the_cpu_default_is_the_tiny_model_of_the_given_seed(tiny_model_dir: Path) -> None:
    assert resolve_model(None, "cpu", build=False) == str(default_model_dir(seed=0))
    assert resolve_model(None, "cpu", tiny_seed=3, build=False) == str(default_model_dir(seed=3))
    assert resolve_model(None, "cpu", tiny_seed=3, build=False) != resolve_model(None, "cpu", build=False)
    assert resolve_model(None, "cpu") == str(tiny_model_dir)  # found, not rebuilt
