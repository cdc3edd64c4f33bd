// Compare runs: one chart per metric with every picked run's curve, the x axis the update, the env
// steps so far or the wall time since the run began; held-out success with each run's 95% Wilson
// band (dashed, the run's colour); charts that never moved in any run folded, as on a run's page.
// Uses viewer.js's helpers (el, getJSON, show, fmt, runLines) and charts.js's (CHARTS, legendBox,
// yRange, flatValue, chartWidthFor).
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

const COMPARE_MIN_WIDTH = 480;

// A chart's values, over every run, never moved: folded like the run page's flat charts.
function flatAcross(runs, names) {
  return flatValue(runs.flatMap((r) => r.lines), names);
}

function compareCharts(runs, xAxis, width) {
  const box = el("div", { id: "compare-charts" });
  window.haloViewer.compare = {};
  const colour = (i) => RUN_COLOURS[i % RUN_COLOURS.length];
  const charts = [];
  for (const [title, names] of CHARTS) {
    if (names.includes("eval/success_rate")) {
      charts.push(["Training success", ["rollout/success_rate"]]);
      charts.push(["Held-out success (95% Wilson band dashed)", ["eval/success_rate", "eval/ci_low", "eval/ci_high"]]);
    } else charts.push([title, names]);
  }
  const live = el("div", { class: "charts" });
  const folded = el("div", { class: "charts" });
  const flatNames = [];
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
    const chartBox = el("div", { class: "chart", "data-chart": names[0], style: `width:${width + 10}px` }, el("h4", {}, title));
    const flat = flatAcross(runs, names);
    if (flat != null) {
      flatNames.push(`${title.replace(/ \(.*\)$/, "")} ${fmt(flat)}`);
      folded.append(chartBox);
    } else live.append(chartBox);
    // One legend entry per run (its bands are dashed lines of its colour, not entries of their own).
    const entries = series.map((s, i) => ({ label: s.label, colour: s.stroke, index: i + 1, band: s.metric.startsWith("eval/ci_") })).filter((e) => !e.band);
    const legend = legendBox(entries, (x) => `${X_AXES[xAxis]} ${fmt(x)}`);
    const opts = {
      width,
      height: 220,
      legend: { show: false },
      scales: { x: { time: false }, y: { range: yRange } },
      axes: [{ size: 32 }, { size: 52 }],
      series: [{ label: X_AXES[xAxis] }, ...series.map(({ run, metric, ...s }) => s)],
      hooks: { setCursor: [(u) => legend.update(u, u.cursor.idx)] },
    };
    // Drawn once the box is in the page (comparePage's draw).
    window.haloViewer.compare[names[0]] = { box: chartBox, opts, data: joined(data), legend, series: series.map((s, i) => ({ run: s.run, metric: s.metric, index: i + 1 })) };
  }
  box.append(live);
  if (folded.childElementCount) {
    const n = folded.childElementCount;
    box.append(el("details", { class: "flat-charts" }, el("summary", {}, `${n} flat ${n === 1 ? "chart" : "charts"}, no change in any of these runs: ${flatNames.join(" · ")}`), folded));
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
    const width = chartWidthFor(holder, COMPARE_MIN_WIDTH);
    const box = compareCharts(runs, xAxis, width);
    holder.replaceChildren(box);
    for (const c of Object.values(window.haloViewer.compare)) {
      c.chart = new uPlot(c.opts, c.data, c.box);
      c.box.append(c.legend.box);
      c.legend.update(c.chart, null);
    }
  };
  picker.addEventListener("change", () => {
    xAxis = picker.value;
    draw();
  });
  show(el("h2", {}, "Compare runs"), legend, el("div", { class: "toolbar" }, picker), holder);
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
