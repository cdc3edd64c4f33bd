# HALO-Agent. `make train DOMAIN=playground` and `make test` work on a fresh machine: both run
# the idempotent setup step first (system packages, the locked Python environment).
#
# Which stack `make train` (and `make eval`) use, STACK:
#   local        the embedded default: scripts/setup.sh, then the CLI in .venv, which starts the local
#                stack if needed. Used whenever nothing below says otherwise.
#   compose      the Compose stack of a GPU box (docker-compose.yml): the CLI runs INSIDE the trainer
#                container (`<compose> exec trainer halo train ... --no-stack`); nothing runs on the host.
#   compose-cpu  the same on a machine without a GPU (docker-compose.yml + docker-compose.cpu.yml,
#                through scripts/compose_cpu.sh; docs/compose.md).
# `make up` records its stack in .env (HALO_STACK=compose), so on a box where it ran, `make train`
# goes to the Compose stack, and fails (asking for `make up`) when that stack is not running; it
# never falls back to the host. STACK=... on the command line (or HALO_STACK in the environment)
# overrides .env; delete the HALO_STACK line to return a machine to the embedded default.
SHELL := /bin/bash
DOMAIN ?= playground
EPISODES ?=
TASK ?=
ARGS ?=
PY := .venv/bin/python
HALO := .venv/bin/halo
PYTEST := .venv/bin/pytest
ENV_FILE ?= .env
STACKS := local compose compose-cpu
STACK ?= $(or $(HALO_STACK),$(shell sed -n 's/^HALO_STACK=//p' $(ENV_FILE) 2>/dev/null | tail -n1 | tr -d "\"' \r"),local)
ifneq ($(words $(STACK)),1)
$(error STACK='$(STACK)': use one of $(STACKS))
endif
ifeq ($(filter $(STACK),$(STACKS)),)
$(error STACK=$(STACK) (from the command line, HALO_STACK or $(ENV_FILE)): use one of $(STACKS))
endif
# `make up` / `model` always mean Compose (and `down` does where STACK is not local): the GPU file unless
# STACK says compose-cpu.
COMPOSE_STACK := $(if $(filter local,$(STACK)),compose,$(STACK))
ifeq ($(COMPOSE_STACK),compose-cpu)
COMPOSE = HALO_ENV_FILE=$(abspath $(ENV_FILE)) bash scripts/compose_cpu.sh
UP_TIMEOUT_S ?= 1800
else
# The v2 plugin on GPU boxes, Debian's docker-compose 1.29 (v1) elsewhere; both take these flags.
COMPOSE = HALO_ENV_FILE=$(abspath $(ENV_FILE)) $(shell docker compose version >/dev/null 2>&1 && echo docker compose || echo docker-compose)$(if $(filter-out .env,$(ENV_FILE)), --env-file $(ENV_FILE))
UP_TIMEOUT_S ?= 1800
endif
TRAIN_FLAGS = --domain $(DOMAIN)$(if $(EPISODES), --episodes $(EPISODES))$(if $(TASK), $(foreach t,$(TASK),--task $(t)))$(if $(ARGS), $(ARGS))

.PHONY: setup up down model images gpu-base gpu-images-test cluster-compose-test plan bench-gpu train eval test test-fast test-release test-cluster test-slurm test-replay bench lint format stack-up stack-down health clean compose-test \
	compose-env compose-running doctor

setup:            ## install system packages and the locked Python environment (idempotent)
	@bash scripts/setup.sh

compose-env:      # .env: a random trainer token (once) and HALO_STACK, the stack `make train` uses from now on
	@command -v docker >/dev/null || { echo "error: docker is not installed (a GPU box needs git, Docker and the NVIDIA runtime)" >&2; exit 1; }
	@$(if $(and $(filter local,$(STACK)),$(filter command line environment,$(origin STACK))),echo "error: STACK=local is the embedded stack (make stack-up); make up/model run Compose" >&2; exit 2)
	@umask 077; touch $(ENV_FILE); \
	if ! grep -qs '^HALO_TRAINER_API_TOKEN=..*' $(ENV_FILE); then \
		printf '\nHALO_TRAINER_API_TOKEN=%s\n' "$$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" >> $(ENV_FILE); \
		echo "wrote a random HALO_TRAINER_API_TOKEN to $(ENV_FILE)"; \
	fi; \
	if ! grep -qx 'HALO_STACK=$(COMPOSE_STACK)' $(ENV_FILE); then \
		grep -v '^HALO_STACK=' $(ENV_FILE) > $(ENV_FILE).tmp || true; \
		echo 'HALO_STACK=$(COMPOSE_STACK)' >> $(ENV_FILE).tmp && mv $(ENV_FILE).tmp $(ENV_FILE); \
		echo "wrote HALO_STACK=$(COMPOSE_STACK) to $(ENV_FILE): make train now runs inside the trainer container"; \
	fi
	@$(if $(filter compose-cpu,$(COMPOSE_STACK)),docker image inspect $${HALO_CPU_BASE_IMAGE:-halo-cpu-base:latest} >/dev/null 2>&1 || { echo "error: no $${HALO_CPU_BASE_IMAGE:-halo-cpu-base:latest} image; make compose-test builds it (docs/compose.md)" >&2; exit 1; })

