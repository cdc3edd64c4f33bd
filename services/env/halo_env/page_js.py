"""The scripts the environment runs inside pages (each one `page.evaluate` call, always under a timeout).

OBSERVE does everything an observation needs in one round trip: it numbers the visible interactive
elements that lack a ``data-halo-id`` (in document order, renumbered on every observation so the
ids are a function of the DOM alone: a fork sees the same ids as its parent), renders the
accessibility-tree text, reads ``window.__HALO__.finish()`` when the page defines it, and captures
the page state a fork or a crash recovery needs (storage of the page's origin, scroll positions,
form values, focus).
"""

from __future__ import annotations

# Shared helpers, inlined into each script.
_HELPERS = r"""
const INTERACTIVE = 'a[href],button,input:not([type=hidden]),select,textarea,summary,[role=button],' +
  '[role=link],[role=checkbox],[role=radio],[role=tab],[role=menuitem],[role=menuitemcheckbox],' +
  '[role=option],[role=switch],[role=combobox],[role=textbox],[role=searchbox],[role=slider],' +
  '[role=treeitem],[contenteditable=""],[contenteditable=true],[onclick],[tabindex]:not([tabindex="-1"])';
const shown = (el) => {
  if (el.checkVisibility && !el.checkVisibility({checkVisibilityCSS: true})) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
};
const cssPath = (el) => {
  const parts = [];
  for (let e = el; e && e.nodeType === 1 && e !== document.documentElement; e = e.parentElement) {
    let i = 1;
    for (let s = e.previousElementSibling; s; s = s.previousElementSibling) if (s.tagName === e.tagName) i++;
    parts.unshift(`${e.tagName.toLowerCase()}:nth-of-type(${i})`);
  }
  return parts.length ? 'html > ' + parts.join(' > ') : 'html';
};
"""

# The page state a snapshot needs beyond cookies: storage of the page's origin, scroll, form fields
# whose value differs from the markup's, and focus with its text selection.
_CAPTURE_FN = r"""
  function capturePage() {
  const dump = (get) => {
    const out = {};
    try { const store = get(); for (let i = 0; i < store.length; i++) { const k = store.key(i); out[k] = store.getItem(k); } } catch (e) {}
    return out;
  };
  const fields = [];
  for (const el of document.querySelectorAll('input,textarea,select')) {
    if (el.type === 'checkbox' || el.type === 'radio') {
      if (el.checked !== el.defaultChecked) fields.push({path: cssPath(el), checked: el.checked});
    } else if (el.tagName === 'SELECT') {
      fields.push({path: cssPath(el), value: el.value});
    } else if (el.type !== 'file' && el.value !== el.defaultValue) {
      fields.push({path: cssPath(el), value: el.value});
    }
  }
  const scrolled = [];
  for (const el of document.querySelectorAll('*')) {
    if (el.scrollTop || el.scrollLeft) scrolled.push({path: cssPath(el), top: el.scrollTop, left: el.scrollLeft});
  }
  const active = document.activeElement;
  // `visible`: whether Chromium draws the focus ring (a keyboard focus does, a mouse press on a button
  // does not); a restore must focus the same way (RESTORE_PAGE).
  const focus = active && active !== document.body && active !== document.documentElement ? {
    path: cssPath(active),
    start: typeof active.selectionStart === 'number' ? active.selectionStart : null,
    end: typeof active.selectionEnd === 'number' ? active.selectionEnd : null,
    visible: active.matches(':focus-visible'),
  } : null;
  // A text selection (e.g. left by a drag) is visible in the screenshot: keep it, node by node.
  const point = (node, offset) => {
    const parent = node.nodeType === 1 ? node : node.parentElement;
    if (!parent) return null;
    return {path: cssPath(parent), child: node === parent ? -1 : Array.prototype.indexOf.call(parent.childNodes, node), offset};
  };
  const sel = document.getSelection();
  let selection = null;
  if (sel && sel.rangeCount && !sel.isCollapsed && !(active && 'selectionStart' in active && active.selectionStart !== null)) {
    const r = sel.getRangeAt(0);
    selection = {start: point(r.startContainer, r.startOffset), end: point(r.endContainer, r.endOffset)};
  }
  // A clone app that can re-render itself from storage (halo_sites' HALO.mount): a page showing
  // this document can be rewound to the state in place (browser_state.rewind).
  const app = window.__HALO__ && typeof window.__HALO__.render === 'function' ? location.href.split('#')[0] : null;
  return {origin: location.origin, local: dump(() => localStorage), session: dump(() => sessionStorage),
          scroll: {x: scrollX, y: scrollY}, scrolled, fields, focus, selection, app};
}
"""

