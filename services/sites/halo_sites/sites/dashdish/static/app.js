/* DashDish app: a DoorDash-like single page. Routes (location.hash):
 *   #/                home: cuisines and every store
 *   #/search/<query>  stores and dishes matching the query
 *   #/store/<id>      a store's menu (item dialog with size and quantity)
 *   #/checkout        delivery or pickup, delivery speed, tip, the summary and Place Order
 *   #/orders          past orders; #/orders/<id> one order (the confirmation after placing it)
 * The cart, the checkout choices and the placed orders live in HALO.state(); the search box, the
 * cart drawer, the item dialog, the "new cart?" prompt and the toast live in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const icon = HALO.icon;
  const art = HALO.foodArt;
  const SITE = HALO.site();
  const CUISINES = [["pizza", "Pizza", "pizza"], ["wings", "Wings", "wings"], ["chicken", "Chicken", "chicken"], ["burgers", "Burgers", "burger"],
    ["sandwiches", "Sandwiches", "sub"], ["mexican", "Mexican", "taco"], ["chinese", "Chinese", "noodles"], ["ramen", "Ramen", "ramen"],
    ["indian", "Indian", "curry"], ["healthy", "Healthy", "salad"], ["desserts", "Desserts", "cake"]];
  // "Now" never moves: Monday 2024-07-15, 12:30 PM in San Francisco (19:30 UTC).
  const NOW = "2024-07-15T19:30:00.000Z";
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  // ---- routing -------------------------------------------------------------------------------
  function route() {
    const parts = (location.hash || "#/").replace(/^#\/?/, "").split("/");
    if (parts[0] === "search") return { kind: "search", query: decodeURIComponent(parts.slice(1).join("/") || "") };
    if (parts[0] === "store" && parts[1]) return { kind: "store", id: parts[1] };
    if (parts[0] === "checkout") return { kind: "checkout" };
    if (parts[0] === "orders" && parts[1]) return { kind: "order", id: decodeURIComponent(parts[1]) };
    if (parts[0] === "orders") return { kind: "orders" };
    return { kind: "home" };
  }
  function go(hash) {
    // A new page starts at its top; render now rather than on the asynchronous hashchange.
    const scroll = HALO.view().scroll || {};
    scroll.main = 0;
    HALO.patchView({ scroll: scroll, cartOpen: false, dialog: null, confirm: null });
    if (location.hash !== hash) location.hash = hash;
    render();
  }

  // ---- seed: store order and a small layout offset (seed 0: canonical) ------------------------
  function seed() {
    return Number(HALO.meta().seed || 0);
  }
  function seededOrder(list, salt) {
    return seed() ? HALO.rng(seed() * 31 + salt).shuffle(list) : list;
  }
  function layoutShift() {
    return seed() ? 4 + HALO.rng(seed() * 13 + 5).int(5) * 4 : 0;
  }

  // ---- formatting ------------------------------------------------------------------------------
  function money(c) {
    return "$" + (c / 100).toFixed(2);
  }
  function localTime(iso) {
    // Pacific daylight time (UTC-7) on every date the site shows.
    const d = new Date(Date.parse(iso) - 7 * 3600 * 1000);
    let h = d.getUTCHours();
    const ampm = h >= 12 ? "PM" : "AM";
    h = h % 12 || 12;
    return { date: MONTHS[d.getUTCMonth()] + " " + d.getUTCDate() + ", " + d.getUTCFullYear(), time: h + ":" + String(d.getUTCMinutes()).padStart(2, "0") + " " + ampm };
  }

  // ---- queries ---------------------------------------------------------------------------------
  function stores() {
    return seededOrder(SITE.catalog().stores, 1);
  }
  function stem(w) {
    if (w.length > 5 && /(ch|sh|x|s)es$/.test(w)) return w.slice(0, -2);
    if (w.length > 3 && /s$/.test(w)) return w.slice(0, -1);
    return w;
  }
  function matches(text, query) {
    const words = String(query).toLowerCase().replace(/[^a-z0-9' ]/g, " ").split(/\s+/).filter(Boolean);
    const t = text.toLowerCase();
    return words.length > 0 && words.every(function (w) { return t.indexOf(stem(w)) !== -1; });
  }
  function searchResults(query) {
    const storeHits = stores().filter(function (s) { return matches(s.name + " " + s.cuisine + " " + s.tags, query); });
    const dishes = [];
    stores().forEach(function (s) {
      s.menu.forEach(function (sec) {
        sec.items.forEach(function (it) {
          if (matches(it.name + " " + it.description + " " + sec.title, query)) dishes.push(it);
        });
      });
    });
    return { stores: storeHits, dishes: dishes };
  }
  function cartCount(st) {
    return st.cart.cartItems.reduce(function (n, l) { return n + l.quantity; }, 0);
  }
  function cartStore(st) {
    return st.cart.restaurantId ? SITE.storeById(st.cart.restaurantId) : null;
  }
  function update(fn) {
    const st = HALO.state();
    fn(st);
    HALO.commit(st);
  }

  // ---- pieces --------------------------------------------------------------------------------
  function header(st, view) {
    const n = cartCount(st);
    return '<header class="top">' +
      '<a class="logo" href="#/" data-action="nav" data-hash="#/" data-halo-id="nav-home"><span class="logo-mark">' + logoMark() + '</span><span class="logo-word">DASHDISH</span></a>' +
      '<div class="addr"><span class="addr-dot"></span><div><b>1 Market St</b><small>Now · Delivery</small></div></div>' +
      '<form class="search" role="search"><span class="search-ico">' + icon("search", 20, "#494949") + '</span>' +
      '<input data-halo-id="search" aria-label="Search stores, dishes, products" placeholder="Search stores, dishes, products" value="' + esc(view.query || "") + '" autocomplete="off"></form>' +
      '<a class="toplink" href="#/orders" data-action="nav" data-hash="#/orders" data-halo-id="nav-orders">Orders</a>' +
      '<button class="cart-btn" data-action="cart-open" data-halo-id="nav-cart" aria-label="Cart, ' + n + ' items">' + icon("cart", 20, "#fff") + "<span>" + n + "</span></button>" +
      "</header>";
  }
  function logoMark() {
    return '<svg width="34" height="20" viewBox="0 0 34 20" aria-hidden="true"><path d="M33 7.5C31.7 4 28.4 1.5 24 1.5H2.2c-.9 0-1.3 1-.7 1.6l3.6 3.7c.6.6 1.4.9 2.2.9h16.8c1.8 0 3.2 1.4 3.2 3.1 0 1.7-1.4 3.1-3.2 3.1H12.4c-.9 0-1.3 1-.7 1.6l3.6 3.7c.6.6 1.4.9 2.2.9h6.8C31 20.1 35.3 13.7 33 7.5z" fill="#fff"/></svg>';
  }
  function storeCard(s) {
    return '<a class="store-card" href="#/store/' + s.id + '" data-action="nav" data-hash="#/store/' + s.id + '" data-halo-id="store-' + s.id + '">' +
      '<div class="store-img" style="background:' + s.color + '">' + art(s.art, 150, 105) + "</div>" +
      '<div class="store-name">' + esc(s.name) + "</div>" +
      '<div class="store-meta">' + s.rating.toFixed(1) + " ★ (" + esc(s.reviews) + ") · " + s.miles + " mi · " + s.eta + " min</div>" +
      '<div class="store-fee">' + money(s.deliveryFee) + " delivery fee</div></a>";
  }
  function itemCard(it, showStore) {
    const price = it.sizes ? "from " + money(it.price) : money(it.price);
    return '<div class="item-card" data-action="item" data-id="' + it.id + '" data-halo-id="item-' + it.id + '" role="button" tabindex="0">' +
      '<div class="item-text"><div class="item-name">' + esc(it.name) + "</div>" +
      (showStore ? '<div class="item-store">' + esc(it.storeName) + "</div>" : "") +
      '<div class="item-desc">' + esc(it.description) + '</div><div class="item-price">' + price + "</div></div>" +
      '<div class="item-pic">' + art(it.art, 110, 77) +
      '<button class="add-btn" data-action="quick-add" data-id="' + it.id + '" data-halo-id="add-' + it.id + '" aria-label="Add ' + esc(it.name) + '">' + icon("plus", 18, "#191919") + "</button></div></div>";
  }

  // ---- pages ---------------------------------------------------------------------------------
  function homePage() {
    const cuisines = CUISINES.map(function (c) {
      return '<a class="cuisine" href="#/search/' + c[0] + '" data-action="nav" data-hash="#/search/' + c[0] + '" data-halo-id="cuisine-' + c[0] + '">' +
        '<span class="cuisine-pic">' + art(c[2], 64, 45) + "</span><span>" + c[1] + "</span></a>";
    }).join("");
    return '<div class="page"><div class="banner"><div><h1>Dinner, delivered</h1><p>Order from the best local restaurants with DashDish. $0 delivery fee on your first order over $15.</p></div>' +
      '<div class="banner-art">' + art("pizza", 150, 105) + art("noodles", 150, 105) + art("burger", 150, 105) + "</div></div>" +
      '<div class="cuisines">' + cuisines + "</div>" +
      '<h2 class="section-title">All Stores</h2><div class="store-grid">' + stores().map(storeCard).join("") + "</div></div>";
  }
  function searchPage(query) {
    const res = searchResults(query);
    if (res.stores.length + res.dishes.length) HALO.milestone("search_results");
    let html = '<div class="page"><h1 class="page-title">Results for "' + esc(query) + '"</h1>';
    if (!res.stores.length && !res.dishes.length) {
      return html + '<div class="empty">No results for "' + esc(query) + '". Try searching for a store, a cuisine or a dish.</div></div>';
    }
    if (res.stores.length) html += '<h2 class="section-title">Stores</h2><div class="store-grid">' + res.stores.map(storeCard).join("") + "</div>";
    if (res.dishes.length) html += '<h2 class="section-title">Dishes</h2><div class="item-grid">' + res.dishes.map(function (it) { return itemCard(it, true); }).join("") + "</div>";
    return html + "</div>";
  }
  function storePage(id) {
    const s = SITE.storeById(id);
    if (!s) return '<div class="page"><div class="empty">This store is not available.</div></div>';
    HALO.milestone("store_page");
    const nav = s.menu.map(function (sec) { return '<li>' + esc(sec.title) + "</li>"; }).join("");
    const sections = s.menu.map(function (sec) {
      return '<h2 class="menu-title">' + esc(sec.title) + '</h2><div class="item-grid">' + sec.items.map(function (it) { return itemCard(it, false); }).join("") + "</div>";
    }).join("");
    return '<div class="page store-page"><div class="store-banner" style="background:' + s.color + '">' + art(s.art, 260, 182) + "</div>" +
      '<div class="store-head"><div><h1>' + esc(s.name) + "</h1>" +
      '<div class="store-meta big">' + s.rating.toFixed(1) + " ★ (" + esc(s.reviews) + " ratings) · " + esc(s.cuisine) + " · " + s.miles + " mi</div>" +
      '<div class="store-meta">' + esc(s.address) + "</div></div>" +
      '<div class="store-facts"><div><b>' + money(s.deliveryFee) + "</b><small>delivery fee</small></div><div><b>" + s.eta + " min</b><small>delivery time</small></div><div><b>" + (s.eta - 8) + ' min</b><small>pickup ready</small></div></div></div>' +
      '<div class="menu-wrap"><ul class="menu-nav"><li class="menu-nav-head">Menu</li>' + nav + '</ul><div class="menu">' + sections + "</div></div></div>";
  }
  function checkoutPage(st) {
    const s = cartStore(st);
    if (!s || !st.cart.cartItems.length) {
      return '<div class="page"><h1 class="page-title">Checkout</h1><div class="empty">Your cart is empty. <a href="#/" data-action="nav" data-hash="#/">Find something to eat</a>.</div></div>';
    }
    HALO.milestone("checkout");
    const co = st.checkout;
    const delivery = co.shippingOption === "Delivery";
    const c = SITE.charges(st.cart.cartItems, s, co);
    const seg = '<div class="seg">' + ["Delivery", "Pickup"].map(function (opt) {
      return '<button class="' + (co.shippingOption === opt ? "on" : "") + '" data-action="shipping" data-value="' + opt + '" data-halo-id="shipping-' + opt.toLowerCase() + '">' + opt + "</button>";
    }).join("") + "</div>";
    const speed = [["Standard", "25-35 min", "Standard delivery", 0], ["Express", "15-25 min", "Express: direct to you", SITE.fees.express]].map(function (o) {
      const on = co.deliveryOption === o[0];
      return '<button class="speed' + (on ? " on" : "") + '" data-action="speed" data-value="' + o[0] + '" data-halo-id="delivery-' + o[0].toLowerCase() + '" role="radio" aria-checked="' + on + '">' +
        '<span class="radio"></span><span class="speed-text"><b>' + o[0] + "</b><small>" + o[1] + " · " + o[2] + "</small></span><span class=\"speed-fee\">" + (o[3] ? "+" + money(o[3]) : "") + "</span></button>";
    }).join("");
    const a = SITE.address;
    const left = '<div class="co-left"><h1 class="page-title">Checkout</h1>' + seg +
      (delivery ?
        '<div class="co-box"><h3>Delivery address</h3><div class="co-line"><b>' + esc(a.street) + "</b><small>" + esc(a.city + ", " + a.state + " " + a.zip) + " · " + esc(a.name) + " · " + esc(a.phone) + "</small></div></div>" +
        '<div class="co-box"><h3>Delivery options</h3><div role="radiogroup">' + speed + "</div></div>" :
        '<div class="co-box"><h3>Pickup from</h3><div class="co-line"><b>' + esc(s.name) + "</b><small>" + esc(s.address) + " · ready in about " + (s.eta - 8) + " min</small></div></div>") +
      '<div class="co-box"><h3>Payment</h3><div class="co-line"><b>' + esc(SITE.payment.label) + "</b><small>Expires 08/27</small></div></div></div>";
    const items = st.cart.cartItems.map(function (l) {
      return '<div class="sum-item"><span class="qty">' + l.quantity + "×</span><span>" + esc(l.name) + (l.size ? ' <small>' + esc(l.size) + "</small>" : "") + "</span><span>" + money(l.price * l.quantity) + "</span></div>";
    }).join("");
    const tips = delivery ? '<div class="tip"><div class="tip-head"><b>Dasher tip</b><small>100% of the tip goes to your Dasher</small></div><div class="tip-row">' +
      SITE.fees.tips.map(function (t) {
        return '<button class="' + (co.tip === t ? "on" : "") + '" data-action="tip" data-value="' + t + '" data-halo-id="tip-' + t / 100 + '">' + (t ? money(t).replace(".00", "") : "None") + "</button>";
      }).join("") + "</div></div>" : "";
    const row = function (label, v, id) { return '<div class="sum-row"' + (id ? ' data-halo-id="' + id + '"' : "") + "><span>" + label + "</span><span>" + money(v) + "</span></div>"; };
    const right = '<div class="co-right"><div class="sum-store">' + esc(s.name) + '</div><div class="sum-items">' + items + "</div>" + tips +
      row("Subtotal", c.subtotal) + (delivery ? row("Delivery Fee", c.deliveryFee) : "") + (c.expressFee ? row("Express Fee", c.expressFee) : "") +
      row("Service Fee", c.serviceFee) + row("Estimated Tax", c.taxes) + (delivery ? row("Dasher Tip", c.tip) : "") +
      '<div class="sum-row total" data-halo-id="order-total"><span>Total</span><span>' + money(c.totalAmount) + "</span></div>" +
      '<button class="place" data-action="place" data-halo-id="place-order">Place ' + (delivery ? "Delivery" : "Pickup") + " Order</button></div>";
    return '<div class="page"><div class="co">' + left + right + "</div></div>";
  }
  function ordersPage(st) {
    const list = Object.keys(st.cart.foodOrders).map(function (k) { return st.cart.foodOrders[k]; })
      .sort(function (a, b) { return a.createdAt < b.createdAt ? 1 : -1; });
    const rows = list.map(function (o) {
      const t = localTime(o.createdAt);
      const n = o.cartItems.reduce(function (k, it) { return k + it.quantity; }, 0);
      return '<a class="order-row" href="#/orders/' + o.orderId + '" data-action="nav" data-hash="#/orders/' + o.orderId + '" data-halo-id="order-' + o.orderId + '">' +
        '<div class="order-pic" style="background:' + (SITE.storeById(o.restaurantId) || {}).color + '">' + art((SITE.storeById(o.restaurantId) || {}).art, 64, 45) + "</div>" +
        '<div class="order-main"><b>' + esc(o.restaurantName) + "</b><small>" + t.date + " · " + n + " item" + (n === 1 ? "" : "s") + " · " + esc(o.checkoutDetails.shipping.shippingOption) + "</small>" +
        "<small>" + esc(o.cartItems.map(function (it) { return it.name; }).join(", ")) + "</small></div>" +
        '<div class="order-side"><b>$' + o.checkoutDetails.charges.totalAmount.toFixed(2) + "</b><small>" + esc(o.status) + "</small></div></a>";
    }).join("");
    HALO.milestone("orders_page");
    return '<div class="page"><h1 class="page-title">Orders</h1>' + (rows ? '<div class="orders">' + rows + "</div>" : '<div class="empty">You have no orders yet.</div>') + "</div>";
  }
  function orderPage(st, id) {
    const o = st.cart.foodOrders[id];
    if (!o) return '<div class="page"><div class="empty">Order not found.</div></div>';
    HALO.milestone("order_viewed");
    const t = localTime(o.createdAt);
    const ch = o.checkoutDetails.charges;
    const sh = o.checkoutDetails.shipping;
    const fresh = o.status === "Placed";
    const row = function (label, v) { return '<div class="sum-row"><span>' + label + "</span><span>$" + v.toFixed(2) + "</span></div>"; };
    return '<div class="page"><div class="receipt">' +
      (fresh ? '<div class="placed" data-halo-id="order-confirmation">' + icon("clock", 22, "#fff") + "<div><b>Order placed!</b><small>" +
        (sh.shippingOption === "Pickup" ? "We'll let you know when it's ready for pickup." : sh.deliveryOption === "Express" ? "Express delivery: arriving in 15-25 min." : "Arriving in 25-35 min.") + "</small></div></div>" : "") +
      '<h1 class="page-title">' + esc(o.restaurantName) + '</h1><div class="muted">Order ' + esc(o.orderId) + " · " + t.date + ", " + t.time + " · " + esc(o.status) + "</div>" +
      '<div class="co-box"><h3>' + esc(sh.shippingOption) + (sh.deliveryOption ? " · " + esc(sh.deliveryOption) : "") + "</h3><div class=\"co-line\"><small>" +
      esc(sh.address ? sh.address.street + ", " + sh.address.city + ", " + sh.address.state + " " + sh.address.zip : "Pickup at " + sh.pickupAddress) + "</small></div></div>" +
      '<div class="co-box"><h3>Items</h3>' + o.cartItems.map(function (it) {
        return '<div class="sum-item"><span class="qty">' + it.quantity + "×</span><span>" + esc(it.name) + (it.size ? " <small>" + esc(it.size) + "</small>" : "") + "</span><span>$" + (it.price * it.quantity).toFixed(2) + "</span></div>";
      }).join("") + "</div>" +
      row("Subtotal", ch.subtotal) + (sh.shippingOption === "Delivery" ? row("Delivery Fee", ch.deliveryFee) : "") + (ch.expressFee ? row("Express Fee", ch.expressFee) : "") +
      row("Service Fee", ch.serviceFee) + row("Estimated Tax", ch.taxes) + (sh.shippingOption === "Delivery" ? row("Dasher Tip", ch.tip) : "") +
      '<div class="sum-row total"><span>Total</span><span>$' + ch.totalAmount.toFixed(2) + "</span></div>" +
      '<a class="back-link" href="#/orders" data-action="nav" data-hash="#/orders" data-halo-id="all-orders">All orders</a></div></div>';
  }

  // ---- overlays ------------------------------------------------------------------------------
  function cartDrawer(st) {
    const s = cartStore(st);
    const lines = st.cart.cartItems;
    let body;
    if (!lines.length) {
      body = '<div class="empty small">Your cart is empty. Add items from a store to start a new cart.</div>';
    } else {
      const sub = lines.reduce(function (n, l) { return n + l.price * l.quantity; }, 0);
      body = '<div class="drawer-store">' + esc(s.name) + "</div>" + lines.map(function (l) {
        return '<div class="cart-line"><div class="cart-line-text"><b>' + esc(l.name) + "</b>" + (l.size ? "<small>" + esc(l.size) + "</small>" : "") + "<span>" + money(l.price * l.quantity) + "</span></div>" +
          '<div class="stepper"><button data-action="cart-minus" data-id="' + l.id + '" data-halo-id="cart-minus-' + l.id + '" aria-label="' + (l.quantity === 1 ? "Remove" : "Decrease") + '">' + (l.quantity === 1 ? icon("trash", 16, "#191919") : "−") + "</button>" +
          "<span>" + l.quantity + '</span><button data-action="cart-plus" data-id="' + l.id + '" data-halo-id="cart-plus-' + l.id + '" aria-label="Increase">+</button></div></div>';
      }).join("") + '<div class="sum-row"><span>Subtotal</span><span>' + money(sub) + "</span></div>" +
        '<button class="place" data-action="checkout" data-halo-id="checkout">Checkout · ' + money(sub) + "</button>";
    }
    return '<div class="scrim" data-action="cart-close"></div><aside class="drawer" aria-label="Cart"><div class="drawer-head"><h2>Your cart</h2>' +
      '<button class="x" data-action="cart-close" data-halo-id="close-cart" aria-label="Close">' + icon("close", 20, "#191919") + "</button></div>" + body + "</aside>";
  }
  function itemDialog(d) {
    const it = SITE.catalog().items[d.itemId];
    const unit = it.sizes ? it.sizes[d.size].price : it.price;
    const sizes = it.sizes ? '<div class="opt-head"><b>Size</b><span class="req">Required</span></div>' + it.sizes.map(function (s, i) {
      return '<button class="opt' + (i === d.size ? " on" : "") + '" data-action="size" data-value="' + i + '" data-halo-id="size-' + i + '" role="radio" aria-checked="' + (i === d.size) + '">' +
        '<span class="radio"></span><span>' + esc(s.label) + "</span><span class=\"opt-price\">" + money(s.price) + "</span></button>";
    }).join("") : "";
    return '<div class="scrim" data-action="dialog-close"></div><div class="dialog" role="dialog" aria-label="' + esc(it.name) + '">' +
      '<button class="x" data-action="dialog-close" data-halo-id="dialog-close" aria-label="Close">' + icon("close", 20, "#191919") + "</button>" +
      '<h2>' + esc(it.name) + '</h2><p class="item-desc">' + esc(it.description) + '</p><div class="dialog-pic">' + art(it.art, 300, 150) + "</div>" + sizes +
      '<div class="dialog-foot"><div class="stepper big"><button data-action="dialog-minus" data-halo-id="dialog-minus" aria-label="Decrease">−</button><span data-halo-id="dialog-qty">' + d.qty +
      '</span><button data-action="dialog-plus" data-halo-id="dialog-plus" aria-label="Increase">+</button></div>' +
      '<button class="place" data-action="dialog-add" data-halo-id="dialog-add">Add to cart · ' + money(unit * d.qty) + "</button></div></div>";
  }
  function confirmDialog(st, c) {
    const from = cartStore(st);
    const to = SITE.storeById(SITE.catalog().items[c.itemId].storeId);
    return '<div class="scrim"></div><div class="dialog small" role="dialog" aria-label="Start a new cart?"><h2>Start a new cart?</h2>' +
      "<p>Your cart has items from " + esc(from.name) + ". Start a new cart with " + esc(to.name) + " instead? The items in your current cart will be removed.</p>" +
      '<div class="dialog-actions"><button class="ghost" data-action="new-cart-cancel" data-halo-id="new-cart-cancel">Cancel</button>' +
      '<button class="place" data-action="new-cart-confirm" data-halo-id="new-cart-confirm">Start new cart</button></div></div>';
  }

  // ---- render --------------------------------------------------------------------------------
  function render() {
    const st = HALO.state();
    const view = HALO.view();
    const r = route();
    let page;
    if (r.kind === "search") page = searchPage(r.query);
    else if (r.kind === "store") page = storePage(r.id);
    else if (r.kind === "checkout") page = checkoutPage(st);
    else if (r.kind === "orders") page = ordersPage(st);
    else if (r.kind === "order") page = orderPage(st, r.id);
    else page = homePage();
    let overlay = "";
    if (view.confirm) overlay = confirmDialog(st, view.confirm);
    else if (view.dialog) overlay = itemDialog(view.dialog);
    else if (view.cartOpen) overlay = cartDrawer(st);
    if (view.cartOpen && !view.dialog && !view.confirm) HALO.milestone("cart_opened");
    const toast = view.toast ? '<div class="toast" role="status">' + esc(view.toast) + "</div>" : "";
    document.getElementById("app").innerHTML = header(st, view) +
      '<main class="main" data-halo-scroll="main"><div class="shift" style="padding-left:' + layoutShift() + 'px">' + page + "</div></main>" + overlay + toast;
    HALO.restoreUi();
  }

  // ---- actions -------------------------------------------------------------------------------
  function addToCart(itemId, size, qty) {
    const st = HALO.state();
    const it = SITE.catalog().items[itemId];
    if (st.cart.cartItems.length && st.cart.restaurantId !== it.storeId) {
      // One store per cart, as on DoorDash: ask before replacing it.
      HALO.patchView({ confirm: { itemId: itemId, size: size, qty: qty }, dialog: null });
      return;
    }
    const l = SITE.line(itemId, size, qty);
    update(function (s) {
      s.cart.restaurantId = it.storeId;
      const same = s.cart.cartItems.filter(function (x) { return x.id === l.id; })[0];
      if (same) same.quantity += qty;
      else s.cart.cartItems.push(l);
    });
    HALO.milestone("add_to_cart");
    HALO.patchView({ dialog: null, confirm: null, toast: "Added " + qty + " × " + it.name + " to cart" });
  }
  function changeLine(id, delta) {
    update(function (s) {
      s.cart.cartItems.forEach(function (l) { if (l.id === id) l.quantity += delta; });
      s.cart.cartItems = s.cart.cartItems.filter(function (l) { return l.quantity > 0; });
      if (!s.cart.cartItems.length) s.cart.restaurantId = null;
    });
  }
  function placeOrder() {
    const st = HALO.state();
    const s = cartStore(st);
    if (!s || !st.cart.cartItems.length) return;
    const orderId = "DD-" + (10001 + Object.keys(st.cart.foodOrders).length);
    const order = SITE.buildOrder(orderId, NOW, st.cart.cartItems, s, st.checkout);
    update(function (x) {
      x.cart.foodOrders[orderId] = order;
      x.cart.cartItems = [];
      x.cart.restaurantId = null;
    });
    HALO.milestone("order_placed");
    go("#/orders/" + orderId);
  }

  // ---- events ----------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    if (!el) return;
    e.preventDefault();
    e.stopPropagation();
    const action = el.getAttribute("data-action");
    const id = el.getAttribute("data-id");
    const value = el.getAttribute("data-value");
    const view = HALO.patchView({ toast: null });
    if (action === "nav") {
      go(el.getAttribute("data-hash"));
      return;
    }
    if (action === "cart-open") HALO.patchView({ cartOpen: true, dialog: null, confirm: null });
    else if (action === "cart-close") HALO.patchView({ cartOpen: false });
    else if (action === "item" || (action === "quick-add" && SITE.catalog().items[id].sizes)) {
      // Sized dishes need a choice first: "+" opens their dialog, like a tap on the card.
      const it = SITE.catalog().items[id];
      if (route().kind !== "store" || route().id !== it.storeId) go("#/store/" + it.storeId);
      HALO.patchView({ dialog: { itemId: id, size: 0, qty: 1 } });
    } else if (action === "quick-add") addToCart(id, 0, 1);
    else if (action === "size") HALO.patchView({ dialog: Object.assign(view.dialog, { size: Number(value) }) });
    else if (action === "dialog-minus") HALO.patchView({ dialog: Object.assign(view.dialog, { qty: Math.max(1, view.dialog.qty - 1) }) });
    else if (action === "dialog-plus") HALO.patchView({ dialog: Object.assign(view.dialog, { qty: view.dialog.qty + 1 }) });
    else if (action === "dialog-add") addToCart(view.dialog.itemId, view.dialog.size, view.dialog.qty);
    else if (action === "dialog-close") HALO.patchView({ dialog: null });
    else if (action === "new-cart-cancel") HALO.patchView({ confirm: null });
    else if (action === "new-cart-confirm") {
      const c = view.confirm;
      update(function (s) { s.cart.cartItems = []; s.cart.restaurantId = null; });
      addToCart(c.itemId, c.size, c.qty);
    } else if (action === "cart-minus") changeLine(id, -1);
    else if (action === "cart-plus") changeLine(id, 1);
    else if (action === "checkout") {
      go("#/checkout");
      return;
    } else if (action === "shipping") update(function (s) { s.checkout.shippingOption = value; });
    else if (action === "speed") update(function (s) { s.checkout.deliveryOption = value; });
    else if (action === "tip") update(function (s) { s.checkout.tip = Number(value); });
    else if (action === "place") {
      placeOrder();
      return;
    }
    render();
  });

  document.addEventListener("submit", function (e) {
    e.preventDefault();
    const q = String(HALO.view().query || "").trim();
    if (q) go("#/search/" + encodeURIComponent(q));
  });
  document.addEventListener("input", function (e) {
    if (e.target.getAttribute("data-halo-id") === "search") HALO.patchView({ query: e.target.value });
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
