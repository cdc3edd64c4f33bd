/* Marrisuite app: a Marriott-like single page. Routes (location.hash):
 *   #/                                 home: find hotels (destination, dates, rooms and guests)
 *   #/search?destination=&fromDate=&toDate=&rooms=&guests=    hotels in a destination
 *   #/hotel/<id>                       a hotel: overview and rooms with their nightly rates
 *   #/book/<hotel id>/<room id>        guest details and payment
 *   #/confirmation/<reservation id>    the booked stay
 *   #/trips                            upcoming reservations (cancel)
 * The last search, the reservations, the banner and the page as the real site's URL live in
 * HALO.state(); the form fields, the sort, errors and the open dialog live in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const SITE = HALO.site();
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  const TODAY = "2024-07-15";
  const SORTS = [["recommended", "Recommended"], ["price", "Price: Low to High"], ["distance", "Distance"], ["rating", "Guest Rating"]];

  function seed() {
    return Number(HALO.meta().seed || 0);
  }
  function offsetStyle() {
    const s = seed();
    return s ? ' style="margin-left:' + ((s % 5) - 2) * 8 + "px;padding-top:" + (s % 3) * 4 + 'px"' : "";
  }

  // ---- routing -------------------------------------------------------------------------------------
  function route() {
    const raw = (location.hash || "#/").replace(/^#\/?/, "");
    const qi = raw.indexOf("?");
    const path = (qi === -1 ? raw : raw.slice(0, qi)).split("/");
    const q = new URLSearchParams(qi === -1 ? "" : raw.slice(qi + 1));
    if (path[0] === "search") return { kind: "search", q: q };
    if (path[0] === "hotel" && path[1]) return { kind: "hotel", id: path[1] };
    if (path[0] === "book" && path[2]) return { kind: "book", id: path[1], room: path[2] };
    if (path[0] === "confirmation" && path[1]) return { kind: "confirmation", id: path[1] };
    if (path[0] === "trips") return { kind: "trips" };
    return { kind: "home" };
  }
  function pathnameOf(r) {
    // The real site's URL for the page, kept in state as REAL's clones do.
    if (r.kind === "search") return { pathname: "/search/findHotels.mi", search: "?" + r.q.toString() };
    if (r.kind === "hotel") return { pathname: "/hotels/" + r.id + "/overview/", search: "" };
    if (r.kind === "book") return { pathname: "/reservation/guestInfo.mi", search: "?propertyCode=" + r.id + "&room=" + r.room };
    if (r.kind === "confirmation") return { pathname: "/reservation/confirmation.mi", search: "?id=" + r.id };
    if (r.kind === "trips") return { pathname: "/loyalty/myAccount/activity.mi", search: "" };
    return { pathname: "/", search: "" };
  }
  function go(hash) {
    if (location.hash !== hash) location.hash = hash;
    render();
  }

  // ---- dates and money --------------------------------------------------------------------------------
  function parseDate(text) {
    const t = String(text || "").trim();
    let m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(t);
    let y, mo, d;
    if (m) { y = +m[1]; mo = +m[2]; d = +m[3]; } else {
      m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(t);
      if (!m) return null;
      y = +m[3]; mo = +m[1]; d = +m[2];
    }
    const dt = new Date(Date.UTC(y, mo - 1, d));
    if (dt.getUTCMonth() !== mo - 1) return null;
    return dt.toISOString().slice(0, 10);
  }
  function nights(a, b) {
    return Math.round((Date.parse(b + "T00:00:00Z") - Date.parse(a + "T00:00:00Z")) / 86400000);
  }
  function nice(iso) {
    const dt = new Date(iso + "T00:00:00Z");
    return DAYS[dt.getUTCDay()] + ", " + MONTHS[dt.getUTCMonth()] + " " + dt.getUTCDate() + ", " + dt.getUTCFullYear();
  }
  function money(x) {
    return "$" + Math.round(x).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function roomsGuests(rooms, guests) {
    return rooms + (rooms === 1 ? " Room, " : " Rooms, ") + guests + (guests === 1 ? " Guest" : " Guests");
  }

  // ---- lookups ---------------------------------------------------------------------------------------
  function findCity(text) {
    const w = String(text || "").toLowerCase().replace(/[^a-z ]/g, " ").split(/\s+/).filter(Boolean);
    if (!w.length) return null;
    return SITE.cities.filter(function (c) {
      const label = (c.label + " " + c.state).toLowerCase().replace(/,/g, "");
      return w.every(function (x) { return label.split(" ").indexOf(x) !== -1; });
    })[0] || null;
  }
  function hotelById(id) {
    return SITE.hotels().filter(function (h) { return h.id === id; })[0] || null;
  }
  function inCity(city, sort) {
    const list = SITE.hotels().filter(function (h) { return h.city === city.city; });
    const by = {
      price: function (a, b) { return a.rate - b.rate; },
      distance: function (a, b) { return a.miles - b.miles; },
      rating: function (a, b) { return b.rating - a.rating || b.reviews - a.reviews; },
    }[sort];
    if (by) return list.sort(by);
    // "Recommended": the brand's own order (reviews), shuffled by the episode seed.
    list.sort(function (a, b) { return b.reviews - a.reviews; });
    return seed() ? HALO.rng(seed() * 17 + 1).shuffle(list) : list;
  }
  function form() {
    const v = HALO.view();
    if (v.form) return v.form;
    const s = HALO.state().search;
    const r = route();
    const h = r.kind === "hotel" && !s.destination ? hotelById(r.id) : null;
    // On a hotel's page the dates bar starts with that hotel's destination.
    const dest = h ? SITE.cities.filter(function (c) { return c.city === h.city; })[0].label : s.destination;
    return { destination: dest, checkIn: s.checkIn, checkOut: s.checkOut, rooms: s.rooms, guests: s.guests };
  }

  // ---- pictures --------------------------------------------------------------------------------------
  const BRAND_COLORS = { Courtfield: "#7a8f9e", "Residence Suites": "#b9975b", "Ritz-Carlyle": "#1c2b39", "AC Hotels": "#2d2d2d", "Fairfield Stays": "#3c6e71", Sheraville: "#8c3b2e", Westmark: "#4b3f72", "SpringHill Stays": "#6b8e23", Marrisuite: "#7c2529" };
  function art(h, w, hgt) {
    const c = BRAND_COLORS[h.brand] || "#555";
    const warm = h.state === "CA" || h.state === "FL";
    let wins = "";
    for (let r = 0; r < 5; r++) for (let k = 0; k < 6; k++) wins += '<rect x="' + (70 + k * 26) + '" y="' + (52 + r * 22) + '" width="14" height="12" fill="#f3e3b3" opacity="' + ((r + k + h.reviews) % 3 ? 0.9 : 0.5) + '"/>';
    return '<svg width="' + w + '" height="' + hgt + '" viewBox="0 0 300 200" preserveAspectRatio="xMidYMid slice" aria-hidden="true"><rect width="300" height="200" fill="' + (warm ? "#f6c987" : "#a9c4dc") + '"/>' +
      '<rect y="150" width="300" height="50" fill="' + (warm ? "#d8c29a" : "#8a9a7b") + '"/><rect x="60" y="40" width="170" height="130" fill="' + c + '"/>' + wins +
      '<rect x="125" y="145" width="40" height="25" fill="#e9e2d0"/>' +
      (warm ? '<rect x="252" y="90" width="6" height="70" fill="#6d4c2f"/><ellipse cx="255" cy="88" rx="26" ry="10" fill="#3f7d3a"/><rect x="30" y="100" width="5" height="60" fill="#6d4c2f"/><ellipse cx="32" cy="98" rx="20" ry="8" fill="#3f7d3a"/>' :
        '<ellipse cx="262" cy="150" rx="26" ry="30" fill="#4f7d3f"/><ellipse cx="30" cy="152" rx="22" ry="26" fill="#4f7d3f"/>') + "</svg>";
  }
  function stars(r) {
    return '<span class="stars" aria-label="' + r + ' out of 5">' + "&#9733;".repeat(Math.round(r)) + '<span class="off">' + "&#9733;".repeat(5 - Math.round(r)) + "</span></span>";
  }

  // ---- frame -------------------------------------------------------------------------------------------
  function header() {
    return '<header class="top"><a class="logo" href="#/" data-halo-id="logo">MARRISUITE<small>BONVOYAGE</small></a><nav>' +
      '<a href="#/" data-halo-id="nav-find">Find &amp; Reserve</a><span>Special Offers</span><span>Vacations</span><span>Our Brands</span>' +
      '<a href="#/trips" data-halo-id="nav-trips">My Trips</a><span class="member">Hello, ' + esc(SITE.member.name.split(" ")[0]) + " &middot; " + SITE.member.points + " points</span></nav></header>";
  }
  function banner(st) {
    return st.ui.notification ? '<div class="notice" role="status">' + esc(st.ui.notification) + "</div>" : "";
  }
  function searchForm(view, compact) {
    const f = form();
    return '<form class="sform' + (compact ? " compact" : "") + '" role="search"><label class="fld dest"><span>Destination</span><input type="text" data-field="destination" data-halo-id="destination" placeholder="Where can we take you?" value="' + esc(f.destination) + '" autocomplete="off"></label>' +
      dateField("in", "Check-in", f.checkIn) + dateField("out", "Check-out", f.checkOut) +
      '<div class="fld step"><span>Rooms</span><div><button type="button" data-action="step" data-name="rooms" data-by="-1" data-halo-id="rooms-minus" aria-label="Fewer rooms">&minus;</button><b>' + f.rooms + '</b><button type="button" data-action="step" data-name="rooms" data-by="1" data-halo-id="rooms-plus" aria-label="More rooms">+</button></div></div>' +
      '<div class="fld step"><span>Guests</span><div><button type="button" data-action="step" data-name="guests" data-by="-1" data-halo-id="guests-minus" aria-label="Fewer guests">&minus;</button><b>' + f.guests + '</b><button type="button" data-action="step" data-name="guests" data-by="1" data-halo-id="guests-plus" aria-label="More guests">+</button></div></div>' +
      '<button type="submit" class="find" data-halo-id="find-hotels">' + (compact ? "Update Search" : "Find Hotels") + "</button>" +
      (view.cal ? calendar(f, view.cal) : "") +
      (view.error ? '<div class="ferr" role="alert">' + esc(view.error) + "</div>" : "") + "</form>";
  }

  // ---- the dates picker (Marriott's: two months, check-in then check-out, Done) ---------------------------
  function dateField(which, label, iso) {
    return '<button type="button" class="fld datebtn" data-action="dates-open" data-which="' + which + '" data-halo-id="check-' + which + '" aria-haspopup="dialog">' +
      "<span>" + label + "</span><b>" + (iso ? esc(nice(iso)) : "Add date") + "</b></button>";
  }
  function shiftMonth(ym, by) {
    const dt = new Date(Date.UTC(+ym.slice(0, 4), +ym.slice(5, 7) - 1 + by, 1));
    return dt.toISOString().slice(0, 7);
  }
  function monthGrid(ym, f) {
    const y = +ym.slice(0, 4), m = +ym.slice(5, 7);
    const first = new Date(Date.UTC(y, m - 1, 1)).getUTCDay(), days = new Date(Date.UTC(y, m, 0)).getUTCDate();
    let cells = "";
    for (let i = 0; i < first; i++) cells += "<span></span>";
    for (let d = 1; d <= days; d++) {
      const iso = ym + "-" + (d < 10 ? "0" : "") + d;
      const cls = (iso === f.checkIn || iso === f.checkOut ? "sel" : f.checkIn && f.checkOut && iso > f.checkIn && iso < f.checkOut ? "mid" : "") + (iso === TODAY ? " today" : "");
      cells += '<button type="button" class="day ' + cls + '" data-action="day" data-date="' + iso + '" data-halo-id="day-' + iso + '"' +
        (iso < TODAY ? " disabled" : "") + ' aria-label="' + esc(nice(iso)) + '">' + d + "</button>";
    }
    const name = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"][m - 1];
    return '<div class="month"><h3>' + name + " " + y + '</h3><div class="dow">' + DAYS.map(function (x) { return "<span>" + x.slice(0, 2) + "</span>"; }).join("") + '</div><div class="days">' + cells + "</div></div>";
  }
  function calendar(f, cal) {
    const n = f.checkIn && f.checkOut ? nights(f.checkIn, f.checkOut) : 0;
    const says = f.checkIn ? nice(f.checkIn) + (f.checkOut ? " \u2013 " + nice(f.checkOut) + " \u00b7 " + n + (n === 1 ? " night" : " nights") : " \u2013 select check-out") : "Select check-in";
    return '<div class="cal" role="dialog" aria-label="Dates"><div class="calhead"><button type="button" data-action="cal-month" data-by="-1" data-halo-id="cal-prev" aria-label="Previous month"' +
      (cal.month <= TODAY.slice(0, 7) ? " disabled" : "") + '>&lsaquo;</button><b>' + esc(says) + '</b><button type="button" data-action="cal-month" data-by="1" data-halo-id="cal-next" aria-label="Next month">&rsaquo;</button></div>' +
      '<div class="months">' + monthGrid(cal.month, f) + monthGrid(shiftMonth(cal.month, 1), f) + "</div>" +
      '<div class="calfoot"><button type="button" class="btn ghost" data-action="dates-clear" data-halo-id="dates-clear">Clear Dates</button><button type="button" class="btn" data-action="dates-done" data-halo-id="dates-done">Done</button></div></div>';
  }
  function pickDay(f, cal, iso) {
    // Check-out only after a check-in, and only later than it; any other pick starts the stay anew.
    if (cal.picking === "out" && f.checkIn && iso > f.checkIn) { f.checkOut = iso; cal.picking = "in"; }
    else { f.checkIn = iso; f.checkOut = ""; cal.picking = "out"; }
  }

  // ---- pages --------------------------------------------------------------------------------------------
  function homePage(view) {
    const featured = ["gol-ritz", "sfo-westmark", "mia-ritz", "nyc-marquis"].map(hotelById);
    return '<section class="hero"><div class="hero-art">' + heroArt() + '</div><div class="hero-in"><h1>Find your next stay</h1>' + searchForm(view, false) + "</div></section>" +
      '<section class="strip"><h2>Trending destinations</h2><div class="feat">' + featured.map(function (h) {
        return '<a class="fcard" href="#/hotel/' + h.id + '" data-halo-id="featured-' + h.id + '">' + art(h, 270, 150) + "<b>" + esc(h.name) + "</b><span>" + esc(h.city + ", " + h.state) + "</span></a>";
      }).join("") + "</div></section>";
  }
  function heroArt() {
    return '<svg width="1280" height="330" viewBox="0 0 1280 330" preserveAspectRatio="xMidYMid slice" aria-hidden="true"><rect width="1280" height="330" fill="#f2b880"/><circle cx="980" cy="120" r="60" fill="#fbe3a1"/>' +
      '<rect y="210" width="1280" height="120" fill="#3f78a8"/><rect y="250" width="1280" height="80" fill="#e6cf9f"/><rect x="120" y="140" width="8" height="120" fill="#5c4128"/><ellipse cx="124" cy="138" rx="50" ry="16" fill="#2f6b34"/>' +
      '<rect x="1130" y="150" width="8" height="110" fill="#5c4128"/><ellipse cx="1134" cy="148" rx="46" ry="14" fill="#2f6b34"/></svg>';
  }
  function resultsPage(st, view, r) {
    const city = findCity(r.q.get("destination"));
    if (!city) return '<div class="page">' + searchForm(view, true) + '<div class="empty"><h2>No hotels found</h2><p>Try another destination.</p></div></div>';
    const sort = view.sort || "recommended";
    const list = inCity(city, sort);
    if (list.length) HALO.milestone("search_results");
    const s = st.search;
    const n = s.checkIn && s.checkOut ? nights(s.checkIn, s.checkOut) : 0;
    return '<div class="page">' + searchForm(view, true) + '<div class="rhead"><h1>' + list.length + " hotels in " + esc(city.label) + "</h1>" +
      '<div class="muted">' + (n ? esc(nice(s.checkIn)) + " &ndash; " + esc(nice(s.checkOut)) + " &middot; " + n + (n === 1 ? " night" : " nights") : "Flexible dates") + " &middot; " + esc(s.roomsGuests) + "</div>" +
      '<div class="sorts">Sort by: ' + SORTS.map(function (x) {
        return '<button class="' + (x[0] === sort ? "on" : "") + '" data-action="sort" data-value="' + x[0] + '" data-halo-id="sort-' + x[0] + '">' + x[1] + "</button>";
      }).join("") + '</div></div><div class="hlist">' + list.map(function (h) {
        return '<article class="hcard"><div class="hart">' + art(h, 260, 180) + '</div><div class="hmain"><div class="brand">' + esc(h.brand) + '</div><a class="hname" href="#/hotel/' + h.id + '">' + esc(h.name) + "</a>" +
          '<div class="muted">' + esc(h.address) + " &middot; " + h.miles + " miles from destination</div><div>" + stars(h.rating) + " " + h.rating + " (" + h.reviews.toLocaleString("en-US") + ' reviews)</div><div class="chips">' +
          h.amenities.map(function (a) { return "<span>" + esc(a) + "</span>"; }).join("") + '</div></div><div class="hprice"><span class="muted">' + (n ? "Avg. nightly rate" : "Rates from") + "</span><b>" + money(h.rate) + '</b><span class="muted">/night</span>' +
          '<a class="btn" href="#/hotel/' + h.id + '" data-halo-id="hotel-' + h.id + '">View Rates</a></div></article>';
      }).join("") + "</div></div>";
  }
  function hotelPage(st, view, h) {
    HALO.milestone("hotel_viewed");
    const s = st.search;
    const n = s.checkIn && s.checkOut ? nights(s.checkIn, s.checkOut) : 0;
    return '<div class="page"><a class="back" href="#/search?destination=' + encodeURIComponent(h.city + ", " + h.state) + '" data-halo-id="back-to-results">&lsaquo; All hotels in ' + esc(h.city) + "</a>" +
      '<div class="hhero">' + art(h, 560, 300) + '<div class="hinfo"><div class="brand">' + esc(h.brand) + "</div><h1>" + esc(h.name) + '</h1><div class="muted">' + esc(h.address) + "</div><div>" + stars(h.rating) + " " + h.rating + " &middot; " + h.reviews.toLocaleString("en-US") + ' reviews</div><div class="chips">' +
      h.amenities.map(function (a) { return "<span>" + esc(a) + "</span>"; }).join("") + '</div><div class="stay">' + (n ? "Your stay: " + esc(nice(s.checkIn)) + " &ndash; " + esc(nice(s.checkOut)) + " &middot; " + n + (n === 1 ? " night" : " nights") + " &middot; " + esc(s.roomsGuests) : "Add your dates to book a room.") + "</div></div></div>" +
      (n ? "" : '<div class="datebar">' + searchForm(view, true) + "</div>") +
      (view.roomError ? '<div class="ferr wide" role="alert">' + esc(view.roomError) + "</div>" : "") +
      '<h2>Rooms &amp; rates</h2><div class="rooms">' + h.rooms.map(function (room) {
        return '<div class="room"><div><b>' + esc(room.name) + '</b><div class="muted">' + esc(room.beds) + '</div><div class="muted">Free cancellation until 2 days before arrival</div></div><div class="rprice"><b>' + money(room.rate) + '</b><span class="muted">/night</span>' +
          (n ? '<span class="muted">' + money(room.rate * n * s.rooms) + " total</span>" : "") + '<button class="btn" data-action="select-room" data-id="' + room.id + '" data-halo-id="select-' + room.id + '">Select</button></div></div>';
      }).join("") + "</div></div>";
  }
  function bookPage(st, view, h, room) {
    HALO.milestone("booking_form");
    const s = st.search;
    const n = nights(s.checkIn, s.checkOut);
    const g = view.guest || {};
    const field = function (name, label, ph) {
      return '<label class="fld"><span>' + label + '</span><input type="text" data-guest="' + name + '" data-halo-id="' + name + '" placeholder="' + ph + '" value="' + esc(g[name] || "") + '" autocomplete="off"></label>';
    };
    return '<div class="page book"><section class="gform"><h1>Guest information</h1>' + field("first-name", "First name", "") + field("last-name", "Last name", "") + field("email", "Email", "name@example.com") +
      "<h2>Payment</h2>" + field("card-number", "Card number", "16 digits") + field("card-expiry", "Expiration (MM/YY)", "MM/YY") +
      (view.bookError ? '<div class="ferr wide" role="alert">' + esc(view.bookError) + "</div>" : "") +
      '<button class="btn big" data-action="book" data-halo-id="book-submit">Book Now</button></section><aside class="summary"><h2>Your stay</h2>' + art(h, 300, 150) + "<b>" + esc(h.name) + "</b><div>" + esc(room.name) + "</div>" +
      '<div class="muted">' + esc(nice(s.checkIn)) + " &ndash; " + esc(nice(s.checkOut)) + "</div><div>" + n + (n === 1 ? " night" : " nights") + " &middot; " + esc(s.roomsGuests) + '</div><div class="total">Total: ' + money(room.rate * n * s.rooms) + "</div></aside></div>";
  }
  function confirmationPage(st, res) {
    HALO.milestone("confirmation_viewed");
    const h = hotelById(res.hotelId);
    return '<div class="page"><div class="confirm"><h1>Thanks, ' + esc(res.guestName.split(" ")[0]) + "!</h1><p>We've sent the details to " + esc(res.email) + '.</p><div class="cnum">Confirmation number <b data-halo-id="confirmation-number">' + esc(res.confirmationNumber) + "</b></div>" +
      (h ? art(h, 420, 200) : "") + "<h2>" + esc(res.hotelName) + "</h2><div>" + esc(res.roomName) + '</div><div class="muted">' + esc(nice(res.checkIn)) + " &ndash; " + esc(nice(res.checkOut)) + " &middot; " + res.nights + " nights &middot; " + esc(roomsGuests(res.rooms, res.guests)) + "</div>" +
      '<div class="total">Total: ' + money(res.total) + '</div><a class="btn" href="#/trips" data-halo-id="view-trips">View My Trips</a></div></div>';
  }
  function tripsPage(st, view) {
    HALO.milestone("trips_viewed");
    const list = Object.keys(st.reservations).sort().map(function (k) { return st.reservations[k]; });
    const modal = view.modal ? '<div class="overlay"><div class="modal" role="dialog" aria-modal="true"><h2>Cancel this reservation?</h2><p>' + esc(st.reservations[view.modal].hotelName) + ", " + esc(nice(st.reservations[view.modal].checkIn)) +
      '</p><div class="mfoot"><button class="btn ghost" data-action="keep" data-halo-id="cancel-keep">Keep Reservation</button><button class="btn" data-action="cancel-confirm" data-halo-id="cancel-confirm">Cancel Reservation</button></div></div></div>' : "";
    return '<div class="page"><h1>My Trips</h1>' + list.map(function (res) {
      const h = hotelById(res.hotelId);
      return '<article class="trip">' + (h ? art(h, 200, 130) : "") + '<div class="tmain"><b>' + esc(res.hotelName) + "</b><div>" + esc(res.roomName) + '</div><div class="muted">' + esc(nice(res.checkIn)) + " &ndash; " + esc(nice(res.checkOut)) + " &middot; " + esc(roomsGuests(res.rooms, res.guests)) + "</div>" +
        '<div class="muted">Confirmation ' + esc(res.confirmationNumber) + '</div></div><div class="tside"><span class="status ' + res.status + '">' + (res.status === "cancelled" ? "Cancelled" : "Upcoming") + "</span>" +
        (res.status === "cancelled" ? "" : '<button class="btn ghost" data-action="cancel" data-id="' + res.id + '" data-halo-id="cancel-' + res.id + '">Cancel Reservation</button>') + "</div></article>";
    }).join("") + "</div>" + modal;
  }

  // ---- render -------------------------------------------------------------------------------------------
  function render() {
    const r = route();
    let view = HALO.view();
    if (view.route !== location.hash) {
      view = HALO.patchView({ route: location.hash, error: "", roomError: "", bookError: "", modal: null, cal: null, scroll: {} });
      syncRouter(r);
    }
    const st = HALO.state();
    let main, title = "Marrisuite Hotels & Resorts | Book Directly";
    if (r.kind === "search") { main = resultsPage(st, view, r); title = "Find Hotels | Marrisuite"; }
    else if (r.kind === "hotel") { const h = hotelById(r.id); main = h ? hotelPage(st, view, h) : missing(); if (h) title = h.name + " | Marrisuite"; }
    else if (r.kind === "book") {
      const h = hotelById(r.id), room = h && h.rooms.filter(function (x) { return x.id === r.room; })[0];
      main = h && room && st.search.checkIn ? bookPage(st, view, h, room) : missing();
      title = "Guest Information | Marrisuite";
    } else if (r.kind === "confirmation") { const res = st.reservations[r.id]; main = res ? confirmationPage(st, res) : missing(); title = "Reservation Confirmation | Marrisuite"; }
    else if (r.kind === "trips") { main = tripsPage(st, view); title = "My Trips | Marrisuite"; }
    else main = homePage(view);
    document.title = title;
    document.getElementById("app").innerHTML = header() + '<main class="scroll page-' + r.kind + '" data-halo-scroll="main">' + banner(st) + '<div class="wrap"' + offsetStyle() + ">" + main + "</div></main>";
    HALO.restoreUi();
  }
  function missing() {
    return '<div class="page"><div class="empty"><h2>We can\'t find that page</h2><p><a href="#/">Start a new search</a></p></div></div>';
  }

  // ---- mutations -----------------------------------------------------------------------------------------
  function update(fn) {
    const st = HALO.state();
    fn(st);
    HALO.commit(st);
    return st;
  }
  function syncRouter(r) {
    const loc = pathnameOf(r);
    const st = HALO.state();
    if (st.router.location.pathname !== loc.pathname || st.router.location.search !== loc.search) update(function (s) { s.router.location = loc; });
  }
  function search() {
    const f = form();
    const city = findCity(f.destination);
    const a = String(f.checkIn || "").trim(), b = String(f.checkOut || "").trim();
    const inD = a ? parseDate(a) : "", outD = b ? parseDate(b) : "";
    let error = "";
    if (!city) error = f.destination.trim() ? 'We couldn\'t find "' + f.destination.trim() + '". Try a city such as Goleta, California.' : "Please enter a destination.";
    else if (inD === null || outD === null) error = "Please enter dates as YYYY-MM-DD or M/D/YYYY.";
    else if (!!inD !== !!outD) error = "Please enter both a check-in and a check-out date.";
    else if (inD && inD < TODAY) error = "Check-in can't be in the past.";
    else if (inD && nights(inD, outD) < 1) error = "Check-out must be after check-in.";
    else if (inD && nights(inD, outD) > 30) error = "Stays are limited to 30 nights.";
    if (error) { HALO.patchView({ error: error, form: f }); render(); return; }
    update(function (st) {
      st.search = { destination: city.label, checkIn: inD, checkOut: outD, rooms: f.rooms, guests: f.guests, roomsGuests: roomsGuests(f.rooms, f.guests) };
      st.ui.notification = "";
    });
    HALO.milestone("search_submitted");
    HALO.patchView({ form: null, error: "", focus: null, sort: "recommended" });
    const here = route();
    if (here.kind === "hotel" && (hotelById(here.id) || {}).city === city.city) {
      // Dates added on a hotel's page: stay there and show the rooms with totals.
      HALO.patchView({ roomError: "" });
      render();
      return;
    }
    const q = new URLSearchParams({ destination: city.city + ", " + city.state, fromDate: inD, toDate: outD, rooms: String(f.rooms), guests: String(f.guests) });
    go("#/search?" + q.toString());
  }
  function confirmationNumber(res) {
    let h = 2166136261;
    const s = [res.hotelId, res.roomId, res.checkIn, res.checkOut, res.guestName, res.email, res.id].join("|");
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619) >>> 0;
    return String(80000000 + (h % 10000000));
  }
  function book(r) {
    const g = HALO.view().guest || {};
    const val = function (k) { return String(g[k] || "").trim(); };
    const card = val("card-number").replace(/[\s-]/g, "");
    let error = "";
    if (!val("first-name") || !val("last-name")) error = "Please enter the guest's first and last name.";
    else if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(val("email"))) error = "Please enter a valid email address.";
    else if (!/^\d{16}$/.test(card)) error = "Please enter a 16-digit card number.";
    else if (!/^(0[1-9]|1[0-2])\/\d{2}$/.test(val("card-expiry"))) error = "Please enter the expiration date as MM/YY.";
    if (error) { HALO.patchView({ bookError: error }); return; }
    const h = hotelById(r.id), room = h.rooms.filter(function (x) { return x.id === r.room; })[0];
    let id = null;
    update(function (st) {
      let n = 2001;
      while (st.reservations["res-" + n]) n++;
      id = "res-" + n;
      const s = st.search, k = nights(s.checkIn, s.checkOut);
      const res = { id: id, confirmationNumber: "", hotelId: h.id, hotelName: h.name, roomId: room.id, roomName: room.name, checkIn: s.checkIn, checkOut: s.checkOut,
        nights: k, rooms: s.rooms, guests: s.guests, guestName: val("first-name") + " " + val("last-name"), email: val("email"), total: room.rate * k * s.rooms, status: "confirmed" };
      res.confirmationNumber = confirmationNumber(res);
      st.reservations[id] = res;
      st.ui.notification = "Thanks for booking! Your reservation is confirmed.";
    });
    HALO.milestone("reservation_confirmed");
    HALO.patchView({ guest: null, bookError: "", focus: null });
    go("#/confirmation/" + id);
  }

  // ---- events --------------------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    if (!el) return;
    e.preventDefault();
    const action = el.getAttribute("data-action");
    const id = el.getAttribute("data-id");
    const view = HALO.view();
    const r = route();
    if (action === "step") {
      const f = form();
      const name = el.getAttribute("data-name");
      const max = name === "rooms" ? 9 : 12;
      f[name] = Math.max(1, Math.min(max, f[name] + Number(el.getAttribute("data-by"))));
      if (f.guests < f.rooms) f.guests = f.rooms;
      HALO.patchView({ form: f });
    } else if (action === "dates-open") {
      const f = form(), which = el.getAttribute("data-which");
      const month = ((which === "out" && f.checkOut) || f.checkIn || TODAY).slice(0, 7);
      HALO.patchView({ form: f, cal: { month: month, picking: which === "out" && f.checkIn ? "out" : "in" } });
    } else if (action === "cal-month") {
      const cal = view.cal, by = Number(el.getAttribute("data-by"));
      if (cal && !(by < 0 && cal.month <= TODAY.slice(0, 7))) HALO.patchView({ cal: { month: shiftMonth(cal.month, by), picking: cal.picking } });
    } else if (action === "day") {
      const f = form(), cal = Object.assign({}, view.cal), iso = el.getAttribute("data-date");
      if (iso < TODAY) return;
      pickDay(f, cal, iso);
      HALO.patchView({ form: f, cal: cal, error: "" });
    } else if (action === "dates-clear") {
      const f = form();
      f.checkIn = ""; f.checkOut = "";
      HALO.patchView({ form: f, cal: { month: (view.cal || {}).month || TODAY.slice(0, 7), picking: "in" } });
    } else if (action === "dates-done") {
      HALO.patchView({ cal: null });
    } else if (action === "sort") {
      HALO.patchView({ sort: el.getAttribute("data-value") });
    } else if (action === "select-room") {
      if (!HALO.state().search.checkIn) { HALO.patchView({ roomError: "Please add your dates above and select Update Search to book a room." }); render(); return; }
      HALO.milestone("room_selected");
      go("#/book/" + r.id + "/" + id);
      return;
    } else if (action === "book") {
      book(r);
      if (route().kind === "confirmation") return;
    } else if (action === "cancel") {
      HALO.patchView({ modal: id });
    } else if (action === "keep") {
      HALO.patchView({ modal: null });
    } else if (action === "cancel-confirm") {
      const rid = view.modal;
      update(function (st) {
        st.reservations[rid].status = "cancelled";
        st.ui.notification = "Your reservation at " + st.reservations[rid].hotelName + " has been cancelled.";
      });
      HALO.milestone("reservation_cancelled");
      HALO.patchView({ modal: null });
    }
    render();
  });
  document.addEventListener("submit", function (e) {
    e.preventDefault();
    HALO.patchView({ cal: null });
    search();
  });
  document.addEventListener("input", function (e) {
    const t = e.target;
    const field = t.getAttribute("data-field");
    if (field) {
      const f = form();
      f[field] = t.value;
      HALO.patchView({ form: f });
      return;
    }
    const g = t.getAttribute("data-guest");
    if (g) {
      const guest = HALO.view().guest || {};
      guest[g] = t.value;
      HALO.patchView({ guest: guest });
    }
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