OBSERVE = (
    r"""async (opts) => {
"""
    + _HELPERS
    + _CAPTURE_FN
    + r"""
  // Let the page paint what the last action changed (two frames: the update, then its layout).
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));

  for (const el of document.querySelectorAll('[data-halo-auto]')) {
    el.removeAttribute('data-halo-id');
    el.removeAttribute('data-halo-auto');
  }
  let next = 1;
  for (const el of document.querySelectorAll(INTERACTIVE)) {
    if (el.hasAttribute('data-halo-id') || !shown(el)) continue;
    el.setAttribute('data-halo-id', String(next++));
    el.setAttribute('data-halo-auto', '');
  }

  const clean = (s, n = 100) => (s || '').replace(/\s+/g, ' ').trim().slice(0, n);
  const roleOf = (el) => {
    const explicit = el.getAttribute('role');
    if (explicit) return explicit;
    const tag = el.tagName.toLowerCase();
    if (tag === 'a') return 'link';
    if (tag === 'button' || tag === 'summary') return 'button';
    if (tag === 'select') return 'combobox';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'input') {
      const t = (el.getAttribute('type') || 'text').toLowerCase();
      return {checkbox: 'checkbox', radio: 'radio', range: 'slider', search: 'searchbox', submit: 'button',
              button: 'button', reset: 'button', image: 'button'}[t] || 'textbox';
    }
    if (/^h[1-6]$/.test(tag)) return 'heading';
    if (tag === 'img') return 'img';
    if (el.isContentEditable) return 'textbox';
    return tag;
  };
  const nameOf = (el) => {
    const aria = el.getAttribute('aria-label');
    if (aria) return clean(aria);
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const txt = by.split(/\s+/).map((id) => document.getElementById(id)?.innerText || '').join(' ');
      if (clean(txt)) return clean(txt);
    }
    if (el.labels && el.labels.length) return clean(el.labels[0].innerText);
    if (el.tagName === 'INPUT' && ['submit', 'button', 'reset'].includes(el.type)) return clean(el.value);
    return clean(el.getAttribute('placeholder') || el.getAttribute('alt') || el.innerText || el.getAttribute('title'));
  };
  const propsOf = (el) => {
    const out = [];
    if (el.tagName === 'SELECT') out.push(`value=${JSON.stringify(clean(el.selectedOptions[0]?.text || '', 60))}`);
    else if ((el.tagName === 'INPUT' && !['checkbox', 'radio', 'submit', 'button'].includes(el.type)) || el.tagName === 'TEXTAREA')
      out.push(`value=${JSON.stringify(el.type === 'password' ? '•'.repeat(el.value.length) : clean(el.value, 200))}`);
    if (el.type === 'checkbox' || el.type === 'radio') out.push(`checked=${el.checked}`);
    else if (el.getAttribute('aria-checked')) out.push(`checked=${el.getAttribute('aria-checked')}`);
    if (el.disabled || el.getAttribute('aria-disabled') === 'true') out.push('disabled');
    return out.length ? ' ' + out.join(' ') : '';
  };

  const CONTAINERS = {NAV: 'navigation', MAIN: 'main', HEADER: 'banner', FOOTER: 'contentinfo', ASIDE: 'complementary',
    FORM: 'form', DIALOG: 'dialog', UL: 'list', OL: 'list', TABLE: 'table', dialog: 'dialog', alertdialog: 'dialog',
    navigation: 'navigation', main: 'main', list: 'list', listbox: 'listbox', menu: 'menu', tablist: 'tablist',
    grid: 'grid', table: 'table', region: 'region', form: 'form', toolbar: 'toolbar', banner: 'banner'};
  const lines = [];
  let size = 0, cut = false;
  const emit = (depth, text) => {
    if (cut) return;
    const line = '  '.repeat(depth) + text;
    if (size + line.length + 1 > opts.maxChars) { cut = true; return; }
    lines.push(line);
    size += line.length + 1;
  };
  const walk = (node, depth) => {
    for (const child of node.childNodes) {
      if (cut) return;
      if (child.nodeType === 3) {
        const t = clean(child.textContent, 200);
        if (t) emit(depth, `StaticText ${JSON.stringify(t)}`);
        continue;
      }
      if (child.nodeType !== 1) continue;
      const tag = child.tagName;
      if (tag === 'SCRIPT' || tag === 'STYLE' || tag === 'NOSCRIPT' || tag === 'TEMPLATE') continue;
      if (child.checkVisibility && !child.checkVisibility({checkVisibilityCSS: true})) continue;
      const id = child.getAttribute('data-halo-id');
      if (id !== null && shown(child)) {
        emit(depth, `[${id}] ${roleOf(child)} ${JSON.stringify(nameOf(child))}${propsOf(child)}`);
        // The name already carries the text; only nested controls are worth their own lines.
        for (const inner of child.querySelectorAll('[data-halo-id]')) {
          if (shown(inner)) emit(depth + 1, `[${inner.getAttribute('data-halo-id')}] ${roleOf(inner)} ${JSON.stringify(nameOf(inner))}${propsOf(inner)}`);
        }
        continue;
      }
      const role = roleOf(child);
      if (role === 'heading') { const t = clean(child.innerText, 200); if (t) emit(depth, `heading ${JSON.stringify(t)}`); continue; }
      if (role === 'img') { const t = clean(child.getAttribute('alt')); if (t) emit(depth, `img ${JSON.stringify(t)}`); continue; }
      const box = CONTAINERS[child.getAttribute('role') || ''] || CONTAINERS[tag];
      if (box) {
        // A landmark, list, dialog or table: one line, its content one level deeper; dropped when empty.
        const label = clean(child.getAttribute('aria-label') || '', 80);
        const mark = lines.length, markSize = size;
        emit(depth, label ? `${box} ${JSON.stringify(label)}` : box);
        walk(child, depth + 1);
        if (lines.length === mark + 1 && !cut) { lines.pop(); size = markSize; }
        continue;
      }
      walk(child, depth);
    }
  };
  if (document.body) walk(document.body, 0);
  if (cut) lines.push('... (truncated)');

  let siteState = null;
  try {
    if (window.__HALO__ && typeof window.__HALO__.finish === 'function') siteState = await window.__HALO__.finish();
  } catch (e) {
    siteState = {error: String(e).slice(0, 300)};
  }
  return {url: location.href, title: document.title, axtree: lines.join('\n'), siteState,
          state: opts.capture ? capturePage() : null};

}"""
)

