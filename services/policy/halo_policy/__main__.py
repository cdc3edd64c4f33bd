"""`python -m halo_policy [serve|build-tiny|command]`: start vLLM for the configured target.

``serve`` (the default) builds the tiny model when the CPU target needs it, starts vLLM, waits
until it is healthy and warm, logs the URL it listens on and supervises it; it exits non-zero with
the reason (and vLLM's last output) when the server cannot start. ``build-tiny`` only builds the
tiny model and writes its directory to stdout; ``command`` writes the vLLM command line.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from halo.logging import setup_logging
from halo.settings import log_settings, settings_or_exit
from halo.settings.policy import PolicySettings
from halo_model.tiny import build_tiny_model
from halo_policy.server import build_command, serve, served_model


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m halo_policy", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    sub.add_parser("serve", help="start the vLLM server (default)")
    build = sub.add_parser("build-tiny", help="build (or reuse) the tiny Qwen3-VL and print its directory")
    build.add_argument("--out", type=Path, default=None, help="output directory (default: cached by hash)")
    build.add_argument("--seed", type=int, default=None, help="weights seed (default: HALO_POLICY_TINY_SEED)")
    sub.add_parser("command", help="print the vLLM command line for the configured target")
    args = parser.parse_args(argv)

    settings = settings_or_exit(PolicySettings, "halo_policy")
    logger = setup_logging("policy", settings.log_level)
    if args.cmd == "build-tiny":
        seed = settings.tiny_seed if args.seed is None else args.seed
        sys.stdout.write(f"{build_tiny_model(args.out, seed=seed)}\n")
        return 0
    if args.cmd == "command":
        sys.stdout.write(shlex.join(build_command(settings, served_model(settings, build=False))) + "\n")
        return 0
    log_settings(settings, logger)
    return serve(settings)


if __name__ == "__main__":
    sys.exit(main())
