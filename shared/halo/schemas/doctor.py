"""``halo doctor``'s report: the first-boot self-check of a stack, one line per check, written to
``<data_dir>/doctor.json`` (``halo_trainer.checks.doctor``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from halo.schemas.base import Message


class DoctorCheck(Message):
    """One check: what was measured against what it must be, and on failure what to do."""

    name: str
    ok: bool
    figure: float | None = Field(None, description="The measured value; None when the check could not measure")
    unit: str = ""
    # How ``figure`` compares with ``threshold`` for the check to pass ("<=": at most; ">=": at least).
    bound: Literal["<=", ">="] | None = None
    threshold: float | None = None
    detail: str = Field("", description="What was measured, in a few words")
    fix: str | None = Field(None, description="On failure: the one thing to do")


class DoctorReport(Message):
    target: Literal["cpu", "gpu"]
    model: str = Field(description="The model the learner loads (the one vLLM must serve)")
    policy_url: str
    device: str = Field(description="The learner's torch device")
    started_at: float = Field(description="Unix time")
    seconds: float
    checks: list[DoctorCheck] = Field(default_factory=list)
    ok: bool = Field(False, description="Every check passed (derived from the checks; a given value is replaced)")

    @model_validator(mode="after")
    def _ok_from_checks(self) -> DoctorReport:
        self.ok = bool(self.checks) and all(c.ok for c in self.checks)
        return self