CAPTURE = "() => {\n" + _HELPERS + _CAPTURE_FN + "\nreturn capturePage();\n}"

# Runs on a blank document served at the target origin, before the real page loads.
SEED_STORAGE = r"""(s) => {
  localStorage.clear();
  sessionStorage.clear();
  for (const [k, v] of Object.entries(s.local || {})) localStorage.setItem(k, v);
  for (const [k, v] of Object.entries(s.session || {})) sessionStorage.setItem(k, v);
}"""

# Rewinds a page that shows the clone app already: storage replaced, the URL's hash set without a
# navigation (replaceState fires no hashchange), and the app's render() rebuilds the screen from
# them, as a load would. The old document's selection and focus go first: a load starts without.
REWIND = r"""(s) => {
  document.getSelection()?.removeAllRanges();
  if (document.activeElement && document.activeElement.blur) document.activeElement.blur();
  localStorage.clear();
  sessionStorage.clear();
  for (const [k, v] of Object.entries(s.local || {})) localStorage.setItem(k, v);
  for (const [k, v] of Object.entries(s.session || {})) sessionStorage.setItem(k, v);
  history.replaceState(null, '', s.url);
  window.scrollTo(0, 0);
  window.__HALO__.render();
}"""

# Runs on the restored page once it has loaded: the DOM state storage does not hold.
RESTORE_PAGE = (
    r"""async (s) => {
"""
    + _HELPERS
    + r"""
  const find = (path) => { try { return document.querySelector(path); } catch (e) { return null; } };
  // A control the live page focused by a mouse press (no ring) is focused by a press here too, not
  // by focus({focusVisible: false}): Chromium remembers how focus last moved, and after a press a
  // key makes the ring appear and a script's focus elsewhere draws none, after a script's focus
  // not. Only controls a press does nothing else to (no caret, no picker), and only at a point
  // where the press lands on the control itself; the env presses with the page deaf to it.
  const pressPoint = (el) => {
    if (!el || !(el instanceof HTMLElement) || el.isContentEditable) return null;
    const tag = el.tagName, type = (el.getAttribute('type') || '').toLowerCase();
    if (tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'IFRAME') return null;
    if (tag === 'INPUT' && !['button', 'submit', 'reset', 'checkbox', 'radio', 'image'].includes(type)) return null;
    const r = el.getBoundingClientRect();
    const x = r.left + r.width / 2, y = r.top + r.height / 2;
    if (!(r.width > 0 && r.height > 0 && x >= 0 && y >= 0 && x < innerWidth && y < innerHeight)) return null;
    const hit = document.elementFromPoint(x, y);
    if (!hit || !el.contains(hit)) return null;
    for (let e = hit; e !== el; e = e.parentElement) if (e.tabIndex >= 0 || e.tagName === 'LABEL') return null;
    return [x, y];
  };
  // React and friends track values through the native setter; assigning .value alone is invisible to them.
  const setValue = (el, value) => {
    const proto = el.tagName === 'TEXTAREA' ? HTMLTextAreaElement.prototype :
                  el.tagName === 'SELECT' ? HTMLSelectElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value').set.call(el, value);
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
  };
  for (const f of s.fields || []) {
    const el = find(f.path);
    if (!el) continue;
    if ('checked' in f && f.checked !== undefined && (el.type === 'checkbox' || el.type === 'radio')) {
      if (el.checked !== f.checked) el.click();
    } else if (el.value !== f.value) setValue(el, f.value);
  }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  for (const sc of s.scrolled || []) {
    const el = find(sc.path);
    if (el) { el.scrollTop = sc.top; el.scrollLeft = sc.left; }
  }
  window.scrollTo(s.scroll?.x || 0, s.scroll?.y || 0);
  let press = null;
  if (s.focus) {
    const el = find(s.focus.path);
    press = s.focus.visible === false ? pressPoint(el) : null;
    if (!press && el && el.focus) {
      // Without `visible` (an older snapshot) the focus is as it was: a script's.
      const how = typeof s.focus.visible === 'boolean' ? {preventScroll: true, focusVisible: s.focus.visible} : {preventScroll: true};
      el.focus(how);
      if (s.focus.start !== null && el.setSelectionRange) { try { el.setSelectionRange(s.focus.start, s.focus.end); } catch (e) {} }
    }
  } else if (document.activeElement && document.activeElement.blur) {
    document.activeElement.blur();
  }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  return press;
}"""
)

