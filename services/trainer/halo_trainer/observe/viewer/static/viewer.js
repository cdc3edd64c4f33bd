// The run viewer: runs, a run's page, routing. Its parts: the curves (charts.js), episodes and their
// filmstrips and step groups (episodes.js), an MCTS run's search trees (trees.js), run controls
// (controls.js), runs compared (compare.js), evaluations (evals.js), a run's success per task (tasks.js).
// No build step:
// plain browser JavaScript and the vendored uPlot (static/vendor/uplot, its version and licence beside it).
"use strict";

// What tests and users can inspect: the charts drawn, by metric name (charts.js).
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

function stateBadge(state) {
  return el("span", { class: `badge state-${state}` }, state);
}

async function runsPage() {
  document.getElementById("crumbs").textContent = "";
  const [runs, info] = await Promise.all([getJSON("/ui/api/runs"), viewerInfo()]);
  // Starting a run needs the run API, served only beside the trainer's viewer.
  const controls = info.live ? [tokenSlot(), startForm()] : [];
  if (!runs.length) return show(...controls, el("p", { class: "muted" }, "No runs yet."));
  const rows = runs.map((r) =>
    el(
      "tr",
      { "data-run": r.run_id },
      el("td", {}, el("input", { type: "checkbox", class: "pick", value: r.run_id, "aria-label": `pick ${r.run_id}` })),
      el("td", { class: "id" }, el("a", { href: `#/run/${encodeURIComponent(r.run_id)}` }, r.run_id)),
      el("td", {}, stateBadge(r.state), r.phase && r.state === "running" ? el("div", { class: "muted phase" }, phaseText(r.phase)) : ""),
      el("td", {}, r.algorithm),
      el("td", {}, r.domain),
      el("td", { class: "num" }, `${r.episodes_done} / ${r.episodes_total}`),
      el("td", { class: "num" }, `v${r.policy_version}`),
      el("td", { class: "num" }, fmt(r.latest_metrics["rollout/mean_reward"])),
      el("td", { class: "num" }, fmt(r.latest_metrics["eval/success_rate"])),
    ),
  );
  const head = ["", "run", "state", "algorithm", "domain", "episodes", "version", "mean reward", "held-out success"];
  show(
    ...controls,
    el("h2", {}, "Runs"),
    el("table", { id: "runs", class: "table" }, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...rows),
    el("div", { class: "toolbar" }, compareButton(), el("span", { class: "muted" }, "tick two or more runs to compare their curves")),
  );
}

// What a running run is doing now (RunStatus.phase): "evaluating v10: 7/32 episodes".
function phaseText(phase) {
  if (!phase) return "";
  const count = phase.total ? `: ${phase.done}/${phase.total} ${phase.unit || ""}`.trimEnd() : "";
  return `${phase.label}${count}${phase.note ? ` (${phase.note})` : ""}`;
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

// The toggle says which axis shows, and what a click shows instead.
function xAxisLabel(xAxis) {
  return xAxis === "update" ? "x axis: update (show wall-clock)" : "x axis: wall-clock (show update)";
}

let events = null;

async function runPage(runId) {
  document.getElementById("crumbs").textContent = ` / ${runId}`;
  const [run, info] = await Promise.all([getJSON(`/ui/api/runs/${encodeURIComponent(runId)}`), getJSON("/ui/api/info")]);
  let xAxis = "update";
  const charts = el("div", { id: "charts" });
  const episodesBox = el("div", { id: "episodes-box" });
  const treesBox = el("div", {});
  const tasksBox = el("div", {});
  const state = el("span", { id: "state" }, run.state);
  const phase = el("span", { id: "phase", class: "muted" }, run.state === "running" ? phaseText(run.phase) : "");
  const progress = el("span", { id: "progress" });
  const controlsBox = el("div", {});
  let controlsFor = null;
  let lines = [];
  const toggle = el("button", { id: "x-axis", type: "button" }, xAxisLabel(xAxis));
  const redrawCharts = () => drawCharts(charts, lines, xAxis);
  const refresh = async () => {
    const [m, episodes, now, tasks] = await Promise.all([
      getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/metrics`),
      getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/episodes`),
      getJSON(`/ui/api/runs/${encodeURIComponent(runId)}`),
      tasksSection(runId, () => refresh().catch(() => {})),
    ]);
    tasksBox.replaceChildren(tasks);
    state.textContent = now.state;
    state.className = `badge state-${now.state}`;
    phase.textContent = now.state === "running" ? phaseText(now.phase) : "";
    progress.textContent = ` · ${now.episodes_done}/${now.episodes_total} episodes · ${now.updates} updates · policy v${now.policy_version}`;
    // The controls follow the state (no Stop once the run is over) and the adapters saved so far.
    const key = `${now.state}/${now.policy_version}`;
    if (key !== controlsFor) {
      controlsFor = key;
      controlsBox.replaceChildren(await runControls(runId, now, () => refresh().catch(() => {})));
    }
    lines = runLines(m);
    redrawCharts();
    episodesSection(runId, episodes, episodesBox);
    if (run.algorithm === "mcts") treesBox.replaceChildren(await treesSection(runId));
    return m;
  };
  toggle.addEventListener("click", async () => {
    xAxis = xAxis === "update" ? "time" : "update";
    toggle.textContent = xAxisLabel(xAxis);
    redrawCharts();
  });
  show(
    el("h2", {}, runId),
    el("p", { class: "run-line" }, "state: ", state, ` · ${run.algorithm} on ${run.domain}`, progress, " ", phase),
    run.error ? el("div", { class: "error" }, run.error) : "",
    controlsBox,
    el("div", { class: "toolbar" }, toggle, smoothingPicker(redrawCharts), el("span", { class: "muted" }, "hover a chart for its values; flat charts are folded under their group")),
    charts,
    tasksBox,
    treesBox,
    episodesBox,
  );
  window.haloViewer.ready = false;
  await refresh();
  window.haloViewer.ready = true;
  if (info.live && !["finished", "stopped", "failed"].includes(run.state)) {
    // Live: the run API's server-sent events say when the run's status moved. A `phase` event (the
    // phase alone) only rewrites the phase line; the page is fetched again when an update, the
    // episode count or the state changed (a run reports its phase far more often than it updates).
    let seen = null;
    events = new EventSource(`/runs/${encodeURIComponent(runId)}/events`);
    events.addEventListener("phase", (message) => {
      try {
        const data = JSON.parse(message.data).data;
        phase.textContent = data && data.label ? phaseText(data) : "";
      } catch (error) {
        phase.textContent = "";
      }
    });
    events.addEventListener("status", (message) => {
      let status = null;
      try {
        status = JSON.parse(message.data).data;
      } catch (error) {
        status = null;
      }
      if (status) phase.textContent = status.state === "running" ? phaseText(status.phase) : "";
      const key = status ? `${status.state}/${status.updates}/${status.episodes_done}/${status.policy_version}` : null;
      if (key !== null && key === seen) return;
      seen = key;
      refresh().catch(() => {});
    });
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
