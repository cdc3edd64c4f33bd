/* Staynb's pictures as inline SVG, drawn from a stay's scene and palette: no image files, no CDN.
 * STAY_PHOTO(stay, w, h, shot) draws shot 0 (the outside in its landscape), 1 (living room),
 * 2 (bedroom), 3 (kitchen) or 4 (a detail of the view). */
(function () {
  "use strict";

  const SKY = { city: ["#8fb8de", "#e3eef8"], beach: ["#5fb0e0", "#d6f0fb"], mountain: ["#7aa3cf", "#eaf2fa"],
    lake: ["#88aacc", "#e6eef5"], country: ["#f0b46a", "#fbe7c6"], jungle: ["#8cc5b8", "#e5f4ef"] };

  function sky(id, scene, w, h) {
    const c = SKY[scene] || SKY.city;
    return '<defs><linearGradient id="' + id + '" x1="0" y1="0" x2="0" y2="1"><stop offset="0" stop-color="' + c[0] + '"/><stop offset="1" stop-color="' + c[1] + '"/></linearGradient></defs>' +
      '<rect width="' + w + '" height="' + h + '" fill="url(#' + id + ')"/>';
  }

  function landscape(stay, w, h) {
    const g = h * 0.68;
    const v = stay.variant;
    switch (stay.scene) {
      case "beach":
        return '<rect y="' + g + '" width="' + w + '" height="' + (h - g) + '" fill="#f3dfb0"/><rect y="' + (g - 18) + '" width="' + w + '" height="26" fill="#2f8fc4"/>' +
          '<path d="M' + (w * 0.82) + " " + h + " Q" + (w * 0.8) + " " + (g - 40) + " " + (w * 0.86) + " " + (g - 90) + '" stroke="#7a5a3a" stroke-width="7" fill="none"/>' +
          '<ellipse cx="' + (w * 0.86) + '" cy="' + (g - 92) + '" rx="38" ry="12" fill="#3f8f4f"/><ellipse cx="' + (w * 0.86) + '" cy="' + (g - 92) + '" rx="12" ry="34" fill="#3f8f4f"/>';
      case "mountain":
        return '<polygon points="0,' + g + " " + (w * 0.25) + "," + (h * 0.18) + " " + (w * 0.5) + "," + g + '" fill="#6b7f99"/>' +
          '<polygon points="' + (w * 0.3) + "," + g + " " + (w * 0.62) + "," + (h * 0.1) + " " + w + "," + g + '" fill="#586a82"/>' +
          '<polygon points="' + (w * 0.55) + "," + (h * 0.22) + " " + (w * 0.62) + "," + (h * 0.1) + " " + (w * 0.69) + "," + (h * 0.22) + '" fill="#fff"/>' +
          '<rect y="' + g + '" width="' + w + '" height="' + (h - g) + '" fill="#5f8a4f"/>' +
          '<polygon points="' + (w * 0.08) + "," + (g + 20) + " " + (w * 0.12) + "," + (g - 50) + " " + (w * 0.16) + "," + (g + 20) + '" fill="#2f5a3a"/>';
      case "lake":
        return '<polygon points="0,' + (g - 10) + " " + (w * 0.35) + "," + (h * 0.2) + " " + (w * 0.7) + "," + (g - 10) + '" fill="#4d6b5a"/>' +
          '<rect y="' + (g - 10) + '" width="' + w + '" height="' + (h - g + 10) + '" fill="#3f7fa6"/><rect y="' + (h - 22) + '" width="' + w + '" height="22" fill="#6d9a58"/>';
      case "country":
        return '<rect y="' + g + '" width="' + w + '" height="' + (h - g) + '" fill="#9c8cc4"/>' +
          [0, 1, 2, 3, 4].map(function (i) { return '<rect y="' + (g + 8 + i * 14) + '" width="' + w + '" height="5" fill="#7d6aa8"/>'; }).join("") +
          '<circle cx="' + (w * (0.15 + v * 0.2)) + '" cy="' + (g - 26) + '" r="24" fill="#6f8f3f"/>';
      case "jungle":
        return '<polygon points="' + (w * 0.4) + "," + g + " " + (w * 0.62) + "," + (h * 0.16) + " " + (w * 0.84) + "," + g + '" fill="#6d7d6a"/>' +
          '<rect y="' + g + '" width="' + w + '" height="' + (h - g) + '" fill="#3f7f3a"/><circle cx="' + (w * 0.1) + '" cy="' + (g - 10) + '" r="40" fill="#2f6f35"/>' +
          '<circle cx="' + (w * 0.92) + '" cy="' + g + '" r="46" fill="#2f6f35"/>';
      default: {
        let s = "";
        for (let i = 0; i < 9; i++) {
          const bw = w / 9, bh = h * (0.25 + ((i * 37 + v * 11) % 30) / 100);
          s += '<rect x="' + (i * bw) + '" y="' + (g - bh) + '" width="' + (bw - 3) + '" height="' + bh + '" fill="' + (i % 2 ? "#9aa7b8" : "#b8c2cf") + '"/>';
        }
        return s + '<rect y="' + g + '" width="' + w + '" height="' + (h - g) + '" fill="#8b8f96"/>';
      }
    }
  }

  function house(stay, w, h) {
    const wall = stay.palette[0], roof = stay.palette[1];
    const hw = w * 0.42, hh = h * 0.3, x = w * 0.22 + stay.variant * w * 0.04, y = h * 0.68 - hh;
    return '<polygon points="' + (x - 14) + "," + y + " " + (x + hw / 2) + "," + (y - hh * 0.55) + " " + (x + hw + 14) + "," + y + '" fill="' + roof + '"/>' +
      '<rect x="' + x + '" y="' + y + '" width="' + hw + '" height="' + hh + '" fill="' + wall + '"/>' +
      '<rect x="' + (x + hw * 0.12) + '" y="' + (y + hh * 0.2) + '" width="' + (hw * 0.22) + '" height="' + (hh * 0.3) + '" fill="#a9d1ec" stroke="#fff" stroke-width="3"/>' +
      '<rect x="' + (x + hw * 0.66) + '" y="' + (y + hh * 0.2) + '" width="' + (hw * 0.22) + '" height="' + (hh * 0.3) + '" fill="#a9d1ec" stroke="#fff" stroke-width="3"/>' +
      '<rect x="' + (x + hw * 0.42) + '" y="' + (y + hh * 0.45) + '" width="' + (hw * 0.16) + '" height="' + (hh * 0.55) + '" fill="' + roof + '"/>';
  }

  function room(stay, w, h, shot) {
    const wall = stay.palette[0], accent = stay.palette[1];
    let s = '<rect width="' + w + '" height="' + h + '" fill="' + wall + '"/><rect y="' + (h * 0.72) + '" width="' + w + '" height="' + (h * 0.28) + '" fill="#c9a77c"/>' +
      '<rect x="' + (w * 0.58) + '" y="' + (h * 0.12) + '" width="' + (w * 0.3) + '" height="' + (h * 0.38) + '" fill="' + (SKY[stay.scene] || SKY.city)[0] + '" stroke="#fff" stroke-width="6"/>';
    if (shot === 1) {
      s += '<rect x="' + (w * 0.08) + '" y="' + (h * 0.5) + '" width="' + (w * 0.4) + '" height="' + (h * 0.2) + '" rx="10" fill="' + accent + '"/>' +
        '<rect x="' + (w * 0.08) + '" y="' + (h * 0.42) + '" width="' + (w * 0.4) + '" height="' + (h * 0.12) + '" rx="10" fill="' + accent + '" opacity="0.8"/>' +
        '<rect x="' + (w * 0.55) + '" y="' + (h * 0.6) + '" width="' + (w * 0.18) + '" height="' + (h * 0.06) + '" fill="#7a5a3a"/>';
    } else if (shot === 2) {
      s += '<rect x="' + (w * 0.1) + '" y="' + (h * 0.5) + '" width="' + (w * 0.44) + '" height="' + (h * 0.22) + '" fill="#fff"/>' +
        '<rect x="' + (w * 0.1) + '" y="' + (h * 0.36) + '" width="' + (w * 0.05) + '" height="' + (h * 0.36) + '" fill="#7a5a3a"/>' +
        '<rect x="' + (w * 0.16) + '" y="' + (h * 0.46) + '" width="' + (w * 0.12) + '" height="' + (h * 0.07) + '" rx="6" fill="' + accent + '"/>';
    } else {
      s += '<rect x="' + (w * 0.05) + '" y="' + (h * 0.45) + '" width="' + (w * 0.5) + '" height="' + (h * 0.27) + '" fill="#f5f5f5"/>' +
        '<rect x="' + (w * 0.05) + '" y="' + (h * 0.42) + '" width="' + (w * 0.5) + '" height="' + (h * 0.04) + '" fill="' + accent + '"/>' +
        '<rect x="' + (w * 0.1) + '" y="' + (h * 0.12) + '" width="' + (w * 0.4) + '" height="' + (h * 0.16) + '" fill="#e8e2d6"/>';
    }
    return s;
  }

  window.STAY_PHOTO = function (stay, w, h, shot) {
    const id = "sky-" + stay.id + "-" + (shot || 0) + "-" + w;
    let body;
    if (shot === 1 || shot === 2 || shot === 3) body = room(stay, w, h, shot);
    else if (shot === 4) body = sky(id, stay.scene, w, h) + landscape(stay, w, h);
    else body = sky(id, stay.scene, w, h) + landscape(stay, w, h) + house(stay, w, h);
    return '<svg width="' + w + '" height="' + h + '" viewBox="0 0 ' + w + " " + h + '" preserveAspectRatio="xMidYMid slice" aria-hidden="true" focusable="false">' + body + "</svg>";
  };
})();
