"""Where the viewer finds runs, and how its routes answer: run folders by id (never a path from a
request), JSON lines read with NaN as null, a 404 naming what is missing. Shared by ``routes`` and
``trees``."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from fastapi.responses import JSONResponse

RUN_ID = re.compile(r"^[A-Za-z0-9_\-.]{1,200}$")


def missing(what: str) -> JSONResponse:
    return JSONResponse({"detail": what}, status_code=404)


def finite(line: dict[str, Any]) -> dict[str, Any]:
    """JSON has no NaN: a value not measured at that update becomes null (a gap in the curve)."""
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in line.items()}


def whole_records(path: Path) -> list[dict[str, Any]]:
    """A JSON-lines file's objects in file order; a line cut short (the file is being appended to, or
    an interruption) or not an object is skipped. An absent file has none."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            out.append(record)
    return out


def json_lines(path: Path) -> list[dict[str, Any]]:
    """A run's curve file (metrics.jsonl, eval.jsonl) as ``whole_records`` with NaN as null: the
    trainer appends to it while the viewer reads, so its last line may be cut."""
    return [finite(record) for record in whole_records(path)]


class RunFolders:
    """Run folders under ``root`` (the trainer's runs_dir), or the one folder ``root`` is."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.single = (self.root / "config.json").exists()

    def folders(self) -> list[Path]:
        if self.single:
            return [self.root]
        if not self.root.is_dir():
            return []
        return sorted((p for p in self.root.iterdir() if (p / "config.json").exists()), reverse=True)

    def folder(self, run_id: str) -> Path | None:
        if not RUN_ID.match(run_id) or run_id in (".", ".."):
            return None
        return next((p for p in self.folders() if p.name == run_id), None)
