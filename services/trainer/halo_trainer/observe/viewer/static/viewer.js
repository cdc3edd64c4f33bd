// The run viewer: runs, live curves, episodes as filmstrips and step groups, an MCTS run's search
// trees (trees.js), run controls (controls.js), runs compared (compare.js), evaluations (evals.js),
// a run's success per task (tasks.js).
// No build step:
// plain browser JavaScript and the vendored uPlot (static/vendor/uplot, its version and licence beside it).
"use strict";

const CHARTS = [
  ["Mean reward", ["rollout/mean_reward"]],
  ["Success (training, held-out with its 95% Wilson band)", ["rollout/success_rate", "eval/success_rate", "eval/ci_low", "eval/ci_high"]],
  ["Groups with zero reward spread", ["rollout/frac_reward_zero_std"]],
  ["Action validity", ["rollout/action_validity"]],
  ["Episode length", ["rollout/episode_length"]],
  ["KL to the base", ["train/kl"]],
  ["Entropy", ["train/entropy"]],
  ["Grad norm", ["train/grad_norm"]],
  ["Loss", ["train/loss"]],
  ["Throughput (episodes/s)", ["rollout/episodes_per_s"]],
  ["Staleness (versions)", ["rollout/staleness"]],
];
const COLOURS = ["#1f77b4", "#d62728", "#999", "#999"];

// What tests and users can inspect: the charts drawn, by metric name.
window.haloViewer = { charts: {}, ready: false };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : String(c ?? ""));
  return node;
}

async function getJSON(url) {
  const response = await fetch(url);
  const body = await response.json().catch(() => ({ detail: `${url} answered ${response.status}` }));
  if (!response.ok) throw new Error(body.detail || `${url} answered ${response.status}`);
  return body;
}

function show(...nodes) {
  const view = document.getElementById("view");
  view.replaceChildren(...nodes);
  window.haloViewer.ready = true;
}

function showError(message) {
  show(el("div", { class: "error", role: "alert" }, message), el("p", {}, el("a", { href: "#/" }, "All runs")));
}

function fmt(v) {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : Math.abs(v) < 1e-9 ? "0" : v.toPrecision(3);
  return v == null ? "–" : String(v);
}

async function runsPage() {
  document.getElementById("crumbs").textContent = "";
  const [runs, info] = await Promise.all([getJSON("/ui/api/runs"), viewerInfo()]);
  // Starting a run needs the run API, served only beside the trainer's viewer.
  const controls = info.live ? [info.token_required ? tokenBar() : "", startForm()] : [];
  if (!runs.length) return show(...controls, el("p", { class: "muted" }, "No runs yet."));
  const rows = runs.map((r) =>
    el(
      "tr",
      { "data-run": r.run_id },
      el("td", {}, el("input", { type: "checkbox", class: "pick", value: r.run_id, "aria-label": `pick ${r.run_id}` })),
      el("td", {}, el("a", { href: `#/run/${encodeURIComponent(r.run_id)}` }, r.run_id)),
      el("td", {}, r.state),
      el("td", {}, r.algorithm),
      el("td", {}, r.domain),
      el("td", {}, `${r.episodes_done} / ${r.episodes_total}`),
      el("td", {}, `v${r.policy_version}`),
      el("td", {}, fmt(r.latest_metrics["rollout/mean_reward"])),
      el("td", {}, fmt(r.latest_metrics["eval/success_rate"])),
    ),
  );
  const head = ["", "run", "state", "algorithm", "domain", "episodes", "version", "mean reward", "held-out success"];
  show(...controls, el("h3", {}, "Runs"), el("table", { id: "runs" }, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...rows), el("p", {}, compareButton()));
}

// A run's curve points: metrics.jsonl's lines, and the evaluation before the first update (update
// 0), which is in eval.jsonl only: its point starts the held-out curve.
function runLines(m) {
  const updates = new Set(m.metrics.map((l) => l.update));
  const lines = m.eval.filter((e) => !updates.has(e.update)).concat(m.metrics);
  lines.sort((a, b) => a.update - b.update);
  return lines;
}

function chartData(lines, names, xAxis) {
  const points = lines.filter((l) => names.some((n) => typeof l[n] === "number"));
  const x = points.map((l) => (xAxis === "time" ? l.time : l.update));
  return [x, ...names.map((n) => points.map((l) => (typeof l[n] === "number" ? l[n] : null)))];
}

