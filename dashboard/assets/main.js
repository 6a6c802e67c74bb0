// The dashboard's entry: authentication, view switching, keyboard, and the
// render loop (one render per animation frame at most, measured).

import { Model } from './model.js';
import { Client, APIError } from './client.js';
import { el, fill } from './dom.js';
import * as views from './views.js';
import { CapturesView } from './captures.js';

/** sessionStorage key of the workspace token (this tab only). */
const TOKEN_KEY = 'crosscode.token';

const VIEWS = ['agents', 'claims', 'handoffs', 'tasks', 'validations', 'feed', 'captures'];

/** Render statistics, read by the tests and benchmarks. */
const stats = {
  renders: 0,
  lastRenderMs: 0,
  /** of which the summary strip */
  lastSummaryMs: 0,
  maxRenderMs: 0,
  /** serverSequence drawn by the last render */
  drawnSeq: 0,
  /** @type {{seq: number, at: number, view: string}[]} wall-clock ms (timeOrigin + now) of recent renders */
  draws: [],
  errors: 0,
};
Object.defineProperty(window, 'dashboardStats', { value: stats });

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

const model = new Model();
/** @type {Client|null} */
let client = null;
let view = 'agents';
/** Per-view UI state (filters, feed kinds). */
const ui = Object.fromEntries(VIEWS.map((v) => [v, { filter: '', kinds: new Set(views.FEED_KINDS) }]));
let scheduled = false;
/** @type {CapturesView|null} */
let capturesView = null;

const toolbar = el('div', { class: 'toolbar' });
const content = el('div', { class: 'content' });

function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(render);
}

function render() {
  scheduled = false;
  if (!client) return;
  const t0 = performance.now();
  const now = Date.now();
  fill($('summary'), ...views.summary(model, now));
  const t1 = performance.now();
  stats.lastSummaryMs = t1 - t0;
  if (view === 'captures') {
    capturesView?.render(content);
  } else {
    fill(content, ...(/** @type {any} */ (views)[view](model, ui[view], now).filter(Boolean)));
  }
  const ms = performance.now() - t0;
  stats.renders++;
  stats.lastRenderMs = ms;
  stats.maxRenderMs = Math.max(stats.maxRenderMs, ms);
  stats.drawnSeq = model.seq;
  stats.draws.push({ seq: model.seq, at: performance.timeOrigin + performance.now(), view });
  if (stats.draws.length > 2000) stats.draws.splice(0, 1000);
}

/** Builds the view's toolbar (filter, feed toggles); kept across renders. */
function buildToolbar() {
  const st = ui[view];
  const input = /** @type {HTMLInputElement} */ (el('input', { id: 'filter', type: 'search', placeholder: 'Filter (press /)', 'aria-label': 'Filter this view', autocomplete: 'off', spellcheck: 'false' }));
  input.value = st.filter;
  input.addEventListener('input', () => { st.filter = input.value; schedule(); });
  const parts = [input];
  if (view === 'feed') {
    for (const k of views.FEED_KINDS) {
      const cb = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', id: 'kind-' + k, 'data-kind': k }));
      cb.checked = st.kinds.has(k);
      cb.addEventListener('change', () => { if (cb.checked) st.kinds.add(k); else st.kinds.delete(k); schedule(); });
      parts.push(el('label', { class: 'toggle', for: 'kind-' + k }, cb, ' ' + k));
    }
  }
  fill(toolbar, ...parts);
}

