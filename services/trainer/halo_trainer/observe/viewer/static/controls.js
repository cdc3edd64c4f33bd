// Run controls: start a run (POST /runs), stop one (POST /runs/{id}/stop), promote a run's adapter to
// its agent mode (POST /runs/{id}/promote). They call the run API itself, so its validation and its
// bearer token decide, and its own messages are what the page shows. Only where the trainer serves
// the viewer (info.live); `halo view` has no run API.
// The token is asked for once and kept in sessionStorage: it goes when the tab closes, and a refusal
// forgets it so that the next try asks again. Uses viewer.js's helpers (el, getJSON, fmt).
"use strict";

const TOKEN_KEY = "haloTrainerToken";
let infoCache = null;

async function viewerInfo() {
  if (!infoCache) infoCache = await getJSON("/ui/api/info");
  return infoCache;
}

function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

// What the run API said, as one line: its ErrorResponse's `error` (with every field problem of a
// 422), FastAPI's `detail`, or the status alone when the body is no JSON.
function apiMessage(body, status) {
  if (body && typeof body.error === "string") {
    const problems = Array.isArray(body.detail) ? body.detail.filter((p) => p && p.field) : [];
    if (problems.length > 1) return `${body.error} (also: ${problems.slice(1).map((p) => `${p.field}: ${p.problem}`).join("; ")})`;
    return body.error;
  }
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) return body.detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
  return `the trainer answered ${status}`;
}

class Refused extends Error {}

function tokenBar(onChange) {
  const box = el("div", { class: "token-bar", id: "token-bar" });
  const draw = () => {
    if (storedToken()) {
      const forget = el("button", { type: "button", id: "token-forget" }, "Forget it");
      forget.addEventListener("click", () => {
        sessionStorage.removeItem(TOKEN_KEY);
        draw();
      });
      box.replaceChildren("The run API's token is set for this tab. ", forget);
    } else {
      const input = el("input", { type: "password", id: "token", autocomplete: "off", placeholder: "HALO_TRAINER_API_TOKEN" });
      const save = el("button", { type: "button", id: "token-save" }, "Use it");
      // Or the token file itself (the local stack's <data_dir>/stack/trainer-token), read here in the
      // page: the token never travels in a URL, and no route of the trainer hands it out.
      const file = el("input", { type: "file", id: "token-file" });
      const keep = (token) => {
        if (!token) return;
        sessionStorage.setItem(TOKEN_KEY, token);
        draw();
        if (onChange) onChange();
      };
      const use = () => keep(input.value.trim());
      save.addEventListener("click", use);
      input.addEventListener("keydown", (e) => e.key === "Enter" && (e.preventDefault(), use()));
      file.addEventListener("change", async () => file.files.length && keep((await file.files[0].text()).trim()));
      box.replaceChildren(
        "This trainer's run API needs its token to start, stop or promote (kept for this tab only; on the local stack `halo stack token` prints it): ",
        input, " ", save, " or its file: ", file,
      );
    }
  };
  draw();
  return box;
}

// Where the token bar goes on a page with controls: empty until a control needs the token (no
// prompt and file picker above every run page).
function tokenSlot() {
  return el("div", { class: "token-slot" });
}

function askForToken() {
  for (const slot of document.querySelectorAll(".token-slot")) slot.replaceChildren(tokenBar());
}

// POST to the run API; throws an Error whose message is for the user (never a stack trace).
async function mutate(url, body) {
  const info = await viewerInfo();
  const token = storedToken();
  if (info.token_required && !token) {
    askForToken();
    throw new Refused("This trainer needs its API token: enter it above, then try again.");
  }
  const headers = { "Content-Type": "application/json" };
  if (token) headers.Authorization = `Bearer ${token}`;
  let response;
  try {
    response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body ?? {}) });
  } catch (error) {
    throw new Refused(`Could not reach the trainer: ${error.message}`);
  }
  const answer = await response.json().catch(() => null);
  if (response.status === 401 || response.status === 403) {
    sessionStorage.removeItem(TOKEN_KEY);
    askForToken();
    throw new Refused(`The trainer refused the token (${response.status}): ${apiMessage(answer, response.status)}. Enter it again above.`);
  }
  if (!response.ok) throw new Refused(`${response.status}: ${apiMessage(answer, response.status)}`);
  return answer;
}

