/* GoMail app: a Gmail-like single page. Routes (location.hash): #/inbox, #/starred, #/sent,
 * #/drafts, #/trash, #/search/<query>, #/email/<id>. Mail lives in HALO.state(); the open compose
 * window, its fields, the list selection and the search box live in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const icon = HALO.icon;
  const SITE = HALO.site();
  const FOLDERS = [
    ["inbox", "Inbox", "inbox"], ["starred", "Starred", "star"], ["snoozed", "Snoozed", "clock"], ["sent", "Sent", "send"],
    ["drafts", "Drafts", "draft"], ["trash", "Trash", "trash"],
  ];
  const PAGE_SIZE = 50;  // rows per list page, as Gmail: "select all" selects the page shown
  // Snooze choices: "today" is Monday 2024-07-15 and the clock never moves.
  const SNOOZE = [
    ["tomorrow", "Tomorrow", "Tue, Jul 16, 8:00 AM", "2024-07-16T08:00:00"],
    ["weekend", "This weekend", "Sat, Jul 20, 8:00 AM", "2024-07-20T08:00:00"],
    ["next-week", "Next week", "Mon, Jul 22, 8:00 AM", "2024-07-22T08:00:00"],
  ];
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  // ---- routing -------------------------------------------------------------------------------
  function route() {
    const parts = (location.hash || "#/inbox").replace(/^#\/?/, "").split("/");
    if (parts[0] === "email" && parts[1]) return { kind: "email", id: decodeURIComponent(parts[1]) };
    if (parts[0] === "search") return { kind: "list", folder: "search", query: decodeURIComponent(parts.slice(1).join("/")) };
    const folder = FOLDERS.some(function (f) { return f[0] === parts[0]; }) ? parts[0] : "inbox";
    return { kind: "list", folder: folder };
  }
  function go(hash) {
    if (location.hash === hash) render();
    else location.hash = hash;
  }

  // ---- queries ---------------------------------------------------------------------------------
  function inFolder(m, folder) {
    if (folder === "trash") return m.trash;
    if (m.trash) return false;
    if (folder === "inbox") return !m.sent && !m.draft && !m.archived;
    if (folder === "starred") return m.starred;
    if (folder === "sent") return m.sent;
    if (folder === "drafts") return m.draft;
    return false;
  }
  function matches(m, query) {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const hay = [m.fromName, m.from, m.subject, m.content, (m.to || []).join(" ")].join(" ").toLowerCase();
    return !m.trash && words.every(function (w) { return hay.indexOf(w) !== -1; });
  }
  function listFor(st, r) {
    // Snoozed mail leaves email.emails (as in REAL's state) until its time comes; it never comes here.
    if (r.folder === "snoozed") return Object.values(st.email.snoozed || {}).sort(function (a, b) { return a.date < b.date ? 1 : -1; });
    return Object.values(st.email.emails)
      .filter(function (m) { return r.folder === "search" ? matches(m, r.query) : inFolder(m, r.folder); })
      .sort(function (a, b) { return a.date < b.date ? 1 : a.date > b.date ? -1 : (a.id < b.id ? -1 : 1); });
  }
  function shortDate(iso) {
    const d = iso.slice(0, 10);
    if (d === SITE.now.slice(0, 10)) {
      let h = Number(iso.slice(11, 13));
      const ampm = h >= 12 ? "PM" : "AM";
      h = h % 12 || 12;
      return h + ":" + iso.slice(14, 16) + " " + ampm;
    }
    return MONTHS[Number(iso.slice(5, 7)) - 1] + " " + Number(iso.slice(8, 10));
  }
  function longDate(iso) {
    return MONTHS[Number(iso.slice(5, 7)) - 1] + " " + Number(iso.slice(8, 10)) + ", " + iso.slice(0, 4) + ", " + shortDate(SITE.now.slice(0, 10) + iso.slice(10));
  }

  // ---- rendering -------------------------------------------------------------------------------
  function topbar(view) {
    return '<header class="topbar">' +
      '<button class="icon-btn" aria-label="Main menu" data-halo-id="menu">' + icon("menu", 24, "#444746") + "</button>" +
      '<div class="logo"><svg width="40" height="30" viewBox="0 0 40 30" aria-hidden="true"><path d="M3 28V6l17 12L37 6v22" fill="none" stroke="#ea4335" stroke-width="5" stroke-linejoin="round"/>' +
      '<path d="M3 6l17 12" stroke="#c5221f" stroke-width="5"/><path d="M37 6v22" stroke="#34a853" stroke-width="5"/><path d="M3 6v22" stroke="#4285f4" stroke-width="5"/></svg><span>GoMail</span></div>' +
      '<form class="search" data-action="search" role="search"><button type="submit" class="icon-btn small" aria-label="Search" data-halo-id="search-button">' + icon("search", 22, "#444746") +
      '</button><input type="text" placeholder="Search mail" aria-label="Search mail" data-halo-id="search" value="' + esc(view.search || "") + '" autocomplete="off"></form>' +
      '<div class="top-right"><span class="icon-btn">' + icon("help", 24, "#444746") + '</span><span class="icon-btn">' + icon("settings", 24, "#444746") +
      '</span><span class="icon-btn">' + icon("apps", 24, "#444746") + '</span><span class="avatar" aria-label="Alex Morgan">A</span></div></header>';
  }

  function sidebar(st, r) {
    const unread = Object.values(st.email.emails).filter(function (m) { return inFolder(m, "inbox") && !m.isRead; }).length;
    const drafts = Object.values(st.email.emails).filter(function (m) { return inFolder(m, "drafts"); }).length;
    const current = r.kind === "list" ? r.folder : HALO.view().folder;
    const items = FOLDERS.map(function (f) {
      const count = f[0] === "inbox" ? unread : f[0] === "drafts" ? drafts : 0;
      return '<a class="folder' + (current === f[0] ? " active" : "") + '" href="#/' + f[0] + '" data-halo-id="folder-' + f[0] + '">' +
        icon(f[2], 20, "#444746") + '<span class="name">' + f[1] + "</span>" + (count ? '<span class="count">' + count + "</span>" : "") + "</a>";
    }).join("");
    const labels = Object.values(st.email.customLabels || {}).map(function (l) {
      return '<div class="folder label-item" data-halo-id="label-' + esc(l.id) + '"><span class="label-dot"></span><span class="name">' + esc(l.label) + "</span></div>";
    }).join("");
    return '<nav class="sidebar"><button class="compose-btn" data-action="compose" data-halo-id="compose">' + icon("edit", 22, "#041e49") +
      "<span>Compose</span></button>" + items + '<div class="labels-head"><span>Labels</span><button class="icon-btn small" aria-label="Create new label" title="Create new label" data-action="new-label" data-halo-id="new-label">' +
      icon("plus", 20, "#444746") + "</button></div>" + labels + "</nav>";
  }

  function pageOf(st, r, view) {
    const all = listFor(st, r);
    const pages = Math.max(1, Math.ceil(all.length / PAGE_SIZE));
    const page = Math.min(view.page || 0, pages - 1);
    return { all: all, page: page, pages: pages, rows: all.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE) };
  }

  function listView(st, r, view) {
    const paged = pageOf(st, r, view);
    const rows = paged.rows;
    const selected = view.selected || [];
    const allOn = rows.length > 0 && rows.every(function (m) { return selected.indexOf(m.id) !== -1; });
    let tools = '<label class="tool check"><input type="checkbox" aria-label="Select all" data-halo-id="select-all" data-action="select-all"' + (allOn ? " checked" : "") + "></label>";
    if (selected.length) {
      tools += '<button class="icon-btn" aria-label="Delete" title="Delete" data-action="bulk-delete" data-halo-id="bulk-delete">' + icon("trash", 20, "#444746") + "</button>" +
        '<button class="icon-btn" aria-label="Mark as read" title="Mark as read" data-action="bulk-read" data-halo-id="bulk-read">' + icon("mailOpen", 20, "#444746") + "</button>" +
        '<button class="icon-btn" aria-label="Mark as unread" title="Mark as unread" data-action="bulk-unread" data-halo-id="bulk-unread">' + icon("mail", 20, "#444746") + "</button>" +
        (r.folder === "snoozed" ? "" : '<button class="icon-btn" aria-label="Archive" title="Archive" data-action="bulk-archive" data-halo-id="bulk-archive">' + icon("inbox", 20, "#444746") + "</button>" +
        '<button class="icon-btn" aria-label="Snooze" title="Snooze" data-action="bulk-snooze" data-halo-id="bulk-snooze">' + icon("clock", 20, "#444746") + "</button>") +
        (view.snoozeMenu ? '<div class="menu" role="menu" aria-label="Snooze until"><div class="menu-title">Snooze until...</div>' + SNOOZE.map(function (o) {
          return '<button class="menu-item" role="menuitem" data-action="snooze" data-id="' + o[0] + '" data-halo-id="snooze-' + o[0] + '"><span>' + o[1] + '</span><span class="when">' + o[2] + "</span></button>";
        }).join("") + "</div>" : "");
    } else {
      tools += '<button class="icon-btn" aria-label="Refresh" data-halo-id="refresh" data-action="refresh">' + icon("refresh", 20, "#444746") + "</button>";
    }
    const heading = r.folder === "search" ? '<div class="search-heading">Search results for "' + esc(r.query) + '"</div>' : "";
    const items = rows.map(function (m) {
      const on = selected.indexOf(m.id) !== -1;
      const who = r.folder === "sent" || r.folder === "drafts" ? "To: " + (m.to || []).join(", ") : m.fromName;
      const label = (m.isRead ? "" : "unread, ") + who + ", " + m.subject + ", " + shortDate(m.date);
      return '<div class="row' + (m.isRead ? " read" : " unread") + (on ? " selected" : "") + '">' +
        '<label class="cell check"><input type="checkbox" aria-label="Select" data-halo-id="select-' + m.id + '" data-action="select" data-id="' + m.id + '"' + (on ? " checked" : "") + "></label>" +
        '<button class="cell star icon-btn small" aria-label="' + (m.starred ? "Starred" : "Not starred") + '" data-halo-id="star-' + m.id + '" data-action="star" data-id="' + m.id + '">' +
        (m.starred ? icon("starFilled", 20, "#f4b400") : icon("star", 20, "#9aa0a6")) + "</button>" +
        '<div class="open" role="link" tabindex="0" aria-label="' + esc(label) + '" data-halo-id="email-' + m.id + '" data-action="open" data-id="' + m.id + '">' +
        '<span class="from">' + esc(m.draft ? "Draft" : who) + '</span><span class="subject"><b>' + esc(m.subject) + '</b><span class="snippet"> - ' +
        esc(m.content.replace(/\s+/g, " ").slice(0, 120)) + '</span></span><span class="date">' + shortDate(m.date) + "</span></div></div>";
    }).join("");
    const empty = rows.length ? "" : '<div class="empty">' + (r.folder === "search" ? "No messages matched your search." : "No conversations in " + r.folder + ".") + "</div>";
    const first = paged.page * PAGE_SIZE;
    const pager = rows.length ? (first + 1) + "\u2013" + (first + rows.length) + " of " + paged.all.length : "";
    const pageButtons = paged.pages > 1 ?
      '<button class="icon-btn small" aria-label="Newer" data-action="page" data-id="' + (paged.page - 1) + '" data-halo-id="newer"' + (paged.page === 0 ? " disabled" : "") + ">" + icon("chevronLeft", 20, "#444746") + "</button>" +
      '<button class="icon-btn small" aria-label="Older" data-action="page" data-id="' + (paged.page + 1) + '" data-halo-id="older"' + (paged.page === paged.pages - 1 ? " disabled" : "") + ">" + icon("chevronRight", 20, "#444746") + "</button>" : "";
    return '<section class="panel"><div class="toolbar">' + tools + '<span class="pager">' + pager + "</span>" + pageButtons +
      '</div>' + heading + '<div class="list" data-halo-scroll="list">' + items + empty + "</div></section>";
  }

  function emailView(st, r) {
    const m = st.email.emails[r.id] || (st.email.snoozed || {})[r.id];
    if (!m) return '<section class="panel"><div class="empty">This message no longer exists.</div></section>';
    const body = esc(m.content).split("\n").join("<br>");
    return '<section class="panel"><div class="toolbar">' +
      '<button class="icon-btn" aria-label="Back" data-action="back" data-halo-id="back">' + icon("back", 20, "#444746") + "</button>" +
      (m.trash || m.archived ? "" : '<button class="icon-btn" aria-label="Archive" title="Archive" data-action="archive" data-id="' + m.id + '" data-halo-id="archive">' + icon("inbox", 20, "#444746") + "</button>") +
      (m.trash ? "" : '<button class="icon-btn" aria-label="Delete" title="Delete" data-action="delete" data-id="' + m.id + '" data-halo-id="delete">' + icon("trash", 20, "#444746") + "</button>") +
      '<button class="icon-btn" aria-label="Mark as unread" title="Mark as unread" data-action="mark-unread" data-id="' + m.id + '" data-halo-id="mark-unread">' + icon("mail", 20, "#444746") + "</button>" +
      '<button class="icon-btn" aria-label="' + (m.starred ? "Starred" : "Not starred") + '" data-action="star" data-id="' + m.id + '" data-halo-id="star">' +
      (m.starred ? icon("starFilled", 20, "#f4b400") : icon("star", 20, "#444746")) + "</button></div>" +
      '<div class="message" data-halo-scroll="message"><h1 class="msg-subject">' + esc(m.subject) + "</h1>" +
      '<div class="msg-head"><span class="avatar big">' + esc(m.fromName.slice(0, 1)) + '</span><div class="msg-who"><b>' + esc(m.fromName) +
      '</b> <span class="addr">&lt;' + esc(m.from) + '&gt;</span><div class="to">to ' + esc((m.to || []).join(", ")) +
      ((m.cc || []).length ? ", cc " + esc(m.cc.join(", ")) : "") + '</div></div><span class="msg-date">' + longDate(m.date) + "</span></div>" +
      '<div class="msg-body">' + body + "</div>" +
      '<div class="msg-actions"><button class="pill" data-action="reply" data-id="' + m.id + '" data-halo-id="reply">' + icon("reply", 18, "#444746") + "Reply</button></div></div></section>";
  }

  function composeView(c) {
    if (!c) return "";
    const err = c.error ? '<div class="compose-error" role="alert">' + esc(c.error) + "</div>" : "";
    return '<div class="compose" role="dialog" aria-label="New Message"><div class="compose-head"><span>' + esc(c.replyTo ? "Reply" : "New Message") + "</span>" +
      '<button class="icon-btn small light" aria-label="Save & close" data-action="close-compose" data-halo-id="close-compose">' + icon("close", 18, "#444746") + "</button></div>" +
      '<label class="field"><span>To</span><input type="text" data-halo-id="to" data-compose="to" aria-label="To" value="' + esc(c.to) + '" autocomplete="off"></label>' +
      '<label class="field"><span>Cc</span><input type="text" data-halo-id="cc" data-compose="cc" aria-label="Cc" value="' + esc(c.cc) + '" autocomplete="off"></label>' +
      '<label class="field"><input type="text" data-halo-id="subject" data-compose="subject" aria-label="Subject" placeholder="Subject" value="' + esc(c.subject) + '" autocomplete="off"></label>' +
      '<textarea data-halo-id="body" data-compose="body" aria-label="Message Body">' + esc(c.body) + "</textarea>" + err +
      '<div class="compose-foot"><button class="send-btn" data-action="send" data-halo-id="send">Send</button>' +
      '<button class="icon-btn" aria-label="Discard draft" data-action="discard" data-halo-id="discard">' + icon("trash", 20, "#444746") + "</button></div></div>";
  }

  function labelDialog(d) {
    if (!d) return "";
    const err = d.error ? '<div class="compose-error" role="alert">' + esc(d.error) + "</div>" : "";
    return '<div class="modal-backdrop"><div class="modal" role="dialog" aria-label="New label"><h2>New label</h2>' +
      '<label class="field"><span>Please enter a new label name:</span><input type="text" data-halo-id="label-name" aria-label="New label name" value="' + esc(d.name) + '" autocomplete="off"></label>' + err +
      '<div class="modal-foot"><button class="pill" data-action="label-cancel" data-halo-id="label-cancel">Cancel</button>' +
      '<button class="send-btn" data-action="label-create" data-halo-id="label-create">Create</button></div></div></div>';
  }

  function snackbar(st) {
    const msg = st.ui.snackbar.message;
    if (!msg) return "";
    return '<div class="snackbar" role="status"><span>' + esc(msg) + '</span><button class="icon-btn small dark" aria-label="Dismiss" data-action="dismiss" data-halo-id="snackbar-close">' +
      icon("close", 18, "#e3e3e3") + "</button></div>";
  }

  /* Perturbed starts: a non-zero episode seed shifts the main panel by a few pixels, so a policy
   * cannot win by remembering where things are on screen; seed 0 keeps today's layout exactly. */
  function offsetLayout() {
    const seed = Number(HALO.meta().seed || 0);
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
    if (r.kind === "list" && view.folder !== r.folder) {
      HALO.patchView({ folder: r.folder, selected: [], page: 0, snoozeMenu: false });
    }
    const main = r.kind === "email" ? emailView(st, r) : listView(st, r, HALO.view());
    document.title = (r.kind === "email" && st.email.emails[r.id] ? st.email.emails[r.id].subject : (r.folder === "search" ? "Search results" : r.folder.charAt(0).toUpperCase() + r.folder.slice(1))) + " - GoMail";
    document.getElementById("app").innerHTML = topbar(view) + '<div class="body">' + sidebar(st, r) + main + "</div>" + composeView(view.compose) + labelDialog(view.labelDialog) + snackbar(st);
    if (r.kind === "list" && r.folder === "search" && listFor(st, r).length) HALO.milestone("search_results");
    offsetLayout();
    HALO.restoreUi();
  }

  // ---- mutations -------------------------------------------------------------------------------
  function update(fn) {
    const st = HALO.state();
    fn(st);
    HALO.commit(st);
    return st;
  }
  function snack(st, msg) {
    st.ui.snackbar.message = msg;
  }
  function nextId(st, prefix) {
    let n = 1;
    while (st.email.emails[prefix + n]) n++;
    return prefix + n;
  }
  function clockAfter(st) {
    // The clock does not run: each new message is one minute after the site's "now" per message sent.
    const n = Object.keys(st.email.emails).filter(function (id) { return id.indexOf("new-") === 0 || id.indexOf("draft-") === 0; }).length;
    const minutes = 30 + n;
    return SITE.now.slice(0, 11) + "10:" + String(Math.min(minutes, 59)).padStart(2, "0") + ":00";
  }
  function addresses(text) {
    return String(text || "").split(/[,;\s]+/).map(function (s) { return s.trim(); }).filter(Boolean);
  }
  function openCompose(fields) {
    const c = Object.assign({ to: "", cc: "", subject: "", body: "", replyTo: null, draftId: null, error: "" }, fields || {});
    HALO.patchView({ compose: c, focus: c.to ? "body" : "to" });
    HALO.milestone("compose_opened");
    if (c.to) HALO.milestone("recipient_filled");
    if (c.subject) HALO.milestone("subject_filled");
    render();
  }
  function closeCompose(saveDraft) {
    const c = HALO.view().compose;
    if (!c) return;
    if (saveDraft && (c.to || c.cc || c.subject || c.body)) {
      update(function (st) {
        const id = c.draftId || nextId(st, "draft-");
        st.email.emails[id] = {
          id: id, from: SITE.me.email, fromName: SITE.me.name, to: addresses(c.to), cc: addresses(c.cc),
          subject: c.subject, content: c.body, date: c.draftId ? st.email.emails[id].date : clockAfter(st),
          isRead: true, starred: false, trash: false, sent: false, draft: true,
        };
        snack(st, "Draft saved");
      });
    }
    HALO.patchView({ compose: null, focus: null });
    render();
  }
  function send() {
    HALO.milestone("send_clicked");
    const c = HALO.view().compose;
    const to = addresses(c.to);
    const cc = addresses(c.cc);
    const bad = to.concat(cc).filter(function (a) { return !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(a); });
    if (!to.length || bad.length) {
      c.error = !to.length ? "Please specify at least one recipient." : 'The address "' + bad[0] + '" in the "To" or "Cc" field was not recognized.';
      HALO.patchView({ compose: c });
      render();
      return;
    }
    update(function (st) {
      const id = nextId(st, "new-");
      st.email.emails[id] = {
        id: id, from: SITE.me.email, fromName: SITE.me.name, to: to, cc: cc, subject: c.subject || "(no subject)",
        content: c.body, date: clockAfter(st), isRead: true, starred: false, trash: false, sent: true, draft: false,
        inReplyTo: c.replyTo, isReply: Boolean(c.replyTo),
      };
      if (c.draftId) delete st.email.emails[c.draftId];
      snack(st, "Message sent");
    });
    HALO.milestone("message_sent");
    HALO.patchView({ compose: null, focus: null });
    render();
  }
  function setFlag(ids, flag, value, message) {
    update(function (st) {
      ids.forEach(function (id) { if (st.email.emails[id]) st.email.emails[id][flag] = value; });
      if (message) snack(st, message);
    });
  }

  function count(n, what) {
    return n === 1 ? "Conversation " + what : n + " conversations " + what;
  }
  function snooze(ids, key) {
    const option = SNOOZE.filter(function (o) { return o[0] === key; })[0];
    update(function (st) {
      st.email.snoozed = st.email.snoozed || {};
      ids.forEach(function (id) {
        const m = st.email.emails[id];
        if (!m) return;
        st.email.snoozed[id] = Object.assign({}, m, { snoozed: true, snoozeUntil: option[3] });
        delete st.email.emails[id];
      });
      snack(st, count(ids.length, "snoozed until " + option[2]));
    });
  }
  function createLabel() {
    const d = HALO.view().labelDialog;
    const name = (d.name || "").trim();
    const labels = HALO.state().email.customLabels || {};
    const taken = Object.values(labels).some(function (l) { return l.label.toLowerCase() === name.toLowerCase(); });
    if (!name || taken) {
      HALO.patchView({ labelDialog: Object.assign({}, d, { error: !name ? "Please enter a label name." : 'The label name "' + name + '" already exists.' }) });
      render();
      return;
    }
    update(function (st) {
      st.email.customLabels = st.email.customLabels || {};
      let n = 1;
      while (st.email.customLabels[String(n)]) n++;
      st.email.customLabels[String(n)] = { id: String(n), label: name };
      snack(st, 'Label "' + name + '" created.');
    });
    HALO.milestone("label_created");
    HALO.patchView({ labelDialog: null, focus: null });
    render();
  }

  // ---- events ----------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    if (!el) return;
    const action = el.getAttribute("data-action");
    const id = el.getAttribute("data-id");
    const view = HALO.view();
    if (action === "search") return;  // the form's submit event handles it
    if (action === "select" || action === "select-all") {
      let selected = view.selected || [];
      if (action === "select") {
        selected = el.checked ? selected.concat([id]) : selected.filter(function (x) { return x !== id; });
      } else {
        selected = el.checked ? pageOf(HALO.state(), route(), view).rows.map(function (m) { return m.id; }) : [];
      }
      HALO.patchView({ selected: selected });
      render();
      return;
    }
    e.preventDefault();
    if (action === "open") {
      const m = HALO.state().email.emails[id];
      if (m && m.draft && !m.trash) {
        openCompose({ to: m.to.join(", "), cc: (m.cc || []).join(", "), subject: m.subject, body: m.content, draftId: m.id });
        return;
      }
      setFlag([id], "isRead", true);
      go("#/email/" + encodeURIComponent(id));
    } else if (action === "star") {
      const m = HALO.state().email.emails[id];
      setFlag([id], "starred", !m.starred);
      if (!m.starred) HALO.milestone("email_starred");
      render();
    } else if (action === "back") {
      go("#/" + (view.folder || "inbox") + (view.folder === "search" ? "/" + encodeURIComponent(view.search || "") : ""));
    } else if (action === "delete") {
      setFlag([id], "trash", true, "Conversation moved to Trash.");
      HALO.milestone("email_deleted");
      go("#/" + (view.folder || "inbox") + (view.folder === "search" ? "/" + encodeURIComponent(view.search || "") : ""));
    } else if (action === "mark-unread") {
      setFlag([id], "isRead", false, "Conversation marked as unread.");
      HALO.milestone("marked_unread");
      go("#/" + (view.folder || "inbox") + (view.folder === "search" ? "/" + encodeURIComponent(view.search || "") : ""));
    } else if (action === "bulk-delete") {
      const n = view.selected.length;
      setFlag(view.selected, "trash", true, n === 1 ? "Conversation moved to Trash." : n + " conversations moved to Trash.");
      if (n) HALO.milestone("email_deleted");
      HALO.patchView({ selected: [] });
      render();
    } else if (action === "bulk-read" || action === "bulk-unread") {
      const read = action === "bulk-read";
      const n = view.selected.length;
      setFlag(view.selected, "isRead", read, (n === 1 ? "Conversation" : n + " conversations") + " marked as " + (read ? "read." : "unread."));
      if (n) HALO.milestone(read ? "marked_read" : "marked_unread");
      HALO.patchView({ selected: [] });
      render();
    } else if (action === "bulk-archive") {
      setFlag(view.selected, "archived", true, count(view.selected.length, "archived."));
      if (view.selected.length) HALO.milestone("email_archived");
      HALO.patchView({ selected: [] });
      render();
    } else if (action === "archive") {
      setFlag([id], "archived", true, "Conversation archived.");
      HALO.milestone("email_archived");
      go("#/" + (view.folder || "inbox") + (view.folder === "search" ? "/" + encodeURIComponent(view.search || "") : ""));
    } else if (action === "bulk-snooze") {
      HALO.patchView({ snoozeMenu: !view.snoozeMenu });
      render();
    } else if (action === "snooze") {
      snooze(view.selected, id);
      if (view.selected.length) HALO.milestone("email_snoozed");
      HALO.patchView({ selected: [], snoozeMenu: false });
      render();
    } else if (action === "page") {
      HALO.patchView({ page: Number(id), selected: [] });
      render();
    } else if (action === "new-label") {
      HALO.patchView({ labelDialog: { name: "", error: "" }, focus: "label-name" });
      render();
    } else if (action === "label-create") {
      createLabel();
    } else if (action === "label-cancel") {
      HALO.patchView({ labelDialog: null, focus: null });
      render();
    } else if (action === "refresh") {
      render();
    } else if (action === "compose") {
      if (!view.compose) openCompose({});
    } else if (action === "reply") {
      const m = HALO.state().email.emails[id];
      openCompose({ to: m.sent ? m.to.join(", ") : m.from, subject: /^re:/i.test(m.subject) ? m.subject : "Re: " + m.subject, replyTo: m.id });
    } else if (action === "send") {
      send();
    } else if (action === "close-compose") {
      closeCompose(true);
    } else if (action === "discard") {
      closeCompose(false);
    } else if (action === "dismiss") {
      update(function (st) { snack(st, ""); });
      render();
    }
  });

  document.addEventListener("submit", function (e) {
    e.preventDefault();
    const q = HALO.view().search || "";
    HALO.patchView({ focus: null });
    go(q.trim() ? "#/search/" + encodeURIComponent(q.trim()) : "#/inbox");
  });

  document.addEventListener("input", function (e) {
    const t = e.target;
    if (t.getAttribute("data-halo-id") === "search") {
      HALO.patchView({ search: t.value });
      return;
    }
    if (t.getAttribute("data-halo-id") === "label-name") {
      HALO.patchView({ labelDialog: Object.assign({}, HALO.view().labelDialog, { name: t.value }) });
      return;
    }
    const field = t.getAttribute("data-compose");
    if (!field) return;
    const c = HALO.view().compose;
    c[field] = t.value;
    HALO.patchView({ compose: c });
    if (field === "to" && t.value.trim()) HALO.milestone("recipient_filled");
    if (field === "subject" && t.value.trim()) HALO.milestone("subject_filled");
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
