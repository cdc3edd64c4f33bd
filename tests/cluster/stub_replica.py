"""A policy replica stand-in with the vLLM routes the fan-out uses, as a real HTTP server process:
``/v1/models``, ``/v1/load_lora_adapter``, ``/v1/unload_lora_adapter`` (vLLM's answers: 400 for a
name already loaded or one too many, 404 for an unknown name) and ``/v1/chat/completions`` that
answers after a fixed latency with the name that answered in ``model`` (404 for one not served)
and, as vLLM with ``return_token_ids``, ``n`` choices with their token ids and log-probs and the
prompt's token ids, so the trainer's ``PolicyClient.sample_actions`` reads it as a real answer.

``--answer-as NAME`` makes it answer every request (every K-th with ``--wrong-every K``) from NAME
whatever was asked: the replica that silently serves another version, which the client must catch.
``--fail-loads`` makes every adapter load fail (500) while the rest works: a replica a version
cannot reach. ``--only-under DIR`` is a replica on a machine whose only files are under DIR: a load
whose ``lora_path`` is elsewhere, or holds no ``adapter_config.json``, fails with 400 as vLLM's does.
``/answered`` (not vLLM's) counts the chat requests it answered: which replica a request went to.

``python -m tests.cluster.stub_replica --port P [--latency-ms 30] [--load-ms 200] [--max-loras 4]
[--base tiny-base]``
"""

from __future__ import annotations

import argparse
import asyncio
import os

BASE = "tiny-base"


def build_app(
    latency_ms: float,
    load_ms: float,
    max_loras: int,
    answer_as: str,
    base: str = BASE,
    wrong_every: int = 1,
    fail_loads: bool = False,
    only_under: str = "",
):
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI()
    adapters: dict[str, str] = {}
    answered = [0]

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"error": {"message": message}}, status_code=status)

    @app.get("/health")
    async def health() -> dict:
        return {"pid": os.getpid()}

    @app.get("/v1/models")
    async def models() -> dict:
        return {"data": [{"id": base}] + [{"id": name, "root": path} for name, path in adapters.items()]}

    @app.post("/v1/load_lora_adapter")
    async def load(body: dict):
        name = body["lora_name"]
        if fail_loads:
            return error(500, f"could not load {name}: the stand-in fails every load")
        if name in adapters:
            return error(400, f"The lora adapter '{name}' has already been loaded.")
        if len(adapters) >= max_loras:
            return error(400, f"max_loras={max_loras} adapters already loaded")
        if only_under:
            from pathlib import Path

            path = Path(body["lora_path"]).resolve()
            if not path.is_relative_to(Path(only_under).resolve()) or not (path / "adapter_config.json").is_file():
                return error(400, f"No adapter found for {body['lora_path']}")
        await asyncio.sleep(load_ms / 1000)
        adapters[name] = body["lora_path"]
        return f"Success: LoRA adapter '{name}' added successfully."

    @app.post("/v1/unload_lora_adapter")
    async def unload(body: dict):
        if adapters.pop(body["lora_name"], None) is None:
            return error(404, f"The lora adapter '{body['lora_name']}' cannot be found.")
        return "Success"

    @app.post("/v1/chat/completions")
    async def chat(body: dict):
        model = body["model"]
        if model != base and model not in adapters:
            return error(404, f"The model `{model}` does not exist.")
        await asyncio.sleep(latency_ms / 1000)
        choice = {
            "message": {"role": "assistant", "content": "click(1)"},
            "token_ids": [7, 8],
            "logprobs": {"content": [{"logprob": -0.5}, {"logprob": -0.25}]},
            "finish_reason": "stop",
        }
        choices = [{"index": i, **choice} for i in range(int(body.get("n", 1)))]
        answered[0] += 1
        wrong = answer_as and answered[0] % wrong_every == 0
        return {"model": answer_as if wrong else model, "choices": choices, "prompt_token_ids": [1, 2, 3]}

    @app.get("/answered")
    async def answered_count() -> dict:
        return {"answered": answered[0]}  # how many chat requests this replica answered

    return app


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=30.0)
    parser.add_argument("--load-ms", type=float, default=200.0)
    parser.add_argument("--max-loras", type=int, default=4)
    parser.add_argument("--answer-as", default="")
    parser.add_argument("--base", default=BASE, help="the base model's served name")
    parser.add_argument("--wrong-every", type=int, default=1)
    parser.add_argument("--fail-loads", action="store_true")
    parser.add_argument("--only-under", default="", help="the only folder this replica's machine has")
    args = parser.parse_args()
    app = build_app(
        args.latency_ms,
        args.load_ms,
        args.max_loras,
        args.answer_as,
        args.base,
        args.wrong_every,
        args.fail_loads,
        args.only_under,
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
