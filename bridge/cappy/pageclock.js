// The page driver's clock, run in the game's page before its first script
// (Page.addScriptToEvaluateOnNewDocument): the page's clocks run on virtual
// time that only the driver advances, one 60 Hz frame at a time, and its
// randomness is seeded. crosscode-mcp's page driver (pagedriver.go) calls
// the API it defines under a per-launch name; nothing else of the page
// changes. The driver's Go code fills in CONFIG: {name, seed, epoch}, and
// SOUND: pagesound.js.
(function (cfg) {
  'use strict';
  const g = globalThis;
  if (g[cfg.name]) return; // a second run in the same document
  const FRAME = 1000 / 60;
  const realNow = performance.now.bind(performance);
  const RealDate = Date;
  const realSetTimeout = setTimeout.bind(g);
  const consoleRef = g.console;
  const realConsole = {};
  for (const k of ['log', 'info', 'warn', 'error', 'debug', 'trace']) realConsole[k] = consoleRef[k].bind(consoleRef);

  // ---- virtual time ----
  let now = 0; // ms of page time
  let frame = 0; // the next animation frame: it runs at frame * FRAME
  let rafs = new Map();
  let rafNext = 1;
  const timers = new Map(); // id -> {at, seq, fn, args, every, nesting}
  let timerNext = 1;
  let timerSeq = 0;
  let nesting = 0; // the running timer's nesting level, as browsers count it
  const idles = new Map();

  const defineValue = (obj, key, value) => {
    try { Object.defineProperty(obj, key, { value, writable: true, configurable: true }); } catch (e) { /* frozen */ }
  };
  defineValue(g, 'requestAnimationFrame', function requestAnimationFrame(cb) {
    if (typeof cb !== 'function') throw new TypeError("Failed to execute 'requestAnimationFrame': parameter 1 is not of type 'Function'.");
    const id = rafNext++;
    rafs.set(id, cb);
    return id;
  });
  defineValue(g, 'cancelAnimationFrame', function cancelAnimationFrame(id) { rafs.delete(id); });
  // A timeout set by a timeout nested six deep waits at least 4 ms, as
  // in browsers: a chain of setTimeout(f, 0) moves on in page time.
  const addTimer = (fn, ms, args, every) => {
    const id = timerNext++;
    let delay = Math.max(0, Number(ms) || 0);
    if (nesting > 5 && delay < 4) delay = 4;
    timers.set(id, { at: now + delay, seq: timerSeq++, fn, args, every: every ? Math.max(delay, 1) : 0, nesting: nesting + 1 });
    return id;
  };
  defineValue(g, 'setTimeout', function setTimeout(fn, ms, ...args) { return addTimer(fn, ms, args, false); });
  defineValue(g, 'setInterval', function setInterval(fn, ms, ...args) { return addTimer(fn, ms, args, true); });
  defineValue(g, 'clearTimeout', function clearTimeout(id) { timers.delete(id); });
  defineValue(g, 'clearInterval', function clearInterval(id) { timers.delete(id); });
  defineValue(g, 'requestIdleCallback', function requestIdleCallback(cb) {
    const id = timerNext++;
    idles.set(id, cb);
    return id;
  });
  defineValue(g, 'cancelIdleCallback', function cancelIdleCallback(id) { idles.delete(id); });
  defineValue(Performance.prototype, 'now', function now_() { return now; });
  const epoch = cfg.epoch;
  function VirtualDate(...a) {
    if (!new.target) return new RealDate(epoch + now).toString();
    return a.length ? Reflect.construct(RealDate, a, new.target) : Reflect.construct(RealDate, [epoch + now], new.target);
  }
  VirtualDate.prototype = RealDate.prototype;
  VirtualDate.now = () => Math.floor(epoch + now);
  VirtualDate.UTC = RealDate.UTC;
  VirtualDate.parse = RealDate.parse;
  defineValue(RealDate.prototype, 'constructor', VirtualDate);
  defineValue(g, 'Date', VirtualDate);
  try {
    Object.defineProperty(Event.prototype, 'timeStamp', { get() { return now; }, configurable: true });
  } catch (e) { /* kept */ }

  // ---- seeded randomness (sfc32 from the seed's two 32-bit halves) ----
  let a = cfg.seed >>> 0, b = Math.floor(cfg.seed / 4294967296) >>> 0, c = 0x9e3779b9, d = 0x85ebca6b;
  const next32 = () => {
    a >>>= 0; b >>>= 0; c >>>= 0; d >>>= 0;
    let t = (a + b) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    d = (d + 1) | 0;
    t = (t + d) | 0;
    c = (c + t) | 0;
    return t >>> 0;
  };
  for (let i = 0; i < 16; i++) next32();
  defineValue(Math, 'random', function random() { return next32() / 4294967296; });
  if (g.crypto && g.Crypto) {
    defineValue(Crypto.prototype, 'getRandomValues', function getRandomValues(arr) {
      const bytes = new Uint8Array(arr.buffer, arr.byteOffset, arr.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = next32() & 255;
      return arr;
    });
    defineValue(Crypto.prototype, 'randomUUID', function randomUUID() {
      const h = [];
      for (let i = 0; i < 16; i++) h.push(next32() & 255);
      h[6] = (h[6] & 0x0f) | 0x40; h[8] = (h[8] & 0x3f) | 0x80;
      const x = h.map((v) => v.toString(16).padStart(2, '0')).join('');
      return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
    });
  }

  // ---- what the driver reports: errors, console errors, faults ----
  const MAX_REPORTS = 64; // per drain; the rest are counted
  const MAX_TEXT = 2000;
  let reports = [];
  let dropped = 0;
  let consoleCalls = 0;
  let fault = null; // {code, message}: the page did what ends the operation
  const text = (v) => {
    let s;
    try { s = typeof v === 'string' ? v : (v instanceof Error ? (v.stack || String(v)) : (typeof v === 'object' ? JSON.stringify(v) : String(v))); } catch (e) { s = Object.prototype.toString.call(v); }
    return s === undefined ? String(v) : (s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + '…' : s);
  };
  // The page's own source and line, from a stack: the first frame that is
  // not this script's.
  const where = (stack) => {
    const lines = String(stack || '').split('\n');
    for (const l of lines) {
      const m = /(?:\(|@|at )((?:https?|file|blob|data):[^\s)]*?):(\d+):(\d+)\)?\s*$/.exec(l);
      if (m && !m[1].includes('__cappy_clock__')) return { source: m[1].split('#')[0], line: Number(m[2]), column: Number(m[3]) };
    }
    return {};
  };
  const report = (event, payload) => {
    if (reports.length >= MAX_REPORTS) { dropped++; return; }
    reports.push({ t: now, event, payload });
  };
  const pageError = (err, source, line, column) => {
    const stack = err && err.stack ? String(err.stack) : '';
    const at = source ? { source: String(source).split('#')[0], line, column } : where(stack);
    report('PAGE_ERROR', { message: text(err && err.message !== undefined ? err.message : err), ...at, stack: stack ? text(stack) : undefined });
  };
  g.addEventListener('error', (e) => {
    if (e.target && e.target !== g) return; // a resource that failed to load
    pageError(e.error !== undefined && e.error !== null ? e.error : e.message, e.filename, e.lineno, e.colno);
  }, true);
  g.addEventListener('unhandledrejection', (e) => pageError(e.reason));
  const FLOOD = 10000; // console calls in one step that end the operation
  for (const k of Object.keys(realConsole)) {
    defineValue(consoleRef, k, function (...args) {
      consoleCalls++;
      if (consoleCalls === FLOOD) fault = fault || { code: 'PAGE_CONSOLE_FLOOD', message: `the page wrote ${FLOOD} console messages in one step` };
      if (k === 'error') report('CONSOLE_ERROR', { message: args.map(text).join(' ').slice(0, MAX_TEXT), ...where(new Error().stack) });
      if (consoleCalls <= 200) realConsole[k](...args); // the rest would flood the DevTools connection
    });
  }
  const refuse = (code, what) => function () {
    fault = fault || { code, message: `the page called ${what}` + (arguments.length ? `(${text(arguments[0]).slice(0, 200)})` : '()') };
    return what === 'window.confirm' ? false : (what === 'window.prompt' ? null : undefined);
  };
  defineValue(g, 'alert', refuse('PAGE_DIALOG', 'window.alert'));
  defineValue(g, 'confirm', refuse('PAGE_DIALOG', 'window.confirm'));
  defineValue(g, 'prompt', refuse('PAGE_DIALOG', 'window.prompt'));
  defineValue(g, 'print', refuse('PAGE_DIALOG', 'window.print'));
  defineValue(g, 'open', refuse('PAGE_POPUP', 'window.open'));

  // ---- pending loads: the driver waits for them between frames, so a
  // load finishes at the same frame in every run ----
  let pending = 0;
  let generation = 0; // forgetPending moves it on: older loads no longer count
  // failed lists the URLs of the tracked loads the network failed (an
  // HTTP error, no answer) since the driver last asked: it waits for the
  // browser's word on each before it tells them, at this page time (their
  // network events come on another channel, later).
  let failed = [];
  const absolute = (u) => {
    try {
      const url = new URL(String(u), document.baseURI);
      return url.protocol === 'http:' || url.protocol === 'https:' ? url.href.split('#')[0] : '';
    } catch { return ''; }
  };
  const track = (url) => {
    const gen = generation;
    pending++;
    let done = false;
    return (ok = true) => {
      if (done) return;
      done = true;
      if (!ok && url && failed.length < 256) failed.push(url);
      if (gen === generation) pending--;
    };
  };
  const xhrURL = new WeakMap();
  const xopen = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (...args) {
    xhrURL.set(this, absolute(args[1]));
    return xopen.apply(this, args);
  };
  const xsend = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    const end = track(xhrURL.get(this));
    let aborted = false;
    this.addEventListener('abort', () => { aborted = true; });
    this.addEventListener('loadend', () => end(aborted || (this.status !== 0 && this.status < 400)));
    try { return xsend.apply(this, args); } catch (e) { end(); throw e; }
  };
  if (g.fetch) {
    const realFetch = g.fetch;
    defineValue(g, 'fetch', function fetch(...args) {
      const a = args[0];
      const end = track(absolute(a && typeof a === 'object' && 'url' in a ? a.url : a));
      let p;
      try { p = realFetch.apply(this, args); } catch (e) { end(); throw e; }
      p.then((r) => end(r.status < 400), (e) => end(e && e.name === 'AbortError'));
      return p;
    });
    for (const k of ['json', 'text', 'arrayBuffer', 'blob', 'formData']) {
      const f = Response.prototype[k];
      if (!f) continue;
      Response.prototype[k] = function (...args) {
        const end = track();
        const p = f.apply(this, args);
        p.then(() => end(), () => end());
        return p;
      };
    }
  }
  const srcDesc = Object.getOwnPropertyDescriptor(HTMLImageElement.prototype, 'src');
  if (srcDesc && srcDesc.set) {
    Object.defineProperty(HTMLImageElement.prototype, 'src', {
      configurable: true, enumerable: srcDesc.enumerable, get: srcDesc.get,
      set(v) {
        if (v !== '' && v !== null && v !== undefined) {
          const end = track(absolute(v));
          this.addEventListener('load', () => end(), { once: true });
          this.addEventListener('error', () => end(false), { once: true });
        }
        return srcDesc.set.call(this, v);
      },
    });
  }
  if (g.createImageBitmap) {
    const cib = g.createImageBitmap;
    defineValue(g, 'createImageBitmap', function createImageBitmap(...args) {
      const end = track();
      const p = cib.apply(this, args);
      p.then(() => end(), () => end());
      return p;
    });
  }

  // ---- sound on page time (pagesound.js) ----
  const sound = (SOUND)({ g, defineValue, track, time: () => now });

  // ---- running time ----
  // Each callback of the page (a timer, an animation frame's callback, an
  // event of sound) is a task of its own, as in a browser: the promise
  // callbacks it queued run before the next one. The driver's advance is
  // one evaluation the page's own tasks never interleave with, so the
  // clock lets them run for a number of turns of the microtask queue
  // (longer chains go on among the next callbacks, the same way in every
  // run).
  const TURNS = 100;
  const turns = async () => { for (let i = 0; i < TURNS; i++) await undefined; };
  const call = async (fn, args) => {
    try {
      if (typeof fn === 'function') fn(...args);
      else if (typeof fn === 'string') realConsole.warn('crosscode page driver: a string timer was not run (code in strings is not evaluated)');
    } catch (e) { pageError(e); }
    await turns();
  };
  // runTimers runs the timers due at or before t, in time order.
  const runTimers = async (t) => {
    for (;;) {
      let best = null, bestId = 0;
      for (const [id, tm] of timers) {
        if (tm.at <= t + 1e-9 && (!best || tm.at < best.at || (tm.at === best.at && tm.seq < best.seq))) { best = tm; bestId = id; }
      }
      if (!best) return;
      now = Math.max(now, best.at);
      if (best.every) { best.at += best.every; best.seq = timerSeq++; } else timers.delete(bestId);
      nesting = best.nesting;
      await call(best.fn, best.args);
      nesting = 0;
      if (fault) return;
    }
  };
  // runFrame runs the animation frame due now.
  const runFrame = async () => {
    for (const fire of sound.events()) {
      fire();
      await turns();
    }
    const due = rafs;
    rafs = new Map();
    for (const cb of due.values()) {
      await call(cb, [now]);
      if (fault) return;
    }
    const idle = [...idles.values()];
    idles.clear();
    for (const cb of idle) await call(cb, [{ didTimeout: false, timeRemaining: () => 0 }]);
  };

  const api = {
    // advance runs page time on to t (ms), frame by frame with the timers
    // due between them (for at most budget ms of real time; the rest on
    // the next call, so that one frame alone can be timed), and reports
    // where it stands. Its promise settles when it has.
    async advance(t, budget) {
      const began = realNow();
      // A load pending (one the last frame or an input started): the
      // driver waits for it before the next frame. One that failed
      // already (an input's, refused at once) is told at this page time
      // first.
      while (!fault && pending === 0 && failed.length === 0 && realNow() - began < budget) {
        const at = frame * 1000 / 60;
        if (at > t + 1e-6) break;
        await runTimers(at);
        if (fault) break;
        now = Math.max(now, at);
        frame++;
        await runFrame();
      }
      if (!fault && pending === 0 && failed.length === 0 && frame * 1000 / 60 > t + 1e-6) {
        await runTimers(t);
        if (!fault) now = Math.max(now, t);
      }
      return api.state();
    },
    // state reports the page time, what the page reported, and a fault.
    state() {
      const out = { now, frame, pending, reports, dropped, fault, consoleCalls, failed };
      failed = [];
      reports = [];
      dropped = 0;
      return out;
    },
    newStep() { consoleCalls = 0; },
    pending() { return pending; },
    failed() { const out = failed; failed = []; return out; },
    forgetPending() { generation++; pending = 0; },
    // inspect answers a query: '' what there is, 'text' the state as
    // render_game_to_text() gives it, a dotted path a member of its JSON.
    // The query is data: a path, never evaluated.
    inspect(query) {
      const has = typeof g.render_game_to_text === 'function';
      if (query === '') {
        const out = { t: now, frame, hasRenderGameToText: has, hasAdvanceTime: typeof g.advanceTime === 'function', title: String(document.title || '').slice(0, 200) };
        if (has) {
          const s = api.stateJSON();
          if (s.ok && s.value && typeof s.value === 'object') out.keys = Object.keys(s.value).slice(0, 200);
          else if (!s.ok) out.error = s.error;
        }
        return { value: out };
      }
      if (!has) return { error: { code: 'NO_STATE', message: 'the page has no window.render_game_to_text(): add one that returns the game\'s state as JSON text, or inspect only ""' } };
      const s = api.stateJSON();
      if (!s.ok) return { error: s.error };
      if (query === 'text') return { value: s.value };
      let v = s.value;
      const path = query.split('.');
      for (let i = 0; i < path.length; i++) {
        const k = path[i];
        if (v === null || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, k)) {
          return { error: { code: 'UNKNOWN_PATH', message: `no ${path.slice(0, i + 1).join('.')} in the state` + (v && typeof v === 'object' ? `; ${path.slice(0, i).join('.') || 'it'} has ${Object.keys(v).slice(0, 50).join(', ')}` : '') } };
        }
        v = v[k];
      }
      return { value: v };
    },
    stateJSON() {
      let s;
      try { s = g.render_game_to_text(); } catch (e) { return { ok: false, error: { code: 'STATE_THREW', message: 'render_game_to_text() threw: ' + text(e).slice(0, 500) } }; }
      if (typeof s !== 'string') return { ok: true, value: s === undefined ? null : s };
      try { return { ok: true, value: JSON.parse(s) }; } catch (e) { return { ok: true, value: s }; }
    },
  };
  Object.defineProperty(g, cfg.name, { value: Object.freeze(api), writable: false, configurable: false, enumerable: false });
  void realNow; void realSetTimeout;
})(CONFIG);
//# sourceURL=__cappy_clock__.js
