// DOM helpers. Everything agents or games wrote goes through text(): it
// becomes a text node (never markup), with invisible and bidi control
// characters shown as visible code points, so no text can hide itself or
// reorder what is around it.

/** Characters shown as ⟨U+XXXX⟩ instead of being interpreted. */
const HIDDEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u00AD\u061C\u180E\u200B-\u200F\u2028-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB]|[\u{E0000}-\u{E007F}]/gu;

/** Longest text shown in full; the rest is cut with an ellipsis. */
const MAX_TEXT = 400;

/**
 * Makes untrusted text displayable: control, invisible and bidi
 * characters become visible code points, and long text is cut.
 * @param {unknown} v
 * @param {number} [max]
 * @returns {string}
 */
export function clean(v, max = MAX_TEXT) {
  let s = v == null ? '' : String(v);
  if (s.length > max) s = s.slice(0, max) + '…';
  return s.replace(HIDDEN, (c) => '⟨U+' + c.codePointAt(0).toString(16).toUpperCase().padStart(4, '0') + '⟩');
}

/**
 * A text node of untrusted text.
 * @param {unknown} v
 * @param {number} [max]
 */
export function text(v, max) {
  return document.createTextNode(clean(v, max));
}

/**
 * Builds an element. attrs: class, title, data-*, aria-*, role, href
 * (only fixed, same-page values) and a few properties; children are
 * nodes or strings (strings become text nodes through clean()).
 * @param {string} tag
 * @param {Record<string, unknown>} [attrs]
 * @param {...(Node|string|number|null|undefined|false)} children
 * @returns {HTMLElement}
 */
export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v == null || v === false) continue;
      if (k === 'class') e.className = String(v);
      else if (k === 'title') e.title = clean(v, 2000);
      else if (k === 'onclick' && typeof v === 'function') e.addEventListener('click', /** @type {any} */ (v));
      else if (k === 'hidden') e.hidden = Boolean(v);
      else if (/^on/i.test(k) || (/^(href|src)$/i.test(k) && !/^(#|\/(?!\/))/.test(String(v)))) continue; // no handlers, no foreign URLs
      else e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of children) {
    if (c == null || c === false) continue;
    e.append(typeof c === 'string' || typeof c === 'number' ? text(c) : c);
  }
  return e;
}

/**
 * Replaces the children of parent.
 * @param {Element} parent
 * @param {...(Node|string)} children
 */
export function fill(parent, ...children) {
  parent.replaceChildren(...children.map((c) => (typeof c === 'string' ? text(c) : c)));
}

/** @param {string|number|Date|undefined|null} t */
function toMs(t) {
  if (t == null || t === '') return NaN;
  return t instanceof Date ? t.getTime() : typeof t === 'number' ? t : Date.parse(t);
}

/**
 * A relative time ("3 min ago", "in 12 min") with the exact time as its title.
 * @param {string|number|Date|undefined|null} t
 * @param {number} now
 */
export function when(t, now) {
  const ms = toMs(t);
  if (Number.isNaN(ms)) return el('span', { class: 'muted' }, '—');
  return el('time', { datetime: new Date(ms).toISOString(), title: new Date(ms).toISOString() }, relative(ms - now));
}

/**
 * Time left until t, or "expired".
 * @param {string|number|undefined|null} t
 * @param {number} now
 */
export function timeLeft(t, now) {
  const ms = toMs(t);
  if (Number.isNaN(ms)) return el('span', { class: 'muted' }, 'no expiry');
  const left = ms - now;
  return el('time', { datetime: new Date(ms).toISOString(), title: 'expires ' + new Date(ms).toISOString(), class: left < 5 * 60e3 ? 'soon' : '' },
    left <= 0 ? 'expired' : span(left));
}

/** @param {number} d milliseconds, signed */
export function relative(d) {
  const s = span(Math.abs(d));
  if (Math.abs(d) < 5e3) return 'just now';
  return d < 0 ? s + ' ago' : 'in ' + s;
}

/** @param {number} ms */
function span(ms) {
  const s = Math.round(ms / 1e3);
  if (s < 60) return s + ' s';
  const m = Math.round(s / 60);
  if (m < 60) return m + ' min';
  const h = Math.floor(m / 60);
  if (h < 48) return h + ' h ' + (m % 60 ? (m % 60) + ' min' : '');
  return Math.round(h / 24) + ' days';
}

/**
 * A small badge; kind picks its colour (class "b-<kind>").
 * @param {string} label
 * @param {string} [kind]
 */
export function badge(label, kind) {
  return el('span', { class: 'badge b-' + (kind || label).replace(/[^a-z_-]/gi, '') }, label);
}

/**
 * A list of paths or patterns as code chips.
 * @param {unknown} list
 */
export function paths(list) {
  const ul = el('ul', { class: 'paths' });
  if (!Array.isArray(list)) return ul;
  for (const p of list.slice(0, 12)) ul.append(el('li', null, el('code', null, String(p))));
  if (list.length > 12) ul.append(el('li', { class: 'muted' }, `+${list.length - 12} more`));
  return ul;
}

/**
 * A table with a header row.
 * @param {string} label accessible name
 * @param {string[]} heads
 * @param {HTMLElement[]} rows
 * @param {string} [empty] what to show when there are no rows
 */
export function table(label, heads, rows, empty = 'Nothing yet.') {
  if (rows.length === 0) return el('p', { class: 'empty muted' }, empty);
  const thead = el('thead', null, el('tr', null, ...heads.map((h) => el('th', { scope: 'col' }, h))));
  const tbody = el('tbody');
  tbody.append(...rows);
  return el('table', { 'aria-label': label }, thead, tbody);
}

/**
 * A row of cells.
 * @param {Record<string, unknown>|null} attrs
 * @param {...(Node|string|number|null|undefined)} cells
 */
export function row(attrs, ...cells) {
  return el('tr', attrs, ...cells.map((c) => (c instanceof HTMLTableCellElement ? c : el('td', null, c))));
}
