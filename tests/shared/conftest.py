"""Fixtures of the Compose contract's tests (test_compose_*.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.shared.compose_stack import Stack


@pytest.fixture(scope="module")
def gpu_stack(tmp_path_factory: pytest.TempPathFactory) -> Stack:
    # Imported here: the other tests of this folder need neither Compose nor the services' settings.
    from tests.shared.compose_stack import Stack, load

    return Stack(load(tmp_path_factory.mktemp("compose")))
