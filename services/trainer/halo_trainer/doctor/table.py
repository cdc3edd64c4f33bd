"""The report as a short table: one line per check (ok/FAIL, figure, threshold, what was measured),
and under a failed one the line that says what to do."""

from __future__ import annotations

from halo.schemas.doctor import DoctorCheck, DoctorReport


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    return f"{value:.3g} {unit}".strip()


def line(check: DoctorCheck) -> str:
    threshold = f"{check.bound} {_value(check.threshold, check.unit)}" if check.bound else "-"
    mark = "ok" if check.ok else "FAIL"
    return f"{check.name:<17} {mark:<5} {_value(check.figure, check.unit):<20} {threshold:<22} {check.detail}"


def table(report: DoctorReport) -> str:
    head = (
        f"halo doctor: {report.target} target, model {report.model}, policy {report.policy_url}, "
        f"learner on {report.device} ({report.seconds:.0f} s)"
    )
    lines = [head, f"{'check':<17} {'result':<5} {'figure':<20} {'threshold':<22} measured"]
    for check in report.checks:
        lines.append(line(check))
        if not check.ok and check.fix:
            lines.append(f"{'':<17} -> {check.fix}")
    lines.append("all checks passed" if report.ok else f"{sum(not c.ok for c in report.checks)} check(s) failed")
    return "\n".join(lines)
