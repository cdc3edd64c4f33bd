"""An evaluation's markdown table and PNG chart (success by mode and site, 95% Wilson intervals)."""

from __future__ import annotations

from pathlib import Path


def _pct(row: dict) -> str:
    if not row["n"]:
        return "-"
    return f"{row['rate']:.0%} ({row['ci_low']:.0%}-{row['ci_high']:.0%}), {row['successes']}/{row['n']}"


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _pass_hat_k(row: dict | None) -> str:
    return "-" if not row or not row["n"] else f"k={row['k']}: {_pct(row)}"


def markdown(results: dict) -> str:
    modes = results["modes"]
    sites = sorted({s for m in modes.values() for s in m["sites"]})
    head = [
        "mode",
        "pass@1 (95% CI), k/n",
        "pass^k (95% CI), tasks",
        *sites,
        "mean return",
        "median steps",
        "valid actions",
        "infra failures",
    ]
    lines = [f"| {' | '.join(head)} |", f"|{'---|' * len(head)}"]
    for name, m in modes.items():
        cells = [
            f"`{name}`",
            _pct(m),
            _pass_hat_k(m.get("pass_hat_k")),
            *(_pct(m["sites"][s]) if s in m["sites"] else "-" for s in sites),
            _num(m["mean_return"], ".3f"),
            _num(m["median_steps"], "g"),
            _num(m["action_validity"], ".0%"),
            f"{m['infra_failures']} ({m['unscored_episodes']} unscored)",
        ]
        lines.append(f"| {' | '.join(cells)} |")
    if results["paired"]:
        lines += ["", "| A vs B | pairs | only A | only B | exact McNemar p |", "|---|---|---|---|---|"]
        for t in results["paired"]:
            lines.append(
                f"| `{t['a']}` vs `{t['b']}` | {t['pairs']} | {t['only_a']} | {t['only_b']} | {t['p_value']:.3g} |"
            )
    return "\n".join(lines) + "\n"


def chart(results: dict, out: Path) -> Path:
    """Grouped bars: one group per site plus `all`, one bar per mode, whiskers at the Wilson bounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = results["modes"]
    groups = ["all", *sorted({s for m in modes.values() for s in m["sites"]})]
    width = 0.8 / max(len(modes), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups) * max(1, len(modes)) / 2), 4.0))
    for i, (name, m) in enumerate(modes.items()):
        rows = [m if g == "all" else m["sites"].get(g) for g in groups]
        xs = [j + (i - (len(modes) - 1) / 2) * width for j in range(len(groups))]
        ys = [r["rate"] if r and r["n"] else 0.0 for r in rows]
        err = [
            [y - (r["ci_low"] if r and r["n"] else 0.0) for y, r in zip(ys, rows, strict=True)],
            [(r["ci_high"] if r and r["n"] else 0.0) - y for y, r in zip(ys, rows, strict=True)],
        ]
        ax.bar(xs, ys, width, yerr=err, capsize=3, label=name)
        for x, r in zip(xs, rows, strict=True):  # k/n above each whisker: a 0% bar has no height to see
            top = r["ci_high"] if r and r["n"] else 0.0
            label = f"{r['successes']}/{r['n']}" if r else "-"
            ax.annotate(label, (x, top), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("success rate (95% Wilson interval)")
    ax.set_title(f"evaluation {results['eval_id']}: {results['plan']['episodes_per_mode']} episodes per mode")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
