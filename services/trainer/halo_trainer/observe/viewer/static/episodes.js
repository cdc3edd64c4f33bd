// A run's episodes: the table paged and filtered by task, purpose and outcome (a 200-episode run was
// one 8,000-px page), and an episode's page: a filmstrip of its steps, where a step group's N
// candidates sit in a grid of legible screenshots with their action text wrapped (they were ~100-px
// thumbnails whose labels ran into each other). Any screenshot opens full size.
// Uses viewer.js's helpers (el, fmt, show, getJSON, frameUrl, rewardText).
"use strict";

const EPISODES_PER_PAGE = 25;
// Kept across the live page's refreshes, so that a new episode does not reset what the user chose.
const episodeView = { run: null, task: "", purpose: "", success: "", page: 0 };

function outcome(e) {
  return e.success == null ? "not judged" : e.success ? "yes" : "no";
}

function filterSelect(id, label, values, current, onChange) {
  const select = el("select", { id, "aria-label": label }, el("option", { value: "" }, `${label}: all`), ...values.map((v) => el("option", { value: v }, v)));
  select.value = values.includes(current) ? current : "";
  select.addEventListener("change", () => onChange(select.value));
  return select;
}

// The episodes section of a run's page: filters, one page of rows (newest first), a pager.
function episodesSection(runId, episodes, box) {
  if (episodeView.run !== runId) Object.assign(episodeView, { run: runId, task: "", purpose: "", success: "", page: 0 });
  const redraw = () => episodesSection(runId, episodes, box);
  const choose = (key) => (value) => {
    episodeView[key] = value;
    episodeView.page = 0;
    redraw();
  };
  const newest = episodes.slice().reverse();
  const shown = newest.filter(
    (e) => (!episodeView.task || e.task_id === episodeView.task) && (!episodeView.purpose || e.purpose === episodeView.purpose) && (!episodeView.success || outcome(e) === episodeView.success),
  );
  const pages = Math.max(1, Math.ceil(shown.length / EPISODES_PER_PAGE));
  episodeView.page = Math.min(episodeView.page, pages - 1);
  const start = episodeView.page * EPISODES_PER_PAGE;
  const rows = shown.slice(start, start + EPISODES_PER_PAGE);
  const tasks = [...new Set(episodes.map((e) => e.task_id))].sort();
  const purposes = [...new Set(episodes.map((e) => e.purpose))].sort();
  const filters = el(
    "div",
    { class: "toolbar", id: "episode-filters" },
    filterSelect("episodes-task", "task", tasks, episodeView.task, choose("task")),
    filterSelect("episodes-purpose", "purpose", purposes, episodeView.purpose, choose("purpose")),
    filterSelect("episodes-success", "success", ["yes", "no", "not judged"], episodeView.success, choose("success")),
  );
  const step = (delta) => () => {
    episodeView.page += delta;
    redraw();
  };
  const prev = el("button", { type: "button", id: "episodes-prev" }, "← newer");
  const next = el("button", { type: "button", id: "episodes-next" }, "older →");
  prev.disabled = episodeView.page === 0;
  next.disabled = episodeView.page >= pages - 1;
  prev.addEventListener("click", step(-1));
  next.addEventListener("click", step(1));
  const range = shown.length ? `${start + 1}-${start + rows.length} of ${shown.length}` : "none";
  const of = shown.length === episodes.length ? "" : ` (filtered from ${episodes.length})`;
  const pager = el("div", { class: "toolbar pager", id: "episodes-pager" }, prev, el("span", { id: "episodes-range" }, `${range}${of}`), next);
  const head = ["episode", "purpose", "task", "update", "version", "steps", "return", "success"];
  const table = el("table", { id: "episodes", class: "table" }, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...episodeRows(runId, rows));
  box.replaceChildren(el("h3", {}, "Episodes"), filters, table, pager);
}

function episodeRows(runId, episodes) {
  return episodes.map((e) =>
    el(
      "tr",
      { "data-episode": e.episode_id },
      el("td", { class: "id" }, el("a", { href: `#/run/${encodeURIComponent(runId)}/episode/${encodeURIComponent(e.episode_id)}` }, e.episode_id)),
      el("td", {}, e.purpose),
      el("td", {}, e.task_id),
      el("td", {}, e.update),
      el("td", {}, `v${e.policy_version}`),
      el("td", {}, e.steps),
      el("td", {}, fmt(e.episode_return)),
      el("td", {}, e.success == null ? "–" : e.success ? "yes" : "no"),
    ),
  );
}

