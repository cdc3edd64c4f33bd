"""What the run viewer's browser tests share: Chromium's path, the finished run's id and metrics, where
the screenshots for docs/viewer.md go, the 1,280-px window, and opening a view once it is ready.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
RUN = "viewer-run"
# Each view's screenshot, for docs/viewer.md (copied to docs/img by hand when the page changes).
SHOTS = Path(os.environ.get("HALO_VIEWER_SHOTS", tempfile.gettempdir()))
METRICS = [
    {
        "rollout/mean_reward": 0.1,
        "train/loss": 2.0,
        "eval/success_rate": 0.25,
        "eval/ci_low": 0.05,
        "eval/ci_high": 0.6,
    },
    {"rollout/mean_reward": 0.3, "train/loss": 1.5, "eval/success_rate": float("nan")},
    {"rollout/mean_reward": 0.2, "train/loss": 1.0, "eval/success_rate": 0.5, "eval/ci_low": 0.2, "eval/ci_high": 0.8},
]
# The laptop-sized window the pages were once found cut off in.
WINDOW = {"width": 1280, "height": 800}


async def open_view(page, url: str) -> None:
    await page.goto(url)
    await page.wait_for_function("window.haloViewer && window.haloViewer.ready")
