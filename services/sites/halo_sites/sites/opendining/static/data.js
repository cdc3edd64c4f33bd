/* OpenDining's data: 28 San Francisco restaurants (fixed: REAL's eval scripts and the local tasks
 * name several of them), their opening hours and a deterministic availability rule; "today" is
 * Thursday 2024-07-18 and the clock never moves.
 *
 * The state mirrors REAL's OpenDining store: `booking` holds the current selection (date as an ISO
 * instant, time "7:00 PM", guests "2 people"), `bookingCompleted`, `loading`, and once something is
 * booked `index` (how many reservations were made) and `bookingDetails` {"0": {restaurant, date,
 * time, guests, optionals: {occasion, specialRequest}, user, status, confirmationNumber}};
 * `notification.notifications` holds "notify me" requests for times that are fully booked.
 *
 * The episode `seed` (0 = canonical) adds two or three distractor restaurants (cuisines and
 * neighbourhoods no task is about), shuffles the order lists are shown in, and shifts the layout a
 * few pixels; it never changes a restaurant a task or eval script refers to. */
(function () {
  "use strict";

  const TODAY = "2024-07-18";
  const H = function (hh, mm) { return hh * 60 + (mm || 0); };
  // Opening hours: [first seating, last seating] in minutes after midnight.
  const ALL_DAY = [H(8), H(21)], BREAKFAST = [H(7), H(14, 30)], LUNCH_DINNER = [H(11, 30), H(22)], DINNER = [H(17), H(22, 30)];

  // [slug, name, food_type, neighbourhood, rating, reviews, price, hours, address, description, colours]
  const RESTAURANTS = [
    ["river-view-cafe", "River View Café", "American", "Embarcadero", 4.3, 1284, "$$", ALL_DAY, "3 Embarcadero Center, San Francisco, CA 94111",
      "A sunny café on the Embarcadero waterfront with views of the Bay Bridge: seasonal salads, rotisserie chicken and an all-day brunch menu.", ["#f4c27a", "#3b7ea1"]],
    ["crowded-corner", "Crowded Corner", "Seafood", "Embarcadero", 3.8, 642, "$$", LUNCH_DINNER, "155 Steuart St, San Francisco, CA 94105",
      "A lively oyster bar steps from the Ferry Building: clam chowder in sourdough bowls, Dungeness crab and local beers.", ["#e98b6d", "#2f5d7c"]],
    ["harbor-lights-grill", "Harbor Lights Grill", "Seafood", "Embarcadero", 4.4, 918, "$$$", DINNER, "Pier 5, The Embarcadero, San Francisco, CA 94111",
      "Wood-fired fish and shellfish on Pier 5, with a terrace facing the water and the evening lights of the bridge.", ["#f2a65a", "#1f4e6e"]],
    ["evening-delight", "Evening Delight", "French", "Haight-Ashbury", 4.5, 756, "$$$", DINNER, "1620 Haight St, San Francisco, CA 94117",
      "An intimate French dining room on Haight Street: duck confit, steak frites and a tasting menu that changes every week.", ["#8e5a9b", "#f3d9a4"]],
    ["purple-haze-kitchen", "Purple Haze Kitchen", "American", "Haight-Ashbury", 4.1, 533, "$$", LUNCH_DINNER, "1734 Haight St, San Francisco, CA 94117",
      "Comfort food with a psychedelic twist: smash burgers, buttermilk fried chicken and milkshakes in a room full of vintage posters.", ["#a45dc2", "#f5b83d"]],
    ["velvet-curry-house", "Velvet Curry House", "Indian", "Haight-Ashbury", 4.0, 411, "$$", LUNCH_DINNER, "1555 Haight St, San Francisco, CA 94117",
      "North Indian classics from a tandoor oven: butter chicken, saag paneer and garlic naan, with plenty for vegetarians.", ["#d9822b", "#7a2e1f"]],
    ["trattoria-bella", "Trattoria Bella", "Italian", "North Beach", 4.6, 2210, "$$$", LUNCH_DINNER, "512 Columbus Ave, San Francisco, CA 94133",
      "A family-run Italian trattoria in North Beach: hand-rolled pasta, Roman-style pizza and a long list of Tuscan wines.", ["#c0392b", "#f6e7c1"]],
    ["nonnas-table", "Nonna's Table", "Italian", "North Beach", 4.2, 987, "$$", LUNCH_DINNER, "1425 Grant Ave, San Francisco, CA 94133",
      "Recipes from a grandmother in Naples: lasagna, meatballs, gnocchi and tiramisu served family style.", ["#b03a2e", "#fbeee0"]],
    ["caffe-milano", "Caffè Milano", "Italian", "North Beach", 3.9, 468, "$$", ALL_DAY, "401 Columbus Ave, San Francisco, CA 94133",
      "Espresso and cornetti in the morning, panini at lunch and risotto at night in a classic Milanese café.", ["#6d4c41", "#f1d9b5"]],
    ["the-grand-steakhouse", "The Grand Steakhouse", "Steakhouse", "Union Square", 4.7, 1865, "$$$$", DINNER, "340 Stockton St, San Francisco, CA 94108",
      "Dry-aged prime steaks, a raw bar and a thirty-page wine list in a wood-panelled dining room off Union Square.", ["#5d4037", "#d7a86e"]],
    ["maison-lumiere", "Maison Lumière", "French", "Union Square", 4.8, 1402, "$$$$", DINNER, "225 Powell St, San Francisco, CA 94102",
      "Refined modern French cooking with a seven-course chef's menu, served under a glass roof in the heart of the city.", ["#283593", "#f8e9b0"]],
    ["union-square-diner", "Union Square Diner", "American", "Union Square", 3.6, 720, "$", BREAKFAST, "140 Geary St, San Francisco, CA 94108",
      "A chrome-and-vinyl diner for eggs any style, corned beef hash and bottomless coffee since 1962.", ["#e53935", "#cfd8dc"]],
    ["casa-azul", "Casa Azul", "Mexican", "Mission District", 4.2, 1109, "$$", LUNCH_DINNER, "2889 Mission St, San Francisco, CA 94110",
      "Oaxacan moles, handmade tortillas and mezcal cocktails in a bright blue house on Mission Street.", ["#1e88e5", "#ffca28"]],
    ["la-palma-taqueria", "La Palma Taqueria", "Mexican", "Mission District", 3.9, 2340, "$", LUNCH_DINNER, "2884 24th St, San Francisco, CA 94110",
      "Mission-style burritos, al pastor tacos off the trompo and fresh agua fresca. Order at the counter, sit anywhere.", ["#43a047", "#ffb300"]],
    ["morning-glory-cafe", "Morning Glory Café", "Breakfast & Brunch", "Mission District", 4.5, 1530, "$$", BREAKFAST, "3066 16th St, San Francisco, CA 94103",
      "Sourdough pancakes, chilaquiles and eggs Benedict from seven in the morning, with single-origin pour-over coffee.", ["#fbc02d", "#8d6e63"]],
    ["sakura-garden", "Sakura Garden", "Japanese", "SoMa", 4.6, 1322, "$$$", LUNCH_DINNER, "505 Howard St, San Francisco, CA 94105",
      "Omakase sushi and charcoal-grilled yakitori, with a quiet garden room for groups and celebrations.", ["#ec407a", "#263238"]],
    ["smoke-and-oak-bbq", "Smoke & Oak BBQ", "American", "SoMa", 3.4, 688, "$$", LUNCH_DINNER, "1160 Folsom St, San Francisco, CA 94103",
      "Texas-style brisket, pork ribs and mac and cheese, smoked low and slow over oak. Picnic tables and a big patio.", ["#795548", "#ff7043"]],
    ["pasta-fresca-express", "Pasta Fresca Express", "Italian", "SoMa", 3.2, 301, "$", LUNCH_DINNER, "88 4th St, San Francisco, CA 94103",
      "Quick Italian lunches: build-your-own pasta bowls, salads and garlic knots, with a few tables for a sit-down meal.", ["#ef5350", "#fff3e0"]],
    ["olive-and-vine", "Olive & Vine", "Mediterranean", "Hayes Valley", 4.4, 845, "$$$", LUNCH_DINNER, "398 Hayes St, San Francisco, CA 94102",
      "Mezze, wood-roasted lamb and grilled halloumi with natural wines from Greece and Lebanon.", ["#7cb342", "#f0e6d2"]],
    ["the-early-bird", "The Early Bird", "Breakfast & Brunch", "Hayes Valley", 3.1, 276, "$", BREAKFAST, "525 Octavia St, San Francisco, CA 94102",
      "Breakfast burritos, waffles and cold brew for a quick start to the day. Counter service, communal tables.", ["#ffa726", "#5d4037"]],
    ["golden-lantern", "Golden Lantern", "Chinese", "Nob Hill", 4.3, 1012, "$$$", LUNCH_DINNER, "1075 California St, San Francisco, CA 94108",
      "Cantonese banquets, Peking duck carved at the table and dim sum at lunch in an elegant dining room.", ["#d32f2f", "#ffd54f"]],
    ["nob-hill-bistro", "Nob Hill Bistro", "French", "Nob Hill", 3.7, 389, "$$$", DINNER, "1250 Jones St, San Francisco, CA 94109",
      "A neighbourhood bistro with onion soup, moules frites and crème brûlée, and a cozy zinc bar.", ["#3949ab", "#d7ccc8"]],
    ["jade-dragon", "Jade Dragon", "Chinese", "Chinatown", 3.3, 1544, "$", LUNCH_DINNER, "750 Kearny St, San Francisco, CA 94108",
      "Late-night wonton soup, salt and pepper squid and chow mein in a busy Chinatown dining hall.", ["#2e7d32", "#ffcc80"]],
    ["dim-sum-house", "Dim Sum House", "Chinese", "Chinatown", 4.0, 1876, "$$", ALL_DAY, "1028 Grant Ave, San Francisco, CA 94133",
      "Carts of har gow, siu mai and custard tarts roll between the tables from eight in the morning.", ["#c62828", "#fff59d"]],
    ["castro-corner-pizza", "Castro Corner Pizza", "Italian", "Castro", 3.6, 642, "$", LUNCH_DINNER, "4072 18th St, San Francisco, CA 94114",
      "New York slices, Sicilian squares and a build-your-own pie menu, open late every night.", ["#f4511e", "#fff8e1"]],
    ["pancake-palace", "Pancake Palace", "Breakfast & Brunch", "Castro", 2.8, 214, "$", BREAKFAST, "2301 Market St, San Francisco, CA 94114",
      "Stacks of pancakes with every topping imaginable. Expect a wait on weekends.", ["#ffb74d", "#6d4c41"]],
    ["thai-orchid", "Thai Orchid", "Thai", "Castro", 4.1, 557, "$$", LUNCH_DINNER, "4200 18th St, San Francisco, CA 94114",
      "Green curry, pad see ew and crispy pork belly with a wall of orchids and a heated back patio.", ["#8e24aa", "#c5e1a5"]],
    ["fog-city-oyster-bar", "Fog City Oyster Bar", "Seafood", "Embarcadero", 4.5, 1190, "$$$", LUNCH_DINNER, "1300 Battery St, San Francisco, CA 94111",
      "A waterfront raw bar with oysters from Tomales Bay, crudo and a classic cioppino, across from Pier 15.", ["#26a69a", "#37474f"]],
  ];
  // REAL's scripts name River View Café by this id.
  const FIXED_IDS = { "river-view-cafe": "cd4f81d3-3c75-4c67-b47b-e7f013f6ae9d" };

  // Distractors a seed may add: cuisines no task asks for, neighbourhoods no task names, and no
  // word REAL's Embarcadero check looks for in their name or description.
  const EXTRA = [
    ["seoul-kitchen", "Seoul Kitchen", "Korean", "Nob Hill", 4.2, 388, "$$", LUNCH_DINNER, "1432 Polk St, San Francisco, CA 94109",
      "Korean barbecue grilled at the table, bibimbap in stone bowls and house-made kimchi.", ["#e64a19", "#263238"]],
    ["pho-saigon", "Pho Saigon", "Vietnamese", "Castro", 3.9, 512, "$", LUNCH_DINNER, "2198 Market St, San Francisco, CA 94114",
      "Slow-simmered beef pho, banh mi and fresh spring rolls, served fast.", ["#689f38", "#fff9c4"]],
    ["athena-taverna", "Athena Taverna", "Greek", "Hayes Valley", 4.0, 296, "$$", DINNER, "455 Grove St, San Francisco, CA 94102",
      "Grilled octopus, moussaka and lamb souvlaki with Greek wines and live music on Fridays.", ["#1565c0", "#eceff1"]],
    ["spice-route", "Spice Route", "Ethiopian", "Mission District", 4.3, 233, "$$", LUNCH_DINNER, "3174 24th St, San Francisco, CA 94110",
      "Injera platters with lentil wots and spiced lamb tibs, shared at woven basket tables.", ["#bf360c", "#ffe0b2"]],
    ["green-bowl", "Green Bowl", "Vegetarian", "SoMa", 3.8, 174, "$", LUNCH_DINNER, "725 Harrison St, San Francisco, CA 94107",
      "Grain bowls, seasonal soups and fresh juices, all plant-based.", ["#43a047", "#f1f8e9"]],
  ];

  function hash(text) {
    // FNV-1a: stable ids, availability and confirmation numbers without Math.random.
    let h = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) {
      h ^= text.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h >>> 0;
  }
  function uuid(slug) {
    const hex = [1, 2, 3, 4].map(function (k) { return hash(slug + "#" + k).toString(16).padStart(8, "0"); }).join("");
    return hex.slice(0, 8) + "-" + hex.slice(8, 12) + "-4" + hex.slice(13, 16) + "-a" + hex.slice(17, 20) + "-" + hex.slice(20, 32);
  }
  function make(row) {
    return {
      slug: row[0], id: FIXED_IDS[row[0]] || uuid(row[0]), name: row[1], food_type: row[2], location: row[3],
      rating: row[4], reviews: row[5], price: row[6], hours: row[7], address: row[8], description: row[9],
      imageUrl: "/opendining/images/" + row[0] + ".jpg", colors: row[10],
    };
  }

  function catalog(seed) {
    const list = RESTAURANTS.map(make);
    if (!seed) return list;
    const r = HALO.rng(seed);
    const extra = r.shuffle(EXTRA).slice(0, 2 + r.int(2)).map(make);
    return r.shuffle(list.concat(extra));
  }

  const REVIEWERS = ["Jessica M.", "Daniel R.", "Priya S.", "Kevin L.", "Maria G.", "Tom H.", "Aisha B.", "Chris P.", "Nina K.", "Oscar V."];
  const REVIEW_TEXT = [
    "Wonderful evening. The staff were attentive and every dish came out perfectly timed.",
    "Great food, a bit loud on a Friday night, but we will definitely be back.",
    "Booked for a birthday and they brought out a candle with dessert. Lovely touch.",
    "Solid meal, friendly service. Portions were generous and prices fair.",
    "The highlight of our trip to San Francisco. Reserve ahead, it fills up fast.",
    "Good but not memorable. The starters were better than the mains.",
  ];
  function reviews(rest) {
    const h = hash(rest.slug);
    return [0, 1, 2].map(function (k) {
      const stars = Math.max(1, Math.min(5, Math.round(rest.rating + (k === 2 ? -1 : 0) + ((h >> k) & 1 ? 0 : -0.4))));
      return { name: REVIEWERS[(h + k * 3) % REVIEWERS.length], stars: stars, text: REVIEW_TEXT[(h + k * 5) % REVIEW_TEXT.length], dined: ["2 days ago", "1 week ago", "3 weeks ago"][k] };
    });
  }

  /* Whether a table is free: a fixed share of slots is taken (by a hash of restaurant, day and time),
   * and Evening Delight's 5:00 PM seating today is fully booked (its guests can ask to be notified). */
  function available(rest, dateIso, minutes) {
    const day = String(dateIso).slice(0, 10);
    if (minutes < rest.hours[0] || minutes > rest.hours[1]) return false;
    if (rest.slug === "evening-delight" && day === TODAY && minutes === H(17)) return false;
    return hash(rest.slug + "|" + day + "|" + minutes) % 7 !== 3;
  }

  const USER = { firstName: "Alex", lastName: "Morgan", phone: "(415) 555-0134", email: "alex.morgan@example.com" };
  const DEFAULT_BOOKING = { date: TODAY + "T00:00:00.000Z", time: "7:00 PM", guests: "2 people", loading: false, bookingCompleted: false };

  // The local tasks' account has two upcoming reservations; REAL's starts with none, as its
  // scripts read every reservation under initialfinaldiff.added.booking.
  function pastReservations(list) {
    const by = function (slug) { return list.filter(function (r) { return r.slug === slug; })[0]; };
    const entry = function (rest, date, time, guests, occasion, conf) {
      return {
        id: conf, confirmationNumber: conf, restaurant: restaurantRecord(rest), date: date + "T00:00:00.000Z", time: time, guests: guests,
        optionals: { occasion: occasion, specialRequest: "" }, user: HALO.clone(USER), status: "confirmed",
      };
    };
    return {
      0: entry(by("golden-lantern"), "2024-07-20", "7:00 PM", "2 people", "", "OD-40718"),
      1: entry(by("olive-and-vine"), "2024-07-24", "6:30 PM", "4 people", "Anniversary", "OD-52963"),
    };
  }
  function restaurantRecord(rest) {
    return {
      id: rest.id, name: rest.name, food_type: rest.food_type, rating: rest.rating, reviews: rest.reviews, price: rest.price,
      location: rest.location, address: rest.address, description: rest.description, imageUrl: rest.imageUrl,
    };
  }

  let cache = null;
  HALO.defineSite({
    site: "opendining",
    collections: { reservations: "booking.bookingDetails", notifications: "notification.notifications" },
    today: TODAY,
    user: USER,
    hash: hash,
    available: available,
    reviews: reviews,
    restaurantRecord: restaurantRecord,
    restaurants: function () {
      const seed = Number(HALO.meta().seed || 0);
      if (!cache || cache.seed !== seed) cache = { seed: seed, list: catalog(seed) };
      return cache.list;
    },
    initialState: function (seed, config) {
      const booking = HALO.clone(DEFAULT_BOOKING);
      if (config.dataset !== "real") {
        booking.index = 2;
        booking.bookingDetails = pastReservations(RESTAURANTS.map(make));
      }
      return { booking: booking, notification: { notifications: {} } };
    },
    initialView: function () {
      return { route: null, query: "", open: null, calMonth: TODAY.slice(0, 7), filters: { cuisine: "", hood: "", rating: 0 }, form: null, cancel: null };
    },
  });
})();
