/* Staynb's data: 84 stays in 21 places (4 each), generated from a fixed data seed by HALO.rng so
 * every fact a goal states (titles, prices, ratings, rooms, amenities) is the same in every
 * episode. Ids are the place code and a number (vie1..vie4, par1, ...). The first stay of each
 * place is its large, well-equipped one and the fourth a studio or one-bedroom, so each REAL
 * goal ("2+ bedrooms with wifi in Rome", "pool, wifi, free parking and AC nearby") has answers
 * and near misses.
 *
 * The state is REAL's Staynb shape: `search` (the applied destination, dates, guest counts and
 * filters, recent searches), `booking` (isBooking, currentBooking, errors, bookingDetails) and
 * `wishlist.wishlists`. Both datasets (local tasks and config.dataset "real") build this state:
 * the site was made for REAL's scripts, so there is no second shape to keep.
 *
 * The episode `seed` (0 = canonical) shuffles the order stays are listed in, adds two or three
 * distractor stays in places no task is about (Barcelona, London, Lake Tahoe) and shifts the page
 * a few pixels down; it never changes a stay a task refers to. */
(function () {
  "use strict";

  // [code, city, region (shown for US places), country, scene, base price per night, nearby]
  const PLACES = [
    ["vie", "Vienna", "", "Austria", "city", 135, false],
    ["szg", "Salzburg", "", "Austria", "mountain", 160, false],
    ["hal", "Hallstatt", "", "Austria", "lake", 185, false],
    ["sfo", "San Francisco", "CA", "United States", "city", 230, false],
    ["par", "Paris", "", "France", "city", 210, false],
    ["pro", "Provence", "", "France", "country", 195, false],
    ["cpt", "Cape Town", "", "South Africa", "beach", 115, false],
    ["scz", "Santa Cruz", "CA", "United States", "beach", 255, true],
    ["cap", "Capitola", "CA", "United States", "beach", 275, true],
    ["del", "Delhi", "", "India", "city", 55, false],
    ["mia", "Miami", "FL", "United States", "beach", 240, false],
    ["rom", "Rome", "", "Italy", "city", 165, false],
    ["sjo", "San Jose", "", "Costa Rica", "jungle", 85, false],
    ["sjc", "San Jose", "CA", "United States", "city", 175, false],
    ["yvr", "Vancouver", "", "Canada", "city", 190, false],
    ["lis", "Lisbon", "", "Portugal", "city", 125, false],
    ["kyo", "Kyoto", "", "Japan", "city", 150, false],
    ["tah", "Lake Tahoe", "CA", "United States", "mountain", 310, false],
    ["bcn", "Barcelona", "", "Spain", "city", 155, false],
    ["ldn", "London", "", "United Kingdom", "city", 220, false],
    ["ist", "Istanbul", "", "Turkey", "city", 90, false],
  ];
  // Where seeded distractor stays may appear: no task, REAL's or local, is about these places.
  const DISTRACTOR_PLACES = ["bcn", "ldn", "tah"];

  const AMENITIES = ["Wifi", "Kitchen", "Washer", "Dryer", "Air conditioning", "Heating", "Dedicated workspace", "TV",
    "Pool", "Hot tub", "Free parking", "EV charger", "Gym", "BBQ grill", "Indoor fireplace", "Crib"];
  const AMENITY_IDS = {
    Wifi: "wifi", Kitchen: "kitchen", Washer: "washer", Dryer: "dryer", "Air conditioning": "ac", Heating: "heating",
    "Dedicated workspace": "workspace", TV: "tv", Pool: "pool", "Hot tub": "hot-tub", "Free parking": "free-parking",
    "EV charger": "ev-charger", Gym: "gym", "BBQ grill": "bbq", "Indoor fireplace": "fireplace", Crib: "crib",
  };

  // Title options by size: the large stay, the two-bedroom, the small one, the studio.
  const TITLES = {
    city: [["Designer home with rooftop terrace", "Grand apartment with city views"], ["Stylish flat near the river", "Art-filled flat with balcony"],
      ["Bright loft in the old town", "Quiet courtyard apartment"], ["Cozy studio by the market", "Sunlit micro-loft"]],
    beach: [["Oceanfront house with deck", "Modern villa above the bay"], ["Beach bungalow with garden", "Dune house with sunset views"],
      ["Palm-shaded cottage", "Harbor loft with terrace"], ["Sea-breeze studio", "Surf shack two blocks from the sand"]],
    mountain: [["Alpine chalet with sauna", "Family chalet near the lifts"], ["Timber cabin in the pines", "Ski-in lodge with fireplace"],
      ["Cozy A-frame by the trail", "Stone cottage in the valley"], ["Mountain-view studio", "Panorama studio"]],
    lake: [["Lakeside house with boat dock", "Historic house above the lake"], ["Fisherman's cottage on the shore", "Wooden chalet by the water"],
      ["Village flat by the church", "Boathouse apartment"], ["Lake-view studio", "Attic studio with lake glimpse"]],
    country: [["Stone mas with lavender fields", "Country villa with pool"], ["Farmhouse with olive grove", "Restored barn with courtyard"],
      ["Village house with terrace", "Painter's cottage"], ["Garden studio in the vines", "Studio above the bakery"]],
    jungle: [["Hillside villa with pool", "Casa with volcano views"], ["Treehouse in the cloud forest", "Tropical bungalow"],
      ["Garden casita with hammocks", "Bamboo cabin"], ["Coffee-farm studio", "Rainforest micro-cabin"]],
  };
  const KINDS = { city: ["Apartment", "Loft", "Condo", "Home"], beach: ["Home", "Bungalow", "Villa", "Cottage"],
    mountain: ["Chalet", "Cabin", "Home", "Apartment"], lake: ["Home", "Cottage", "Chalet", "Apartment"],
    country: ["Farm stay", "Villa", "Home", "Cottage"], jungle: ["Treehouse", "Villa", "Casita", "Bungalow"] };
  const HOSTS = ["Anna", "Marco", "Sophie", "Lukas", "Priya", "Thabo", "Camille", "Diego", "Yuki", "Elena", "Noah", "Aisha",
    "Jonas", "Lucia", "Mateo", "Ines", "Kenji", "Maya", "Oliver", "Zanele", "Rafael", "Hannah", "Arjun", "Chloe"];
  const PALETTES = [["#e8d5c4", "#b5654a"], ["#dfe7ef", "#3d5a80"], ["#f2e6c9", "#8a6d3b"], ["#e3efe0", "#4f7d5c"],
    ["#f4dede", "#a4505c"], ["#e6e1f0", "#5d4e8c"], ["#f0ece2", "#6b6b6b"], ["#dcefee", "#2f7f7a"]];

  // Equipment by size: the large stay has everything its scene suggests, the studio the basics.
  function amenitiesFor(place, index, r) {
    const scene = place[4];
    const base = ["Wifi", "Kitchen", "Heating", "TV"];
    if (index === 3 && r.next() < 0.5) base.splice(0, 1); // a studio without wifi: a near miss
    const extra = ["Washer", "Dryer", "Dedicated workspace", "Crib", "Hot tub", "Gym", "BBQ grill", "EV charger", "Indoor fireplace"];
    const out = base.concat(r.shuffle(extra).slice(0, 2 + r.int(3)));
    if (index === 0) out.push("Air conditioning", "Free parking", "Washer");
    else if (r.next() < 0.5) out.push("Air conditioning");
    if (index === 1 && r.next() < 0.6) out.push("Free parking");
    if (scene === "beach" || scene === "jungle" || scene === "country" || place[6]) {
      if (index === 0 || r.next() < 0.4) out.push("Pool");
    }
    return AMENITIES.filter(function (a) { return out.indexOf(a) !== -1; });
  }

  function rooms(index, r) {
    if (index === 0) return { bedrooms: 3, beds: 4, bathrooms: 2 };
    if (index === 1) return { bedrooms: 2, beds: 2 + r.int(2), bathrooms: 1 + r.int(2) };
    if (index === 2) { const b = 1 + r.int(2); return { bedrooms: b, beds: b === 1 ? 1 : 1 + r.int(2), bathrooms: 1 }; }
    return { bedrooms: r.next() < 0.5 ? 0 : 1, beds: 1, bathrooms: 1 };
  }

  function label(place) {
    return place[1] + ", " + (place[2] || place[3]);
  }

  function makeStay(place, index, r, id) {
    const scene = place[4];
    const rm = rooms(index, r);
    const kinds = KINDS[scene];
    const titles = TITLES[scene];
    const price = Math.round(place[5] * (index === 0 ? 1.6 : index === 1 ? 1.2 : index === 2 ? 1.0 : 0.7) * (0.9 + r.next() * 0.2));
    return {
      id: id, placeCode: place[0], city: place[1], region: place[2], country: place[3], location: label(place),
      nearby: place[6], scene: scene, kind: index === 3 ? (rm.bedrooms === 0 ? "Studio" : "Apartment") : kinds[index % kinds.length],
      title: titles[index][(place[0].charCodeAt(1) + index) % 2],
      host: { name: r.pick(HOSTS), superhost: r.next() < 0.45, years: 1 + r.int(11) },
      rating: Math.round((4.5 + r.next() * 0.49) * 100) / 100, reviews: 3 + r.int(420),
      price: price, cleaningFee: Math.round(price * 0.35 / 5) * 5,
      guests: index === 0 ? 8 : index === 1 ? 5 + r.int(2) : index === 2 ? 3 + r.int(2) : 2,
      rooms: rm, amenities: amenitiesFor(place, index, r),
      palette: r.pick(PALETTES), variant: r.int(4),
    };
  }

  function baseStays() {
    const out = [];
    PLACES.forEach(function (place, pi) {
      const r = HALO.rng(7100 + pi);
      for (let i = 0; i < 4; i++) out.push(makeStay(place, i, r, place[0] + (i + 1)));
    });
    return out;
  }

  // Two or three extra stays (ids x1..x3) for a nonzero seed, in places no task is about.
  function distractors(seed) {
    if (!seed) return [];
    const r = HALO.rng(seed * 31 + 5);
    const n = 2 + r.int(2);
    const out = [];
    for (let i = 0; i < n; i++) {
      const code = r.pick(DISTRACTOR_PLACES);
      const place = PLACES.filter(function (p) { return p[0] === code; })[0];
      out.push(makeStay(place, 1 + r.int(3), r, "x" + (i + 1)));
    }
    return out;
  }

  // Destination suggestions: countries first-class (REAL's "Austria"), then "City, Region".
  function destinations() {
    const seen = {};
    const out = [];
    PLACES.forEach(function (p) {
      const l = label(p);
      if (!seen[l]) { seen[l] = true; out.push({ label: l, kind: "place", place: p[0] }); }
    });
    PLACES.forEach(function (p) {
      if (!seen[p[3]]) { seen[p[3]] = true; out.push({ label: p[3], kind: "country" }); }
    });
    return out;
  }

  const BASE = baseStays();
  let cache = null;

  HALO.defineSite({
    site: "staynb",
    collections: { wishlists: "wishlist.wishlists", bookings: "booking.bookingDetails", shares: "share.shares" },
    amenities: AMENITIES,
    amenityIds: AMENITY_IDS,
    destinations: destinations(),
    // "Today" in Staynb: Monday 15 July 2024; the clock never moves.
    today: "2024-07-15",
    userCity: "Santa Cruz, CA",
    stays: function () {
      const seed = Number(HALO.meta().seed || 0);
      if (!cache || cache.seed !== seed) cache = { seed: seed, list: BASE.concat(distractors(seed)) };
      return cache.list;
    },
    initialState: function () {
      return {
        search: { recentSearches: {} },
        booking: { isBooking: false, currentBooking: null, errors: { cardNumber: "", expiration: "", cvv: "", zipcode: "" }, bookingDetails: {} },
        wishlist: { wishlists: {} },
        share: { shares: {} },
      };
    },
    initialView: function () {
      return { route: null, panel: null, draft: null, cal: "2024-07", filters: null, modal: null, pay: null, notice: "" };
    },
  });
})();