function showView() {
  const want = location.hash.slice(1);
  const allowed = VIEWS.filter((v) => v !== 'captures' || capturesView);
  view = allowed.includes(want) ? want : 'agents';
  for (const a of document.querySelectorAll('nav.tabs a')) {
    if (a.getAttribute('data-view') === view) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  buildToolbar();
  if (view === 'captures') capturesView?.open(ui.captures);
  schedule();
}

/** @param {string} state @param {string} detail */
function status(state, detail) {
  const live = $('live');
  live.dataset.state = state;
  live.textContent = detail;
}

/** @param {string} msg */
function showError(msg) {
  const e = $('error');
  e.textContent = msg;
  e.hidden = !msg;
}

/** Drops every piece of workspace data from the page. */
function clearData() {
  if (client) client.stop();
  client = null;
  capturesView = null;
  model.reset();
  model.setPresenceList([]);
  fill(content);
  fill($('summary'));
  $('app').hidden = true;
  $('workspace').textContent = '';
}

function showLogin() {
  clearData();
  $('login').hidden = false;
  $('signout').hidden = true;
  status('idle', 'not connected');
  /** @type {HTMLInputElement} */ ($('token')).focus();
}

/**
 * @param {string} token
 * @param {boolean} local
 */
async function start(token, local) {
  showError('');
  const c = new Client(token, model, {
    onStatus: status,
    onFatal: (err) => fatal(err, local),
    onClaims: schedule,
  });
  client = c;
  status('connecting', 'loading…');
  try {
    await c.start();
  } catch (err) {
    if (client === c) fatal(/** @type {Error} */ (err), local);
    return;
  }
  if (client !== c) return;
  $('login').hidden = true;
  $('app').hidden = false;
  $('signout').hidden = local;
  $('workspace').textContent = '· ' + c.workspace;
  const tab = /** @type {HTMLElement} */ (document.querySelector('a[data-view="captures"]'));
  tab.hidden = !c.features.includes('captures');
  if (c.features.includes('captures')) capturesView = new CapturesView(c, schedule);
  showView();
  // The sign-in form is gone: keys go to the page again.
  if (!document.activeElement || document.activeElement === document.body || document.activeElement.closest('#login')) $('main').focus();
}

/** @param {Error} err @param {boolean} local */
function fatal(err, local) {
  stats.errors++;
  const refused = err instanceof APIError && (err.status === 401 || err.status === 403);
  sessionStorage.removeItem(TOKEN_KEY);
  if (local) {
    clearData();
    showError(refused ? 'This dashboard session is not valid any more: run crosscode-mcp dashboard again and open the URL it prints.' : 'Could not load the workspace: ' + err.message);
    return;
  }
  showLogin();
  showError(refused ? `The token was refused (${/** @type {APIError} */ (err).code}): ${err.message}` : 'Could not load the workspace: ' + err.message);
}

function keys() {
  document.addEventListener('keydown', (ev) => {
    const t = /** @type {HTMLElement} */ (ev.target);
    const typing = (t instanceof HTMLInputElement && !['checkbox', 'radio', 'button', 'submit'].includes(t.type)) || t instanceof HTMLTextAreaElement;
    if (ev.key === 'Escape' && t.id === 'filter') {
      /** @type {HTMLInputElement} */ (t).value = '';
      ui[view].filter = '';
      schedule();
      return;
    }
    if (typing || ev.ctrlKey || ev.metaKey || ev.altKey || $('app').hidden) return;
    const n = Number(ev.key);
    if (n >= 1 && n <= VIEWS.length) {
      const v = VIEWS[n - 1];
      if (v !== 'captures' || capturesView) location.hash = v;
      ev.preventDefault();
    } else if (ev.key === '/') {
      $('filter')?.focus();
      ev.preventDefault();
    }
  });
}

async function boot() {
  const main = $('main');
  main.append(toolbar, content);
  model.onChange(schedule);
  window.addEventListener('hashchange', showView);
  setInterval(schedule, 5000); // times left and ages move on
  keys();
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = /** @type {HTMLInputElement} */ ($('token'));
    const token = input.value.trim();
    input.value = '';
    if (!token) return;
    sessionStorage.setItem(TOKEN_KEY, token);
    start(token, false);
  });
  $('signout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin();
  });
  let mode;
  try {
    const res = await fetch('/dashboard/session', { method: 'POST', cache: 'no-store' });
    mode = await res.json();
    if (!res.ok) throw new APIError(res.status, mode?.error?.code || 'HTTP_' + res.status, mode?.error?.message || res.statusText);
  } catch (err) {
    showError('This server does not answer as a crosscode-mcp dashboard: ' + /** @type {Error} */ (err).message);
    return;
  }
  if (mode.mode === 'local') {
    sessionStorage.setItem(TOKEN_KEY, mode.token);
    start(mode.token, true);
    return;
  }
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) start(token, false);
  else showLogin();
}

window.addEventListener('error', () => { stats.errors++; });
boot();
