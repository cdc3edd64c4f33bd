// A run's success per task (GET /ui/api/runs/{id}/tasks): one row per task, held-out success at the
// first and the latest evaluation that played it and the training samples' success over its first
// and last few updates, each with its 95% Wilson interval. A run's overall rate averages its tasks;
// these rows show which of them moved. Uses viewer.js's helpers (el, getJSON) and evals.js's rateCell.
"use strict";

const TASK_WINDOWS = [3, 5, 10, 20];
let taskWindow = 5;

// evals.js's rate cell (bar, rate, interval, k/n) on this route's counts.
function countCell(c) {
  return rateCell(c && { ...c, n: c.trials });
}

function heldOutCell(h) {
  if (!h) return el("span", { class: "muted" }, "not evaluated yet");
  return el("span", {}, countCell(h), el("div", { class: "muted" }, h.update ? `after update ${h.update}` : "before training"));
}

function trainCell(w) {
  if (!w) return el("span", { class: "muted" }, "–");
  const span = w.first_update === w.last_update ? `update ${w.first_update}` : `${w.updates} updates, ${w.first_update}-${w.last_update}`;
  const main = w.samples ? w.samples : w.episodes;
  const extra = w.samples ? ` · episodes ${w.episodes.successes}/${w.episodes.trials}` : "";
  return el("span", {}, countCell(main), el("div", { class: "muted" }, `${span}${extra}`));
}

// First to last, in percentage points: what the rows are sorted by after those that moved.
function changeText(first, last) {
  if (!first || !last || first.rate == null || last.rate == null) return null;
  const pts = Math.round(100 * (last.rate - first.rate));
  return pts ? `${pts > 0 ? "+" : "−"}${Math.abs(pts)} pts` : null;
}

function movedCell(row) {
  const arrow = { up: "↑", down: "↓" };
  const marks = [];
  if (row.held_out_moved) marks.push(`${arrow[row.held_out_moved]} held-out`);
  if (row.train_moved) marks.push(`${arrow[row.train_moved]} training`);
  const trainOf = (w) => w && (w.samples && w.samples.trials ? w.samples : w.episodes);
  const changes = [
    ["held-out", changeText(row.first_eval, row.latest_eval)],
    ["training", changeText(trainOf(row.train_first), trainOf(row.train_last))],
  ].filter(([, c]) => c);
  return el(
    "span",
    {},
    el("b", { class: "marks" }, marks.join(" ")),
    ...changes.map(([what, c]) => el("div", { class: "muted change", "data-change": what }, `${what} ${c}`)),
  );
}

async function tasksSection(runId, onWindow) {
  const t = await getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/tasks?window=${taskWindow}`);
  window.haloViewer.tasks = t;
  const picker = el("select", { id: "task-window", "aria-label": "updates per training window" }, ...TASK_WINDOWS.map((w) => el("option", { value: w }, `${w} updates`)));
  picker.value = String(taskWindow);
  picker.addEventListener("change", () => {
    taskWindow = Number(picker.value);
    onWindow();
  });
  const title = el("h3", {}, "Success per task");
  if (!t.evaluations && !t.train_updates) {
    return el("div", { id: "tasks-box" }, title, el("p", { class: "muted" }, "No per-task counts yet: each evaluation's line in eval.jsonl and each update's line in train_tasks.jsonl carry them (a run recorded before they existed has none)."));
  }
  const mcts = t.algorithm === "mcts";
  const unit = mcts ? "searches" : "sampled actions";
  const head = ["task", "change", "held-out: first", "held-out: latest", `${unit}: first`, `${unit}: last`];
  const rows = t.tasks.map((r) =>
    el(
      "tr",
      {
        "data-task": r.task_id,
        class: ["task-row", r.held_out_moved === "up" || r.train_moved === "up" ? "moved-up" : "", r.held_out_moved === "down" || r.train_moved === "down" ? "moved-down" : ""].join(" ").trim(),
      },
      el("th", {}, r.task_id),
      el("td", { "data-col": "moved" }, movedCell(r)),
      el("td", { "data-col": "first-eval" }, heldOutCell(r.first_eval)),
      el("td", { "data-col": "latest-eval" }, heldOutCell(r.latest_eval)),
      el("td", { "data-col": "train-first" }, trainCell(r.train_first)),
      el("td", { "data-col": "train-last" }, trainCell(r.train_last)),
    ),
  );
  const what = mcts ? "searches that found the task's success" : "sampled actions that completed the task (every candidate of a step group; the judged episodes' k/n below)";
  return el(
    "div",
    { id: "tasks-box" },
    title,
    el(
      "p",
      { class: "muted" },
      `Held-out: greedy episodes on the same held-out seeds, at the first and the latest of ${t.evaluations} evaluations. ` +
        `Training: ${what}, over the task's first and last updates that sampled it (at most `,
      picker,
      `). Each cell: the rate (tick), its 95% Wilson interval (band) and successes/trials. ` +
        "Rows whose first and last intervals do not overlap are marked (green up, red down) and listed first, then by the largest change.",
    ),
    el("table", { id: "tasks", class: "matrix" }, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...rows),
  );
}
