/* DashDish's pictures: small inline SVG food illustrations (no image files, nothing fetched), one
 * per kind of dish, drawn on a 100x70 canvas. `HALO.foodArt(kind, w, h, bg)` -> an <svg> string. */
(function () {
  "use strict";

  const PLATE = '<ellipse cx="50" cy="42" rx="40" ry="20" fill="#fff" stroke="#e4e4e4" stroke-width="1.5"/><ellipse cx="50" cy="41" rx="30" ry="14" fill="#f6f6f6"/>';
  const BOX = '<path d="M24 30 L76 30 L70 62 L30 62 Z" fill="#fff" stroke="#d9d9d9"/><path d="M24 30 L34 18 L66 18 L76 30 Z" fill="#f3f3f3" stroke="#d9d9d9"/>';

  function wing(x, y, c, r) {
    return '<g transform="translate(' + x + ' ' + y + ') rotate(' + r + ')"><ellipse cx="0" cy="0" rx="11" ry="7" fill="' + c + '"/><rect x="9" y="-2" width="8" height="4" rx="2" fill="#f2e2c4"/><ellipse cx="-3" cy="-2" rx="5" ry="2" fill="rgba(255,255,255,0.25)"/></g>';
  }
  const ART = {
    wings: function () {
      return PLATE + wing(38, 38, "#d9a13b", -20) + wing(58, 36, "#c9872a", 15) + wing(48, 46, "#e0b052", 5) + wing(64, 47, "#cf9133", -10) +
        '<circle cx="41" cy="36" r="1.2" fill="#6b4a1d"/><circle cx="60" cy="34" r="1.2" fill="#6b4a1d"/><circle cx="50" cy="45" r="1.2" fill="#6b4a1d"/>';
    },
    taco: function () {
      return PLATE + '<path d="M22 46 A28 26 0 0 1 78 46 Z" fill="#f2c45a" stroke="#d9a23b" stroke-width="2"/>' +
        '<path d="M28 44 Q35 30 44 36 Q50 26 58 34 Q66 28 72 44 Z" fill="#4e9a3a"/><circle cx="42" cy="40" r="3" fill="#d0392b"/><circle cx="56" cy="39" r="3" fill="#d0392b"/><rect x="47" y="38" width="6" height="4" fill="#8b4a2b"/>';
    },
    burrito: function () {
      return PLATE + '<g transform="rotate(-12 50 42)"><rect x="22" y="32" width="56" height="20" rx="10" fill="#f0d9a8" stroke="#d8b97a" stroke-width="1.5"/><ellipse cx="76" cy="42" rx="5" ry="9" fill="#8b4a2b"/><circle cx="75" cy="38" r="2" fill="#4e9a3a"/><circle cx="77" cy="45" r="2" fill="#d0392b"/><path d="M32 34 L30 50 M44 33 L42 51 M56 33 L54 51" stroke="#d8b97a"/></g>';
    },
    noodles: function () {
      return BOX + '<path d="M30 30 Q36 22 42 30 Q48 22 54 30 Q60 22 66 30 Q70 24 72 30" stroke="#e8c46a" stroke-width="3" fill="none"/><path d="M34 28 Q40 18 46 28 Q52 18 58 28 Q64 20 68 28" stroke="#dcb050" stroke-width="3" fill="none"/>' +
        '<line x1="58" y1="6" x2="48" y2="30" stroke="#6b4a1d" stroke-width="2.5"/><line x1="64" y1="8" x2="52" y2="30" stroke="#6b4a1d" stroke-width="2.5"/><circle cx="40" cy="26" r="2.5" fill="#4e9a3a"/><circle cx="60" cy="27" r="2.5" fill="#c9872a"/>';
    },
    ramen: function () {
      return '<ellipse cx="50" cy="36" rx="38" ry="12" fill="#3b2a2a"/><path d="M12 36 Q50 80 88 36 Z" fill="#b8262b"/><ellipse cx="50" cy="36" rx="34" ry="9" fill="#e6b86a"/>' +
        '<path d="M24 37 Q32 31 40 37 Q48 31 56 37 Q64 31 72 37" stroke="#f6dc8e" stroke-width="2.5" fill="none"/><ellipse cx="38" cy="34" rx="7" ry="5" fill="#fff"/><ellipse cx="38" cy="34" rx="3.5" ry="2.5" fill="#f2a93b"/><rect x="52" y="30" width="14" height="7" rx="3" fill="#c98a6a"/><rect x="64" y="29" width="4" height="9" fill="#2e4a2e"/>';
    },
    rice: function () {
      return '<path d="M16 34 Q50 80 84 34 Z" fill="#2f5d8a"/><ellipse cx="50" cy="34" rx="34" ry="10" fill="#fafafa" stroke="#e3e3e3"/>' +
        '<circle cx="40" cy="31" r="2" fill="#f2c45a"/><circle cx="46" cy="35" r="2" fill="#4e9a3a"/><circle cx="58" cy="30" r="2" fill="#e26b3a"/><circle cx="62" cy="35" r="2" fill="#f2c45a"/><path d="M30 32 Q40 24 50 32" fill="#c9872a"/><path d="M52 29 Q62 22 70 31" fill="#a8642a"/>';
    },
    pizza: function () {
      return '<circle cx="50" cy="36" r="30" fill="#e0a44a"/><circle cx="50" cy="36" r="25" fill="#f4d470"/><circle cx="50" cy="36" r="24" fill="none" stroke="#d9573b" stroke-width="2" stroke-dasharray="3 5"/>' +
        '<circle cx="40" cy="28" r="4.5" fill="#c0392b"/><circle cx="58" cy="26" r="4.5" fill="#c0392b"/><circle cx="62" cy="42" r="4.5" fill="#c0392b"/><circle cx="44" cy="45" r="4.5" fill="#c0392b"/><circle cx="51" cy="36" r="4.5" fill="#c0392b"/>' +
        '<line x1="50" y1="6" x2="50" y2="66" stroke="#d49a40" stroke-width="1"/><line x1="20" y1="36" x2="80" y2="36" stroke="#d49a40" stroke-width="1"/>';
    },
    sub: function () {
      return '<rect x="12" y="24" width="76" height="12" rx="6" fill="#d9a257"/><rect x="12" y="35" width="76" height="4" fill="#4e9a3a"/><rect x="14" y="38" width="72" height="4" fill="#c0392b"/><rect x="13" y="41" width="74" height="3" fill="#f2c45a"/><rect x="14" y="43" width="72" height="4" fill="#e89aa0"/><rect x="12" y="46" width="76" height="10" rx="5" fill="#d9a257"/>' +
        '<circle cx="26" cy="28" r="1" fill="#f4e2c0"/><circle cx="44" cy="27" r="1" fill="#f4e2c0"/><circle cx="62" cy="28" r="1" fill="#f4e2c0"/><circle cx="76" cy="27" r="1" fill="#f4e2c0"/>';
    },
    chicken: function () {
      return '<ellipse cx="50" cy="26" rx="28" ry="13" fill="#e1a94e"/><ellipse cx="46" cy="22" rx="8" ry="3" fill="#f0c77a"/><rect x="20" y="33" width="60" height="4" rx="2" fill="#7dbb4f"/>' +
        '<path d="M18 40 Q50 30 82 40 L80 46 Q50 40 20 46 Z" fill="#c7812f"/><circle cx="34" cy="41" r="3" fill="#9ccf6a"/><circle cx="62" cy="41" r="3" fill="#9ccf6a"/><ellipse cx="50" cy="54" rx="28" ry="9" fill="#d99a4a"/>';
    },
    tenders: function () {
      return PLATE + '<g fill="#d9a13b"><rect x="26" y="32" width="26" height="9" rx="4.5" transform="rotate(-15 39 36)"/><rect x="46" y="30" width="26" height="9" rx="4.5" transform="rotate(10 59 34)"/><rect x="34" y="42" width="26" height="9" rx="4.5" transform="rotate(-5 47 46)"/><rect x="52" y="43" width="24" height="9" rx="4.5" transform="rotate(18 64 47)"/></g>';
    },
    roast: function () {
      return PLATE + '<ellipse cx="44" cy="38" rx="18" ry="12" fill="#b8702a"/><ellipse cx="40" cy="34" rx="8" ry="3" fill="#d8974a"/><rect x="58" y="36" width="12" height="5" rx="2.5" fill="#a85f22" transform="rotate(20 64 38)"/><circle cx="70" cy="42" r="4" fill="#f2e2c4"/>' +
        '<ellipse cx="62" cy="50" rx="9" ry="4" fill="#f4ecd8"/><circle cx="30" cy="48" r="3" fill="#4e9a3a"/><circle cx="36" cy="51" r="3" fill="#e26b3a"/>';
    },
    burger: function () {
      return '<path d="M20 30 Q50 0 80 30 Z" fill="#d9923a"/><circle cx="38" cy="20" r="1.2" fill="#f7e6c4"/><circle cx="50" cy="15" r="1.2" fill="#f7e6c4"/><circle cx="62" cy="21" r="1.2" fill="#f7e6c4"/>' +
        '<path d="M17 32 L83 32 L80 36 L20 36 Z" fill="#6fbf3f"/><path d="M18 36 L82 36 L78 41 L22 41 Z" fill="#f4c430"/><rect x="19" y="40" width="62" height="9" rx="4" fill="#6b3a1f"/><rect x="20" y="49" width="60" height="3" fill="#d0392b"/><path d="M20 52 L80 52 Q80 62 70 62 L30 62 Q20 62 20 52 Z" fill="#d9923a"/>';
    },
    fries: function () {
      let s = '<g fill="#f4c430" stroke="#e0ac20" stroke-width="0.8">';
      [[34, 10, -8], [40, 6, -3], [46, 4, 2], [52, 7, 6], [58, 5, 10], [63, 10, 14], [43, 9, 0], [55, 9, 4]].forEach(function (f) {
        s += '<rect x="' + f[0] + '" y="' + f[1] + '" width="5" height="30" transform="rotate(' + f[2] + ' ' + f[0] + ' 40)"/>';
      });
      return s + '</g><path d="M30 30 L70 30 L64 64 L36 64 Z" fill="#d0392b"/><path d="M38 40 Q50 50 62 40" stroke="#fff" stroke-width="3" fill="none"/>';
    },
    curry: function () {
      return PLATE + '<ellipse cx="40" cy="41" rx="17" ry="10" fill="#fafafa" stroke="#ececec"/><ellipse cx="60" cy="41" rx="17" ry="10" fill="#e07a2a"/><circle cx="56" cy="39" r="3.5" fill="#f2b366"/><circle cx="64" cy="43" r="3.5" fill="#f2b366"/><circle cx="60" cy="36" r="1.5" fill="#4e9a3a"/>';
    },
    salad: function () {
      return '<path d="M16 34 Q50 78 84 34 Z" fill="#f2efe6" stroke="#ddd"/><g><circle cx="34" cy="30" r="9" fill="#6fbf3f"/><circle cx="48" cy="26" r="10" fill="#4e9a3a"/><circle cx="63" cy="29" r="9" fill="#7dcb4a"/><circle cx="42" cy="35" r="4" fill="#e74c3c"/><circle cx="58" cy="35" r="4" fill="#f39c12"/><circle cx="50" cy="31" r="3" fill="#fff6d5"/></g>';
    },
    soup: function () {
      return '<path d="M18 32 Q50 74 82 32 Z" fill="#fff" stroke="#ddd"/><ellipse cx="50" cy="32" rx="32" ry="9" fill="#c8643a"/><circle cx="42" cy="31" r="3" fill="#f4e2c0"/><circle cx="56" cy="33" r="3" fill="#f4e2c0"/><circle cx="50" cy="29" r="1.5" fill="#4e9a3a"/>' +
        '<path d="M40 18 Q36 12 40 6 M50 18 Q46 12 50 6 M60 18 Q56 12 60 6" stroke="#bbb" stroke-width="1.5" fill="none"/>';
    },
    side: function () {
      return PLATE + '<ellipse cx="40" cy="40" rx="10" ry="6" fill="#e3b056"/><ellipse cx="58" cy="38" rx="10" ry="6" fill="#d9a13b"/><ellipse cx="50" cy="46" rx="10" ry="6" fill="#edc36e"/><ellipse cx="66" cy="46" rx="6" ry="4" fill="#fff" stroke="#ddd"/>';
    },
    drink: function () {
      return '<path d="M36 18 L64 18 L60 64 L40 64 Z" fill="#f3f3f3" stroke="#ccc"/><path d="M37 26 L63 26 L60 62 L40 62 Z" fill="#7b3f1e"/><rect x="34" y="14" width="32" height="6" rx="2" fill="#d0392b"/><rect x="53" y="2" width="3" height="16" fill="#f4c430" transform="rotate(12 54 10)"/><path d="M40 38 L60 38" stroke="#fff" stroke-width="4"/>';
    },
    cake: function () {
      return PLATE + '<path d="M30 44 L50 22 L72 44 Z" fill="#5a2d1a"/><path d="M30 44 L72 44 L72 52 L30 52 Z" fill="#7a3f26"/><path d="M30 47 L72 47" stroke="#f4e2c0" stroke-width="2"/><circle cx="50" cy="24" r="3" fill="#d0392b"/>';
    },
  };

  window.HALO.foodArt = function (kind, w, h, bg) {
    const draw = ART[kind] || ART.side;
    return '<svg width="' + w + '" height="' + h + '" viewBox="0 0 100 70" preserveAspectRatio="xMidYMid meet" aria-hidden="true" focusable="false">' +
      (bg ? '<rect width="100" height="70" fill="' + bg + '"/>' : "") + draw() + "</svg>";
  };
})();
