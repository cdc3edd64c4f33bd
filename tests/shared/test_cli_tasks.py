"""`halo tasks list` runs the sites service's own entry point (the CLI imports no service package)."""

from __future__ import annotations

import subprocess
import sys

HALO = [sys.executable, "-m", "halo.cli.main"]


def test_lists_a_sites_tasks() -> None:
    out = subprocess.run([*HALO, "tasks", "list", "--domain", "playground"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "local.playground-1" in out.stdout and "Click the Submit button." in out.stdout
    assert "local.gomail-1" not in out.stdout


def test_an_unknown_site_is_a_clear_error() -> None:
    out = subprocess.run([*HALO, "tasks", "list", "--domain", "nosuchsite"], capture_output=True, text=True)
    assert out.returncode == 1
    assert "no local tasks for site 'nosuchsite'" in out.stderr
