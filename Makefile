# HALO-Agent. `make train DOMAIN=playground` and `make test` work on a fresh machine: both run
# the idempotent setup step first (system packages, the locked Python environment).
SHELL := /bin/bash
DOMAIN ?= playground
EPISODES ?=
PY := .venv/bin/python
HALO := .venv/bin/halo
PYTEST := .venv/bin/pytest

.PHONY: setup up down train eval test test-fast bench lint format stack-up stack-down health clean compose-test

setup:            ## install system packages and the locked Python environment (idempotent)
	@bash scripts/setup.sh

up:               ## GPU box: the whole Compose stack, waiting for every healthcheck (writes a trainer token to .env once)
	@# The trainer listens on every interface of its container, so it needs a token; the CLI reads it from .env too.
	@if ! grep -qs '^HALO_TRAINER_API_TOKEN=..*' .env; then \
		umask 077; printf '\nHALO_TRAINER_API_TOKEN=%s\n' "$$(python3 -c 'import secrets; print(secrets.token_hex(24))')" >> .env; \
		echo "wrote a random HALO_TRAINER_API_TOKEN to .env"; \
	fi
	docker compose up -d --wait

down:             ## GPU box: stop the Compose stack
	docker compose down

compose-test: setup  ## the Compose stack built and run here (CPU target): healthy, a short run, down (docs/compose.md)
	bash scripts/compose_test.sh

train: setup      ## train on DOMAIN (local stack started if needed); e.g. make train DOMAIN=omnizon
	$(HALO) train --domain $(DOMAIN) $(if $(EPISODES),--episodes $(EPISODES),)

eval: setup       ## evaluate MODES (default qwen3vl_base) on DOMAIN (docs/evaluation.md)
	$(HALO) stack up && $(HALO) eval --modes $(or $(MODES),qwen3vl_base) --domain $(DOMAIN)

test: setup       ## every test tier: unit, contract, integration (Redis, Chromium, vLLM), end to end
	$(PYTEST) -q

test-fast: setup  ## the fast tier only (no Chromium, vLLM or training)
	$(PYTEST) -q -m "not slow"

bench: setup      ## benchmarks; results in bench/results/*.json, summary in docs/benchmarks.md
	bash bench/run_all.sh

lint: setup
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

format: setup
	.venv/bin/ruff check --fix . && .venv/bin/ruff format .

stack-up: setup   ## the embedded local stack
	$(HALO) stack up

stack-down:
	$(HALO) stack down

health:
	$(HALO) health

clean:            ## remove run data of the local stack (var/)
	rm -rf var
