// A run's curves, read as TensorBoard or W&B users read theirs: grouped (learning, rollouts, system),
// the charts whose values never moved folded away under their one value (a flat KL on a 0-100 axis
// says nothing and takes a chart's room), each dense series drawn faint with its smoothed line over
// it (TensorBoard's debiased exponential moving average), and a legend under each chart that gives
// every series' value at the cursor, or its latest value when the cursor is elsewhere.
// Uses viewer.js's helpers (el, fmt); compare.js reads CHARTS and LABELS.
"use strict";

const CHART_GROUPS = [
  [
    "Learning",
    [
      ["Success (training, held-out with its 95% Wilson band)", ["rollout/success_rate", "eval/success_rate", "eval/ci_low", "eval/ci_high"]],
      ["Mean reward", ["rollout/mean_reward"]],
      ["Loss", ["train/loss"]],
      ["KL to the base", ["train/kl"]],
      ["Entropy", ["train/entropy"]],
      ["Grad norm", ["train/grad_norm"]],
    ],
  ],
  [
    "Rollouts",
    [
      ["Groups with zero reward spread", ["rollout/frac_reward_zero_std"]],
      ["Action validity", ["rollout/action_validity"]],
      ["Episode length", ["rollout/episode_length"]],
    ],
  ],
  [
    "System",
    [
      ["Throughput (episodes/s)", ["rollout/episodes_per_s"]],
      ["Staleness (versions)", ["rollout/staleness"]],
      ["Seconds per update", ["train/update_s"]],
    ],
  ],
];
const CHARTS = CHART_GROUPS.flatMap(([, charts]) => charts);
// Legend names: short where the chart's title already says what the series measures.
const LABELS = {
  "rollout/success_rate": "training",
  "eval/success_rate": "held-out",
  "eval/ci_low": "95% low",
  "eval/ci_high": "95% high",
};
const COLOURS = ["#2563eb", "#dc2626", "#94a3b8", "#94a3b8"];
const SMOOTHING = [0, 0.6, 0.8, 0.9, 0.95];
const SMOOTHING_KEY = "haloSmoothing";
const CHART_MIN_WIDTH = 360;
const CHART_GAP = 12;
const CHART_HEIGHT = 170;

// The user's last choice (this browser), else TensorBoard's default.
function smoothing() {
  const stored = localStorage.getItem(SMOOTHING_KEY);
  return stored !== null && SMOOTHING.includes(Number(stored)) ? Number(stored) : 0.6;
}

// TensorBoard's smoothing: an EMA over the points present, divided by 1 - w^n so that the first
// points are not pulled towards zero. Gaps (null) stay gaps.
function smoothed(values, weight) {
  let last = 0;
  let n = 0;
  return values.map((v) => {
    if (v == null) return null;
    last = last * weight + (1 - weight) * v;
    n += 1;
    return last / (1 - weight ** n);
  });
}

// Evaluations are sparse and each point is its own measurement: never smoothed.
function smoothable(name) {
  return !name.startsWith("eval/");
}

// A chart carries no information when every one of its series held one value (at least two points).
function flatValue(lines, names) {
  const values = names.filter((n) => !n.startsWith("eval/ci_")).flatMap((n) => lines.map((l) => l[n]).filter((v) => typeof v === "number"));
  if (values.length < 2) return null;
  const [lo, hi] = [Math.min(...values), Math.max(...values)];
  return hi - lo <= 1e-9 * Math.max(1, Math.abs(hi)) ? lo : null;
}

// A constant series would get an axis of 0-100 (uPlot's default range for no spread): give it a band
// around its value instead.
function yRange(u, min, max) {
  if (min == null || max == null) return [0, 1];
  if (max - min < 1e-12) {
    const pad = Math.abs(min) * 0.1 || 1;
    return [min - pad, max + pad];
  }
  return uPlot.rangeNum(min, max, 0.1, true);
}

