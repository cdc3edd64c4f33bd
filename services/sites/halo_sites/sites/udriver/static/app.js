/* UDriver app: an Uber-like single page. Routes (location.hash):
 *   #/         request a ride: pickup and dropoff with suggestions, now or scheduled, ride types
 *              with prices, payment method, Request (a trip) or Schedule (a booked trip)
 *   #/wallet   Udriver Credits balance, add funds, payment methods (set the default), activity
 *   #/trips    upcoming (scheduled) and past trips
 * The rider's wallet and rides live in HALO.state() (`user.wallet`, `ride`); what is typed in the
 * fields, the open suggestion list and dialogs live in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const SITE = HALO.site();
  const TODAY = { y: 2024, m: 7, d: 15, minutes: 10 * 60 + 30 };
  const NOW_DATE = "7/15/2024";
  const NOW_TIME = "10:30 AM";
  const STOP_WORDS = ["and", "the", "at", "to", "of", "in", "near", "from"];
  const ABBREV = { street: "st", avenue: "ave", boulevard: "blvd", lane: "ln", center: "center", centre: "center" };
  const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

  function seed() {
    return HALO.meta().seed || 0;
  }
  function places() {
    return SITE.places(seed());
  }
  function placeById(id) {
    return places().filter(function (p) { return p.id === id; })[0] || null;
  }
  function money(x) {
    const v = Math.abs(x).toFixed(2);
    return (x < 0 ? "-$" : "$") + v.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function round2(x) {
    return Math.round(x * 100) / 100;
  }

  // ---- routing -------------------------------------------------------------------------------
  function route() {
    const p = (location.hash || "#/").replace(/^#\/?/, "").split("/")[0];
    return p === "wallet" || p === "trips" ? p : "ride";
  }
  function go(hash) {
    if (location.hash !== hash) location.hash = hash;
    render();
  }

  // ---- place search ----------------------------------------------------------------------------
  function tokens(text) {
    return String(text || "").toLowerCase().split(/[\s,&().]+/).map(function (w) {
      const t = w.replace(/[^a-z0-9]/g, "");
      return ABBREV[t] || t;
    }).filter(Boolean);
  }
  function wordMatches(word, toks) {
    // "gates" finds "Gate", "indian" finds "India": a word may run past a token of 4+ letters.
    return toks.some(function (t) { return t.indexOf(word) === 0 || (t.length >= 4 && word.indexOf(t) === 0); });
  }
  function searchPlaces(query) {
    const words = tokens(query).filter(function (w) { return STOP_WORDS.indexOf(w) === -1; });
    if (!words.length) return [];
    const q = String(query).trim().toLowerCase();
    const scored = [];
    places().forEach(function (p, i) {
      const nameToks = tokens(p.name);
      const all = nameToks.concat(tokens(p.address), tokens(p.category), tokens(p.aliases.join(" ")), ["san", "francisco", "sf", "ca", "usa"]);
      if (!words.every(function (w) { return wordMatches(w, all); })) return;
      const name = p.name.toLowerCase();
      const rank = name === q ? 0 : name.indexOf(q) === 0 ? 1 : words.every(function (w) { return wordMatches(w, nameToks); }) ? 2 : 3;
      scored.push([rank, i, p]);
    });
    scored.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
    return scored.slice(0, 6).map(function (s) { return s[2]; });
  }
  function suggestions(view) {
    const field = view.active;
    if (!field) return null;
    const text = field === "pickup" ? view.pickupText : view.dropoffText;
    const selected = HALO.state().ride[field === "pickup" ? "pickupLocation" : "dropoffLocation"];
    if (selected && selected.name === text) return null;
    if (!String(text || "").trim()) {
      return { title: "Suggested", list: SITE.suggested(seed()).map(placeById).filter(Boolean) };
    }
    return { title: null, list: searchPlaces(text) };
  }

  // ---- dates and times -------------------------------------------------------------------------
  function parseDate(text) {
    const t = String(text || "").trim().toLowerCase().replace(/(\d)(st|nd|rd|th)\b/, "$1");
    let m = /^(\d{1,2})\/(\d{1,2})(?:\/(\d{2}|\d{4}))?$/.exec(t);
    let y, mo, d;
    if (m) { mo = Number(m[1]); d = Number(m[2]); y = m[3] ? Number(m[3].length === 2 ? "20" + m[3] : m[3]) : TODAY.y; }
    else if ((m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(t))) { y = Number(m[1]); mo = Number(m[2]); d = Number(m[3]); }
    else if ((m = /^([a-z]+)\.?\s+(\d{1,2})(?:,?\s+(\d{4}))?$/.exec(t))) {
      mo = MONTHS.findIndex(function (name) { return name.indexOf(m[1]) === 0 && m[1].length >= 3; }) + 1;
      d = Number(m[2]); y = m[3] ? Number(m[3]) : TODAY.y;
    } else return null;
    const days = [31, y % 4 === 0 ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if (!(mo >= 1 && mo <= 12 && d >= 1 && d <= days[mo - 1])) return null;
    return { y: y, m: mo, d: d, text: mo + "/" + d + "/" + y };
  }
  function parseTime(text) {
    const m = /^(\d{1,2})(?::(\d{2}))?\s*([ap])\.?\s*m?\.?$/i.exec(String(text || "").trim()) || /^(\d{1,2}):(\d{2})()$/.exec(String(text || "").trim());
    if (!m) return null;
    let h = Number(m[1]);
    const min = Number(m[2] || 0);
    if (min > 59) return null;
    if (m[3]) {
      if (h < 1 || h > 12) return null;
      h = (h % 12) + (m[3].toLowerCase() === "p" ? 12 : 0);
    } else if (h > 23) return null;
    const h12 = h % 12 || 12;
    return { minutes: h * 60 + min, text: h12 + ":" + String(min).padStart(2, "0") + (h >= 12 ? " PM" : " AM") };
  }
  function scheduleError(date, time) {
    if (!date) return "Enter the pickup date, e.g. 7/18/2024.";
    if (!time) return "Enter the pickup time, e.g. 3:30 PM.";
    const day = date.y * 10000 + date.m * 100 + date.d, today = TODAY.y * 10000 + TODAY.m * 100 + TODAY.d;
    if (day < today || (day === today && time.minutes <= TODAY.minutes)) return "Pick a time later than now (Monday, July 15, 10:30 AM).";
    if (day > 20241015) return "Rides can be scheduled up to 90 days ahead.";
    return "";
  }

  // ---- state helpers ---------------------------------------------------------------------------
  function update(fn) {
    const st = HALO.state();
    fn(st);
    HALO.commit(st);
    return st;
  }
  function hydrate() {
    // REAL's UDriver writes its stores after /config took its snapshot (see data.js).
    const st = HALO.state();
    if (SITE.real && !st.ride) HALO.commit(Object.assign(st, SITE.buildState(seed())));
  }
  function wallet(st) {
    return st.user.wallet;
  }
  function methodById(st, id) {
    return wallet(st).paymentMethods.filter(function (m) { return m.id === id; })[0] || null;
  }
  function carOptions(st) {
    const r = st.ride;
    return SITE.carOrder(seed()).map(function (type) {
      return Object.assign({ type: type, car: SITE.cars[type] }, SITE.price(r.pickupLocation, r.dropoffLocation, type));
    });
  }
  function methodLabel(m, st) {
    if (m.type === "wallet") return "Udriver Credits (" + money(wallet(st).balance) + ")";
    return m.displayName;
  }

  // ---- rendering: frame ------------------------------------------------------------------------
  function logo() {
    return '<a class="logo" href="#/" data-halo-id="logo">Udriver</a>';
  }
  function header(st, r) {
    const tab = function (id, hash, label, on) {
      return '<a href="' + hash + '" data-halo-id="' + id + '" class="' + (on ? "on" : "") + '">' + label + "</a>";
    };
    return '<header class="top">' + logo() + '<nav class="tabs">' + tab("nav-ride", "#/", "Ride", r === "ride") +
      tab("nav-wallet", "#/wallet", "Wallet", r === "wallet") + tab("nav-trips", "#/trips", "Activity", r === "trips") + "</nav>" +
      '<div class="right"><a class="credits" href="#/wallet" data-halo-id="credits-pill">Udriver Credits ' + money(wallet(st).balance) + "</a>" +
      '<span class="avatar" aria-label="Account">AM</span><span class="who">Alex Morgan</span></div></header>';
  }

  // ---- rendering: the ride page ----------------------------------------------------------------
  function suggestionsHtml(view) {
    const s = suggestions(view);
    if (!s) return "";
    const rows = s.list.map(function (p) {
      return '<button class="sugg-row" data-action="pick-place" data-id="' + p.id + '" data-halo-id="suggestion-' + p.id + '">' +
        '<span class="pin-ico">' + pinIcon() + '</span><span class="sugg-text"><b>' + esc(p.name) + "</b><small>" + esc(p.address) + "</small></span></button>";
    }).join("");
    return '<div class="sugg ' + view.active + '" role="listbox" aria-label="Location suggestions">' + (s.title ? '<div class="sugg-title">' + s.title + "</div>" : "") +
      (rows || '<div class="sugg-empty">No places match "' + esc(view.active === "pickup" ? view.pickupText : view.dropoffText) + '".</div>') + "</div>";
  }
  function pinIcon() {
    return '<svg width="18" height="18" viewBox="0 0 24 24" aria-hidden="true"><path d="M12 2C8.13 2 5 5.13 5 9c0 5.25 7 13 7 13s7-7.75 7-13c0-3.87-3.13-7-7-7zm0 9.5a2.5 2.5 0 1 1 0-5 2.5 2.5 0 0 1 0 5z" fill="#545454"/></svg>';
  }
  function whenHtml(view) {
    const btn = function (id, value, label) {
      return '<button class="seg' + (view.when === value ? " on" : "") + '" data-action="when" data-value="' + value + '" data-halo-id="' + id + '" aria-pressed="' + (view.when === value) + '">' + label + "</button>";
    };
    let html = '<div class="when">' + btn("when-now", "now", "Pickup now") + btn("when-schedule", "later", "Schedule for later") + "</div>";
    if (view.when === "later") {
      html += '<div class="sched"><label>Date<input type="text" data-field="dateText" data-halo-id="pickup-date" placeholder="MM/DD/YYYY" value="' + esc(view.dateText) + '" autocomplete="off"></label>' +
        '<label>Time<input type="text" data-field="timeText" data-halo-id="pickup-time" placeholder="h:mm AM" value="' + esc(view.timeText) + '" autocomplete="off"></label></div>' +
        '<p class="hint">Today is Monday, July 15, 2024 &middot; 10:30 AM</p>';
    }
    return html;
  }
  function optionsHtml(st, view) {
    const r = st.ride;
    const opts = carOptions(st);
    const rows = opts.map(function (o) {
      const on = r.selectedCar === o.type;
      const promo = o.car.discount ? '<s class="was">' + money(o.priceWithoutDiscount) + "</s>" : "";
      return '<button class="opt' + (on ? " on" : "") + '" data-action="car" data-value="' + o.type + '" data-halo-id="ride-' + o.type + '" aria-pressed="' + on + '">' +
        carArt(o.type) + '<span class="opt-main"><b>' + esc(o.car.name) + ' <span class="seats">' + personIcon() + o.car.seats + "</span></b>" +
        (o.car.discount ? '<em class="promo">' + Math.round(o.car.discount * 100) + "% off</em>" : "") + "<small>" +
        (r.pickupDate ? esc(r.pickupDate) + " at " + esc(r.pickupTime) : o.car.eta + " min away") + " &middot; " + esc(o.car.description) + "</small></span>" +
        '<span class="opt-price">' + money(o.finalPrice) + promo + "</span></button>";
    }).join("");
    const sel = r.selectedPaymentMethod;
    const menu = view.payOpen ? '<div class="pay-menu" role="listbox">' + wallet(st).paymentMethods.map(function (m) {
      return '<button role="option" data-action="pay" data-value="' + m.id + '" data-halo-id="pay-' + m.id + '" class="' + (sel && sel.id === m.id ? "on" : "") + '">' +
        methodIcon(m) + "<span>" + esc(methodLabel(m, st)) + "</span>" + (m.isDefault ? '<small class="badge">Default</small>' : "") + "</button>";
    }).join("") + "</div>" : "";
    const chosen = opts.filter(function (o) { return o.type === r.selectedCar; })[0];
    const short = sel && sel.type === "wallet" && chosen && wallet(st).balance < chosen.finalPrice;
    return '<h2 class="choose">Choose a ride</h2><div class="opts" data-halo-scroll="opts">' + rows + "</div>" +
      '<div class="payrow"><button class="pay" data-action="pay-toggle" data-halo-id="payment-method" aria-expanded="' + !!view.payOpen + '">' +
      (sel ? methodIcon(sel) + "<span>" + esc(methodLabel(methodById(st, sel.id) || sel, st)) + "</span>" : "Choose payment") + ' <span class="chev">&#9662;</span></button>' + menu + "</div>" +
      (short ? '<div class="warn" role="status">Your Udriver Credits (' + money(wallet(st).balance) + ") do not cover this ride (" + money(chosen.finalPrice) + ").</div>" : "") +
      '<button class="primary request" data-action="request" data-halo-id="request-ride">' + (r.pickupDate ? "Schedule " : "Request ") + esc(SITE.cars[r.selectedCar].name) + "</button>";
  }
  function ridePanel(st, view) {
    const r = st.ride;
    if (view.stage === "receipt" && r.trip) return receiptHtml(st, r.trip);
    if (view.stage === "scheduled" && r.bookedTrip) return scheduledHtml(r.bookedTrip);
    const loc = function (field, label) {
      const text = field === "pickup" ? view.pickupText : view.dropoffText;
      return '<div class="loc-row ' + field + '"><span class="mark ' + field + '"></span><input type="text" data-loc="' + field + '" data-halo-id="' + field + '" aria-label="' + label + '" placeholder="' + label + '" value="' + esc(text) + '" autocomplete="off">' +
        '<button class="clear" data-action="clear" data-value="' + field + '" data-halo-id="clear-' + field + '" aria-label="Clear ' + label.toLowerCase() + '"' + (text ? "" : " hidden") + ">&times;</button></div>";
    };
    return '<h1>Get a ride</h1><div class="locs"><div class="line"></div>' + loc("pickup", "Pickup location") + loc("dropoff", "Dropoff location") +
      '<div id="sugg-slot">' + suggestionsHtml(view) + "</div></div>" + whenHtml(view) +
      (view.error ? '<div class="err" role="alert">' + esc(view.error) + "</div>" : "") +
      (view.searched && r.pickupLocation && r.dropoffLocation ? optionsHtml(st, view) : '<button class="primary" data-action="search" data-halo-id="search-rides">Search</button>');
  }
  function receiptHtml(st, trip) {
    return '<div class="receipt" role="status"><div class="done-ico">&#10003;</div><h1>You have arrived</h1><p class="muted">Thanks for riding with Udriver, Alex.</p>' +
      tripCard(trip) + '<div class="total"><span>Total charged to ' + esc(trip.paymentMethod.displayName) + "</span><b>" + money(trip.car.finalPrice) + "</b></div>" +
      '<button class="primary" data-action="new-ride" data-halo-id="new-ride">Book another ride</button><a class="link" href="#/trips" data-halo-id="see-trips">See your trips</a></div>';
  }
  function scheduledHtml(trip) {
    return '<div class="receipt" role="status"><div class="done-ico sched">&#128337;</div><h1>Your ride is scheduled</h1><p class="muted">Pickup on ' + esc(trip.date) + " at " + esc(trip.time) + ".</p>" +
      tripCard(trip) + '<div class="total"><span>Estimated fare, ' + esc(trip.paymentMethod.displayName) + "</span><b>" + money(trip.car.finalPrice) + "</b></div>" +
      '<button class="primary" data-action="new-ride" data-halo-id="new-ride">Book another ride</button><a class="link" href="#/trips" data-halo-id="see-trips">See upcoming rides</a></div>';
  }
  function tripCard(trip) {
    return '<div class="tripcard"><div class="route"><span class="mark pickup"></span><div><b>' + esc(trip.pickup.name) + "</b><small>" + esc(trip.pickup.address) + "</small></div></div>" +
      '<div class="route"><span class="mark dropoff"></span><div><b>' + esc(trip.destination.name) + "</b><small>" + esc(trip.destination.address) + "</small></div></div>" +
      '<div class="driver">' + carArt(trip.car.type) + "<div><b>" + esc(trip.car.name) + " &middot; " + esc(trip.driver.name) + " (" + trip.driver.rating.toFixed(2) + " &#9733;)</b><small>" +
      esc(trip.driver.vehicle) + " &middot; " + esc(trip.driver.plate) + "</small></div></div></div>";
  }
  function personIcon() {
    return '<svg width="12" height="12" viewBox="0 0 24 24" aria-hidden="true"><path d="M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8zm0 2c-2.67 0-8 1.34-8 4v2h16v-2c0-2.66-5.33-4-8-4z" fill="#333"/></svg>';
  }
  function methodIcon(m) {
    if (m.type === "credit") return '<span class="mico card">VISA</span>';
    if (m.type === "cash") return '<span class="mico cash">$</span>';
    return '<span class="mico wallet">U</span>';
  }
  function carArt(type) {
    const body = { UdriverX: "#5b6b7a", UdriverComfort: "#3b5d8f", UdriverXL: "#6a6f76", UdriverBlack: "#111" }[type] || "#555";
    const long = type === "UdriverXL";
    const w = long ? 64 : 58;
    return '<svg class="car" width="64" height="34" viewBox="0 0 64 34" aria-hidden="true"><path d="M4 22 L' + (long ? 10 : 12) + ' 12 Q14 8 20 8 L' + (w - 18) + " 8 Q" + (w - 12) + " 8 " + (w - 8) + " 14 L" + w + " 18 L" + w + ' 26 L4 26 Z" fill="' + body + '"/>' +
      '<path d="M16 12 L' + (w - 20) + " 12 L" + (w - 14) + ' 18 L13 18 Z" fill="#cfe3f3"/><circle cx="16" cy="26" r="5" fill="#222"/><circle cx="16" cy="26" r="2" fill="#bbb"/>' +
      '<circle cx="' + (w - 12) + '" cy="26" r="5" fill="#222"/><circle cx="' + (w - 12) + '" cy="26" r="2" fill="#bbb"/></svg>';
  }

  // ---- the map ---------------------------------------------------------------------------------
  const MAP = { x0: 430, y0: 14, w: 820, h: 630 };
  function mx(x) { return Math.round(MAP.x0 + x * MAP.w); }
  function my(y) { return Math.round(MAP.y0 + y * MAP.h); }
  function mapSvg(st) {
    const land = [[0.02, 0.2], [0.08, 0.09], [0.25, 0.03], [0.45, 0.07], [0.62, 0.06], [0.8, 0.05], [0.9, 0.1], [0.96, 0.22], [0.99, 0.33], [0.985, 0.5], [0.995, 0.72], [0.97, 1.04], [0.0, 1.04], [0.0, 0.3]]
      .map(function (p) { return mx(p[0]) + "," + my(p[1]); }).join(" ");
    let grid = "";
    for (let i = 1; i < 12; i++) grid += '<line x1="' + mx(0.02 + i * 0.045) + '" y1="' + my(0.2) + '" x2="' + mx(0.02 + i * 0.045) + '" y2="' + my(1) + '" class="st"/>';
    for (let j = 0; j < 16; j++) grid += '<line x1="' + mx(0) + '" y1="' + my(0.22 + j * 0.05) + '" x2="' + mx(0.6) + '" y2="' + my(0.22 + j * 0.05) + '" class="st"/>';
    for (let k = 0; k < 10; k++) grid += '<line x1="' + mx(0.6 + k * 0.04) + '" y1="' + my(0.12) + '" x2="' + mx(0.6 + k * 0.04) + '" y2="' + my(0.95) + '" class="st"/>';
    for (let k = 0; k < 12; k++) grid += '<line x1="' + mx(0.58) + '" y1="' + my(0.12 + k * 0.06) + '" x2="' + mx(0.99) + '" y2="' + my(0.12 + k * 0.06) + '" class="st"/>';
    const labels = [["RICHMOND", 0.2, 0.38], ["SUNSET", 0.2, 0.66], ["MARINA", 0.6, 0.15], ["NOB HILL", 0.8, 0.28], ["SOMA", 0.86, 0.5], ["MISSION", 0.74, 0.66], ["CASTRO", 0.6, 0.6], ["BAYVIEW", 0.86, 0.85]]
      .map(function (l) { return '<text x="' + mx(l[1]) + '" y="' + my(l[2]) + '" class="hood">' + l[0] + "</text>"; }).join("");
    const r = st.ride;
    let marks = "";
    const p = r.pickupLocation, d = r.dropoffLocation;
    if (p && d) {
      const cx = mx(d.x), cy = my(p.y);
      marks += '<polyline points="' + mx(p.x) + "," + my(p.y) + " " + cx + "," + cy + " " + mx(d.x) + "," + my(d.y) + '" class="route"/>';
    }
    if (p) marks += '<circle cx="' + mx(p.x) + '" cy="' + my(p.y) + '" r="9" fill="#000"/><circle cx="' + mx(p.x) + '" cy="' + my(p.y) + '" r="3.5" fill="#fff"/>' + mapLabel(p, mx(p.x), my(p.y));
    if (d) marks += '<rect x="' + (mx(d.x) - 8) + '" y="' + (my(d.y) - 8) + '" width="16" height="16" fill="#000"/><rect x="' + (mx(d.x) - 3) + '" y="' + (my(d.y) - 3) + '" width="6" height="6" fill="#fff"/>' + mapLabel(d, mx(d.x), my(d.y));
    return '<svg class="map" width="1280" height="664" viewBox="0 0 1280 664" role="img" aria-label="Map of San Francisco"><rect width="1280" height="664" fill="#b7d3ea"/>' +
      '<defs><clipPath id="land"><polygon points="' + land + '"/></clipPath></defs><polygon points="' + land + '" fill="#eceee9"/><g clip-path="url(#land)">' + grid +
      '<rect x="' + mx(0.02) + '" y="' + my(0.46) + '" width="' + (mx(0.46) - mx(0.02)) + '" height="' + (my(0.535) - my(0.46)) + '" fill="#cde3c3" rx="4"/>' +
      '<rect x="' + mx(0.22) + '" y="' + my(0.07) + '" width="' + (mx(0.5) - mx(0.22)) + '" height="' + (my(0.2) - my(0.07)) + '" fill="#cde3c3" rx="6"/>' +
      '<circle cx="' + mx(0.55) + '" cy="' + my(0.65) + '" r="26" fill="#d6e6cd"/><circle cx="' + mx(0.71) + '" cy="' + my(0.61) + '" r="9" fill="#cde3c3"/>' +
      '<line x1="' + mx(0.97) + '" y1="' + my(0.3) + '" x2="' + mx(0.58) + '" y2="' + my(0.68) + '" class="main-st"/>' +
      '<polyline points="' + mx(0.3) + "," + my(0.0) + " " + mx(0.33) + "," + my(0.2) + " " + mx(0.33) + "," + my(0.46) + '" class="hwy"/>' +
      '<polyline points="' + mx(0.76) + "," + my(0.1) + " " + mx(0.76) + "," + my(0.55) + " " + mx(0.84) + "," + my(0.62) + " " + mx(0.88) + "," + my(1.0) + '" class="hwy"/>' +
      '<polyline points="' + mx(0.84) + "," + my(0.62) + " " + mx(0.97) + "," + my(0.4) + " " + mx(1.1) + "," + my(0.36) + '" class="hwy"/>' +
      "</g>" + labels + marks + "</svg>";
  }
  function mapLabel(pl, x, y) {
    const w = Math.min(260, 16 + pl.name.length * 7.2);
    const left = x + 14 + w > 1270 ? x - 14 - w : x + 14;
    return '<rect x="' + left + '" y="' + (y - 14) + '" width="' + w + '" height="28" rx="4" fill="#fff" class="tag"/><text x="' + (left + 8) + '" y="' + (y + 5) + '" class="tag-t">' + esc(pl.name) + "</text>";
  }

  // ---- rendering: wallet and trips -------------------------------------------------------------
  function walletPage(st, view) {
    const w = wallet(st);
    const methods = w.paymentMethods.map(function (m) {
      return '<div class="mrow">' + methodIcon(m) + '<div class="mname"><b>' + esc(m.type === "wallet" ? "Udriver Credits" : m.displayName) + "</b><small>" +
        (m.type === "credit" ? "Expires " + esc(m.expiry) : m.type === "cash" ? "Pay your driver in cash" : "Balance " + money(w.balance)) + "</small></div>" +
        (m.isDefault ? '<span class="badge">Default</span>' : '<button class="ghost" data-action="set-default" data-value="' + m.id + '" data-halo-id="set-default-' + m.id + '">Set as default</button>') + "</div>";
    }).join("");
    const activity = w.transactions.slice().reverse().map(function (t) {
      return '<div class="txn"><div><b>' + esc(t.description) + "</b><small>" + esc(t.date) + (t.paymentMethod ? " &middot; " + esc(t.paymentMethod) : "") + "</small></div>" +
        '<span class="amt ' + t.type + '">' + (t.amount > 0 ? "+" : "") + money(t.amount) + "</span></div>";
    }).join("");
    return '<div class="page wallet"><div class="col"><h1>Wallet</h1><div class="balance"><small>Udriver Credits</small><div class="big">' + money(w.balance) + "</div>" +
      '<p>Use credits to pay for rides. Credits never expire.</p><button class="primary inline" data-action="add-funds" data-halo-id="add-funds">+ Add funds</button></div>' +
      "<h2>Payment methods</h2><div class=\"methods\">" + methods + '</div><p class="muted small">Your default payment method is selected for every new ride.</p></div>' +
      '<div class="col"><h2>Wallet activity</h2><div class="txns" data-halo-scroll="txns">' + activity + "</div></div>" + (view.funds ? fundsDialog(st, view.funds) : "") + "</div>";
  }
  function fundsDialog(st, f) {
    const chip = function (v) {
      return '<button class="chip' + (f.amount === v ? " on" : "") + '" data-action="amount" data-value="' + v + '" data-halo-id="amount-' + v + '" aria-pressed="' + (f.amount === v) + '">$' + v + "</button>";
    };
    const cards = wallet(st).paymentMethods.filter(function (m) { return m.type === "credit"; }).map(function (m) {
      return '<label class="src"><input type="radio" name="src" data-action="source" data-value="' + m.id + '" data-halo-id="fund-source-' + m.id + '"' + (f.source === m.id ? " checked" : "") + ">" + methodIcon(m) + esc(m.displayName) + "</label>";
    }).join("");
    const amount = fundsAmount(f);
    return '<div class="scrim"><div class="dialog" role="dialog" aria-label="Add funds"><h2>Add funds to Udriver Credits</h2><p class="muted">Choose an amount</p>' +
      '<div class="chips">' + [10, 25, 50, 100].map(chip).join("") + '<button class="chip' + (f.amount === "other" ? " on" : "") + '" data-action="amount" data-value="other" data-halo-id="amount-other">Other</button></div>' +
      (f.amount === "other" ? '<input type="text" class="custom" data-field="fundsCustom" data-halo-id="amount-custom" placeholder="Amount ($5 to $500)" value="' + esc(f.custom || "") + '" autocomplete="off">' : "") +
      '<p class="muted">Pay with</p><div class="srcs">' + cards + "</div>" + (f.error ? '<div class="err" role="alert">' + esc(f.error) + "</div>" : "") +
      '<div class="dlg-btns"><button class="ghost" data-action="cancel-funds" data-halo-id="cancel-add-funds">Cancel</button><button class="primary inline" data-action="confirm-funds" data-halo-id="confirm-add-funds">' +
      (amount ? "Add " + money(amount) : "Add funds") + "</button></div></div></div>";
  }
  function fundsAmount(f) {
    if (f.amount === "other") {
      const v = Number(String(f.custom || "").replace(/[$,\s]/g, ""));
      return v > 0 ? round2(v) : null;
    }
    return f.amount || null;
  }
  function tripsPage(st) {
    const r = st.ride;
    const row = function (t) {
      return '<div class="trow" data-halo-id="trip-' + esc(t.id) + '">' + carArt(t.car.type) + '<div class="tmain"><b>' + esc(t.pickup.name) + " &rarr; " + esc(t.destination.name) + "</b><small>" +
        esc(t.date) + " &middot; " + esc(t.time) + " &middot; " + esc(t.car.name) + " &middot; " + esc(t.paymentMethod.displayName) + "</small></div>" +
        '<div class="tprice"><b>' + money(t.car.finalPrice) + '</b><small class="status ' + t.status + '">' + esc(t.status[0].toUpperCase() + t.status.slice(1)) + "</small></div></div>";
    };
    const upcoming = r.bookedTrips.slice().reverse();
    const past = r.trips.slice().reverse();
    return '<div class="page trips"><h1>Activity</h1><h2>Upcoming</h2>' + (upcoming.length ? upcoming.map(row).join("") : '<p class="muted">You have no upcoming rides.</p>') +
      "<h2>Past</h2>" + (past.length ? past.map(row).join("") : '<p class="muted">No trips yet.</p>') + "</div>";
  }

  function render() {
    hydrate();
    let view = HALO.view();
    const r = route();
    if (view.route !== location.hash) {
      view = HALO.patchView({ route: location.hash, active: null, payOpen: false, funds: null, notice: "", scroll: {} });
      if (r === "wallet") HALO.milestone("wallet_opened");
      if (r === "trips") HALO.milestone("activity_opened");
    }
    const st = HALO.state();
    let main;
    if (r === "wallet") main = walletPage(st, view);
    else if (r === "trips") main = tripsPage(st);
    else main = mapSvg(st) + '<section class="panel" style="margin-left:' + (24 + SITE.offset(seed())) + 'px" data-halo-scroll="panel">' + ridePanel(st, view) + "</section>";
    document.title = { wallet: "Wallet", trips: "Activity", ride: "Request a ride" }[r] + " | Udriver";
    document.getElementById("app").innerHTML = header(st, r) + '<main class="page-' + r + '">' + main + "</main>" +
      (view.notice ? '<div class="snack" role="status">' + esc(view.notice) + "</div>" : "");
    HALO.restoreUi();
  }
  function redrawSuggestions() {
    // Only the list: a full render while typing would replace the field being typed into.
    const view = HALO.view();
    const slot = document.getElementById("sugg-slot");
    if (slot) slot.innerHTML = suggestionsHtml(view);
    // The clear buttons follow the typed text as a full render draws them, so a page rebuilt from
    // storage (a fork, a rewind) shows exactly what the page that was typed into shows.
    ["pickup", "dropoff"].forEach(function (field) {
      const button = document.querySelector('[data-halo-id="clear-' + field + '"]');
      if (button) button.hidden = !view[field + "Text"];
    });
  }

  // ---- mutations -------------------------------------------------------------------------------
  function resetOptions(st) {
    st.ride.calculatedPrice = null;
  }
  function pickPlace(field, id) {
    const place = placeById(id);
    if (!place) return;
    const key = field === "pickup" ? "pickupLocation" : "dropoffLocation";
    update(function (st) { st.ride[key] = place; resetOptions(st); });
    const patch = { active: null, focus: null, searched: false, error: "" };
    patch[field + "Text"] = place.name;
    HALO.patchView(patch);
    HALO.milestone(field === "pickup" ? "pickup_set" : "dropoff_set");
  }
  function clearField(field) {
    const key = field === "pickup" ? "pickupLocation" : "dropoffLocation";
    update(function (st) { st.ride[key] = null; resetOptions(st); });
    const patch = { active: field, searched: false, error: "", focus: field };
    patch[field + "Text"] = "";
    HALO.patchView(patch);
  }
  function search() {
    const st = HALO.state();
    const view = HALO.view();
    const r = st.ride;
    let error = "";
    if (!r.pickupLocation) error = view.pickupText ? "Choose a pickup location from the list." : "Enter a pickup location.";
    else if (!r.dropoffLocation) error = view.dropoffText ? "Choose a dropoff location from the list." : "Enter a dropoff location.";
    else if (r.pickupLocation.id === r.dropoffLocation.id) error = "Pickup and dropoff must be different places.";
    let date = null, time = null;
    if (!error && view.when === "later") {
      date = parseDate(view.dateText);
      time = parseTime(view.timeText);
      error = scheduleError(date, time);
    }
    if (error) {
      HALO.patchView({ error: error, active: null });
      return;
    }
    update(function (s) {
      s.ride.pickupDate = date ? date.text : null;
      s.ride.pickupTime = time ? time.text : null;
      s.ride.calculatedPrice = SITE.price(s.ride.pickupLocation, s.ride.dropoffLocation, s.ride.selectedCar);
    });
    if (date) HALO.milestone("schedule_set");
    HALO.milestone("prices_shown");
    HALO.patchView({ searched: true, error: "", active: null, focus: null, payOpen: false });
  }
  function chooseCar(type) {
    update(function (st) {
      st.ride.selectedCar = type;
      st.ride.calculatedPrice = SITE.price(st.ride.pickupLocation, st.ride.dropoffLocation, type);
    });
    HALO.milestone("ride_selected");
    HALO.patchView({ error: "" });
  }
  function choosePayment(id) {
    update(function (st) { st.ride.selectedPaymentMethod = SITE.paymentRef(methodById(st, id)); });
    HALO.milestone("payment_selected");
    HALO.patchView({ payOpen: false, error: "" });
  }
  function nextTripId(st) {
    let n = 0;
    st.ride.trips.concat(st.ride.bookedTrips).forEach(function (t) {
      const m = /^trip-(\d+)$/.exec(t.id);
      if (m) n = Math.max(n, Number(m[1]));
    });
    return "trip-" + (n + 1);
  }
  function request() {
    const st = HALO.state();
    const r = st.ride;
    const method = r.selectedPaymentMethod && methodById(st, r.selectedPaymentMethod.id);
    if (!method) {
      HALO.patchView({ error: "Choose a payment method." });
      return;
    }
    const fare = SITE.price(r.pickupLocation, r.dropoffLocation, r.selectedCar);
    const w = wallet(st);
    if (method.type === "wallet" && w.balance < fare.finalPrice) {
      HALO.patchView({ error: "Not enough Udriver Credits: your balance is " + money(w.balance) + " and this ride costs " + money(fare.finalPrice) + ". Add funds in Wallet or choose another payment method." });
      return;
    }
    const n = r.trips.length + r.bookedTrips.length;
    if (r.pickupDate) {
      const booked = SITE.makeTrip(seed(), nextTripId(st), r.pickupLocation, r.dropoffLocation, r.selectedCar, method, r.pickupDate, r.pickupTime, "scheduled", n);
      r.bookedTrip = booked;
      r.bookedTrips.push(booked);
      HALO.commit(st);
      HALO.milestone("ride_scheduled");
      HALO.patchView({ stage: "scheduled", error: "", payOpen: false });
      return;
    }
    const trip = SITE.makeTrip(seed(), nextTripId(st), r.pickupLocation, r.dropoffLocation, r.selectedCar, method, NOW_DATE, NOW_TIME, "completed", n);
    r.trip = trip;
    r.trips.push(trip);
    // Every trip shows in the wallet's activity; only a ride paid with credits draws on the balance.
    w.transactions.push(SITE.tripCharge(trip, w.transactions.length));
    if (method.type === "wallet") w.balance = round2(w.balance - trip.car.finalPrice);
    HALO.commit(st);
    HALO.milestone("ride_requested");
    HALO.patchView({ stage: "receipt", error: "", payOpen: false });
  }
  function newRide() {
    update(function (st) {
      Object.assign(st.ride, { pickupLocation: null, dropoffLocation: null, pickupDate: null, pickupTime: null, calculatedPrice: null, selectedCar: "UdriverX" });
      const def = wallet(st).paymentMethods.filter(function (m) { return m.isDefault; })[0];
      st.ride.selectedPaymentMethod = SITE.paymentRef(def);
    });
    HALO.patchView({ stage: null, pickupText: "", dropoffText: "", when: "now", dateText: "", timeText: "", searched: false, error: "" });
  }
  function setDefault(id) {
    update(function (st) {
      wallet(st).paymentMethods.forEach(function (m) { m.isDefault = m.id === id; });
      st.ride.selectedPaymentMethod = SITE.paymentRef(methodById(st, id));
    });
    HALO.milestone("default_payment_changed");
    HALO.patchView({ notice: methodById(HALO.state(), id).displayName + " is now your default payment method." });
  }
  function confirmFunds() {
    const view = HALO.view();
    const f = view.funds;
    const amount = fundsAmount(f);
    let error = "";
    if (!amount) error = "Choose an amount.";
    else if (amount < 5 || amount > 500) error = "Add between $5 and $500 at a time.";
    else if (!f.source) error = "Choose a card to pay with.";
    if (error) {
      f.error = error;
      HALO.patchView({ funds: f });
      return;
    }
    update(function (st) {
      const w = wallet(st);
      const card = methodById(st, f.source);
      w.balance = round2(w.balance + amount);
      w.transactions.push({ id: "txn-" + w.transactions.length, date: NOW_DATE, description: "Wallet Top-up", type: "credit", amount: amount, paymentMethod: card.displayName });
    });
    HALO.milestone("funds_added");
    HALO.patchView({ funds: null, focus: null, notice: money(amount) + " added to your Udriver Credits." });
  }

  // ---- events ----------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    const view = HALO.view();
    if (view.notice) HALO.patchView({ notice: "" });
    if (!el) {
      const inLoc = e.target.closest("[data-loc]") || e.target.closest(".sugg");
      if ((view.active && !inLoc) || (view.payOpen && !e.target.closest(".payrow"))) {
        HALO.patchView({ active: inLoc ? view.active : null, payOpen: false });
        render();
      } else if (view.notice) render();
      return;
    }
    const action = el.getAttribute("data-action");
    if (action !== "source") e.preventDefault();
    const value = el.getAttribute("data-value");
    const st = HALO.state();
    if (action === "pick-place") pickPlace(view.active, Number(el.getAttribute("data-id")));
    else if (action === "clear") clearField(value);
    else if (action === "when") {
      HALO.patchView({ when: value, searched: false, error: "", active: null });
      update(resetOptions);
    } else if (action === "search") search();
    else if (action === "car") chooseCar(value);
    else if (action === "pay-toggle") HALO.patchView({ payOpen: !view.payOpen });
    else if (action === "pay") choosePayment(value);
    else if (action === "request") request();
    else if (action === "new-ride") newRide();
    else if (action === "set-default") setDefault(value);
    else if (action === "add-funds") {
      const card = wallet(st).paymentMethods.filter(function (m) { return m.type === "credit"; })[0];
      HALO.patchView({ funds: { amount: null, custom: "", source: card ? card.id : null, error: "" } });
      HALO.milestone("add_funds_opened");
    } else if (action === "amount") {
      const f = view.funds;
      f.amount = value === "other" ? "other" : Number(value);
      f.error = "";
      HALO.patchView({ funds: f, focus: value === "other" ? "amount-custom" : null });
    } else if (action === "source") {
      const f = view.funds;
      f.source = value;
      HALO.patchView({ funds: f });
    } else if (action === "cancel-funds") HALO.patchView({ funds: null, focus: null });
    else if (action === "confirm-funds") confirmFunds();
    render();
  });

  document.addEventListener("focusin", function (e) {
    const field = e.target.getAttribute && e.target.getAttribute("data-loc");
    if (!field || HALO.view().active === field) return;
    HALO.patchView({ active: field, payOpen: false });
    redrawSuggestions();
  });

  document.addEventListener("input", function (e) {
    const t = e.target;
    const loc = t.getAttribute("data-loc");
    if (loc) {
      const patch = { active: loc };
      patch[loc + "Text"] = t.value;
      HALO.patchView(patch);
      const key = loc === "pickup" ? "pickupLocation" : "dropoffLocation";
      const st = HALO.state();
      if (st.ride[key] && st.ride[key].name !== t.value) {
        // Editing a chosen place un-chooses it: the prices shown no longer apply.
        update(function (s) { s.ride[key] = null; resetOptions(s); });
        HALO.patchView({ searched: false });
        render();
        return;
      }
      redrawSuggestions();
      return;
    }
    const field = t.getAttribute("data-field");
    if (field === "fundsCustom") {
      const f = HALO.view().funds;
      f.custom = t.value;
      f.error = "";
      HALO.patchView({ funds: f });
    } else if (field) {
      const patch = {};
      patch[field] = t.value;
      if (HALO.view().searched) {
        // A new date or time needs a new search before booking.
        patch.searched = false;
        HALO.patchView(patch);
        update(resetOptions);
        render();
        return;
      }
      HALO.patchView(patch);
    }
  });

  document.addEventListener("keydown", function (e) {
    if (e.key !== "Enter") return;
    const t = e.target;
    const loc = t.getAttribute && t.getAttribute("data-loc");
    if (loc) {
      // Enter takes the first suggestion, as on the real site.
      const s = suggestions(HALO.view());
      if (s && s.list.length) {
        e.preventDefault();
        pickPlace(loc, s.list[0].id);
        render();
      }
    } else if (t.getAttribute && (t.getAttribute("data-field") === "dateText" || t.getAttribute("data-field") === "timeText")) {
      e.preventDefault();
      search();
      render();
    }
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
