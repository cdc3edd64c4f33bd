// Evaluations (`halo eval`'s folders): the list, one page per evaluation with its matrix (pass@1 per
// mode and site with the 95% Wilson interval, pass^k, the paired tests), each cell linking to its
// episode records, and an episode's filmstrip where its record names screenshots.
// Uses viewer.js's helpers (el, getJSON, show, fmt).
"use strict";

const ALL_SITES = "*";

function pct(v) {
  return v == null ? "–" : `${(100 * v).toFixed(v === 0 || v === 1 ? 0 : 1)}%`;
}

// A rate with its interval as numbers and as a bar: the shaded band is the interval, the tick the rate.
function rateCell(r) {
  if (!r || !r.n) return el("span", { class: "muted" }, "no scored episode");
  const band = el("span", { class: "band", style: `left:${100 * r.ci_low}%;width:${100 * (r.ci_high - r.ci_low)}%` });
  const tick = el("span", { class: "tick", style: `left:calc(${100 * r.rate}% - 1px)` });
  return el(
    "span",
    {},
    el("span", { class: "bar" }, band, tick),
    el("b", {}, pct(r.rate)),
    " ",
    el("span", { class: "ci" }, `[${pct(r.ci_low)}, ${pct(r.ci_high)}] ${r.successes}/${r.n}`),
  );
}

function cellLink(evalId, mode, site, content) {
  return el("a", { href: `#/eval/${encodeURIComponent(evalId)}/episodes/${encodeURIComponent(mode)}/${encodeURIComponent(site)}` }, content);
}

async function evalsPage() {
  document.getElementById("crumbs").textContent = " / evaluations";
  const evals = await getJSON("/ui/api/evals");
  if (!evals.length) return show(el("h2", {}, "Evaluations"), el("p", { class: "muted" }, "No evaluation folder yet (`halo eval` writes <data_dir>/eval/<id>/)."));
  const head = ["evaluation", "modes", "tasks", "episodes", "pass@1 per mode", "state"];
  const rows = evals.map((e) =>
    el(
      "tr",
      { "data-eval": e.eval_id },
      el("td", {}, el("a", { href: `#/eval/${encodeURIComponent(e.eval_id)}` }, e.eval_id)),
      el("td", {}, e.modes.join(", ")),
      el("td", {}, e.tasks),
      el("td", {}, e.episodes),
      el("td", {}, Object.entries(e.pass_at_1).map(([m, r]) => `${m} ${pct(r)}`).join(" · ") || "–"),
      el("td", {}, e.finished ? "results written" : "playing or interrupted"),
    ),
  );
  show(el("h2", {}, "Evaluations"), el("table", { id: "evals" }, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...rows));
}

async function evalPage(evalId) {
  const crumbs = document.getElementById("crumbs");
  crumbs.replaceChildren(" / ", el("a", { href: "#/evals" }, "evaluations"), ` / ${evalId}`);
  const e = await getJSON(`/ui/api/evals/${encodeURIComponent(evalId)}`);
  const notes = (e.plan.notes || []).map((n) => el("li", {}, n));
  const header = [
    el("h2", {}, `Evaluation ${evalId}`),
    el("p", {}, `${e.modes.length} modes · ${e.tasks} tasks · ${e.episodes} episodes recorded` + (e.plan.seeds ? ` · seeds ${e.plan.seeds.join(", ")}` : "")),
    notes.length ? el("ul", { class: "muted" }, ...notes) : "",
  ];
  if (!e.results) {
    const links = e.modes.map((m) => el("li", {}, cellLink(evalId, m, ALL_SITES, `${m}: its episodes so far`)));
    return show(...header, el("div", { class: "notice" }, "No results.json yet: the evaluation is playing or was interrupted (the same command resumes it)."), el("ul", {}, ...links));
  }
  const modes = e.results.modes;
  const sites = [...new Set(Object.values(modes).flatMap((m) => Object.keys(m.sites || {})))].sort();
  const hasPassK = Object.values(modes).some((m) => m.pass_hat_k && m.pass_hat_k.n);
  const head = ["mode", "pass@1 (95% Wilson)", ...(hasPassK ? ["pass^k"] : []), ...sites, "mean return", "median steps", "action validity", "infra failures", "unscored"];
  const rows = Object.entries(modes).map(([mode, m]) =>
    el(
      "tr",
      { "data-mode": mode },
      el("th", {}, mode),
      el("td", { class: "cell", "data-site": ALL_SITES }, cellLink(evalId, mode, ALL_SITES, rateCell(m))),
      ...(hasPassK ? [el("td", { class: "pass-k" }, m.pass_hat_k && m.pass_hat_k.n ? el("span", {}, `k=${m.pass_hat_k.k} `, rateCell(m.pass_hat_k)) : "–")] : []),
      ...sites.map((s) => el("td", { class: "cell", "data-site": s }, m.sites && m.sites[s] ? cellLink(evalId, mode, s, rateCell(m.sites[s])) : "–")),
      el("td", {}, fmt(m.mean_return)),
      el("td", {}, fmt(m.median_steps)),
      el("td", {}, pct(m.action_validity)),
      el("td", {}, fmt(m.infra_failures)),
      el("td", {}, fmt(m.unscored_episodes)),
    ),
  );
  const paired = (e.results.paired || []).map((p) =>
    el(
      "tr",
      { "data-pair": `${p.a}|${p.b}` },
      el("td", {}, p.a),
      el("td", {}, p.b),
      el("td", {}, p.pairs),
      el("td", {}, p.only_a),
      el("td", {}, p.only_b),
      el("td", {}, p.both),
      el("td", {}, p.neither),
      el("td", { class: p.p_value < 0.05 ? "significant" : "" }, p.p_value == null ? "–" : p.p_value.toPrecision(3)),
    ),
  );
  show(
    ...header,
    el("h3", {}, "Success by mode and site"),
    el("p", { class: "muted" }, "Each cell: the rate, its 95% Wilson interval (the shaded band) and successes/scored; click it for its episodes."),
    el("table", { class: "matrix", id: "matrix" }, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...rows),
    el("h3", {}, "Paired tests (exact McNemar on the (task, seed) pairs both modes scored)"),
    paired.length
      ? el("table", { id: "paired" }, el("tr", {}, ...["A", "B", "pairs", "only A", "only B", "both", "neither", "p"].map((h) => el("th", {}, h))), ...paired)
      : el("p", { class: "muted" }, "One mode: nothing to pair."),
  );
}

