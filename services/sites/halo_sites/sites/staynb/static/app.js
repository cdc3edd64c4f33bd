/* Staynb app: an Airbnb-like single page. Routes (location.hash):
 *   #/                 home: search bar, categories, every stay
 *   #/s                results of the applied search (destination, dates, guests, filters)
 *   #/rooms/<id>       a stay: photos, rooms, amenities, reservation card, share, save
 *   #/book/<id>        confirm and pay
 *   #/trips            reservations
 *   #/wishlists        wishlists, #/wishlists/<wid> one wishlist
 * What /finish diffs (HALO.state()) is REAL's Staynb state: the applied search, the booking and the
 * wishlists. The search being edited (draft destination, dates, guests), the open panel or dialog,
 * the filter choices before "Show places" and the payment fields live in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const SITE = HALO.site();
  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
  const SHORT = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const GUESTS = [["Adults", "Ages 13 or above"], ["Children", "Ages 2 - 12"], ["Infants", "Under 2"], ["Pets", "Bringing a service animal?"]];
  const CATEGORIES = [["all", "All stays"], ["beach", "Beachfront"], ["city", "Cities"], ["mountain", "Mountains"], ["lake", "Lakes"], ["country", "Countryside"], ["jungle", "Tropical"]];
  const ROOM_CHOICES = [0, 1, 2, 3, 4, 5, 6, 7, 8];
  const HOME_PAGE = 24; // stays on the home page before 'Show more': a page renders on every keystroke
  const CHATS = [["group", "Group chat: Sam, Priya, Jordan & you"], ["mom", "Mom"], ["jordan", "Jordan Lee"], ["sam", "Sam Ortiz"]];
  const SHARE_CHANNELS = [["copy", "Copy Link"], ["email", "Email"], ["messages", "Messages"], ["whatsapp", "WhatsApp"], ["messenger", "Messenger"], ["facebook", "Facebook"]];

  // ---- dates (UTC arithmetic on fixed days: nothing reads the clock) ------------------------------
  function ymd(y, m, d) {
    return y + "-" + String(m).padStart(2, "0") + "-" + String(d).padStart(2, "0");
  }
  function dayNum(iso) {
    const p = iso.split("-").map(Number);
    return Date.UTC(p[0], p[1] - 1, p[2]) / 86400000;
  }
  function short(iso) {
    const p = iso.slice(0, 10).split("-").map(Number);
    return SHORT[p[1] - 1] + " " + p[2];
  }
  function nights(start, end) {
    return start && end ? Math.max(1, dayNum(end.slice(0, 10)) - dayNum(start.slice(0, 10))) : 0;
  }
  function addMonths(ym, n) {
    const p = ym.split("-").map(Number);
    const t = p[0] * 12 + p[1] - 1 + n;
    return Math.floor(t / 12) + "-" + String(t % 12 + 1).padStart(2, "0");
  }
  function isoInstant(day) {
    return day ? day + "T00:00:00.000Z" : null;
  }

  // ---- data helpers --------------------------------------------------------------------------------
  function words(s) {
    return String(s || "").toLowerCase().replace(/[^a-z0-9 ]+/g, " ").split(/\s+/).filter(Boolean);
  }
  function stayById(id) {
    return SITE.stays().filter(function (s) { return s.id === id; })[0] || null;
  }
  function ordered(list) {
    // Seed 0 lists stays in the canonical order; another seed deals them in its own order.
    const seed = Number(HALO.meta().seed || 0);
    if (!seed) return list;
    const rank = {};
    HALO.rng(seed).shuffle(SITE.stays().map(function (s) { return s.id; })).forEach(function (id, i) { rank[id] = i; });
    return list.slice().sort(function (a, b) { return rank[a.id] - rank[b.id]; });
  }
  function matchesDestination(stay, dest) {
    const q = words(dest);
    if (!q.length) return true;
    if (q.indexOf("nearby") !== -1 || q.join(" ") === "near me") return stay.nearby;
    const w = words([stay.city, stay.region, stay.country, stay.region === "CA" ? "California" : stay.region === "FL" ? "Florida" : ""].join(" "));
    if (stay.country === "United States") w.push("usa", "us");
    return q.every(function (x) { return w.indexOf(x) !== -1; });
  }
  function results(search) {
    const f = search.appliedFilters || {};
    const g = search.appliedGuestCounts || {};
    const party = (g.Adults || 0) + (g.Children || 0);
    return ordered(SITE.stays().filter(function (s) {
      return matchesDestination(s, search.appliedDestination) && s.guests >= party &&
        s.rooms.bedrooms >= (f.bedrooms || 0) && s.rooms.beds >= (f.beds || 0) && s.rooms.bathrooms >= (f.bathrooms || 0) &&
        (f.amenities || []).every(function (a) { return s.amenities.indexOf(a) !== -1; });
    }));
  }
  function suggestions(text) {
    const q = words(text);
    const nearby = { label: "Nearby", kind: "nearby", note: "Find what's around you" };
    if (!q.length) {
      return [nearby].concat(["Paris, France", "Rome, Italy", "Cape Town, South Africa", "Vancouver, Canada", "Miami, FL"].map(function (l) {
        return SITE.destinations.filter(function (d) { return d.label === l; })[0];
      }));
    }
    const list = SITE.destinations.filter(function (d) {
      const w = words(d.label);
      return q.every(function (x, i) { return w.some(function (y) { return i === q.length - 1 ? y.indexOf(x) === 0 : y === x; }); });
    });
    if ("nearby".indexOf(q[0]) === 0) list.unshift(nearby);
    return list.slice(0, 6);
  }
  function slug(label) {
    return words(label).join("-");
  }
  function guestTotal(g) {
    return (g.Adults || 0) + (g.Children || 0);
  }
  function guestText(g) {
    const n = guestTotal(g);
    if (!n && !g.Infants && !g.Pets) return "";
    let t = n + (n === 1 ? " guest" : " guests");
    if (g.Infants) t += ", " + g.Infants + (g.Infants === 1 ? " infant" : " infants");
    if (g.Pets) t += ", " + g.Pets + (g.Pets === 1 ? " pet" : " pets");
    return t;
  }
  function money(x) {
    return "$" + Math.round(x).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function roomsText(r) {
    return (r.bedrooms ? r.bedrooms + (r.bedrooms === 1 ? " bedroom" : " bedrooms") : "Studio") + " · " + r.beds + (r.beds === 1 ? " bed" : " beds");
  }
  function savedIn(st, id) {
    return Object.keys(st.wishlist.wishlists).filter(function (w) {
      return st.wishlist.wishlists[w].stays.some(function (s) { return s.id === id; });
    });
  }

  // ---- view state --------------------------------------------------------------------------------------
  function draftOf(view, st) {
    if (view.draft) return view.draft;
    const s = st.search;
    const d = s.appliedDates || {};
    return {
      destination: s.appliedDestination || "",
      start: d.startDate ? d.startDate.slice(0, 10) : null, end: d.endDate ? d.endDate.slice(0, 10) : null,
      guests: Object.assign({ Adults: 0, Children: 0, Infants: 0, Pets: 0 }, s.appliedGuestCounts || {}),
    };
  }
  function setDraft(fn) {
    const view = HALO.view();
    const d = draftOf(view, HALO.state());
    fn(d);
    HALO.patchView({ draft: d });
  }
  function route() {
    const parts = (location.hash || "#/").replace(/^#\/?/, "").split("/");
    if (parts[0] === "s") return { kind: "results" };
    if (parts[0] === "rooms" && parts[1]) return { kind: "stay", id: parts[1] };
    if (parts[0] === "book" && parts[1]) return { kind: "book", id: parts[1] };
    if (parts[0] === "trips") return { kind: "trips" };
    if (parts[0] === "wishlists") return parts[1] ? { kind: "wishlist", id: parts[1] } : { kind: "wishlists" };
    return { kind: "home" };
  }
  function go(hash) {
    if (location.hash !== hash) location.hash = hash;
    render();
  }

  // ---- header and search bar ---------------------------------------------------------------------------
  function logo() {
    return '<a class="logo" href="#/" data-halo-id="logo" aria-label="Staynb home"><svg width="32" height="34" viewBox="0 0 32 34" aria-hidden="true">' +
      '<path d="M16 2c-2 0-3.4 1.3-4.6 3.8L3.6 22.6C2.2 25.8 3.9 31 8.7 31c2.6 0 4.8-1.7 7.3-4.6C18.5 29.3 20.7 31 23.3 31c4.8 0 6.5-5.2 5.1-8.4L20.6 5.8C19.4 3.3 18 2 16 2zm0 21.6c-1.8-2.3-3.3-4.8-3.3-6.8 0-2 1.4-3.3 3.3-3.3s3.3 1.3 3.3 3.3c0 2-1.5 4.5-3.3 6.8z" fill="#ff385c"/></svg><span>staynb</span></a>';
  }
  function header() {
    return '<header class="top">' + logo() + '<nav class="tabs"><a href="#/" class="on" data-halo-id="nav-stays">Stays</a><span>Experiences</span></nav>' +
      '<nav class="right"><span class="host">Staynb your home</span><a href="#/wishlists" data-halo-id="nav-wishlists">Wishlists</a><a href="#/trips" data-halo-id="nav-trips">Trips</a>' +
      '<span class="avatar" aria-label="Signed in as Alex">A</span></nav></header>';
  }
  function searchBar(st, view) {
    const d = draftOf(view, st);
    const seg = function (panel, id, labelText, value, placeholder, extra) {
      return '<div class="seg' + (view.panel === panel ? " active" : "") + '" data-action="panel" data-panel="' + panel + '" data-halo-id="' + id + '" role="button" aria-expanded="' + (view.panel === panel) + '">' +
        '<div class="seg-label">' + labelText + "</div>" + (extra || '<div class="seg-value' + (value ? "" : " none") + '">' + esc(value || placeholder) + "</div>") + "</div>";
    };
    const whereInput = '<input type="text" data-halo-id="destination" aria-label="Where" placeholder="Search destinations" value="' + esc(d.destination) + '" autocomplete="off">';
    return '<div class="sbar-wrap"><div class="sbar' + (view.panel ? " lit" : "") + '">' +
      seg("where", "search-where", "Where", "", "", whereInput) + '<span class="div"></span>' +
      seg("dates", "search-checkin", "Check in", d.start ? short(d.start) : "", "Add dates") + '<span class="div"></span>' +
      seg("dates", "search-checkout", "Check out", d.end ? short(d.end) : "", "Add dates") + '<span class="div"></span>' +
      seg("guests", "search-who", "Who", guestText(d.guests), "Add guests") +
      '<button class="sbtn" data-action="search" data-halo-id="search-button" aria-label="Search"><svg width="16" height="16" viewBox="0 0 32 32" aria-hidden="true"><path d="M13 0a13 13 0 0 1 10.5 20.67l7.91 7.92-2.82 2.82-7.92-7.91A13 13 0 1 1 13 0zm0 4a9 9 0 1 0 0 18 9 9 0 0 0 0-18z" fill="#fff"/></svg><span>Search</span></button>' +
      panel(st, view, d) + "</div></div>";
  }
  function panel(st, view, d) {
    if (view.panel === "where") return wherePanel(st, d);
    if (view.panel === "dates") return datesPanel(view, d);
    if (view.panel === "guests") return guestsPanel(d);
    return "";
  }
  function wherePanel(st, d) {
    const recent = Object.keys(st.search.recentSearches || {}).sort(function (a, b) { return a - b; }).map(function (k) { return st.search.recentSearches[k]; });
    const recentHtml = !d.destination && recent.length ? '<h4>Recent searches</h4>' + recent.slice(0, 3).map(function (r, i) {
      return '<button class="sugg" data-action="recent" data-index="' + i + '" data-halo-id="recent-' + i + '"><span class="pin">&#8634;</span><span><b>' + esc(r.destination || "Anywhere") + "</b><small>" +
        esc([r.dates && r.dates.startDate ? short(r.dates.startDate) + " - " + short(r.dates.endDate) : "Any week", r.guests].filter(Boolean).join(" · ")) + "</small></span></button>";
    }).join("") : "";
    const list = suggestions(d.destination);
    return '<div class="panel where" role="listbox" aria-label="Destinations">' + recentHtml + "<h4>" + (d.destination ? "Destinations" : "Suggested destinations") + "</h4>" +
      (list.length ? list.map(function (s) {
        return '<button class="sugg" role="option" data-action="suggest" data-value="' + esc(s.label) + '" data-halo-id="suggest-' + slug(s.label) + '"><span class="pin">' +
          (s.kind === "nearby" ? "&#10148;" : "&#9679;") + "</span><span><b>" + esc(s.label) + "</b>" + (s.note ? "<small>" + esc(s.note) + "</small>" : "") + "</span></button>";
      }).join("") : '<p class="muted">No matching destinations. Search anyway to look for "' + esc(d.destination) + '".</p>') + "</div>";
  }
  function monthGrid(ym, d) {
    const p = ym.split("-").map(Number);
    const first = new Date(Date.UTC(p[0], p[1] - 1, 1)).getUTCDay();
    const count = new Date(Date.UTC(p[0], p[1], 0)).getUTCDate();
    const today = dayNum(SITE.today);
    let cells = "";
    for (let i = 0; i < first; i++) cells += "<span></span>";
    for (let day = 1; day <= count; day++) {
      const iso = ymd(p[0], p[1], day);
      const n = dayNum(iso);
      const past = n < today;
      const inRange = d.start && d.end && n > dayNum(d.start) && n < dayNum(d.end);
      const picked = iso === d.start || iso === d.end;
      cells += '<button class="day' + (past ? " past" : "") + (inRange ? " range" : "") + (picked ? " picked" : "") + (n === today ? " today" : "") + '"' +
        (past ? " disabled" : ' data-action="day" data-value="' + iso + '"') + ' data-halo-id="day-' + iso + '" aria-label="' + MONTHS[p[1] - 1] + " " + day + ", " + p[0] + (picked ? ", selected" : "") + '">' + day + "</button>";
    }
    return '<div class="month"><h5>' + MONTHS[p[1] - 1] + " " + p[0] + '</h5><div class="dow"><span>Su</span><span>Mo</span><span>Tu</span><span>We</span><span>Th</span><span>Fr</span><span>Sa</span></div><div class="days">' + cells + "</div></div>";
  }
  function datesPanel(view, d) {
    const cal = view.cal || SITE.today.slice(0, 7);
    const n = nights(d.start, d.end);
    const summary = d.start ? short(d.start) + (d.end && d.end !== d.start ? " - " + short(d.end) : "") + " · " + n + (n === 1 ? " night" : " nights") : "Select your check-in date";
    return '<div class="panel dates" role="dialog" aria-label="Dates"><div class="cal-head"><button class="arrow" data-action="cal" data-step="-1" data-halo-id="cal-prev" aria-label="Previous month"' + (cal <= SITE.today.slice(0, 7) ? " disabled" : "") + ">&#8249;</button>" +
      '<span class="cal-sum">' + esc(summary) + '</span><button class="arrow" data-action="cal" data-step="1" data-halo-id="cal-next" aria-label="Next month">&#8250;</button></div>' +
      '<div class="months">' + monthGrid(cal, d) + monthGrid(addMonths(cal, 1), d) + "</div>" +
      '<div class="cal-foot"><span class="muted">Click one day for a single night, or a check-in and a check-out day.</span><button class="link" data-action="dates-clear" data-halo-id="dates-clear">Clear dates</button></div></div>';
  }
  function guestsPanel(d) {
    return '<div class="panel guests" role="dialog" aria-label="Guests">' + GUESTS.map(function (g) {
      const key = g[0].toLowerCase();
      const v = d.guests[g[0]] || 0;
      return '<div class="grow"><div><b>' + g[0] + "</b><small>" + g[1] + '</small></div><div class="stepper"><button class="round" data-action="guest" data-name="' + g[0] + '" data-step="-1" data-halo-id="' + key + '-minus" aria-label="Decrease ' + key + '"' + (v ? "" : " disabled") + ">&minus;</button>" +
        '<span data-halo-id="' + key + '-count">' + v + '</span><button class="round" data-action="guest" data-name="' + g[0] + '" data-step="1" data-halo-id="' + key + '-plus" aria-label="Increase ' + key + '">+</button></div></div>';
    }).join("") + "</div>";
  }

  // ---- cards and lists ------------------------------------------------------------------------------------
  function heart(on) {
    return '<svg width="24" height="24" viewBox="0 0 32 32" aria-hidden="true"><path d="M16 28c7-4.73 14-10 14-17a6.98 6.98 0 0 0-7-7c-1.8 0-3.58.68-4.95 2.05L16 8.1l-2.05-2.05a6.98 6.98 0 0 0-9.9 0A6.98 6.98 0 0 0 2 11c0 7 7 12.27 14 17z" fill="' + (on ? "#ff385c" : "rgba(0,0,0,0.5)") + '" stroke="#fff" stroke-width="2"/></svg>';
  }
  function card(st, stay, dates) {
    const saved = savedIn(st, stay.id).length > 0;
    const n = dates ? nights(dates.startDate, dates.endDate) : 0;
    return '<article class="card"><a class="card-photo" href="#/rooms/' + stay.id + '" tabindex="-1">' + STAY_PHOTO(stay, 280, 250, 0) + "</a>" +
      '<button class="heart" data-action="save" data-id="' + stay.id + '" data-halo-id="save-' + stay.id + '" aria-label="' + (saved ? "Remove from wishlist " : "Save to wishlist ") + esc(stay.title) + '" aria-pressed="' + saved + '">' + heart(saved) + "</button>" +
      '<a class="card-body" href="#/rooms/' + stay.id + '" data-halo-id="stay-' + stay.id + '"><div class="card-line"><b>' + esc(stay.kind) + " in " + esc(stay.location) + '</b><span class="rate">&#9733; ' + stay.rating.toFixed(2) + "</span></div>" +
      '<div class="muted">' + esc(stay.title) + '</div><div class="muted">' + roomsText(stay.rooms) + "</div>" +
      '<div class="price"><b>' + money(stay.price) + "</b> night" + (n > 1 ? ' <span class="muted">· ' + money(stay.price * n) + " total</span>" : "") + "</div></a></article>";
  }
  function categories(view) {
    const cat = view.category || "all";
    return '<div class="cats">' + CATEGORIES.map(function (c) {
      return '<button class="cat' + (cat === c[0] ? " on" : "") + '" data-action="category" data-value="' + c[0] + '" data-halo-id="category-' + c[0] + '">' + esc(c[1]) + "</button>";
    }).join("") + filtersButton(HALO.state()) + "</div>";
  }
  function filtersButton(st) {
    const f = st.search.appliedFilters;
    const count = f ? (f.amenities || []).length + ["bedrooms", "beds", "bathrooms"].filter(function (k) { return f[k]; }).length : 0;
    return '<button class="filters-btn" data-action="filters-open" data-halo-id="filters"><svg width="16" height="16" viewBox="0 0 16 16" aria-hidden="true"><path d="M2 4h8M13 4h1M2 12h2M7 12h7" stroke="#222" stroke-width="1.6"/><circle cx="11.5" cy="4" r="1.8" fill="none" stroke="#222" stroke-width="1.4"/><circle cx="5.5" cy="12" r="1.8" fill="none" stroke="#222" stroke-width="1.4"/></svg> Filters' +
      (count ? '<span class="badge">' + count + "</span>" : "") + "</button>";
  }
  function homePage(st, view) {
    const cat = view.category || "all";
    // The home page mixes places: every place's first stay, then every second one, ...
    const byRank = SITE.stays().filter(function (s) { return cat === "all" || s.scene === cat; }).map(function (s, i) { return [Number(s.id.slice(-1)), i, s]; })
      .sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; }).map(function (x) { return x[2]; });
    const list = ordered(byRank);
    const shown = list.slice(0, view.shown || HOME_PAGE);
    return categories(view) + '<div class="grid">' + shown.map(function (s) { return card(st, s, null); }).join("") + "</div>" +
      (shown.length < list.length ? '<div class="more"><p>Continue exploring stays</p><button class="dark" data-action="more" data-halo-id="show-more">Show more</button></div>' : "");
  }
  function resultsPage(st) {
    const s = st.search;
    const list = results(s);
    const dest = s.appliedDestination;
    const where = !dest ? "anywhere" : words(dest).indexOf("nearby") !== -1 ? "nearby" : "in " + dest;
    const d = s.appliedDates || {};
    const bits = [d.startDate ? short(d.startDate) + (d.endDate && d.endDate !== d.startDate ? " - " + short(d.endDate) : "") : "Any week", guestText(s.appliedGuestCounts || {}) || "Any guests"];
    const f = s.appliedFilters || {};
    const chips = (f.amenities || []).concat(["bedrooms", "beds", "bathrooms"].filter(function (k) { return f[k]; }).map(function (k) { return f[k] + "+ " + k; }));
    return '<div class="results-head"><div><h1 data-halo-id="results-title">' + list.length + (list.length === 1 ? " place " : " places ") + esc(where) + "</h1>" +
      '<div class="muted">' + esc(bits.join(" · ")) + (chips.length ? ' · <span class="chips">' + chips.map(esc).join(", ") + "</span>" : "") + "</div></div>" + filtersButton(st) + "</div>" +
      (list.length ? '<div class="grid">' + list.map(function (x) { return card(st, x, d.startDate ? d : null); }).join("") + "</div>" :
        '<div class="empty"><h2>No exact matches</h2><p>Try changing or removing some of your filters or adjusting your search area.</p></div>');
  }

  // ---- the stay page ---------------------------------------------------------------------------------------
  function stayPage(st, view, stay) {
    const saved = savedIn(st, stay.id).length > 0;
    const photos = '<div class="gallery"><div class="g-main">' + STAY_PHOTO(stay, 560, 380, 0) + '</div><div class="g-side">' +
      [1, 2, 3, 4].map(function (i) { return "<div>" + STAY_PHOTO(stay, 272, 186, i) + "</div>"; }).join("") + "</div></div>";
    const r = stay.rooms;
    const facts = stay.guests + " guests · " + (r.bedrooms ? r.bedrooms + (r.bedrooms === 1 ? " bedroom" : " bedrooms") : "Studio") + " · " + r.beds + (r.beds === 1 ? " bed" : " beds") + " · " + r.bathrooms + (r.bathrooms === 1 ? " bath" : " baths");
    const amen = '<h3>What this place offers</h3><ul class="amen" data-halo-id="amenities">' + SITE.amenities.map(function (a) {
      const has = stay.amenities.indexOf(a) !== -1;
      return '<li class="' + (has ? "" : "no") + '">' + (has ? "&#10003; " : "") + esc(a) + (has ? "" : " (unavailable)") + "</li>";
    }).join("") + "</ul>";
    return '<div class="stay"><div class="stay-title"><h1>' + esc(stay.title) + '</h1><div class="stay-actions"><button class="link" data-action="share-open" data-id="' + stay.id + '" data-halo-id="share">&#8599; Share</button>' +
      '<button class="link" data-action="save" data-id="' + stay.id + '" data-halo-id="save-stay" aria-pressed="' + saved + '">' + (saved ? "&#9829; Saved" : "&#9825; Save") + "</button></div></div>" + photos +
      '<div class="stay-body"><div class="stay-main"><h2>' + esc(stay.kind) + " in " + esc(stay.location) + '</h2><div class="facts" data-halo-id="stay-facts">' + esc(facts) + "</div>" +
      '<div class="rating-line">&#9733; ' + stay.rating.toFixed(2) + " · " + stay.reviews + " reviews</div>" +
      '<div class="hostline"><span class="avatar big">' + esc(stay.host.name[0]) + "</span><div><b>Hosted by " + esc(stay.host.name) + "</b><div class=\"muted\">" + (stay.host.superhost ? "Superhost · " : "") + stay.host.years + (stay.host.years === 1 ? " year" : " years") + " hosting</div></div></div>" +
      '<p class="desc">Welcome to our ' + esc(stay.kind.toLowerCase()) + " in " + esc(stay.city) + ". " + esc(stay.title) + " with " + (r.bedrooms ? r.bedrooms + " bedroom" + (r.bedrooms === 1 ? "" : "s") : "an open-plan studio") +
      ", " + r.bathrooms + " bathroom" + (r.bathrooms === 1 ? "" : "s") + " and room for " + stay.guests + " guests. Check-in after 3:00 PM, checkout before 11:00 AM.</p>" + amen + "</div>" +
      reserveCard(st, view, stay) + "</div></div>";
  }
  function reserveCard(st, view, stay) {
    const d = draftOf(view, st);
    const n = nights(d.start, d.end);
    const total = n ? stay.price * n + stay.cleaningFee + Math.round(stay.price * n * 0.14) : 0;
    const tooMany = guestTotal(d.guests) > stay.guests;
    return '<aside class="reserve"><div class="r-price"><b>' + money(stay.price) + "</b> night</div>" +
      '<div class="r-box"><button class="r-cell" data-action="panel" data-panel="dates" data-halo-id="book-checkin"><small>CHECK-IN</small>' + (d.start ? short(d.start) : "Add date") + "</button>" +
      '<button class="r-cell" data-action="panel" data-panel="dates" data-halo-id="book-checkout"><small>CHECKOUT</small>' + (d.end ? short(d.end) : "Add date") + "</button>" +
      '<button class="r-cell wide" data-action="panel" data-panel="guests" data-halo-id="book-guests"><small>GUESTS</small>' + esc(guestText(d.guests) || "Add guests") + "</button></div>" +
      (view.notice && view.notice.indexOf("reserve:") === 0 ? '<div class="err" role="alert">' + esc(view.notice.slice(8)) + "</div>" : "") +
      (tooMany ? '<div class="err" role="alert">This place has a maximum of ' + stay.guests + " guests.</div>" : "") +
      '<button class="primary" data-action="reserve" data-id="' + stay.id + '" data-halo-id="reserve">' + (n ? "Reserve" : "Check availability") + "</button>" +
      (n ? '<div class="muted center">You won\'t be charged yet</div><div class="r-line"><span>' + money(stay.price) + " x " + n + (n === 1 ? " night" : " nights") + "</span><span>" + money(stay.price * n) + "</span></div>" +
        '<div class="r-line"><span>Cleaning fee</span><span>' + money(stay.cleaningFee) + '</span></div><div class="r-line"><span>Staynb service fee</span><span>' + money(Math.round(stay.price * n * 0.14)) + "</span></div>" +
        '<div class="r-line total"><span>Total</span><span data-halo-id="reserve-total">' + money(total) + "</span></div>" : "") + "</aside>";
  }

  // ---- booking -------------------------------------------------------------------------------------------
  function bookPage(st, view, stay) {
    const cur = st.booking.currentBooking;
    if (!cur || cur.stayId !== stay.id) {
      return '<div class="empty"><h2>Your reservation has expired</h2><p><a href="#/rooms/' + stay.id + '" data-halo-id="back-to-stay">Go back to the listing</a> to reserve it again.</p></div>';
    }
    const pay = view.pay || { cardNumber: "", expiration: "", cvv: "", zipcode: "" };
    const errs = st.booking.errors || {};
    const field = function (key, id, labelText, placeholder) {
      return '<label class="pf' + (errs[key] ? " bad" : "") + '"><span>' + labelText + '</span><input type="text" data-pay="' + key + '" data-halo-id="' + id + '" placeholder="' + placeholder + '" value="' + esc(pay[key]) + '" autocomplete="off"></label>' +
        (errs[key] ? '<div class="err" role="alert">' + esc(errs[key]) + "</div>" : "");
    };
    return '<div class="book"><div class="book-main"><h1><a href="#/rooms/' + stay.id + '" data-halo-id="back-to-stay" aria-label="Back">&#8249;</a> Confirm and pay</h1>' +
      '<h3>Your trip</h3><div class="r-line"><span><b>Dates</b><br>' + esc(short(cur.startDate) + (cur.endDate !== cur.startDate ? " - " + short(cur.endDate) : "")) + "</span></div>" +
      '<div class="r-line"><span><b>Guests</b><br>' + esc(guestText(cur.guests)) + "</span></div><h3>Pay with</h3>" +
      field("cardNumber", "card-number", "Card number", "0000 0000 0000 0000") + '<div class="two">' + "<div>" + field("expiration", "card-expiration", "Expiration", "MM/YY") + "</div><div>" +
      field("cvv", "card-cvv", "CVV", "123") + "</div></div>" + field("zipcode", "card-zip", "ZIP code", "94103") +
      '<p class="muted small">By selecting the button below, I agree to the Host\'s House Rules and Staynb\'s Rebooking and Refund Policy.</p>' +
      '<button class="primary wide-btn" data-action="pay" data-halo-id="confirm-pay">Confirm and pay</button></div>' +
      '<aside class="reserve summary"><div class="sum-stay">' + STAY_PHOTO(stay, 120, 100, 0) + "<div><b>" + esc(stay.title) + '</b><div class="muted">' + esc(stay.kind) + " in " + esc(stay.location) + "</div><div>&#9733; " + stay.rating.toFixed(2) + "</div></div></div>" +
      '<h3>Price details</h3><div class="r-line"><span>' + money(stay.price) + " x " + cur.nights + (cur.nights === 1 ? " night" : " nights") + "</span><span>" + money(stay.price * cur.nights) + "</span></div>" +
      '<div class="r-line"><span>Cleaning fee</span><span>' + money(stay.cleaningFee) + '</span></div><div class="r-line"><span>Staynb service fee</span><span>' + money(cur.serviceFee) + "</span></div>" +
      '<div class="r-line total"><span>Total (USD)</span><span>' + money(cur.total) + "</span></div></aside></div>";
  }
  function tripsPage(st, view) {
    const list = Object.keys(st.booking.bookingDetails).sort().map(function (k) { return st.booking.bookingDetails[k]; });
    return '<div class="simple"><h1>Trips</h1>' + (view.notice && view.notice.indexOf("trips:") === 0 ? '<div class="ok" role="status" data-halo-id="notice">' + esc(view.notice.slice(6)) + "</div>" : "") +
      (list.length ? list.map(function (b) {
        const stay = stayById(b.stayId);
        return '<div class="trip" data-halo-id="trip-' + b.id + '">' + (stay ? STAY_PHOTO(stay, 140, 100, 0) : "") + "<div><b>" + esc(b.title) + '</b><div class="muted">' + esc(b.location) + "</div><div>" +
          esc(short(b.startDate) + (b.endDate !== b.startDate ? " - " + short(b.endDate) : "")) + " · " + esc(guestText(b.guests)) + '</div><div class="muted">Confirmation ' + esc(b.confirmationCode) + " · " + money(b.total) + " paid</div></div></div>";
      }).join("") : '<div class="empty"><h2>No trips booked...yet!</h2><p>Time to dust off your bags and start planning your next adventure.</p><a class="primary-link" href="#/" data-halo-id="start-searching">Start searching</a></div>') + "</div>";
  }

  // ---- wishlists ------------------------------------------------------------------------------------------
  function wishlistsPage(st) {
    const ids = Object.keys(st.wishlist.wishlists).sort(function (a, b) { return a - b; });
    return '<div class="simple"><h1>Wishlists</h1>' + (ids.length ? '<div class="wl-grid">' + ids.map(function (id) {
      const w = st.wishlist.wishlists[id];
      const first = w.stays.length ? stayById(w.stays[0].id) : null;
      return '<a class="wl" href="#/wishlists/' + id + '" data-halo-id="open-wishlist-' + id + '"><div class="wl-cover">' + (first ? STAY_PHOTO(first, 260, 200, 0) : "") + "</div><b>" + esc(w.name) + '</b><div class="muted">' + w.stays.length + " saved</div></a>";
    }).join("") + "</div>" : '<div class="empty"><h2>Create your first wishlist</h2><p>As you search, tap the heart icon to save your favorite places to a wishlist.</p></div>') + "</div>";
  }
  function wishlistPage(st, id) {
    const w = st.wishlist.wishlists[id];
    if (!w) return '<div class="empty"><h2>This wishlist does not exist</h2></div>';
    const stays = w.stays.map(function (s) { return stayById(s.id); }).filter(Boolean);
    return '<div class="simple"><h1><a href="#/wishlists" data-halo-id="back-to-wishlists" aria-label="Back">&#8249;</a> ' + esc(w.name) + "</h1>" +
      (stays.length ? '<div class="grid">' + stays.map(function (s) { return card(st, s, null); }).join("") + "</div>" : '<div class="empty"><h2>Nothing saved yet</h2></div>') + "</div>";
  }

  // ---- dialogs ---------------------------------------------------------------------------------------------
  function modal(st, view) {
    const m = view.modal;
    if (!m) return "";
    let body = "";
    if (m.kind === "filters") body = filtersModal(view);
    else if (m.kind === "wishlist") body = wishlistModal(st, m);
    else if (m.kind === "share") body = shareModal(m);
    return '<div class="scrim" data-action="modal-close"></div><div class="modal ' + m.kind + '" role="dialog" aria-modal="true">' + body + "</div>";
  }
  function filtersModal(view) {
    const f = view.filters;
    const row = function (key, labelText) {
      return '<div class="frow"><span>' + labelText + '</span><div class="chips-row">' + ROOM_CHOICES.map(function (n) {
        return '<button class="chip' + ((f[key] || 0) === n ? " on" : "") + '" data-action="room" data-name="' + key + '" data-value="' + n + '" data-halo-id="' + key + "-" + (n ? n : "any") + '" aria-pressed="' + ((f[key] || 0) === n) + '">' + (n ? (n === 8 ? "8+" : n) : "Any") + "</button>";
      }).join("") + "</div></div>";
    };
    const count = results(Object.assign({}, HALO.state().search, { appliedFilters: f })).length;
    return '<div class="m-head"><button class="x" data-action="modal-close" data-halo-id="modal-close" aria-label="Close">&times;</button><h2>Filters</h2></div><div class="m-body" data-halo-scroll="filters">' +
      "<h3>Rooms and beds</h3>" + row("bedrooms", "Bedrooms") + row("beds", "Beds") + row("bathrooms", "Bathrooms") +
      '<h3>Amenities</h3><div class="amen-grid">' + SITE.amenities.map(function (a) {
        const on = f.amenities.indexOf(a) !== -1;
        return '<label class="chk"><input type="checkbox" data-action="amenity" data-value="' + esc(a) + '" data-halo-id="amenity-' + SITE.amenityIds[a] + '"' + (on ? " checked" : "") + "> " + esc(a) + "</label>";
      }).join("") + "</div></div>" +
      '<div class="m-foot"><button class="link" data-action="filters-clear" data-halo-id="filters-clear">Clear all</button><button class="dark" data-action="filters-apply" data-halo-id="filters-apply">Show ' + count + (count === 1 ? " place" : " places") + "</button></div>";
  }
  function wishlistModal(st, m) {
    const ids = Object.keys(st.wishlist.wishlists).sort(function (a, b) { return a - b; });
    if (m.creating || !ids.length) {
      return '<div class="m-head"><button class="x" data-action="modal-close" data-halo-id="modal-close" aria-label="Close">&times;</button><h2>Create wishlist</h2></div><div class="m-body">' +
        '<form data-form="wishlist"><input type="text" data-halo-id="wishlist-name" aria-label="Wishlist name" placeholder="Name" maxlength="50" value="' + esc(m.name || "") + '" autocomplete="off"></form>' +
        (m.error ? '<div class="err" role="alert">' + esc(m.error) + "</div>" : "") + '<div class="muted small">50 characters maximum</div></div>' +
        '<div class="m-foot"><button class="link" data-action="modal-close">Cancel</button><button class="dark" data-action="wishlist-create" data-halo-id="wishlist-create">Create</button></div>';
    }
    return '<div class="m-head"><button class="x" data-action="modal-close" data-halo-id="modal-close" aria-label="Close">&times;</button><h2>Save to wishlist</h2></div><div class="m-body"><div class="wl-pick">' +
      ids.map(function (id) {
        const w = st.wishlist.wishlists[id];
        return '<button data-action="wishlist-add" data-value="' + id + '" data-halo-id="wishlist-' + id + '"><b>' + esc(w.name) + '</b><span class="muted">' + w.stays.length + " saved</span></button>";
      }).join("") + "</div></div>" +
      '<div class="m-foot"><span></span><button class="dark" data-action="wishlist-new" data-halo-id="wishlist-new">Create new wishlist</button></div>';
  }
  function shareModal(m) {
    const stay = stayById(m.id);
    const head = '<div class="m-head"><button class="x" data-action="modal-close" data-halo-id="modal-close" aria-label="Close">&times;</button><h2>Share this place</h2></div>';
    const summary = '<div class="sum-stay">' + STAY_PHOTO(stay, 80, 64, 0) + "<div><b>" + esc(stay.title) + '</b><div class="muted">' + esc(stay.kind + " in " + stay.location + " · " + stay.rating.toFixed(2)) + "</div></div></div>";
    if (m.channel === "messages") {
      return head + '<div class="m-body">' + summary + "<h3>Send in Messages</h3>" + CHATS.map(function (c) {
        return '<button class="chat' + (m.chat === c[0] ? " on" : "") + '" data-action="chat" data-value="' + c[0] + '" data-halo-id="chat-' + c[0] + '" aria-pressed="' + (m.chat === c[0]) + '">' + esc(c[1]) + "</button>";
      }).join("") + '</div><div class="m-foot"><button class="link" data-action="share-back" data-halo-id="share-back">Back</button><button class="dark" data-action="share-send" data-halo-id="share-send"' + (m.chat ? "" : " disabled") + ">Send</button></div>";
    }
    return head + '<div class="m-body">' + summary + (m.done ? '<div class="ok" role="status" data-halo-id="share-status">' + esc(m.done) + "</div>" : "") + '<div class="share-grid">' + SHARE_CHANNELS.map(function (c) {
      return '<button data-action="share-channel" data-value="' + c[0] + '" data-halo-id="share-' + c[0] + '">' + esc(c[1]) + "</button>";
    }).join("") + "</div></div>";
  }

  // ---- render ------------------------------------------------------------------------------------------------
  function render() {
    let view = HALO.view();
    const r = route();
    if (view.route !== location.hash) {
      // A new page: close panels and dialogs and start at the top.
      view = HALO.patchView({ route: location.hash, panel: null, modal: null, scroll: {}, notice: view.notice && r.kind === "trips" ? view.notice : "" });
    }
    const st = HALO.state();
    let main, title = "Staynb | Vacation rentals, cabins, beach houses, & more";
    const withBar = r.kind === "home" || r.kind === "results" || r.kind === "stay";
    if (r.kind === "results") {
      main = resultsPage(st);
      title = (st.search.appliedDestination || "Anywhere") + " · Stays · Staynb";
    } else if (r.kind === "stay" || r.kind === "book") {
      const stay = stayById(r.id);
      if (!stay) main = '<div class="empty"><h2>This listing is no longer available</h2></div>';
      else {
        main = r.kind === "stay" ? stayPage(st, view, stay) : bookPage(st, view, stay);
        title = (r.kind === "stay" ? stay.title + " - " + stay.kind + " in " + stay.location : "Confirm and pay") + " - Staynb";
        if (r.kind === "stay") HALO.milestone("listing_viewed");
      }
    } else if (r.kind === "trips") {
      main = tripsPage(st, view);
      title = "Trips - Staynb";
    } else if (r.kind === "wishlists") {
      main = wishlistsPage(st);
      title = "Wishlists - Staynb";
    } else if (r.kind === "wishlist") {
      main = wishlistPage(st, r.id);
      title = "Wishlist - Staynb";
    } else {
      main = homePage(st, view);
    }
    document.title = title;
    const shift = (Number(HALO.meta().seed || 0) % 4) * 4;
    document.getElementById("app").innerHTML = header() + (withBar ? searchBar(st, view) : "") +
      '<main class="page-' + r.kind + (withBar ? " with-bar" : "") + '" data-halo-scroll="main"><div class="inner" style="padding-top:' + (16 + shift) + 'px">' + main + "</div></main>" + modal(st, view);
    HALO.restoreUi();
  }

  // ---- mutations -----------------------------------------------------------------------------------------------
  function update(fn) {
    const st = HALO.state();
    fn(st);
    HALO.commit(st);
    return st;
  }
  function pickDay(iso) {
    setDraft(function (d) {
      if (!d.start || (d.end && d.end !== d.start) || dayNum(iso) < dayNum(d.start)) { d.start = iso; d.end = iso; }
      else d.end = iso;
    });
    HALO.milestone("dates_set");
  }
  function stepGuest(name, step) {
    setDraft(function (d) {
      const g = d.guests;
      const max = name === "Adults" || name === "Children" ? 16 - (name === "Adults" ? g.Children : g.Adults) : 5;
      g[name] = Math.max(0, Math.min(max, (g[name] || 0) + step));
      // Children, infants and pets travel with an adult; the last adult stays while they do.
      if (step > 0 && name !== "Adults" && !g.Adults) g.Adults = 1;
      if (name === "Adults" && !g.Adults && (g.Children || g.Infants || g.Pets)) g.Adults = 1;
    });
    HALO.milestone("guests_set");
  }
  function runSearch() {
    const view = HALO.view();
    const d = draftOf(view, HALO.state());
    const dest = String(d.destination || "").trim();
    update(function (st) {
      const s = st.search;
      s.appliedDestination = dest;
      s.appliedDates = { startDate: isoInstant(d.start), endDate: isoInstant(d.end) };
      s.appliedGuestCounts = { Adults: d.guests.Adults || 0, Children: d.guests.Children || 0, Infants: d.guests.Infants || 0, Pets: d.guests.Pets || 0 };
      // The newest search is "0"; five are kept, like the site's "Recent searches".
      const old = Object.keys(s.recentSearches || {}).sort(function (a, b) { return a - b; }).map(function (k) { return s.recentSearches[k]; });
      const entry = { destination: dest, dates: { startDate: s.appliedDates.startDate, endDate: s.appliedDates.endDate }, guests: guestText(s.appliedGuestCounts) || "Add guests" };
      s.recentSearches = {};
      [entry].concat(old).slice(0, 5).forEach(function (e, i) { s.recentSearches[String(i)] = e; });
    });
    HALO.milestone("search");
    HALO.patchView({ panel: null, draft: d, focus: null, category: "all" });
    go("#/s");
  }
  function applyFilters() {
    const f = HALO.view().filters;
    update(function (st) {
      st.search.appliedFilters = { bedrooms: f.bedrooms || 0, beds: f.beds || 0, bathrooms: f.bathrooms || 0, amenities: SITE.amenities.filter(function (a) { return f.amenities.indexOf(a) !== -1; }) };
    });
    HALO.milestone("filters_applied");
    HALO.patchView({ modal: null, filters: null });
    if (route().kind !== "results") go("#/s");
  }
  function stayRecord(stay) {
    return { id: stay.id, title: stay.title, location: stay.location, type: stay.kind, price: stay.price, rating: stay.rating,
      guests: stay.guests, rooms: { bedrooms: stay.rooms.bedrooms, beds: stay.rooms.beds, bathrooms: stay.rooms.bathrooms }, amenities: stay.amenities.slice() };
  }
  function toggleSave(id) {
    const st = HALO.state();
    if (savedIn(st, id).length) {
      update(function (s) {
        Object.keys(s.wishlist.wishlists).forEach(function (w) {
          const list = s.wishlist.wishlists[w];
          list.stays = list.stays.filter(function (x) { return x.id !== id; });
        });
      });
      return;
    }
    HALO.patchView({ modal: { kind: "wishlist", id: id, creating: false, name: "", error: "" } });
  }
  function addToWishlist(wid, id) {
    const stay = stayById(id);
    update(function (st) { st.wishlist.wishlists[wid].stays.push(stayRecord(stay)); });
    HALO.milestone("wishlist_saved");
    HALO.patchView({ modal: null, focus: null });
  }
  function createWishlist() {
    const m = HALO.view().modal;
    const name = String(m.name || "").trim();
    if (!name) {
      m.error = "Enter a name for your wishlist.";
      HALO.patchView({ modal: m });
      return;
    }
    let wid = "";
    update(function (st) {
      let n = 1;
      while (st.wishlist.wishlists[String(n)]) n++;
      wid = String(n);
      st.wishlist.wishlists[wid] = { id: wid, name: name, stays: [] };
    });
    addToWishlist(wid, m.id);
  }
  function reserve(id) {
    const stay = stayById(id);
    const d = draftOf(HALO.view(), HALO.state());
    if (!d.start) {
      HALO.patchView({ panel: "dates", notice: "reserve:Add your travel dates to see the total and reserve." });
      return;
    }
    if (!guestTotal(d.guests)) {
      HALO.patchView({ panel: "guests", notice: "reserve:Add the number of guests to reserve." });
      return;
    }
    if (guestTotal(d.guests) > stay.guests) return;
    const n = nights(d.start, d.end);
    const fee = Math.round(stay.price * n * 0.14);
    update(function (st) {
      st.booking.isBooking = true;
      st.booking.currentBooking = {
        stayId: stay.id, title: stay.title, location: stay.location, startDate: isoInstant(d.start), endDate: isoInstant(d.end),
        guests: { Adults: d.guests.Adults, Children: d.guests.Children, Infants: d.guests.Infants, Pets: d.guests.Pets },
        nights: n, pricePerNight: stay.price, cleaningFee: stay.cleaningFee, serviceFee: fee, total: stay.price * n + stay.cleaningFee + fee,
      };
    });
    HALO.milestone("reserve_clicked");
    HALO.patchView({ draft: d, notice: "", pay: null });
    go("#/book/" + id);
  }
  function payErrors(p) {
    const digits = String(p.cardNumber || "").replace(/[\s-]/g, "");
    const exp = /^(\d{2})\s*\/\s*(\d{2})$/.exec(String(p.expiration || "").trim());
    const e = { cardNumber: "", expiration: "", cvv: "", zipcode: "" };
    if (!/^\d{15,16}$/.test(digits)) e.cardNumber = "Check your card number.";
    if (!exp || Number(exp[1]) < 1 || Number(exp[1]) > 12) e.expiration = "Enter the expiration as MM/YY.";
    else if (Number(exp[2]) * 12 + Number(exp[1]) < 24 * 12 + 7) e.expiration = "This card has expired.";
    if (!/^\d{3,4}$/.test(String(p.cvv || "").trim())) e.cvv = "Check your CVV.";
    if (!/^\d{5}$/.test(String(p.zipcode || "").trim())) e.zipcode = "Enter a valid ZIP code.";
    return e;
  }
  function pay() {
    const view = HALO.view();
    const p = view.pay || {};
    const errs = payErrors(p);
    const bad = Object.keys(errs).some(function (k) { return errs[k]; });
    let code = "";
    update(function (st) {
      st.booking.errors = errs;
      if (bad) return;
      const cur = st.booking.currentBooking;
      let n = 1;
      while (st.booking.bookingDetails[String(n)]) n++;
      // A confirmation code derived from the booking, so a replay gets the same one.
      code = "HM" + ((dayNum(cur.startDate.slice(0, 10)) * 31 + cur.total * 7 + n * 101) % 9000000 + 1000000).toString(36).toUpperCase();
      const record = Object.assign({ id: String(n), confirmationCode: code, cardLast4: String(p.cardNumber).replace(/\D/g, "").slice(-4) }, cur);
      st.booking.bookingDetails[String(n)] = record;
      st.booking.currentBooking = record;
      st.booking.isBooking = false;
    });
    if (bad) return;
    HALO.milestone("booking_confirmed");
    HALO.patchView({ pay: null, focus: null, notice: "trips:Your reservation is confirmed. Confirmation code " + code + "." });
    go("#/trips");
  }
  function share(channel, chat) {
    const m = HALO.view().modal;
    const stay = stayById(m.id);
    const ch = SHARE_CHANNELS.filter(function (c) { return c[0] === channel; })[0];
    const to = chat ? CHATS.filter(function (c) { return c[0] === chat; })[0][1] : null;
    update(function (st) {
      const id = String(Object.keys(st.share.shares).length + 1);
      st.share.shares[id] = { id: id, stayId: stay.id, title: stay.title, channel: ch[1], to: to };
    });
    HALO.milestone("shared");
    HALO.patchView({ modal: { kind: "share", id: m.id, channel: null, chat: null, done: to ? "Sent to " + to + "." : ch[0] === "copy" ? "Link copied." : "Shared with " + ch[1] + "." } });
  }

  // ---- events ------------------------------------------------------------------------------------------------------
  function onClick(e) {
    const el = e.target.closest("[data-action]");
    const view = HALO.view();
    const link = !el && e.target.closest('a[href^="#/"]');
    if (link) {
      // Render now rather than on the (asynchronous) hashchange, so the next action finds the page.
      e.preventDefault();
      go(link.getAttribute("href"));
      return;
    }
    if (!el) {
      // A click outside an open search panel closes it, as on the real site.
      if (view.panel && !e.target.closest(".panel") && !e.target.closest(".sbar")) {
        HALO.patchView({ panel: null });
        render();
      }
      return;
    }
    const action = el.getAttribute("data-action");
    if (action !== "amenity") e.preventDefault();
    const id = el.getAttribute("data-id");
    const value = el.getAttribute("data-value");
    if (action === "panel") {
      const p = el.getAttribute("data-panel");
      if (p === "dates" && !view.cal) HALO.patchView({ cal: SITE.today.slice(0, 7) });
      HALO.patchView({ panel: p, draft: draftOf(view, HALO.state()) });
    } else if (action === "suggest") {
      setDraft(function (d) { d.destination = value; });
      HALO.milestone("destination_set");
      HALO.patchView({ panel: "dates", focus: null });
    } else if (action === "recent") {
      const rs = HALO.state().search.recentSearches[el.getAttribute("data-index")];
      setDraft(function (d) { d.destination = rs.destination; });
      HALO.milestone("destination_set");
      HALO.patchView({ panel: "dates", focus: null });
    } else if (action === "day") {
      pickDay(value);
    } else if (action === "cal") {
      const next = addMonths(view.cal || SITE.today.slice(0, 7), Number(el.getAttribute("data-step")));
      if (next >= SITE.today.slice(0, 7)) HALO.patchView({ cal: next });
    } else if (action === "dates-clear") {
      setDraft(function (d) { d.start = null; d.end = null; });
    } else if (action === "guest") {
      stepGuest(el.getAttribute("data-name"), Number(el.getAttribute("data-step")));
    } else if (action === "search") {
      runSearch();
      return;
    } else if (action === "category") {
      HALO.patchView({ category: value, shown: HOME_PAGE });
    } else if (action === "more") {
      HALO.patchView({ shown: (view.shown || HOME_PAGE) + HOME_PAGE });
    } else if (action === "filters-open") {
      const f = HALO.state().search.appliedFilters || {};
      HALO.patchView({ panel: null, modal: { kind: "filters" }, filters: { bedrooms: f.bedrooms || 0, beds: f.beds || 0, bathrooms: f.bathrooms || 0, amenities: (f.amenities || []).slice() } });
    } else if (action === "room") {
      const f = view.filters;
      f[el.getAttribute("data-name")] = Number(value);
      HALO.patchView({ filters: f });
    } else if (action === "amenity") {
      const f = view.filters;
      f.amenities = el.checked ? f.amenities.concat([value]) : f.amenities.filter(function (a) { return a !== value; });
      HALO.patchView({ filters: f });
    } else if (action === "filters-clear") {
      HALO.patchView({ filters: { bedrooms: 0, beds: 0, bathrooms: 0, amenities: [] } });
    } else if (action === "filters-apply") {
      applyFilters();
    } else if (action === "modal-close") {
      HALO.patchView({ modal: null, filters: null, focus: null });
    } else if (action === "save") {
      toggleSave(id);
    } else if (action === "wishlist-add") {
      addToWishlist(value, view.modal.id);
    } else if (action === "wishlist-new") {
      const m = view.modal;
      m.creating = true;
      HALO.patchView({ modal: m });
    } else if (action === "wishlist-create") {
      createWishlist();
    } else if (action === "share-open") {
      HALO.patchView({ panel: null, modal: { kind: "share", id: id, channel: null, chat: null, done: "" } });
    } else if (action === "share-channel") {
      if (value === "messages") {
        const m = view.modal;
        m.channel = "messages";
        m.chat = null;
        HALO.patchView({ modal: m });
      } else share(value, null);
    } else if (action === "chat") {
      const m = view.modal;
      m.chat = value;
      HALO.patchView({ modal: m });
    } else if (action === "share-back") {
      const m = view.modal;
      m.channel = null;
      HALO.patchView({ modal: m });
    } else if (action === "share-send") {
      if (view.modal.chat) share("messages", view.modal.chat);
    } else if (action === "reserve") {
      reserve(id);
      if (route().kind === "book") return;
    } else if (action === "pay") {
      pay();
      if (route().kind === "trips") return;
    }
    render();
  }

  function onInput(e) {
    const t = e.target;
    const hid = t.getAttribute("data-halo-id");
    if (hid === "destination") {
      setDraft(function (d) { d.destination = t.value; });
      HALO.patchView({ panel: "where" });
      render();
    } else if (hid === "wishlist-name") {
      const m = HALO.view().modal;
      m.name = t.value;
      m.error = "";
      HALO.patchView({ modal: m });
    } else if (t.getAttribute("data-pay")) {
      const p = HALO.view().pay || { cardNumber: "", expiration: "", cvv: "", zipcode: "" };
      p[t.getAttribute("data-pay")] = t.value;
      HALO.patchView({ pay: p });
    }
  }

  function onKey(e) {
    if (e.key !== "Enter") return;
    const hid = e.target.getAttribute && e.target.getAttribute("data-halo-id");
    if (hid === "destination") {
      // Enter takes the first suggestion, as the site's autocomplete does, and moves on to dates.
      e.preventDefault();
      const first = suggestions(HALO.view().draft ? HALO.view().draft.destination : "")[0];
      const typed = HALO.view().draft && HALO.view().draft.destination;
      if (typed && first) setDraft(function (d) { d.destination = first.label; });
      if (typed) HALO.milestone("destination_set");
      HALO.patchView({ panel: "dates", focus: null });
      render();
    } else if (hid === "wishlist-name") {
      e.preventDefault();
      createWishlist();
      render();
    }
  }

  document.addEventListener("click", onClick);
  document.addEventListener("input", onInput);
  document.addEventListener("keydown", onKey);
  document.addEventListener("submit", function (e) { e.preventDefault(); });
  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
