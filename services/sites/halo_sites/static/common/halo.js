/* HALO clone runtime: the one place where a site's state, seeding, progress and /finish live.
 *
 * Every site page loads this file, then the site's data.js (which calls HALO.defineSite), then
 * (on the app page) its app.js. All state is in localStorage under `halo:<site>:<key>`:
 *   state    the site's data (what /finish diffs), e.g. {email: {emails: {<id>: {...}}}, ui: {...}}
 *   initial  a copy of `state` taken at /config time
 *   progress {milestone: true} in the order first reached; a site unsets one only when it stands
 *            for a state that no longer holds (clearMilestone: the Playground's form flags and
 *            its streak stages)
 *   view     UI-only state (open dialog, draft fields, focus, scroll); not diffed, but kept so a
 *            snapshot of storage + URL restores the exact screen
 *   meta     {task_id, run_id, seed, config} of the current episode
 * Nothing here reads the clock or Math.random: the same task and seed give the same pages.
 */
(function () {
  "use strict";

  let siteDef = null;

  function key(name) {
    return "halo:" + siteDef.site + ":" + name;
  }
  function load(name, fallback) {
    const raw = localStorage.getItem(key(name));
    return raw === null ? fallback : JSON.parse(raw);
  }
  function save(name, value) {
    localStorage.setItem(key(name), JSON.stringify(value));
  }
  function clone(v) {
    return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
  }

  // ---- deterministic randomness (mulberry32) ------------------------------------------------
  function rng(seed) {
    let a = (Number(seed) >>> 0) ^ 0x9e3779b9;
    const next = function () {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    return {
      next: next,
      int: function (n) { return Math.floor(next() * n); },
      pick: function (arr) { return arr[Math.floor(next() * arr.length)]; },
      shuffle: function (arr) {
        const out = arr.slice();
        for (let i = out.length - 1; i > 0; i--) {
          const j = Math.floor(next() * (i + 1));
          const tmp = out[i]; out[i] = out[j]; out[j] = tmp;
        }
        return out;
      },
    };
  }

  // ---- diffs in REAL's /finish shape ---------------------------------------------------------
  function isObj(v) {
    return v !== null && typeof v === "object" && !Array.isArray(v);
  }
  function canonical(v) {
    // Key order must not make two equal objects differ.
    if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
    if (isObj(v)) return "{" + Object.keys(v).sort().map(function (k) { return JSON.stringify(k) + ":" + canonical(v[k]); }).join(",") + "}";
    return JSON.stringify(v === undefined ? null : v);
  }
  function equal(a, b) {
    return canonical(a) === canonical(b);
  }
  function setIn(obj, path, value) {
    let cur = obj;
    for (let i = 0; i < path.length - 1; i++) {
      if (!isObj(cur[path[i]])) cur[path[i]] = {};
      cur = cur[path[i]];
    }
    cur[path[path.length - 1]] = value;
  }
  function getIn(obj, dotted) {
    let cur = obj;
    for (const k of dotted.split(".")) {
      if (!isObj(cur)) return undefined;
      cur = cur[k];
    }
    return cur;
  }

  /* initialfinaldiff: nested objects mirroring the state, holding only what changed.
   * added[path] = new value, updated[path] = new value of a changed leaf, deleted[path] = old value.
   * So `email.emails.e7.isRead` true after reading e7 appears as updated.email.emails.e7.isRead. */
  function initialFinalDiff(initial, final) {
    const out = { added: {}, updated: {}, deleted: {} };
    (function walk(a, b, path) {
      Object.keys(b).sort().forEach(function (k) {
        const p = path.concat([k]);
        if (!(k in a)) setIn(out.added, p, clone(b[k]));
        else if (isObj(a[k]) && isObj(b[k])) walk(a[k], b[k], p);
        else if (!equal(a[k], b[k])) setIn(out.updated, p, clone(b[k]));
      });
      Object.keys(a).sort().forEach(function (k) {
        if (!(k in b)) setIn(out.deleted, path.concat([k]), clone(a[k]));
      });
    })(initial || {}, final || {}, []);
    return out;
  }

  /* differences: per collection (a map of id -> record), lists of whole records:
   * added and updated hold the final record, deleted the initial one; sorted by id. A collection
   * given as {path, keyed: true} reports maps of id -> record instead (REAL's GoCalendar shape). */
  function differences(initial, final, collections) {
    const out = {};
    Object.keys(collections).forEach(function (name) {
      const spec = typeof collections[name] === "string" ? { path: collections[name] } : collections[name];
      const a = getIn(initial, spec.path) || {};
      const b = getIn(final, spec.path) || {};
      const res = { added: [], updated: [], deleted: [] };
      Object.keys(b).sort().forEach(function (id) {
        if (!(id in a)) res.added.push(clone(b[id]));
        else if (!equal(a[id], b[id])) res.updated.push(clone(b[id]));
      });
      Object.keys(a).sort().forEach(function (id) {
        if (!(id in b)) res.deleted.push(clone(a[id]));
      });
      if (spec.keyed) {
        Object.keys(res).forEach(function (kind) {
          const byId = {};
          res[kind].forEach(function (record) { byId[record.id] = record; });
          res[kind] = byId;
        });
      }
      out[name] = res;
    });
    return out;
  }

  // ---- episode lifecycle ---------------------------------------------------------------------
  function reset(params) {
    const prefix = "halo:" + siteDef.site + ":";
    Object.keys(localStorage).forEach(function (k) {
      if (k.indexOf(prefix) === 0) localStorage.removeItem(k);
    });
    const seed = Number(params.seed || 0) >>> 0;
    const config = params.config || {};
    const state = siteDef.initialState(seed, config);
    save("meta", { task_id: params.task_id || null, run_id: params.run_id || "0", seed: seed, config: config });
    save("state", state);
    save("initial", clone(state));
    save("progress", {});
    save("view", siteDef.initialView ? siteDef.initialView(config) : {});
  }

  function ensureEpisode() {
    // A page opened without /config starts from the default episode (seed 0, no task).
    if (localStorage.getItem(key("state")) === null) reset({ seed: 0, config: {} });
  }

  function finish() {
    ensureEpisode();
    const initial = load("initial", {});
    const state = load("state", {});
    const meta = load("meta", {});
    return {
      site: siteDef.site,
      task_id: meta.task_id,
      run_id: meta.run_id,
      seed: meta.seed,
      initialfinaldiff: initialFinalDiff(initial, state),
      differences: differences(initial, state, siteDef.collections || {}),
      progress: load("progress", {}),
      // True once the site allows no more interaction (the Playground after its one submission):
      // the environment then ends the episode and validates it on that step.
      done: siteDef.isDone ? Boolean(siteDef.isDone(state)) : false,
    };
  }

  // ---- what app.js uses ------------------------------------------------------------------------
  const HALO = {
    rng: rng,
    clone: clone,
    equal: equal,
    initialFinalDiff: initialFinalDiff,
    differences: differences,

    defineSite: function (def) {
      siteDef = def;
      window.__HALO__ = { site: def.site, finish: finish };
    },
    site: function () { return siteDef; },
    /* The app's render(), which builds the whole screen from storage and the URL: called here on
     * load, and by the environment (window.__HALO__.render) after it has rewritten storage and the
     * URL's hash in place, which gives the screen a fresh load would, without a navigation. */
    mount: function (render) {
      window.__HALO__.render = render;
      render();
    },
    reset: reset,
    finish: finish,
    meta: function () { ensureEpisode(); return load("meta", {}); },
    state: function () { ensureEpisode(); return load("state", {}); },
    commit: function (state) { save("state", state); },
    view: function () { ensureEpisode(); return load("view", {}); },
    setView: function (view) { save("view", view); },
    patchView: function (patch) {
      const v = HALO.view();
      Object.keys(patch).forEach(function (k) { v[k] = patch[k]; });
      save("view", v);
      return v;
    },
    progress: function () { ensureEpisode(); return load("progress", {}); },
    milestone: function (name) {
      const p = HALO.progress();
      if (!p[name]) {
        p[name] = true;
        save("progress", p);
      }
    },
    clearMilestone: function (name) {
      const p = HALO.progress();
      if (p[name]) {
        delete p[name];
        save("progress", p);
      }
    },

    /* Keep focus and scroll positions in `view` so a restored snapshot shows the same screen and
     * typing after a fork lands in the same field. Call once; call restoreUi() after each render. */
    trackUi: function () {
      document.addEventListener("focusin", function (e) {
        const id = e.target && e.target.getAttribute && e.target.getAttribute("data-halo-id");
        const isField = e.target && (e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA");
        HALO.patchView({ focus: id && isField ? id : null });
      });
      document.addEventListener("scroll", function (e) {
        const el = e.target;
        const name = el && el.getAttribute && el.getAttribute("data-halo-scroll");
        if (!name) return;
        const scroll = HALO.view().scroll || {};
        scroll[name] = Math.round(el.scrollTop);
        HALO.patchView({ scroll: scroll });
      }, true);
    },
    restoreUi: function (defaults) {
      const view = HALO.view();
      const scroll = Object.assign({}, defaults || {}, view.scroll || {});
      document.querySelectorAll("[data-halo-scroll]").forEach(function (el) {
        const v = scroll[el.getAttribute("data-halo-scroll")];
        if (v) el.scrollTop = v;
      });
      if (view.focus) {
        const el = document.querySelector('[data-halo-id="' + view.focus + '"]');
        if (el && el.focus) {
          el.focus({ preventScroll: true });
          if (typeof el.value === "string" && el.setSelectionRange) {
            try { el.setSelectionRange(el.value.length, el.value.length); } catch (err) { /* not a text input */ }
          }
        }
      }
    },

    esc: function (s) {
      return String(s === undefined || s === null ? "" : s)
        .replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
    },
  };

  window.HALO = HALO;
})();
