/* GoCalendar app: a Google Calendar-like single page. Routes: #/week/<YYYY-MM-DD>, #/month/<YYYY-MM-DD>
 * (the date picks the week or month shown; default today). Events live in HALO.state(); the open
 * event card (view.details) and the event editor with its fields (view.editor) in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const icon = HALO.icon;
  const SITE = HALO.site();
  const HOUR_PX = 48;
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const DAYS_LONG = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

  // ---- dates (UTC arithmetic on plain dates: no time zones, no clock) --------------------------
  function toDate(s) { return new Date(Date.UTC(+s.slice(0, 4), +s.slice(5, 7) - 1, +s.slice(8, 10))); }
  function fmt(d) { return d.toISOString().slice(0, 10); }
  function addDays(s, n) { const d = toDate(s); d.setUTCDate(d.getUTCDate() + n); return fmt(d); }
  function weekStart(s) { return addDays(s, -toDate(s).getUTCDay()); }
  function monthStart(s) { return s.slice(0, 8) + "01"; }
  function addMonths(s, n) { const d = toDate(monthStart(s)); d.setUTCMonth(d.getUTCMonth() + n); return fmt(d); }
  function minutes(iso) { return +iso.slice(11, 13) * 60 + +iso.slice(14, 16); }
  function clock(iso) {
    const h = +iso.slice(11, 13), m = iso.slice(14, 16);
    return (h % 12 || 12) + (m === "00" ? "" : ":" + m) + (h < 12 ? "am" : "pm");
  }
  function longDay(s) { const d = toDate(s); return DAYS_LONG[d.getUTCDay()] + ", " + MONTHS[d.getUTCMonth()] + " " + d.getUTCDate(); }

  function parseDate(text) {
    const s = String(text || "").trim().toLowerCase();
    let m = s.match(/^(\d{4})-(\d{1,2})-(\d{1,2})$/);
    let y, mo, d;
    if (m) { y = +m[1]; mo = +m[2]; d = +m[3]; }
    else if ((m = s.match(/^(\d{1,2})\/(\d{1,2})\/(\d{4})$/))) { y = +m[3]; mo = +m[1]; d = +m[2]; }
    else if ((m = s.match(/^(?:[a-z]+,?\s+)?([a-z]+)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s*(\d{4})?$/))) {
      mo = MONTHS.findIndex(function (name) { return name.toLowerCase().indexOf(m[1].slice(0, 3)) === 0; }) + 1;
      d = +m[2]; y = m[3] ? +m[3] : +SITE.today.slice(0, 4);
      if (!mo) return null;
    } else return null;
    const out = String(y).padStart(4, "0") + "-" + String(mo).padStart(2, "0") + "-" + String(d).padStart(2, "0");
    return fmt(toDate(out)) === out ? out : null;
  }
  function parseTime(text) {
    const s = String(text || "").trim().toLowerCase().replace(/\./g, "");
    const m = s.match(/^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/);
    if (!m) return null;
    let h = +m[1];
    const mi = m[2] ? +m[2] : 0;
    if (mi > 59) return null;
    if (m[3]) { if (h < 1 || h > 12) return null; h = (h % 12) + (m[3] === "pm" ? 12 : 0); }
    else if (h > 23) return null;
    return String(h).padStart(2, "0") + ":" + String(mi).padStart(2, "0");
  }

  // ---- routing ---------------------------------------------------------------------------------
  function route() {
    const parts = (location.hash || "").replace(/^#\/?/, "").split("/");
    const mode = parts[0] === "month" ? "month" : "week";
    const date = parts[1] && parseDate(parts[1]) ? parseDate(parts[1]) : SITE.today;
    return { mode: mode, date: date };
  }
  function go(mode, date) {
    const hash = "#/" + mode + "/" + date;
    if (location.hash === hash) render();
    else location.hash = hash;
  }

  // Stored times: local "YYYY-MM-DDTHH:MM:00", or with REAL's dataset (SITE.pacificUtc) UTC
  // instants for a user in Pacific time (UTC-7 on the dates used) and all-day events at 00:00Z of
  // their first and last day. The app works in local times: events() converts on reading, stored() on writing.
  function shift(iso, minutes) { return new Date(Date.parse(iso.slice(0, 19) + "Z") + minutes * 60000).toISOString().slice(0, 19); }
  function local(e) {
    if (!SITE.pacificUtc) return e;
    return Object.assign({}, e, {
      start: e.allDay ? e.start.slice(0, 10) + "T00:00:00" : shift(e.start, -7 * 60),
      end: e.allDay ? e.end.slice(0, 10) + "T23:59:00" : shift(e.end, -7 * 60),
    });
  }
  function stored(e) {
    if (!SITE.pacificUtc) return e;
    return Object.assign({}, e, {
      start: e.allDay ? e.start.slice(0, 10) + "T00:00:00.000Z" : shift(e.start, 7 * 60) + ".000Z",
      end: e.allDay ? e.end.slice(0, 10) + "T00:00:00.000Z" : shift(e.end, 7 * 60) + ".000Z",
    });
  }
  function events(st) {
    const out = {};
    Object.keys(st.calendar.events).forEach(function (id) { out[id] = local(st.calendar.events[id]); });
    return out;
  }
  function eventsOn(st, day) {
    return Object.values(events(st))
      .filter(function (e) {
        if (e.allDay) return e.start.slice(0, 10) <= day && day <= e.end.slice(0, 10);
        // "Every weekday" events repeat Monday to Friday from their first day on.
        return e.start.slice(0, 10) === day || (e.recurrence === "weekdays" && e.start.slice(0, 10) < day && toDate(day).getUTCDay() % 6 !== 0);
      })
      .map(function (e) { return e.allDay || e.start.slice(0, 10) === day ? e : Object.assign({}, e, { start: day + e.start.slice(10), end: day + e.end.slice(10) }); })
      .sort(function (a, b) { return a.start < b.start ? -1 : a.start > b.start ? 1 : (a.id < b.id ? -1 : 1); });
  }

  // ---- rendering -------------------------------------------------------------------------------
  function topbar(r) {
    const d = toDate(r.date);
    let title = MONTHS[d.getUTCMonth()] + " " + d.getUTCFullYear();
    if (r.mode === "week") {
      const a = toDate(weekStart(r.date)), b = toDate(addDays(weekStart(r.date), 6));
      if (a.getUTCMonth() !== b.getUTCMonth()) title = MONTHS[a.getUTCMonth()].slice(0, 3) + " \u2013 " + MONTHS[b.getUTCMonth()].slice(0, 3) + " " + b.getUTCFullYear();
    }
    const today = toDate(SITE.today).getUTCDate();
    return '<header class="topbar"><button class="icon-btn" aria-label="Main menu" data-halo-id="menu">' + icon("menu", 24, "#444746") + "</button>" +
      '<div class="logo"><span class="logo-box"><span class="logo-top"></span><span class="logo-num">' + today + "</span></span><span>GoCalendar</span></div>" +
      '<button class="today-btn" data-action="today" data-halo-id="today">Today</button>' +
      '<button class="icon-btn" aria-label="Previous ' + r.mode + '" data-action="prev" data-halo-id="prev">' + icon("chevronLeft", 24, "#444746") + "</button>" +
      '<button class="icon-btn" aria-label="Next ' + r.mode + '" data-action="next" data-halo-id="next">' + icon("chevronRight", 24, "#444746") + "</button>" +
      '<h1 class="title">' + title + "</h1>" +
      '<div class="switch" role="tablist"><button role="tab" aria-selected="' + (r.mode === "week") + '" class="' + (r.mode === "week" ? "on" : "") +
      '" data-action="mode" data-mode="week" data-halo-id="view-week">Week</button><button role="tab" aria-selected="' + (r.mode === "month") + '" class="' +
      (r.mode === "month" ? "on" : "") + '" data-action="mode" data-mode="month" data-halo-id="view-month">Month</button></div>' +
      '<span class="icon-btn">' + icon("settings", 24, "#444746") + '</span><span class="avatar" aria-label="Alex Morgan">A</span></header>';
  }

  function miniMonth(r) {
    const first = monthStart(r.date);
    const start = weekStart(first);
    let cells = DAYS.map(function (d) { return '<span class="mm-h">' + d[0] + "</span>"; }).join("");
    for (let i = 0; i < 42; i++) {
      const day = addDays(start, i);
      const cls = ["mm-d"];
      if (day.slice(0, 7) !== first.slice(0, 7)) cls.push("other");
      if (day === SITE.today) cls.push("today");
      cells += '<span class="' + cls.join(" ") + '">' + toDate(day).getUTCDate() + "</span>";
    }
    const d = toDate(first);
    return '<div class="mini" aria-hidden="true"><div class="mini-title">' + MONTHS[d.getUTCMonth()] + " " + d.getUTCFullYear() + '</div><div class="mini-grid">' + cells + "</div></div>";
  }

  function sidebar(r) {
    return '<nav class="sidebar"><button class="create-btn" data-action="create" data-halo-id="create">' + icon("plus", 28, "#1f1f1f") + "<span>Create</span></button>" +
      miniMonth(r) + '<div class="cals"><div class="cals-title">My calendars</div><label class="cal"><span class="swatch"></span>Alex Morgan</label>' +
      '<label class="cal"><span class="swatch green"></span>Tasks</label><label class="cal"><span class="swatch purple"></span>Birthdays</label></div></nav>';
  }

  function chipLabel(e) {
    return e.title + ", " + longDay(e.start.slice(0, 10)) + ", " + clock(e.start) + " to " + clock(e.end);
  }

  function weekView(st, r) {
    const start = weekStart(r.date);
    let head = '<div class="wk-head"><div class="gutter"></div>';
    let cols = "";
    for (let i = 0; i < 7; i++) {
      const day = addDays(start, i);
      const allDay = eventsOn(st, day).filter(function (e) { return e.allDay; }).map(function (e) {
        return '<div class="allday-chip" role="button" tabindex="0" aria-label="' + esc(e.title + ", all day") + '" data-action="details" data-id="' + e.id + '" data-halo-id="event-' + e.id + '">' + esc(e.title || "(No title)") + "</div>";
      }).join("");
      head += '<div class="wk-day' + (day === SITE.today ? " today" : "") + '"><span class="dow">' + DAYS[i].toUpperCase() + '</span><span class="dom">' + toDate(day).getUTCDate() + "</span>" + allDay + "</div>";
      const evs = eventsOn(st, day).filter(function (e) { return !e.allDay; });
      // Greedy columns for overlapping events.
      const ends = [];
      const placed = evs.map(function (e) {
        let c = 0;
        while (ends[c] !== undefined && ends[c] > e.start) c++;
        ends[c] = e.end;
        return { e: e, col: c };
      });
      const ncol = Math.max(1, ends.length);
      const chips = seededOrder(placed, day).map(function (p) {
        const e = p.e;
        const top = minutes(e.start) * HOUR_PX / 60;
        const endMin = e.end.slice(0, 10) === day ? minutes(e.end) : 24 * 60;
        const height = Math.max(18, (endMin - minutes(e.start)) * HOUR_PX / 60 - 2);
        const w = 100 / ncol;
        return '<div class="chip' + (height < 36 ? " short" : "") + '" role="button" tabindex="0" aria-label="' + esc(chipLabel(e)) + '" data-action="details" data-id="' + e.id +
          '" data-halo-id="event-' + e.id + '" style="top:' + top + "px;height:" + height + "px;left:calc(" + (p.col * w) + "% + 1px);width:calc(" + w + '% - 6px)"><b>' +
          esc(e.title || "(No title)") + "</b>" + (height < 36 ? ", " : "<br>") + clock(e.start) + " \u2013 " + clock(e.end) + "</div>";
      }).join("");
      cols += '<div class="wk-col" data-action="slot" data-day="' + day + '">' + chips + "</div>";
    }
    head += "</div>";
    let hours = "";
    for (let h = 0; h < 24; h++) hours += '<div class="hour-label">' + (h === 0 ? "" : (h % 12 || 12) + " " + (h < 12 ? "AM" : "PM")) + "</div>";
    return '<section class="panel">' + head + '<div class="wk-scroll" data-halo-scroll="week"><div class="wk-grid"><div class="gutter hours">' + hours + "</div>" + cols + "</div></div></section>";
  }

  function monthView(st, r) {
    const first = monthStart(r.date);
    const start = weekStart(first);
    let cells = DAYS.map(function (d) { return '<div class="mo-h">' + d.toUpperCase() + "</div>"; }).join("");
    for (let i = 0; i < 42; i++) {
      const day = addDays(start, i);
      const evs = eventsOn(st, day);
      const chips = evs.slice(0, 3).map(function (e) {
        return '<div class="mo-chip" role="button" tabindex="0" aria-label="' + esc(chipLabel(e)) + '" data-action="details" data-id="' + e.id + '" data-halo-id="event-' + e.id +
          '"><span class="dot"></span>' + clock(e.start) + " <b>" + esc(e.title || "(No title)") + "</b></div>";
      }).join("") + (evs.length > 3 ? '<div class="more">' + (evs.length - 3) + " more</div>" : "");
      cells += '<div class="mo-cell' + (day.slice(0, 7) !== first.slice(0, 7) ? " other" : "") + (day === SITE.today ? " today" : "") + '" data-action="day" data-day="' + day + '">' +
        '<span class="mo-num">' + (toDate(day).getUTCDate() === 1 ? MONTHS[toDate(day).getUTCMonth()].slice(0, 3) + " 1" : toDate(day).getUTCDate()) + "</span>" + chips + "</div>";
    }
    return '<section class="panel"><div class="mo-grid">' + cells + "</div></section>";
  }

  function detailsCard(st, view) {
    const e = view.details && events(st)[view.details];
    if (!e) return "";
    const guests = (e.guests || []).map(function (g) { return '<div class="guest">' + esc(g) + "</div>"; }).join("");
    return '<div class="card" role="dialog" aria-label="Event details"><div class="card-tools">' +
      '<button class="icon-btn" aria-label="Edit event" data-action="edit" data-id="' + e.id + '" data-halo-id="edit-event">' + icon("edit", 20, "#444746") + "</button>" +
      '<button class="icon-btn" aria-label="Delete event" data-action="delete" data-id="' + e.id + '" data-halo-id="delete-event">' + icon("trash", 20, "#444746") + "</button>" +
      '<button class="icon-btn" aria-label="Close" data-action="close-details" data-halo-id="close-details">' + icon("close", 20, "#444746") + "</button></div>" +
      '<div class="card-row"><span class="swatch big"></span><div><div class="card-title">' + esc(e.title || "(No title)") + "</div><div>" +
      (e.allDay ? longDay(e.start.slice(0, 10)) + (e.end.slice(0, 10) !== e.start.slice(0, 10) ? " \u2013 " + longDay(e.end.slice(0, 10)) : "") + " \u00b7 All day" :
        longDay(e.start.slice(0, 10)) + " \u00b7 " + clock(e.start) + " \u2013 " + clock(e.end)) + (e.recurrence === "weekdays" ? "<div>Every weekday (Monday to Friday)</div>" : "") + "</div></div></div>" +
      (e.location ? '<div class="card-row">' + icon("home", 20, "#444746") + "<div>" + esc(e.location) + "</div></div>" : "") +
      (e.description ? '<div class="card-row">' + icon("notes", 20, "#444746") + '<div class="desc">' + esc(e.description) + "</div></div>" : "") +
      (guests ? '<div class="card-row">' + icon("people", 20, "#444746") + "<div>" + (e.guests.length) + " guest" + (e.guests.length > 1 ? "s" : "") + guests + "</div></div>" : "") +
      "</div>";
  }

  function editorDialog(view) {
    const ed = view.editor;
    if (!ed) return "";
    function field(name, label, value, placeholder) {
      return '<label class="ed-field"><span>' + label + '</span><input type="text" data-halo-id="event-' + name + '" data-editor="' + name + '" aria-label="' + label +
        '" placeholder="' + esc(placeholder) + '" value="' + esc(value) + '" autocomplete="off"></label>';
    }
    return '<div class="scrim"></div><div class="editor" role="dialog" aria-label="' + (ed.id ? "Edit event" : "New event") + '">' +
      '<div class="ed-head"><span>' + (ed.id ? "Edit event" : "New event") + '</span><button class="icon-btn" aria-label="Cancel" data-action="cancel" data-halo-id="cancel-event">' + icon("close", 20, "#444746") + "</button></div>" +
      '<input class="ed-title" type="text" data-halo-id="event-title" data-editor="title" aria-label="Title" placeholder="Add title" value="' + esc(ed.title) + '" autocomplete="off">' +
      '<div class="ed-row">' + icon("clock", 20, "#444746") + field("date", "Date", ed.date, "YYYY-MM-DD") + field("start", "Start", ed.start, "HH:MM") + field("end", "End", ed.end, "HH:MM") + "</div>" +
      '<div class="ed-row"><span class="ed-icon-gap"></span><label class="ed-check"><input type="checkbox" data-halo-id="event-allday" data-editor="allDay" aria-label="All day"' + (ed.allDay ? " checked" : "") +
      "><span>All day</span></label>" +
      '<label class="ed-check"><input type="checkbox" data-halo-id="event-repeat" data-editor="repeatWeekdays" aria-label="Repeat every weekday (Monday to Friday)"' + (ed.repeatWeekdays ? " checked" : "") +
      "><span>Every weekday</span></label>" + field("end-date", "End date", ed.endDate, "same day").replace('data-editor="end-date"', 'data-editor="endDate"') + "</div>" +
      '<div class="ed-row">' + icon("home", 20, "#444746") + field("location", "Location", ed.location, "Add location") + "</div>" +
      '<div class="ed-row">' + icon("people", 20, "#444746") + field("guests", "Guests", ed.guests, "Add guests (emails, comma separated)") + "</div>" +
      '<div class="ed-row top">' + icon("notes", 20, "#444746") + '<label class="ed-field wide"><span>Description</span><textarea data-halo-id="event-description" data-editor="description" aria-label="Description" placeholder="Add description">' +
      esc(ed.description) + "</textarea></label></div>" +
      (ed.error ? '<div class="ed-error" role="alert">' + esc(ed.error) + "</div>" : "") +
      '<div class="ed-foot"><button class="save-btn" data-action="save" data-halo-id="save-event">Save</button></div></div>';
  }

  function snackbar(st) {
    const msg = st.ui.snackbar.message;
    if (!msg) return "";
    return '<div class="snackbar" role="status"><span>' + esc(msg) + '</span><button class="icon-btn small" aria-label="Dismiss" data-action="dismiss" data-halo-id="snackbar-close">' +
      icon("close", 18, "#e3e3e3") + "</button></div>";
  }

  /* Perturbed starts: under a non-zero episode seed the week view lists a day's events in another
   * document (and accessibility tree) order, their places on the grid unchanged, and the main panel
   * moves by a few pixels; seed 0 keeps today's page exactly. */
  function episodeSeed() {
    return Number(HALO.meta().seed || 0);
  }
  function seededOrder(list, day) {
    const seed = episodeSeed();
    return seed ? HALO.rng(seed * 31 + Number(day.replace(/-/g, "")) % 100000).shuffle(list) : list;
  }
  function offsetLayout() {
    const seed = episodeSeed();
    const panel = seed ? document.querySelector(".panel") : null;
    if (!panel) return;
    const r = HALO.rng(seed ^ 0x1a7);
    panel.style.marginTop = (2 + r.int(9)) + "px";
    panel.style.marginLeft = (2 + r.int(9)) + "px";
  }

  function render() {
    const st = HALO.state();
    const view = HALO.view();
    const r = route();
    document.title = "GoCalendar - " + (r.mode === "week" ? "Week of " + longDay(weekStart(r.date)) : MONTHS[toDate(r.date).getUTCMonth()] + " " + r.date.slice(0, 4));
    document.getElementById("app").innerHTML = topbar(r) + '<div class="body">' + sidebar(r) + (r.mode === "week" ? weekView(st, r) : monthView(st, r)) + "</div>" +
      detailsCard(st, view) + editorDialog(view) + snackbar(st);
    offsetLayout();
    HALO.restoreUi({ week: 7 * HOUR_PX });  // the week view opens at 7 AM, like Google Calendar
  }

  // ---- mutations -------------------------------------------------------------------------------
  function update(fn) { const st = HALO.state(); fn(st); HALO.commit(st); return st; }

  function openEditor(fields) {
    const ed = Object.assign({ id: null, title: "", date: route().date, start: "09:00", end: "10:00", endDate: "", allDay: false, repeatWeekdays: false, location: "", description: "", guests: "", error: "" }, fields);
    HALO.patchView({ editor: ed, details: null, focus: "event-title" });
    render();
  }

  function save() {
    HALO.milestone("save_clicked");
    const ed = HALO.view().editor;
    const date = parseDate(ed.date), start = ed.allDay ? "00:00" : parseTime(ed.start), end = ed.allDay ? "23:59" : parseTime(ed.end);
    const endDate = String(ed.endDate || "").trim() ? parseDate(ed.endDate) : date;
    let error = "";
    if (!date) error = 'Could not read the date "' + ed.date + '". Use YYYY-MM-DD, e.g. 2024-07-18.';
    else if (!endDate) error = 'Could not read the end date "' + ed.endDate + '". Use YYYY-MM-DD, e.g. 2024-07-18.';
    else if (!ed.allDay && endDate !== date) error = "Only all-day events can span several days.";
    else if (endDate < date) error = "The event must end after it starts.";
    else if (!start || !end) error = "Could not read the time. Use HH:MM, e.g. 14:30 or 2:30pm.";
    else if (!ed.allDay && end <= start) error = "The event must end after it starts.";
    if (error) {
      ed.error = error;
      HALO.patchView({ editor: ed });
      render();
      return;
    }
    const guests = String(ed.guests || "").split(/[,;\s]+/).map(function (g) { return g.trim().toLowerCase(); }).filter(Boolean);
    const isNew = !ed.id;
    update(function (st) {
      let id = ed.id;
      if (isNew) { let n = 1; while (st.calendar.events["new-" + n]) n++; id = "new-" + n; }
      const record = {
        id: id, title: ed.title.trim(), start: date + "T" + start + ":00", end: endDate + "T" + end + ":00",
        description: ed.description, guests: guests, location: String(ed.location || "").trim(),
      };
      if (ed.allDay) record.allDay = true;
      if (ed.repeatWeekdays && !ed.allDay) record.recurrence = "weekdays";
      st.calendar.events[id] = stored(record);
      st.ui.snackbar.message = isNew ? "Event created" : "Event saved";
    });
    if (isNew) HALO.milestone("event_created");
    HALO.patchView({ editor: null, focus: null });
    go(route().mode, date);
  }

  // ---- events ----------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    if (!el) return;
    const action = el.getAttribute("data-action");
    const id = el.getAttribute("data-id");
    const r = route();
    const view = HALO.view();
    if (view.editor && ["save", "cancel"].indexOf(action) === -1) return;  // the editor is modal
    if (action === "today") go(r.mode, SITE.today);
    else if (action === "prev" || action === "next") {
      const k = action === "prev" ? -1 : 1;
      go(r.mode, r.mode === "week" ? addDays(r.date, 7 * k) : addMonths(r.date, k));
    } else if (action === "mode") go(el.getAttribute("data-mode"), r.date);
    else if (action === "create") {
      HALO.milestone("create_clicked");
      openEditor({ date: weekStart(r.date) === weekStart(SITE.today) ? SITE.today : r.date });
    } else if (action === "slot") {
      // A click on an empty slot of the week grid opens the editor at that hour.
      if (view.details) { HALO.patchView({ details: null }); render(); return; }
      const rect = el.getBoundingClientRect();
      const hour = Math.min(23, Math.floor((e.clientY - rect.top) / HOUR_PX));
      HALO.milestone("create_clicked");
      openEditor({ date: el.getAttribute("data-day"), start: String(hour).padStart(2, "0") + ":00", end: String(Math.min(hour + 1, 23)).padStart(2, "0") + (hour + 1 > 23 ? ":59" : ":00") });
    } else if (action === "day") {
      if (view.details) { HALO.patchView({ details: null }); render(); return; }
      go("week", el.getAttribute("data-day"));
    } else if (action === "details") {
      e.stopPropagation();
      HALO.milestone("event_opened");
      HALO.patchView({ details: id });
      render();
    } else if (action === "close-details") {
      HALO.patchView({ details: null });
      render();
    } else if (action === "edit") {
      const ev = events(HALO.state())[id];
      openEditor({
        id: id, title: ev.title, date: ev.start.slice(0, 10), start: ev.start.slice(11, 16), end: ev.end.slice(11, 16), description: ev.description,
        guests: (ev.guests || []).join(", "), location: ev.location || "", allDay: Boolean(ev.allDay), repeatWeekdays: ev.recurrence === "weekdays", endDate: ev.allDay ? ev.end.slice(0, 10) : "",
      });
    } else if (action === "delete") {
      update(function (st) { delete st.calendar.events[id]; st.ui.snackbar.message = "Event deleted"; });
      HALO.milestone("event_deleted");
      HALO.patchView({ details: null });
      render();
    } else if (action === "cancel") {
      HALO.patchView({ editor: null, focus: null });
      render();
    } else if (action === "save") save();
    else if (action === "dismiss") {
      update(function (st) { st.ui.snackbar.message = ""; });
      render();
    }
  });

  document.addEventListener("input", function (e) {
    const field = e.target.getAttribute("data-editor");
    if (!field) return;
    const ed = HALO.view().editor;
    ed[field] = e.target.type === "checkbox" ? e.target.checked : e.target.value;
    HALO.patchView({ editor: ed });
    if (field === "title" && e.target.value.trim()) HALO.milestone("title_entered");
    if (field === "date" || field === "start" || field === "end") HALO.milestone("datetime_set");
  });

  document.addEventListener("keydown", function (e) {
    if (e.key === "Enter" && e.target.getAttribute && e.target.getAttribute("data-editor") && e.target.tagName === "INPUT") save();
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
