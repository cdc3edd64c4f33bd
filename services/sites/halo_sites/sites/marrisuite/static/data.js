/* Marrisuite's data: 30 hotels in 8 destinations, each with three room types and fixed nightly
 * rates, and the member Jordan Lee's two upcoming stays. "Today" is Monday 2024-07-15 and the
 * clock never moves. State (what /finish diffs):
 *   router.location {pathname, search}   the page the member is on, as the real site's URL
 *   search {destination, checkIn, checkOut, rooms, guests, roomsGuests}   the last hotel search
 *   reservations.<id> {id, confirmationNumber, hotelId, hotelName, roomId, roomName, checkIn,
 *                      checkOut, nights, rooms, guests, guestName, email, total, status}
 *   ui.notification                      the banner the last action showed ("" when none)
 * The episode seed (0 = canonical) reorders the recommended list and adds a few distractor
 * hotels outside Goleta, never changing a fact a goal relies on. */
(function () {
  "use strict";

  // [code, city, state, country label]
  const CITIES = [
    ["gol", "Goleta", "CA", "Goleta, California, USA"], ["sba", "Santa Barbara", "CA", "Santa Barbara, California, USA"],
    ["sfo", "San Francisco", "CA", "San Francisco, California, USA"], ["lax", "Los Angeles", "CA", "Los Angeles, California, USA"],
    ["nyc", "New York", "NY", "New York, New York, USA"], ["chi", "Chicago", "IL", "Chicago, Illinois, USA"],
    ["mia", "Miami", "FL", "Miami, Florida, USA"], ["aus", "Austin", "TX", "Austin, Texas, USA"],
  ];
  // [id, city code, name, brand, street, miles from center, rating, reviews, base rate, amenities]
  const HOTELS = [
    ["gol-courtfield", "gol", "Courtfield Santa Barbara Goleta", "Courtfield", "401 Storke Rd", 1.2, 4.4, 1184, 189, ["Free Wi-Fi", "Pool", "Fitness Center", "Restaurant"]],
    ["gol-residence", "gol", "Residence Suites Santa Barbara Goleta", "Residence Suites", "6350 Hollister Ave", 0.8, 4.5, 962, 209, ["Free Breakfast", "Kitchen", "Free Wi-Fi", "Pet Friendly"]],
    ["gol-ritz", "gol", "The Ritz-Carlyle Bacara, Santa Barbara", "Ritz-Carlyle", "8301 Hollister Ave", 3.4, 4.8, 2310, 695, ["Beachfront", "Spa", "Pool", "Golf"]],
    ["gol-ac", "gol", "AC Hotel Goleta Airport", "AC Hotels", "5650 Calle Real", 1.9, 4.2, 540, 169, ["Free Wi-Fi", "Bar", "Fitness Center", "Airport Shuttle"]],
    ["gol-fairfield", "gol", "Fairfield Stays Goleta", "Fairfield Stays", "6021 Hollister Ave", 1.5, 4.1, 688, 149, ["Free Breakfast", "Free Wi-Fi", "Pool", "Free Parking"]],
    ["sba-sheraville", "sba", "Sheraville Santa Barbara Harbor", "Sheraville", "1 Cabrillo Blvd", 0.6, 4.3, 1502, 259, ["Ocean View", "Pool", "Restaurant", "Free Wi-Fi"]],
    ["sba-westmark", "sba", "Westmark Santa Barbara Downtown", "Westmark", "12 State St", 0.3, 4.5, 1340, 319, ["Rooftop Bar", "Spa", "Free Wi-Fi", "Valet Parking"]],
    ["sba-springhill", "sba", "SpringHill Stays Santa Barbara", "SpringHill Stays", "220 Castillo St", 1.1, 4.0, 410, 199, ["Free Breakfast", "Free Wi-Fi", "Pool"]],
    ["sfo-marquis", "sfo", "Marrisuite Marquis San Francisco", "Marrisuite", "780 Mission St", 0.4, 4.4, 5120, 289, ["Restaurant", "Fitness Center", "Free Wi-Fi", "Bar"]],
    ["sfo-courtfield", "sfo", "Courtfield San Francisco Union Square", "Courtfield", "299 2nd St", 0.7, 4.1, 1780, 219, ["Free Wi-Fi", "Fitness Center", "Restaurant"]],
    ["sfo-westmark", "sfo", "Westmark San Francisco Embarcadero", "Westmark", "55 Cyril Magnin St", 0.9, 4.6, 2033, 349, ["Bay View", "Spa", "Restaurant"]],
    ["sfo-ac", "sfo", "AC Hotel San Francisco SoMa", "AC Hotels", "1050 Howard St", 1.3, 4.2, 860, 199, ["Bar", "Free Wi-Fi", "Fitness Center"]],
    ["lax-courtfield", "lax", "Courtfield Los Angeles LAX", "Courtfield", "6161 W Century Blvd", 12.1, 4.0, 2400, 159, ["Airport Shuttle", "Pool", "Free Wi-Fi"]],
    ["lax-ritz", "lax", "The Ritz-Carlyle Los Angeles", "Ritz-Carlyle", "900 W Olympic Blvd", 0.8, 4.7, 1810, 529, ["Rooftop Pool", "Spa", "Restaurant"]],
    ["lax-residence", "lax", "Residence Suites Los Angeles Downtown", "Residence Suites", "901 W Olympic Blvd", 0.9, 4.3, 990, 249, ["Kitchen", "Free Breakfast", "Free Wi-Fi"]],
    ["lax-sheraville", "lax", "Sheraville Grand Los Angeles", "Sheraville", "711 S Hope St", 0.5, 4.2, 1430, 239, ["Pool", "Restaurant", "Fitness Center"]],
    ["nyc-marquis", "nyc", "Marrisuite Marquis New York Times Square", "Marrisuite", "1535 Broadway", 0.2, 4.5, 8120, 399, ["Restaurant", "Fitness Center", "Bar"]],
    ["nyc-courtfield", "nyc", "Courtfield New York Manhattan Midtown", "Courtfield", "866 3rd Ave", 0.9, 4.0, 2210, 279, ["Free Wi-Fi", "Fitness Center"]],
    ["nyc-westmark", "nyc", "Westmark New York Grand Central", "Westmark", "135 E 45th St", 0.4, 4.4, 3020, 459, ["Spa", "Restaurant", "Bar"]],
    ["nyc-ac", "nyc", "AC Hotel New York Downtown", "AC Hotels", "151 Maiden Ln", 2.1, 4.3, 1190, 309, ["Bar", "Free Wi-Fi", "Fitness Center"]],
    ["chi-westmark", "chi", "Westmark Chicago Downtown", "Westmark", "540 N Michigan Ave", 0.5, 4.4, 3560, 269, ["Pool", "Restaurant", "Fitness Center"]],
    ["chi-residence", "chi", "Residence Suites Chicago River North", "Residence Suites", "410 N Dearborn St", 0.8, 4.3, 1020, 229, ["Kitchen", "Free Breakfast", "Free Wi-Fi"]],
    ["chi-sheraville", "chi", "Sheraville Grand Chicago Riverwalk", "Sheraville", "301 E North Water St", 0.7, 4.2, 2710, 249, ["River View", "Pool", "Restaurant"]],
    ["mia-ritz", "mia", "The Ritz-Carlyle South Beach", "Ritz-Carlyle", "1 Lincoln Rd", 2.4, 4.7, 2980, 589, ["Beachfront", "Spa", "Pool"]],
    ["mia-courtfield", "mia", "Courtfield Miami Downtown Brickell", "Courtfield", "200 SE 2nd Ave", 0.4, 4.1, 1480, 199, ["Pool", "Free Wi-Fi", "Fitness Center"]],
    ["mia-ac", "mia", "AC Hotel Miami Wynwood", "AC Hotels", "3400 NE 2nd Ave", 2.0, 4.3, 720, 229, ["Rooftop Bar", "Pool", "Free Wi-Fi"]],
    ["aus-westmark", "aus", "Westmark Austin Congress", "Westmark", "304 E Cesar Chavez St", 0.3, 4.5, 2090, 299, ["Rooftop Pool", "Restaurant", "Bar"]],
    ["aus-residence", "aus", "Residence Suites Austin Downtown", "Residence Suites", "300 E 4th St", 0.4, 4.4, 1310, 239, ["Kitchen", "Free Breakfast", "Pool"]],
    ["aus-fairfield", "aus", "Fairfield Stays Austin University Area", "Fairfield Stays", "2700 Guadalupe St", 1.8, 4.0, 530, 159, ["Free Breakfast", "Free Parking", "Free Wi-Fi"]],
    ["sba-residence", "sba", "Residence Suites Santa Barbara Mesa", "Residence Suites", "1601 Cliff Dr", 2.2, 4.2, 380, 229, ["Kitchen", "Free Breakfast", "Free Wi-Fi"]],
  ];
  // Distractors a seed may add: only outside Goleta, and never the cheapest anywhere a goal asks about.
  const EXTRA = [
    ["sfo-springhill", "sfo", "SpringHill Stays San Francisco Oyster Point", "SpringHill Stays", "191 Oyster Point Blvd", 9.4, 3.9, 420, 209, ["Free Breakfast", "Free Parking"]],
    ["nyc-springhill", "nyc", "SpringHill Stays New York Chelsea", "SpringHill Stays", "112 W 25th St", 1.6, 4.1, 640, 289, ["Free Breakfast", "Free Wi-Fi"]],
    ["chi-ac", "chi", "AC Hotel Chicago Magnificent Mile", "AC Hotels", "630 N Rush St", 0.6, 4.2, 810, 259, ["Bar", "Fitness Center"]],
    ["aus-sheraville", "aus", "Sheraville Austin at the Capitol", "Sheraville", "701 E 11th St", 0.6, 4.1, 1200, 269, ["Pool", "Restaurant"]],
  ];
  const ROOMS = [["king", "Guest room, 1 King", 1, "1 King bed, sofa bed, 325 sq ft"], ["queen2", "Guest room, 2 Queen", 1.06, "2 Queen beds, 350 sq ft"], ["suite", "Suite, 1 King, Sofa bed", 1.6, "1 King bed, separate living area, 540 sq ft"]];

  function hotel(h) {
    const c = CITIES.filter(function (x) { return x[0] === h[1]; })[0];
    return {
      id: h[0], city: c[1], state: c[2], cityCode: c[0], name: h[2], brand: h[3], address: h[4] + ", " + c[1] + ", " + c[2],
      miles: h[5], rating: h[6], reviews: h[7], rate: h[8], amenities: h[9],
      rooms: ROOMS.map(function (r) { return { id: r[0], name: r[1], rate: Math.round(h[8] * r[2]), beds: r[3] }; }),
    };
  }
  function hotels(seed) {
    const extra = seed ? HALO.rng(seed * 13 + 5).shuffle(EXTRA).slice(0, 2) : [];
    return HOTELS.concat(extra).map(hotel);
  }

  const TRIPS = [
    { id: "res-1001", confirmationNumber: "84120937", hotelId: "chi-westmark", hotelName: "Westmark Chicago Downtown", roomId: "king", roomName: "Guest room, 1 King",
      checkIn: "2024-08-12", checkOut: "2024-08-14", nights: 2, rooms: 1, guests: 1, guestName: "Jordan Lee", email: "jordan.lee@example.com", total: 538, status: "confirmed" },
    { id: "res-1002", confirmationNumber: "84125518", hotelId: "mia-courtfield", hotelName: "Courtfield Miami Downtown Brickell", roomId: "queen2", roomName: "Guest room, 2 Queen",
      checkIn: "2024-09-05", checkOut: "2024-09-08", nights: 3, rooms: 1, guests: 3, guestName: "Jordan Lee", email: "jordan.lee@example.com", total: 633, status: "confirmed" },
  ];

  let cache = null;
  HALO.defineSite({
    site: "marrisuite",
    collections: { reservations: "reservations" },
    member: { name: "Jordan Lee", email: "jordan.lee@example.com", points: "48,210" },
    cities: CITIES.map(function (c) { return { code: c[0], city: c[1], state: c[2], label: c[3] }; }),
    hotels: function () {
      const seed = Number(HALO.meta().seed || 0);
      if (!cache || cache.seed !== seed) cache = { seed: seed, list: hotels(seed) };
      return cache.list;
    },
    initialState: function () {
      const reservations = {};
      TRIPS.forEach(function (t) { reservations[t.id] = HALO.clone(t); });
      return {
        router: { location: { pathname: "/", search: "" } },
        search: { destination: "", checkIn: "", checkOut: "", rooms: 1, guests: 1, roomsGuests: "1 Room, 1 Guest" },
        reservations: reservations,
        ui: { notification: "" },
      };
    },
    initialView: function () { return { form: null, guest: null, modal: null }; },
  });
})();
