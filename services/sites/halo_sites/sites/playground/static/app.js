/* Playground app: renders the task family named in meta.config from the state, records what the
 * agent submits. One submission per episode: after it the form is locked (MiniWoB's one-shot rule),
 * so a wrong first answer cannot be repaired by clicking around. */
(function () {
  "use strict";
  const esc = HALO.esc;

  function slug(s) {
    return String(s).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  }
  function norm(s) {
    return String(s || "").trim().toLowerCase();
  }
  function config() {
    return HALO.meta().config || {};
  }
  function wants(name) {
    return (config().milestones || []).indexOf(name) !== -1;
  }
  function mark(name) {
    if (wants(name)) HALO.milestone(name);
  }

  /* Where the click family's buttons go: one button cycles through its slots with the seed
   * (seed % slots, so seeds 0..k-1 cover every layout once); several buttons are dealt onto
   * the slots in a seeded order. Slots are [x, y] page pixels of the button centre. */
  function placements(cfg, seed) {
    const buttons = cfg.buttons || ["Submit"];
    const slots = cfg.slots || [[640, 400]];
    if (buttons.length === 1) return [{ label: buttons[0], at: slots[seed % slots.length] }];
    const order = cfg.shuffle === false ? slots : HALO.rng(seed).shuffle(slots);
    return buttons.map(function (label, i) { return { label: label, at: order[i] }; });
  }

  function renderClick(cfg, st, locked) {
    const seed = HALO.meta().seed || 0;
    return placements(cfg, seed).map(function (p) {
      return '<button class="pg-button ' + (cfg.size || "large") + '" data-halo-id="btn-' + slug(p.label) +
        '" data-action="click-button" data-label="' + esc(p.label) + '" style="left:' + p.at[0] + "px;top:" +
        (p.at[1] - 90) + 'px"' + (locked ? " disabled" : "") + ">" + esc(p.label) + "</button>";
    }).join("");
  }

  function submitButton(cfg, locked) {
    return '<div class="pg-row"><button class="pg-submit" data-halo-id="submit" data-action="submit"' +
      (locked ? " disabled" : "") + ">" + esc(cfg.submit || "Submit") + "</button></div>";
  }

  function renderType(cfg, st, locked) {
    const rows = (cfg.fields || []).map(function (f) {
      return '<div class="pg-row"><label class="caption" for="field-' + esc(f.name) + '">' + esc(f.label) +
        '</label><input class="pg-input" id="field-' + esc(f.name) + '" data-halo-id="field-' + esc(f.name) +
        '" data-field="' + esc(f.name) + '" type="text" autocomplete="off" value="' +
        esc(st.form.fields[f.name] || "") + '"' + (locked ? " disabled" : "") + "></div>";
    }).join("");
    return '<div class="pg-form">' + rows + submitButton(cfg, locked) + "</div>";
  }

  function renderSelect(cfg, st, locked) {
    const open = HALO.view().dropdownOpen && !locked;
    let list = "";
    if (open) {
      list = '<div class="pg-options" role="listbox">' + (cfg.options || []).map(function (o) {
        return '<button class="pg-option' + (st.form.selected === o ? " selected" : "") + '" role="option" data-halo-id="option-' +
          slug(o) + '" data-action="pick" data-option="' + esc(o) + '">' + esc(o) + "</button>";
      }).join("") + "</div>";
    }
    return '<div class="pg-form"><div class="pg-row"><label class="caption">' + esc(cfg.label || "Option") +
      '</label><div class="pg-dropdown"><button class="pg-dropdown-button" role="combobox" aria-label="' + esc(cfg.label || "Option") +
      '" aria-expanded="' + (open ? "true" : "false") + '" data-halo-id="dropdown" data-action="toggle-dropdown"' + (locked ? " disabled" : "") + ">" +
      esc(st.form.selected || "Choose\u2026") + "</button>" + list + "</div></div>" + (open ? "" : submitButton(cfg, locked)) + "</div>";
  }

  function renderCheck(cfg, st, locked) {
    const rows = (cfg.options || []).map(function (o) {
      const on = st.form.checked.indexOf(o) !== -1;
      return '<label class="pg-check"><input type="checkbox" data-halo-id="check-' + slug(o) + '" data-check="' + esc(o) +
        '"' + (on ? " checked" : "") + (locked ? " disabled" : "") + ">" + esc(o) + "</label>";
    }).join("");
    return '<div class="pg-form"><div class="pg-row">' + rows + "</div>" + submitButton(cfg, locked) + "</div>";
  }

  /* The streak family: one button pressed `presses` times in a row, each press a stage with its
   * milestone (`pressed_<k>`); a pointer click anywhere else is a miss that starts the count again,
   * and the episode goes on. An episode must chain every stage without a miss between them, while a
   * search that re-enters a state keeps the stage reached there. The count is drawn on the page so
   * the screenshot (and the exact-fork check) tells the stages apart. */
  function renderStreak(cfg, st, locked) {
    const p = placements(cfg, HALO.meta().seed || 0)[0];
    const need = cfg.presses || 3;
    return '<button class="pg-button ' + (cfg.size || "large") + '" data-halo-id="btn-' + slug(p.label) +
      '" data-action="press" data-label="' + esc(p.label) + '" style="left:' + p.at[0] + "px;top:" +
      (p.at[1] - 90) + 'px"' + (locked ? " disabled" : "") + ">" + esc(p.label) + "</button>" +
      '<div class="pg-streak" data-halo-id="streak">' + esc("Pressed " + (st.form.streak || 0) + " of " + need +
      " times in a row") + "</div>";
  }

  function renderRead(cfg) {
    return '<div class="pg-card" data-halo-id="card">' + esc(cfg.text || "") + "</div>";
  }

  const FAMILIES = {
    click: renderClick, type: renderType, select: renderSelect, check: renderCheck, read: renderRead, streak: renderStreak,
  };

  function render() {
    const cfg = config();
    const st = HALO.state();
    const locked = st.submission !== null;
    document.getElementById("instruction").textContent = cfg.instruction || "Playground";
    const family = FAMILIES[cfg.family] || FAMILIES.click;
    let html = family(cfg, st, locked);
    if (locked) html += '<div id="result" role="status">Submitted.</div>';
    document.getElementById("work").innerHTML = html;
    HALO.restoreUi();
  }

  function submit(extra, milestone) {
    const st = HALO.state();
    if (st.submission !== null) return;
    st.submission = Object.assign({
      fields: st.form.fields, selected: st.form.selected, checked: st.form.checked.slice().sort(),
    }, extra || {});
    HALO.commit(st);
    if (milestone !== false) mark("submitted");
    HALO.patchView({ focus: null });
    render();
  }

  /* Each progress flag is the form's real state: set while it holds, unset when an action undoes it
   * (a box double-clicked, checked then unchecked in one step; a field typed past its target; another
   * option picked). A flag left set would pay its milestone, and show the critic progress, for a
   * state the page no longer holds. */
  function checkProgress(st) {
    const cfg = config();
    if (cfg.family === "type") {
      const ok = (cfg.fields || []).every(function (f) { return norm(st.form.fields[f.name]) === norm(f.target); });
      if (ok) mark("field_filled");
      else HALO.clearMilestone("field_filled");
    } else if (cfg.family === "select") {
      if (st.form.selected === cfg.target) mark("option_selected");
      else HALO.clearMilestone("option_selected");
    } else if (cfg.family === "check") {
      const want = (cfg.targets || []).slice().sort();
      if (HALO.equal(st.form.checked.slice().sort(), want)) mark("boxes_checked");
      else HALO.clearMilestone("boxes_checked");
    }
  }

  /* The click family asks for a pointer click. A button activated from the keyboard (Tab to it,
   * then Enter or Space) fires a click event too, but with `detail` 0 and no pointer position: a
   * policy blind to the screenshot passed every layout of local.playground-2 that way (Tab focuses
   * the only button wherever it is drawn). Such an activation is not a click: it answers nothing,
   * earns no ring and leaves the task open for a real click. */
  function keyboardActivation(e) {
    const family = config().family;
    return (family === "click" || family === "streak") && e.detail === 0;
  }

  /* A streak press: a pointer click on the button counts one (the second and third clicks of a
   * double or triple click, detail 2 and 3, are the same press); any other pointer click resets the
   * count. Each stage's flag follows the count, and the last press is the one submission. */
  function streakClick(e) {
    const st = HALO.state();
    if (st.submission !== null) return;
    const el = e.target.closest('[data-action="press"]');
    if (el && e.detail > 1) return;
    const need = config().presses || 3;
    st.form.streak = el ? (st.form.streak || 0) + 1 : 0;
    HALO.commit(st);
    for (let k = 1; k <= need; k++) {
      if (k <= st.form.streak) mark("pressed_" + k);
      else HALO.clearMilestone("pressed_" + k);
    }
    if (st.form.streak >= need) submit({ button: el.getAttribute("data-label"), presses: st.form.streak }, false);
    else render();
  }

  /* Dense shaping for the click family, opt-in per task (the `near_target` milestone): a click
   * that lands within `near_radius` page pixels of the target's centre before the one submission.
   * A list of radii grades it: the outermost ring marks `near_target`, each inner ring r marks
   * `near_target_<r>` too, so a closer miss earns more than a far one (each flag pays once per
   * episode). A random clicker lands in a single 250 px ring about 5 % of the time, too rarely to
   * steer a policy; rings out to 600 px tell most clicks which way is closer.
   * Capture phase, so it is seen before a button click locks the form. */
  document.addEventListener("click", function (e) {
    const cfg = config();
    if (cfg.family !== "click" || keyboardActivation(e) || !wants("near_target") || HALO.state().submission !== null) return;
    const label = cfg.target || (cfg.buttons || ["Submit"])[0];
    const target = placements(cfg, HALO.meta().seed || 0).filter(function (p) { return p.label === label; })[0];
    if (!target) return;
    const distance = Math.hypot(e.clientX - target.at[0], e.clientY - target.at[1]);
    const radii = [].concat(cfg.near_radius || 250).sort(function (a, b) { return b - a; });
    radii.forEach(function (r, i) {
      if (distance <= r) HALO.milestone(i === 0 ? "near_target" : "near_target_" + r);
    });
  }, true);

  document.addEventListener("click", function (e) {
    if (keyboardActivation(e)) {
      e.preventDefault();
      return;
    }
    if (config().family === "streak") {
      streakClick(e);
      return;
    }
    const el = e.target.closest("[data-action]");
    if (!el && config().family === "click") {
      /* The click tasks' rule (their evals say "the first click hit ..."): the first click is the
       * answer, a miss included. Were a miss free, a policy blind to the screenshot could click the
       * layouts' slots in turn and pass a moving-target task far above its chance rate. */
      submit({ button: null }, false);  // ends the episode; no `submitted` progress for a miss
      return;
    }
    if (!el || el.disabled) return;
    const action = el.getAttribute("data-action");
    if (action === "click-button") {
      submit({ button: el.getAttribute("data-label") });
    } else if (action === "submit") {
      submit({ button: "submit" });
    } else if (action === "toggle-dropdown") {
      const open = !HALO.view().dropdownOpen;
      HALO.patchView({ dropdownOpen: open });
      if (open) mark("dropdown_opened");
      render();
    } else if (action === "pick") {
      const st = HALO.state();
      st.form.selected = el.getAttribute("data-option");
      HALO.commit(st);
      HALO.patchView({ dropdownOpen: false });
      checkProgress(st);
      render();
    }
  });

  document.addEventListener("input", function (e) {
    const name = e.target.getAttribute("data-field");
    if (!name) return;
    const st = HALO.state();
    st.form.fields[name] = e.target.value;
    HALO.commit(st);
    checkProgress(st);
  });

  document.addEventListener("change", function (e) {
    const opt = e.target.getAttribute("data-check");
    if (opt === null) return;
    const st = HALO.state();
    const i = st.form.checked.indexOf(opt);
    if (e.target.checked && i === -1) st.form.checked.push(opt);
    if (!e.target.checked && i !== -1) st.form.checked.splice(i, 1);
    HALO.commit(st);
    checkProgress(st);
  });

  // Enter in a text field submits, as in a real form.
  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && e.target.getAttribute && e.target.getAttribute("data-field")) submit({ button: "enter" });
  });

  HALO.trackUi();
  HALO.mount(render);
})();
