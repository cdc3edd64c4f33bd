"""Verify a deployment (the users' command; same as `halo smoke`): services healthy, one short
episode per reachable backend, the target, a line per missing piece; exit 1 when something needed is missing."""

from __future__ import annotations

import sys

from halo.cli.main import app

if __name__ == "__main__":
    sys.exit(app(["smoke", *sys.argv[1:]]))
