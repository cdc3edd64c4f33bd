// Compare runs: one chart per metric with every picked run's curve, the x axis the update, the env
// steps so far or the wall time since the run began; held-out success with each run's 95% Wilson
// band (dashed, the run's colour). Uses viewer.js's helpers (el, getJSON, show, fmt, runLines, CHARTS).
"use strict";

const RUN_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];
const X_AXES = {
  update: "update",
  steps: "env steps",
  time: "wall time (s since the run began)",
};

// Env steps an update took: an MCTS update's searches count theirs (mcts/env_steps); a GRPO update
// one per transition (each candidate of a step group runs in its own fork).
function stepsOf(line) {
  if (typeof line["mcts/env_steps"] === "number") return line["mcts/env_steps"];
  if (typeof line["rollout/transitions"] === "number") return line["rollout/transitions"];
  return 0;
}

function withX(lines, xAxis, startedAt) {
  let steps = 0;
  const t0 = startedAt ?? (lines.length ? Math.min(...lines.map((l) => l.time ?? Infinity)) : 0);
  return lines.map((l) => {
    steps += stepsOf(l);
    const x = xAxis === "steps" ? steps : xAxis === "time" ? (l.time ?? t0) - t0 : l.update;
    return { ...l, x };
  });
}

// uPlot draws series over one x array: the union of every run's x, a gap (null) where a run has no
// point there (spanGaps joins its line across it).
function joined(perRun) {
  const xs = [...new Set(perRun.flatMap((points) => points.map(([x]) => x)))].sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const ys = perRun.map((points) => {
    const y = new Array(xs.length).fill(null);
    for (const [x, v] of points) y[at.get(x)] = v;
    return y;
  });
  return [xs, ...ys];
}

function compareCharts(runs, xAxis) {
  const box = el("div", { class: "charts", id: "compare-charts" });
  window.haloViewer.compare = {};
  const colour = (i) => RUN_COLOURS[i % RUN_COLOURS.length];
  const charts = [];
  for (const [title, names] of CHARTS) {
    if (names.includes("eval/success_rate")) {
      charts.push(["Training success", ["rollout/success_rate"]]);
      charts.push(["Held-out success (95% Wilson band dashed)", ["eval/success_rate", "eval/ci_low", "eval/ci_high"]]);
    } else charts.push([title, names]);
  }
  for (const [title, names] of charts) {
    const series = [];
    const data = [];
    runs.forEach((run, i) => {
      for (const name of names) {
        const points = run.lines.filter((l) => typeof l[name] === "number").map((l) => [l.x, l[name]]);
        if (!points.length) continue;
        const band = name.startsWith("eval/ci_");
        series.push({ label: band ? `${run.id} ${name.slice(5)}` : run.id, stroke: colour(i), width: band ? 1 : 2, dash: band ? [4, 4] : undefined, spanGaps: true, points: { show: !band }, run: run.id, metric: name });
        data.push(points);
      }
    });
    if (!series.length) continue;
    const chartBox = el("div", { class: "chart", "data-chart": names[0] }, el("h3", {}, title));
    box.append(chartBox);
    const opts = { width: 560, height: 240, scales: { x: { time: false } }, series: [{ label: X_AXES[xAxis] }, ...series.map(({ run, metric, ...s }) => s)] };
    // Drawn once the box is in the page (comparePage's draw).
    window.haloViewer.compare[names[0]] = { box: chartBox, opts, data: joined(data), series: series.map((s, i) => ({ run: s.run, metric: s.metric, index: i + 1 })) };
  }
  return box;
}

async function comparePage(ids) {
  const crumbs = document.getElementById("crumbs");
  crumbs.textContent = ` / compare ${ids.length} runs`;
  if (ids.length < 1) return show(el("p", { class: "muted" }, "Pick runs to compare on the runs page."));
  const fetched = await Promise.all(
    ids.map(async (id) => {
      const [run, m] = await Promise.all([getJSON(`/ui/api/runs/${encodeURIComponent(id)}`), getJSON(`/ui/api/runs/${encodeURIComponent(id)}/metrics`)]);
      return { id, run, lines: runLines(m) };
    }),
  );
  let xAxis = "update";
  const picker = el("select", { id: "compare-x" }, ...Object.entries(X_AXES).map(([k, label]) => el("option", { value: k }, `x: ${label}`)));
  const holder = el("div", {});
  const legend = el(
    "p",
    { id: "compare-runs" },
    ...fetched.flatMap((r, i) => [
      el("span", { style: `color:${RUN_COLOURS[i % RUN_COLOURS.length]}` }, "■ "),
      el("a", { href: `#/run/${encodeURIComponent(r.id)}`, "data-run": r.id }, r.id),
      ` (${r.run.algorithm} on ${r.run.domain}, ${r.run.state})  `,
    ]),
  );
  const draw = () => {
    const runs = fetched.map((r) => ({ id: r.id, lines: withX(r.lines, xAxis, r.run.created_at) }));
    const box = compareCharts(runs, xAxis);
    holder.replaceChildren(box);
    for (const c of Object.values(window.haloViewer.compare)) c.chart = new uPlot(c.opts, c.data, c.box);
  };
  picker.addEventListener("change", () => {
    xAxis = picker.value;
    draw();
  });
  show(el("h2", {}, "Compare runs"), legend, picker, holder);
  draw();
}

// The runs page's picker: a checkbox per run row and a button that opens the compare view.
function compareButton() {
  const button = el("button", { id: "compare", type: "button" }, "Compare selected runs");
  button.addEventListener("click", () => {
    const picked = [...document.querySelectorAll("input.pick:checked")].map((c) => c.value);
    if (picked.length) location.hash = `#/compare/${picked.map(encodeURIComponent).join(",")}`;
  });
  return button;
}