# A text selection, put back after the focus (a press to focus a control could clear it).
RESTORE_SELECTION = r"""async (s) => {
  const find = (path) => { try { return document.querySelector(path); } catch (e) { return null; } };
  const node = (p) => {
    if (!p) return null;
    const el = find(p.path);
    if (!el) return null;
    return p.child < 0 ? el : el.childNodes[p.child] || null;
  };
  if (s.selection) {
    const a = node(s.selection.start), b = node(s.selection.end);
    if (a && b) {
      try {
        const range = document.createRange();
        range.setStart(a, s.selection.start.offset);
        range.setEnd(b, s.selection.end.offset);
        const sel = document.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
      } catch (e) {}
    }
  }
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
}"""

# Mouse events the page would see when a restored session's cursor is put back, or a control is
# focused by a press (RESTORE_PAGE): swallowed, so the cursor takes its hover state and the control
# its focus without replaying handlers the parent already ran; the press's click does nothing (no
# checkbox toggled, no link followed, no form sent). Focus events are not swallowed: a focus by a
# script fires them too.
_POINTER_EVENTS = (
    "['mousemove','mouseover','mouseenter','mouseout','mouseleave','pointermove','pointerover','pointerenter',"
    "'pointerout','pointerleave','pointerdown','pointerup','mousedown','mouseup','click','auxclick','dblclick']"
)
QUIET_POINTER_ON = (
    "() => { const stop = (e) => { e.stopImmediatePropagation(); if (e.type === 'click') e.preventDefault(); }; "
    f"window.__haloQuiet = stop; for (const t of {_POINTER_EVENTS}) window.addEventListener(t, stop, true); }}"
)
QUIET_POINTER_OFF = (
    "async () => { await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))); "
    f"const stop = window.__haloQuiet; for (const t of {_POINTER_EVENTS}) window.removeEventListener(t, stop, true); "
    "delete window.__haloQuiet; }"
)

# The JSON a REAL-style /finish page renders in its <pre>.
READ_PRE_JSON = r"""() => {
  const pre = document.querySelector('pre');
  return pre ? pre.innerText : null;
}"""