function say(box, kind, message) {
  box.replaceChildren(message ? el("div", { class: kind, role: kind === "error" ? "alert" : "status" }, message) : "");
}

const START_FIELDS = [
  // [RunSpec field, label, input type, placeholder]
  ["domain", "domain", "text", "playground"],
  ["tasks", "tasks (blank: the domain's)", "text", "local.playground-1 local.playground-2"],
  ["name", "name", "text", "optional"],
  ["episodes", "episodes", "number", ""],
  ["learning_rate", "learning rate", "number", ""],
  ["num_generations", "group size", "number", ""],
  ["max_steps", "max steps", "number", ""],
  ["eval_every", "eval every (updates)", "number", ""],
  ["simulations", "simulations (mcts)", "number", ""],
];

// The request body from the form: blank fields are left out (the run defaults decide), numbers
// are sent as typed so that the API's own validation answers for them.
function startBody(form) {
  const body = { algorithm: form.elements.algorithm.value };
  for (const [name, , type] of START_FIELDS) {
    const raw = form.elements[name].value.trim();
    if (!raw) continue;
    if (name === "tasks") body.tasks = raw.split(/[\s,]+/).filter(Boolean);
    else if (type === "number") body[name] = Number(raw);
    else body[name] = raw;
  }
  return body;
}

function startForm() {
  const message = el("div", { id: "start-message" });
  const algorithm = el("select", { name: "algorithm" }, el("option", { value: "grpo" }, "grpo"), el("option", { value: "mcts" }, "mcts"));
  const inputs = START_FIELDS.map(([name, label, type, placeholder]) =>
    el("label", {}, label, el("input", { name, type, ...(type === "number" ? { step: "any" } : {}), placeholder, ...(name === "domain" ? { value: "playground" } : {}) })),
  );
  // novalidate: the browser's own checks would hide the API's messages, which name the limits.
  const form = el("form", { class: "controls", id: "start-run", novalidate: "" }, el("label", {}, "algorithm", algorithm), ...inputs, el("button", { type: "submit" }, "Start run"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    say(message, "notice", "Starting…");
    try {
      const run = await mutate("/runs", startBody(form));
      location.hash = `#/run/${encodeURIComponent(run.run_id)}`;
    } catch (error) {
      say(message, "error", error instanceof Refused ? error.message : `Could not start the run: ${error.message}`);
    }
  });
  return el("div", { id: "start" }, el("h3", {}, "Start a run"), form, message);
}

async function runControls(runId, run, onChange) {
  const info = await viewerInfo();
  if (!info.live) return "";
  const message = el("div", { id: "control-message" });
  const parts = [];
  if (["pending", "running"].includes(run.state)) {
    const stop = el("button", { id: "stop-run", type: "button" }, "Stop run");
    stop.addEventListener("click", async () => {
      stop.disabled = true;
      try {
        await mutate(`/runs/${encodeURIComponent(runId)}/stop`);
        say(message, "notice", "Stop requested: the run stops at its next check.");
        if (onChange) onChange();
      } catch (error) {
        stop.disabled = false;
        say(message, "error", error.message);
      }
    });
    parts.push(stop);
  }
  const adapters = await getJSON(`/ui/api/runs/${encodeURIComponent(runId)}/adapters`);
  if (adapters.mode && adapters.versions.length) {
    const versions = el("select", { id: "promote-version" }, ...adapters.versions.slice().reverse().map((v) => el("option", { value: String(v) }, `v${v}`)));
    const promote = el("button", { id: "promote", type: "button" }, `Promote to ${adapters.mode}`);
    promote.addEventListener("click", async () => {
      promote.disabled = true;
      try {
        const done = await mutate(`/runs/${encodeURIComponent(runId)}/promote`, { version: Number(versions.value), mode: adapters.mode });
        say(message, "notice", `Promoted v${done.version} to ${done.mode} (${done.target}); evaluations load it as ${done.served_as}.`);
      } catch (error) {
        say(message, "error", error.message);
      } finally {
        promote.disabled = false;
      }
    });
    parts.push(el("label", {}, "adapter version", versions), promote);
  } else if (adapters.mode) {
    parts.push(el("span", { class: "muted" }, "No adapter version saved yet to promote."));
  }
  return el(
    "div",
    { id: "run-controls" },
    tokenSlot(),
    parts.length ? el("div", { class: "controls" }, ...parts) : "",
    message,
  );
}
