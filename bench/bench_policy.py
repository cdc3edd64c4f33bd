"""Policy server: sampling latency for n = 1, 4, 8 and LoRA adapter load time, on the embedded default
(vLLM's CPU build serving the tiny Qwen3-VL, float32, regex-constrained answers).

Starts `python -m halo_policy` on a free port (or uses one already running: `--port`), exactly as the
local stack does, and a 1280x720 Chromium screenshot of a mail-like page as the observation. Each
request gets a different screenshot (a request counter drawn on it), as consecutive RL steps do, so
the vision tower runs every time and only the system prompt is a prefix-cache hit.

- sampling: `PolicyClient.sample_actions` (one request, n candidates, temperature 1, seeded,
  logprobs and token ids returned), after 3 warm-up requests; median / p90 / mean over `--reps`.
- adapter load: `publish_adapter` of a new rank-8 adapter version (`/v1/load_lora_adapter`; vLLM
  registers it and reads the weights lazily), and the first n=8 request on the new version (which
  pays the actual load into the engine) against the steady-state n=8 latency. The previous version
  is unloaded once the next one serves, as the trainer does.

    .venv/bin/python bench/bench_policy.py [--reps 20] [--versions 5] [--port PORT]

Writes bench/results/policy.json and prints a summary. The machine's cores are shared with
whatever else runs: compare on an idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.measure import free_port  # noqa: E402
from halo.policy_client import PolicyClient  # noqa: E402
from halo.settings.policy import PolicySettings  # noqa: E402

PAGE = """<!doctype html><html><body style="font-family:sans-serif;margin:0;background:#f6f8fc">
<div style="height:64px;background:#fff;border-bottom:1px solid #ddd;padding:20px"><b>GoMail</b></div>
<div style="position:absolute;top:80px;left:16px"><button style="padding:16px 24px">Compose</button></div>
<div style="margin-left:260px;padding:16px">
<p style="background:#fff;padding:12px">Alice - Quarterly report</p><p style="background:#fff;padding:12px">Bob - Lunch?</p>
</div></body></html>"""


async def _screenshot() -> bytes:
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=os.environ.get("HALO_CHROMIUM", "/usr/bin/chromium"),
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
        )
        page = await browser.new_page(viewport={"width": 1280, "height": 720})
        await page.set_content(PAGE)
        png = await page.screenshot(type="png")
        await browser.close()
        return png


def _variant(png: bytes, k: int) -> bytes:
    """The same page with a counter drawn on it: a new image per request, like a new RL step."""
    from PIL import Image, ImageDraw

    im = Image.open(io.BytesIO(png)).convert("RGB")
    ImageDraw.Draw(im).text((1100, 690), f"step {k}", fill=(20, 20, 20))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def _stats(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "median_s": round(statistics.median(xs), 4),
        "p90_s": round(xs[min(len(xs) - 1, int(0.9 * len(xs)))], 4),
        "mean_s": round(statistics.fmean(xs), 4),
        "min_s": round(xs[0], 4),
        "n_requests": len(xs),
    }


@contextlib.contextmanager
def _server(port: int | None, model_dir: Path):
    if port is not None:
        yield PolicySettings(port=port, max_lora_rank=8)
        return
    port = free_port()
    env = dict(os.environ, HALO_POLICY_PORT=str(port), HALO_POLICY_MODEL=str(model_dir), HALO_POLICY_MAX_LORA_RANK="8")
    log_path = Path(tempfile.mkstemp(prefix="bench-policy-", suffix=".log")[1])
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "halo_policy"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 900
        while b"policy server listening on" not in log_path.read_bytes():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"policy server did not start; see {log_path}")
            time.sleep(0.5)
        yield PolicySettings(port=port, model=str(model_dir), max_lora_rank=8)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


async def _bench(settings: PolicySettings, model_dir: Path, reps: int, versions: int) -> dict[str, Any]:
    from halo_model.lora import random_adapter

    base_png = await _screenshot()
    counter = iter(range(10**9))
    out: dict[str, Any] = {"sampling": {}, "adapters": {}}
    async with PolicyClient.from_settings(settings) as client:
        await client.wait_ready()
        for _ in range(3):
            await client.sample_actions(_variant(base_png, next(counter)), "warm up", n=8, seed=0)
        for n in (1, 4, 8):
            times, tokens, valid = [], [], 0
            for _ in range(reps):
                k = next(counter)
                started = time.perf_counter()
                result = await client.sample_actions(_variant(base_png, k), "Send an email to Alice", n=n, seed=k)
                times.append(time.perf_counter() - started)
                tokens += [len(c.token_ids) for c in result.candidates]
                valid += sum(c.action is not None for c in result.candidates)
            out["sampling"][f"n{n}"] = {
                **_stats(times),
                "completion_tokens_mean": round(statistics.fmean(tokens), 1),
                "valid_action_rate": round(valid / (n * reps), 3),
                "prompt_tokens": len(result.prompt_token_ids),
            }

        with tempfile.TemporaryDirectory() as tmp:
            dirs = [random_adapter(model_dir, Path(tmp) / f"v{k}", seed=k) for k in range(1, versions + 1)]
            run = f"bench{os.getpid()}"
            load, first, steady = [], [], []
            for k, path in enumerate(dirs, start=1):
                load.append(await client.publish_adapter(f"{run}-v{k}", str(path)))
                started = time.perf_counter()
                await client.sample_actions(_variant(base_png, next(counter)), "Send an email", n=8, seed=k)
                first.append(time.perf_counter() - started)
                for _ in range(3):
                    started = time.perf_counter()
                    await client.sample_actions(_variant(base_png, next(counter)), "Send an email", n=8, seed=k)
                    steady.append(time.perf_counter() - started)
                if k > 1:
                    await client.unload_adapter(f"{run}-v{k - 1}")
            await client.unload_adapter(client.current_model)
            client.use_base_model()
        out["adapters"] = {
            "load_route": _stats(load),
            "first_n8_request_after_load": _stats(first),
            "steady_n8_request_with_adapter": _stats(steady),
            "rank": 8,
            "versions": versions,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--versions", type=int, default=5)
    parser.add_argument("--port", type=int, default=None, help="use a policy server already running here")
    args = parser.parse_args()

    from halo_model.tiny import build_tiny_model

    model_dir = build_tiny_model()
    with _server(args.port, model_dir) as settings:
        results = asyncio.run(_bench(settings, model_dir, args.reps, args.versions))
    results["setup"] = {
        "target": "cpu",
        "model": "tiny Qwen3-VL (halo_model.tiny, seed 0)",
        "dtype": settings.resolved_dtype(),
        "structured_outputs": settings.resolved_structured_outputs(),
        "screenshot": "1280x720 PNG, resized by the processor to 448x224 (98 vision tokens)",
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    path = ROOT / "bench" / "results" / "policy.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")

    print(f"policy bench ({results['setup']['cpus']} cpus, load avg {results['setup']['load_average_at_end']}):")
    for n, s in results["sampling"].items():
        print(
            f"  sample {n:>3}: median {s['median_s']:.3f}s  p90 {s['p90_s']:.3f}s  "
            f"({s['completion_tokens_mean']} tokens/candidate, valid {s['valid_action_rate']:.0%})"
        )
    a = results["adapters"]
    print(
        f"  adapter load route: median {a['load_route']['median_s'] * 1000:.1f} ms; first n=8 request after "
        f"load {a['first_n8_request_after_load']['median_s']:.3f}s vs steady {a['steady_n8_request_with_adapter']['median_s']:.3f}s"
    )
    print(f"  wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
