/* Omnizon app: an Amazon-like single page. Routes (location.hash):
 *   #/                       home
 *   #/s?k=&dept=&sort=&rating=&price=   search results (query, department, sort, filters)
 *   #/dp/<id>                product page
 *   #/cart, #/checkout, #/order/<id> (order placed), #/orders
 * The cart and the orders live in HALO.state(); the search box, the quantity picked on a product
 * page, the checkout form and open menus live in HALO.view(). */
(function () {
  "use strict";
  const esc = HALO.esc;
  const icon = HALO.icon;
  const SITE = HALO.site();
  const DEPT = {};
  SITE.departments.forEach(function (d) { DEPT[d[0]] = d[1]; });
  const SORTS = [["featured", "Featured"], ["price-asc", "Price: Low to High"], ["price-desc", "Price: High to Low"], ["rating", "Avg. Customer Review"]];
  const PRICES = [["0-25", "Under $25", 0, 25], ["25-50", "$25 to $50", 25, 50], ["50-100", "$50 to $100", 50, 100], ["100-", "$100 & Above", 100, Infinity]];
  const DELIVERY = "Thursday, July 18";

  // ---- routing -------------------------------------------------------------------------------
  function route() {
    const raw = (location.hash || "#/").replace(/^#\/?/, "");
    const q = raw.indexOf("?");
    const path = (q === -1 ? raw : raw.slice(0, q)).split("/");
    const params = new URLSearchParams(q === -1 ? "" : raw.slice(q + 1));
    if (path[0] === "s") return { kind: "search", params: params };
    if (path[0] === "dp" && path[1]) return { kind: "product", id: path[1] };
    if (path[0] === "cart") return { kind: "cart" };
    if (path[0] === "checkout") return { kind: "checkout" };
    if (path[0] === "order" && path[1]) return { kind: "placed", id: decodeURIComponent(path[1]) };
    if (path[0] === "orders") return { kind: "orders" };
    return { kind: "home" };
  }
  function go(hash) {
    // Render now rather than on the (asynchronous) hashchange, which then finds nothing new.
    if (location.hash !== hash) location.hash = hash;
    render();
  }
  function searchHash(params) {
    const p = new URLSearchParams();
    ["k", "dept", "rating", "price", "sort"].forEach(function (k) { if (params[k]) p.set(k, params[k]); });
    return "#/s?" + p.toString().replace(/\+/g, "%20");
  }

  // ---- formatting ------------------------------------------------------------------------------
  function money(x) {
    return "$" + x.toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  }
  function bigPrice(x) {
    const parts = x.toFixed(2).split(".");
    // The big digits are drawn from attributes (CSS content), so the page's text reads "$24.99" once.
    return '<span class="sr-only">' + money(x) + '</span><span class="price" aria-hidden="true"><sup data-t="$"></sup><span data-t="' + parts[0] +
      '"></span><sup data-t="' + parts[1] + '"></sup></span>';
  }
  function stars(rating, size) {
    const s = size || 16;
    let out = '<span class="stars" aria-hidden="true">';
    for (let i = 1; i <= 5; i++) {
      const fill = rating >= i - 0.25 ? 1 : rating >= i - 0.75 ? 0.5 : 0;
      const id = "g" + i + "-" + String(rating).replace(".", "_") + "-" + s;
      out += '<svg width="' + s + '" height="' + s + '" viewBox="0 0 24 24"><defs><linearGradient id="' + id + '"><stop offset="' + (fill * 100) + '%" stop-color="#ffa41c"/>' +
        '<stop offset="' + (fill * 100) + '%" stop-color="#fff"/></linearGradient></defs><path d="M12 2l3.1 6.6 7.2.8-5.4 4.9 1.5 7.1L12 17.8l-6.4 3.6 1.5-7.1L1.7 9.4l7.2-.8z" fill="url(#' + id + ')" stroke="#de7921" stroke-width="1.2"/></svg>';
    }
    return out + "</span>";
  }
  function count(n) {
    return n.toLocaleString("en-US");
  }
  function longDate(iso) {
    const M = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
    return M[Number(iso.slice(5, 7)) - 1] + " " + Number(iso.slice(8, 10)) + ", " + iso.slice(0, 4);
  }

  // ---- queries ---------------------------------------------------------------------------------
  function cartCount(st) {
    return Object.values(st.cart.items).reduce(function (n, it) { return n + it.quantity; }, 0);
  }
  function cartSubtotal(st) {
    return SITE.cents(Object.values(st.cart.items).reduce(function (s, it) { return s + it.price * it.quantity; }, 0));
  }
  function results(params) {
    const words = (params.get("k") || "").toLowerCase().split(/[\s,]+/).filter(Boolean);
    const dept = params.get("dept");
    const rating = Number(params.get("rating") || 0);
    const band = PRICES.filter(function (p) { return p[0] === params.get("price"); })[0];
    const list = SITE.catalog.filter(function (p) {
      const hay = (p.name + " " + p.brand + " " + p.tags + " " + DEPT[p.department]).toLowerCase();
      return words.every(function (w) { return hay.indexOf(w) !== -1 || hay.indexOf(w.replace(/s$/, "")) !== -1; }) &&
        (!dept || p.department === dept) && p.rating >= rating && (!band || (p.price >= band[2] && p.price < band[3]));
    });
    const sort = params.get("sort") || "featured";
    const by = {
      featured: featuredOrder(),
      "price-asc": function (a, b) { return a.price - b.price || (a.id < b.id ? -1 : 1); },
      "price-desc": function (a, b) { return b.price - a.price || (a.id < b.id ? -1 : 1); },
      rating: function (a, b) { return b.rating - a.rating || b.ratingsCount - a.ratingsCount; },
    }[sort] || function () { return 0; };
    return list.sort(by);
  }

  // ---- rendering: frame ------------------------------------------------------------------------
  function logo() {
    return '<a class="logo" href="#/" data-halo-id="logo" aria-label="Omnizon home"><span class="word">omnizon</span>' +
      '<svg width="74" height="12" viewBox="0 0 74 12" aria-hidden="true"><path d="M4 3 Q37 16 68 3" fill="none" stroke="#ff9900" stroke-width="3" stroke-linecap="round"/>' +
      '<path d="M63 1 L69 3 L66 8" fill="none" stroke="#ff9900" stroke-width="2.5" stroke-linecap="round"/></svg></a>';
  }
  function header(st, view) {
    const n = cartCount(st);
    const deptLinks = SITE.departments.map(function (d) {
      return '<a href="' + searchHash({ dept: d[0] }) + '" data-halo-id="dept-' + d[0] + '">' + esc(d[1]) + "</a>";
    }).join("");
    return '<header class="nav"><div class="nav-top">' + logo() +
      '<div class="deliver"><span class="pin">' + pinIcon() + '</span><div><span class="small">Deliver to Alex</span><b>Seattle 98101</b></div></div>' +
      '<form class="search" role="search"><span class="scope">All <span class="caret">&#9662;</span></span>' +
      '<input type="text" data-halo-id="search" aria-label="Search Omnizon" placeholder="Search Omnizon" autocomplete="off" value="' + esc(view.search || "") + '">' +
      '<button type="submit" class="go" aria-label="Go" data-halo-id="search-button">' + icon("search", 24, "#333") + "</button></form>" +
      '<div class="navlink lang"><b>EN</b></div>' +
      '<div class="navlink"><span class="small">Hello, Alex</span><b>Account &amp; Lists <span class="caret">&#9662;</span></b></div>' +
      '<a class="navlink" href="#/orders" data-halo-id="nav-orders"><span class="small">Returns</span><b>&amp; Orders</b></a>' +
      '<a class="navlink cart" href="#/cart" data-halo-id="nav-cart" aria-label="Cart, ' + n + ' items">' + icon("cart", 38, "#fff") +
      '<span class="cart-count">' + n + "</span><b>Cart</b></a></div>" +
      '<nav class="nav-sub"><a href="' + searchHash({}) + '" data-halo-id="all-departments" class="all">' + icon("menu", 20, "#fff") + "All</a>" +
      '<a href="' + searchHash({ sort: "price-asc" }) + '" data-halo-id="deals">Today\'s Deals</a>' + deptLinks + "</nav></header>";
  }
  function pinIcon() {
    return '<svg width="16" height="20" viewBox="0 0 16 20" aria-hidden="true"><path d="M8 1a6 6 0 0 0-6 6c0 5 6 12 6 12s6-7 6-12a6 6 0 0 0-6-6zm0 8.5A2.5 2.5 0 1 1 8 4.5a2.5 2.5 0 0 1 0 5z" fill="#fff"/></svg>';
  }

  // ---- rendering: pages ------------------------------------------------------------------------
  function homePage() {
    const tile = function (title, ids, link, label, hid) {
      const cells = ids.filter(SITE.product).map(function (id) {
        const p = SITE.product(id);
        return '<a class="tile-cell" href="#/dp/' + id + '">' + OMNI_ART(p, 96) + '<span>' + esc(p.name.split(/[,:(]/)[0].trim()) + "</span></a>";
      }).join("");
      return '<div class="tile"><h2>' + esc(title) + '</h2><div class="tile-grid">' + cells + '</div><a class="tile-link" href="' + link + '" data-halo-id="' + hid + '">' + esc(label) + "</a></div>";
    };
    const strip = SITE.catalog.filter(function (p) { return p.department === "toys"; }).sort(episodeSeed() ? featuredOrder() : function () { return 0; }).map(function (p) {
      return '<a class="strip-cell" href="#/dp/' + p.id + '">' + OMNI_ART(p, 110) + "</a>";
    }).join("");
    return '<div class="home"><div class="hero"><div class="hero-text"><h1>Summer deals are here</h1><p>Save on headphones, kitchen essentials and outdoor gear. Free delivery on orders over $35.</p></div>' +
      '<div class="hero-art">' + OMNI_ART(SITE.product("p04"), 170) + OMNI_ART(SITE.product("p45"), 170) + OMNI_ART(SITE.product("p14"), 170) + "</div></div>" +
      '<div class="tiles">' +
      tile("Upgrade your tech", ["p01", "p04", "p07", "p06"], searchHash({ dept: "electronics" }), "Shop Electronics", "home-electronics") +
      tile("Kitchen favorites", ["p11", "p12", "p13", "p15"], searchHash({ dept: "home" }), "Explore Home & Kitchen", "home-kitchen") +
      tile("Best-selling books", ["p22", "p21", "p29", "p25"], searchHash({ dept: "books" }), "Shop Books", "home-books") +
      tile("Get fit at home", ["p41", "p43", "p48", "p44"], searchHash({ dept: "sports" }), "Shop Sports & Outdoors", "home-sports") +
      '</div><div class="strip"><h2>Best Sellers in Toys &amp; Games</h2><div class="strip-row">' + strip + "</div></div></div>";
  }

  function searchPage(st, r, view) {
    const params = r.params;
    const list = results(params);
    const k = params.get("k") || "";
    const dept = params.get("dept");
    const sort = params.get("sort") || "featured";
    if (list.length) HALO.milestone("search_results");
    const cur = {};
    ["k", "dept", "rating", "price", "sort"].forEach(function (x) { cur[x] = params.get(x) || ""; });
    const withParam = function (name, value) {
      const p = Object.assign({}, cur);
      p[name] = value;
      return searchHash(p);
    };
    const deptLinks = '<a href="' + withParam("dept", "") + '" class="' + (dept ? "" : "on") + '" data-halo-id="filter-dept-any">Any Department</a>' +
      SITE.departments.map(function (d) {
        return '<a href="' + withParam("dept", d[0]) + '" class="' + (dept === d[0] ? "on" : "") + '" data-halo-id="filter-dept-' + d[0] + '">' + esc(d[1]) + "</a>";
      }).join("");
    const ratingLink = '<a href="' + withParam("rating", cur.rating === "4" ? "" : "4") + '" class="rating-link' + (cur.rating === "4" ? " on" : "") +
      '" data-halo-id="filter-rating-4" aria-label="4 Stars &amp; Up">' + stars(4, 18) + " &amp; Up</a>";
    const priceLinks = PRICES.map(function (p) {
      return '<a href="' + withParam("price", cur.price === p[0] ? "" : p[0]) + '" class="' + (cur.price === p[0] ? "on" : "") + '" data-halo-id="filter-price-' + p[0].replace(/-$/, "up") + '">' + esc(p[1]) + "</a>";
    }).join("");
    const side = '<aside class="filters"><h3>Department</h3>' + deptLinks + "<h3>Customer Reviews</h3>" + ratingLink + "<h3>Price</h3>" + priceLinks + "</aside>";
    const sortLabel = SORTS.filter(function (s) { return s[0] === sort; })[0] || SORTS[0];
    const menu = view.sortOpen ? '<div class="sort-menu" role="listbox">' + SORTS.map(function (s) {
      return '<a role="option" href="' + withParam("sort", s[0] === "featured" ? "" : s[0]) + '" data-halo-id="sort-' + s[0] + '"' + (s[0] === sort ? ' aria-selected="true" class="on"' : "") + ">" + esc(s[1]) + "</a>";
    }).join("") + "</div>" : "";
    const what = k ? '<span class="query">"' + esc(k) + '"</span>' : '<span class="query">' + esc(dept ? DEPT[dept] : "All Departments") + "</span>";
    const bar = '<div class="result-bar"><span>' + (list.length ? "1-" + list.length + " of " + list.length + " results for " : "No results for ") + what + "</span>" +
      '<div class="sort"><button class="sort-btn" data-action="sort-toggle" data-halo-id="sort" aria-haspopup="listbox" aria-expanded="' + (view.sortOpen ? "true" : "false") + '">Sort by: ' + esc(sortLabel[1]) +
      ' <span class="caret">&#9662;</span></button>' + menu + "</div></div>";
    const cards = list.map(function (p) {
      const inCart = st.cart.items[p.id];
      return '<div class="card"><div class="card-img" data-action="open" data-id="' + p.id + '">' + OMNI_ART(p, 170) + "</div>" +
        '<a class="card-title" href="#/dp/' + p.id + '" data-halo-id="product-' + p.id + '">' + esc(p.name) + "</a>" +
        '<div class="card-rating">' + stars(p.rating) + '<span class="sr-only">' + p.rating + ' out of 5 stars</span><span class="link">' + count(p.ratingsCount) + "</span></div>" +
        '<div class="card-price">' + bigPrice(p.price) + "</div>" +
        '<div class="card-ship">FREE delivery <b>Thu, Jul 18</b></div>' +
        '<button class="btn-yellow small" data-action="add" data-id="' + p.id + '" data-halo-id="add-' + p.id + '">Add to cart</button>' +
        (inCart ? '<div class="in-cart">&#10003; ' + inCart.quantity + " in cart</div>" : "") + "</div>";
    }).join("");
    const body = list.length ? '<div class="results-grid">' + cards + "</div>" :
      '<div class="no-results"><h2>No results for ' + esc(k || "your search") + '.</h2><p>Try checking your spelling or use more general terms.</p></div>';
    return bar + '<div class="search-layout">' + side + '<section class="results"><h2 class="results-h">Results</h2>' + body + "</section></div>";
  }

  function productPage(st, r, view) {
    const p = SITE.product(r.id);
    if (!p) return '<div class="page-msg"><h2>Looking for something?</h2><p>We\'re sorry. The web address you entered is not a functioning page on our site.</p></div>';
    HALO.milestone("product_page");
    const qty = view.qty || 1;
    const added = view.added && view.added.id === p.id ?
      '<div class="added" role="status"><span class="check">&#10003;</span><b>Added to Cart</b><div class="added-btns">' +
      '<button class="btn-white" data-action="goto-cart" data-halo-id="go-to-cart">Go to Cart</button>' +
      '<button class="btn-yellow" data-action="proceed" data-halo-id="proceed-to-checkout">Proceed to checkout (' + cartCount(st) + " items)</button></div></div>" : "";
    return '<div class="crumbs"><a href="' + searchHash({ dept: p.department }) + '" data-halo-id="crumb-dept">' + esc(DEPT[p.department]) + "</a> &rsaquo; " + esc(p.name.split(",")[0]) + "</div>" +
      '<div class="dp"><div class="dp-img">' + OMNI_ART(p, 380) + "</div>" +
      '<div class="dp-center"><h1 class="dp-title">' + esc(p.name) + '</h1><a class="byline" href="' + searchHash({ k: p.brand }) + '">' + esc(p.byline) + "</a>" +
      '<div class="dp-rating"><span>' + p.rating.toFixed(1) + "</span>" + stars(p.rating, 18) + '<span class="sr-only">' + p.rating + ' out of 5 stars</span><span class="link">' + count(p.ratingsCount) + " ratings</span></div>" +
      '<hr><div class="dp-price">' + bigPrice(p.price) + '</div><div class="muted">FREE Returns</div><hr>' +
      '<h3>About this item</h3><ul class="about">' + p.about.map(function (a) { return "<li>" + esc(a) + "</li>"; }).join("") + "</ul></div>" +
      '<div class="buybox">' + added + '<div class="dp-price">' + bigPrice(p.price) + "</div>" +
      '<div class="ship">FREE delivery <b>' + DELIVERY + '</b>. Order within <span class="green">4 hrs 12 mins</span>.</div>' +
      '<div class="deliver-to">' + pinIcon().replace('fill="#fff"', 'fill="#333"') + " Deliver to Alex - Seattle 98101</div>" +
      '<div class="stock">In Stock</div>' +
      '<div class="qty"><span>Quantity:</span><button class="step" data-action="qty-minus" data-halo-id="qty-minus" aria-label="Decrease quantity"' + (qty <= 1 ? " disabled" : "") + ">&minus;</button>" +
      '<span class="qty-value" data-halo-id="qty-value" role="status" aria-label="Quantity ' + qty + '">' + qty + "</span>" +
      '<button class="step" data-action="qty-plus" data-halo-id="qty-plus" aria-label="Increase quantity"' + (qty >= 10 ? " disabled" : "") + ">+</button></div>" +
      '<button class="btn-yellow wide" data-action="add-qty" data-id="' + p.id + '" data-halo-id="add-to-cart">Add to Cart</button>' +
      '<button class="btn-orange wide" data-action="buy-now" data-id="' + p.id + '" data-halo-id="buy-now">Buy Now</button>' +
      '<table class="sold"><tr><td>Ships from</td><td>Omnizon</td></tr><tr><td>Sold by</td><td>Omnizon</td></tr><tr><td>Returns</td><td>30-day refund</td></tr></table></div></div>';
  }

  function cartPage(st) {
    HALO.milestone("cart_page");
    const items = Object.values(st.cart.items).sort(function (a, b) { return a.id < b.id ? -1 : 1; });
    const n = cartCount(st);
    if (!items.length) {
      return '<div class="cart-page"><section class="cart-main"><h1>Your Omnizon Cart is empty</h1><p>Shop today\'s deals, or search for something you need.</p>' +
        '<a class="btn-yellow inline" href="' + searchHash({ sort: "price-asc" }) + '" data-halo-id="shop-deals">Shop today\'s deals</a></section></div>';
    }
    const rows = items.map(function (it) {
      const p = SITE.product(it.id);
      return '<div class="cart-row"><div class="cart-img" data-action="open" data-id="' + it.id + '">' + OMNI_ART(p, 150) + "</div>" +
        '<div class="cart-info"><a class="cart-name" href="#/dp/' + it.id + '" data-halo-id="cart-item-' + it.id + '">' + esc(it.name) + "</a>" +
        '<div class="stock">In Stock</div><div class="muted">Eligible for FREE Shipping</div>' +
        '<div class="cart-actions"><div class="stepper"><button data-action="cart-minus" data-id="' + it.id + '" data-halo-id="cart-minus-' + it.id + '" aria-label="Decrease quantity of ' + esc(it.name) + '"' + (it.quantity <= 1 ? " disabled" : "") + ">&minus;</button>" +
        '<span data-halo-id="cart-qty-' + it.id + '" aria-label="Quantity ' + it.quantity + '">' + it.quantity + "</span>" +
        '<button data-action="cart-plus" data-id="' + it.id + '" data-halo-id="cart-plus-' + it.id + '" aria-label="Increase quantity of ' + esc(it.name) + '"' + (it.quantity >= 10 ? " disabled" : "") + ">+</button></div>" +
        '<span class="sep">|</span><button class="linkbtn" data-action="cart-delete" data-id="' + it.id + '" data-halo-id="cart-delete-' + it.id + '" aria-label="Delete ' + esc(it.name) + '">Delete</button>' +
        '<span class="sep">|</span><span class="linkish">Save for later</span></div></div>' +
        '<div class="cart-price"><b>' + money(it.price) + "</b></div></div>";
    }).join("");
    const sub = "Subtotal (" + n + (n === 1 ? " item" : " items") + "): <b>" + money(cartSubtotal(st)) + "</b>";
    return '<div class="cart-page"><section class="cart-main"><h1>Shopping Cart</h1><div class="price-h">Price</div>' + rows +
      '<div class="cart-sub">' + sub + '</div></section><aside class="cart-side"><div class="free">&#10003; Your order qualifies for FREE Shipping.</div>' +
      '<div class="cart-sub left">' + sub + '</div><button class="btn-yellow wide" data-action="proceed" data-halo-id="proceed-to-checkout">Proceed to checkout</button></aside></div>';
  }

  function field(c, name, label, hid, placeholder, width) {
    return '<label class="f' + (width ? " " + width : "") + '"><span>' + esc(label) + '</span><input type="text" data-checkout="' + name + '" data-halo-id="' + hid +
      '" aria-label="' + esc(label) + '" value="' + esc(c[name] || "") + '" placeholder="' + esc(placeholder || "") + '" autocomplete="off"></label>';
  }
  function checkoutPage(st, view) {
    const items = Object.values(st.cart.items).sort(function (a, b) { return a.id < b.id ? -1 : 1; });
    if (!items.length) {
      return '<div class="page-msg"><h2>Your cart is empty</h2><p>Add items to your cart before checking out.</p><a href="#/cart" data-halo-id="back-to-cart">Return to cart</a></div>';
    }
    HALO.milestone("checkout");
    const c = view.checkout || {};
    const errs = (c.errors || []).length ? '<div class="alert" role="alert"><b>There was a problem</b><ul>' + c.errors.map(function (e) { return "<li>" + esc(e) + "</li>"; }).join("") + "</ul></div>" : "";
    const review = items.map(function (it) {
      return '<div class="rev-row">' + OMNI_ART(SITE.product(it.id), 64) + '<div><b>' + esc(it.name) + '</b><div class="price-red">' + money(it.price) + '</div><div>Qty: ' + it.quantity + "</div></div></div>";
    }).join("");
    const total = cartSubtotal(st);
    return '<div class="checkout">' + '<section class="co-main"><h1>Checkout (' + cartCount(st) + " items)</h1>" + errs +
      '<div class="co-step"><h2><span>1</span>Shipping address</h2><div class="form">' +
      field(c, "fullName", "Full name (First and Last name)", "full-name", "", "wide") +
      field(c, "street", "Street address", "street", "Street address, apartment, suite", "wide") +
      field(c, "city", "City", "city") + field(c, "state", "State", "state", "", "narrow") + field(c, "zip", "ZIP Code", "zip", "", "narrow") +
      '</div></div><div class="co-step"><h2><span>2</span>Payment method</h2><div class="form">' +
      field(c, "cardNumber", "Card number", "card-number", "", "wide") + field(c, "cardName", "Name on card", "card-name") +
      field(c, "expiry", "Expiration date (MM/YY)", "card-expiry", "MM/YY", "narrow") +
      '</div></div><div class="co-step"><h2><span>3</span>Review items and shipping</h2><div class="arrive">Arriving ' + DELIVERY + "</div>" + review + "</div></section>" +
      '<aside class="co-side"><button class="btn-yellow wide" data-action="place-order" data-halo-id="place-order">Place your order</button>' +
      '<p class="fine">By placing your order, you agree to Omnizon\'s privacy notice and conditions of use.</p><h3>Order Summary</h3>' +
      '<table class="sum"><tr><td>Items (' + cartCount(st) + "):</td><td>" + money(total) + "</td></tr><tr><td>Shipping &amp; handling:</td><td>$0.00</td></tr>" +
      '<tr class="total"><td>Order total:</td><td>' + money(total) + "</td></tr></table></aside></div>";
  }

  function placedPage(st, r) {
    const o = st.order.orders[r.id];
    if (!o) return '<div class="page-msg"><h2>Order not found</h2></div>';
    const a = o.shippingAddress;
    return '<div class="placed"><div class="placed-box"><h1><span class="check">&#10003;</span> Order placed, thanks!</h1>' +
      "<p>Confirmation will be sent to your email.</p>" +
      '<p><b>Shipping to ' + esc(a.fullName) + "</b>, " + esc(a.street) + ", " + esc(a.city) + ", " + esc(a.state) + " " + esc(a.zip) + "</p>" +
      '<p class="order-no">Order number: <b data-halo-id="order-number">' + esc(o.id) + "</b></p>" +
      '<div class="arrive">Arriving ' + DELIVERY + "</div>" +
      o.items.map(function (it) { return '<div class="rev-row">' + OMNI_ART(SITE.product(it.id), 64) + "<div>" + esc(it.name) + "<div>Qty: " + it.quantity + "</div></div></div>"; }).join("") +
      '<p>Order total: <b>' + money(o.total) + '</b></p><a href="#/orders" data-halo-id="review-orders">Review or edit your recent orders</a></div></div>';
  }

  function ordersPage(st) {
    const list = Object.values(st.order.orders).sort(function (a, b) { return a.date < b.date ? 1 : a.date > b.date ? -1 : (a.id < b.id ? 1 : -1); });
    const cards = list.map(function (o) {
      return '<div class="order-card" data-halo-id="order-' + esc(o.id) + '"><div class="order-head"><div><span>ORDER PLACED</span>' + longDate(o.date) + "</div>" +
        "<div><span>TOTAL</span>" + money(o.total) + "</div><div><span>SHIP TO</span>" + esc(o.shippingAddress.fullName) + '</div><div class="order-id"><span>ORDER # ' + esc(o.id) + "</span></div></div>" +
        '<div class="order-body"><h3>' + esc(o.status) + "</h3>" +
        o.items.map(function (it) {
          return '<div class="rev-row">' + OMNI_ART(SITE.product(it.id), 72) + '<div><a href="#/dp/' + it.id + '">' + esc(it.name) + "</a><div>Qty: " + it.quantity + "</div></div></div>";
        }).join("") + "</div></div>";
    }).join("");
    return '<div class="orders"><h1>Your Orders</h1>' + (cards || "<p>You have not placed any orders.</p>") + "</div>";
  }

  // REAL's Omnizon keeps its path and its search in the state its eval scripts read
  // (router.location.pathname, "/confirmation" after an order; filter.searchQuery). Only the REAL
  // dataset's state has them (docs/sites.md); local tasks' state stays as it was.
  const REAL_PATHS = { home: "/", search: "/search", cart: "/cart", checkout: "/checkout", placed: "/confirmation", orders: "/orders" };
  function syncRealRouter(r) {
    const st = HALO.state();
    if (!st.router) return;
    const path = r.kind === "product" ? "/product/" + r.id : REAL_PATHS[r.kind];
    const query = r.kind === "search" ? (r.params.get("k") || "") : st.filter.searchQuery;
    if (st.router.location.pathname === path && st.filter.searchQuery === query) return;
    st.router.location.pathname = path;
    st.filter.searchQuery = query;
    st.filter.searchInputValue = query;
    HALO.commit(st);
  }

  /* Perturbed starts: under a non-zero episode seed "Featured" (the default sort, which no task's
   * answer depends on) is a seeded order and the page moves by a few pixels; seed 0 keeps today's
   * ratings-count order and layout exactly. */
  function episodeSeed() {
    return Number(HALO.meta().seed || 0);
  }
  function featuredOrder() {
    const seed = episodeSeed();
    if (!seed) return function (a, b) { return b.ratingsCount - a.ratingsCount; };
    const rank = {};
    HALO.rng(seed).shuffle(SITE.catalog.map(function (p) { return p.id; }).sort()).forEach(function (id, i) { rank[id] = i; });
    return function (a, b) { return rank[a.id] - rank[b.id]; };
  }
  function offsetLayout() {
    const seed = episodeSeed();
    const main = seed ? document.querySelector(".main") : null;
    if (!main) return;
    const r = HALO.rng(seed ^ 0x1a7);
    main.style.boxSizing = "border-box";
    main.style.paddingTop = (2 + r.int(9)) + "px";
    main.style.paddingLeft = (2 + r.int(9)) + "px";
  }

  function render() {
    let view = HALO.view();
    const r = route();
    if (view.route !== location.hash) {
      // A new page: forget what belonged to the previous one (quantity, menus, scroll).
      const patch = { route: location.hash, sortOpen: false, added: null, scroll: {} };
      if (r.kind === "product") patch.qty = 1;
      if (r.kind === "search") patch.search = r.params.get("k") || "";
      if (r.kind === "checkout" && !view.checkout) patch.checkout = { errors: [] };
      view = HALO.patchView(patch);
      syncRealRouter(r);
    }
    const st = HALO.state();
    let main;
    let title = "Omnizon.com. Spend less. Smile more.";
    if (r.kind === "search") { main = searchPage(st, r, view); title = "Omnizon.com : " + (r.params.get("k") || "Shop"); }
    else if (r.kind === "product") { main = productPage(st, r, view); title = SITE.product(r.id) ? "Omnizon.com: " + SITE.product(r.id).name : "Page Not Found"; }
    else if (r.kind === "cart") { main = cartPage(st); title = "Omnizon.com Shopping Cart"; }
    else if (r.kind === "checkout") { main = checkoutPage(st, view); title = "Omnizon.com Checkout"; }
    else if (r.kind === "placed") { main = placedPage(st, r); title = "Omnizon.com Thanks You"; }
    else if (r.kind === "orders") { main = ordersPage(st); title = "Your Orders"; }
    else main = homePage();
    document.title = title;
    document.getElementById("app").innerHTML = header(st, view) + '<main class="main page-' + r.kind + '" data-halo-scroll="main">' + main +
      '<footer class="foot"><a href="#/" data-halo-id="back-to-top">Back to top</a><div class="foot-logo">omnizon</div></footer></main>';
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
  function addToCart(id, qty) {
    update(function (st) {
      const it = st.cart.items[id];
      if (it) it.quantity = Math.min(10, it.quantity + qty);
      else st.cart.items[id] = SITE.line(id, Math.min(10, qty));
    });
    HALO.milestone("add_to_cart");
  }
  function hash(s) {
    // FNV-1a: order numbers are a pure function of the order, so replays give the same number.
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    return h;
  }
  function validate(c) {
    const errors = [];
    const need = [["fullName", "full name"], ["street", "street address"], ["city", "city"], ["state", "state"], ["zip", "ZIP code"],
      ["cardNumber", "card number"], ["cardName", "name on card"], ["expiry", "expiration date"]];
    need.forEach(function (n) { if (!String(c[n[0]] || "").trim()) errors.push("Please enter a " + n[1] + "."); });
    if (String(c.zip || "").trim() && !/^\d{5}(-\d{4})?$/.test(String(c.zip).trim())) errors.push("Please enter a valid ZIP code.");
    const digits = String(c.cardNumber || "").replace(/[\s-]/g, "");
    if (digits && !/^\d{16}$/.test(digits)) errors.push("Card number must have 16 digits.");
    if (String(c.expiry || "").trim() && !/^(0[1-9]|1[0-2])\/\d{2}$/.test(String(c.expiry).trim())) errors.push("Expiration date must be MM/YY.");
    return errors;
  }
  function placeOrder() {
    const view = HALO.view();
    const c = view.checkout || {};
    const errors = validate(c);
    if (errors.length) {
      c.errors = errors;
      HALO.patchView({ checkout: c });
      render();
      return;
    }
    let id = null;
    update(function (st) {
      const items = Object.values(st.cart.items).sort(function (a, b) { return a.id < b.id ? -1 : 1; });
      const address = { fullName: c.fullName.trim(), street: c.street.trim(), city: c.city.trim(), state: c.state.trim(), zip: c.zip.trim() };
      const key = JSON.stringify([items, address]);
      let h1 = hash(key), h2 = hash(key.split("").reverse().join(""));
      id = "113-" + String(h1 % 10000000).padStart(7, "0") + "-" + String(h2 % 10000000).padStart(7, "0");
      while (st.order.orders[id]) { h2 += 1; id = id.slice(0, 12) + String(h2 % 10000000).padStart(7, "0"); }
      const total = cartSubtotal(st);
      st.order.orders[id] = {
        id: id, date: SITE.today, status: "Arriving " + DELIVERY, items: items, subtotal: total, total: total, shippingAddress: address,
        payment: { method: "card", cardLast4: String(c.cardNumber).replace(/\D/g, "").slice(-4), nameOnCard: c.cardName.trim(), expiry: c.expiry.trim() },
      };
      st.cart.items = {};
    });
    HALO.milestone("order_placed");
    HALO.patchView({ checkout: null, focus: null });
    go("#/order/" + encodeURIComponent(id));
  }

  // ---- events ----------------------------------------------------------------------------------
  document.addEventListener("click", function (e) {
    const el = e.target.closest("[data-action]");
    if (!el) {
      if (HALO.view().sortOpen && !e.target.closest(".sort-menu")) { HALO.patchView({ sortOpen: false }); render(); }
      return;
    }
    e.preventDefault();
    const action = el.getAttribute("data-action");
    const id = el.getAttribute("data-id");
    const view = HALO.view();
    if (action === "sort-toggle") {
      HALO.patchView({ sortOpen: !view.sortOpen });
      render();
    } else if (action === "add") {
      addToCart(id, 1);
      render();
    } else if (action === "qty-minus" || action === "qty-plus") {
      const q = Math.max(1, Math.min(10, (view.qty || 1) + (action === "qty-plus" ? 1 : -1)));
      HALO.patchView({ qty: q });
      HALO.milestone("quantity_changed");
      render();
    } else if (action === "add-qty") {
      addToCart(id, view.qty || 1);
      HALO.patchView({ added: { id: id, qty: view.qty || 1 } });
      render();
    } else if (action === "buy-now") {
      addToCart(id, view.qty || 1);
      go("#/checkout");
    } else if (action === "open") {
      go("#/dp/" + id);
    } else if (action === "goto-cart") {
      go("#/cart");
    } else if (action === "proceed") {
      go("#/checkout");
    } else if (action === "cart-minus" || action === "cart-plus") {
      update(function (st) {
        const it = st.cart.items[id];
        if (it) it.quantity = Math.max(1, Math.min(10, it.quantity + (action === "cart-plus" ? 1 : -1)));
      });
      HALO.milestone("quantity_changed");
      render();
    } else if (action === "cart-delete") {
      update(function (st) { delete st.cart.items[id]; });
      render();
    } else if (action === "place-order") {
      placeOrder();
    }
  });

  document.addEventListener("submit", function (e) {
    e.preventDefault();
    const q = (HALO.view().search || "").trim();
    HALO.patchView({ focus: null });
    go(searchHash({ k: q }));
  });

  document.addEventListener("input", function (e) {
    const t = e.target;
    if (t.getAttribute("data-halo-id") === "search") {
      HALO.patchView({ search: t.value });
      return;
    }
    const name = t.getAttribute("data-checkout");
    if (!name) return;
    const c = HALO.view().checkout || { errors: [] };
    c[name] = t.value;
    HALO.patchView({ checkout: c });
  });

  window.addEventListener("hashchange", render);
  HALO.trackUi();
  HALO.mount(render);
})();
