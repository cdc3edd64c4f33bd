"""Environment service settings (prefix ``HALO_ENV_``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from halo.settings import HaloSettings

DEFAULT_CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-dev-shm-usage",
    # Deterministic pixels: partial raster repaints only damaged tiles, and its anti-aliased edges
    # can differ by one colour level from a full paint, so a fork's screenshot would not equal its
    # parent's. One colour profile everywhere, for the same reason across hosts.
    "--disable-partial-raster",
    "--force-color-profile=srgb",
)


class EnvSettings(HaloSettings):
    model_config = SettingsConfigDict(env_prefix="HALO_ENV_", env_file=".env", extra="ignore", frozen=True)

    host: str = Field("127.0.0.1", description="Bind address")
    port: int = Field(8100, description="HTTP port")
    public_url: str = Field(
        "", description="Base URL clients use to reach this service (screenshot links); empty = http://host:port"
    )
    sites_url: str = Field("http://127.0.0.1:8300", description="Base URL of the local web clones server")

    # Browser and pool.
    chromium_path: str = Field(
        "/usr/bin/chromium", description="Chromium executable; empty = Playwright's own bundled Chromium (Docker)"
    )
    chromium_args: tuple[str, ...] = Field(DEFAULT_CHROMIUM_ARGS, description="Extra Chromium command-line switches")
    headless: bool = Field(True, description="Run Chromium headless")
    viewport_width: int = Field(1280, ge=64, le=4096, description="Viewport width, pixels")
    viewport_height: int = Field(720, ge=64, le=4096, description="Viewport height, pixels")
    max_browsers: int = Field(2, ge=1, le=64, description="Most Chromium processes the pool runs at once")
    max_contexts_per_browser: int = Field(
        16, ge=1, le=256, description="Most browser contexts (one per session) per Chromium process"
    )
    episodes_per_context: int = Field(
        1, ge=1, le=1000, description="Episodes a context serves before it is closed; >1 reuses cleared contexts"
    )
    warm_contexts: int = Field(
        2, ge=0, le=64, description="Fresh contexts kept ready in running browsers (cuts reset and fork latency)"
    )
    parked_contexts: int = Field(
        16,
        ge=0,
        le=256,
        description="Closed clone sessions whose page stays open at the app, for resets and forks by rewind",
    )
    rewinds_per_context: int = Field(
        200, ge=1, description="Sessions a parked page serves by rewind before its context is closed"
    )
    contexts_per_browser_lifetime: int = Field(
        500, ge=1, description="Contexts a Chromium process hands out before it is retired and replaced (leaks)"
    )
    acquire_timeout_s: float = Field(
        10.0, gt=0, description="Seconds a new session waits for a free context before answering 503"
    )
    fork_parallelism: int = Field(4, ge=1, le=32, description="Fork children built at once (each loads the site)")
    launch_timeout_s: float = Field(30.0, gt=0, description="Seconds to launch one Chromium process")

    # Timeouts (every page operation is bounded; a hung page is abandoned and its context replaced).
    step_timeout_s: float = Field(
        15.0, gt=0, description="Seconds one step (action + settle + observation) may take before it is abandoned"
    )
    action_timeout_s: float = Field(5.0, gt=0, description="Seconds one Playwright action (click, type) may take")
    navigation_timeout_s: float = Field(15.0, gt=0, description="Seconds one navigation (reset, restore) may take")
    evaluate_timeout_s: float = Field(5.0, gt=0, description="Seconds one in-page script evaluation may take")
    settle_ms: int = Field(
        100, ge=0, le=10_000, description="Milliseconds to let the page react to an action before observing"
    )
    default_wait_s: float = Field(1.0, ge=0, le=30, description="Seconds the `wait` action waits when 'time' is unset")
    max_infra_errors: int = Field(
        3, ge=1, description="Infrastructure errors (crash, timeout) a session survives before it is truncated"
    )

    # Sessions.
    session_ttl_s: float = Field(600.0, gt=0, description="Seconds a session may sit unused before it is reaped")
    reap_interval_s: float = Field(15.0, gt=0, description="Seconds between idle-session sweeps")
    lease_ttl_s: float = Field(
        10.0,
        ge=1.0,
        le=600.0,
        description="Seconds a session lease lives without a heartbeat; then every session under it is closed",
    )
    axtree_max_chars: int = Field(
        20_000, ge=200, description="Accessibility-tree text cap, characters; longer trees are cut"
    )
    screenshot_animations: Literal["allow", "disabled"] = Field(
        "disabled", description="'disabled' freezes CSS animations for screenshots (deterministic forks)"
    )

    # Task backends.
    real_base_url: str = Field(
        "",
        description="When set, every REAL site is served at <real_base_url>/<site>/ (a local server speaking "
        "/config and /finish); empty = the hosted URL from agisdk's registry",
    )
    real_site_urls: dict[str, str] = Field(
        default_factory=dict, description="Per-site REAL base URL overrides, e.g. {'gomail': 'http://host:9000/'}"
    )
    real_fork_method: Literal["snapshot", "replay"] = Field(
        "replay",
        description="How REAL sessions fork: 'snapshot' copies browser state (when the site keeps its state in "
        "the browser), 'replay' resets and replays the action prefix (always correct, slower)",
    )
    real_run_id: str = Field("0", description="run_id sent to REAL's /config when a session names none")
    openai_api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable whose presence enables REAL's llm_boolean evals"
    )
    extra_allowed_origins: tuple[str, ...] = Field(
        (), description="Origins (scheme://host:port) every session may reach besides its task's site"
    )
