/* Omnizon's data: a fixed catalog of 60 products (p01..p60, 10 per department) that tasks refer to,
 * and the shopper's two past orders. The shopper is Alex Morgan; "today" is Monday 2024-07-15 and
 * the clock never moves. `config.cart` ({product id: quantity}) pre-fills the cart for a task.
 * The episode seed only adds two distractor items (below): the goals tasks state stay true. */
(function () {
  "use strict";

  const DEPARTMENTS = [
    ["electronics", "Electronics"], ["home", "Home & Kitchen"], ["books", "Books"],
    ["toys", "Toys & Games"], ["sports", "Sports & Outdoors"], ["fashion", "Clothing & Shoes"],
  ];

  // [id, department, name, brand, price, rating, ratings count, art kind, colour, search tags]
  const ROWS = [
    ["p01", "electronics", "SoundPods Pro Wireless Earbuds, Active Noise Cancelling", "Sonora", 79.99, 4.5, 12873, "earbuds", "#f4f4f4", "earbuds headphones bluetooth audio wireless"],
    ["p02", "electronics", "Omnizon Orb Mini Smart Speaker (5th Gen), Charcoal", "Omnizon", 49.99, 4.7, 98211, "speaker", "#3a3f44", "smart speaker voice assistant audio"],
    ["p03", "electronics", "Voltix 65W USB-C Fast Charger, 3-Port", "Voltix", 29.99, 4.6, 5402, "charger", "#fafafa", "charger usb-c power adapter phone laptop"],
    ["p04", "electronics", "AuraSound Over-Ear Bluetooth Headphones, 40h Battery", "AuraSound", 59.99, 4.3, 8731, "headphones", "#1f2a44", "headphones bluetooth wireless audio over-ear"],
    ["p05", "electronics", "PixelView 27-Inch 4K UHD Monitor, IPS, HDR10", "PixelView", 279.99, 4.4, 3120, "monitor", "#222222", "monitor display screen 4k computer"],
    ["p06", "electronics", "Omnizon Fire Tab 10 Tablet, 64 GB", "Omnizon", 139.99, 4.5, 45012, "tablet", "#2b2b2b", "tablet ereader screen"],
    ["p07", "electronics", "KeyCraft Mechanical Keyboard, RGB Backlit", "KeyCraft", 69.99, 4.6, 7788, "keyboard", "#333333", "keyboard mechanical computer gaming"],
    ["p08", "electronics", "Glide Wireless Mouse, Silent Click", "Glide", 19.99, 4.4, 21450, "mouse", "#5a5a5a", "mouse wireless computer"],
    ["p09", "electronics", "Snapix Instant Camera with 20 Films", "Snapix", 89.99, 4.2, 2310, "camera", "#7fc8f8", "camera instant photo"],
    ["p10", "electronics", "FitPulse Smart Watch, Heart Rate and Sleep Tracker", "FitPulse", 49.99, 4.1, 6650, "watch", "#111111", "smart watch fitness tracker"],
    ["p11", "home", "ChefLine 6-Quart Stainless Steel Stock Pot with Lid", "ChefLine", 34.99, 4.7, 4120, "pot", "#c0c4c8", "pot cooking stock pot cookware kitchen"],
    ["p12", "home", "CastIron Co. 10-Inch Pre-Seasoned Skillet", "CastIron Co.", 24.99, 4.8, 65230, "pan", "#2d2d2d", "skillet pan frying cast iron cookware kitchen"],
    ["p13", "home", "BrewMaster Electric Kettle, 1.7 L, Auto Shut-Off", "BrewMaster", 27.99, 4.5, 18800, "kettle", "#e2e2e2", "kettle electric tea water kitchen"],
    ["p14", "home", "BlendPro 1200W Countertop Blender", "BlendPro", 79.99, 4.4, 9050, "blender", "#d33b3b", "blender smoothie kitchen appliance"],
    ["p15", "home", "Nordic Home Ceramic Coffee Mugs, Set of 4", "Nordic Home", 22.99, 4.6, 3340, "mug", "#7aa6c2", "mug mugs coffee cup ceramic kitchen"],
    ["p16", "home", "LumaDesk LED Desk Lamp with USB Port", "LumaDesk", 32.99, 4.5, 7410, "lamp", "#f2f2f2", "lamp desk light led office"],
    ["p17", "home", "CloudRest Memory Foam Pillow, Queen", "CloudRest", 39.99, 4.3, 12045, "pillow", "#fafafa", "pillow bed bedding sleep"],
    ["p18", "home", "SharpEdge 8-Inch Chef's Knife", "SharpEdge", 45.99, 4.7, 5230, "knife", "#9a9a9a", "knife chef kitchen cutlery"],
    ["p19", "home", "ChefLine Nonstick 3-Quart Saucepan with Lid", "ChefLine", 29.99, 4.2, 2104, "pot", "#333333", "pot saucepan cooking cookware kitchen nonstick"],
    ["p20", "home", "AquaPure Water Filter Pitcher, 10-Cup", "AquaPure", 26.99, 4.4, 15012, "pitcher", "#8fd3ff", "water filter pitcher kitchen"],
    ["p21", "books", "The Midnight Orchard: A Novel (Hardcover)", "Clara Vance", 18.99, 4.6, 23011, "book", "#2e4a62", "book novel fiction hardcover"],
    ["p22", "books", "Atomic Routines: Small Changes, Big Results", "James Holt", 16.20, 4.8, 98004, "book", "#f2c14e", "book self-help habits"],
    ["p23", "books", "Learning Python the Practical Way, 3rd Edition", "Dana Ruiz", 39.99, 4.5, 2210, "book", "#3776ab", "book python programming computer"],
    ["p24", "books", "The Last Lighthouse (Paperback)", "Owen Marsh", 14.99, 4.3, 8870, "book", "#5b7f95", "book novel fiction paperback"],
    ["p25", "books", "Cooking for Friends: 100 Easy Recipes", "Maya Chen", 24.50, 4.7, 3120, "book", "#c8553d", "book cookbook recipes cooking"],
    ["p26", "books", "A Brief History of Stars", "Ian Forde", 12.99, 4.4, 6015, "book", "#1b1f3b", "book science astronomy"],
    ["p27", "books", "The Silent Harbor (Paperback)", "Rosa Klein", 10.99, 4.1, 4410, "book", "#6b8f71", "book novel mystery paperback"],
    ["p28", "books", "Mindful Money: A Guide to Saving", "Priya Shah", 19.99, 4.2, 1980, "book", "#2a9d8f", "book finance money"],
    ["p29", "books", "Dragons of the North Wind (Paperback)", "L. K. Ember", 9.99, 4.6, 15240, "book", "#7b2d26", "book fantasy novel paperback"],
    ["p30", "books", "The Garden Year: A Planner", "Tom Beck", 13.49, 4.5, 760, "book", "#7fb069", "book gardening planner"],
    ["p31", "toys", "BrickBuild Classic Creative Box, 900 Pieces", "BrickBuild", 44.99, 4.8, 30120, "blocks", "#e63946", "building blocks bricks toy kids"],
    ["p32", "toys", "PuzzleWorks 1000-Piece Jigsaw Puzzle, Mountain Lake", "PuzzleWorks", 16.99, 4.6, 4480, "puzzle", "#4d908e", "puzzle jigsaw game"],
    ["p33", "toys", "Cuddle Co. Plush Teddy Bear, 14 Inch", "Cuddle Co.", 19.99, 4.7, 9930, "bear", "#b5835a", "teddy bear plush stuffed toy kids"],
    ["p34", "toys", "SpeedRacer Remote Control Car, 2.4 GHz", "SpeedRacer", 32.99, 4.2, 5120, "car", "#f77f00", "remote control car rc toy kids"],
    ["p35", "toys", "Settlers of Catanza Board Game", "Catanza Games", 39.99, 4.8, 21005, "boardgame", "#c1121f", "board game family strategy"],
    ["p36", "toys", "Color Burst Washable Markers, 24 Pack", "Color Burst", 8.99, 4.7, 18820, "markers", "#3a86ff", "markers art drawing kids"],
    ["p37", "toys", "SkyHigh Kids' Kite, Rainbow Delta", "SkyHigh", 14.99, 4.3, 2210, "kite", "#ff006e", "kite outdoor toy kids"],
    ["p38", "toys", "Mindgame Wooden Chess Set with Folding Board", "Mindgame", 24.99, 4.5, 6700, "chess", "#8d5524", "chess board game strategy"],
    ["p39", "toys", "Bubble Blast Bubble Machine", "Bubble Blast", 21.99, 4.0, 3105, "bubbles", "#48cae4", "bubble machine outdoor toy kids"],
    ["p40", "toys", "Junior Science Lab Kit, 30 Experiments", "Junior Lab", 29.99, 4.4, 1430, "lab", "#52b788", "science kit experiments kids stem"],
    ["p41", "sports", "FlexFit Yoga Mat, 6 mm, Non-Slip", "FlexFit", 24.99, 4.6, 17700, "mat", "#7b2cbf", "yoga mat exercise fitness"],
    ["p42", "sports", "ZenCore Yoga Mat, 4 mm, Eco TPE", "ZenCore", 19.99, 4.3, 5210, "mat", "#2a9d8f", "yoga mat exercise fitness"],
    ["p43", "sports", "IronGrip Adjustable Dumbbells, 25 lb Pair", "IronGrip", 89.99, 4.5, 6120, "dumbbell", "#333333", "dumbbells weights fitness exercise"],
    ["p44", "sports", "HydroPeak Insulated Water Bottle, 32 oz", "HydroPeak", 29.95, 4.8, 40210, "bottle", "#0077b6", "water bottle insulated hiking"],
    ["p45", "sports", "TrailLite 2-Person Camping Tent", "TrailLite", 69.99, 4.4, 3890, "tent", "#e76f51", "tent camping outdoor hiking"],
    ["p46", "sports", "ProBounce Official Size Basketball", "ProBounce", 24.99, 4.7, 11200, "ball", "#e85d04", "basketball ball sports"],
    ["p47", "sports", "Summit 40L Hiking Backpack", "Summit", 54.99, 4.5, 4330, "backpack", "#386641", "backpack hiking camping bag"],
    ["p48", "sports", "FlexFit Resistance Bands, Set of 5", "FlexFit", 15.99, 4.4, 22340, "bands", "#f4a261", "resistance bands exercise fitness"],
    ["p49", "sports", "PureMotion Yoga Mat, 8 mm Extra Thick", "PureMotion", 34.99, 4.7, 8830, "mat", "#4361ee", "yoga mat exercise fitness thick"],
    ["p50", "sports", "SwiftJump Speed Jump Rope", "SwiftJump", 9.99, 4.5, 12010, "rope", "#d00000", "jump rope fitness exercise"],
    ["p51", "fashion", "Everyday Men's Crew Neck T-Shirt, 3 Pack", "Everyday", 21.99, 4.5, 33010, "shirt", "#264653", "t-shirt shirt men clothing"],
    ["p52", "fashion", "StrideMax Women's Running Shoes", "StrideMax", 64.99, 4.6, 9120, "shoe", "#ff4d6d", "shoes running sneakers women"],
    ["p53", "fashion", "Northline Men's Waterproof Rain Jacket", "Northline", 49.99, 4.4, 5540, "jacket", "#2b9348", "jacket rain coat men clothing"],
    ["p54", "fashion", "Cozy Knit Beanie Hat", "Cozy Knit", 12.99, 4.7, 14080, "beanie", "#9d0208", "beanie hat winter"],
    ["p55", "fashion", "StrideMax Men's Trail Running Shoes", "StrideMax", 74.99, 4.5, 4410, "shoe", "#3a5a40", "shoes running trail sneakers men"],
    ["p56", "fashion", "ComfortStep Athletic Socks, 6 Pairs", "ComfortStep", 14.99, 4.6, 25010, "socks", "#e9ecef", "socks athletic"],
    ["p57", "fashion", "Everyday Women's Fleece Hoodie", "Everyday", 34.99, 4.5, 7830, "hoodie", "#6d597a", "hoodie sweatshirt fleece women clothing"],
    ["p58", "fashion", "Classic Denim Jeans, Slim Fit", "Classic Denim", 39.99, 4.3, 6620, "jeans", "#1d3557", "jeans denim pants clothing"],
    ["p59", "fashion", "SunGuard Polarized Sunglasses", "SunGuard", 18.99, 4.2, 3900, "sunglasses", "#222222", "sunglasses polarized"],
    ["p60", "fashion", "Urban Canvas Baseball Cap", "Urban Canvas", 15.99, 4.4, 4020, "cap", "#bc4749", "cap hat baseball"],
  ];

  // "About this item" bullets per art kind (the first line is shared by the department's items).
  const ABOUT = {
    electronics: "Backed by a 1-year limited warranty and 30-day returns.",
    home: "Dishwasher-safe parts and easy to clean; 2-year warranty.",
    books: "Ships in protective packaging; eligible for free returns.",
    toys: "Tested to meet US toy safety standards; for ages 6 and up.",
    sports: "Built for daily training, camping and the gym.",
    fashion: "Machine washable; true to size (see the size chart).",
  };

  function product(row) {
    const p = {
      id: row[0], department: row[1], name: row[2], brand: row[3], price: row[4], rating: row[5],
      ratingsCount: row[6], kind: row[7], color: row[8], tags: row[9],
    };
    p.byline = row[1] === "books" ? "by " + p.brand + " (Author)" : "Visit the " + p.brand + " Store";
    p.about = [
      p.name.split(",")[0] + " from " + p.brand + ", rated " + p.rating + " out of 5 by " + p.ratingsCount.toLocaleString("en-US") + " customers.",
      ABOUT[row[1]],
      "FREE delivery on orders over $35 shipped by Omnizon.",
    ];
    return p;
  }

  // REAL's v2 Omnizon tasks (real-offline.omnizon-<n>, config.dataset "real") name products by
  // REAL's ids ("16" the PS5 controller, "212"/"215" the cooking pots, ...): those products, with
  // distractors, replace the local items that would answer a REAL goal yet carry no REAL id.
  const REAL_ROWS = [
    ["16", "electronics", "PlayStation DualSense Wireless Controller for PS5, Midnight Black", "PlayStation", 69.99, 4.8, 41230, "mouse", "#1b1b1f", "ps5 controller gaming gamepad wireless playstation"],
    ["15", "electronics", "PlayStation 5 Console, Digital Edition", "PlayStation", 449.99, 4.8, 18820, "tablet", "#f2f2f2", "ps5 console gaming playstation video game"],
    ["18", "electronics", "Xbox Wireless Controller, Carbon Black", "Xbox", 59.99, 4.7, 30110, "mouse", "#2b2b2b", "xbox controller gaming gamepad wireless"],
    ["192", "electronics", "RetroPlay Handheld Gaming Console with 400 Classic Games", "RetroPlay", 39.99, 4.3, 6120, "tablet", "#d62828", "gaming console handheld retro video game"],
    ["193", "electronics", "HyperStrike Gaming Headset with Microphone for PS5 and PC", "HyperStrike", 49.99, 4.4, 9050, "headphones", "#222222", "gaming headset headphones microphone ps5"],
    ["40", "electronics", "SoundCore Q30 Over-Ear Headphones, Active Noise Cancelling", "SoundCore", 79.99, 4.5, 22010, "headphones", "#37474f", "headphones over-ear noise cancelling bluetooth audio"],
    ["41", "electronics", "BassBuds Wired In-Ear Earbuds with Mic", "BassBuds", 9.99, 4.0, 5230, "earbuds", "#fafafa", "earbuds wired in-ear audio"],
    ["42", "electronics", "StudioPro Wireless Headphones, Hi-Res Audio", "StudioPro", 249.99, 4.6, 3010, "headphones", "#8d99ae", "headphones wireless hi-res audio premium"],
    ["114", "sports", "Champion Sports Ball Pack: Soccer Ball, Basketball, Football and Volleyball", "Champion Sports", 59.99, 4.6, 2870, "ball", "#e85d04", "sports balls ball pack soccer basketball football volleyball"],
    ["159", "home", "Coleshome 40 Inch Computer Desk, Modern Simple Style Office Desk", "Coleshome", 69.99, 4.5, 15230, "lamp", "#8d5524", "desk computer desk office table 40 inch"],
    ["158", "home", "Coleshome 55 Inch Computer Desk with Storage Shelf", "Coleshome", 99.99, 4.4, 6120, "lamp", "#5c3d2e", "desk computer desk office table 55 inch"],
    ["160", "home", "ErgoSeat Ergonomic Office Chair, Mesh Back with Lumbar Support", "ErgoSeat", 129.99, 4.3, 11020, "lamp", "#333333", "office chair desk chair ergonomic"],
    ["167", "home", "TravelRest Memory Foam Neck Pillow", "TravelRest", 24.99, 4.4, 8810, "pillow", "#5a7d9a", "neck pillow memory foam travel pain support"],
    ["170", "home", "CloudNeck Cervical Neck Pillow for Neck Pain Relief", "CloudNeck", 34.99, 4.3, 5120, "pillow", "#f0efeb", "neck pillow cervical pain relief support sleep"],
    ["212", "home", "Cuisinart 8-Quart Stainless Steel Stock Pot with Cover", "Cuisinart", 49.99, 4.7, 12840, "pot", "#c0c4c8", "cooking pot stock pot stockpot cookware kitchen"],
    ["215", "home", "Lodge 6-Quart Enameled Cast Iron Dutch Oven Cooking Pot", "Lodge", 79.99, 4.8, 30120, "pot", "#c1121f", "cooking pot dutch oven cookware kitchen"],
    ["91", "home", "Hudson Durable Goods Chef Apron with Pockets, Adjustable", "Hudson", 19.99, 4.6, 14020, "shirt", "#3d405b", "apron kitchen cooking chef"],
    ["230", "home", "Flatware Silverware Set, 20 Pieces, Service for 4 (Spoons, Forks, Knives)", "Lianyu", 24.99, 4.7, 25010, "knife", "#b0b0b0", "silverware flatware cutlery set spoons forks knives"],
    ["250", "home", "Zinus Queen Size Metal Platform Bed Frame", "Zinus", 159.99, 4.5, 62010, "pillow", "#444444", "bed frame queen platform metal bedroom"],
    ["251", "home", "Zinus Twin Size Metal Bed Frame", "Zinus", 99.99, 4.4, 18020, "pillow", "#555555", "bed frame twin metal bedroom"],
  ];
  // The local items REAL's goals would otherwise match (a stock pot, a saucepan, a basketball).
  const REAL_REPLACES = ["p11", "p19", "p46"];
  // The page builds its catalog before HALO knows the episode, so it reads the episode's config
  // (written by /config) from storage itself.
  const META = JSON.parse(localStorage.getItem("halo:omnizon:meta") || "{}");
  const REAL = ((META && META.config) || {}).dataset === "real";
  /* Perturbed starts: a non-zero episode seed adds two of these clothing items to the catalog, which no goal, REAL script or task search can reach (no pot, mat, book, ball,
   * pillow, desk, chair, bed, apron, headphones, gaming ...); seed 0 adds none. */
  const DISTRACTOR_ROWS = [
    ["x01", "fashion", "Harbor Linen Button-Down Shirt, Sand", "Harbor", 29.99, 4.3, 2140, "shirt", "#d4a373", "shirt linen button-down men clothing"],
    ["x02", "fashion", "Meadow Women's Canvas Sneakers, White", "Meadow", 44.99, 4.4, 3380, "shoe", "#dee2e6", "sneakers canvas shoes women"],
    ["x03", "fashion", "Alpine Merino Wool Scarf", "Alpine", 22.99, 4.6, 1870, "beanie", "#6c757d", "scarf wool merino winter"],
  ];
  const CATALOG = (REAL ?
    ROWS.filter(function (r) { return REAL_REPLACES.indexOf(r[0]) === -1; }).concat(REAL_ROWS) : ROWS).map(product);
  const DISTRACTORS = DISTRACTOR_ROWS.map(product);
  // Read at each call, not when the page loads: the environment rewinds a parked page into an
  // episode of another seed without reloading it.
  let seeded = { seed: 0, list: CATALOG };
  function catalog() {
    const seed = Number(HALO.meta().seed || 0);
    if (seeded.seed !== seed) seeded = { seed: seed, list: seed ? CATALOG.concat(HALO.rng(seed).shuffle(DISTRACTORS).slice(0, 2)) : CATALOG };
    return seeded.list;
  }
  const BY_ID = {};
  CATALOG.concat(DISTRACTORS).forEach(function (p) { BY_ID[p.id] = p; });

  function line(id, quantity) {
    const p = BY_ID[id];
    return { id: id, name: p.name, price: p.price, quantity: quantity };
  }
  function cents(x) {
    return Math.round(x * 100) / 100;
  }

  const PAST_ORDERS = [
    { id: "112-0447821-5530120", date: "2024-07-02", status: "Delivered July 5", items: [line("p44", 1), line("p56", 2)] },
    { id: "112-7720156-1184409", date: "2024-06-18", status: "Delivered June 21", items: [line("p22", 1)] },
  ];

  HALO.defineSite({
    site: "omnizon",
    collections: { cart: "cart.items", orders: "order.orders" },
    me: { name: "Alex Morgan", city: "Seattle 98101" },
    today: "2024-07-15",
    departments: DEPARTMENTS,
    get catalog() { return catalog(); },
    product: function (id) { return BY_ID[id] || null; },
    cents: cents,
    line: line,
    initialState: function (seed, config) {
      if (config.dataset === "real") {
        // REAL's state also holds the path and the search (its eval scripts read both).
        return {
          cart: { items: {} }, order: { orders: {} }, router: { location: { pathname: "/" } },
          filter: { searchQuery: "", searchInputValue: "" },
        };
      }
      const items = {};
      Object.keys(config.cart || {}).sort().forEach(function (id) {
        if (BY_ID[id]) items[id] = line(id, Number(config.cart[id]) || 1);
      });
      const orders = {};
      PAST_ORDERS.forEach(function (o) {
        const subtotal = cents(o.items.reduce(function (s, it) { return s + it.price * it.quantity; }, 0));
        orders[o.id] = {
          id: o.id, date: o.date, status: o.status, items: HALO.clone(o.items), subtotal: subtotal, total: subtotal,
          shippingAddress: { fullName: "Alex Morgan", street: "410 Pine Street, Apt 5", city: "Seattle", state: "WA", zip: "98101" },
          payment: { method: "card", cardLast4: "4242", nameOnCard: "Alex Morgan", expiry: "09/27" },
        };
      });
      return { cart: { items: items }, order: { orders: orders } };
    },
    initialView: function () {
      return { route: null, search: "", qty: 1, checkout: null, added: null, sortOpen: false };
    },
  });
})();
