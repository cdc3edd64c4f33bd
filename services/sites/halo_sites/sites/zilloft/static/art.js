/* Zilloft's pictures, drawn as inline SVG (nothing is fetched): a home's photo by its type and
 * colours, interior "photos", and the map of a city with price pins. */
(function () {
  "use strict";

  function house(h) {
    const c = h.color, roof = h.roof;
    if (h.type === "condo" || h.type === "apartment") {
      let win = "";
      for (let r = 0; r < 6; r++) for (let k = 0; k < 5; k++) win += '<rect x="' + (108 + k * 38) + '" y="' + (44 + r * 30) + '" width="22" height="16" fill="#9fc3dd"/>';
      return '<rect x="96" y="30" width="198" height="200" fill="' + c + '" stroke="#8a8f94"/><rect x="96" y="24" width="198" height="10" fill="' + roof + '"/>' + win +
        '<rect x="178" y="196" width="34" height="34" fill="#4b3b30"/><rect x="20" y="110" width="70" height="120" fill="#d9d9d9"/><rect x="300" y="90" width="70" height="140" fill="#cfcfcf"/>';
    }
    if (h.type === "townhome") {
      let out = "";
      [0, 1, 2].forEach(function (i) {
        const x = 50 + i * 100;
        const col = i === 1 ? c : ["#e8ddd0", "#d5dde6"][i / 2];
        out += '<rect x="' + x + '" y="100" width="100" height="130" fill="' + col + '" stroke="#8a8f94"/><polygon points="' + x + ',100 ' + (x + 50) + ',62 ' + (x + 100) + ',100" fill="' + roof + '"/>' +
          '<rect x="' + (x + 12) + '" y="120" width="26" height="24" fill="#9fc3dd"/><rect x="' + (x + 62) + '" y="120" width="26" height="24" fill="#9fc3dd"/>' +
          '<rect x="' + (x + 38) + '" y="176" width="24" height="54" fill="#5b4636"/>';
      });
      return out;
    }
    return '<polygon points="80,118 195,52 310,118" fill="' + roof + '"/><rect x="96" y="116" width="198" height="114" fill="' + c + '" stroke="#8a8f94"/>' +
      '<rect x="118" y="140" width="44" height="36" fill="#9fc3dd" stroke="#fff" stroke-width="3"/><rect x="228" y="140" width="44" height="36" fill="#9fc3dd" stroke="#fff" stroke-width="3"/>' +
      '<rect x="178" y="170" width="34" height="60" fill="#5b4636"/><rect x="250" y="66" width="18" height="34" fill="#7d6b60"/>' +
      '<ellipse cx="50" cy="214" rx="34" ry="26" fill="#5f8f4e"/><ellipse cx="344" cy="210" rx="30" ry="30" fill="#6a9c57"/>';
  }

  /** The listing's main photo; `w` x `h` pixels (the drawing is 390 x 260). */
  window.ZIL_PHOTO = function (home, w, hgt) {
    return '<svg width="' + w + '" height="' + hgt + '" viewBox="0 0 390 260" preserveAspectRatio="xMidYMid slice" aria-hidden="true" focusable="false">' +
      '<rect width="390" height="260" fill="#bfe0f5"/><rect y="228" width="390" height="32" fill="#7fb069"/><rect x="175" y="228" width="40" height="32" fill="#cfc7b8"/>' +
      '<circle cx="46" cy="40" r="18" fill="#fff6c9"/>' + house(home) + "</svg>";
  };

  /** A room "photo" (n picks which). */
  window.ZIL_ROOM = function (home, n, w, hgt) {
    const walls = ["#efe7dc", "#e3ece9", "#f2ede4", "#e8e4ef"][n % 4];
    const furniture = [
      '<rect x="90" y="150" width="210" height="60" rx="10" fill="#7d8ea3"/><rect x="90" y="130" width="210" height="30" rx="10" fill="#8fa0b5"/><rect x="160" y="60" width="70" height="50" fill="#c9b79c" stroke="#fff" stroke-width="4"/>',
      '<rect x="60" y="120" width="270" height="26" fill="#b7a58c"/><rect x="60" y="146" width="270" height="70" fill="#ffffff" stroke="#ccc"/><circle cx="120" cy="100" r="14" fill="#9fc3dd"/><rect x="250" y="50" width="60" height="60" fill="#9fc3dd"/>',
      '<rect x="110" y="120" width="170" height="90" fill="#f7f7f7" stroke="#aaa"/><rect x="110" y="100" width="170" height="30" fill="' + home.color + '"/><rect x="40" y="60" width="60" height="90" fill="#9fc3dd"/>',
      '<rect x="70" y="150" width="250" height="12" fill="#8c6d4f"/><rect x="90" y="162" width="10" height="50" fill="#8c6d4f"/><rect x="290" y="162" width="10" height="50" fill="#8c6d4f"/><circle cx="195" cy="70" r="16" fill="#ffe8a3"/>',
    ][n % 4];
    return '<svg width="' + w + '" height="' + hgt + '" viewBox="0 0 390 260" preserveAspectRatio="xMidYMid slice" aria-hidden="true" focusable="false">' +
      '<rect width="390" height="260" fill="' + walls + '"/><rect y="210" width="390" height="50" fill="#c8b69d"/>' + furniture + "</svg>";
  };

  function shortPrice(p) {
    return p >= 1000000 ? "$" + (p / 1000000).toFixed(p >= 10000000 ? 0 : 2).replace(/\.?0+$/, "") + "M" : "$" + Math.round(p / 1000) + "K";
  }

  /** The map of `city` (w x h px) with a pin per home; saved homes get a heart pin. */
  window.ZIL_MAP = function (city, homes, saved, w, h) {
    const r = HALO.rng(city.zip);
    let roads = "";
    for (let i = 1; i < 12; i++) roads += '<line x1="0" y1="' + (i * h / 12 + r.int(20) - 10) + '" x2="' + w + '" y2="' + (i * h / 12 + r.int(20) - 10) + '" stroke="#fff" stroke-width="3"/>';
    for (let i = 1; i < 14; i++) roads += '<line x1="' + (i * w / 14 + r.int(20) - 10) + '" y1="0" x2="' + (i * w / 14 + r.int(20) - 10) + '" y2="' + h + '" stroke="#fff" stroke-width="3"/>';
    let parks = "";
    for (let i = 0; i < 4; i++) parks += '<rect x="' + r.int(w - 120) + '" y="' + r.int(h - 100) + '" width="' + (60 + r.int(80)) + '" height="' + (40 + r.int(60)) + '" rx="8" fill="#c8e6b0"/>';
    let water = "";
    if (city.water === "west") water = '<path d="M0 0 H' + (w * 0.16) + " Q" + (w * 0.24) + " " + (h * 0.5) + " " + (w * 0.12) + " " + h + ' H0 Z" fill="#aad3df"/>';
    else if (city.water === "east") water = '<path d="M' + w + " 0 H" + (w * 0.84) + " Q" + (w * 0.76) + " " + (h * 0.5) + " " + (w * 0.88) + " " + h + " H" + w + ' Z" fill="#aad3df"/>';
    else if (city.water === "river") water = '<path d="M0 ' + (h * 0.62) + " C" + (w * 0.3) + " " + (h * 0.5) + " " + (w * 0.6) + " " + (h * 0.8) + " " + w + " " + (h * 0.66) + '" stroke="#aad3df" stroke-width="26" fill="none"/>';
    else water = '<ellipse cx="' + (w * 0.3) + '" cy="' + (h * 0.3) + '" rx="' + (w * 0.1) + '" ry="' + (h * 0.08) + '" fill="#aad3df"/>';
    const highway = '<path d="M0 ' + (h * 0.35) + " L" + w + " " + (h * 0.28) + '" stroke="#f7d774" stroke-width="7"/><path d="M' + (w * 0.55) + " 0 L" + (w * 0.48) + " " + h + '" stroke="#f7d774" stroke-width="7"/>';
    const pins = homes.map(function (home) {
      const x = Math.round(home.x * w), y = Math.round(home.y * h);
      const label = (saved[home.id] ? "\u2665 " : "") + shortPrice(home.price);
      const pw = 12 + label.length * 7;
      return '<a href="#/homedetails/' + home.id + '" data-halo-id="pin-' + home.id + '" aria-label="' + HALO.esc(home.address + ", " + shortPrice(home.price)) + '">' +
        '<rect x="' + (x - pw / 2) + '" y="' + (y - 11) + '" width="' + pw + '" height="22" rx="11" fill="' + (saved[home.id] ? "#006aff" : "#d0021b") + '" stroke="#fff" stroke-width="1.5"/>' +
        '<text x="' + x + '" y="' + (y + 4.5) + '" font-size="12" font-weight="bold" fill="#fff" text-anchor="middle" font-family="Arial">' + label + "</text></a>";
    }).join("");
    return '<svg class="map-svg" width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + " " + h + '" role="img" aria-label="Map of ' + HALO.esc(city.label) + '">' +
      '<rect width="' + w + '" height="' + h + '" fill="#eceee5"/>' + parks + water + roads + highway +
      '<text x="' + (w / 2) + '" y="' + (h / 2) + '" font-size="22" fill="#6b6b6b" text-anchor="middle" font-family="Arial" opacity="0.55">' + HALO.esc(city.city) + "</text>" + pins + "</svg>";
  };
  window.ZIL_SHORT_PRICE = shortPrice;
})();