# The GPU images build FROM halo-gpu-base (Dockerfile.gpu-base: exactly requirements/gpu-lock.txt); the
# CPU target's FROM halo-cpu-base (make compose-test builds it). Docker's layer cache makes a rebuild of
# an unchanged checkout take seconds, so every `make up` builds: a `git pull` never leaves old images running.
GPU_BASE_IMAGE ?= halo-gpu-base:latest
DEBIAN_IMAGE ?= debian:bookworm-slim
gpu-base:         ## the GPU images' base: Debian, Python 3.11, requirements/gpu-lock.txt (torch and vLLM CUDA builds)
	docker build -f Dockerfile.gpu-base -t $(GPU_BASE_IMAGE) --build-arg DEBIAN_IMAGE=$(DEBIAN_IMAGE) .

images: compose-env $(if $(filter compose,$(COMPOSE_STACK)),gpu-base)  ## build the stack's images from this checkout (make up and make model do it first)
	$(COMPOSE) build

cluster-compose-test:  ## the cluster's Compose files started here without a GPU: the head (Redis, Ray head, supervisor) and a rollout node placed (docs/cluster.md; after make gpu-images-test)
	bash scripts/cluster_compose_test.sh

gpu-images-test:  ## the GPU images built here from requirements/gpu-lock.txt and smoke-tested without a GPU (docs/compose.md; Docker engine; 10.4 GB, about 6 min cold)
	bash scripts/gpu_images_test.sh

plan: images      ## the learner's memory plan for this box's card, inside the trainer image (no .venv needed); ARGS="--card a100-40gb" etc.
	$(COMPOSE) run --rm --no-deps trainer halo memory-plan $(ARGS)

bench-gpu: images ## the 8B learner bench on this box's card, inside the trainer image (docs/benchmarks.md); results in the data volume
	$(COMPOSE) run --rm --no-deps trainer python bench/gpu_learner_8b.py --out /data/bench/gpu_learner_8b.json $(ARGS)

model: images     ## download HALO_MODEL into the Compose stack's Hugging Face cache (the one-shot `model` service; make up runs it too)
	$(COMPOSE) run --rm model

# The GPU pre-flight first (seconds): a layout the cards cannot hold is refused before the 17.5 GB
# download and before vLLM starts; `up -d` runs it once more as the policy's one-shot dependency.
# Then `up -d` under compose_wait.py (the host's python3, standard library only: no .venv on a GPU box),
# which reads every container's state while `up` runs: it ends within UP_TIMEOUT_S, and at once when a
# service fails to start UP_MAX_FAILED_STARTS times (a restart loop Compose itself waits on forever),
# exits or turns unhealthy, with that service's last log lines and one line saying why (docs/compose.md).
UP_MAX_FAILED_STARTS ?= 2
up: images        ## the whole Compose stack, waiting (bounded) for every healthcheck (writes a trainer token and HALO_STACK to .env)
	@command -v python3 >/dev/null || { echo "error: make up needs python3 on the host (its wait reads the containers' states; sudo apt-get install -y python3)" >&2; exit 1; }
	$(COMPOSE) run --rm preflight
	$(COMPOSE) run --rm model
	python3 shared/halo/cli/compose_wait.py --timeout $(UP_TIMEOUT_S) --max-failed-starts $(UP_MAX_FAILED_STARTS) -- env $(COMPOSE) up -d
	@echo "make train DOMAIN=... trains in the trainer container"
	@$(if $(filter 0,$(DOCTOR)),echo "DOCTOR=0: the self-check skipped (make doctor runs it)",$(MAKE) --no-print-directory doctor STACK=$(COMPOSE_STACK))

# One command stops whatever this checkout runs: the embedded stack (`halo stack down`, every process
# `halo stack up` started) unless HALO_STACK says Compose, and then the Compose stack. Before, `down`
# always meant Compose, which on the embedded default failed on Compose's own checks (no trainer token).
down:             ## stop this checkout's stack: the embedded one, or Compose where HALO_STACK says so (VOLUMES=1: Compose's volumes too)
ifeq ($(STACK),local)
	@$(if $(VOLUMES),echo "note: VOLUMES=1 is for the Compose stack; the embedded stack keeps its data in var/ (make clean deletes it)";)
	@if [ -x $(HALO) ]; then $(HALO) stack down; else echo "no .venv here: the embedded stack was never started from this checkout"; fi
