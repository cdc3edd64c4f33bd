/* UDriver's data: places in San Francisco a rider can be picked up at or dropped off at, the ride
 * types with their pricing, and the rider Alex Morgan's wallet (Udriver Credits $25.50, a Visa card
 * ending 4242, cash) and past trips. "Now" is Monday 7/15/2024, 10:30 AM and the clock never moves.
 *
 * A ride's price is REAL's formula: (pickup.basePrice + destination.basePrice) * multiplier *
 * (1 - discount), so a place's basePrice is what it adds to any trip from or to it. The places REAL's
 * v2 eval scripts name keep REAL's ids and identifiers (22nd & Irving 129/SPR, Club X 201, Fox Plaza
 * Apartments 723, 388 Beale 739, Amber India 52, 1 Hotel San Francisco 699, 100 Van Ness 717,
 * Ai Electronics Center.Com 370/RF1, 333 Fremont Apartments 733/DLO).
 *
 * The episode seed (never the facts a goal states) perturbs the start: seed 0 is the canonical
 * state; another seed adds three unrelated places and two unrelated past trips, shuffles the order
 * the suggested places and ride types are listed in, and shifts the ride panel a few pixels. */
(function () {
  "use strict";

  // [id, identifier, name, street, zip, category, basePrice, x, y, aliases]; x, y on the map (0..1).
  const PLACES = [
    [129, "SPR", "22nd & Irving", "2101 Irving St", "94122", "Neighborhood", 8.4, 0.27, 0.5, "22 and irving, 22nd and irving"],
    [201, "CLX", "Club X", "1133 Mission St", "94103", "Nightclub", 12.1, 0.8, 0.5, ""],
    [723, "FPA", "Fox Plaza Apartments", "1390 Market St", "94102", "Apartments", 14.3, 0.745, 0.505, ""],
    [739, "BEA", "388 Beale", "388 Beale St", "94105", "Apartments", 7.0, 0.93, 0.4, ""],
    [52, "AMB", "Amber India", "25 Yerba Buena Ln", "94103", "Indian restaurant", 8.2, 0.865, 0.425, ""],
    [699, "HSF", "1 Hotel San Francisco", "8 Mission St", "94105", "Hotel", 7.8, 0.955, 0.345, ""],
    [717, "VNS", "100 Van Ness", "100 Van Ness Ave", "94102", "Office building", 8.6, 0.735, 0.475, ""],
    [370, "RF1", "Ai Electronics Center.Com", "2066 Mission St", "94110", "Electronics store", 9.5, 0.715, 0.625, ""],
    [733, "DLO", "333 Fremont Apartments", "333 Fremont St", "94105", "Apartments", 7.2, 0.925, 0.385, ""],
    [611, "CSR", "1001 Castro Street", "1001 Castro St", "94114", "Residence", 9.9, 0.6, 0.67, ""],
    [688, "PSA", "1030 Post Street Apartments", "1030 Post St", "94109", "Apartments", 6.2, 0.76, 0.385, ""],
    [640, "CHN", "1000 Chestnut Street", "1000 Chestnut St", "94109", "Apartments", 8.8, 0.745, 0.14, ""],
    [415, "RTF", "Rooftop 25", "25 Lusk St", "94107", "Bar", 10.4, 0.895, 0.545, ""],
    [233, "AIC", "Aaha Indian Cuisine", "1221 Polk St", "94109", "Indian restaurant", 13.7, 0.755, 0.36, ""],
    [302, "CLM", "Casa Loma Hotel", "610 Fillmore St", "94117", "Hotel", 16.3, 0.665, 0.48, ""],
    [512, "SEV", "7-Eleven", "1950 Irving St", "94122", "Convenience store", 6.5, 0.305, 0.5, "7/11, 711, seven eleven, 7 eleven"],
    [513, "SEG", "7-Eleven", "860 Geary St", "94109", "Convenience store", 7.1, 0.775, 0.4, "7/11, 711, seven eleven, 7 eleven"],
    [514, "SES", "7-Eleven", "2300 16th St", "94103", "Convenience store", 7.7, 0.79, 0.59, "7/11, 711, seven eleven, 7 eleven"],
    [380, "GGA", "Golden Gate Apartments", "750 Golden Gate Ave", "94102", "Apartments", 8.0, 0.72, 0.445, ""],
    [441, "CBE", "Chase Bank", "2 Embarcadero Center", "94111", "Bank", 7.5, 0.93, 0.3, ""],
    [442, "CBF", "Chase Bank", "1801 Fillmore St", "94115", "Bank", 8.9, 0.65, 0.38, ""],
    [738, "TRK", "201 Turk Street Apartments", "201 Turk St", "94102", "Apartments", 6.8, 0.775, 0.44, ""],
    [254, "C26", "Club 26 Mix", "3024 Mission St", "94110", "Nightclub", 11.5, 0.72, 0.7, ""],
    [101, "FRY", "Ferry Building", "1 Ferry Building", "94111", "Landmark", 7.4, 0.96, 0.31, ""],
    [102, "ORP", "Oracle Park", "24 Willie Mays Plaza", "94107", "Ballpark", 9.2, 0.95, 0.5, "giants stadium"],
    [103, "SFT", "Salesforce Tower", "415 Mission St", "94105", "Office building", 7.6, 0.915, 0.37, ""],
    [104, "USQ", "Union Square", "333 Post St", "94108", "Shopping", 6.9, 0.85, 0.36, ""],
    [105, "P39", "Pier 39", "Beach St & The Embarcadero", "94133", "Attraction", 9.8, 0.84, 0.1, ""],
    [106, "SFO", "San Francisco International Airport (SFO)", "780 S Airport Blvd", "94128", "Airport", 32.0, 0.9, 0.97, "sfo, airport"],
    [107, "CHC", "Chase Center", "1 Warriors Way", "94158", "Arena", 10.1, 0.965, 0.6, "warriors"],
    [108, "GGB", "Golden Gate Bridge Welcome Center", "Golden Gate Bridge", "94129", "Landmark", 14.5, 0.3, 0.05, ""],
    [109, "GGP", "Golden Gate Park", "501 Stanyan St", "94117", "Park", 10.8, 0.42, 0.5, ""],
    [110, "MSC", "Moscone Center", "747 Howard St", "94103", "Convention center", 7.9, 0.88, 0.44, ""],
    [111, "CTT", "Coit Tower", "1 Telegraph Hill Blvd", "94133", "Landmark", 9.0, 0.86, 0.16, ""],
    [112, "PFA", "Palace of Fine Arts", "3601 Lyon St", "94123", "Landmark", 12.4, 0.5, 0.13, ""],
    [113, "TWP", "Twin Peaks", "501 Twin Peaks Blvd", "94114", "Viewpoint", 13.2, 0.55, 0.64, ""],
    [114, "MDP", "Mission Dolores Park", "19th St & Dolores St", "94114", "Park", 9.6, 0.7, 0.61, ""],
  ];
  // Added by a non-zero seed: places no task or eval script refers to.
  const EXTRA_PLACES = [
    [901, "ALS", "Alamo Square", "Steiner St & Hayes St", "94117", "Park", 10.2, 0.66, 0.5, ""],
    [902, "LEL", "Lands End Lookout", "680 Point Lobos Ave", "94121", "Viewpoint", 15.1, 0.04, 0.3, ""],
    [903, "STG", "Stonestown Galleria", "3251 20th Ave", "94132", "Shopping", 14.8, 0.3, 0.86, ""],
    [904, "JPP", "Japantown Peace Plaza", "1610 Geary Blvd", "94115", "Landmark", 8.7, 0.68, 0.4, ""],
    [905, "GHS", "Ghirardelli Square", "900 North Point St", "94109", "Shopping", 9.4, 0.74, 0.11, ""],
    [906, "YBG", "Yerba Buena Gardens", "750 Howard St", "94103", "Park", 7.3, 0.875, 0.45, ""],
  ];
  const SUGGESTED = [101, 104, 102, 103, 105, 106];

  // REAL's config.udriver.cars: what eval_udriver_20 prices the rides with.
  const CARS = {
    UdriverX: { type: "UdriverX", name: "UdriverX", multiplier: 1, discount: 0, seats: 4, eta: 4, description: "Affordable rides, all to yourself" },
    UdriverComfort: { type: "UdriverComfort", name: "Comfort", multiplier: 1.25, discount: 0.25, seats: 4, eta: 6, description: "Newer cars with extra legroom" },
    UdriverXL: { type: "UdriverXL", name: "UdriverXL", multiplier: 1.6, discount: 0.1, seats: 6, eta: 7, description: "Affordable rides for groups up to 6" },
    UdriverBlack: { type: "UdriverBlack", name: "Black", multiplier: 2.2, discount: 0, seats: 4, eta: 9, description: "Premium rides in luxury cars" },
  };
  const CAR_ORDER = ["UdriverX", "UdriverComfort", "UdriverXL", "UdriverBlack"];

  function place(p) {
    const formatted = p[3] + ", San Francisco, CA " + p[4];
    return {
      id: p[0], identifier: p[1], name: p[2], address: formatted, formattedAddress: formatted + ", USA",
      addressComponents: { street: p[3], city: "San Francisco", state: "CA", zipCode: p[4], country: "USA" },
      category: p[5], basePrice: p[6], x: p[7], y: p[8],
      aliases: p[9] ? p[9].split(", ") : [],
    };
  }

  function round2(x) {
    return Math.round(x * 100) / 100;
  }
  function price(pickup, destination, carType) {
    const car = CARS[carType];
    const pre = (pickup.basePrice + destination.basePrice) * car.multiplier;
    return { priceWithoutDiscount: round2(pre), finalPrice: round2(pre * (1 - car.discount)) };
  }

  function seedExtras(seed) {
    if (!seed) return { places: [], order: null };
    const r = HALO.rng(seed);
    return {
      places: r.shuffle(EXTRA_PLACES).slice(0, 3),
      suggested: r.shuffle(SUGGESTED),
      cars: r.shuffle(CAR_ORDER),
      offset: 4 + r.int(4) * 4,
    };
  }

  function places(seed) {
    return PLACES.concat(seedExtras(seed).places).map(place);
  }
  function placeById(seed, id) {
    return places(seed).filter(function (p) { return p.id === id; })[0];
  }

  const PAYMENT_METHODS = [
    { id: "wallet", type: "wallet", displayName: "Udriver Credits", isDefault: true },
    { id: "1", type: "credit", brand: "Visa", last4: "4242", expiry: "08/27", displayName: "Visa •••• 4242", isDefault: false },
    { id: "cash", type: "cash", displayName: "Cash", isDefault: false },
  ];
  function paymentRef(m) {
    // What a ride carries: the method without its default flag.
    const out = { id: m.id, type: m.type, displayName: m.displayName };
    if (m.last4) { out.brand = m.brand; out.last4 = m.last4; }
    return out;
  }

  const DRIVERS = [
    ["Marcus", "Toyota Camry", "Silver", "8ABC123", 4.92], ["Priya", "Honda Accord", "Black", "7XYZ482", 4.95],
    ["Diego", "Toyota Prius", "White", "9LMN305", 4.88], ["Hannah", "Tesla Model 3", "Blue", "8TES771", 4.97],
    ["Omar", "Chevrolet Suburban", "Black", "6SUV902", 4.9], ["Lena", "Kia Sorento", "Gray", "7KIA218", 4.93],
  ];

  // [trip id, pickup id, destination id, car, payment id, date, time]
  const PAST_TRIPS = [
    ["trip-1", 104, 106, "UdriverXL", "1", "7/2/2024", "6:15 AM"],
    ["trip-2", 101, 102, "UdriverX", "wallet", "7/9/2024", "5:40 PM"],
    ["trip-3", 103, 105, "UdriverComfort", "1", "7/12/2024", "12:05 PM"],
  ];
  const EXTRA_TRIPS = [[104, 109, "UdriverX", "1", "6/28/2024", "9:20 AM"], [112, 111, "UdriverComfort", "1", "6/21/2024", "2:45 PM"],
    [113, 110, "UdriverX", "cash", "6/14/2024", "11:10 AM"]];

  function makeTrip(seed, id, pickup, destination, carType, method, date, time, status, n) {
    const d = DRIVERS[n % DRIVERS.length];
    const car = CARS[carType];
    return {
      id: id, pickup: pickup, destination: destination,
      car: Object.assign({ type: carType, name: car.name, seats: car.seats, multiplier: car.multiplier, discount: car.discount }, price(pickup, destination, carType)),
      paymentMethod: paymentRef(method), date: date, time: time, status: status,
      driver: { name: d[0], vehicle: d[2] + " " + d[1], plate: d[3], rating: d[4] },
    };
  }
  function tripCharge(trip, n) {
    return {
      id: "txn-" + n, date: trip.date, description: "Trip to " + trip.destination.name, type: "debit",
      amount: -trip.car.finalPrice, paymentMethod: trip.paymentMethod.displayName, tripId: trip.id,
    };
  }

  function buildState(seed) {
    const extras = seedExtras(seed);
    const methods = HALO.clone(PAYMENT_METHODS);
    const byId = function (mid) { return methods.filter(function (m) { return m.id === mid; })[0]; };
    const rows = PAST_TRIPS.slice();
    if (seed) {
      // Older than the canonical trips, between places no task is about.
      HALO.rng(seed + 7).shuffle(EXTRA_TRIPS).slice(0, 2).forEach(function (t, i) { rows.unshift(["trip-x" + (i + 1)].concat(t)); });
    }
    const trips = rows.map(function (t, i) {
      return makeTrip(seed, t[0], placeById(seed, t[1]), placeById(seed, t[2]), t[3], byId(t[4]), t[5], t[6], "completed", i + 1);
    });
    const transactions = [
      { id: "txn-0", date: "7/1/2024", description: "Wallet Top-up", type: "credit", amount: 40, paymentMethod: "Visa •••• 4242" },
    ];
    trips.forEach(function (t, i) { transactions.push(tripCharge(t, i + 1)); });
    return {
      config: { udriver: { cars: HALO.clone(CARS), currency: "USD" } },
      user: {
        id: "u1", name: "Alex Morgan", email: "alex.morgan@example.com", phone: "(415) 555-0134",
        wallet: { balance: 25.5, currency: "USD", transactions: transactions, paymentMethods: methods },
      },
      ride: {
        pickupLocation: null, dropoffLocation: null, pickupDate: null, pickupTime: null,
        selectedCar: "UdriverX", calculatedPrice: null, selectedPaymentMethod: paymentRef(methods[0]),
        trip: null, trips: trips, bookedTrip: null, bookedTrips: [],
      },
    };
  }

  // The page knows the episode's dataset before HALO has one: /config wrote it to storage.
  const META = JSON.parse(localStorage.getItem("halo:udriver:meta") || "{}");
  const REAL = ((META && META.config) || {}).dataset === "real";

  HALO.defineSite({
    site: "udriver",
    collections: { trips: "ride.trips", scheduled: "ride.bookedTrips", transactions: "user.wallet.transactions", paymentMethods: "user.wallet.paymentMethods" },
    real: REAL,
    cars: CARS,
    carOrder: function (seed) { return seedExtras(seed).cars || CAR_ORDER; },
    suggested: function (seed) { return seedExtras(seed).suggested || SUGGESTED; },
    offset: function (seed) { return seedExtras(seed).offset || 0; },
    places: places,
    price: price,
    paymentRef: paymentRef,
    makeTrip: makeTrip,
    tripCharge: tripCharge,
    buildState: buildState,
    initialState: function (seed, config) {
      // REAL's UDriver fills its stores after /config's snapshot, so its eval scripts find the
      // rider's wallet and rides under initialfinaldiff.added: the app hydrates them on first load.
      if (config.dataset === "real") return {};
      return buildState(seed);
    },
    initialView: function () {
      return { route: null, pickupText: "", dropoffText: "", active: null, when: "now", dateText: "", timeText: "", searched: false, payOpen: false, stage: null, error: "", notice: "" };
    },
  });
})();
