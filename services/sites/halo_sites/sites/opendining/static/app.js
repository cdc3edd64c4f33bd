/* OpenDining app: an OpenTable-like single page. Routes (location.hash):
 *   #/                       home: search bar (date, time, party, text), cuisines, top rated, neighbourhoods
 *   #/search/<query>         results: filters (cuisine, neighbourhood, rating) and restaurants with times
 *   #/restaurant/<slug>      a restaurant: photo, facts, reviews, the reservation widget, "Notify me"
 *   #/booking                "You're almost done": diner details, occasion, special request
 *   #/confirmation/<key>     the reservation made
 *   #/reservations           upcoming reservations (cancel)
 *   #/notifications          "notify me" requests
 * The selection (date, time, party), reservations and notifications live in HALO.state() (REAL's
 * `booking` and `notification`); open pickers, filters and the details form live in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const icon = HALO.icon;
  const SITE = HALO.site();
  const TODAY = SITE.today;
  const LAST_DAY = "2025-12-31";
  const OCCASIONS = [["birthday", "Birthday"], ["anniversary", "Anniversary"], ["date-night", "Date night"],
    ["business-meal", "Business Meal"], ["celebration", "Celebration"], ["none", "None"]];
  const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

  // ---- time, dates, party ------------------------------------------------------------------------
  function timeLabel(m) {
    const h = Math.floor(m / 60), min = m % 60;
    return (h % 12 || 12) + ":" + String(min).padStart(2, "0") + (h >= 12 ? " PM" : " AM");
  }
  function timeMinutes(label) {
    const m = /^(\d{1,2}):(\d{2}) (AM|PM)$/.exec(String(label || ""));
    if (!m) return 19 * 60;
    return (Number(m[1]) % 12 + (m[3] === "PM" ? 12 : 0)) * 60 + Number(m[2]);
  }
  function timeId(m) {
    return String(Math.floor(m / 60)).padStart(2, "0") + String(m % 60).padStart(2, "0");
  }
  function partyLabel(n) {
    return n === 1 ? "1 person" : n + " people";
  }
  function partySize(label) {
    return Number(/\d+/.exec(String(label || "2")) || 2);
  }
  function dayOf(iso) {
    return String(iso || TODAY).slice(0, 10);
  }
  function weekday(day) {
    const p = day.split("-").map(Number);
    return new Date(Date.UTC(p[0], p[1] - 1, p[2])).getUTCDay();
  }
  function dayLabel(day, long) {
    const p = day.split("-").map(Number);
    const base = DAYS[weekday(day)] + ", " + MONTHS[p[1] - 1].slice(0, 3) + " " + p[2];
    return base + (long || p[0] !== 2024 ? ", " + p[0] : "");
  }
  function addMonths(ym, n) {
    const p = ym.split("-").map(Number);
    const total = p[0] * 12 + p[1] - 1 + n;
    return Math.floor(total / 12) + "-" + String(total % 12 + 1).padStart(2, "0");
  }

  // ---- queries ------------------------------------------------------------------------------------
  function restaurants() {
    return SITE.restaurants();
  }
  function bySlug(slug) {
    return restaurants().filter(function (r) { return r.slug === slug; })[0] || null;
  }
  function byId(id) {
    return restaurants().filter(function (r) { return r.id === id; })[0] || null;
  }
  function fold(text) {
    return String(text || "").normalize("NFD").replace(/[\u0300-\u036f]/g, "").toLowerCase();
  }
  function matches(rest, query) {
    const hay = fold(rest.name + " " + rest.food_type + " " + rest.location + " " + rest.address);
    return fold(query).replace(/[^a-z0-9&' -]/g, " ").split(/\s+/).filter(Boolean).every(function (w) { return hay.indexOf(w) !== -1; });
  }
  function searchResults(query, filters) {
    return restaurants().filter(function (r) {
      return matches(r, query) && (!filters.food_type || r.food_type === filters.food_type) && (!filters.location || r.location === filters.location) &&
        (!filters.rating || r.rating >= filters.rating);
    });
  }
  function seeded(list, salt) {
    const seed = Number(HALO.meta().seed || 0);
    return seed ? HALO.rng(seed * 31 + salt).shuffle(list) : list;
  }
  function cuisines() {
    return seeded(["Italian", "American", "French", "Japanese", "Mexican", "Seafood", "Chinese", "Breakfast & Brunch", "Indian", "Mediterranean", "Steakhouse", "Thai"], 1);
  }
  function neighbourhoods() {
    const seen = [];
    restaurants().forEach(function (r) { if (seen.indexOf(r.location) === -1) seen.push(r.location); });
    return seed0Sorted(seen);
  }
  function seed0Sorted(list) {
    return seeded(list.slice().sort(), 2);
  }
  function layoutOffset() {
    const seed = Number(HALO.meta().seed || 0);
    return seed ? 4 + HALO.rng(seed * 31 + 3).int(10) : 0;
  }
  /** The five times around `minutes` (an hour either side), each with whether a table is free. */
  function slotsAround(rest, booking, count) {
    const t = timeMinutes(booking.time), half = Math.floor(count / 2);
    const out = [];
    for (let k = -half; k <= half; k++) {
      const m = t + k * 30;
      if (m >= 0 && m < 24 * 60) out.push({ minutes: m, free: SITE.available(rest, booking.date, m) });
    }
    return out;
  }

  // ---- rendering: pieces ----------------------------------------------------------------------------
  function stars(rating, size) {
    let out = '<span class="stars" aria-label="' + rating + ' stars">';
    for (let i = 1; i <= 5; i++) {
      const fill = rating >= i ? 1 : rating >= i - 0.5 ? 0.5 : 0;
      out += '<svg width="' + size + '" height="' + size + '" viewBox="0 0 24 24" aria-hidden="true"><defs><linearGradient id="g' + i + "-" + fill + '"><stop offset="' + fill + '" stop-color="#da3743"/><stop offset="' + fill + '" stop-color="#e1e1e1"/></linearGradient></defs>' +
        '<path d="M12 17.27L18.18 21l-1.64-7.03L22 9.24l-7.19-.61L12 2 9.19 8.63 2 9.24l5.46 4.73L5.82 21z" fill="url(#g' + i + "-" + fill + ')"/></svg>';
    }
    return out + "</span>";
  }
  function slotButtons(rest, booking, count) {
    const slots = slotsAround(rest, booking, count);
    if (!slots.some(function (s) { return s.free; })) {
      return '<div class="slots none">No online availability within an hour of ' + esc(booking.time) + ".</div>";
    }
    return '<div class="slots">' + slots.map(function (s) {
      if (!s.free) return '<span class="slot off" aria-hidden="true">&nbsp;</span>';
      return '<button class="slot" data-action="slot" data-slug="' + rest.slug + '" data-minutes="' + s.minutes + '" data-halo-id="slot-' + rest.slug + "-" + timeId(s.minutes) +
        '" aria-label="Reserve ' + esc(rest.name) + " at " + timeLabel(s.minutes) + '">' + timeLabel(s.minutes) + "</button>";
    }).join("") + "</div>";
  }
  function meta(rest) {
    return esc(rest.food_type) + ' <span class="dot">&bull;</span> ' + esc(rest.price) + ' <span class="dot">&bull;</span> ' + esc(rest.location);
  }

  function picker(st, view) {
    const b = st.booking;
    const toggle = function (which, ico, label) {
      return '<button type="button" class="pick' + (view.open === which ? " open" : "") + '" data-action="toggle" data-which="' + which + '" data-halo-id="' + which + '-toggle" aria-expanded="' + (view.open === which) + '">' +
        icon(ico, 18, "#2d333f") + "<span>" + esc(label) + '</span><span class="chev">&#9662;</span></button>';
    };
    const day = dayOf(b.date);
    return '<div class="picker">' + toggle("date", "calendar", day === TODAY ? "Today" : dayLabel(day)) + toggle("time", "clock", b.time) +
      toggle("party", "people", b.guests) + popover(st, view) + "</div>";
  }
  function popover(st, view) {
    const b = st.booking;
    if (view.open === "time") {
      let opts = "";
      for (let m = 0; m < 24 * 60; m += 30) {
        const on = timeLabel(m) === b.time;
        opts += '<button type="button" role="option" class="opt' + (on ? " on" : "") + '" data-action="set-time" data-minutes="' + m + '" data-halo-id="time-' + timeId(m) + '" aria-selected="' + on + '">' + timeLabel(m) + "</button>";
      }
      return '<div class="pop time" role="listbox" aria-label="Time" data-list="time">' + opts + "</div>";
    }
    if (view.open === "party") {
      let opts = "";
      for (let n = 1; n <= 20; n++) {
        const on = partyLabel(n) === b.guests;
        opts += '<button type="button" role="option" class="opt' + (on ? " on" : "") + '" data-action="set-party" data-n="' + n + '" data-halo-id="party-' + n + '" aria-selected="' + on + '">' + partyLabel(n) + "</button>";
      }
      return '<div class="pop party" role="listbox" aria-label="Party size" data-list="party">' + opts + "</div>";
    }
    if (view.open === "date") return calendar(dayOf(b.date), view.calMonth || TODAY.slice(0, 7));
    return "";
  }
  function calendar(selected, ym) {
    const p = ym.split("-").map(Number);
    const first = ym + "-01";
    const daysIn = new Date(Date.UTC(p[0], p[1], 0)).getUTCDate();
    let cells = "";
    for (let i = 0; i < weekday(first); i++) cells += '<span class="cal-empty"></span>';
    for (let d = 1; d <= daysIn; d++) {
      const day = ym + "-" + String(d).padStart(2, "0");
      const ok = day >= TODAY && day <= LAST_DAY;
      cells += ok ?
        '<button type="button" class="cal-day' + (day === selected ? " on" : "") + (day === TODAY ? " today" : "") + '" data-action="set-date" data-day="' + day + '" data-halo-id="day-' + day + '" aria-label="' + dayLabel(day, true) + '">' + d + "</button>" :
        '<span class="cal-day off">' + d + "</span>";
    }
    const prev = ym > TODAY.slice(0, 7), next = ym < LAST_DAY.slice(0, 7);
    return '<div class="pop cal" role="dialog" aria-label="Choose a date"><div class="cal-head">' +
      '<button type="button" data-action="cal" data-step="-1" data-halo-id="cal-prev" aria-label="Previous month"' + (prev ? "" : " disabled") + ">" + icon("chevronLeft", 20, "#2d333f") + "</button>" +
      '<b class="cal-title">' + MONTHS[p[1] - 1] + " " + p[0] + "</b>" +
      '<button type="button" data-action="cal" data-step="1" data-halo-id="cal-next" aria-label="Next month"' + (next ? "" : " disabled") + ">" + icon("chevronRight", 20, "#2d333f") + "</button></div>" +
      '<div class="cal-grid">' + DAYS.map(function (d) { return '<span class="cal-dow">' + d.slice(0, 2) + "</span>"; }).join("") + cells + "</div></div>";
  }
  function searchBar(st, view, big) {
    return '<form class="searchbar' + (big ? " big" : "") + '" role="search">' + picker(st, view) +
      '<div class="q">' + icon("search", 20, "#6f737b") + '<input type="text" data-halo-id="search" aria-label="Location, Restaurant, or Cuisine" placeholder="Location, Restaurant, or Cuisine" value="' + esc(view.query) + '" autocomplete="off"></div>' +
      '<button type="submit" class="go" data-halo-id="search-button">Let\'s go</button></form>';
  }

  function header(st) {
    const upcoming = reservations(st).filter(function (r) { return r.status === "confirmed"; }).length;
    const notes = Object.keys(st.notification.notifications).length;
    return '<header class="top"><a class="logo" href="#/" data-halo-id="logo" aria-label="OpenDining home"><svg width="30" height="30" viewBox="0 0 30 30" aria-hidden="true"><circle cx="15" cy="15" r="13" fill="none" stroke="#da3743" stroke-width="5"/><circle cx="15" cy="15" r="3.5" fill="#da3743"/></svg><span>OpenDining</span></a>' +
      '<span class="city">' + icon("home", 16, "#6f737b") + " San Francisco</span>" +
      '<nav><a href="#/reservations" data-halo-id="nav-reservations">My reservations' + (upcoming ? ' <span class="badge">' + upcoming + "</span>" : "") + "</a>" +
      '<a href="#/notifications" data-halo-id="nav-notifications">Notifications' + (notes ? ' <span class="badge">' + notes + "</span>" : "") + "</a>" +
      '<span class="avatar" title="Alex Morgan">AM</span></nav></header>';
  }

  // ---- pages ------------------------------------------------------------------------------------------
  function homePage(st, view) {
    const top = restaurants().filter(function (r) { return r.rating >= 4.5; }).sort(function (a, b) { return b.rating - a.rating; });
    return '<section class="hero"><div class="hero-art">' + OD_HERO() + '</div><div class="hero-in"><h1>Find your table for any occasion</h1>' + searchBar(st, view, true) + "</div></section>" +
      '<section class="band"><h2>Browse by cuisine</h2><div class="chips">' + cuisines().map(function (c) {
        return '<a class="chip" href="#/search/' + encodeURIComponent(c) + '" data-halo-id="cuisine-' + slug(c) + '">' + esc(c) + "</a>";
      }).join("") + "</div></section>" +
      '<section class="band"><h2>Top rated restaurants people are talking about</h2><p class="sub">Diners\' favourites this week, with tables for ' + esc(st.booking.guests) + " around " + esc(st.booking.time) + ".</p>" +
      '<div class="cards">' + top.map(function (r) { return card(r, st.booking); }).join("") + "</div></section>" +
      '<section class="band"><h2>Explore neighborhoods</h2><div class="chips">' + neighbourhoods().map(function (h) {
        return '<a class="chip hood" href="#/search/' + encodeURIComponent(h) + '" data-halo-id="hood-' + slug(h) + '">' + esc(h) + "</a>";
      }).join("") + "</div></section>" + footer();
  }
  function slug(text) {
    return fold(text).replace(/&/g, "and").replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "");
  }
  function card(rest, booking) {
    return '<article class="card"><a href="#/restaurant/' + rest.slug + '" class="card-photo" tabindex="-1">' + OD_PHOTO(rest, 276, 150) + "</a>" +
      '<div class="card-body"><a class="card-name" href="#/restaurant/' + rest.slug + '" data-halo-id="restaurant-' + rest.slug + '">' + esc(rest.name) + "</a>" +
      '<div class="rating">' + stars(rest.rating, 14) + ' <span class="rv">' + rest.rating.toFixed(1) + " (" + rest.reviews + ")</span></div>" +
      '<div class="meta">' + meta(rest) + "</div>" + slotButtons(rest, booking, 3) + "</div></article>";
  }
  function footer() {
    return '<footer class="foot"><b>OpenDining</b><span>About</span><span>Careers</span><span>Help</span><span>Restaurants: join OpenDining</span><span class="muted">Demo site. All restaurants are fictional.</span></footer>';
  }

  function resultsPage(st, view, query) {
    const f = view.filters || {};
    const list = searchResults(query, f);
    if (list.length) HALO.milestone("search");
    const all = searchResults(query, {});
    const facet = function (title, key, values, label) {
      return '<div class="facet"><h4>' + title + "</h4>" + values.map(function (v) {
        const on = f[key] === v[0];
        return '<button class="fopt' + (on ? " on" : "") + '" data-action="filter" data-key="' + key + '" data-value="' + esc(v[0]) + '" data-halo-id="filter-' + label + "-" + slug(String(v[0])) + '" aria-pressed="' + on + '">' +
          '<span class="radio"></span>' + esc(v[1]) + "</button>";
      }).join("") + "</div>";
    };
    const count = function (key) {
      const seen = {};
      all.forEach(function (r) { seen[r[key]] = (seen[r[key]] || 0) + 1; });
      return Object.keys(seen).sort().map(function (k) { return [k, k + " (" + seen[k] + ")"]; });
    };
    const rows = list.map(function (r) {
      return '<article class="row"><a class="row-photo" href="#/restaurant/' + r.slug + '" tabindex="-1">' + OD_PHOTO(r, 200, 130) + "</a>" +
        '<div class="row-body"><a class="row-name" href="#/restaurant/' + r.slug + '" data-halo-id="restaurant-' + r.slug + '">' + esc(r.name) + "</a>" +
        '<div class="rating">' + stars(r.rating, 15) + ' <span class="rv">' + r.rating.toFixed(1) + " &middot; " + r.reviews + " reviews</span></div>" +
        '<div class="meta">' + meta(r) + '</div><div class="booked">' + icon("notes", 14, "#6f737b") + " Booked " + (SITE.hash(r.slug) % 60 + 3) + " times today</div>" +
        slotButtons(r, st.booking, 5) + "</div></article>";
    }).join("");
    return '<div class="subbar">' + searchBar(st, view, false) + "</div>" +
      '<div class="results"><aside class="filters"><h3>Filters</h3>' +
      facet("Rating", "rating", [[4, "4 stars & up"], [3, "3 stars & up"]], "rating") +
      facet("Cuisine", "food_type", count("food_type"), "cuisine") + facet("Neighborhood", "location", count("location"), "hood") +
      ((f.rating || f.food_type || f.location) ? '<button class="linkbtn" data-action="clear-filters" data-halo-id="clear-filters">Clear all filters</button>' : "") +
      '</aside><section class="list"><h1>' + (query ? esc(list.length + (list.length === 1 ? " restaurant" : " restaurants") + ' matching "' + query + '"') : list.length + " restaurants available in San Francisco") + "</h1>" +
      '<p class="sub">' + esc(dayLabel(dayOf(st.booking.date), true)) + " &middot; " + esc(st.booking.time) + " &middot; " + esc(st.booking.guests) + "</p>" +
      (rows || '<div class="empty"><h2>No restaurants match</h2><p>Try another cuisine, neighborhood or restaurant name.</p></div>') + "</section></div>";
  }

  function restaurantPage(st, view, rest) {
    HALO.milestone("restaurant_viewed");
    const b = st.booking;
    const t = timeMinutes(b.time);
    const exact = SITE.available(rest, b.date, t);
    const open = t >= rest.hours[0] && t <= rest.hours[1];
    const already = Object.values(st.notification.notifications).some(function (n) {
      return n.restaurantId === rest.id && n.time === b.time && dayOf(n.date) === dayOf(b.date);
    });
    const notify = !exact && open ? '<div class="notify"><b>' + esc(b.time) + " is fully booked on " + esc(dayLabel(dayOf(b.date))) + ".</b>" +
      (already ? '<p role="status">We\'ll notify you if a table for ' + esc(b.guests) + " opens up at " + esc(b.time) + ".</p>" :
        '<p>Get a notification if a table opens up at this time.</p><button class="notify-btn" data-action="notify" data-slug="' + rest.slug + '" data-halo-id="notify-me">' + icon("mail", 16, "#da3743") + " Notify me</button>") + "</div>" :
      !open ? '<div class="notify muted">' + esc(rest.name) + " seats guests from " + timeLabel(rest.hours[0]) + " to " + timeLabel(rest.hours[1]) + ".</div>" : "";
    const revs = SITE.reviews(rest).map(function (r) {
      return '<div class="review"><div class="rev-head"><span class="rev-av">' + esc(r.name[0]) + "</span><b>" + esc(r.name) + '</b><span class="muted">Dined ' + r.dined + "</span></div>" + stars(r.stars, 13) + "<p>" + esc(r.text) + "</p></div>";
    }).join("");
    return '<div class="banner">' + OD_PHOTO(rest, 1280, 220) + "</div>" +
      '<div class="rest"><div class="rest-main"><nav class="tabs"><span class="on">Overview</span><span>Photos</span><span>Menu</span><span>Reviews</span></nav>' +
      '<h1 data-halo-id="restaurant-name">' + esc(rest.name) + "</h1>" +
      '<div class="facts"><span>' + stars(rest.rating, 16) + " " + rest.rating.toFixed(1) + "</span><span>" + icon("notes", 16, "#2d333f") + " " + rest.reviews + " reviews</span><span>" + esc(rest.price) + "</span><span>" + esc(rest.food_type) + "</span></div>" +
      '<p class="desc">' + esc(rest.description) + "</p>" +
      '<div class="info"><div><h4>Neighborhood</h4>' + esc(rest.location) + "</div><div><h4>Hours</h4>Daily " + timeLabel(rest.hours[0]) + " - " + timeLabel(rest.hours[1]) + '</div><div><h4>Address</h4>' + esc(rest.address) + "</div></div>" +
      '<h3>What ' + rest.reviews + " people are saying</h3>" + revs + "</div>" +
      '<aside class="widget" aria-label="Make a reservation"><h3>Make a reservation</h3>' + picker(st, view) +
      '<div class="wlabel">Select a time</div>' + slotButtons(rest, b, 5) + notify +
      '<p class="fine">' + icon("notes", 14, "#6f737b") + " Booked " + (SITE.hash(rest.slug) % 60 + 3) + " times today</p></aside></div>";
  }

  function bookingPage(st, view) {
    const b = st.booking;
    const rest = b.restaurantId ? byId(b.restaurantId) : null;
    if (!rest || b.bookingCompleted || !view.form) {
      return '<div class="empty"><h2>No table is being held</h2><p>Choose a restaurant and a time to start a reservation.</p><a class="btn" href="#/" data-halo-id="find-table">Find a table</a></div>';
    }
    const f = view.form;
    const occ = OCCASIONS.filter(function (o) { return o[1] === f.occasion; })[0];
    const field = function (key, id, label, type) {
      return '<label class="fld"><span>' + label + '</span><input type="' + (type || "text") + '" data-form="' + key + '" data-halo-id="' + id + '" aria-label="' + label + '" value="' + esc(f[key]) + '" autocomplete="off"></label>';
    };
    const occList = view.open === "occasion" ? '<div class="pop occ" role="listbox" aria-label="Occasion">' + OCCASIONS.map(function (o) {
      return '<button role="option" class="opt' + (occ && occ[0] === o[0] ? " on" : "") + '" data-action="occasion" data-value="' + o[1] + '" data-halo-id="occasion-' + o[0] + '">' + o[1] + "</button>";
    }).join("") + "</div>" : "";
    return '<div class="checkout"><section class="form"><h1>You\'re almost done!</h1>' +
      '<div class="held">' + icon("clock", 16, "#2d333f") + " We're holding this table for you.</div>" +
      "<h3>Diner details</h3>" + '<div class="two">' + field("firstName", "first-name", "First name") + field("lastName", "last-name", "Last name") + "</div>" +
      '<div class="two">' + field("phone", "phone", "Phone number", "tel") + field("email", "email", "Email") + "</div>" +
      '<div class="occwrap"><span class="lbl">Select an occasion (optional)</span><button class="pick wide' + (view.open === "occasion" ? " open" : "") + '" data-action="toggle" data-which="occasion" data-halo-id="occasion" aria-expanded="' + (view.open === "occasion") + '">' +
      "<span>" + esc(f.occasion || "Select an occasion") + '</span><span class="chev">&#9662;</span></button>' + occList + "</div>" +
      '<label class="fld"><span>Add a special request (optional)</span><textarea data-form="specialRequest" data-halo-id="special-request" aria-label="Special request">' + esc(f.specialRequest) + "</textarea></label>" +
      (f.error ? '<div class="err" role="alert">' + esc(f.error) + "</div>" : "") +
      '<button class="btn big" data-action="complete" data-halo-id="complete-reservation">Complete reservation</button>' +
      '<p class="fine">By selecting "Complete reservation" you agree to the OpenDining Terms of Use and Privacy Policy.</p></section>' +
      '<aside class="summary">' + OD_PHOTO(rest, 320, 150) + "<h3>" + esc(rest.name) + '</h3><div class="meta">' + meta(rest) + "</div>" +
      '<ul class="sum"><li>' + icon("calendar", 16, "#2d333f") + " " + esc(dayLabel(dayOf(b.date), true)) + "</li><li>" + icon("clock", 16, "#2d333f") + " " + esc(b.time) + "</li><li>" +
      icon("people", 16, "#2d333f") + " " + esc(b.guests) + "</li></ul></aside></div>";
  }

  function reservations(st) {
    const d = st.booking.bookingDetails || {};
    return Object.keys(d).sort(function (a, b) { return Number(a) - Number(b); }).map(function (k) { return Object.assign({ key: k }, d[k]); });
  }
  function confirmationPage(st, key) {
    const r = (st.booking.bookingDetails || {})[key];
    if (!r) return '<div class="empty"><h2>Reservation not found</h2></div>';
    return '<div class="confirm"><div class="ok">' + icon("starFilled", 28, "#fff") + '</div><h1>Reservation confirmed</h1><p class="sub">You\'re all set, ' + esc(r.user.firstName) + ". A confirmation was sent to " + esc(r.user.email) + ".</p>" +
      '<div class="conf-card"><h2>' + esc(r.restaurant.name) + '</h2><ul class="sum"><li>' + icon("calendar", 16, "#2d333f") + " " + esc(dayLabel(dayOf(r.date), true)) + "</li><li>" + icon("clock", 16, "#2d333f") + " " + esc(r.time) + "</li><li>" +
      icon("people", 16, "#2d333f") + " " + esc(r.guests) + "</li>" + (r.optionals.occasion ? "<li>" + icon("star", 16, "#2d333f") + " " + esc(r.optionals.occasion) + "</li>" : "") + "</ul>" +
      '<div class="conf-no">Confirmation number <b data-halo-id="confirmation-number">' + esc(r.confirmationNumber) + "</b></div></div>" +
      '<a class="btn" href="#/reservations" data-halo-id="view-reservations">View my reservations</a> <a class="btn ghost" href="#/" data-halo-id="back-home">Back to home</a></div>';
  }
  function reservationsPage(st, view) {
    const list = reservations(st);
    const dialog = view.cancel !== null && view.cancel !== undefined && st.booking.bookingDetails && st.booking.bookingDetails[view.cancel] ?
      '<div class="scrim"><div class="dialog" role="dialog" aria-label="Cancel reservation"><h3>Cancel your reservation?</h3><p>' + esc(st.booking.bookingDetails[view.cancel].restaurant.name) + ", " +
      esc(dayLabel(dayOf(st.booking.bookingDetails[view.cancel].date), true)) + " at " + esc(st.booking.bookingDetails[view.cancel].time) + "</p>" +
      '<div class="dialog-btns"><button class="btn ghost" data-action="cancel-keep" data-halo-id="cancel-keep">Keep reservation</button><button class="btn" data-action="cancel-confirm" data-halo-id="cancel-confirm">Cancel reservation</button></div></div></div>' : "";
    const row = function (r) {
      const rest = byId(r.restaurant.id);
      return '<article class="res' + (r.status === "cancelled" ? " cancelled" : "") + '">' + (rest ? OD_PHOTO(rest, 140, 96) : "") + '<div class="res-body"><h3>' + esc(r.restaurant.name) + "</h3>" +
        '<div class="meta">' + esc(dayLabel(dayOf(r.date), true)) + " &middot; " + esc(r.time) + " &middot; " + esc(r.guests) + (r.optionals.occasion ? " &middot; " + esc(r.optionals.occasion) : "") + "</div>" +
        '<div class="muted">Confirmation #' + esc(r.confirmationNumber) + "</div></div>" +
        (r.status === "cancelled" ? '<span class="tag">Cancelled</span>' : '<button class="btn ghost" data-action="cancel" data-key="' + r.key + '" data-halo-id="cancel-' + r.key + '">Cancel</button>') + "</article>";
    };
    const upcoming = list.filter(function (r) { return r.status === "confirmed"; });
    const cancelled = list.filter(function (r) { return r.status !== "confirmed"; });
    return '<div class="page-narrow"><h1>My reservations</h1><h2>Upcoming</h2>' + (upcoming.length ? upcoming.map(row).join("") : '<p class="muted">No upcoming reservations. <a href="#/">Find a table</a></p>') +
      (cancelled.length ? "<h2>Cancelled</h2>" + cancelled.map(row).join("") : "") + "</div>" + dialog;
  }
  function notificationsPage(st) {
    const list = Object.values(st.notification.notifications);
    return '<div class="page-narrow"><h1>Notifications</h1><p class="muted">We\'ll let you know when a table opens up at these times.</p>' +
      (list.length ? list.map(function (n) {
        return '<article class="res"><div class="res-body"><h3>' + esc(n.restaurantName) + '</h3><div class="meta">' + esc(dayLabel(dayOf(n.date), true)) + " &middot; " + esc(n.time) + " &middot; " + esc(n.guests) + "</div></div><span class=\"tag\">Watching</span></article>";
      }).join("") : '<p class="muted">You have no notifications set.</p>') + "</div>";
  }

  // ---- routing and render ------------------------------------------------------------------------------
  function route() {
    const parts = (location.hash || "#/").replace(/^#\/?/, "").split("/");
    if (parts[0] === "search") return { kind: "results", query: decodeURIComponent(parts.slice(1).join("/") || "") };
    if (parts[0] === "restaurant" && parts[1]) return { kind: "restaurant", slug: parts[1] };
    if (parts[0] === "booking") return { kind: "booking" };
    if (parts[0] === "confirmation" && parts[1]) return { kind: "confirmation", key: parts[1] };
    if (parts[0] === "reservations") return { kind: "reservations" };
    if (parts[0] === "notifications") return { kind: "notifications" };
    return { kind: "home" };
  }
  function go(hash) {
    if (location.hash !== hash) location.hash = hash;
    render();
  }

  function render() {
    let view = HALO.view();
    const r = route();
    if (view.route !== location.hash) {
      // A new page: close pickers and dialogs, start at the top.
      const patch = { route: location.hash, open: null, cancel: null, scroll: {} };
      if (r.kind === "results") { patch.query = r.query; patch.filters = {}; }
      if (r.kind === "home") patch.query = "";
      view = HALO.patchView(patch);
    }
    const st = HALO.state();
    let main, title = "OpenDining - Restaurant Reservations in San Francisco";
    if (r.kind === "results") {
      main = resultsPage(st, view, r.query);
      title = (r.query ? r.query + " - " : "") + "Restaurants in San Francisco | OpenDining";
    } else if (r.kind === "restaurant") {
      const rest = bySlug(r.slug);
      main = rest ? restaurantPage(st, view, rest) : '<div class="empty"><h2>Restaurant not found</h2></div>';
      if (rest) title = rest.name + " - San Francisco | OpenDining";
    } else if (r.kind === "booking") {
      main = bookingPage(st, view);
      title = "Complete your reservation | OpenDining";
    } else if (r.kind === "confirmation") {
      main = confirmationPage(st, r.key);
      title = "Reservation confirmed | OpenDining";
    } else if (r.kind === "reservations") {
      main = reservationsPage(st, view);
      title = "My reservations | OpenDining";
    } else if (r.kind === "notifications") {
      main = notificationsPage(st);
      title = "Notifications | OpenDining";
    } else {
      main = homePage(st, view);
    }
    document.title = title;
    document.getElementById("app").innerHTML = header(st) + '<main class="page-' + r.kind + '" data-halo-scroll="main"><div class="inner" style="padding-top:' + layoutOffset() + 'px">' + main + "</div></main>";
    HALO.restoreUi();
    // An opened list shows the chosen value, as a native select would.
    const list = document.querySelector("[data-list] .opt.on");
    if (list) list.parentNode.scrollTop = Math.max(0, list.offsetTop - 96);
  }

  // ---- mutations ------------------------------------------------------------------------------------
  function update(fn) {
    const st = HALO.state();
    fn(st);
    HALO.commit(st);
    return st;
  }
  function select(patch) {
    // A new date, time or party size starts a new selection: nothing is booked for it yet.
    update(function (st) { Object.assign(st.booking, patch, { bookingCompleted: false }); });
    HALO.patchView({ open: null });
  }
  function chooseSlot(slugName, minutes) {
    const rest = bySlug(slugName);
    const st = HALO.state();
    if (!rest || !SITE.available(rest, st.booking.date, minutes)) return;
    select({ time: timeLabel(minutes), restaurantId: rest.id });
    HALO.milestone("slot_selected");
    const u = SITE.user;
    HALO.patchView({ form: { firstName: u.firstName, lastName: u.lastName, phone: u.phone, email: u.email, occasion: "", specialRequest: "", error: "" }, focus: null });
    go("#/booking");
  }
  function complete() {
    const view = HALO.view();
    const f = view.form;
    const st = HALO.state();
    const rest = byId(st.booking.restaurantId);
    if (!f || !rest || st.booking.bookingCompleted) return;
    let error = "";
    if (!String(f.firstName).trim() || !String(f.lastName).trim()) error = "Please enter your first and last name.";
    else if (String(f.phone).replace(/\D/g, "").length < 10) error = "Please enter a valid phone number.";
    else if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(String(f.email).trim())) error = "Please enter a valid email address.";
    if (error) {
      f.error = error;
      HALO.patchView({ form: f });
      return;
    }
    let key = null;
    update(function (s) {
      const b = s.booking;
      b.bookingDetails = b.bookingDetails || {};
      key = String(Object.keys(b.bookingDetails).length);
      const conf = "OD-" + (10000 + SITE.hash(rest.id + b.date + b.time + b.guests + key) % 90000);
      b.bookingDetails[key] = {
        id: conf, confirmationNumber: conf, restaurant: SITE.restaurantRecord(rest), date: b.date, time: b.time, guests: b.guests,
        optionals: { occasion: f.occasion === "None" ? "" : f.occasion, specialRequest: String(f.specialRequest || "").trim() },
        user: { firstName: f.firstName.trim(), lastName: f.lastName.trim(), phone: f.phone.trim(), email: f.email.trim() }, status: "confirmed",
      };
      b.index = Number(b.index || 0) + 1;
      b.bookingCompleted = true;
      b.loading = false;
    });
    HALO.milestone("reservation_completed");
    HALO.patchView({ form: null, open: null, focus: null });
    go("#/confirmation/" + key);
  }
  function notify(slugName) {
    const rest = bySlug(slugName);
    if (!rest) return;
    update(function (s) {
      const list = s.notification.notifications;
      const id = String(Object.keys(list).length + 1);
      list[id] = { id: id, restaurantId: rest.id, restaurantName: rest.name, date: s.booking.date, time: s.booking.time, guests: s.booking.guests };
    });
    HALO.milestone("notify_set");
  }
  function cancelReservation(key) {
    update(function (s) {
      const r = s.booking.bookingDetails && s.booking.bookingDetails[key];
      if (r) r.status = "cancelled";
    });
    HALO.milestone("reservation_cancelled");
    HALO.patchView({ cancel: null });
  }

  // ---- events -----------------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    const view = HALO.view();
    if (!el) {
      // A click outside an open picker closes it, as on the real site.
      if (view.open && !e.target.closest(".pop")) {
        HALO.patchView({ open: null });
        render();
      }
      return;
    }
    e.preventDefault();
    const action = el.getAttribute("data-action");
    if (action === "toggle") {
      const which = el.getAttribute("data-which");
      const st = HALO.state();
      HALO.patchView({ open: view.open === which ? null : which, calMonth: dayOf(st.booking.date).slice(0, 7) });
    } else if (action === "set-time") {
      select({ time: timeLabel(Number(el.getAttribute("data-minutes"))) });
      HALO.milestone("time_selected");
    } else if (action === "set-party") {
      select({ guests: partyLabel(Number(el.getAttribute("data-n"))) });
      HALO.milestone("party_selected");
    } else if (action === "set-date") {
      select({ date: el.getAttribute("data-day") + "T00:00:00.000Z" });
      HALO.milestone("date_selected");
    } else if (action === "cal") {
      HALO.patchView({ calMonth: addMonths(view.calMonth || TODAY.slice(0, 7), Number(el.getAttribute("data-step"))) });
    } else if (action === "filter") {
      const f = Object.assign({}, view.filters || {});
      const key = el.getAttribute("data-key");
      const value = key === "rating" ? Number(el.getAttribute("data-value")) : el.getAttribute("data-value");
      f[key] = f[key] === value ? (key === "rating" ? 0 : "") : value;
      HALO.patchView({ filters: f, scroll: {} });
      HALO.milestone("filters_applied");
    } else if (action === "clear-filters") {
      HALO.patchView({ filters: {}, scroll: {} });
    } else if (action === "slot") {
      chooseSlot(el.getAttribute("data-slug"), Number(el.getAttribute("data-minutes")));
      return;
    } else if (action === "occasion") {
      const f = view.form;
      f.occasion = el.getAttribute("data-value");
      HALO.patchView({ form: f, open: null });
      HALO.milestone("occasion_selected");
    } else if (action === "complete") {
      complete();
      return;
    } else if (action === "notify") {
      notify(el.getAttribute("data-slug"));
    } else if (action === "cancel") {
      HALO.patchView({ cancel: el.getAttribute("data-key") });
    } else if (action === "cancel-keep") {
      HALO.patchView({ cancel: null });
    } else if (action === "cancel-confirm") {
      cancelReservation(view.cancel);
    }
    render();
  });

  document.addEventListener("submit", function (e) {
    e.preventDefault();
    const q = String(HALO.view().query || "").trim();
    HALO.patchView({ focus: null, open: null });
    go("#/search/" + encodeURIComponent(q));
  });

  document.addEventListener("input", function (e) {
    const t = e.target;
    if (t.getAttribute("data-halo-id") === "search") {
      HALO.patchView({ query: t.value });
      return;
    }
    const key = t.getAttribute("data-form");
    if (key) {
      const f = HALO.view().form;
      if (!f) return;
      f[key] = t.value;
      HALO.patchView({ form: f });
    }
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