function drawCharts(container, lines, xAxis) {
  container.replaceChildren();
  window.haloViewer.charts = {};
  for (const [title, names] of CHARTS) {
    const present = names.filter((n) => lines.some((l) => typeof l[n] === "number"));
    if (!present.length) continue;
    const box = el("div", { class: "chart", "data-chart": present[0] }, el("h3", {}, title));
    container.append(box);
    const opts = {
      width: 420,
      height: 200,
      scales: { x: { time: xAxis === "time" } },
      series: [
        { label: xAxis === "time" ? "time" : "update" },
        ...present.map((n, i) => ({
          label: n,
          stroke: COLOURS[i % COLOURS.length],
          dash: n.startsWith("eval/ci_") ? [4, 4] : undefined,
          spanGaps: true,
          points: { show: true },
        })),
      ],
    };
    const chart = new uPlot(opts, chartData(lines, present, xAxis), box);
    for (const n of present) window.haloViewer.charts[n] = { chart, series: present.indexOf(n) + 1 };
  }
}

function episodeRows(runId, episodes) {
  return episodes.map((e) =>
    el(
      "tr",
      { "data-episode": e.episode_id },
      el("td", {}, el("a", { href: `#/run/${encodeURIComponent(runId)}/episode/${encodeURIComponent(e.episode_id)}` }, e.episode_id)),
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

let events = null;

async function runPage(runId) {
  document.getElementById("crumbs").textContent = ` / ${runId}`;
  const [run, info] = await Promise.all([getJSON(`/ui/api/runs/${encodeURIComponent(runId)}`), getJSON("/ui/api/info")]);
  let xAxis = "update";
  const charts = el("div", { class: "charts", id: "charts" });
  const episodesTable = el("table", { id: "episodes" });
  const treesBox = el("div", {});
  const tasksBox = el("div", {});
  const state = el("span", { id: "state" }, run.state);
  const controlsBox = el("div", {});
  let controlsFor = null;
  const toggle = el("button", { id: "x-axis" }, "x: by wall-clock");
  const refresh = async () => {
    const [m, episodes, now, tasks] = await Promise.all([
      getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/metrics`),
      getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/episodes`),
      getJSON(`/ui/api/runs/${encodeURIComponent(runId)}`),
      tasksSection(runId, () => refresh().catch(() => {})),
    ]);
    tasksBox.replaceChildren(tasks);
    state.textContent = now.state;
    // The controls follow the state (no Stop once the run is over) and the adapters saved so far.
    const key = `${now.state}/${now.policy_version}`;
    if (key !== controlsFor) {
      controlsFor = key;
      controlsBox.replaceChildren(await runControls(runId, now, () => refresh().catch(() => {})));
    }
    drawCharts(charts, runLines(m), xAxis);
    const head = ["episode", "purpose", "task", "update", "version", "steps", "return", "success"];
    episodesTable.replaceChildren(el("tr", {}, ...head.map((h) => el("th", {}, h))), ...episodeRows(runId, episodes.slice(-200).reverse()));
    if (run.algorithm === "mcts") treesBox.replaceChildren(await treesSection(runId));
    return m;
  };
  toggle.addEventListener("click", async () => {
    xAxis = xAxis === "update" ? "time" : "update";
    toggle.textContent = xAxis === "update" ? "x: by wall-clock" : "x: by update";
    await refresh();
  });
  show(
    el("h2", {}, runId),
    el("p", {}, "state: ", state, ` · ${run.algorithm} on ${run.domain} · policy v${run.policy_version}`),
    run.error ? el("div", { class: "error" }, run.error) : "",
    controlsBox,
    toggle,
    charts,
    tasksBox,
    treesBox,
    el("h3", {}, "Episodes"),
    episodesTable,
  );
  window.haloViewer.ready = false;
  await refresh();
  window.haloViewer.ready = true;
  if (info.live && !["finished", "stopped", "failed"].includes(run.state)) {
    // Live: the run API's server-sent events say when the run's status (and so its metrics) moved.
    events = new EventSource(`/runs/${encodeURIComponent(runId)}/events`);
    events.addEventListener("status", () => refresh().catch(() => {}));
    events.addEventListener("done", () => {
      events.close();
      refresh().catch(() => {});
    });
  }
}

function frameUrl(runId, episodeId, step, candidate) {
  return `/ui/api/runs/${encodeURIComponent(runId)}/episodes/${encodeURIComponent(episodeId)}/frames/${step}/${candidate}.png`;
}

function rewardText(reward) {
  const parts = ["progress", "validity", "novelty", "loop_penalty", "step_cost", "success_bonus"]
    .filter((k) => reward[k])
    .map((k) => `${k} ${fmt(reward[k])}`);
  return `reward ${fmt(reward.total)}${parts.length ? ` (${parts.join(", ")})` : ""}`;
}

async function episodePage(runId, episodeId) {
  const crumbs = document.getElementById("crumbs");
  crumbs.replaceChildren(" / ", el("a", { href: `#/run/${encodeURIComponent(runId)}` }, runId), ` / ${episodeId}`);
  const e = await getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/episodes/${encodeURIComponent(episodeId)}`);
  const frames = e.steps.map((s) => {
    const keptIndex = Math.max(0, s.candidates.findIndex((c) => c.kept));
    const c = s.candidates[keptIndex];
    const forks =
      s.candidates.length > 1
        ? el(
            "div",
            { class: "forks", "data-group": s.group_id },
            ...s.candidates.map((f, i) =>
              el(
                "div",
                { class: f.kept ? "fork kept" : "fork", "data-fork": i },
                el("img", { src: frameUrl(runId, episodeId, s.step, i), alt: f.action_text, loading: "lazy" }),
                el("div", {}, f.action_text),
                el("div", {}, `r ${fmt(f.reward.total)} · A ${fmt(f.advantage)}`),
                // Where the fork led: the only trace of a branch not continued (its session is closed).
                el(
                  "div",
                  { class: "after" },
                  el("span", {}, "next:"),
                  f.next_screenshot
                    ? el("img", { class: "next", src: `/ui/api/screenshots/${f.next_screenshot}.png`, alt: `after ${f.action_text}`, loading: "lazy" })
                    : el("div", { class: "muted" }, f.action ? "not recorded" : "nothing ran"),
                ),
              ),
            ),
          )
        : "";
    return el(
      "div",
      { class: "frame", "data-step": s.step },
      el("img", { class: "shot", src: frameUrl(runId, episodeId, s.step, keptIndex), alt: `step ${s.step}` }),
      el("div", {}, el("b", {}, `step ${s.step}: `), c.action_text),
      c.parse_error ? el("div", { class: "parse-error" }, `parse error: ${c.parse_error.reason} ${c.parse_error.detail || ""}`) : "",
      el("div", {}, rewardText(c.reward)),
      c.milestones.length ? el("div", {}, `milestones: ${c.milestones.join(", ")}`) : "",
      el("div", { class: "muted" }, `policy v${c.policy_version}`),
      el("details", {}, el("summary", {}, "raw answer"), el("pre", {}, c.raw)),
      forks,
    );
  });
  show(
    el("h2", {}, episodeId),
    el(
      "p",
      {},
      `${e.purpose} episode of ${e.task_id} · update ${e.update} · v${e.policy_version} · return ${fmt(e.episode_return)} · success ${
        e.success == null ? "–" : e.success ? "yes" : "no"
      }`,
    ),
    el("div", { class: "filmstrip", id: "filmstrip" }, ...frames),
  );
}

async function route() {
  if (events) {
    events.close();
    events = null;
  }
  window.haloViewer.ready = false;
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "compare") await comparePage((parts[1] || "").split(",").filter(Boolean));
    else if (parts[0] === "evals") await evalsPage();
    else if (parts[0] === "eval" && parts[2] === "episodes" && parts[4]) await evalEpisodesPage(parts[1], parts[3], parts[4]);
    else if (parts[0] === "eval" && parts[2] === "episode" && parts[3]) await evalEpisodePage(parts[1], parts[3]);
    else if (parts[0] === "eval" && parts[1]) await evalPage(parts[1]);
    else if (parts[0] === "run" && parts[2] === "episode" && parts[3]) await episodePage(parts[1], parts[3]);
    else if (parts[0] === "run" && parts[2] === "tree" && parts[3]) await treePage(parts[1], parts[3]);
    else if (parts[0] === "run" && parts[1]) await runPage(parts[1]);
    else await runsPage();
  } catch (error) {
    showError(error.message);
  }
}

window.addEventListener("hashchange", route);
route();