// Tick labels that tell the ticks apart: the fewest decimals (or significant digits, for values
// below 1e-4) at which no two labels are the same, and never "-0" (a Loss axis read "-0, -0, -0.001").
function tickLabels(splits) {
  const finite = splits.filter((v) => Number.isFinite(v));
  const tiny = finite.length > 0 && Math.max(...finite.map(Math.abs)) < 1e-4 && finite.some((v) => v !== 0);
  const label = (v, d) => {
    if (!Number.isFinite(v)) return "";
    const text = tiny ? (v === 0 ? "0" : v.toExponential(d)) : v.toFixed(d);
    return /^-0(\.0*)?(e[+-]?\d+)?$/.test(text) ? text.slice(1) : text;
  };
  for (let d = 0; d <= 12; d += 1) {
    const labels = splits.map((v) => label(v, d));
    if (new Set(labels).size === labels.length) return labels;
  }
  return splits.map((v) => label(v, 12));
}

// The update axis: whole updates only (no tick at 0.5), in steps of 1, 2, 5, 10, ...
const UPDATE_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

// One point (or all at one x) would get no x range: a band around it instead, so its point shows.
function xRange(xAxis) {
  return (u, min, max) => {
    if (min == null || max == null) return [0, 1];
    if (max - min > 0) return [min, max];
    const pad = xAxis === "time" ? 60 : 1;
    return [xAxis === "time" ? min - pad : Math.max(0, min - pad), max + pad];
  };
}

// Points of a series with at most one value are drawn large and opaque: there is no line to show it.
function pointsOf(values, band, faint) {
  const alone = values.filter((v) => v != null).length < 2;
  return { show: !band || alone, size: alone ? 7 : faint ? 3 : 5 };
}

// Width of one chart so that as many as fit share the row (at least one, never wider than the box).
function chartWidthFor(container, minWidth) {
  const width = Math.max(minWidth, container.clientWidth || minWidth);
  const cols = Math.max(1, Math.floor((width + CHART_GAP) / (minWidth + CHART_GAP)));
  return Math.floor((width - (cols - 1) * CHART_GAP) / cols) - 10; // the box's padding and border
}

function chartWidth(container) {
  return chartWidthFor(container, CHART_MIN_WIDTH);
}

function xText(x, xAxis) {
  if (x == null) return "";
  return xAxis === "time" ? new Date(x * 1000).toLocaleTimeString() : `update ${x}`;
}

// The legend: a swatch, a name and a value per entry ({label, colour, index}: the series' index in
// the chart's data); the values at the cursor's point, else each series' latest.
function legendBox(entries, xLabel) {
  const box = el("div", { class: "legend" });
  const at = el("span", { class: "legend-x" });
  const values = entries.map(() => el("span", { class: "legend-value" }));
  box.append(
    at,
    ...entries.map((e, i) =>
      el("span", { class: "legend-item", "data-series": e.name || e.label }, el("i", { class: "swatch", style: `background:${e.colour}` }), `${e.label} `, values[i]),
    ),
  );
  const update = (u, idx) => {
    const data = u.data;
    const pick = (series) => {
      if (idx != null) return data[series][idx];
      for (let j = data[series].length - 1; j >= 0; j -= 1) if (data[series][j] != null) return data[series][j];
      return null;
    };
    at.textContent = idx != null ? xLabel(data[0][idx]) : "latest";
    entries.forEach((e, i) => (values[i].textContent = fmt(pick(e.index))));
  };
  return { box, update };
}

