"""deploy/slurm/halo.sbatch's job steps: since Slurm 20.11 a step gets its CPUs (and memory) to itself,
so a second `srun` on a node whose running step holds them waits until that step ends. The head's
step never ends (`sleep infinity`), so every later step on the head must say `--overlap`. Checked on
a one-node Slurm 22.05: without it `srun -w <node> hostname` beside a running step timed out at 20 s,
with it it ran at once. Slurm is not started here; the file is parsed."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

SBATCH = Path(__file__).resolve().parents[2] / "deploy/slurm/halo.sbatch"

# One `srun` command: its words up to the end of the command (a newline, `;`, `|` or `&`), where a
# quoted word may span lines and a redirection such as `2>&1` is no command end.
SRUN = re.compile(r"""\bsrun\b(?P<args>(?:'[^']*'|"[^"]*"|\d*>&\d+|\\\n|[^'"\n;&|])*)(?P<end>&&|&|\|\||\||;|\n|$)""")


def steps(text: str) -> list[tuple[str | None, bool, list[str]]]:
    """Each `srun` in order: the node it names with -w (as written), whether it runs in the background,
    and its words."""
    out = []
    for match in SRUN.finditer(text):
        words = shlex.split(match["args"].replace("\\\n", " "))
        node = next((words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-w", "--nodelist")), None)
        node = node or next((w.split("=", 1)[1] for w in words if w.startswith("--nodelist=")), None)
        out.append((node, match["end"] == "&", words))
    return out


def unshared(text: str) -> list[str]:
    """The steps that would wait for a running step on the same node: no --overlap."""
    running: set[str] = set()
    waiting = []
    for node, background, words in steps(text):
        if node in running and "--overlap" not in words:
            waiting.append(" ".join(words))
        if background and node is not None:
            running.add(node)
    return waiting


def test_every_step_beside_a_running_step_on_its_node_overlaps() -> None:
    text = SBATCH.read_text()
    found = steps(text)
    # The parse sees the file's steps: the head's address, the head (backgrounded), its status, the nodes.
    assert [(node, background) for node, background, _ in found] == [
        ("$HEAD", False),
        ("$HEAD", True),
        ("$HEAD", False),
        ("$node", True),
    ]
    assert unshared(text) == []


def test_a_step_without_overlap_beside_a_running_one_is_found() -> None:
    text = """
srun --nodes=1 -w "$HEAD" bash -c '
  sleep infinity
' &
until srun --nodes=1 -w "$HEAD" halo cluster status >/dev/null 2>&1 || false; do sleep 5; done
srun --nodes=1 -w "$OTHER" hostname
"""
    assert unshared(text) == ["--nodes=1 -w $HEAD halo cluster status >/dev/null 2>&1"]
    assert unshared(text.replace("until srun", "until srun --overlap")) == []


def _exported(text: str) -> dict[str, str]:
    """NAME -> value of every `export NAME=value` (several a line) outside the steps' quoted scripts."""
    found = {}
    for line in text.splitlines():
        if line.startswith("export "):
            for word in shlex.split(line)[1:]:
                name, _, value = word.partition("=")
                found[name] = value
    return found


def test_the_job_exports_the_gpu_targets_unless_told_otherwise() -> None:
    """The head's `halo stack up` would otherwise serve and train the tiny model on the CPU target
    without a word, on a GPU cluster."""
    exported = _exported(SBATCH.read_text())
    assert exported["HALO_POLICY_TARGET"] == "${HALO_POLICY_TARGET:-gpu}"
    assert exported["HALO_TRAINER_TARGET"] == "${HALO_TRAINER_TARGET:-gpu}"


def test_the_heads_trainer_plays_no_episode_of_its_own() -> None:
    """The head runs no env: a rollout worker of the trainer's own fails every job it takes (seen on
    the namespace Slurm cluster before this setting: jobs failed on infrastructure, 127.0.0.1:8100)."""
    exported = _exported(SBATCH.read_text())
    assert exported["HALO_TRAINER_ROLLOUT_WORKERS"] == "0"
    assert exported["HALO_TRAINER_CLUSTER_NODES"] == "halo:cluster:"
