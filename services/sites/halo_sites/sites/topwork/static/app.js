/* Topwork app: an Upwork-like client dashboard on one page. Routes (location.hash):
 *   #/jobs                    Sarah's job posts (also #/)
 *   #/job/<id>                a job post with its proposals; remove the posting
 *   #/post-job                the job post form
 *   #/talent[/<query>]        find talent: search, save, invite to a job
 *   #/freelancer/<id>         a profile: save, message, invite, hire
 *   #/messages[/<id>]         conversations and the composer
 *   #/offer/<id>[/<jobId>]    send an offer (hire or rehire)
 *   #/hires                   past and current contracts (Rehire)
 *   #/saved                   saved talent
 * Data lives in HALO.state() (shape in data.js); form drafts, the open dialog and the snackbar in
 * HALO.view(). The episode seed reorders the talent and job lists, adds a few unrelated
 * freelancers and shifts the page a little; seed 0 is the canonical page. */
(function () {
  "use strict";
  const esc = HALO.esc;
  const icon = HALO.icon;
  const SITE = HALO.site();
  const ME = SITE.me.name;
  const CLIENT = "Client"; // REAL's author of invitations and offers (its scripts look for it)
  const DEFAULT_INVITE = "Hello! I'd like to personally invite you to apply to my job. Please review the job post and apply if you're available.";
  const SIZES = [["large", "Large", "Longer term or complex initiatives"], ["medium", "Medium", "Well-defined projects"], ["small", "Small", "Quick and straightforward tasks"]];
  const TIMES = ["More than 6 months", "3 to 6 months", "1 to 3 months"];
  const LEVELS = [["entry", "Entry", "Looking for someone relatively new to this field"], ["intermediate", "Intermediate", "Looking for substantial experience in this field"], ["expert", "Expert", "Looking for comprehensive and deep expertise in this field"]];
  const HIRES = [["yes", "Yes, this could become full time"], ["no", "No, not at this time"]];
  const CATEGORIES = ["Web Development", "Mobile Development", "Data Science & Analytics", "Accounting & Consulting", "Design & Creative", "Writing", "Admin Support"];

  function slug(s) {
    return String(s).toLowerCase().replace(/&/g, "and").replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  }

  // ---- seed: order, extra people, offset ----------------------------------------------------------
  function seed() {
    return Number(HALO.meta().seed || 0) >>> 0;
  }
  function hashId(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
    return h;
  }
  function seededOrder(list, salt) {
    // Seed 0 keeps the given order; another seed gives every id a fixed random key.
    const s = seed();
    if (!s) return list;
    const key = {};
    list.forEach(function (x) { key[x.id] = HALO.rng((s * 7919 + salt) ^ hashId(x.id)).next(); });
    return list.slice().sort(function (a, b) { return key[a.id] - key[b.id]; });
  }
  function directory() {
    const s = seed();
    if (!s) return SITE.talent;
    const r = HALO.rng(s);
    const extra = r.shuffle(SITE.extraTalent).slice(0, 2 + r.int(3));
    return seededOrder(SITE.talent.concat(extra), 11);
  }
  function shift() {
    const s = seed();
    return s ? 6 + (s % 4) * 7 : 0;
  }
  function freelancer(id) {
    return SITE.talent.concat(SITE.extraTalent).filter(function (f) { return f.id === id; })[0] || null;
  }

  // ---- routing --------------------------------------------------------------------------------------
  function route() {
    const parts = (location.hash || "#/").replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    const kinds = { job: "job", "post-job": "post", talent: "talent", freelancer: "profile", messages: "messages", offer: "offer", hires: "hires", saved: "saved" };
    return { kind: kinds[parts[0]] || "jobs", id: parts[1] || "", extra: parts[2] || "" };
  }
  function go(hash) {
    if (location.hash !== hash) location.hash = hash;
    render();
  }

  // ---- formatting -------------------------------------------------------------------------------------
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function day(iso) {
    const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(iso || "");
    return m ? MONTHS[Number(m[2]) - 1] + " " + Number(m[3]) + ", " + m[1] : "";
  }
  function when(iso) {
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})/.exec(iso || "");
    if (!m) return "";
    const h = Number(m[4]);
    return MONTHS[Number(m[2]) - 1] + " " + Number(m[3]) + ", " + (h % 12 || 12) + ":" + m[5] + (h < 12 ? " AM" : " PM");
  }
  function initials(name) {
    return name.split(" ").map(function (w) { return w[0]; }).join("").slice(0, 2);
  }
  function avatar(f, size) {
    const s = size || 48;
    return '<span class="avatar" style="width:' + s + "px;height:" + s + "px;line-height:" + s + "px;font-size:" + Math.round(s * 0.38) + "px;background:" + (f ? f.color : "#5e6d55") + '">' + esc(initials(f ? f.name : ME)) + "</span>";
  }
  function heart(on) {
    return '<svg width="20" height="20" viewBox="0 0 24 24" aria-hidden="true"><path d="M12 21.35l-1.45-1.32C5.4 15.36 2 12.28 2 8.5 2 5.42 4.42 3 7.5 3c1.74 0 3.41.81 4.5 2.09C13.09 3.81 14.76 3 16.5 3 19.58 3 22 5.42 22 8.5c0 3.78-3.4 6.86-8.55 11.54L12 21.35z" fill="' +
      (on ? "#14a800" : "none") + '" stroke="#14a800" stroke-width="2"/></svg>';
  }
  function stars(n) {
    return '<span class="stars" aria-label="' + n + ' stars">' + "&#9733;".repeat(n) + "</span>";
  }

  // ---- queries ------------------------------------------------------------------------------------------
  function jobList(st) {
    const list = Object.values(st.jobs.jobs).sort(function (a, b) {
      return a.postedDate < b.postedDate ? 1 : a.postedDate > b.postedDate ? -1 : (a.id < b.id ? 1 : -1);
    });
    return seededOrder(list, 29);
  }
  function openJobs(st) {
    return jobList(st).filter(function (j) { return j.status === "published"; });
  }
  function isSaved(st, id) {
    return st.saved.savedFreelancerIds.indexOf(id) !== -1;
  }
  function contactsSorted(st) {
    return Object.values(st.messages.contactList).sort(function (a, b) {
      return a.lastMessageDate < b.lastMessageDate ? 1 : a.lastMessageDate > b.lastMessageDate ? -1 : (a.id < b.id ? -1 : 1);
    });
  }
  function unreadCount(st) {
    return Object.values(st.messages.contactList).filter(function (c) { return c.unread; }).length;
  }
  function matches(f, query) {
    const hay = [f.name, f.title, f.overview, f.location].concat(f.skills).join(" ").toLowerCase();
    return String(query || "").toLowerCase().split(/[\s,]+/).filter(Boolean).every(function (w) { return hay.indexOf(w) !== -1; });
  }
  function now(st) {
    // The clock never moves: Monday 2024-07-15, 10:30, plus a minute per message on the site.
    let n = 0;
    Object.values(st.messages.contactList).forEach(function (c) { n += Object.keys(c.messages).length; });
    const m = 30 + n;
    return "2024-07-15T" + String(10 + Math.floor(m / 60)).padStart(2, "0") + ":" + String(m % 60).padStart(2, "0");
  }

  // ---- frame --------------------------------------------------------------------------------------------
  function header(st, r) {
    const unread = unreadCount(st);
    const link = function (kind, hash, label, extra) {
      return '<a href="' + hash + '" data-halo-id="nav-' + kind + '" class="' + (r.kind === kind || (kind === "jobs" && r.kind === "job") ? "on" : "") + '">' + label + (extra || "") + "</a>";
    };
    return '<header class="top"><a class="logo" href="#/jobs" data-halo-id="logo" aria-label="Topwork home"><b>top</b>work</a><nav>' +
      link("jobs", "#/jobs", "Jobs") + link("talent", "#/talent", "Find Talent") + link("hires", "#/hires", "My Hires") +
      link("messages", "#/messages", "Messages", unread ? '<span class="badge" aria-label="' + unread + ' unread">' + unread + "</span>" : "") +
      link("saved", "#/saved", "Saved Talent") + '</nav><div class="me"><a class="btn primary small" href="#/post-job" data-halo-id="nav-post-job">Post a job</a>' +
      avatar(null, 36) + '<div class="me-name"><b>' + esc(ME) + "</b><span>" + esc(SITE.me.company) + "</span></div></div></header>";
  }

  // ---- jobs -----------------------------------------------------------------------------------------------
  function jobsPage(st) {
    const list = jobList(st);
    const rows = list.map(function (j) {
      return '<article class="jobcard"><div class="jc-main"><a class="jc-title" href="#/job/' + esc(j.id) + '" data-halo-id="job-' + esc(j.id) + '">' + esc(j.title) + "</a>" +
        '<div class="muted">' + (j.status === "published" ? '<span class="chip ok">Public</span>' : '<span class="chip">' + esc(j.status[0].toUpperCase() + j.status.slice(1)) + "</span>") +
        " Hourly: $" + esc(j.hourlyRateFrom) + " - $" + esc(j.hourlyRateTo) + " &middot; " + esc(j.category) + " &middot; Posted " + esc(day(j.postedDate)) + "</div></div>" +
        '<div class="jc-stat"><b>' + (j.applications || []).length + "</b><span>Proposals</span></div>" +
        '<a class="btn outline" href="#/job/' + esc(j.id) + '" data-halo-id="view-job-' + esc(j.id) + '">View proposals</a></article>';
    }).join("");
    const unread = unreadCount(st);
    return '<div class="cols"><section class="colmain"><div class="pagehead"><h1>Your job posts</h1><a class="btn primary" href="#/post-job" data-halo-id="post-job-link">Post a new job</a></div>' +
      (rows || '<div class="empty">You have no job posts. Post a job to start getting proposals.</div>') + "</section>" +
      '<aside class="colside"><div class="box"><h3>Good morning, Sarah</h3><p class="muted">Monday, July 15</p>' +
      '<a href="#/messages" class="sidelink" data-halo-id="side-messages">' + icon("mail", 18, "#14a800") + " " + unread + " unread " + (unread === 1 ? "message" : "messages") + "</a>" +
      '<a href="#/saved" class="sidelink">' + icon("heart", 18, "#14a800") + " " + st.saved.savedFreelancerIds.length + " saved freelancers</a>" +
      '<a href="#/hires" class="sidelink">' + icon("people", 18, "#14a800") + " " + SITE.contracts.length + " contracts</a></div>" +
      '<div class="box tip"><h3>Find talent fast</h3><p>Search the talent marketplace by skill and invite the best people to your jobs.</p><a href="#/talent" class="btn outline">Browse talent</a></div></aside></div>';
  }

  function jobPage(st, view, j) {
    HALO.milestone("job_viewed");
    const chips = [
      SIZES.filter(function (x) { return x[0] === j.estimateSize; }).map(function (x) { return x[1] + " project"; })[0],
      j.estimateTime, (LEVELS.filter(function (x) { return x[0] === j.estimateLevelExperience; })[0] || [0, ""])[1] + " level",
      j.estimateHireOpportunity === "yes" ? "Contract-to-hire" : "Not contract-to-hire",
    ].filter(Boolean);
    const proposals = (j.applications || []).map(function (a) {
      const f = freelancer(a.freelancerId);
      if (!f) return "";
      return '<article class="proposal">' + avatar(f, 56) + '<div class="pr-main"><a href="#/freelancer/' + f.id + '" data-halo-id="proposal-' + f.id + '" class="pname">' + esc(f.name) + "</a>" +
        '<div class="ptitle">' + esc(f.title) + '</div><div class="muted">' + esc(f.location) + " &middot; " + f.jobSuccess + "% Job Success &middot; " + esc(f.earned) + " earned</div>" +
        '<p class="letter"><b>Cover letter</b> - ' + esc(a.coverLetter) + '</p><div class="muted">Proposed bid: <b>$' + esc(a.bid) + ".00/hr</b></div></div>" +
        '<div class="pr-act"><button class="iconbtn" data-action="save" data-id="' + f.id + '" data-halo-id="save-' + f.id + '" aria-pressed="' + isSaved(st, f.id) + '" aria-label="' + (isSaved(st, f.id) ? "Saved " : "Save ") + esc(f.name) + '">' + heart(isSaved(st, f.id)) + "</button>" +
        '<a class="btn outline" href="#/messages/' + f.id + '" data-halo-id="message-' + f.id + '">Message</a>' +
        '<a class="btn primary" href="#/offer/' + f.id + "/" + esc(j.id) + '" data-halo-id="hire-' + f.id + '">Hire</a></div></article>';
    }).join("");
    return '<div class="cols"><section class="colmain"><a href="#/jobs" class="back" data-halo-id="back-to-jobs">&lsaquo; All job posts</a>' +
      '<div class="box"><div class="pagehead"><h1>' + esc(j.title) + '</h1><button class="btn danger" data-action="remove-open" data-id="' + esc(j.id) + '" data-halo-id="remove-job">Remove posting</button></div>' +
      '<div class="muted">' + esc(j.category) + " &middot; Posted " + esc(day(j.postedDate)) + " &middot; Hourly: $" + esc(j.hourlyRateFrom) + " - $" + esc(j.hourlyRateTo) + "</div>" +
      "<p>" + esc(j.description) + '</p><div class="chips">' + chips.map(function (c) { return '<span class="chip">' + esc(c) + "</span>"; }).join("") + "</div>" +
      '<div class="skills">' + j.skills.map(function (s) { return '<span class="skill">' + esc(s) + "</span>"; }).join("") + "</div></div>" +
      "<h2>Proposals (" + (j.applications || []).length + ")</h2>" + (proposals || '<div class="empty">No proposals yet. Invite freelancers from Find Talent.</div>') + "</section>" +
      '<aside class="colside"><div class="box"><h3>About the client</h3><p><b>' + esc(SITE.me.company) + '</b></p><p class="muted">Payment method verified<br>12 jobs posted &middot; 83% hire rate</p></div></aside></div>' +
      (view.modal && view.modal.kind === "remove" && view.modal.jobId === j.id ? removeModal(j) : "");
  }
  function removeModal(j) {
    return '<div class="backdrop" data-action="close-modal"></div><div class="modal" role="dialog" aria-label="Remove job post"><h2>Remove job post</h2>' +
      "<p>Remove <b>" + esc(j.title) + "</b>? Freelancers will no longer see it or be able to send proposals.</p>" +
      '<div class="modal-actions"><button class="btn link" data-action="close-modal" data-halo-id="cancel-remove">Cancel</button>' +
      '<button class="btn danger" data-action="remove-confirm" data-id="' + esc(j.id) + '" data-halo-id="confirm-remove">Remove posting</button></div></div>';
  }

  // ---- post a job ----------------------------------------------------------------------------------------------
  function defaultJobForm() {
    return { title: "", description: "", skills: "", category: "", size: "", time: "", level: "", hire: "", from: "", to: "", error: "" };
  }
  function choices(name, options, current, label) {
    return '<div class="field"><div class="flabel">' + esc(label) + '</div><div class="choices" role="radiogroup" aria-label="' + esc(label) + '">' + options.map(function (o) {
      const on = current === o[0];
      return '<button class="choice' + (on ? " on" : "") + '" role="radio" aria-checked="' + on + '" data-action="choose" data-name="' + name + '" data-value="' + esc(o[0]) + '" data-halo-id="' + name + "-" + slug(o[0]) + '">' +
        '<span class="radio"></span><b>' + esc(o[1]) + "</b>" + (o[2] ? "<small>" + esc(o[2]) + "</small>" : "") + "</button>";
    }).join("") + "</div></div>";
  }
  function postPage(view) {
    HALO.milestone("job_form_opened");
    const f = view.form || defaultJobForm();
    const input = function (id, field, label, placeholder) {
      return '<label class="field"><span class="flabel">' + label + '</span><input type="text" data-field="' + field + '" data-halo-id="' + id + '" value="' + esc(f[field]) + '" placeholder="' + esc(placeholder) + '" autocomplete="off"></label>';
    };
    return '<div class="formpage" data-halo-scroll="form"><div class="formbox"><h1>Post a job</h1>' +
      (f.error ? '<div class="formerr" role="alert">' + esc(f.error) + "</div>" : "") +
      input("job-title", "title", "Job title", "e.g. Backend Developer for a booking app") +
      '<label class="field"><span class="flabel">Describe what you need</span><textarea data-field="description" data-halo-id="job-description" placeholder="What the work is, what you already have, what a great result looks like">' + esc(f.description) + "</textarea></label>" +
      choices("category", CATEGORIES.map(function (c) { return [c, c]; }), f.category, "Category") +
      input("job-skills", "skills", "Skills (comma separated)", "e.g. Python, Django, PostgreSQL") +
      choices("size", SIZES, f.size, "Estimate the scope of your work") +
      choices("time", TIMES.map(function (t) { return [t, t]; }), f.time, "How long will your work take?") +
      choices("level", LEVELS, f.level, "What level of experience will it need?") +
      choices("hire", HIRES, f.hire, "Is this job a contract-to-hire opportunity?") +
      '<div class="field"><div class="flabel">Hourly rate (USD)</div><div class="rates"><label>From <input type="text" data-field="from" data-halo-id="rate-from" value="' + esc(f.from) + '" placeholder="$ 15.00" autocomplete="off"> /hr</label>' +
      '<label>To <input type="text" data-field="to" data-halo-id="rate-to" value="' + esc(f.to) + '" placeholder="$ 35.00" autocomplete="off"> /hr</label></div></div>' +
      '<div class="formactions"><a class="btn link" href="#/jobs" data-halo-id="cancel-job">Cancel</a><button class="btn outline" data-action="post-job" data-value="draft" data-halo-id="save-draft">Save as draft</button>' +
      '<button class="btn primary" data-action="post-job" data-value="published" data-halo-id="post-job">Post this job</button></div></div></div>';
  }
  function rate(text) {
    const t = String(text || "").replace(/[$,\s]/g, "").replace(/\/hr$/i, "");
    return /^\d+(\.\d+)?$/.test(t) ? Number(t) : null;
  }
  function postJob(status) {
    const f = HALO.view().form || defaultJobForm();
    const from = rate(f.from), to = rate(f.to);
    let error = "";
    if (!f.title.trim()) error = "Enter a job title.";
    else if (!f.description.trim()) error = "Describe the work.";
    else if (status === "published") {
      if (!f.category) error = "Choose a category.";
      else if (!f.size || !f.time || !f.level || !f.hire) error = "Answer every question about the scope of the work.";
      else if (from === null || to === null) error = "Enter the hourly rate range as numbers, e.g. 25 and 40.";
      else if (from > to) error = "The lowest hourly rate must not be above the highest.";
    }
    if (error) {
      f.error = error;
      HALO.patchView({ form: f });
      return;
    }
    const st = HALO.state();
    let n = 1;
    while (st.jobs.jobs["job-" + n] || (st.jobs.removedJobPosts || []).some(function (j) { return j.id === "job-" + n; })) n++;
    const id = "job-" + n;
    st.jobs.jobs[id] = {
      id: id, title: f.title.trim(), description: f.description.trim(), category: f.category,
      skills: f.skills.split(",").map(function (s) { return s.trim(); }).filter(Boolean),
      hourlyRateFrom: from, hourlyRateTo: to, estimateSize: f.size, estimateTime: f.time,
      estimateLevelExperience: f.level, estimateHireOpportunity: f.hire, status: status,
      postedDate: "2024-07-15", applications: [],
    };
    HALO.commit(st);
    if (status === "published") HALO.milestone("job_posted");
    HALO.patchView({ form: null, focus: null, snackbar: status === "published" ? "Your job post is live." : "Draft saved." });
    go("#/job/" + id);
  }
  function removeJob(id) {
    const st = HALO.state();
    const j = st.jobs.jobs[id];
    if (!j) return;
    delete st.jobs.jobs[id];
    st.jobs.removedJobPosts = (st.jobs.removedJobPosts || []).concat([Object.assign({}, j, { status: "closed" })]);
    HALO.commit(st);
    HALO.milestone("job_removed");
    HALO.patchView({ modal: null, snackbar: "Job post removed." });
    go("#/jobs");
  }

  // ---- talent ----------------------------------------------------------------------------------------------------
  function talentCard(st, f) {
    const saved = isSaved(st, f.id);
    return '<article class="tcard">' + avatar(f, 64) + '<div class="tc-main"><a class="pname" href="#/freelancer/' + f.id + '" data-halo-id="freelancer-' + f.id + '">' + esc(f.name) + "</a>" +
      (f.available ? '<span class="avail">Available now</span>' : "") + '<div class="ptitle">' + esc(f.title) + "</div>" +
      '<div class="muted">' + esc(f.location) + " &middot; <b>$" + f.rate + ".00/hr</b> &middot; " + f.jobSuccess + "% Job Success &middot; " + esc(f.earned) + " earned</div>" +
      '<p class="ov">' + esc(f.overview) + '</p><div class="skills">' + f.skills.map(function (s) { return '<span class="skill">' + esc(s) + "</span>"; }).join("") + "</div></div>" +
      '<div class="tc-act"><button class="iconbtn" data-action="save" data-id="' + f.id + '" data-halo-id="save-' + f.id + '" aria-pressed="' + saved + '" aria-label="' + (saved ? "Saved " : "Save ") + esc(f.name) + '">' + heart(saved) + "</button>" +
      '<button class="btn primary" data-action="invite-open" data-id="' + f.id + '" data-halo-id="invite-' + f.id + '">Invite to job</button></div></article>';
  }
  function talentPage(st, view, query) {
    const list = directory().filter(function (f) { return matches(f, query); });
    return '<div class="talent" data-halo-scroll="talent"><div class="pagehead"><h1>Find talent</h1></div>' +
      '<form class="tsearch" role="search"><input type="text" data-halo-id="talent-search" aria-label="Search for talent" placeholder="Search by skill or title, e.g. Python developer" value="' + esc(view.query === undefined ? query : view.query) + '" autocomplete="off">' +
      '<button type="submit" class="btn primary" data-halo-id="talent-search-button">' + icon("search", 18, "#fff") + " Search</button></form>" +
      '<div class="muted count">' + list.length + (list.length === 1 ? " freelancer" : " freelancers") + (query ? ' for "' + esc(query) + '"' : "") + "</div>" +
      (list.map(function (f) { return talentCard(st, f); }).join("") || '<div class="empty">No freelancers match your search. Try another skill.</div>') + "</div>" + inviteModal(st, view);
  }
  function profilePage(st, view, f) {
    HALO.milestone("profile_viewed");
    const saved = isSaved(st, f.id);
    return '<div class="cols"><section class="colmain"><a href="#/talent" class="back" data-halo-id="back-to-talent">&lsaquo; Back to talent</a><div class="box profile">' + avatar(f, 96) +
      '<div class="pf-main"><h1>' + esc(f.name) + "</h1>" + (f.available ? '<span class="avail">Available now</span>' : '<span class="chip">Busy</span>') +
      '<div class="ptitle big">' + esc(f.title) + '</div><div class="muted">' + esc(f.location) + "</div>" +
      '<div class="stats"><div><b>$' + f.rate + ".00</b><span>Hourly rate</span></div><div><b>" + f.jobSuccess + "%</b><span>Job Success</span></div><div><b>" + esc(f.earned) + "</b><span>Total earned</span></div></div></div>" +
      '<div class="pf-act"><button class="btn outline" data-action="save" data-id="' + f.id + '" data-halo-id="save-freelancer" aria-pressed="' + saved + '">' + heart(saved) + (saved ? " Saved" : " Save") + "</button>" +
      '<a class="btn outline" href="#/messages/' + f.id + '" data-halo-id="message-freelancer">Message</a>' +
      '<button class="btn outline" data-action="invite-open" data-id="' + f.id + '" data-halo-id="invite-freelancer">Invite to job</button>' +
      '<a class="btn primary" href="#/offer/' + f.id + '" data-halo-id="hire-freelancer">Hire</a></div></div>' +
      '<div class="box"><h2>Overview</h2><p>' + esc(f.overview) + '</p><h2>Skills</h2><div class="skills">' + f.skills.map(function (s) { return '<span class="skill">' + esc(s) + "</span>"; }).join("") + "</div></div>" +
      '<div class="box"><h2>Work history</h2><div class="work"><b>' + esc(f.lastProject) + "</b><div>" + stars(5) + ' <span class="muted">Completed &middot; Last project</span></div>' +
      '<p class="muted">"Great communication and excellent work. Would hire again."</p></div></div></section>' +
      '<aside class="colside"><div class="box"><h3>Availability</h3><p>' + (f.available ? "More than 30 hrs/week" : "Not taking new work this month") + "</p><h3>Languages</h3><p>English: Native or Bilingual</p></div></aside></div>" + inviteModal(st, view);
  }
  function inviteModal(st, view) {
    const m = view.modal;
    if (!m || m.kind !== "invite") return "";
    const f = freelancer(m.freelancerId);
    const jobs = openJobs(st);
    return '<div class="backdrop" data-action="close-modal"></div><div class="modal wide" role="dialog" aria-label="Invite to job"><h2>Invite ' + esc(f.name) + " to a job</h2>" +
      '<div class="flabel">Choose a job</div><div class="joblist">' + jobs.map(function (j) {
        const on = m.jobId === j.id;
        return '<button class="choice' + (on ? " on" : "") + '" role="radio" aria-checked="' + on + '" data-action="invite-job" data-id="' + esc(j.id) + '" data-halo-id="invite-job-' + esc(j.id) + '"><span class="radio"></span><b>' + esc(j.title) + "</b></button>";
      }).join("") + "</div>" +
      '<label class="field"><span class="flabel">Message</span><textarea data-field="invite" data-halo-id="invite-message">' + esc(m.message) + "</textarea></label>" +
      (m.error ? '<div class="formerr" role="alert">' + esc(m.error) + "</div>" : "") +
      '<div class="modal-actions"><button class="btn link" data-action="close-modal" data-halo-id="cancel-invite">Cancel</button>' +
      '<button class="btn primary" data-action="invite-send" data-halo-id="send-invite">Send invitation</button></div></div>';
  }
  function openInvite(id) {
    const jobs = openJobs(HALO.state());
    HALO.patchView({ modal: { kind: "invite", freelancerId: id, jobId: jobs.length ? jobs[0].id : null, message: DEFAULT_INVITE, error: "" } });
    HALO.milestone("invite_opened");
  }
  function sendInvite() {
    const m = HALO.view().modal;
    const st = HALO.state();
    const j = st.jobs.jobs[m.jobId];
    if (!j) m.error = "Choose a job to invite them to.";
    else if (!String(m.message || "").trim()) m.error = "Write a message.";
    if (m.error || !j) {
      HALO.patchView({ modal: m });
      return;
    }
    const f = freelancer(m.freelancerId);
    addMessage(st, f, { author: CLIENT, message: m.message.trim(), type: "invite", jobId: j.id, jobTitle: j.title });
    HALO.commit(st);
    HALO.milestone("invite_sent");
    HALO.patchView({ modal: null, focus: null, snackbar: "Invitation sent to " + f.name + "." });
  }
  function toggleSave(id) {
    const st = HALO.state();
    const ids = st.saved.savedFreelancerIds;
    const was = ids.indexOf(id) !== -1;
    st.saved.savedFreelancerIds = was ? ids.filter(function (x) { return x !== id; }) : ids.concat([id]);
    HALO.commit(st);
    if (!was) HALO.milestone("freelancer_saved");
    HALO.patchView({ snackbar: (was ? "Removed from" : "Saved to") + " your saved talent." });
  }

  // ---- messages ------------------------------------------------------------------------------------------------------
  function addMessage(st, f, message) {
    // A first message to someone opens a conversation: REAL's contact carries their job title.
    const list = st.messages.contactList;
    if (!list[f.id]) list[f.id] = { id: f.id, name: f.name, job: f.title, lastMessage: "", lastMessageAuthor: "", lastMessageDate: "", unread: false, messages: {} };
    const c = list[f.id];
    const date = now(st);
    c.messages[String(Object.keys(c.messages).length)] = Object.assign({ author: message.author, message: message.message, date: date }, message);
    c.lastMessage = message.message;
    c.lastMessageAuthor = message.author;
    c.lastMessageDate = date;
  }
  function bubble(m, f) {
    const mine = m.author === ME || m.author === CLIENT;
    let body = '<div class="text">' + esc(m.message) + "</div>";
    if (m.type === "invite") body = '<div class="card-msg"><div class="cm-kind">' + icon("mail", 16, "#14a800") + " Invitation to apply</div><b>" + esc(m.jobTitle || "") + "</b></div>" + body;
    if (m.type === "offer" && m.offer) {
      body = '<div class="card-msg"><div class="cm-kind">' + icon("notes", 16, "#14a800") + " Offer sent &middot; " + esc(m.offer.status) + "</div><b>" + esc(m.offer.contractTitle) + "</b><div>$" +
        esc(m.offer.hourlyRate) + ".00/hr &middot; starts " + esc(day(m.offer.startDate)) + '</div><div class="muted">' + esc(m.offer.description) + "</div></div>";
    }
    return '<div class="msg' + (mine ? " mine" : "") + '">' + avatar(mine ? null : f, 32) + '<div class="mbody"><div class="mhead"><b>' + esc(mine ? ME : m.author) + "</b> <span class=\"muted\">" + esc(when(m.date)) + "</span></div>" + body + "</div></div>";
  }
  function messagesPage(st, view, id) {
    const list = contactsSorted(st);
    const f = id ? freelancer(id) : null;
    const c = id ? st.messages.contactList[id] : null;
    const rows = list.map(function (x) {
      const who = x.lastMessageAuthor === ME || x.lastMessageAuthor === CLIENT ? "You: " : "";
      return '<a class="crow' + (x.id === id ? " on" : "") + (x.unread ? " unread" : "") + '" href="#/messages/' + x.id + '" data-halo-id="contact-' + x.id + '">' + avatar(freelancer(x.id), 40) +
        '<div class="cr-main"><div class="cr-top"><b>' + esc(x.name) + '</b><span class="muted">' + esc(day(x.lastMessageDate).replace(/, \d{4}$/, "")) + "</span></div>" +
        '<div class="muted cr-job">' + esc(x.job) + '</div><div class="cr-last">' + esc(who + x.lastMessage) + "</div></div>" + (x.unread ? '<span class="dot" aria-label="unread"></span>' : "") + "</a>";
    }).join("");
    let pane = '<div class="nochat">' + icon("mail", 48, "#c7cdc4") + "<p>Select a conversation to read and reply.</p></div>";
    if (f) {
      const msgs = c ? Object.keys(c.messages).sort(function (a, b) { return Number(a) - Number(b); }).map(function (k) { return bubble(c.messages[k], f); }).join("") :
        '<div class="muted newchat">Start a conversation with ' + esc(f.name) + ".</div>";
      const draft = view.composer && view.composer.id === id ? view.composer.text : "";
      pane = '<div class="chathead">' + avatar(f, 40) + '<div><b>' + esc(f.name) + '</b><div class="muted">' + esc(f.title) + " &middot; " + esc(f.location) + "</div></div>" +
        '<a class="btn outline small" href="#/freelancer/' + f.id + '" data-halo-id="chat-profile">View profile</a><a class="btn primary small" href="#/offer/' + f.id + '" data-halo-id="chat-hire">Hire</a></div>' +
        '<div class="thread" data-halo-scroll="thread">' + msgs + "</div>" +
        '<div class="composer"><textarea data-field="composer" data-halo-id="message-input" aria-label="Send a message" placeholder="Send a message...">' + esc(draft) + "</textarea>" +
        '<button class="btn primary" data-action="send-message" data-id="' + f.id + '" data-halo-id="send-message">' + icon("send", 18, "#fff") + " Send</button></div>";
    }
    return '<div class="msgs"><aside class="clist" data-halo-scroll="contacts"><h2>Messages</h2>' + rows + '</aside><section class="chat">' + pane + "</section></div>";
  }
  function sendMessage(id) {
    const view = HALO.view();
    const text = view.composer && view.composer.id === id ? String(view.composer.text || "").trim() : "";
    if (!text) return;
    const st = HALO.state();
    addMessage(st, freelancer(id), { author: ME, message: text, type: "text" });
    HALO.commit(st);
    HALO.milestone("message_sent");
    HALO.patchView({ composer: null, scroll: Object.assign({}, view.scroll, { thread: 100000 }) });
  }
  function openChat(st, id) {
    // Opening a conversation selects it and reads it (REAL keeps the selection in its state).
    const c = st.messages.contactList[id];
    if (st.messages.selectedChatId === id && (!c || !c.unread)) return;
    st.messages.selectedChatId = id;
    if (c) c.unread = false;
    HALO.commit(st);
    HALO.milestone("chat_opened");
  }

  // ---- offers and hires ------------------------------------------------------------------------------------------------
  function defaultOffer(f, j) {
    return { title: j ? j.title : "", rate: String(f.rate), start: "2024-07-22", description: "", error: "" };
  }
  function offerPage(st, view, f, j) {
    HALO.milestone("offer_form_opened");
    const o = view.form || defaultOffer(f, j);
    return '<div class="formpage" data-halo-scroll="form"><div class="formbox"><h1>Send an offer</h1><div class="offerfor">' + avatar(f, 48) + "<div><b>" + esc(f.name) + '</b><div class="muted">' + esc(f.title) + " &middot; $" + f.rate + ".00/hr profile rate</div></div></div>" +
      (o.error ? '<div class="formerr" role="alert">' + esc(o.error) + "</div>" : "") +
      '<label class="field"><span class="flabel">Contract title</span><input type="text" data-field="title" data-halo-id="offer-title" value="' + esc(o.title) + '" placeholder="e.g. Backend Developer" autocomplete="off"></label>' +
      '<div class="row2"><label class="field"><span class="flabel">Hourly rate ($/hr)</span><input type="text" data-field="rate" data-halo-id="offer-rate" value="' + esc(o.rate) + '" autocomplete="off"></label>' +
      '<label class="field"><span class="flabel">Start date (YYYY-MM-DD)</span><input type="text" data-field="start" data-halo-id="offer-start" value="' + esc(o.start) + '" autocomplete="off"></label></div>' +
      '<label class="field"><span class="flabel">Work description and message to ' + esc(f.name.split(" ")[0]) + '</span><textarea data-field="description" data-halo-id="offer-description" placeholder="Describe the work and what you expect">' + esc(o.description) + "</textarea></label>" +
      '<div class="formactions"><a class="btn link" href="#/freelancer/' + f.id + '" data-halo-id="cancel-offer">Cancel</a><button class="btn primary" data-action="send-offer" data-id="' + f.id + '" data-halo-id="send-offer">Send offer</button></div></div></div>';
  }
  function sendOffer(fid, jobId) {
    const view = HALO.view();
    const st = HALO.state();
    const f = freelancer(fid);
    const o = view.form || defaultOffer(f, st.jobs.jobs[jobId]);
    const amount = rate(o.rate);
    let error = "";
    if (!o.title.trim()) error = "Enter a contract title.";
    else if (amount === null || amount <= 0) error = "Enter the hourly rate as a number, e.g. 45.";
    else if (!/^\d{4}-\d{2}-\d{2}$/.test(String(o.start).trim())) error = "Enter the start date as YYYY-MM-DD.";
    else if (!o.description.trim()) error = "Describe the work in the offer.";
    if (error) {
      o.error = error;
      HALO.patchView({ form: o });
      return;
    }
    const id = "offer-" + (Object.keys(st.offers.offers).length + 1);
    const offer = {
      id: id, freelancerId: f.id, freelancerName: f.name, contractTitle: o.title.trim(), description: o.description.trim(),
      hourlyRate: amount, startDate: String(o.start).trim(), offerDate: "2024-07-15", jobId: jobId || null, status: "Pending",
    };
    st.offers.offers[id] = offer;
    addMessage(st, f, { author: CLIENT, message: "Sent an offer: " + offer.contractTitle, type: "offer", offer: HALO.clone(offer) });
    HALO.commit(st);
    HALO.milestone("offer_sent");
    HALO.patchView({ form: null, focus: null, snackbar: "Offer sent to " + f.name + "." });
    go("#/messages/" + f.id);
  }
  function hiresPage(st) {
    const rows = seededOrder(SITE.contracts.map(function (c) { return Object.assign({ id: c.freelancerId }, c); }), 47).map(function (c) {
      const f = freelancer(c.freelancerId);
      return '<article class="hire">' + avatar(f, 56) + '<div class="hr-main"><b class="ctitle">' + esc(c.title) + '</b><div><a href="#/freelancer/' + f.id + '" data-halo-id="hire-profile-' + f.id + '">' + esc(f.name) + "</a> &middot; " + esc(f.title) + "</div>" +
        '<div class="muted">' + esc(c.start) + (c.end ? " - " + esc(c.end) : " - Present") + " &middot; $" + f.rate + ".00/hr</div>" + (c.rating ? "<div>" + stars(c.rating) + ' <span class="muted">Your feedback</span></div>' : "") + "</div>" +
        '<span class="chip' + (c.status === "Active" ? " ok" : "") + '">' + esc(c.status) + "</span>" +
        '<div class="hr-act"><a class="btn outline" href="#/messages/' + f.id + '" data-halo-id="contract-message-' + f.id + '">Message</a>' +
        (c.status === "Completed" ? '<a class="btn primary" href="#/offer/' + f.id + '" data-halo-id="rehire-' + f.id + '">Rehire</a>' : "") + "</div></article>";
    }).join("");
    const offers = Object.values(st.offers.offers);
    return '<div class="cols"><section class="colmain"><div class="pagehead"><h1>My hires</h1></div>' + rows +
      (offers.length ? "<h2>Offers sent</h2>" + offers.map(function (o) {
        return '<div class="box offerrow"><b>' + esc(o.contractTitle) + "</b> to " + esc(o.freelancerName) + ' &middot; $' + esc(o.hourlyRate) + '.00/hr <span class="chip">' + esc(o.status) + "</span></div>";
      }).join("") : "") + "</section>" +
      '<aside class="colside"><div class="box tip"><h3>Work with people you trust</h3><p>Rehire freelancers you have worked with: send them a new offer in a minute.</p></div></aside></div>';
  }
  function savedPage(st) {
    const list = st.saved.savedFreelancerIds.map(freelancer).filter(Boolean);
    return '<div class="talent" data-halo-scroll="talent"><div class="pagehead"><h1>Saved talent</h1></div><div class="muted count">' + list.length + (list.length === 1 ? " freelancer" : " freelancers") + "</div>" +
      (list.map(function (f) { return talentCard(st, f); }).join("") || '<div class="empty">Save freelancers with the heart to find them again here.</div>') + "</div>" + inviteModal(st, HALO.view());
  }

  // ---- render -----------------------------------------------------------------------------------------------------------
  let drawnHash = null;
  function render() {
    drawnHash = location.hash;
    let view = HALO.view();
    const r = route();
    if (view.route !== location.hash) {
      // A new page: forms start over, dialogs close, lists scroll to the top.
      view = HALO.patchView({ route: location.hash, modal: null, form: null, scroll: {}, query: undefined });
    }
    const st0 = HALO.state();
    if (r.kind === "messages" && r.id && freelancer(r.id)) openChat(st0, r.id);
    const st = HALO.state();
    let main, title = "Topwork";
    if (r.kind === "job" && st.jobs.jobs[r.id]) {
      main = jobPage(st, view, st.jobs.jobs[r.id]);
      title = st.jobs.jobs[r.id].title + " | Topwork";
    } else if (r.kind === "job") {
      main = '<div class="empty page">This job post was removed. <a href="#/jobs">Back to your jobs</a></div>';
    } else if (r.kind === "post") {
      main = postPage(view);
      title = "Post a job | Topwork";
    } else if (r.kind === "talent") {
      main = talentPage(st, view, r.id);
      title = "Find talent | Topwork";
    } else if (r.kind === "profile" && freelancer(r.id)) {
      main = profilePage(st, view, freelancer(r.id));
      title = freelancer(r.id).name + " - " + freelancer(r.id).title + " | Topwork";
    } else if (r.kind === "messages") {
      main = messagesPage(st, view, freelancer(r.id) ? r.id : "");
      title = "Messages | Topwork";
    } else if (r.kind === "offer" && freelancer(r.id)) {
      main = offerPage(st, view, freelancer(r.id), st.jobs.jobs[r.extra]);
      title = "Send an offer | Topwork";
    } else if (r.kind === "hires") {
      main = hiresPage(st);
      title = "My hires | Topwork";
    } else if (r.kind === "saved") {
      main = savedPage(st);
      title = "Saved talent | Topwork";
    } else if (r.kind === "jobs") {
      main = jobsPage(st);
      title = "Your jobs | Topwork";
    } else {
      main = '<div class="empty page">Page not found. <a href="#/jobs">Back to your jobs</a></div>';
    }
    document.title = title;
    const snack = view.snackbar ? '<div class="snackbar" role="status">' + esc(view.snackbar) + "</div>" : "";
    document.getElementById("app").innerHTML = header(st, r) + '<main class="page-' + r.kind + '" style="padding-left:' + shift() + 'px">' + main + "</main>" + snack;
    HALO.restoreUi(r.kind === "messages" ? { thread: 100000 } : {});
  }

  // ---- events --------------------------------------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    const link = e.target.closest("a[href]");
    if (!el && !link) return;
    if (HALO.view().snackbar) HALO.patchView({ snackbar: "" });
    if (!el) return; // a link: the hashchange renders the new page
    e.preventDefault();
    const action = el.getAttribute("data-action");
    const id = el.getAttribute("data-id");
    const view = HALO.view();
    if (action === "save") toggleSave(id);
    else if (action === "invite-open") openInvite(id);
    else if (action === "invite-job") { view.modal.jobId = id; view.modal.error = ""; HALO.patchView({ modal: view.modal }); }
    else if (action === "invite-send") sendInvite();
    else if (action === "close-modal") HALO.patchView({ modal: null });
    else if (action === "remove-open") HALO.patchView({ modal: { kind: "remove", jobId: id } });
    else if (action === "remove-confirm") { removeJob(id); return; }
    else if (action === "choose") {
      const f = view.form || defaultJobForm();
      f[el.getAttribute("data-name")] = el.getAttribute("data-value");
      HALO.patchView({ form: f });
    } else if (action === "post-job") { postJob(el.getAttribute("data-value")); if (route().kind !== "post") return; }
    else if (action === "send-message") sendMessage(id);
    else if (action === "send-offer") { sendOffer(id, route().extra); if (route().kind !== "offer") return; }
    render();
  });

  document.addEventListener("submit", function (e) {
    e.preventDefault();
    const q = String(HALO.view().query || "").trim();
    HALO.milestone("talent_search");
    HALO.patchView({ focus: null });
    go(q ? "#/talent/" + encodeURIComponent(q) : "#/talent");
  });

  document.addEventListener("keydown", function (e) {
    // Enter sends a chat message (Shift+Enter is a new line), as on Topwork's messenger.
    const t = e.target;
    if (e.key === "Enter" && !e.shiftKey && t.getAttribute && t.getAttribute("data-halo-id") === "message-input") {
      e.preventDefault();
      sendMessage(route().id);
      render();
    }
  });

  document.addEventListener("input", function (e) {
    const t = e.target;
    const field = t.getAttribute("data-field");
    const r = route();
    if (t.getAttribute("data-halo-id") === "talent-search") {
      HALO.patchView({ query: t.value });
    } else if (field === "composer") {
      HALO.patchView({ composer: { id: r.id, text: t.value } });
    } else if (field === "invite") {
      const m = HALO.view().modal;
      m.message = t.value;
      HALO.patchView({ modal: m });
    } else if (field && r.kind === "post") {
      const f = HALO.view().form || defaultJobForm();
      f[field] = t.value;
      HALO.patchView({ form: f });
    } else if (field && r.kind === "offer") {
      const st = HALO.state();
      const f = HALO.view().form || defaultOffer(freelancer(r.id), st.jobs.jobs[r.extra]);
      f[field] = t.value;
      HALO.patchView({ form: f });
    }
  });

  // go() has already drawn the page its hash names; the later hashchange must not redraw it under
  // a pointer that is about to click (links and the back button still render here).
  window.addEventListener("hashchange", function () {
    if (location.hash !== drawnHash) render();
  });
  HALO.trackUi();
  HALO.mount(render);
})();