// -- an episode's page ------------------------------------------------------------------------------
function forkCard(runId, episodeId, s, f, i) {
  return el(
    "div",
    { class: f.kept ? "fork kept" : "fork", "data-fork": i },
    el("img", { src: frameUrl(runId, episodeId, s.step, i), alt: f.action_text, loading: "lazy" }),
    el("div", { class: "action" }, f.action_text),
    el("div", { class: "scores" }, `r ${fmt(f.reward.total)} · A ${fmt(f.advantage)}`, f.kept ? el("b", { class: "kept-mark" }, " · continued") : ""),
    f.parse_error ? el("div", { class: "parse-error" }, `parse error: ${f.parse_error.reason}`) : "",
    // Where the fork led: the only trace of a branch not continued (its session is closed).
    el(
      "div",
      { class: "after" },
      el("span", {}, "next:"),
      f.next_screenshot
        ? el("img", { class: "next", src: `/ui/api/screenshots/${f.next_screenshot}.png`, alt: `after ${f.action_text}`, loading: "lazy" })
        : el("div", { class: "muted" }, f.action ? "not recorded" : "nothing ran"),
    ),
  );
}

function stepFrame(runId, episodeId, s) {
  const keptIndex = Math.max(0, s.candidates.findIndex((c) => c.kept));
  const c = s.candidates[keptIndex];
  const main = el(
    "div",
    { class: "step-main" },
    el("img", { class: "shot", src: frameUrl(runId, episodeId, s.step, keptIndex), alt: `step ${s.step}` }),
    el("div", { class: "action" }, el("b", {}, `step ${s.step}: `), c.action_text),
    c.parse_error ? el("div", { class: "parse-error" }, `parse error: ${c.parse_error.reason} ${c.parse_error.detail || ""}`) : "",
    el("div", {}, rewardText(c.reward)),
    c.milestones.length ? el("div", {}, `milestones: ${c.milestones.join(", ")}`) : "",
    el("div", { class: "muted" }, `policy v${c.policy_version}`),
    el("details", {}, el("summary", {}, "raw answer"), el("pre", {}, c.raw)),
  );
  const forks =
    s.candidates.length > 1
      ? el(
          "div",
          { class: "group" },
          el("div", { class: "muted group-title" }, `${s.candidates.length} candidates at this state (the outlined one was continued)`),
          el("div", { class: "forks", "data-group": s.group_id }, ...s.candidates.map((f, i) => forkCard(runId, episodeId, s, f, i))),
        )
      : "";
  return el("div", { class: "frame", "data-step": s.step }, main, forks);
}

// Click any screenshot of the filmstrip: it opens at full size over the page; a click or Escape closes it.
function enlargeOnClick(strip) {
  strip.addEventListener("click", (event) => {
    const img = event.target.closest("img");
    if (!img) return;
    const close = () => {
      box.remove();
      document.removeEventListener("keydown", onKey);
    };
    const onKey = (e) => e.key === "Escape" && close();
    const box = el("div", { id: "lightbox", role: "dialog", "aria-label": img.alt }, el("img", { src: img.src, alt: img.alt }), el("div", { class: "caption" }, img.alt));
    box.addEventListener("click", close);
    document.addEventListener("keydown", onKey);
    document.body.append(box);
  });
}

async function episodePage(runId, episodeId) {
  const crumbs = document.getElementById("crumbs");
  crumbs.replaceChildren(" / ", el("a", { href: `#/run/${encodeURIComponent(runId)}` }, runId), ` / ${episodeId}`);
  const e = await getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/episodes/${encodeURIComponent(episodeId)}`);
  // A step-group episode's steps are laid out one under the other, each with its grid of candidates;
  // a plain episode stays a filmstrip that scrolls sideways.
  const grouped = e.steps.some((s) => s.candidates.length > 1);
  const strip = el("div", { class: grouped ? "filmstrip grouped" : "filmstrip", id: "filmstrip" }, ...e.steps.map((s) => stepFrame(runId, episodeId, s)));
  enlargeOnClick(strip);
  show(
    el("h2", {}, episodeId),
    el(
      "p",
      {},
      `${e.purpose} episode of ${e.task_id} · update ${e.update} · v${e.policy_version} · return ${fmt(e.episode_return)} · success ${
        e.success == null ? "–" : e.success ? "yes" : "no"
      }`,
      el("span", { class: "muted" }, " · click a screenshot to enlarge it"),
    ),
    strip,
  );
}
