/* Zilloft's data: 64 homes for sale, 8 in each of 8 cities, generated from `config.data_seed`
 * (default 0) by HALO.rng, so a task's facts (prices, agents, counts) are fixed for its data seed.
 * Ids are the city code and a number (aus1..aus8, sea1..). The episode `seed` only adds distractors
 * (below) and reorders the default sort (app.js): the goals tasks state stay true. The state
 * holds the current search (location, filters, sort), the saved homes and the messages sent to agents. */
(function () {
  "use strict";

  // [code, city, state, zip base, $ per sqft, map water side]
  const CITIES = [
    ["aus", "Austin", "TX", 78701, 320, "river"], ["sea", "Seattle", "WA", 98101, 560, "west"],
    ["den", "Denver", "CO", 80202, 380, "lake"], ["sdg", "San Diego", "CA", 92101, 620, "west"],
    ["pdx", "Portland", "OR", 97201, 390, "river"], ["bos", "Boston", "MA", 2108, 640, "east"],
    ["mia", "Miami", "FL", 33130, 450, "east"], ["chi", "Chicago", "IL", 60601, 260, "east"],
  ];
  // REAL's v2 Zilloft tasks (real-offline.zilloft-<n>, config.dataset "real") are about California:
  // those cities join the eight (generated the same way, after them, so the others do not change).
  // The page builds its city list before HALO knows the episode: it reads the episode's config
  // (written by /config) from storage itself.
  const META = JSON.parse(localStorage.getItem("halo:zilloft:meta") || "{}");
  const REAL = ((META && META.config) || {}).dataset === "real";
  if (REAL) {
    CITIES.push(
      ["lgb", "Long Beach", "CA", 90802, 430, "west"], ["lax", "Los Angeles", "CA", 90012, 250, "west"],
      ["sjc", "San Jose", "CA", 95112, 520, "lake"], ["sac", "Sacramento", "CA", 95814, 330, "river"],
      ["sfo", "San Francisco", "CA", 94102, 380, "east"],
    );
  }
  /* Perturbed starts: a non-zero episode seed adds one more city, Phoenix, AZ, with three distractor
   * homes (phx1..phx3), generated after the others so their homes do not change. No task, REAL goal
   * or eval script names Arizona or Phoenix; seed 0 has no such city. Read at each call, not when
   * the page loads: the environment rewinds a parked page into an episode of another seed. */
  const PHOENIX = ["phx", "Phoenix", "AZ", 85004, 300, "river"];
  const DISTRACTOR_HOMES = 3;
  function episodeSeed() {
    return Number(HALO.meta().seed || 0);
  }
  function cityList(seed) {
    return seed ? CITIES.concat([PHOENIX]) : CITIES;
  }
  const STREETS = ["Maple Ave", "Oak St", "Cedar Ln", "Pine St", "Elm Dr", "Willow Way", "Birch Rd", "Lakeview Dr",
    "Sunset Blvd", "Hillcrest Rd", "Park Ave", "Magnolia St", "Juniper Ct", "Aspen Way", "Riverside Dr", "Highland Ave"];
  const AGENTS = [
    ["Maria Lopez", "Keller Homes Realty"], ["David Kim", "Compass Point Realty"], ["Sarah Johnson", "Redfield Brokers"],
    ["James Carter", "Coldwell Banks Realty"], ["Emily Chen", "Sotheby Lane Realty"], ["Michael Brown", "eXp Horizon Realty"],
    ["Olivia Martinez", "Century Oaks Realty"], ["Daniel Wilson", "RE/MAX Summit"], ["Sophia Patel", "Berkshire Hill Homes"],
    ["Ethan Nguyen", "Douglas Ellison Realty"], ["Grace Thompson", "Windermere Bay Realty"], ["Noah Garcia", "HomeSmart Partners"],
  ];
  const TYPES = ["house", "house", "house", "townhome", "townhome", "condo", "condo", "apartment"];
  const TYPE_FACTOR = { house: 1, townhome: 0.95, condo: 0.85, apartment: 0.8 };
  const COLORS = ["#c9d6df", "#f1e3cb", "#d8e2dc", "#f4d6cc", "#e0d4c8", "#cfd8e8", "#e9e4d4", "#dce8d0"];

  function homes(dataSeed, seed) {
    const out = [];
    cityList(seed).forEach(function (c, ci) {
      const r = HALO.rng(dataSeed * 1000 + ci + 1);
      const types = r.shuffle(TYPES);
      const used = {};
      types.forEach(function (type, i) {
        let beds, sqft;
        if (type === "house") { beds = 2 + r.int(4); sqft = 1200 + beds * 350 + r.int(600); }
        else if (type === "townhome") { beds = 2 + r.int(3); sqft = 1000 + beds * 300 + r.int(400); }
        else if (type === "condo") { beds = 1 + r.int(3); sqft = 550 + beds * 350 + r.int(300); }
        else { beds = 1 + r.int(2); sqft = 500 + beds * 300 + r.int(250); }
        const baths = Math.max(1, beds - 1 + r.int(2) + (r.next() < 0.3 ? 0.5 : 0));
        const price = Math.round(sqft * c[4] * TYPE_FACTOR[type] * (0.85 + r.next() * 0.3) / 1000) * 1000;
        let street;
        do { street = (100 + r.int(9800)) + " " + r.pick(STREETS); } while (used[street]);
        used[street] = true;
        const agent = r.pick(AGENTS);
        const unit = type === "condo" || type === "apartment" ? " #" + (1 + r.int(9)) + String(r.int(10)) + String(1 + r.int(8)) : "";
        out.push({
          id: c[0] + (i + 1), city: c[1], state: c[2], zip: String(c[3] + r.int(20)).padStart(5, "0"),
          street: street + unit, address: street + unit + ", " + c[1] + ", " + c[2],
          type: type, beds: beds, baths: baths, sqft: sqft, price: price,
          yearBuilt: 1950 + r.int(73), lotSqft: type === "house" ? 4000 + r.int(60) * 100 : null,
          hoa: type === "house" ? 0 : 150 + r.int(40) * 10, daysOnMarket: 1 + r.int(60),
          agent: { name: agent[0], brokerage: agent[1], phone: "(" + (200 + ci * 97 % 700) + ") 555-" + String(1000 + r.int(9000)) },
          x: 0.1 + r.next() * 0.8, y: 0.12 + r.next() * 0.76, color: r.pick(COLORS), roof: r.pick(["#5b4a42", "#3d4a5c", "#7a3e2e", "#4a4a4a"]),
        });
      });
    });
    if (REAL) out.forEach(function (h) { Object.assign(h, REAL_FIXUPS[h.id] || {}); });
    return out.filter(function (h) { return h.city !== "Phoenix" || Number(h.id.slice(3)) <= DISTRACTOR_HOMES; });
  }
  // Generated homes adjusted so that each REAL goal has an answer: a 3-bed 2-bath house in Long
  // Beach, a house under $350,000 in Los Angeles, a house under $1M in Boston.
  const REAL_FIXUPS = { lgb6: { baths: 2 }, lax5: { price: 329000 }, bos7: { price: 958000 } };

  const DEFAULT_SEARCH = { location: "", minPrice: null, maxPrice: null, beds: 0, baths: 0, homeTypes: [], sort: "homes-for-you" };
  let cache = null;

  HALO.defineSite({
    site: "zilloft",
    // REAL's state: tour requests and agent contacts under tourRequests, reported as id-keyed maps.
    collections: REAL ?
      { saved: "homes.saved", requestTours: { path: "tourRequests.requestTourList", keyed: true }, contactAgents: { path: "tourRequests.contactAgentList", keyed: true } } :
      { saved: "homes.saved", contactRequests: "contact.requests" },
    get cities() {
      return cityList(episodeSeed()).map(function (c) { return { code: c[0], city: c[1], state: c[2], label: c[1] + ", " + c[2], slug: (c[1] + "-" + c[2]).toLowerCase().replace(/\s+/g, "-"), zip: c[3], water: c[5] }; });
    },
    types: [["house", "Houses"], ["townhome", "Townhomes"], ["condo", "Condos/Co-ops"], ["apartment", "Apartments"]],
    homes: function () {
      const seed = Number((HALO.meta().config || {}).data_seed || 0);
      const episode = episodeSeed() ? 1 : 0;
      if (!cache || cache.seed !== seed || cache.episode !== episode) cache = { seed: seed, episode: episode, list: homes(seed, episode) };
      return cache.list;
    },
    initialState: function (seed, config) {
      if (config.dataset === "real") {
        return { search: HALO.clone(DEFAULT_SEARCH), homes: { saved: {} }, tourRequests: { requestTourList: {}, contactAgentList: {} } };
      }
      return { search: HALO.clone(DEFAULT_SEARCH), homes: { saved: {} }, contact: { requests: {} } };
    },
    initialView: function () {
      return { route: null, query: "", panel: null, pending: null, contact: null, sortOpen: false };
    },
  });
})();