else
	$(COMPOSE) down$(if $(VOLUMES), -v)
endif

# The first-boot self-check (halo doctor; docs/training.md) where the trainer runs: the embedded stack's on
# this machine, Compose's inside the trainer container. `make up` ends with it unless DOCTOR=0.
doctor: $(if $(filter local,$(STACK)),setup,compose-running)  ## self-check of the running stack: model answers, an adapter loads, log-prob parity, one update vs the memory plan
ifeq ($(STACK),local)
	$(HALO) doctor $(ARGS)
else
	$(COMPOSE) exec -T trainer halo doctor $(ARGS)
endif

compose-running:  # make train/eval on a Compose stack: its trainer must be running (no host fallback)
	@id=$$($(COMPOSE) ps -q trainer 2>/dev/null); \
	if [ -z "$$id" ] || [ "$$(docker inspect -f '{{.State.Running}}' $$id 2>/dev/null)" != true ]; then \
		echo "error: STACK=$(STACK) (HALO_STACK in $(ENV_FILE) or the command line), but the Compose stack's trainer is not running: run \`make up\` first (STACK=local trains on the embedded stack instead)" >&2; \
		exit 1; \
	fi

compose-test: setup  ## the Compose stack built and run here (CPU target): healthy, a short run, down (docs/compose.md)
	bash scripts/compose_test.sh

train: $(if $(filter local,$(STACK)),setup,compose-running)  ## train on DOMAIN (EPISODES, TASK, ARGS optional); e.g. make train DOMAIN=omnizon
ifeq ($(STACK),local)
	$(HALO) train $(TRAIN_FLAGS)
else
	@# Inside the trainer container: its environment has the run API's address and token.
	tty=-T; [ -t 0 ] && [ -t 1 ] && tty=; \
	$(COMPOSE) exec $$tty trainer halo train $(TRAIN_FLAGS) --no-stack
endif

eval: $(if $(filter local,$(STACK)),setup)  ## evaluate MODES (default qwen3vl_base) on DOMAIN, or on SUITE=real-v2-offline (docs/evaluation.md)
ifneq ($(STACK),local)
	@echo "error: make eval runs on the embedded stack, and STACK=$(STACK) here (HALO_STACK in $(ENV_FILE) or the command line); STACK=local evaluates on the embedded stack (docs/evaluation.md)" >&2; exit 2
endif
	$(HALO) stack up && $(HALO) eval --modes $(or $(MODES),qwen3vl_base) $(if $(SUITE),--suite $(SUITE),--domain $(DOMAIN))

test: setup       ## every test tier but the release one: unit, contract, integration (Redis, Chromium, vLLM), end to end
	$(PYTEST) -q -m "not release and not full_replay"

test-replay: setup  ## every task's reference and wrong solution replayed in Chromium (local and REAL v2 offline, seeds 0-2, through the reward services; before each release)
	$(PYTEST) -q -m slow tests/sites/test_replay.py tests/sites/test_real_offline.py tests/sites/test_perturbed_starts.py tests/sites/test_real_answers.py \
		tests/sites/test_agisdk_harness.py \
		tests/reward/test_reference_solutions.py

test-release: setup  ## the release tier: vLLM down for a minute mid-run, workers killed over and over (about 6 min)
	$(PYTEST) -q -m "release and not namespaces"

# Debian's slurm-wlm (slurmctld, slurmd, sbatch) and munge, installed here on first use: the test starts
# its own daemons on their own ports, key and folder, leaving any Slurm of the machine alone.
test-slurm: setup  ## deploy/slurm/halo.sbatch submitted unchanged to a Slurm cluster of 3 network namespaces (root): placed, a short run, scancel (docs/cluster.md)
	@[ "$$(id -u)" = 0 ] || { echo "error: make test-slurm needs root (network namespaces, slurmd)" >&2; exit 2; }
	@command -v slurmctld >/dev/null && command -v munged >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge
	HALO_SLURM_RESULTS=bench/results/cluster_slurm.json $(PYTEST) -q -s -m namespaces tests/cluster/test_slurm_namespaces.py

test-cluster: setup  ## the cluster's release tier as root: 3 network namespaces as nodes, a run with a node killed and one cut off (docs/cluster.md)
	HALO_CLUSTER_RESULTS=bench/results/cluster_namespaces.json $(PYTEST) -q -s -m namespaces tests/cluster/test_namespaces.py tests/cluster/test_namespace_replicas.py tests/cluster/test_namespace_http_store.py tests/cluster/test_learner_across_hosts.py

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

stack-down:       ## the embedded stack's down whatever HALO_STACK says (on the embedded default the same as make down)
	@if [ -x $(HALO) ]; then $(HALO) stack down; else echo "no .venv here: the embedded stack was never started from this checkout"; fi

health:
	$(HALO) health

clean:            ## remove run data of the local stack (var/)
	rm -rf var
