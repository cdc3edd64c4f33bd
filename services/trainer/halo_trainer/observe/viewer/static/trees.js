// The search trees of an MCTS run: a list on the run's page, and one tree per page with each node's
// screenshot, action, visits and values, the best path marked and the preference pairs it produced.
// Uses viewer.js's helpers (el, getJSON, show, fmt), loaded after this file.
"use strict";

async function treesSection(runId) {
  const trees = await getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/trees`);
  const head = ["search", "task", "nodes", "simulations", "env steps", "success at a node", "best path"];
  const rows = trees.map((t) =>
    el(
      "tr",
      { "data-tree": t.search_id },
      el("td", {}, el("a", { href: `#/run/${encodeURIComponent(runId)}/tree/${encodeURIComponent(t.search_id)}` }, t.search_id)),
      el("td", {}, t.task_id),
      el("td", {}, t.size),
      el("td", {}, t.simulations),
      el("td", {}, t.env_steps),
      el("td", {}, t.success_at_a_node ? "yes" : "no"),
      el("td", {}, t.best_path.join(" → ")),
    ),
  );
  return el(
    "div",
    { id: "trees" },
    el("h3", {}, `Search trees (${trees.length})`),
    trees.length ? el("table", {}, el("tr", {}, ...head.map((h) => el("th", {}, h))), ...rows) : el("p", { class: "muted" }, "No tree written yet."),
  );
}

function nodeLabel(n) {
  if (n.parent == null) return "root";
  if (n.action) return n.action_key;
  return "answer that did not parse";
}

function treeNode(tree, id, best, inPairs) {
  const n = tree.nodes[id];
  const classes = ["node"];
  if (best.has(id)) classes.push("best");
  if (n.terminal) classes.push(n.success ? "success" : "terminal");
  if (inPairs.has(id)) classes.push("paired");
  const shot = n.screenshot_sha256
    ? el("img", { class: "thumb", src: `/ui/api/screenshots/${n.screenshot_sha256}.png`, alt: `node ${id}`, loading: "lazy" })
    : "";
  const facts = [
    `visits ${n.visits}`,
    `q ${fmt(n.q)}`,
    `q_mcts ${fmt(n.q_mcts)}`,
    `q_critic ${fmt(n.q_critic)}`,
    `reward ${fmt(n.reward)}`,
    n.proposals ? `proposed ${n.proposals}×` : "",
    n.terminal ? (n.success ? "success" : "ended") : "",
  ].filter(Boolean);
  const children = Object.values(n.children).map((c) => treeNode(tree, c, best, inPairs));
  return el(
    "li",
    { class: classes.join(" "), "data-node": id },
    el("div", { class: "node-card" }, shot, el("div", {}, el("b", {}, `#${id} `), nodeLabel(n)), el("div", { class: "muted" }, facts.join(" · "))),
    children.length ? el("ul", {}, ...children) : "",
  );
}

async function treePage(runId, searchId) {
  const crumbs = document.getElementById("crumbs");
  crumbs.replaceChildren(" / ", el("a", { href: `#/run/${encodeURIComponent(runId)}` }, runId), ` / tree ${searchId}`);
  const t = await getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/trees/${encodeURIComponent(searchId)}`);
  const best = new Set(t.best_path);
  const inPairs = new Set(t.pairs.flatMap((p) => [p.chosen, p.rejected]));
  const label = (id) => `#${id} ${nodeLabel(t.nodes[id])}`;
  const pairs = t.pairs.map((p) =>
    el(
      "tr",
      { "data-pair": `${p.chosen}>${p.rejected}` },
      el("td", {}, `#${p.node}`),
      el("td", {}, label(p.chosen)),
      el("td", {}, fmt(p.chosen_q)),
      el("td", {}, label(p.rejected)),
      el("td", {}, fmt(p.rejected_q)),
    ),
  );
  show(
    el("h2", {}, `Search ${searchId}`),
    el("p", {}, `${t.task_id}: ${t.goal} · ${t.simulations} simulations · ${t.env_steps} env steps · ${t.nodes.length} nodes`),
    el("p", { class: "muted" }, "Best path in bold; green: ended with success; a dashed border: an action in a preference pair."),
    el("ul", { class: "tree", id: "tree" }, treeNode(t, 0, best, inPairs)),
    el("h3", {}, `Preference pairs (theta ${fmt(t.theta)}): ${t.pairs.length}`),
    t.pairs.length
      ? el("table", { id: "pairs" }, el("tr", {}, ...["at node", "chosen", "q", "rejected", "q"].map((h) => el("th", {}, h))), ...pairs)
      : el("p", { class: "muted" }, "No two explored children differ by theta."),
  );
}
