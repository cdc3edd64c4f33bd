/* OpenDining's pictures, drawn as inline SVG (nothing is fetched): a plated dish on a table in the
 * restaurant's two colours, the dish shaped by its cuisine, and the hero's dining-room scene. */
(function () {
  "use strict";

  function dish(rest) {
    const a = rest.colors[0], b = rest.colors[1];
    const t = rest.food_type;
    if (t === "Japanese") {
      return '<rect x="120" y="120" width="160" height="40" rx="6" fill="#263238"/>' +
        [0, 1, 2, 3].map(function (i) { return '<ellipse cx="' + (142 + i * 38) + '" cy="132" rx="15" ry="10" fill="#fff"/><rect x="' + (130 + i * 38) + '" y="118" width="24" height="9" rx="3" fill="' + a + '"/>'; }).join("");
    }
    if (t === "Italian") {
      return '<circle cx="200" cy="135" r="52" fill="#f5d58a"/><path d="M160 130 q20 -20 40 0 t40 0" stroke="#e9b949" stroke-width="8" fill="none"/>' +
        '<path d="M165 145 q20 -18 40 0 t36 0" stroke="#e9b949" stroke-width="8" fill="none"/><circle cx="188" cy="124" r="9" fill="' + a + '"/><circle cx="214" cy="146" r="8" fill="' + a + '"/><circle cx="204" cy="112" r="5" fill="#4caf50"/>';
    }
    if (t === "Seafood") {
      return '<ellipse cx="200" cy="135" rx="62" ry="26" fill="' + a + '"/><polygon points="258,135 284,116 284,154" fill="' + a + '"/><circle cx="162" cy="130" r="4" fill="#263238"/>' +
        '<path d="M180 128 q10 8 0 16 M200 126 q10 9 0 18 M220 128 q10 8 0 16" stroke="' + b + '" stroke-width="3" fill="none"/>';
    }
    if (t === "Breakfast & Brunch") {
      return '<ellipse cx="200" cy="146" rx="58" ry="14" fill="#d9a35b"/><ellipse cx="200" cy="134" rx="58" ry="14" fill="#e6b66e"/><ellipse cx="200" cy="122" rx="58" ry="14" fill="#f0c47e"/>' +
        '<rect x="188" y="104" width="24" height="12" rx="3" fill="#fff3b0"/><path d="M170 118 q30 20 60 0" stroke="#8d4b16" stroke-width="5" fill="none"/>';
    }
    if (t === "Steakhouse" || t === "American") {
      return '<ellipse cx="188" cy="136" rx="46" ry="30" fill="' + (t === "Steakhouse" ? "#6d3b2a" : "#c9873c") + '"/><path d="M160 130 l56 0 M160 142 l56 0" stroke="#4e2a1d" stroke-width="4"/>' +
        [0, 1, 2, 3, 4].map(function (i) { return '<rect x="' + (236 + i * 7) + '" y="' + (112 + (i % 2) * 6) + '" width="5" height="40" rx="2" fill="#f2c14e"/>'; }).join("") +
        '<circle cx="160" cy="108" r="7" fill="#66bb6a"/>';
    }
    // Everything else: a bowl with a garnish.
    return '<path d="M140 120 a60 42 0 0 0 120 0 z" fill="' + a + '"/><ellipse cx="200" cy="120" rx="60" ry="12" fill="' + b + '"/>' +
      '<circle cx="184" cy="116" r="8" fill="#66bb6a"/><circle cx="210" cy="120" r="7" fill="#ef5350"/><circle cx="226" cy="114" r="6" fill="#fff8e1"/>';
  }

  /** A restaurant's photo, `w` x `h` pixels (the drawing is 400 x 260). */
  window.OD_PHOTO = function (rest, w, h) {
    const b = rest.colors[1];
    return '<svg width="' + w + '" height="' + h + '" viewBox="0 0 400 260" preserveAspectRatio="xMidYMid slice" aria-hidden="true" focusable="false">' +
      '<rect width="400" height="260" fill="' + b + '"/><rect y="170" width="400" height="90" fill="#8d6e63" opacity="0.55"/>' +
      '<ellipse cx="200" cy="140" rx="118" ry="62" fill="#000" opacity="0.12"/><ellipse cx="200" cy="135" rx="112" ry="58" fill="#fafafa"/><ellipse cx="200" cy="135" rx="88" ry="44" fill="#eeeeee"/>' +
      dish(rest) + '<rect x="40" y="70" width="8" height="120" rx="3" fill="#bdbdbd"/><rect x="352" y="70" width="8" height="120" rx="3" fill="#bdbdbd"/>' +
      '<path d="M340 70 q12 -10 24 0 l-4 40 h-16 z" fill="#cfd8dc" opacity="0.8"/></svg>';
  };

  /** The home page's banner: a dining room at night. */
  window.OD_HERO = function () {
    let tables = "";
    for (let i = 0; i < 6; i++) {
      const x = 90 + i * 200;
      tables += '<ellipse cx="' + x + '" cy="300" rx="70" ry="16" fill="#f5f5f5"/><rect x="' + (x - 4) + '" y="300" width="8" height="60" fill="#4e342e"/>' +
        '<circle cx="' + x + '" cy="150" r="16" fill="#ffe082"/><line x1="' + x + '" y1="0" x2="' + x + '" y2="134" stroke="#3e2723" stroke-width="2"/>' +
        '<rect x="' + (x - 3) + '" y="276" width="6" height="20" fill="#c62828"/><ellipse cx="' + x + '" cy="272" rx="9" ry="5" fill="#ffca28" opacity="0.8"/>';
    }
    return '<svg width="1280" height="300" viewBox="0 0 1280 380" preserveAspectRatio="xMidYMid slice" aria-hidden="true" focusable="false">' +
      '<rect width="1280" height="380" fill="#3b2a26"/><rect y="250" width="1280" height="130" fill="#2b1d1a"/>' +
      '<rect x="0" y="40" width="1280" height="160" fill="#5d4037" opacity="0.35"/>' + tables + "</svg>";
  };
})();
