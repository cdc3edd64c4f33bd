/* NetworkIn app: a LinkedIn-like single page. Routes (location.hash):
 *   #/feed                          home feed: start a post, like, send a post, follow companies
 *   #/mynetwork                     connections and people you may know
 *   #/search/<all|people|companies|events>?keywords=<q>   search results
 *   #/in/<username>                 a member's profile (connect, message)
 *   #/company/<id>                  a company page (follow)
 *   #/events, #/events/<id>         events and an event page (attend)
 *   #/messaging[/<username>]        conversations
 * Connections, posts, conversations, follows, searches and attended events live in HALO.state()
 * (data.js describes the shape); the open dialog, drafts, the search box and the toast live in
 * HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const SITE = HALO.site();
  const ME = SITE.me;
  const COLORS = ["#0a66c2", "#5f9b41", "#c37d16", "#915907", "#8f5849", "#0e7a73", "#b24020", "#5e4ba8", "#2d6a9f", "#7a3e65"];

  // ---- seed: order and layout (seed 0 is the canonical page) ------------------------------------
  function seed() {
    return Number(HALO.meta().seed || 0);
  }
  function ordered(list, salt) {
    const s = seed();
    return s ? HALO.rng(s * 31 + salt).shuffle(list) : list.slice();
  }
  function offsetStyle() {
    const s = seed();
    return s ? ' style="margin-left:' + ((s % 5) - 2) * 8 + "px;margin-top:" + (s % 3) * 4 + 'px"' : "";
  }

  // ---- routing -------------------------------------------------------------------------------------
  function route() {
    const raw = (location.hash || "#/feed").replace(/^#\/?/, "");
    const qi = raw.indexOf("?");
    const path = (qi === -1 ? raw : raw.slice(0, qi)).split("/");
    const params = new URLSearchParams(qi === -1 ? "" : raw.slice(qi + 1));
    if (path[0] === "search") return { kind: "search", category: path[1] || "all", q: params.get("keywords") || "" };
    if (path[0] === "in" && path[1]) return { kind: "profile", id: path[1] };
    if (path[0] === "company" && path[1]) return { kind: "company", id: path[1] };
    if (path[0] === "events") return path[1] ? { kind: "event", id: path[1] } : { kind: "events" };
    if (path[0] === "messaging") return { kind: "messaging", id: path[1] || null };
    if (path[0] === "mynetwork") return { kind: "network" };
    return { kind: "feed" };
  }
  function go(hash) {
    if (location.hash !== hash) location.hash = hash;
    render();
  }
  function searchHash(category, q) {
    return "#/search/" + category + "?keywords=" + encodeURIComponent(q).replace(/%20/g, "+");
  }

  // ---- lookups ------------------------------------------------------------------------------------
  function personById(id) {
    if (id === ME.id) return { id: ME.id, name: ME.name, headline: ME.headline, location: ME.location, company: ME.company, degree: 0, about: "" };
    return SITE.people().filter(function (p) { return p.id === id; })[0] || null;
  }
  function companyById(id) {
    return SITE.companies.filter(function (c) { return c.id === id; })[0] || null;
  }
  function eventById(id) {
    return SITE.events.filter(function (e) { return e.id === id; })[0] || null;
  }
  function connections(st) {
    return Object.keys(st.contactList).map(function (k) { return st.contactList[k]; });
  }
  function isConnected(st, id) {
    return connections(st).indexOf(id) !== -1;
  }
  function degreeLabel(st, id) {
    const g = isConnected(st, id) ? 1 : st.connectionGrades[id];
    return g === 1 ? "1st" : g === 2 ? "2nd" : "3rd+";
  }
  function words(q) {
    return String(q || "").toLowerCase().replace(/\bnyc\b/g, "new york").replace(/[^a-z0-9&+.# ]/g, " ").split(/\s+/).filter(Boolean);
  }
  function matches(text, q) {
    const t = text.toLowerCase();
    const w = words(q);
    return w.length > 0 && w.every(function (x) { return t.indexOf(x) !== -1; });
  }
  function findPeople(q) {
    return ordered(SITE.people(), 1).filter(function (p) {
      return matches([p.name, p.headline, p.location, p.company, p.industry].join(" "), q);
    });
  }
  function findCompanies(q) {
    return ordered(SITE.companies, 2).filter(function (c) { return matches([c.name, c.industry, c.hq].join(" "), q); });
  }
  function findEvents(q) {
    return ordered(SITE.events, 3).filter(function (e) { return matches([e.title, e.organizer, e.place, e.description].join(" "), q); });
  }

  // ---- small pieces ---------------------------------------------------------------------------------
  function initials(name) {
    return name.split(" ").map(function (w) { return w[0]; }).slice(0, 2).join("");
  }
  function colorOf(id) {
    let h = 0;
    for (let i = 0; i < id.length; i++) h = (h * 31 + id.charCodeAt(i)) >>> 0;
    return COLORS[h % COLORS.length];
  }
  function avatar(id, name, size) {
    return '<span class="avatar" style="width:' + size + "px;height:" + size + "px;line-height:" + size + "px;font-size:" + Math.round(size * 0.4) + "px;background:" + colorOf(id) + '" aria-hidden="true">' + esc(initials(name)) + "</span>";
  }
  function logoBox(c, size) {
    return '<span class="clogo" style="width:' + size + "px;height:" + size + "px;line-height:" + size + "px;font-size:" + Math.round(size * 0.42) + "px;background:" + colorOf(c.id + "co") + '" aria-hidden="true">' + esc(c.name[0]) + "</span>";
  }
  // Icons the shared set lacks (Material paths); no emoji, which headless fonts may not draw.
  const OWN = {
    like: "M1 21h4V9H1v12zm22-11c0-1.1-.9-2-2-2h-6.31l.95-4.57.03-.32c0-.41-.17-.79-.44-1.06L14.17 1 7.59 7.59C7.22 7.95 7 8.45 7 9v10c0 1.1.9 2 2 2h9c.83 0 1.54-.5 1.84-1.22l3.02-7.05c.09-.23.14-.47.14-.73v-2z",
    comment: "M21.99 4c0-1.1-.89-2-1.99-2H4c-1.1 0-2 .9-2 2v12c0 1.1.9 2 2 2h14l4 4-.01-18zM18 14H6v-2h12v2zm0-3H6V9h12v2zm0-3H6V6h12v2z",
    repost: "M7 7h10v3l4-4-4-4v3H5v6h2V7zm10 10H7v-3l-4 4 4 4v-3h12v-6h-2v4z",
  };
  function icon(name, size) {
    if (OWN[name]) return '<svg width="' + (size || 24) + '" height="' + (size || 24) + '" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="' + OWN[name] + '" fill="currentColor"/></svg>';
    return HALO.icon(name, size || 24, "currentColor");
  }
  function followBtn(st, c) {
    const on = !!st.ui.followedCompanies[c.id];
    return '<button class="btn ' + (on ? "btn-muted" : "btn-outline") + '" data-action="follow" data-id="' + c.id + '" data-halo-id="follow-' + c.id + '" aria-pressed="' + on + '">' + (on ? "&#10003; Following" : "+ Follow") + "</button>";
  }
  function personActions(st, p) {
    if (p.id === ME.id) return "";
    if (isConnected(st, p.id)) return '<button class="btn btn-outline" data-action="message" data-id="' + p.id + '" data-halo-id="message-' + p.id + '">Message</button>';
    return '<button class="btn btn-outline" data-action="connect" data-id="' + p.id + '" data-halo-id="connect-' + p.id + '">' + icon("people", 16) + " Connect</button>";
  }

  // ---- frame ----------------------------------------------------------------------------------------
  function header(view, r) {
    const nav = function (id, label, ico, hash, on) {
      return '<a class="nav' + (on ? " on" : "") + '" href="' + hash + '" data-halo-id="nav-' + id + '">' + icon(ico, 24) + "<span>" + label + "</span></a>";
    };
    const k = r.kind;
    return '<header class="top"><div class="top-in"><a class="logo" href="#/feed" data-halo-id="logo" aria-label="NetworkIn home">in</a>' +
      '<form class="search" role="search"><span class="sico">' + icon("search", 18) + '</span><input type="text" data-halo-id="search" aria-label="Search" placeholder="Search" value="' + esc(view.query) + '" autocomplete="off"></form>' +
      '<nav class="navs">' + nav("home", "Home", "home", "#/feed", k === "feed") + nav("network", "My Network", "people", "#/mynetwork", k === "network") +
      nav("events", "Events", "calendar", "#/events", k === "events" || k === "event") + nav("messaging", "Messaging", "mail", "#/messaging", k === "messaging") +
      '<span class="nav">' + icon("notes", 24) + "<span>Notifications</span></span>" +
      '<span class="nav me">' + avatar(ME.id, ME.name, 24) + "<span>Me &#9662;</span></span></nav></div></header>";
  }
  function leftCard(st) {
    return '<aside class="left"><div class="card me-card"><div class="banner"></div>' + avatar(ME.id, ME.name, 64) +
      '<a class="me-name" href="#/in/' + ME.id + '" data-halo-id="my-profile">' + esc(ME.name) + '</a><div class="me-head">' + esc(ME.headline) + "</div>" +
      '<div class="me-loc">' + esc(ME.location) + '</div><div class="me-stats"><a href="#/mynetwork" data-halo-id="my-connections">Connections <b>' + connections(st).length + "</b></a>" +
      "<span>Profile viewers <b>214</b></span></div></div>" +
      '<div class="card links"><a href="#/events" data-halo-id="rail-events">' + icon("calendar", 18) + ' Events</a><a href="#/mynetwork">' + icon("people", 18) + " Groups</a><span>" + icon("star", 18) + " Saved items</span></div></aside>";
  }

  // ---- feed ----------------------------------------------------------------------------------------------
  function postCard(st, p) {
    const a = personById(p.authorId) || { id: p.authorId, name: p.authorId, headline: "" };
    const mine = p.authorId === ME.id;
    return '<article class="card post" data-post="' + p.id + '"><div class="post-head">' + avatar(a.id, a.name, 48) + '<div><a class="pname" href="#/in/' + a.id + '">' + esc(a.name) + "</a>" +
      (mine ? "" : ' <span class="deg">&middot; ' + degreeLabel(st, a.id) + "</span>") + '<div class="phead">' + esc(a.headline) + '</div><div class="ptime">' + esc(p.time) + " &middot; Edited</div></div></div>" +
      '<div class="ptext">' + esc(p.description) + '</div><div class="pcounts"><span class="lk">' + icon("like", 14) + " " + p.likes + "</span><span>" + p.comments + " comments &middot; " + p.reposts + " reposts</span></div>" +
      '<div class="pactions"><button class="' + (p.liked ? "on" : "") + '" data-action="like" data-id="' + p.id + '" data-halo-id="like-' + p.id + '" aria-pressed="' + !!p.liked + '">' + icon("like", 18) + " Like</button>" +
      '<span>' + icon("comment", 18) + ' Comment</span><span>' + icon("repost", 18) + ' Repost</span><button data-action="share" data-id="' + p.id + '" data-halo-id="send-' + p.id + '">' + icon("send", 18) + " Send</button></div></article>";
  }
  function feedPosts(st) {
    const all = Object.keys(st.ui.feed.postDynamicData).map(function (k) { return st.ui.feed.postDynamicData[k]; });
    // The member's new posts first (newest on top), then the feed in its (seeded) order.
    const fresh = all.filter(function (p) { return p.order === undefined; }).sort(function (a, b) { return b.seq - a.seq; });
    const rest = ordered(all.filter(function (p) { return p.order !== undefined; }).sort(function (a, b) { return a.order - b.order; }), 4);
    return fresh.concat(rest);
  }
  function feedPage(st) {
    const suggest = ["google", "apple", "amazon", "nvidia"].map(companyById);
    return '<div class="cols">' + leftCard(st) + '<section class="center"><div class="card composer">' + avatar(ME.id, ME.name, 48) +
      '<button class="start" data-action="compose" data-halo-id="start-post">Start a post</button></div>' +
      feedPosts(st).map(function (p) { return postCard(st, p); }).join("") + "</section>" +
      '<aside class="right"><div class="card rail"><h3>Add to your feed</h3>' + suggest.map(function (c) {
        return '<div class="rail-row">' + logoBox(c, 40) + '<div><a href="#/company/' + c.id + '" data-halo-id="company-' + c.id + '">' + esc(c.name) + '</a><div class="muted">Company &middot; ' + esc(c.industry) + "</div>" + followBtn(st, c) + "</div></div>";
      }).join("") + '</div><div class="card rail news"><h3>NetworkIn News</h3><ul><li><b>AI agents go mainstream</b><span>2d ago &middot; 12,431 readers</span></li>' +
      "<li><b>Hiring rebounds in tech</b><span>1d ago &middot; 8,902 readers</span></li><li><b>Summer internships wrap up</b><span>5h ago &middot; 3,120 readers</span></li></ul></div></aside></div>";
  }

  // ---- search ---------------------------------------------------------------------------------------------
  function personRow(st, p) {
    return '<div class="row">' + avatar(p.id, p.name, 56) + '<div class="row-main"><a class="rname" href="#/in/' + p.id + '" data-halo-id="person-' + p.id + '">' + esc(p.name) + "</a>" +
      ' <span class="deg">&middot; ' + degreeLabel(st, p.id) + '</span><div class="rhead">' + esc(p.headline) + '</div><div class="muted">' + esc(p.location) + "</div></div>" + personActions(st, p) + "</div>";
  }
  function companyRow(st, c) {
    return '<div class="row">' + logoBox(c, 56) + '<div class="row-main"><a class="rname" href="#/company/' + c.id + '" data-halo-id="company-' + c.id + '">' + esc(c.name) + "</a>" +
      '<div class="rhead">' + esc(c.industry) + " &middot; " + esc(c.hq) + '</div><div class="muted">' + c.followers + " followers</div></div>" + followBtn(st, c) + "</div>";
  }
  function eventRow(e) {
    return '<div class="row"><span class="ev-date">' + esc(e.when.split(",")[1].trim().split(" ")[0]) + "<b>" + esc(e.when.split(",")[1].trim().split(" ")[1]) + '</b></span><div class="row-main"><a class="rname" href="#/events/' + e.id + '" data-halo-id="event-' + e.id + '">' + esc(e.title) + "</a>" +
      '<div class="rhead">' + esc(e.when) + '</div><div class="muted">' + esc(e.format) + " &middot; " + esc(e.place) + " &middot; " + e.attendees.toLocaleString("en-US") + " attendees</div></div>" +
      '<a class="btn btn-outline" href="#/events/' + e.id + '">View</a></div>';
  }
  function searchPage(st, r) {
    const tabs = [["all", "All"], ["people", "People"], ["companies", "Companies"], ["events", "Events"]];
    const people = r.category === "all" || r.category === "people" ? findPeople(r.q) : [];
    const comps = r.category === "all" || r.category === "companies" ? findCompanies(r.q) : [];
    const evs = r.category === "all" || r.category === "events" ? findEvents(r.q) : [];
    const block = function (title, list, fn) {
      return list.length ? '<div class="card results"><h2>' + title + "</h2>" + list.map(fn).join("") + "</div>" : "";
    };
    const body = block("People", people, function (p) { return personRow(st, p); }) + block("Companies", comps, function (c) { return companyRow(st, c); }) + block("Events", evs, eventRow);
    const count = people.length + comps.length + evs.length;
    return '<div class="tabs">' + tabs.map(function (t) {
      return '<a class="tab' + (t[0] === r.category ? " on" : "") + '" href="' + searchHash(t[0], r.q) + '" data-halo-id="tab-' + t[0] + '">' + t[1] + "</a>";
    }).join("") + '</div><div class="cols narrow"><section class="center wide"><div class="rcount">About ' + count + " results for &ldquo;" + esc(r.q) + "&rdquo;</div>" +
      (count ? body : '<div class="card empty"><h2>No results found</h2><p>Try shortening or rephrasing your search.</p></div>') + "</section></div>";
  }

  // ---- profile, company, network ---------------------------------------------------------------------------
  function profilePage(st, p) {
    HALO.milestone("profile_viewed");
    const exp = p.id === ME.id ? [["Founder & CEO", "AGI Inc", "2023 - Present"], ["PhD Student, AI", "Stanford University", "2018 - 2023"]] :
      [[p.headline.split(" at ")[0].split(" |")[0], p.company, "2021 - Present"]];
    return '<div class="cols narrow"><section class="center wide"><div class="card profile"><div class="banner big"></div><div class="pav">' + avatar(p.id, p.name, 128) + "</div>" +
      '<h1>' + esc(p.name) + (p.id === ME.id ? "" : ' <span class="deg">&middot; ' + degreeLabel(st, p.id) + "</span>") + '</h1><div class="headline">' + esc(p.headline) + "</div>" +
      '<div class="muted">' + esc(p.location) + ' &middot; <span class="link">Contact info</span></div><div class="conns">500+ connections</div>' +
      '<div class="pbtns">' + (p.id === ME.id ? "" : (isConnected(st, p.id) ? "" : '<button class="btn btn-primary" data-action="connect" data-id="' + p.id + '" data-halo-id="connect">' + icon("people", 16) + " Connect</button>") +
        '<button class="btn ' + (isConnected(st, p.id) ? "btn-primary" : "btn-outline") + '" data-action="message" data-id="' + p.id + '" data-halo-id="message">Message</button><span class="btn btn-muted">More</span>') + "</div></div>" +
      '<div class="card"><h2>About</h2><p>' + esc(p.about || "Building AI agents that use computers like people do.") + '</p></div><div class="card"><h2>Experience</h2>' +
      exp.map(function (x) { return '<div class="exp"><b>' + esc(x[0]) + "</b><div>" + esc(x[1]) + '</div><div class="muted">' + esc(x[2]) + "</div></div>"; }).join("") + "</div></section></div>";
  }
  function companyPage(st, c) {
    HALO.milestone("company_viewed");
    return '<div class="cols narrow"><section class="center wide"><div class="card profile"><div class="banner big"></div><div class="pav">' + logoBox(c, 110) + "</div><h1>" + esc(c.name) + "</h1>" +
      '<div class="headline">' + esc(c.tagline) + '</div><div class="muted">' + esc(c.industry) + " &middot; " + esc(c.hq) + " &middot; " + c.followers + ' followers</div><div class="pbtns">' + followBtn(st, c) +
      '<span class="btn btn-muted">Visit website</span></div></div><div class="card"><h2>Overview</h2><p>' + esc(c.name) + " is a company in " + esc(c.industry.toLowerCase()) + ", headquartered in " + esc(c.hq) + ". " + esc(c.tagline) + "</p></div></section></div>";
  }
  function networkPage(st) {
    const mine = connections(st).map(personById).filter(Boolean);
    const others = ordered(SITE.people().filter(function (p) { return !isConnected(st, p.id); }), 5);
    return '<div class="cols">' + '<aside class="left"><div class="card links"><h3>Manage my network</h3><span>' + icon("people", 18) + " Connections <b>" + mine.length + '</b></span><a href="#/events" data-halo-id="network-events">' + icon("calendar", 18) + " Events</a><span>" + icon("home", 18) + " Pages</span></div></aside>" +
      '<section class="center wider"><div class="card"><h2>People you may know</h2><div class="grid">' + others.map(function (p) {
        return '<div class="pcard"><div class="pcard-banner"></div>' + avatar(p.id, p.name, 72) + '<a class="rname" href="#/in/' + p.id + '" data-halo-id="person-' + p.id + '">' + esc(p.name) + '</a><div class="rhead">' + esc(p.headline) + "</div>" + personActions(st, p) + "</div>";
      }).join("") + '</div></div><div class="card"><h2>Your connections (' + mine.length + ")</h2>" + mine.map(function (p) { return personRow(st, p); }).join("") + "</div></section></div>";
  }

  // ---- events ---------------------------------------------------------------------------------------
  function eventsPage(st) {
    HALO.milestone("events_viewed");
    const going = st.ui.events.attendedEvents;
    return '<div class="cols narrow"><section class="center wide"><div class="card results"><h2>Events for you</h2>' + ordered(SITE.events, 6).map(function (e) {
      return eventRow(e).replace('<a class="btn btn-outline"', going[e.id] ? '<span class="tagok">&#10003; Attending</span><a class="btn btn-outline"' : '<a class="btn btn-outline"');
    }).join("") + "</div></section></div>";
  }
  function eventPage(st, e) {
    HALO.milestone("event_viewed");
    const on = !!st.ui.events.attendedEvents[e.id];
    return '<div class="cols narrow"><section class="center wide"><div class="card event"><div class="ev-banner"><span>' + esc(e.title) + "</span></div><h1>" + esc(e.title) + "</h1>" +
      '<div class="muted">Event by ' + esc(e.organizer) + '</div><div class="ev-when">' + icon("calendar", 18) + " " + esc(e.when) + "</div><div>" + esc(e.format) + " &middot; " + esc(e.place) + "</div>" +
      '<div class="muted">' + (e.attendees + (on ? 1 : 0)).toLocaleString("en-US") + " attendees</div>" +
      '<div class="pbtns"><button class="btn ' + (on ? "btn-outline" : "btn-primary") + '" data-action="attend" data-id="' + e.id + '" data-halo-id="attend" aria-pressed="' + on + '">' + (on ? "&#10003; Attending" : "Attend") + "</button>" +
      '<a class="btn btn-muted" href="#/events" data-halo-id="back-to-events">All events</a></div></div><div class="card"><h2>About</h2><p>' + esc(e.description) + "</p></div></section></div>";
  }

  // ---- messaging ------------------------------------------------------------------------------------
  function bubble(m) {
    if (m.type === "system") return '<div class="sys">' + esc(m.message) + "</div>";
    const a = personById(m.authorId) || { id: m.authorId, name: m.authorId };
    const post = m.type === "post" && m.postData ? '<div class="shared"><b>' + esc((personById(m.postData.authorId) || { name: "" }).name) + "</b><div>" + esc(m.postData.description) + "</div></div>" : "";
    return '<div class="msg">' + avatar(a.id, a.name, 32) + "<div><b>" + esc(a.name) + "</b>" + (m.message ? "<div>" + esc(m.message) + "</div>" : "") + post + "</div></div>";
  }
  function messagingPage(st, view, id) {
    const rooms = st.ui.messaging.chatroomData;
    const ids = Object.keys(rooms).reverse();
    const other = id ? personById(id) : null;
    const room = id ? rooms[id] : null;
    if (other) HALO.milestone("chat_opened");
    const draft = (view.drafts || {})[id] || "";
    const list = ids.map(function (rid) {
      const p = personById(rid) || rooms[rid].participant;
      return '<a class="chat' + (rid === id ? " on" : "") + '" href="#/messaging/' + rid + '" data-halo-id="chat-' + rid + '">' + avatar(p.id, p.name, 48) + "<div><b>" + esc(p.name) + '</b><div class="muted clip">' + esc(rooms[rid].lastMessage) + "</div></div></a>";
    }).join("");
    const convo = other ? '<div class="convo-head"><b>' + esc(other.name) + '</b><div class="muted">' + esc(other.headline) + '</div></div><div class="convo" data-halo-scroll="convo">' +
      (room ? room.messages.map(bubble).join("") : '<div class="sys">Start a conversation with ' + esc(other.name) + "</div>") + "</div>" +
      '<div class="composer-box"><textarea data-halo-id="msg-input" data-draft="' + id + '" aria-label="Write a message" placeholder="Write a message...">' + esc(draft) + '</textarea><button class="btn btn-primary" data-action="send-message" data-id="' + id + '" data-halo-id="msg-send"' + (draft.trim() ? "" : " disabled") + ">Send</button></div>" :
      '<div class="empty pad"><h2>Select a conversation</h2><p>Or start a new one from a member\'s profile.</p></div>';
    return '<div class="cols narrow"><section class="center wider card msgs"><div class="chats"><h3>Messaging</h3>' + (list || '<div class="muted pad">No conversations yet.</div>') + '</div><div class="pane">' + convo + "</div></section></div>";
  }

  // ---- dialogs ----------------------------------------------------------------------------------------
  function modal(st, view) {
    const m = view.modal;
    if (!m) return "";
    let inner = "";
    if (m.kind === "post") {
      inner = '<div class="mhead">' + avatar(ME.id, ME.name, 48) + "<b>" + esc(ME.name) + '</b><button class="x" data-action="close" data-halo-id="post-close" aria-label="Dismiss">&times;</button></div>' +
        '<textarea class="post-text" data-halo-id="post-text" data-field="text" aria-label="What do you want to talk about?" placeholder="What do you want to talk about?">' + esc(m.text) + "</textarea>" +
        '<div class="mfoot"><button class="btn btn-primary" data-action="publish" data-halo-id="post-submit"' + (String(m.text || "").trim() ? "" : " disabled") + ">Post</button></div>";
    } else if (m.kind === "connect") {
      const p = personById(m.id);
      inner = '<div class="mhead"><b>' + (m.note === null ? "Add a note to your invitation?" : "Add a note") + '</b><button class="x" data-action="close" data-halo-id="invite-close" aria-label="Dismiss">&times;</button></div>' +
        (m.note === null ? "<p>Personalize your invitation to " + esc(p.name) + " by adding a note. NetworkIn members are more likely to accept invitations that include a note.</p>" +
          '<div class="mfoot"><button class="btn btn-outline" data-action="add-note" data-halo-id="invite-add-note">Add a note</button><button class="btn btn-primary" data-action="invite" data-halo-id="invite-send">Send without a note</button></div>' :
          '<textarea class="note" data-halo-id="invite-note" data-field="note" maxlength="300" aria-label="Your note" placeholder="Ex: We know each other from...">' + esc(m.note) + '</textarea><div class="muted right" data-count="note">' + String(m.note).length + '/300</div>' +
          '<div class="mfoot"><button class="btn btn-primary" data-action="invite" data-halo-id="invite-send">Send</button></div>');
    } else if (m.kind === "share") {
      const people = connections(st).map(personById).filter(Boolean);
      inner = '<div class="mhead"><b>Send post</b><button class="x" data-action="close" data-halo-id="share-close" aria-label="Dismiss">&times;</button></div><div class="share-list">' +
        people.map(function (p) {
          const on = m.selected.indexOf(p.id) !== -1;
          return '<label class="share-row">' + avatar(p.id, p.name, 40) + '<span class="who"><b>' + esc(p.name) + '</b><span class="muted">' + esc(p.headline) + '</span></span><input type="checkbox" data-action="share-pick" data-id="' + p.id + '" data-halo-id="share-' + p.id + '"' + (on ? " checked" : "") + "></label>";
        }).join("") + '</div><input type="text" class="share-note" data-halo-id="share-note" data-field="note" aria-label="Write a message" placeholder="Write a message..." value="' + esc(m.note) + '">' +
        '<div class="mfoot"><button class="btn btn-primary" data-action="share-send" data-halo-id="share-send"' + (m.selected.length ? "" : " disabled") + ">Send</button></div>";
    }
    return '<div class="overlay"><div class="modal" role="dialog" aria-modal="true">' + inner + "</div></div>";
  }
  function toast(view) {
    return view.toast ? '<div class="toast" role="status">' + esc(view.toast) + "</div>" : "";
  }

  // ---- render -----------------------------------------------------------------------------------------
  function render() {
    const r = route();
    let view = HALO.view();
    if (view.route !== location.hash) {
      view = HALO.patchView({ route: location.hash, scroll: {}, query: r.kind === "search" ? r.q : view.query });
    }
    const st = HALO.state();
    let main, title = "Feed | NetworkIn";
    if (r.kind === "search") { main = searchPage(st, r); title = r.q + " | Search | NetworkIn"; }
    else if (r.kind === "profile") { const p = personById(r.id); main = p ? profilePage(st, p) : notFound(); if (p) title = p.name + " | NetworkIn"; }
    else if (r.kind === "company") { const c = companyById(r.id); main = c ? companyPage(st, c) : notFound(); if (c) title = c.name + " | NetworkIn"; }
    else if (r.kind === "events") { main = eventsPage(st); title = "Events | NetworkIn"; }
    else if (r.kind === "event") { const e = eventById(r.id); main = e ? eventPage(st, e) : notFound(); if (e) title = e.title + " | NetworkIn"; }
    else if (r.kind === "messaging") { main = messagingPage(st, view, r.id && personById(r.id) ? r.id : null); title = "Messaging | NetworkIn"; }
    else if (r.kind === "network") { main = networkPage(st); title = "My Network | NetworkIn"; }
    else main = feedPage(st);
    document.title = title;
    document.getElementById("app").innerHTML = header(view, r) + '<main class="scroll page-' + r.kind + '" data-halo-scroll="main"><div class="wrap"' + offsetStyle() + ">" + main + "</div></main>" + modal(st, view) + toast(view);
    HALO.restoreUi();
  }
  function notFound() {
    return '<div class="cols narrow"><section class="center wide"><div class="card empty"><h2>This page doesn\'t exist</h2><p>Please check your URL or return to your feed.</p></div></section></div>';
  }

  // ---- mutations ----------------------------------------------------------------------------------------
  function update(fn) {
    const st = HALO.state();
    fn(st);
    HALO.commit(st);
    return st;
  }
  function pushMessage(st, id, msg) {
    const rooms = st.ui.messaging.chatroomData;
    if (!rooms[id]) rooms[id] = { id: id, participant: SITE.participant(personById(id)), messages: [], lastMessage: "", lastMessageAuthorId: "" };
    const room = rooms[id];
    msg.id = "m-" + id + "-" + (room.messages.length + 1);
    room.messages.push(msg);
    room.lastMessage = msg.message || (msg.type === "post" ? "Shared a post" : "");
    room.lastMessageAuthorId = msg.authorId;
  }
  function search(q) {
    const term = String(q || "").trim();
    if (!term) return;
    update(function (st) {
      const h = st.ui.searchHistory;
      h[String(Object.keys(h).length)] = { searchTerm: term, category: "all" };
    });
    HALO.milestone("search_done");
    HALO.patchView({ query: term, focus: null, toast: null });
    go(searchHash("all", term));
  }
  function invite(id) {
    const p = personById(id);
    const note = String(HALO.view().modal.note || "").trim();
    update(function (st) {
      if (isConnected(st, id)) return;
      const keys = Object.keys(st.contactList).map(Number);
      st.contactList[String(keys.length ? Math.max.apply(null, keys) + 1 : 0)] = id;
      st.connectionGrades[id] = 1;
      // Invitations in NetworkIn are accepted at once; the conversation records both steps.
      pushMessage(st, id, { authorId: ME.id, message: "Connection request sent", type: "system" });
      if (note) pushMessage(st, id, { authorId: ME.id, message: note, type: "text" });
      pushMessage(st, id, { authorId: id, message: p.name + " accepted your connection request", type: "system" });
    });
    HALO.milestone("connection_made");
    HALO.patchView({ modal: null, focus: null, toast: p.name + " accepted your invitation. You are now connected." });
  }
  function sendMessage(id) {
    const view = HALO.view();
    const text = String((view.drafts || {})[id] || "").trim();
    if (!text) return;
    update(function (st) { pushMessage(st, id, { authorId: ME.id, message: text, type: "text" }); });
    const drafts = view.drafts || {};
    delete drafts[id];
    HALO.milestone("message_sent");
    HALO.patchView({ drafts: drafts, focus: null });
  }
  function publish() {
    const text = String(HALO.view().modal.text || "").trim();
    if (!text) return;
    update(function (st) {
      const posts = st.ui.feed.postDynamicData;
      let n = 1;
      while (posts["post-" + (100 + n)]) n++;
      posts["post-" + (100 + n)] = { id: "post-" + (100 + n), type: "self-post", authorId: ME.id, description: text, time: "Now", likes: 0, liked: false, comments: 0, reposts: 0, seq: n };
    });
    HALO.milestone("post_created");
    HALO.patchView({ modal: null, focus: null, toast: "Post successful." });
  }
  function sharePost() {
    const m = HALO.view().modal;
    if (!m.selected.length) return;
    update(function (st) {
      const post = st.ui.feed.postDynamicData[m.postId];
      m.selected.forEach(function (id) {
        pushMessage(st, id, { authorId: ME.id, message: String(m.note || "").trim(), type: "post", postData: { id: post.id, authorId: post.authorId, description: post.description } });
      });
    });
    HALO.milestone("post_shared");
    HALO.patchView({ modal: null, focus: null, toast: "Post sent to " + m.selected.length + (m.selected.length === 1 ? " person." : " people.") });
  }

  // ---- events --------------------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    const view = HALO.view();
    if (!el) {
      if (view.toast && !e.target.closest("input, textarea")) { HALO.patchView({ toast: null }); render(); }
      return;
    }
    const action = el.getAttribute("data-action");
    if (action !== "share-pick") e.preventDefault();
    const id = el.getAttribute("data-id");
    HALO.patchView({ toast: null });
    if (action === "follow") {
      let on = false;
      update(function (st) {
        if (st.ui.followedCompanies[id]) delete st.ui.followedCompanies[id];
        else { st.ui.followedCompanies[id] = true; on = true; }
      });
      if (on) HALO.milestone("company_followed");
    } else if (action === "connect") {
      HALO.milestone("connect_opened");
      HALO.patchView({ modal: { kind: "connect", id: id, note: null } });
    } else if (action === "add-note") {
      HALO.patchView({ modal: Object.assign(view.modal, { note: "" }) });
    } else if (action === "invite") {
      invite(view.modal.id);
    } else if (action === "message") {
      go("#/messaging/" + id);
      return;
    } else if (action === "send-message") {
      sendMessage(id);
    } else if (action === "compose") {
      HALO.milestone("post_composer_opened");
      HALO.patchView({ modal: { kind: "post", text: "" } });
    } else if (action === "publish") {
      publish();
    } else if (action === "like") {
      update(function (st) {
        const p = st.ui.feed.postDynamicData[id];
        p.liked = !p.liked;
        p.likes += p.liked ? 1 : -1;
      });
      if (HALO.state().ui.feed.postDynamicData[id].liked) HALO.milestone("post_liked");
    } else if (action === "share") {
      HALO.milestone("share_opened");
      HALO.patchView({ modal: { kind: "share", postId: id, selected: [], note: "" } });
    } else if (action === "share-pick") {
      const m = view.modal;
      m.selected = el.checked ? m.selected.concat([id]) : m.selected.filter(function (x) { return x !== id; });
      HALO.patchView({ modal: m });
    } else if (action === "share-send") {
      sharePost();
    } else if (action === "attend") {
      let on = false;
      update(function (st) {
        if (st.ui.events.attendedEvents[id]) delete st.ui.events.attendedEvents[id];
        else { st.ui.events.attendedEvents[id] = true; on = true; }
      });
      if (on) HALO.milestone("event_attending");
    } else if (action === "close") {
      HALO.patchView({ modal: null, focus: null });
    }
    render();
  });

  document.addEventListener("submit", function (e) {
    e.preventDefault();
    search(HALO.view().query);
  });

  document.addEventListener("input", function (e) {
    const t = e.target;
    const view = HALO.view();
    if (t.getAttribute("data-halo-id") === "search") {
      HALO.patchView({ query: t.value });
    } else if (t.getAttribute("data-draft")) {
      const drafts = view.drafts || {};
      drafts[t.getAttribute("data-draft")] = t.value;
      HALO.patchView({ drafts: drafts });
      const send = document.querySelector('[data-halo-id="msg-send"]');
      if (send) send.disabled = !t.value.trim();
    } else if (t.getAttribute("data-field") && view.modal) {
      view.modal[t.getAttribute("data-field")] = t.value;
      HALO.patchView({ modal: view.modal });
      const count = document.querySelector('[data-count="note"]');
      if (count) count.textContent = t.value.length + "/300";
      const btn = document.querySelector('[data-halo-id="post-submit"]');
      if (btn) btn.disabled = !t.value.trim();
    }
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
