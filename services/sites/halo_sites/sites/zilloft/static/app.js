/* Zilloft app: a Zillow-like single page. Routes (location.hash):
 *   #/                      home (search by city)
 *   #/homes/<city-slug>     results: filter bar, map with price pins, list of cards
 *   #/homedetails/<id>      a listing: photos, facts, save, contact the agent
 *   #/saved                 saved homes
 * The search (location, filters, sort), saved homes and messages to agents live in HALO.state();
 * open filter panels with their pending values, the search box and the contact form live in
 * HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const icon = HALO.icon;
  const SITE = HALO.site();
  const SORTS = [["homes-for-you", "Homes for You"], ["price-low", "Price (Low to High)"], ["price-high", "Price (High to Low)"],
    ["newest", "Newest"], ["beds", "Bedrooms"], ["sqft", "Square Feet"]];
  const BEDS = [0, 1, 2, 3, 4, 5];
  const BATHS = [0, 1, 1.5, 2, 3, 4];
  const TYPE_LABEL = { house: "House", townhome: "Townhouse", condo: "Condo", apartment: "Apartment" };

  // ---- routing -------------------------------------------------------------------------------
  function route() {
    const parts = (location.hash || "#/").replace(/^#\/?/, "").split("/");
    if (parts[0] === "homes" && parts[1]) return { kind: "results", slug: parts[1] };
    if (parts[0] === "homedetails" && parts[1]) return { kind: "listing", id: parts[1] };
    if (parts[0] === "saved") return { kind: "saved" };
    return { kind: "home" };
  }
  function go(hash) {
    // Render now rather than on the (asynchronous) hashchange, which then finds nothing new.
    if (location.hash !== hash) location.hash = hash;
    render();
  }
  function cityBySlug(slug) {
    return SITE.cities.filter(function (c) { return c.slug === slug; })[0] || null;
  }
  function seed() {
    return Number(HALO.meta().seed || 0);
  }
  /* Perturbed starts: a non-zero episode seed moves the page below the header by a few pixels
   * (inside the same height, so nothing leaves the screen); seed 0 keeps today's layout. */
  function offsetLayout() {
    const main = seed() ? document.querySelector("main") : null;
    if (!main) return;
    const r = HALO.rng(seed() ^ 0x1a7);
    main.style.boxSizing = "border-box";
    main.style.paddingTop = (2 + r.int(9)) + "px";
    main.style.paddingLeft = (2 + r.int(9)) + "px";
  }

  function findCity(query) {
    // "austin", "Austin, TX", "austin tx", "78701": the first city the words name.
    const q = String(query || "").toLowerCase().replace(/[,]/g, " ").replace(/\s+/g, " ").trim();
    if (!q) return null;
    return SITE.cities.filter(function (c) {
      const label = (c.city + " " + c.state).toLowerCase();
      return label.indexOf(q) === 0 || c.city.toLowerCase() === q || String(c.zip).padStart(5, "0") === q ||
        q.split(" ").every(function (w) { return label.split(" ").indexOf(w) !== -1; });
    })[0] || null;
  }

  // ---- formatting ------------------------------------------------------------------------------
  function money(x) {
    return "$" + Math.round(x).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function num(x) {
    return x.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function payment(price) {
    // 20% down, 30 years at 6.5%, plus tax and insurance of 1.4% a year: Zillow's "Est. payment".
    const loan = price * 0.8, i = 0.065 / 12, n = 360;
    return Math.round(loan * i / (1 - Math.pow(1 + i, -n)) + price * 0.014 / 12);
  }

  const HEART = "M12 21.35l-1.45-1.32C5.4 15.36 2 12.28 2 8.5 2 5.42 4.42 3 7.5 3c1.74 0 3.41.81 4.5 2.09C13.09 3.81 14.76 3 16.5 3 19.58 3 22 5.42 22 8.5c0 3.78-3.4 6.86-8.55 11.54L12 21.35z";
  function heart(saved, size, onPhoto) {
    // Zillow's heart: white outline over a dimmed fill on photos, solid blue once saved.
    const fill = saved ? "#006aff" : onPhoto ? "rgba(0,0,0,0.35)" : "none";
    const stroke = saved ? (onPhoto ? "#fff" : "#006aff") : onPhoto ? "#fff" : "#2a2a33";
    return '<svg width="' + size + '" height="' + size + '" viewBox="0 0 24 24" aria-hidden="true" focusable="false"><path d="' + HEART + '" fill="' + fill + '" stroke="' + stroke + '" stroke-width="1.8"/></svg>';
  }

  // ---- queries ---------------------------------------------------------------------------------
  function results(st, city) {
    const s = st.search;
    const list = SITE.homes().filter(function (h) {
      return h.city === city.city && h.state === city.state &&
        (s.minPrice === null || h.price >= s.minPrice) && (s.maxPrice === null || h.price <= s.maxPrice) &&
        h.beds >= (s.beds || 0) && h.baths >= (s.baths || 0) && (!s.homeTypes.length || s.homeTypes.indexOf(h.type) !== -1);
    });
    const by = {
      "price-low": function (a, b) { return a.price - b.price; },
      "price-high": function (a, b) { return b.price - a.price; },
      newest: function (a, b) { return a.daysOnMarket - b.daysOnMarket || (a.id < b.id ? -1 : 1); },
      beds: function (a, b) { return b.beds - a.beds || a.price - b.price; },
      sqft: function (a, b) { return b.sqft - a.sqft; },
    }[s.sort];
    if (!by && seed()) {
      // Perturbed starts: "Homes for You" (the default, which no task's answer depends on) is a
      // seeded order under a non-zero episode seed; seed 0 keeps the listing order.
      const rank = {};
      HALO.rng(seed()).shuffle(list.map(function (h) { return h.id; }).sort()).forEach(function (id, i) { rank[id] = i; });
      return list.sort(function (a, b) { return rank[a.id] - rank[b.id]; });
    }
    return by ? list.sort(by) : list;
  }
  function parsePrice(text) {
    const t = String(text || "").toLowerCase().replace(/[$,\s]/g, "");
    if (!t) return null;
    const m = /^(\d+(?:\.\d+)?)(k|m)?$/.exec(t);
    if (!m) return NaN;
    return Math.round(Number(m[1]) * (m[2] === "k" ? 1000 : m[2] === "m" ? 1000000 : 1));
  }

  // ---- rendering: frame ------------------------------------------------------------------------
  function logo() {
    return '<a class="logo" href="#/" data-halo-id="logo" aria-label="Zilloft home"><svg width="34" height="30" viewBox="0 0 34 30" aria-hidden="true">' +
      '<path d="M17 2 L32 13 L29 13 L29 28 L5 28 L5 13 L2 13 Z" fill="#006aff"/><path d="M11 19 L23 12 L23 16 L14 22 L23 22 L23 25 L10 25 L10 22 Z" fill="#fff"/></svg><span>Zilloft</span></a>';
  }
  function header() {
    return '<header class="top"><nav class="left"><a href="#/" data-halo-id="nav-buy">Buy</a><span>Rent</span><span>Sell</span><span>Home Loans</span><span>Find an Agent</span></nav>' +
      logo() + '<nav class="right"><span>Manage Rentals</span><span>Advertise</span><a href="#/saved" data-halo-id="nav-saved">Saved Homes</a><span>Help</span><span class="signin">Sign In</span></nav></header>';
  }

  function homePage(view) {
    return '<div class="hero"><div class="hero-art">' + heroArt() + '</div><div class="hero-box"><h1>Agents. Tours.<br>Loans. Homes.</h1>' +
      '<form class="hero-search" role="search" data-search="hero"><input type="text" data-halo-id="search" aria-label="Enter an address, neighborhood, city, or ZIP code" placeholder="Enter an address, neighborhood, city, or ZIP code" value="' + esc(view.query || "") + '" autocomplete="off">' +
      '<button type="submit" data-halo-id="search-button" aria-label="Submit search">' + icon("search", 26, "#006aff") + "</button></form>" +
      (view.error ? '<div class="search-error" role="alert">' + esc(view.error) + "</div>" : "") + "</div></div>" +
      '<section class="tiles"><div class="tile"><div class="tile-ico">' + icon("home", 72, "#006aff") + '</div><h2>Buy a home</h2><p>Find your place with an immersive photo experience and the most listings, including things you won\'t find anywhere else.</p><a href="#/homes/austin-tx" class="tile-btn" data-halo-id="browse-homes">Browse homes</a></div>' +
      '<div class="tile"><div class="tile-ico">' + icon("people", 72, "#006aff") + '</div><h2>Find an agent</h2><p>Local agents know the market. Contact one from any listing in ' + SITE.cities.length + ' cities.</p><span class="tile-btn">Find agents</span></div>' +
      '<div class="tile"><div class="tile-ico">' + icon("heart", 72, "#006aff") + '</div><h2>Save homes</h2><p>Save the homes you love and come back to them any time from Saved Homes.</p><a href="#/saved" class="tile-btn">See saved homes</a></div></section>';
  }
  function heroArt() {
    return '<svg width="1280" height="420" viewBox="0 0 1280 420" preserveAspectRatio="xMidYMid slice" aria-hidden="true"><defs><linearGradient id="sky" x1="0" y1="0" x2="0" y2="1">' +
      '<stop offset="0" stop-color="#6aa9d8"/><stop offset="1" stop-color="#cfe6f5"/></linearGradient></defs><rect width="1280" height="420" fill="url(#sky)"/>' +
      '<rect y="330" width="1280" height="90" fill="#6d9a58"/><polygon points="140,200 330,90 520,200" fill="#4a3f3a"/><rect x="165" y="198" width="330" height="140" fill="#f1e8da"/>' +
      '<rect x="200" y="230" width="70" height="50" fill="#9fc3dd" stroke="#fff" stroke-width="5"/><rect x="390" y="230" width="70" height="50" fill="#9fc3dd" stroke="#fff" stroke-width="5"/><rect x="300" y="260" width="60" height="78" fill="#5b4636"/>' +
      '<polygon points="820,220 980,120 1140,220" fill="#3d4a5c"/><rect x="845" y="218" width="270" height="120" fill="#dfe7ef"/><rect x="880" y="245" width="60" height="45" fill="#9fc3dd" stroke="#fff" stroke-width="5"/>' +
      '<rect x="1020" y="245" width="60" height="45" fill="#9fc3dd" stroke="#fff" stroke-width="5"/><rect x="955" y="270" width="50" height="68" fill="#7a3e2e"/>' +
      '<ellipse cx="70" cy="320" rx="70" ry="60" fill="#4f7d3f"/><ellipse cx="640" cy="330" rx="90" ry="50" fill="#5a8a48"/><ellipse cx="1230" cy="315" rx="80" ry="70" fill="#4f7d3f"/></svg>';
  }

  // ---- results ----------------------------------------------------------------------------------
  function filterBar(st, view, city) {
    const s = st.search;
    const priceLabel = s.minPrice === null && s.maxPrice === null ? "Price" :
      (s.minPrice === null ? "Up to " + ZIL_SHORT_PRICE(s.maxPrice) : s.maxPrice === null ? ZIL_SHORT_PRICE(s.minPrice) + "+" : ZIL_SHORT_PRICE(s.minPrice) + " - " + ZIL_SHORT_PRICE(s.maxPrice));
    const bedLabel = !s.beds && !s.baths ? "Beds & Baths" : (s.beds ? s.beds + "+ bd" : "Any bd") + ", " + (s.baths ? s.baths + "+ ba" : "Any ba");
    const typeLabel = s.homeTypes.length ? "Home Type (" + s.homeTypes.length + ")" : "Home Type";
    const btn = function (panel, label, active) {
      return '<button class="fbtn' + (view.panel === panel ? " open" : "") + (active ? " active" : "") + '" data-action="panel" data-panel="' + panel + '" data-halo-id="filter-' + panel + '" aria-expanded="' + (view.panel === panel) + '">' +
        esc(label) + ' <span class="chev">&#9662;</span></button>';
    };
    return '<div class="fbar"><form class="fsearch" role="search" data-search="bar"><input type="text" data-halo-id="search" aria-label="Search by city or ZIP" value="' + esc(view.query || city.label) + '" autocomplete="off">' +
      '<button type="submit" data-halo-id="search-button" aria-label="Submit search">' + icon("search", 22, "#006aff") + "</button></form>" +
      '<span class="fbtn static">For Sale <span class="chev">&#9662;</span></span>' +
      btn("price", priceLabel, s.minPrice !== null || s.maxPrice !== null) + btn("beds", bedLabel, !!(s.beds || s.baths)) + btn("type", typeLabel, s.homeTypes.length > 0) +
      '<span class="fbtn static">More <span class="chev">&#9662;</span></span><span class="save-search">Save search</span>' + panel(view) +
      (view.error ? '<div class="search-error bar" role="alert">' + esc(view.error) + "</div>" : "") + "</div>";
  }
  function panel(view) {
    const p = view.pending;
    if (!view.panel || !p) return "";
    if (view.panel === "price") {
      return '<div class="fpanel price" role="dialog" aria-label="Price"><h4>Price Range</h4><div class="row">' +
        '<label>Minimum<input type="text" data-pending="minPrice" data-halo-id="price-min" aria-label="Minimum price" placeholder="No Min" value="' + esc(p.minPriceText) + '" autocomplete="off"></label>' +
        '<span class="dash">-</span><label>Maximum<input type="text" data-pending="maxPrice" data-halo-id="price-max" aria-label="Maximum price" placeholder="No Max" value="' + esc(p.maxPriceText) + '" autocomplete="off"></label></div>' +
        (p.error ? '<div class="perr" role="alert">' + esc(p.error) + "</div>" : "") +
        '<button class="apply" data-action="apply" data-halo-id="price-apply">Apply</button></div>';
    }
    if (view.panel === "beds") {
      const group = function (name, values, current) {
        return '<div class="seg" role="group" aria-label="' + (name === "beds" ? "Bedrooms" : "Bathrooms") + '">' + values.map(function (v) {
          return '<button class="' + (current === v ? "on" : "") + '" data-action="pick" data-name="' + name + '" data-value="' + v + '" data-halo-id="' + name + "-" + (v ? v : "any") + '" aria-pressed="' + (current === v) + '">' + (v ? v + "+" : "Any") + "</button>";
        }).join("") + "</div>";
      };
      return '<div class="fpanel beds" role="dialog" aria-label="Beds and baths"><h4>Bedrooms</h4>' + group("beds", BEDS, p.beds) + "<h4>Bathrooms</h4>" + group("baths", BATHS, p.baths) +
        '<button class="apply" data-action="apply" data-halo-id="beds-apply">Apply</button></div>';
    }
    const all = !p.homeTypes.length && !p.noneTicked;
    return '<div class="fpanel type" role="dialog" aria-label="Home type"><h4>Home Type</h4><button class="linkbtn" data-action="types-none" data-halo-id="type-deselect-all">Deselect All</button>' +
      SITE.types.map(function (t) {
        const on = all || p.homeTypes.indexOf(t[0]) !== -1;
        return '<label class="chk"><input type="checkbox" data-action="type-toggle" data-value="' + t[0] + '" data-halo-id="type-' + t[0] + '"' + (on ? " checked" : "") + "> " + esc(t[1]) + "</label>";
      }).join("") + '<button class="apply" data-action="apply" data-halo-id="type-apply">Apply</button></div>';
  }
  function card(home, saved) {
    const s = !!saved[home.id];
    return '<article class="card"><div class="card-photo" data-action="open" data-id="' + home.id + '">' + ZIL_PHOTO(home, 300, 170) + "</div>" +
      '<button class="heart' + (s ? " on" : "") + '" data-action="save" data-id="' + home.id + '" data-halo-id="save-' + home.id + '" aria-label="' + (s ? "Saved" : "Save") + " " + esc(home.address) + '" aria-pressed="' + s + '">' +
      heart(s, 28, true) + "</button>" +
      '<a class="card-body" href="#/homedetails/' + home.id + '" data-halo-id="home-' + home.id + '"><div class="card-price">' + money(home.price) + "</div>" +
      '<div class="card-facts"><b>' + home.beds + "</b> bds | <b>" + home.baths + "</b> ba | <b>" + num(home.sqft) + "</b> sqft - " + TYPE_LABEL[home.type] + " for sale</div>" +
      '<div class="card-addr">' + esc(home.address) + " " + esc(home.zip) + '</div><div class="card-broker">' + esc(home.agent.brokerage.toUpperCase()) + "</div></a></article>";
  }
  function resultsPage(st, view, city) {
    const list = results(st, city);
    const sort = SORTS.filter(function (x) { return x[0] === st.search.sort; })[0] || SORTS[0];
    const menu = view.sortOpen ? '<div class="sort-menu" role="listbox">' + SORTS.map(function (x) {
      return '<button role="option" data-action="sort" data-value="' + x[0] + '" data-halo-id="sort-' + x[0] + '"' + (x[0] === sort[0] ? ' aria-selected="true" class="on"' : "") + ">" + esc(x[1]) + "</button>";
    }).join("") + "</div>" : "";
    const cards = list.map(function (h) { return card(h, st.homes.saved); }).join("");
    return filterBar(st, view, city) + '<div class="split"><div class="map">' + ZIL_MAP(city, list, st.homes.saved, 690, 600) +
      '<div class="map-ctl"><span>+</span><span>&minus;</span></div></div>' +
      '<section class="list" data-halo-scroll="list"><h1>' + esc(city.label) + ' Real Estate &amp; Homes For Sale</h1><div class="list-meta"><span>' + list.length + (list.length === 1 ? " result" : " results") + "</span>" +
      '<div class="sort"><button class="sort-btn" data-action="sort-toggle" data-halo-id="sort" aria-haspopup="listbox" aria-expanded="' + !!view.sortOpen + '">Sort: ' + esc(sort[1]) + ' <span class="chev">&#9662;</span></button>' + menu + "</div></div>" +
      (list.length ? '<div class="cards">' + cards + "</div>" : '<div class="empty"><h2>No matching results</h2><p>Try changing your filters or zooming out on the map.</p></div>') + "</section></div>";
  }

  // ---- listing -------------------------------------------------------------------------------------
  function listingPage(st, view, home) {
    HALO.milestone("listing_viewed");
    const saved = !!st.homes.saved[home.id];
    const c = view.contact && view.contact.id === home.id ? view.contact : defaultContact(home);
    const sent = sentTo(st).filter(function (q) { return q.homeId === home.id; }).length;
    const facts = [
      ["Type", TYPE_LABEL[home.type]], ["Year built", "Built in " + home.yearBuilt], ["Lot", home.lotSqft ? num(home.lotSqft) + " sqft lot" : "No data"],
      ["Price/sqft", money(Math.round(home.price / home.sqft)) + "/sqft"], ["HOA", money(home.hoa) + " monthly HOA fee"], ["Days on Zilloft", home.daysOnMarket + " days"],
    ];
    const errs = c.error ? '<div class="cerr" role="alert">' + esc(c.error) + "</div>" : "";
    return '<div class="ld-bar"><a href="#/homes/' + cityOf(home).slug + '" data-halo-id="back-to-search">&lsaquo; Back to search</a><div class="ld-actions">' +
      '<button class="ld-save' + (saved ? " on" : "") + '" data-action="save" data-id="' + home.id + '" data-halo-id="save-home" aria-pressed="' + saved + '">' + heart(saved, 20, false) + (saved ? "Saved" : "Save") + "</button>" +
      "<span>Share</span><span>Hide</span><span>More</span></div></div>" +
      '<div class="ld" data-halo-scroll="listing"><div class="photos"><div class="big">' + ZIL_PHOTO(home, 640, 360) + '</div><div class="small">' +
      [0, 1, 2, 3].map(function (i) { return ZIL_ROOM(home, i, 316, 176); }).join("") + "</div></div>" +
      '<div class="ld-body"><div class="ld-main"><div class="ld-price">' + money(home.price) + '</div><div class="ld-facts"><span><b>' + home.beds + "</b> beds</span><span><b>" + home.baths + "</b> baths</span><span><b>" + num(home.sqft) + "</b> sqft</span></div>" +
      '<h1 class="ld-addr">' + esc(home.address) + " " + esc(home.zip) + '</h1><div class="ld-pay">Est.: ' + money(payment(home.price)) + "/mo</div>" +
      '<div class="chips">' + facts.map(function (f) { return '<div class="chip"><span>' + esc(f[0]) + "</span><b>" + esc(f[1]) + "</b></div>"; }).join("") + "</div>" +
      "<h2>What's special</h2><p>" + esc(describe(home)) + "</p>" +
      '<div class="agent-line">Listed by: <b>' + esc(home.agent.name) + "</b> " + esc(home.agent.phone) + ", " + esc(home.agent.brokerage) + "</div></div>" +
      '<aside class="contact" aria-label="Contact agent"><h3>Contact agent</h3><div class="agent"><span class="agent-ph">' + esc(home.agent.name.split(" ").map(function (w) { return w[0]; }).join("")) + "</span><div><b>" +
      esc(home.agent.name) + "</b><div>" + esc(home.agent.brokerage) + "</div><div>" + esc(home.agent.phone) + "</div></div></div>" +
      (sent ? '<div class="csent" role="status">Your message was sent to ' + esc(home.agent.name) + ".</div>" : "") +
      '<input type="text" data-contact="name" data-halo-id="contact-name" aria-label="Name" placeholder="Name" value="' + esc(c.name) + '" autocomplete="off">' +
      '<input type="text" data-contact="phone" data-halo-id="contact-phone" aria-label="Phone" placeholder="Phone" value="' + esc(c.phone) + '" autocomplete="off">' +
      '<input type="text" data-contact="email" data-halo-id="contact-email" aria-label="Email" placeholder="Email" value="' + esc(c.email) + '" autocomplete="off">' +
      '<textarea data-contact="message" data-halo-id="contact-message" aria-label="Message">' + esc(c.message) + "</textarea>" +
      (st.tourRequests ? '<div class="tour-when"><input type="text" data-contact="date" data-halo-id="tour-date" aria-label="Tour date" placeholder="Tour date (YYYY-MM-DD)" value="' + esc(c.date) + '" autocomplete="off">' +
        '<input type="text" data-contact="time" data-halo-id="tour-time" aria-label="Tour time" placeholder="Time (e.g. 1:00 PM)" value="' + esc(c.time) + '" autocomplete="off"></div>' : "") + errs +
      (st.tourRequests ? '<button class="cbtn" data-action="tour" data-id="' + home.id + '" data-halo-id="tour-submit">Request a tour</button>' : "") +
      '<button class="cbtn' + (st.tourRequests ? " secondary" : "") + '" data-action="contact" data-id="' + home.id + '" data-halo-id="contact-submit">Contact agent</button>' +
      '<p class="fine">By pressing Contact agent, you agree that Zilloft and real estate professionals may contact you.</p></aside></div></div>';
  }
  function cityOf(home) {
    return SITE.cities.filter(function (c) { return c.city === home.city; })[0];
  }
  function describe(home) {
    const kind = TYPE_LABEL[home.type].toLowerCase();
    return "Welcome to this " + home.beds + "-bedroom " + kind + " in " + home.city + ", built in " + home.yearBuilt + ". " +
      num(home.sqft) + " square feet of light-filled living space with an updated kitchen, " + home.baths + " bathrooms" +
      (home.lotSqft ? " and a " + num(home.lotSqft) + " sqft lot" : " and " + money(home.hoa) + "/month HOA covering water and common areas") +
      ". Close to parks, schools and shopping.";
  }
  function defaultContact(home) {
    return { id: home.id, name: "", phone: "", email: "", message: "I am interested in " + home.address + " " + home.zip + ".", date: "", time: "", error: "" };
  }
  // REAL's Zilloft (the REAL dataset's state has tourRequests) files tour requests and agent
  // contacts under tourRequests, keyed by id, as its eval scripts read them.
  function sentTo(st) {
    if (!st.tourRequests) return Object.values(st.contact.requests);
    return Object.values(st.tourRequests.requestTourList).concat(Object.values(st.tourRequests.contactAgentList));
  }
  function tourDate(text) {
    const t = String(text || "").trim();
    let m = /^(\d{4})-(\d{1,2})-(\d{1,2})$/.exec(t);
    if (m) return m[1] + "-" + m[2].padStart(2, "0") + "-" + m[3].padStart(2, "0");
    m = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/.exec(t);
    return m ? m[3] + "-" + m[1].padStart(2, "0") + "-" + m[2].padStart(2, "0") : null;
  }
  function tourTime(text) {
    const m = /^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/i.exec(String(text || "").trim());
    if (!m) return null;
    let h = Number(m[1]);
    const min = m[2] || "00";
    if (m[3]) { if (h < 1 || h > 12) return null; } else { if (h > 23) return null; }
    const pm = m[3] ? m[3].toLowerCase() === "pm" : h >= 12;
    if (!m[3]) h = h % 12 || 12;
    return h + ":" + min + (pm ? " PM" : " AM");
  }

  function savedPage(st) {
    const homes = SITE.homes().filter(function (h) { return st.homes.saved[h.id]; });
    return '<div class="saved"><h1>Saved homes</h1><p class="muted">' + homes.length + (homes.length === 1 ? " home" : " homes") + "</p>" +
      (homes.length ? '<div class="cards four">' + homes.map(function (h) { return card(h, st.homes.saved); }).join("") + "</div>" :
        '<div class="empty"><h2>No saved homes</h2><p>Tap the heart on any home to save it here.</p></div>') + "</div>";
  }

  function render() {
    const state = HALO.state();
    if (state.tourRequests && !state.config) {
      // REAL's Zilloft applies its run config after /config's snapshot (eval scripts read
      // initialfinaldiff.added.config.zilloft.run_id).
      state.config = { zilloft: { run_id: String(HALO.meta().run_id || "0") } };
      HALO.commit(state);
    }
    let view = HALO.view();
    const r = route();
    if (view.route !== location.hash) {
      // A new page: close panels and menus, forget the contact form and the list's scroll.
      const city = r.kind === "results" ? cityBySlug(r.slug) : null;
      view = HALO.patchView({ route: location.hash, panel: null, pending: null, sortOpen: false, contact: null, error: "", scroll: {}, query: city ? city.label : view.query });
    }
    const st = HALO.state();
    let main, title = "Zilloft: Real Estate, Apartments, Mortgages & Home Values";
    if (r.kind === "results") {
      const city = cityBySlug(r.slug);
      main = city ? resultsPage(st, view, city) : '<div class="empty"><h2>No matching results</h2></div>';
      if (city) title = city.label + " Real Estate & Homes For Sale | Zilloft";
    } else if (r.kind === "listing") {
      const home = SITE.homes().filter(function (h) { return h.id === r.id; })[0];
      main = home ? listingPage(st, view, home) : '<div class="empty"><h2>This home is no longer listed</h2></div>';
      if (home) title = home.address + " | Zilloft";
    } else if (r.kind === "saved") {
      main = savedPage(st);
      title = "Saved Homes | Zilloft";
    } else {
      main = homePage(view);
    }
    document.title = title;
    document.getElementById("app").innerHTML = header() + '<main class="page-' + r.kind + '">' + main + "</main>";
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
  function openPanel(name) {
    const view = HALO.view();
    if (view.panel === name) {
      HALO.patchView({ panel: null, pending: null });
      return;
    }
    const s = HALO.state().search;
    HALO.patchView({
      panel: name, sortOpen: false,
      pending: {
        minPriceText: s.minPrice === null ? "" : String(s.minPrice), maxPriceText: s.maxPrice === null ? "" : String(s.maxPrice),
        beds: s.beds || 0, baths: s.baths || 0, homeTypes: s.homeTypes.slice(), error: "",
      },
    });
  }
  function apply() {
    const view = HALO.view();
    const p = view.pending;
    if (!p) return;
    const patch = {};
    if (view.panel === "price") {
      const lo = parsePrice(p.minPriceText), hi = parsePrice(p.maxPriceText);
      if (Number.isNaN(lo) || Number.isNaN(hi) || (lo !== null && hi !== null && lo > hi)) {
        p.error = Number.isNaN(lo) || Number.isNaN(hi) ? "Enter prices as numbers, like 450000 or 450k." : "The minimum must not be above the maximum.";
        HALO.patchView({ pending: p });
        return;
      }
      patch.minPrice = lo;
      patch.maxPrice = hi;
    } else if (view.panel === "beds") {
      patch.beds = p.beds;
      patch.baths = p.baths;
    } else {
      // Every type ticked is the same as no restriction.
      patch.homeTypes = p.homeTypes.length === SITE.types.length ? [] : SITE.types.map(function (t) { return t[0]; }).filter(function (t) { return p.homeTypes.indexOf(t) !== -1; });
    }
    update(function (st) { Object.assign(st.search, patch); });
    HALO.milestone("filters_applied");
    HALO.patchView({ panel: null, pending: null, focus: null });
  }
  function search(query) {
    const city = findCity(query);
    if (!city) {
      HALO.patchView({ error: 'We could not find "' + String(query || "").trim() + '". Try a city like Austin, TX.' });
      render();
      return;
    }
    update(function (st) { st.search.location = city.label; });
    HALO.milestone("search");
    HALO.patchView({ focus: null, query: city.label, error: "" });
    go("#/homes/" + city.slug);
  }
  function toggleSave(id) {
    const home = SITE.homes().filter(function (h) { return h.id === id; })[0];
    if (!home) return;
    let saved = false;
    update(function (st) {
      if (st.homes.saved[id]) delete st.homes.saved[id];
      else { st.homes.saved[id] = { id: id, address: home.address, price: home.price }; saved = true; }
    });
    if (saved) HALO.milestone("home_saved");
  }
  function contact(id, tour) {
    const home = SITE.homes().filter(function (h) { return h.id === id; })[0];
    const view = HALO.view();
    const c = view.contact && view.contact.id === id ? view.contact : defaultContact(home);
    const digits = String(c.phone || "").replace(/\D/g, "");
    let error = "";
    if (!String(c.name || "").trim()) error = "Please enter your name.";
    else if (digits.length < 10) error = "Please enter a valid phone number.";
    else if (!/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(String(c.email || "").trim())) error = "Please enter a valid email address.";
    else if (!String(c.message || "").trim()) error = "Please enter a message.";
    else if ((tour || String(c.date || "").trim()) && !tourDate(c.date)) error = "Please enter the tour date as YYYY-MM-DD.";
    else if ((tour || String(c.time || "").trim()) && !tourTime(c.time)) error = "Please enter the tour time, e.g. 1:00 PM.";
    if (error) {
      c.error = error;
      HALO.patchView({ contact: c });
      return;
    }
    const form = { name: c.name.trim(), phone: c.phone.trim(), email: c.email.trim(), message: c.message.trim() };
    const when = String(c.date || "").trim() ? { date: tourDate(c.date), time: tourTime(c.time) || "" } : null;
    if (HALO.state().tourRequests) {
      update(function (st) {
        const list = tour ? st.tourRequests.requestTourList : st.tourRequests.contactAgentList;
        const rid = String(Object.keys(st.tourRequests.requestTourList).length + Object.keys(st.tourRequests.contactAgentList).length + 1);
        // The clock never moves: "now" is Monday 2024-07-15, 10:30 (REAL's entries carry createdAt).
        const entry = { id: rid, homeId: id, address: home.address, createdAt: "2024-07-15T10:30:00.000Z" };
        list[rid] = Object.assign(entry, tour ?
          { requestTourData: { options: [when], formValues: form } } :
          { contactAgentData: Object.assign({ formValues: form }, when ? { selectedDate: when } : {}) });
      });
      HALO.milestone("agent_contacted");
      if (tour) HALO.milestone("tour_requested");
      HALO.patchView({ contact: null, focus: null });
      return;
    }
    update(function (st) {
      let n = 1;
      while (st.contact.requests["req-" + n]) n++;
      st.contact.requests["req-" + n] = {
        id: "req-" + n, homeId: id, address: home.address, agent: home.agent.name,
        name: c.name.trim(), phone: c.phone.trim(), email: c.email.trim(), message: c.message.trim(),
      };
    });
    HALO.milestone("agent_contacted");
    HALO.patchView({ contact: null, focus: null });
  }

  // ---- events ----------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    const view = HALO.view();
    if (!el) {
      // A click outside an open panel or menu closes it, as on the real site.
      if ((view.panel && !e.target.closest(".fpanel")) || (view.sortOpen && !e.target.closest(".sort-menu"))) {
        HALO.patchView({ panel: null, pending: null, sortOpen: false });
        render();
      }
      return;
    }
    const action = el.getAttribute("data-action");
    if (action !== "type-toggle") e.preventDefault();
    const id = el.getAttribute("data-id");
    if (action === "panel") {
      openPanel(el.getAttribute("data-panel"));
    } else if (action === "apply") {
      apply();
    } else if (action === "pick") {
      const p = view.pending;
      p[el.getAttribute("data-name")] = Number(el.getAttribute("data-value"));
      HALO.patchView({ pending: p });
    } else if (action === "types-none") {
      const p = view.pending;
      p.homeTypes = [];
      p.noneTicked = true;
      HALO.patchView({ pending: p });
    } else if (action === "type-toggle") {
      const p = view.pending;
      const t = el.getAttribute("data-value");
      // No restriction shows every box ticked; "Deselect All" really unticks them.
      let ticked = p.homeTypes.length || p.noneTicked ? p.homeTypes.slice() : SITE.types.map(function (x) { return x[0]; });
      ticked = el.checked ? ticked.concat([t]) : ticked.filter(function (x) { return x !== t; });
      p.homeTypes = SITE.types.map(function (x) { return x[0]; }).filter(function (x) { return ticked.indexOf(x) !== -1; });
      p.noneTicked = p.homeTypes.length === 0;
      HALO.patchView({ pending: p });
    } else if (action === "sort-toggle") {
      HALO.patchView({ sortOpen: !view.sortOpen, panel: null, pending: null });
    } else if (action === "sort") {
      update(function (st) { st.search.sort = el.getAttribute("data-value"); });
      HALO.patchView({ sortOpen: false });
    } else if (action === "save") {
      toggleSave(id);
    } else if (action === "contact") {
      contact(id, false);
    } else if (action === "tour") {
      contact(id, true);
    } else if (action === "open") {
      go("#/homedetails/" + id);
      return;
    }
    render();
  });

  document.addEventListener("submit", function (e) {
    e.preventDefault();
    search(HALO.view().query);
  });

  document.addEventListener("input", function (e) {
    const t = e.target;
    if (t.getAttribute("data-halo-id") === "search") {
      HALO.patchView({ query: t.value });
      return;
    }
    const pending = t.getAttribute("data-pending");
    if (pending) {
      const p = HALO.view().pending;
      p[pending + "Text"] = t.value;
      HALO.patchView({ pending: p });
      return;
    }
    const field = t.getAttribute("data-contact");
    if (field) {
      const r = route();
      const home = SITE.homes().filter(function (h) { return h.id === r.id; })[0];
      const view = HALO.view();
      const c = view.contact && view.contact.id === r.id ? view.contact : defaultContact(home);
      c[field] = t.value;
      HALO.patchView({ contact: c });
    }
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
