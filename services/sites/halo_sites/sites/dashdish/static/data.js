/* DashDish's data: twelve restaurants near 1 Market St, San Francisco, with their menus, and the
 * fee rules of the checkout. The catalog is fixed, so the facts goals state (what a store sells,
 * what it costs) stay true; the episode `seed` only reorders the store lists, adds two unrelated
 * distractor stores (a cafe, a juice bar, ...) and shifts the layout a little (seed 0: none of it).
 * The state holds the cart (`cart.cartItems`, one store at a time), the checkout choices
 * (`checkout`) and the placed orders (`cart.foodOrders`, REAL's path: its eval scripts read
 * `initialfinaldiff.added.cart.foodOrders` and `differences.foodOrders.added`). */
(function () {
  "use strict";

  // [id, name, cuisine, tags, rating, reviews, eta minutes, delivery fee, miles, colour, art, street]
  const STORES = [
    ["wingstop", "Wingstop", "Chicken Wings", "wings chicken american", 4.6, "12k+", 24, 1.49, 0.9, "#0b5e3b", "wings", "425 Mission St"],
    ["taco-boys", "Taco Boys", "Mexican", "tacos burritos mexican", 4.7, "3,400+", 19, 1.49, 0.6, "#e2571e", "taco", "88 Howard St"],
    ["golden-wok", "Golden Wok", "Chinese", "chinese noodles fried rice", 4.5, "5,100+", 28, 1.99, 1.4, "#b8262b", "noodles", "710 Kearny St"],
    ["sakura-ramen", "Sakura Ramen", "Japanese", "japanese ramen noodles", 4.8, "2,900+", 32, 2.49, 1.8, "#6b2d5c", "ramen", "1581 Webster St"],
    ["tonys-pizzeria", "Tony's Pizzeria", "Pizza", "pizza italian", 4.6, "8,200+", 27, 2.49, 1.2, "#c0392b", "pizza", "233 Columbus Ave"],
    ["jersey-subs", "Jersey Subs", "Sandwiches", "subs sandwiches deli", 4.4, "4,700+", 17, 0.99, 0.5, "#1f4e8c", "sub", "50 Fremont St"],
    ["cluck-shack", "Cluck Shack", "Chicken", "chicken sandwiches tenders", 4.5, "6,300+", 22, 1.99, 1.1, "#e8a317", "chicken", "301 Folsom St"],
    ["rotisserie-roost", "Rotisserie Roost", "American", "rotisserie chicken american", 4.3, "1,800+", 30, 2.99, 2.1, "#8a5a2b", "roast", "1200 Van Ness Ave"],
    ["burger-barn", "Burger Barn", "Burgers", "burgers fries american", 4.4, "9,600+", 21, 0.99, 0.8, "#d35400", "burger", "16 Spear St"],
    ["bombay-spice", "Bombay Spice", "Indian", "indian curry biryani", 4.7, "2,200+", 35, 2.49, 2.4, "#d68910", "curry", "1067 Valencia St"],
    ["green-leaf", "Green Leaf Salads", "Healthy", "salads healthy vegetarian", 4.6, "1,500+", 18, 1.99, 0.7, "#3f8f3a", "salad", "199 Fremont St"],
    ["sweet-crumb", "Sweet Crumb Bakery", "Desserts", "desserts bakery coffee", 4.9, "3,100+", 20, 2.99, 1.0, "#b0527d", "cake", "580 Hayes St"],
  ];
  // Stores the seed may add: they sell nothing any task is about.
  const DISTRACTORS = [
    ["morning-bun", "Morning Bun Cafe", "Breakfast", "breakfast cafe pastries", 4.5, "900+", 16, 1.99, 0.8, "#a0522d", "cake", "40 Pine St"],
    ["juice-junction", "Juice Junction", "Juice & Smoothies", "juice smoothies healthy", 4.4, "700+", 14, 1.49, 0.4, "#e67e22", "drink", "12 Drumm St"],
    ["frosty-cone", "Frosty Cone", "Ice Cream", "ice cream desserts", 4.8, "1,100+", 23, 2.49, 1.6, "#5dade2", "cake", "2790 Harrison St"],
    ["daily-grind", "Daily Grind Coffee", "Coffee", "coffee tea cafe", 4.6, "2,000+", 12, 0.99, 0.3, "#6e4b3a", "drink", "1 Ferry Building"],
  ];

  // store id -> [[section, [[item id, name, description, price or [[size, price], ...], art]]]]
  const MENUS = {
    "wingstop": [
      ["Wings", [
        ["ws-1", "Lemon Pepper Wings", "Classic bone-in wings tossed in our signature dry lemon pepper rub.", [["6 pc", 8.99], ["10 pc", 13.99], ["15 pc", 19.99]], "wings"],
        ["ws-2", "Original Hot Wings", "Bone-in wings in our cayenne-forward classic Buffalo sauce.", [["6 pc", 8.49], ["10 pc", 13.49], ["15 pc", 19.49]], "wings"],
        ["ws-3", "Garlic Parmesan Wings", "Bone-in wings with a buttery garlic and parmesan dry rub.", [["6 pc", 8.99], ["10 pc", 13.99], ["15 pc", 19.99]], "wings"],
        ["ws-4", "Mango Habanero Wings", "Sweet mango heat that builds with every bite.", [["6 pc", 8.99], ["10 pc", 13.99], ["15 pc", 19.99]], "wings"],
        ["ws-5", "Hickory Smoked BBQ Wings", "Smoky, sweet barbecue sauce on crispy bone-in wings.", [["6 pc", 8.49], ["10 pc", 13.49], ["15 pc", 19.49]], "wings"],
        ["ws-6", "Louisiana Rub Wings", "Dry-rubbed with a savory Cajun spice blend.", [["6 pc", 8.49], ["10 pc", 13.49], ["15 pc", 19.49]], "wings"],
      ]],
      ["Sides", [
        ["ws-7", "Seasoned Fries", "Hand-cut potatoes tossed in our sweet and salty seasoning.", [["Regular", 3.49], ["Large", 4.99]], "fries"],
        ["ws-8", "Cajun Fried Corn", "Corn on the cob, fried and dusted with Cajun spice.", 3.29, "side"],
        ["ws-9", "Veggie Sticks", "Fresh-cut carrots and celery.", 1.99, "salad"],
        ["ws-10", "Ranch Dip", "House-made ranch, 3.25 oz.", 0.99, "side"],
      ]],
      ["Drinks", [["ws-11", "Fountain Drink", "Choice of soda, 20 oz.", 2.49, "drink"]]],
    ],
    "taco-boys": [
      ["Tacos", [
        ["tb-1", "Carne Asada Tacos (3)", "Grilled steak, onion and cilantro on corn tortillas.", 9.49, "taco"],
        ["tb-2", "Al Pastor Tacos (3)", "Marinated pork with pineapple, onion and cilantro.", 9.49, "taco"],
        ["tb-3", "Baja Fish Tacos (2)", "Beer-battered cod, cabbage slaw and chipotle crema.", 9.99, "taco"],
      ]],
      ["Burritos & More", [
        ["tb-4", "Carne Asada Burrito", "Grilled steak, beans, salsa fresca and guacamole in a flour tortilla.", 10.99, "burrito"],
        ["tb-5", "Chicken Burrito", "Chipotle chicken, black beans, cheese and pico de gallo.", 10.49, "burrito"],
        ["tb-6", "Bean & Cheese Burrito", "Refried beans and melted jack cheese.", 7.99, "burrito"],
        ["tb-7", "Cheese Quesadilla", "Melted jack and cheddar, with sour cream.", 7.49, "burrito"],
        ["tb-8", "Loaded Nachos", "Chips, queso, beans, jalapenos, crema and pico.", 9.99, "side"],
        ["tb-9", "Chips & Guacamole", "Warm tortilla chips with fresh guacamole.", 4.99, "side"],
      ]],
      ["Drinks", [
        ["tb-10", "Horchata", "Cinnamon-sweet and served over ice, 16 oz.", 3.49, "drink"],
        ["tb-11", "Mexican Coke", "Glass bottle, 12 oz.", 3.29, "drink"],
      ]],
    ],
    "golden-wok": [
      ["Noodles", [
        ["gw-1", "Chicken Lo Mein", "Soft egg noodles stir-fried with chicken, cabbage and scallions.", 11.49, "noodles"],
        ["gw-2", "Beef Chow Fun", "Wide flat rice noodles wok-tossed with beef, bean sprouts and onion.", 13.49, "noodles"],
        ["gw-3", "Singapore Noodles", "Thin vermicelli noodles with shrimp, char siu and curry spice.", 12.49, "noodles"],
      ]],
      ["Rice & Entrees", [
        ["gw-4", "Chicken Fried Rice", "Wok-fried jasmine rice with chicken, egg, peas and carrots.", 10.99, "rice"],
        ["gw-5", "Vegetable Fried Rice", "Wok-fried jasmine rice with egg and seasonal vegetables.", 9.49, "rice"],
        ["gw-6", "General Tso's Chicken", "Crispy chicken in a sweet and spicy glaze, with steamed white rice.", 13.99, "rice"],
        ["gw-7", "Beef & Broccoli", "Tender beef and broccoli in oyster sauce, with steamed white rice.", 13.99, "rice"],
      ]],
      ["Starters & Soups", [
        ["gw-8", "Egg Rolls (2)", "Crispy rolls filled with cabbage, carrots and pork.", 4.49, "side"],
        ["gw-9", "Hot & Sour Soup", "Tofu, mushrooms and bamboo shoots in a peppery broth.", 5.49, "soup"],
        ["gw-10", "Wonton Soup", "Pork wontons and bok choy in chicken broth.", 5.99, "soup"],
      ]],
    ],
    "sakura-ramen": [
      ["Ramen", [
        ["sr-1", "Tonkotsu Ramen", "Rich pork broth, chashu pork, soft egg and thin ramen noodles.", 14.99, "ramen"],
        ["sr-2", "Spicy Miso Ramen", "Miso broth with chili oil, ground pork, corn and wavy noodles.", 14.49, "ramen"],
        ["sr-3", "Shoyu Ramen", "Clear soy broth, chicken chashu, menma and noodles.", 13.49, "ramen"],
      ]],
      ["Donburi", [
        ["sr-4", "Chicken Teriyaki Don", "Grilled chicken glazed in teriyaki over steamed rice.", 12.99, "rice"],
        ["sr-5", "Salmon Poke Bowl", "Fresh salmon, avocado, cucumber and seaweed salad over sushi rice.", 15.49, "rice"],
      ]],
      ["Small Plates", [
        ["sr-6", "Pork Gyoza (6)", "Pan-fried pork and cabbage dumplings.", 6.99, "side"],
        ["sr-7", "Edamame", "Steamed soybeans with sea salt.", 4.49, "salad"],
        ["sr-8", "Ramune Soda", "Japanese marble soda, 200 ml.", 3.29, "drink"],
      ]],
    ],
    "tonys-pizzeria": [
      ["Pizzas", [
        ["tp-1", "Cheese Pizza", "Tomato sauce and whole-milk mozzarella.", [["Small 10\"", 9.99], ["Medium 12\"", 12.99], ["Large 14\"", 15.99]], "pizza"],
        ["tp-2", "Pepperoni Pizza", "Loaded with cup-and-char pepperoni and mozzarella.", [["Small 10\"", 11.99], ["Medium 12\"", 14.99], ["Large 14\"", 18.99]], "pizza"],
        ["tp-3", "Margherita Pizza", "San Marzano tomato, fresh mozzarella and basil.", [["Small 10\"", 11.49], ["Medium 12\"", 14.49], ["Large 14\"", 17.99]], "pizza"],
        ["tp-4", "Meat Lovers Pizza", "Pepperoni, Italian sausage, ham and bacon.", [["Small 10\"", 13.99], ["Medium 12\"", 17.49], ["Large 14\"", 21.99]], "pizza"],
        ["tp-5", "Veggie Pizza", "Peppers, onions, mushrooms, olives and tomatoes.", [["Small 10\"", 12.99], ["Medium 12\"", 15.99], ["Large 14\"", 19.99]], "pizza"],
      ]],
      ["Sides & Drinks", [
        ["tp-6", "Garlic Knots (6)", "Baked dough knots brushed with garlic butter, with marinara.", 5.99, "side"],
        ["tp-7", "Caesar Salad", "Romaine, parmesan, croutons and Caesar dressing.", 7.99, "salad"],
        ["tp-8", "Buffalo Wings (8)", "Crispy wings tossed in Buffalo sauce, with blue cheese.", 10.99, "wings"],
        ["tp-9", "2-Liter Soda", "Coke, Diet Coke or Sprite.", 3.49, "drink"],
      ]],
    ],
    "jersey-subs": [
      ["Subs", [
        ["js-1", "Italian Sub", "Salami, capicola, ham and provolone with oil and vinegar.", [["6\"", 8.49], ["12\"", 14.99]], "sub"],
        ["js-2", "Turkey Club Sub", "Oven-roasted turkey, bacon, lettuce, tomato and mayo.", [["6\"", 8.29], ["12\"", 14.49]], "sub"],
        ["js-3", "Meatball Marinara Sub", "Meatballs in marinara with melted provolone.", [["6\"", 7.99], ["12\"", 13.99]], "sub"],
        ["js-4", "Chicken Bacon Ranch Sub", "Grilled chicken, bacon, cheddar and ranch.", [["6\"", 8.99], ["12\"", 15.49]], "sub"],
        ["js-5", "Veggie Delight Sub", "Lettuce, tomato, cucumber, peppers, onions and provolone.", [["6\"", 6.99], ["12\"", 11.99]], "sub"],
      ]],
      ["Extras", [
        ["js-6", "Kettle Chips", "Sea salt, 1.5 oz.", 1.79, "side"],
        ["js-7", "Chocolate Chip Cookie", "Baked fresh every morning.", 1.49, "cake"],
        ["js-8", "Fountain Drink", "Choice of soda, 21 oz.", 2.29, "drink"],
      ]],
    ],
    "cluck-shack": [
      ["Chicken", [
        ["cs-1", "Crispy Chicken Sandwich", "Buttermilk-fried chicken breast, pickles and mayo on a toasted brioche bun.", 7.99, "chicken"],
        ["cs-2", "Spicy Chicken Sandwich", "Fried chicken breast in Nashville hot oil, slaw and pickles.", 8.49, "chicken"],
        ["cs-3", "Grilled Chicken Sandwich", "Grilled chicken breast, lettuce, tomato and honey mustard.", 8.29, "chicken"],
        ["cs-4", "Chicken Tenders (4 pc)", "Hand-breaded tenders with your choice of dipping sauce.", 8.99, "tenders"],
      ]],
      ["Sides & Drinks", [
        ["cs-5", "Waffle Fries", "Crispy waffle-cut potatoes with sea salt.", 3.29, "fries"],
        ["cs-6", "Mac & Cheese", "Creamy three-cheese macaroni.", 3.99, "side"],
        ["cs-7", "Sweet Tea", "Fresh-brewed, 24 oz.", 2.29, "drink"],
      ]],
    ],
    "rotisserie-roost": [
      ["Rotisserie", [
        ["rr-1", "Rotisserie Chicken Sandwich", "Hand-pulled rotisserie chicken, arugula and garlic aioli on ciabatta.", 10.49, "chicken"],
        ["rr-2", "Quarter Rotisserie Chicken Plate", "Quarter chicken, slow-roasted, with two sides.", 11.99, "roast"],
        ["rr-3", "Half Rotisserie Chicken Plate", "Half chicken, slow-roasted, with two sides.", 15.99, "roast"],
      ]],
      ["Sides", [
        ["rr-4", "Mashed Potatoes & Gravy", "Creamy red-skin potatoes with chicken gravy.", 3.49, "side"],
        ["rr-5", "Cornbread", "Sweet honey-butter cornbread.", 1.99, "cake"],
        ["rr-6", "Roasted Vegetables", "Seasonal vegetables roasted with herbs.", 3.99, "salad"],
      ]],
    ],
    "burger-barn": [
      ["Burgers", [
        ["bb-1", "Classic Cheeseburger", "Quarter-pound beef patty, American cheese, lettuce, tomato and barn sauce.", 8.99, "burger"],
        ["bb-2", "Bacon Double Burger", "Two beef patties, cheddar, bacon and onion jam.", 11.49, "burger"],
        ["bb-3", "Mushroom Swiss Burger", "Sauteed mushrooms and melted Swiss.", 10.49, "burger"],
        ["bb-4", "Veggie Burger", "House black-bean patty, avocado and chipotle mayo.", 9.49, "burger"],
      ]],
      ["Sides", [
        ["bb-5", "French Fries", "Golden, crispy and lightly salted.", [["Regular", 3.49], ["Large", 4.79]], "fries"],
        ["bb-6", "Onion Rings", "Beer-battered sweet onion rings.", 4.29, "side"],
        ["bb-7", "Chili Cheese Fries", "Topped with beef chili and cheddar.", 5.99, "fries"],
      ]],
      ["Shakes & Drinks", [
        ["bb-8", "Chocolate Milkshake", "Hand-spun with real ice cream, 16 oz.", 5.49, "drink"],
        ["bb-9", "Fountain Soda", "Choice of soda, 22 oz.", 2.19, "drink"],
      ]],
    ],
    "bombay-spice": [
      ["Curries", [
        ["bs-1", "Chicken Tikka Masala", "Charred chicken in a creamy tomato sauce, with basmati rice.", 15.99, "curry"],
        ["bs-2", "Chicken Biryani", "Fragrant basmati rice layered with spiced chicken and saffron.", 14.99, "rice"],
        ["bs-3", "Palak Paneer", "Cottage cheese in spiced spinach, with basmati rice.", 13.99, "curry"],
      ]],
      ["Breads & Starters", [
        ["bs-4", "Vegetable Samosas (2)", "Crisp pastries filled with spiced potatoes and peas.", 5.99, "side"],
        ["bs-5", "Garlic Naan", "Tandoor-baked flatbread with garlic and cilantro.", 3.49, "side"],
        ["bs-6", "Mango Lassi", "Yogurt and Alphonso mango, 12 oz.", 4.49, "drink"],
      ]],
    ],
    "green-leaf": [
      ["Salads", [
        ["gl-1", "Harvest Salad", "Mixed greens, roasted squash, apples, goat cheese and pecans.", 11.49, "salad"],
        ["gl-2", "Cobb Salad", "Chicken, bacon, egg, avocado, tomato and blue cheese.", 12.49, "salad"],
        ["gl-3", "Chicken Caesar Salad", "Romaine, grilled chicken, parmesan and croutons.", 11.99, "salad"],
      ]],
      ["Soups & Drinks", [
        ["gl-4", "Tomato Basil Soup", "Slow-simmered tomatoes with fresh basil, 12 oz.", 5.99, "soup"],
        ["gl-5", "Fresh Lemonade", "Squeezed to order, 16 oz.", 3.49, "drink"],
      ]],
    ],
    "sweet-crumb": [
      ["Cakes & Pastries", [
        ["sc-1", "Chocolate Layer Cake Slice", "Three layers of devil's food cake with fudge frosting.", 5.99, "cake"],
        ["sc-2", "New York Cheesecake", "Classic cheesecake with a graham cracker crust.", 6.49, "cake"],
        ["sc-3", "Cinnamon Roll", "Soft swirl with cream cheese icing.", 4.49, "cake"],
        ["sc-4", "Chocolate Chip Cookies (3)", "Crisp edges, gooey centers.", 4.99, "cake"],
      ]],
      ["Coffee", [
        ["sc-5", "Iced Latte", "Double espresso and cold milk, 16 oz.", 4.79, "drink"],
        ["sc-6", "Hot Chocolate", "Steamed milk and dark chocolate, 12 oz.", 3.99, "drink"],
      ]],
    ],
    "morning-bun": [["Bakery", [
      ["mb-1", "Morning Bun", "Orange-zest laminated pastry rolled in cinnamon sugar.", 4.25, "cake"],
      ["mb-2", "Butter Croissant", "Flaky all-butter croissant.", 3.75, "cake"],
      ["mb-3", "Drip Coffee", "House blend, 12 oz.", 2.75, "drink"],
    ]]],
    "juice-junction": [["Juices", [
      ["jj-1", "Green Machine Smoothie", "Kale, spinach, banana, mango and apple juice.", 7.49, "drink"],
      ["jj-2", "Fresh Orange Juice", "Squeezed to order, 16 oz.", 5.99, "drink"],
      ["jj-3", "Berry Blast Smoothie", "Strawberry, blueberry, banana and yogurt.", 7.29, "drink"],
    ]]],
    "frosty-cone": [["Ice Cream", [
      ["fc-1", "Two-Scoop Cone", "Choose any two flavors on a waffle cone.", 5.49, "cake"],
      ["fc-2", "Hot Fudge Sundae", "Vanilla, hot fudge, whipped cream and a cherry.", 6.99, "cake"],
      ["fc-3", "Root Beer Float", "Vanilla ice cream in root beer.", 5.25, "drink"],
    ]]],
    "daily-grind": [["Coffee & Tea", [
      ["dg-1", "Cappuccino", "Espresso with steamed and foamed milk, 12 oz.", 4.25, "drink"],
      ["dg-2", "Chai Latte", "Spiced black tea with steamed milk, 16 oz.", 4.75, "drink"],
      ["dg-3", "Blueberry Muffin", "Baked this morning.", 3.50, "cake"],
    ]]],
  };

  function cents(x) {
    return Math.round(x * 100);
  }
  function storeRecord(row) {
    return {
      id: row[0], name: row[1], cuisine: row[2], tags: row[3], rating: row[4], reviews: row[5], eta: row[6],
      deliveryFee: cents(row[7]), miles: row[8], color: row[9], art: row[10], address: row[11] + ", San Francisco, CA",
    };
  }
  function menuOf(store) {
    return MENUS[store.id].map(function (section) {
      return {
        title: section[0],
        items: section[1].map(function (it) {
          const sizes = Array.isArray(it[3]) ? it[3].map(function (s) { return { label: s[0], price: cents(s[1]) }; }) : null;
          return { id: it[0], name: it[1], description: it[2], price: sizes ? sizes[0].price : cents(it[3]), sizes: sizes, art: it[4], storeId: store.id, storeName: store.name };
        }),
      };
    });
  }

  let cache = null;
  function catalog() {
    // The seed's two distractor stores join the list; built once per episode seed. The meta is
    // read from storage directly: /config builds the initial state (past orders) before it exists.
    const meta = JSON.parse(localStorage.getItem("halo:dashdish:meta") || "{}");
    const seed = Number(meta.seed || 0);
    if (cache && cache.seed === seed) return cache;
    const rows = STORES.slice();
    if (seed) {
      const r = HALO.rng(seed * 7919 + 17);
      r.shuffle(DISTRACTORS).slice(0, 2).forEach(function (d) { rows.push(d); });
    }
    const stores = rows.map(storeRecord);
    const items = {};
    stores.forEach(function (s) {
      s.menu = menuOf(s);
      s.menu.forEach(function (sec) { sec.items.forEach(function (it) { items[it.id] = it; }); });
    });
    cache = { seed: seed, stores: stores, items: items };
    return cache;
  }

  // Fee rules (what the checkout shows and the order records): cents, rounded half up.
  const FEES = { serviceRate: 0.10, taxRate: 0.09, express: 299, tips: [0, 200, 300, 500], defaultTip: 300 };
  function charges(lines, store, checkout) {
    const subtotal = lines.reduce(function (s, l) { return s + l.price * l.quantity; }, 0);
    const delivery = checkout.shippingOption === "Delivery";
    const out = {
      subtotal: subtotal,
      deliveryFee: delivery ? store.deliveryFee : 0,
      expressFee: delivery && checkout.deliveryOption === "Express" ? FEES.express : 0,
      serviceFee: Math.round(subtotal * FEES.serviceRate),
      taxes: Math.round(subtotal * FEES.taxRate),
      tip: delivery ? checkout.tip : 0,
    };
    out.totalAmount = out.subtotal + out.deliveryFee + out.expressFee + out.serviceFee + out.taxes + out.tip;
    return out;
  }
  function dollars(c) {
    return Math.round(c) / 100;
  }

  const ADDRESS = { name: "Alex Morgan", street: "1 Market St, Apt 12B", city: "San Francisco", state: "CA", zip: "94105", phone: "(415) 555-0142" };
  const PAYMENT = { method: "Visa", last4: "4242", label: "Visa •••• 4242" };

  /* An order exactly as the checkout records it: REAL's fields (orderId, cartItems[] with
   * name/description/restaurantName/size/quantity, checkoutDetails.shipping/charges) in dollars. */
  function buildOrder(orderId, createdAt, lines, store, checkout) {
    const c = charges(lines, store, checkout);
    const delivery = checkout.shippingOption === "Delivery";
    return {
      id: orderId, orderId: orderId, createdAt: createdAt, status: "Placed",
      restaurantId: store.id, restaurantName: store.name,
      cartItems: lines.map(function (l) {
        return {
          id: l.id, itemId: l.itemId, name: l.name, description: l.description, size: l.size || "",
          price: dollars(l.price), quantity: l.quantity, restaurantId: store.id, restaurantName: store.name,
        };
      }),
      checkoutDetails: {
        shipping: {
          shippingOption: checkout.shippingOption,
          deliveryOption: delivery ? checkout.deliveryOption : null,
          address: delivery ? HALO.clone(ADDRESS) : null,
          pickupAddress: delivery ? null : store.address,
        },
        payment: HALO.clone(PAYMENT),
        charges: {
          subtotal: dollars(c.subtotal), deliveryFee: dollars(c.deliveryFee), expressFee: dollars(c.expressFee),
          serviceFee: dollars(c.serviceFee), taxes: dollars(c.taxes), tip: dollars(c.tip), totalAmount: dollars(c.totalAmount),
        },
      },
    };
  }

  function line(itemId, sizeIndex, quantity) {
    const it = catalog().items[itemId];
    const size = it.sizes ? it.sizes[sizeIndex || 0] : null;
    return {
      id: itemId + (size ? "-s" + (sizeIndex || 0) : ""), itemId: itemId, name: it.name, description: it.description,
      size: size ? size.label : "", price: size ? size.price : it.price, quantity: quantity, storeId: it.storeId,
    };
  }
  function storeById(id) {
    return catalog().stores.filter(function (s) { return s.id === id; })[0] || null;
  }

  // The local tasks' order history (REAL's tasks start with none).
  function pastOrders() {
    const out = {};
    [
      ["DD-10001", "2024-07-03T02:10:00.000Z", "golden-wok", [["gw-6", 0, 1], ["gw-9", 0, 1]], "Delivery", "Standard", 300],
      ["DD-10002", "2024-07-08T19:45:00.000Z", "tonys-pizzeria", [["tp-1", 2, 1], ["tp-9", 0, 1]], "Pickup", "Standard", 0],
      ["DD-10003", "2024-07-13T01:20:00.000Z", "golden-wok", [["gw-1", 0, 1], ["gw-8", 0, 2]], "Delivery", "Express", 500],
    ].forEach(function (o) {
      const lines = o[3].map(function (l) { return line(l[0], l[1], l[2]); });
      out[o[0]] = buildOrder(o[0], o[1], lines, storeById(o[2]), { shippingOption: o[4], deliveryOption: o[5], tip: o[6] });
      out[o[0]].status = o[4] === "Pickup" ? "Picked up" : "Delivered";
    });
    return out;
  }

  HALO.defineSite({
    site: "dashdish",
    collections: { foodOrders: { path: "cart.foodOrders", keyed: true } },
    catalog: catalog,
    storeById: storeById,
    line: line,
    charges: charges,
    buildOrder: buildOrder,
    fees: FEES,
    address: ADDRESS,
    payment: PAYMENT,
    initialState: function (seed, config) {
      return {
        cart: { restaurantId: null, cartItems: [], foodOrders: config.dataset === "real" ? {} : pastOrders() },
        checkout: { shippingOption: "Delivery", deliveryOption: "Standard", tip: FEES.defaultTip },
      };
    },
    initialView: function () {
      return { query: "", cartOpen: false, dialog: null, confirm: null, toast: null };
    },
  });
})();