function drawChart(box, lines, present, xAxis, width, weight) {
  const data = chartData(lines, present, xAxis);
  const series = [{ label: xAxis === "time" ? "time" : "update" }];
  present.forEach((n, i) => {
    const band = n.startsWith("eval/ci_");
    const alone = data[i + 1].filter((v) => v != null).length < 2;
    const faint = weight > 0 && smoothable(n) && !alone;
    series.push({
      label: n,
      stroke: faint ? `${COLOURS[i % COLOURS.length]}55` : COLOURS[i % COLOURS.length],
      width: band || faint ? 1 : 2,
      dash: band ? [4, 4] : undefined,
      spanGaps: true,
      points: { ...pointsOf(data[i + 1], band, faint), fill: COLOURS[i % COLOURS.length] },
    });
  });
  // The smoothed lines come after every raw series, so that a raw series keeps its index.
  const smooth = weight > 0 ? present.filter(smoothable) : [];
  for (const n of smooth) {
    const i = present.indexOf(n);
    series.push({ label: `${n} (smoothed)`, stroke: COLOURS[i % COLOURS.length], width: 2, spanGaps: true, points: { show: false } });
    data.push(smoothed(data[i + 1], weight));
  }
  const entries = present.map((n, i) => ({ name: n, label: LABELS[n] || n, colour: COLOURS[i % COLOURS.length], index: i + 1 }));
  const legend = legendBox(entries, (x) => xText(x, xAxis));
  const opts = {
    width,
    height: CHART_HEIGHT,
    legend: { show: false },
    cursor: { points: { size: 6 } },
    scales: { x: { time: xAxis === "time", range: xRange(xAxis) }, y: { range: yRange } },
    axes: [
      xAxis === "time" ? { size: 32 } : { size: 32, incrs: UPDATE_INCRS, values: (u, splits) => splits.map((v) => String(Math.round(v))) },
      { size: 52, values: (u, splits) => tickLabels(splits) },
    ],
    series,
    hooks: { setCursor: [(u) => legend.update(u, u.cursor.idx)] },
  };
  // The box is as wide as the plot: a long legend wraps under it instead of widening the box.
  box.style.width = `${width + 10}px`;
  const chart = new uPlot(opts, data, box);
  box.append(legend.box);
  legend.update(chart, null);
  return chart;
}

function smoothingPicker(onChange) {
  const picker = el(
    "select",
    { id: "smoothing", "aria-label": "smoothing" },
    ...SMOOTHING.map((w) => el("option", { value: w }, w ? `smoothing ${w}` : "no smoothing")),
  );
  picker.value = String(smoothing());
  picker.addEventListener("change", () => {
    localStorage.setItem(SMOOTHING_KEY, picker.value);
    onChange();
  });
  return picker;
}

function drawCharts(container, lines, xAxis) {
  container.replaceChildren();
  window.haloViewer.charts = {};
  window.haloViewer.flat = {};
  const width = chartWidth(container);
  const weight = smoothing();
  const drawn = [];
  for (const [group, charts] of CHART_GROUPS) {
    const live = el("div", { class: "charts" });
    const folded = el("div", { class: "charts" });
    const flatNames = [];
    for (const [title, names] of charts) {
      const present = names.filter((n) => lines.some((l) => typeof l[n] === "number"));
      if (!present.length) continue;
      const flat = flatValue(lines, present);
      const box = el("div", { class: "chart", "data-chart": present[0] }, el("h4", {}, title));
      if (flat != null) {
        flatNames.push(`${title.replace(/ \(.*\)$/, "")} ${fmt(flat)}`);
        for (const n of present) window.haloViewer.flat[n] = flat;
        folded.append(box);
      } else live.append(box);
      drawn.push([box, present]);
    }
    if (!live.childElementCount && !folded.childElementCount) continue;
    const section = el("section", { class: "chart-group", "data-group": group.toLowerCase() }, el("h3", {}, group), live);
    if (folded.childElementCount) {
      const n = folded.childElementCount;
      section.append(
        el("details", { class: "flat-charts" }, el("summary", {}, `${n} flat ${n === 1 ? "chart" : "charts"}, no change in this run: ${flatNames.join(" · ")}`), folded),
      );
    }
    container.append(section);
  }
  for (const [box, present] of drawn) {
    const chart = drawChart(box, lines, present, xAxis, width, weight);
    for (const n of present) window.haloViewer.charts[n] = { chart, series: present.indexOf(n) + 1 };
  }
}

// Charts follow the window's width (uPlot draws at a fixed size).
let resizeTimer = null;
window.addEventListener("resize", () => {
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    const container = document.getElementById("charts");
    if (!container) return;
    const width = chartWidth(container);
    for (const { chart } of Object.values(window.haloViewer.charts || {})) {
      chart.setSize({ width, height: CHART_HEIGHT });
      chart.root.parentElement.style.width = `${width + 10}px`;
    }
  }, 150);
});