function outcome(r) {
  if (!r.scored) return "infra (unscored)";
  return r.success ? "success" : "fail";
}

async function evalEpisodesPage(evalId, mode, site) {
  const crumbs = document.getElementById("crumbs");
  const where = site === ALL_SITES ? "every site" : site;
  crumbs.replaceChildren(" / ", el("a", { href: "#/evals" }, "evaluations"), " / ", el("a", { href: `#/eval/${encodeURIComponent(evalId)}` }, evalId), ` / ${mode} on ${where}`);
  const query = new URLSearchParams({ mode, ...(site === ALL_SITES ? {} : { site }) });
  const records = await getJSON(`/ui/api/evals/${encodeURIComponent(evalId)}/episodes?${query}`);
  const head = ["task", "seed", "outcome", "return", "steps", "valid actions", "infra failures", "actions", "filmstrip"];
  const rows = records.map((r) =>
    el(
      "tr",
      { "data-index": r.index },
      el("td", {}, r.task),
      el("td", {}, r.seed),
      el("td", {}, outcome(r)),
      el("td", {}, fmt(r.return)),
      el("td", {}, r.steps),
      el("td", {}, r.valid_actions),
      el("td", {}, r.infra_failures),
      el("td", {}, (r.actions || []).join(" → ")),
      el("td", {}, r.screenshots ? el("a", { href: `#/eval/${encodeURIComponent(evalId)}/episode/${r.index}`, class: "filmstrip-link" }, "filmstrip") : el("span", { class: "muted" }, "no screenshots")),
    ),
  );
  show(
    el("h2", {}, `${mode} on ${where}`),
    records.length
      ? el("table", { id: "eval-episodes" }, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...rows)
      : el("p", { class: "muted" }, "No episode recorded for this cell."),
  );
}

async function evalEpisodePage(evalId, index) {
  const r = await getJSON(`/ui/api/evals/${encodeURIComponent(evalId)}/episodes/${encodeURIComponent(index)}`);
  const crumbs = document.getElementById("crumbs");
  crumbs.replaceChildren(
    " / ",
    el("a", { href: "#/evals" }, "evaluations"),
    " / ",
    el("a", { href: `#/eval/${encodeURIComponent(evalId)}` }, evalId),
    " / ",
    el("a", { href: `#/eval/${encodeURIComponent(evalId)}/episodes/${encodeURIComponent(r.mode)}/${encodeURIComponent(r.site)}` }, `${r.mode} on ${r.site}`),
    ` / episode ${index}`,
  );
  const shots = r.screenshots || [];
  const actions = r.actions || [];
  // screenshots[i] is the page before action i; the one after the last action closes the strip.
  const frames = shots.map((sha, i) =>
    el(
      "div",
      { class: "frame", "data-step": i },
      el("img", { class: "shot", src: `/ui/api/screenshots/${sha}.png`, alt: `step ${i}` }),
      el("div", {}, ...(i < actions.length ? [el("b", {}, `step ${i}: `), actions[i]] : [el("b", {}, "final page")])),
    ),
  );
  show(
    el("h2", {}, `${r.task} seed ${r.seed} (${r.mode})`),
    el("p", {}, `${outcome(r)} · return ${fmt(r.return)} · ${r.steps} steps · ${r.valid_actions} valid actions`),
    frames.length ? el("div", { class: "filmstrip", id: "filmstrip" }, ...frames) : el("p", { class: "muted" }, "This episode's record names no screenshots."),
  );
}
