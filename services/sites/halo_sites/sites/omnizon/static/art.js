/* Product pictures drawn as inline SVG (nothing is fetched): one simple drawing per art kind,
 * tinted with the product's colour. `OMNI_ART(product, size)` -> an <svg> string. */
(function () {
  "use strict";

  function shade(hex, f) {
    // Darken (f < 1) or lighten (f > 1) a #rrggbb colour.
    const n = parseInt(hex.slice(1), 16);
    const ch = [n >> 16, (n >> 8) & 255, n & 255].map(function (c) {
      const v = f < 1 ? c * f : c + (255 - c) * (f - 1);
      return Math.max(0, Math.min(255, Math.round(v)));
    });
    return "#" + ch.map(function (c) { return c.toString(16).padStart(2, "0"); }).join("");
  }

  const K = {
    earbuds: function (c, d) {
      return '<rect x="28" y="52" width="44" height="30" rx="14" fill="' + c + '" stroke="' + d + '"/>' +
        '<line x1="28" y1="64" x2="72" y2="64" stroke="' + d + '"/>' +
        '<ellipse cx="36" cy="32" rx="9" ry="11" fill="' + c + '" stroke="' + d + '"/><rect x="33" y="38" width="6" height="14" rx="3" fill="' + c + '" stroke="' + d + '"/>' +
        '<ellipse cx="64" cy="32" rx="9" ry="11" fill="' + c + '" stroke="' + d + '"/><rect x="61" y="38" width="6" height="14" rx="3" fill="' + c + '" stroke="' + d + '"/>';
    },
    speaker: function (c, d) {
      return '<ellipse cx="50" cy="62" rx="32" ry="20" fill="' + c + '"/><ellipse cx="50" cy="50" rx="32" ry="20" fill="' + shade(c, 1.3) + '"/>' +
        '<rect x="18" y="50" width="64" height="12" fill="' + c + '"/><ellipse cx="50" cy="48" rx="30" ry="17" fill="' + shade(c, 1.45) + '"/>' +
        '<circle cx="50" cy="48" r="4" fill="#2fb3ff"/>';
    },
    charger: function (c, d) {
      return '<rect x="30" y="30" width="40" height="46" rx="8" fill="' + c + '" stroke="#aaa" stroke-width="2"/>' +
        '<rect x="40" y="18" width="5" height="14" fill="#999"/><rect x="55" y="18" width="5" height="14" fill="#999"/>' +
        '<rect x="38" y="50" width="8" height="4" rx="2" fill="#555"/><rect x="54" y="50" width="8" height="4" rx="2" fill="#555"/><rect x="46" y="60" width="8" height="4" rx="1" fill="#555"/>';
    },
    headphones: function (c, d) {
      return '<path d="M22 58 V46 a28 28 0 0 1 56 0 V58" fill="none" stroke="' + c + '" stroke-width="7"/>' +
        '<rect x="14" y="50" width="18" height="30" rx="8" fill="' + c + '"/><rect x="68" y="50" width="18" height="30" rx="8" fill="' + c + '"/>' +
        '<rect x="26" y="54" width="8" height="22" rx="4" fill="' + shade(c, 1.5) + '"/><rect x="66" y="54" width="8" height="22" rx="4" fill="' + shade(c, 1.5) + '"/>';
    },
    monitor: function (c, d) {
      return '<rect x="8" y="20" width="84" height="50" rx="3" fill="' + c + '"/><rect x="12" y="24" width="76" height="42" fill="#3f7cbf"/>' +
        '<path d="M12 66 L40 40 L58 56 L70 46 L88 62 V66 Z" fill="#7fb3e6"/><rect x="46" y="70" width="8" height="12" fill="' + c + '"/><rect x="32" y="82" width="36" height="5" rx="2" fill="' + c + '"/>';
    },
    tablet: function (c, d) {
      return '<rect x="22" y="12" width="56" height="78" rx="7" fill="' + c + '"/><rect x="26" y="18" width="48" height="66" fill="#f59e42"/>' +
        '<circle cx="40" cy="40" r="9" fill="#ffd166"/><path d="M26 84 L26 66 L44 54 L58 66 L74 56 V84 Z" fill="#2a9d8f"/>';
    },
    keyboard: function (c, d) {
      let keys = "";
      for (let r = 0; r < 4; r++) for (let k = 0; k < 9; k++) keys += '<rect x="' + (13 + k * 8.4) + '" y="' + (38 + r * 8) + '" width="7" height="6" rx="1" fill="' + (["#ff5d8f", "#6c63ff", "#00c2a8", "#ffd166"][r]) + '"/>';
      return '<rect x="8" y="32" width="84" height="40" rx="5" fill="' + c + '"/>' + keys;
    },
    mouse: function (c, d) {
      return '<rect x="32" y="18" width="36" height="64" rx="18" fill="' + c + '"/><line x1="50" y1="18" x2="50" y2="42" stroke="' + shade(c, 1.6) + '" stroke-width="2"/>' +
        '<rect x="47" y="26" width="6" height="10" rx="3" fill="' + shade(c, 1.8) + '"/>';
    },
    camera: function (c, d) {
      return '<rect x="14" y="28" width="72" height="52" rx="10" fill="' + c + '"/><circle cx="50" cy="56" r="17" fill="#333"/><circle cx="50" cy="56" r="10" fill="#6b7b8c"/>' +
        '<rect x="64" y="34" width="14" height="8" rx="2" fill="#222"/><rect x="22" y="34" width="10" height="6" rx="2" fill="#fff"/>';
    },
    watch: function (c, d) {
      return '<rect x="38" y="8" width="24" height="84" rx="8" fill="' + c + '"/><rect x="28" y="30" width="44" height="40" rx="10" fill="#444"/>' +
        '<rect x="32" y="34" width="36" height="32" rx="7" fill="#0b132b"/><text x="50" y="55" font-size="11" fill="#5ef38c" text-anchor="middle" font-family="Arial">72</text>';
    },
    pot: function (c, d) {
      return '<rect x="22" y="40" width="56" height="42" rx="6" fill="' + c + '"/><rect x="22" y="40" width="56" height="8" fill="' + shade(c, 0.8) + '"/>' +
        '<rect x="8" y="46" width="16" height="6" rx="3" fill="#333"/><rect x="76" y="46" width="16" height="6" rx="3" fill="#333"/>' +
        '<ellipse cx="50" cy="36" rx="32" ry="6" fill="' + shade(c, 1.2) + '" stroke="' + shade(c, 0.7) + '"/><rect x="44" y="25" width="12" height="7" rx="3" fill="#333"/>';
    },
    pan: function (c, d) {
      return '<ellipse cx="42" cy="56" rx="32" ry="22" fill="' + c + '"/><ellipse cx="42" cy="53" rx="26" ry="16" fill="' + shade(c, 1.3) + '"/>' +
        '<rect x="70" y="44" width="26" height="8" rx="4" fill="' + c + '" transform="rotate(-14 70 48)"/>';
    },
    kettle: function (c, d) {
      return '<path d="M28 84 L32 38 Q50 26 68 38 L72 84 Z" fill="' + c + '" stroke="#999"/><path d="M68 44 Q86 48 72 72" fill="none" stroke="#333" stroke-width="6"/>' +
        '<path d="M30 46 L14 36" stroke="' + c + '" stroke-width="6"/><rect x="26" y="82" width="48" height="6" rx="2" fill="#333"/><rect x="44" y="28" width="12" height="6" rx="2" fill="#333"/>';
    },
    blender: function (c, d) {
      return '<path d="M32 14 H68 L62 62 H38 Z" fill="#cfe8f5" stroke="#8ab" stroke-width="2"/><rect x="30" y="10" width="40" height="6" rx="2" fill="#333"/>' +
        '<rect x="30" y="62" width="40" height="26" rx="5" fill="' + c + '"/><circle cx="50" cy="75" r="5" fill="#fff"/>';
    },
    mug: function (c, d) {
      return '<rect x="12" y="40" width="30" height="36" rx="4" fill="' + c + '"/><path d="M42 48 Q52 58 42 68" fill="none" stroke="' + c + '" stroke-width="5"/>' +
        '<rect x="54" y="34" width="30" height="42" rx="4" fill="' + shade(c, 0.8) + '"/><path d="M84 44 Q95 55 84 66" fill="none" stroke="' + shade(c, 0.8) + '" stroke-width="5"/>';
    },
    lamp: function (c, d) {
      return '<rect x="24" y="82" width="40" height="6" rx="3" fill="#444"/><path d="M44 82 L44 46 L70 24" fill="none" stroke="#444" stroke-width="5"/>' +
        '<path d="M60 16 L86 30 L78 40 L56 26 Z" fill="' + c + '" stroke="#888"/><path d="M78 40 L70 60" stroke="#ffe066" stroke-width="2" opacity="0.8"/>';
    },
    pillow: function (c, d) {
      return '<path d="M12 34 Q50 22 88 34 Q94 52 88 70 Q50 82 12 70 Q6 52 12 34 Z" fill="' + c + '" stroke="#ccc" stroke-width="2"/>' +
        '<path d="M20 42 Q50 34 80 42" fill="none" stroke="#e4e4e4" stroke-width="2"/>';
    },
    knife: function (c, d) {
      return '<path d="M10 62 L64 38 L66 46 L14 66 Z" fill="#d9dde1" stroke="#999"/><rect x="64" y="38" width="28" height="10" rx="4" fill="#222" transform="rotate(-22 64 40)"/>';
    },
    pitcher: function (c, d) {
      return '<path d="M26 20 H68 L72 84 H28 Z" fill="' + c + '" opacity="0.8"/><path d="M70 30 Q90 34 82 62 L72 62" fill="none" stroke="#3a86a8" stroke-width="5"/>' +
        '<rect x="24" y="16" width="48" height="8" rx="2" fill="#3a86a8"/><rect x="36" y="28" width="24" height="22" rx="3" fill="#fff" opacity="0.7"/>';
    },
    book: function (c, d, p) {
      const words = p.name.split(":")[0].split("(")[0].trim().split(" ");
      let lines = [], cur = "";
      words.forEach(function (w) {
        if ((cur + " " + w).trim().length > 11) { lines.push(cur.trim()); cur = w; } else cur = (cur + " " + w).trim();
      });
      if (cur) lines.push(cur);
      const text = lines.slice(0, 4).map(function (l, i) {
        return '<text x="52" y="' + (32 + i * 11) + '" font-size="9" font-weight="bold" fill="#fff" text-anchor="middle" font-family="Georgia, serif">' + HALO.esc(l) + "</text>";
      }).join("");
      return '<rect x="22" y="8" width="60" height="86" rx="2" fill="' + c + '"/><rect x="22" y="8" width="6" height="86" fill="' + shade(c, 0.7) + '"/>' + text +
        '<text x="52" y="86" font-size="7" fill="#f1f1f1" text-anchor="middle" font-family="Arial">' + HALO.esc(p.brand) + "</text>";
    },
    blocks: function (c, d) {
      const cs = ["#e63946", "#ffb703", "#219ebc", "#2a9d8f", "#fb8500"];
      let out = "";
      [[14, 60, 30], [46, 60, 30], [28, 40, 30], [60, 40, 26], [40, 20, 24]].forEach(function (b, i) {
        out += '<rect x="' + b[0] + '" y="' + b[1] + '" width="' + b[2] + '" height="20" rx="2" fill="' + cs[i] + '"/>' +
          '<circle cx="' + (b[0] + 8) + '" cy="' + (b[1] - 1) + '" r="3" fill="' + cs[i] + '"/><circle cx="' + (b[0] + b[2] - 8) + '" cy="' + (b[1] - 1) + '" r="3" fill="' + cs[i] + '"/>';
      });
      return out;
    },
    puzzle: function (c, d) {
      return '<rect x="12" y="22" width="76" height="56" fill="#a8dadc"/><path d="M12 58 L34 40 L50 54 L66 36 L88 56 V78 H12 Z" fill="' + c + '"/>' +
        '<circle cx="72" cy="34" r="6" fill="#ffd166"/><path d="M12 50 H88 M38 22 V78 M62 22 V78" stroke="#fff" stroke-width="1" opacity="0.7"/>';
    },
    bear: function (c, d) {
      return '<circle cx="32" cy="24" r="9" fill="' + c + '"/><circle cx="68" cy="24" r="9" fill="' + c + '"/><circle cx="50" cy="36" r="20" fill="' + c + '"/>' +
        '<ellipse cx="50" cy="72" rx="24" ry="22" fill="' + c + '"/><ellipse cx="50" cy="42" rx="8" ry="6" fill="' + shade(c, 1.4) + '"/>' +
        '<circle cx="43" cy="32" r="2.5" fill="#222"/><circle cx="57" cy="32" r="2.5" fill="#222"/><circle cx="50" cy="40" r="2.5" fill="#222"/>';
    },
    car: function (c, d) {
      return '<path d="M10 62 L20 44 H62 L76 56 H90 V70 H10 Z" fill="' + c + '"/><path d="M26 48 H58 L66 56 H22 Z" fill="#cfe8f5"/>' +
        '<circle cx="28" cy="72" r="9" fill="#222"/><circle cx="74" cy="72" r="9" fill="#222"/><circle cx="28" cy="72" r="3" fill="#aaa"/><circle cx="74" cy="72" r="3" fill="#aaa"/>';
    },
    boardgame: function (c, d) {
      return '<rect x="12" y="20" width="76" height="60" rx="3" fill="' + c + '"/><polygon points="50,30 66,39 66,57 50,66 34,57 34,39" fill="#f4d35e"/>' +
        '<polygon points="50,38 58,43 58,53 50,58 42,53 42,43" fill="#2a9d8f"/><text x="50" y="76" font-size="7" fill="#fff" text-anchor="middle" font-family="Arial" font-weight="bold">CATANZA</text>';
    },
    markers: function (c, d) {
      const cs = ["#e63946", "#f77f00", "#fcbf49", "#2a9d8f", "#3a86ff", "#8338ec"];
      return cs.map(function (x, i) {
        return '<rect x="' + (16 + i * 12) + '" y="22" width="9" height="60" rx="3" fill="' + x + '"/><rect x="' + (16 + i * 12) + '" y="16" width="9" height="10" rx="2" fill="' + shade(x, 0.7) + '"/>';
      }).join("");
    },
    kite: function (c, d) {
      return '<polygon points="50,8 80,40 50,80 20,40" fill="' + c + '"/><polygon points="50,8 80,40 50,40" fill="#ffbe0b"/><polygon points="20,40 50,40 50,80" fill="#3a86ff"/>' +
        '<path d="M50 80 Q40 88 52 94 Q62 98 56 100" fill="none" stroke="#555" stroke-width="1.5"/>';
    },
    chess: function (c, d) {
      let sq = "";
      for (let r = 0; r < 4; r++) for (let k = 0; k < 4; k++) if ((r + k) % 2 === 0) sq += '<rect x="' + (18 + k * 16) + '" y="' + (44 + r * 11) + '" width="16" height="11" fill="#5c3d1e"/>';
      return '<rect x="18" y="44" width="64" height="44" fill="#e8c99b"/>' + sq +
        '<path d="M44 40 Q44 28 50 24 Q56 28 56 40 Z" fill="#111"/><circle cx="50" cy="20" r="5" fill="#111"/>';
    },
    bubbles: function (c, d) {
      return '<rect x="18" y="54" width="40" height="30" rx="6" fill="' + c + '"/><circle cx="38" cy="69" r="9" fill="#fff"/>' +
        '<circle cx="66" cy="36" r="10" fill="none" stroke="#48cae4" stroke-width="2"/><circle cx="80" cy="18" r="7" fill="none" stroke="#f72585" stroke-width="2"/><circle cx="56" cy="18" r="5" fill="none" stroke="#7209b7" stroke-width="2"/>';
    },
    lab: function (c, d) {
      return '<path d="M38 14 H56 V40 L74 80 Q76 86 70 86 H24 Q18 86 20 80 L38 40 Z" fill="#e9f5ef" stroke="#888" stroke-width="2"/>' +
        '<path d="M27 66 H67 L74 80 Q76 86 70 86 H24 Q18 86 20 80 Z" fill="' + c + '"/><circle cx="44" cy="56" r="3" fill="' + c + '"/><circle cx="52" cy="48" r="2" fill="' + c + '"/>';
    },
    mat: function (c, d) {
      return '<polygon points="14,82 30,58 80,58 64,82" fill="' + c + '"/><circle cx="76" cy="46" r="18" fill="' + shade(c, 0.85) + '"/>' +
        '<circle cx="76" cy="46" r="12" fill="' + c + '"/><circle cx="76" cy="46" r="6" fill="' + shade(c, 0.7) + '"/>';
    },
    dumbbell: function (c, d) {
      return '<rect x="30" y="46" width="40" height="8" fill="#888"/><rect x="14" y="30" width="16" height="40" rx="3" fill="' + c + '"/><rect x="70" y="30" width="16" height="40" rx="3" fill="' + c + '"/>' +
        '<rect x="6" y="38" width="8" height="24" rx="2" fill="' + c + '"/><rect x="86" y="38" width="8" height="24" rx="2" fill="' + c + '"/>';
    },
    bottle: function (c, d) {
      return '<rect x="36" y="22" width="28" height="68" rx="8" fill="' + c + '"/><rect x="40" y="10" width="20" height="14" rx="4" fill="#222"/><rect x="40" y="40" width="6" height="36" rx="3" fill="#fff" opacity="0.35"/>';
    },
    tent: function (c, d) {
      return '<polygon points="50,16 90,82 10,82" fill="' + c + '"/><polygon points="50,16 62,82 38,82" fill="' + shade(c, 0.7) + '"/><polygon points="50,46 58,82 42,82" fill="#222"/><rect x="4" y="82" width="92" height="4" fill="#6a994e"/>';
    },
    ball: function (c, d) {
      return '<circle cx="50" cy="50" r="34" fill="' + c + '"/><path d="M16 50 H84 M50 16 V84" stroke="#222" stroke-width="2"/>' +
        '<path d="M26 26 Q40 50 26 74 M74 26 Q60 50 74 74" fill="none" stroke="#222" stroke-width="2"/>';
    },
    backpack: function (c, d) {
      return '<path d="M38 20 Q50 8 62 20" fill="none" stroke="#333" stroke-width="4"/><rect x="26" y="20" width="48" height="70" rx="14" fill="' + c + '"/>' +
        '<rect x="34" y="56" width="32" height="24" rx="6" fill="' + shade(c, 0.75) + '"/><rect x="34" y="30" width="32" height="4" rx="2" fill="' + shade(c, 0.75) + '"/>';
    },
    bands: function (c, d) {
      const cs = ["#ffd166", "#f4a261", "#e76f51", "#2a9d8f", "#264653"];
      return cs.map(function (x, i) { return '<ellipse cx="50" cy="' + (30 + i * 10) + '" rx="' + (34 - i * 3) + '" ry="9" fill="none" stroke="' + x + '" stroke-width="5"/>'; }).join("");
    },
    rope: function (c, d) {
      return '<path d="M26 30 Q20 90 50 84 Q80 90 74 30" fill="none" stroke="#333" stroke-width="2.5"/><rect x="20" y="14" width="10" height="22" rx="4" fill="' + c + '"/><rect x="70" y="14" width="10" height="22" rx="4" fill="' + c + '"/>';
    },
    shirt: function (c, d) {
      return '<path d="M34 14 L16 24 L8 42 L22 48 L26 40 L26 88 H74 V40 L78 48 L92 42 L84 24 L66 14 Q50 26 34 14 Z" fill="' + c + '"/>';
    },
    hoodie: function (c, d) {
      return '<path d="M34 18 L16 28 L10 76 L22 78 L26 46 L26 90 H74 V46 L78 78 L90 76 L84 28 L66 18 Q50 4 34 18 Z" fill="' + c + '"/><path d="M38 20 Q50 36 62 20" fill="' + shade(c, 0.7) + '"/><rect x="38" y="62" width="24" height="12" rx="3" fill="' + shade(c, 0.8) + '"/>';
    },
    jacket: function (c, d) {
      return '<path d="M34 14 L16 24 L10 80 L22 82 L26 44 L26 90 H74 V44 L78 82 L90 80 L84 24 L66 14 Q50 22 34 14 Z" fill="' + c + '"/><line x1="50" y1="22" x2="50" y2="90" stroke="' + shade(c, 0.6) + '" stroke-width="2"/>';
    },
    shoe: function (c, d) {
      return '<path d="M10 70 L14 44 Q24 40 34 46 L52 54 Q72 56 86 62 Q92 66 90 74 H10 Z" fill="' + c + '"/><rect x="10" y="72" width="80" height="8" rx="3" fill="#f1f1f1" stroke="#ccc"/>' +
        '<path d="M30 50 L38 46 M36 53 L44 49 M42 56 L50 52" stroke="#fff" stroke-width="2"/>';
    },
    beanie: function (c, d) {
      return '<path d="M20 66 Q20 24 50 24 Q80 24 80 66 Z" fill="' + c + '"/><rect x="16" y="62" width="68" height="16" rx="4" fill="' + shade(c, 0.75) + '"/><circle cx="50" cy="20" r="9" fill="' + shade(c, 1.3) + '"/>';
    },
    socks: function (c, d) {
      return '<path d="M26 14 H44 V60 Q44 82 26 84 Q12 84 16 72 L26 58 Z" fill="' + c + '" stroke="#bbb"/><rect x="26" y="14" width="18" height="8" fill="#e63946"/>' +
        '<path d="M56 14 H74 V60 Q74 82 56 84 Q42 84 46 72 L56 58 Z" fill="' + c + '" stroke="#bbb"/><rect x="56" y="14" width="18" height="8" fill="#457b9d"/>';
    },
    jeans: function (c, d) {
      return '<path d="M28 12 H72 L78 90 H56 L50 40 L44 90 H22 Z" fill="' + c + '"/><rect x="28" y="12" width="44" height="6" fill="' + shade(c, 0.7) + '"/>';
    },
    sunglasses: function (c, d) {
      return '<path d="M10 40 H90" stroke="' + c + '" stroke-width="4"/><path d="M14 40 H44 Q44 64 29 64 Q14 64 14 40 Z" fill="' + c + '"/><path d="M56 40 H86 Q86 64 71 64 Q56 64 56 40 Z" fill="' + c + '"/>';
    },
    cap: function (c, d) {
      return '<path d="M18 60 Q18 26 50 26 Q82 26 82 60 Z" fill="' + c + '"/><path d="M60 58 Q90 56 96 66 Q80 70 58 66 Z" fill="' + shade(c, 0.75) + '"/><circle cx="50" cy="26" r="3" fill="' + shade(c, 0.7) + '"/>';
    },
  };

  window.OMNI_ART = function (p, size) {
    const draw = K[p.kind] || K.blocks;
    const s = size || 160;
    return '<svg width="' + s + '" height="' + s + '" viewBox="0 0 100 100" aria-hidden="true" focusable="false">' +
      draw(p.color, shade(p.color, 0.75), p) + "</svg>";
  };
})();
