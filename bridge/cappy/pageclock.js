// The page driver's clock, run in the game's page before its first script
// (Page.addScriptToEvaluateOnNewDocument): the page's clocks run on virtual
// time that only the driver advances, one 60 Hz frame at a time, and its
// randomness is seeded. crosscode-mcp's page driver (pagedriver.go) calls
// the API it defines under a per-launch name; nothing else of the page
// changes. The driver's Go code fills in CONFIG: {name, seed, epoch}.
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
  // A timeout set by a timeout nested five deep waits at least 4 ms, as
  // in browsers: a chain of setTimeout(f, 0) moves on in page time.
  const addTimer = (fn, ms, args, every) => {
    const id = timerNext++;
    let delay = Math.max(0, Number(ms) || 0);
    if (nesting >= 5 && delay < 4) delay = 4;
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
  const track = () => {
    const gen = generation;
    pending++;
    let done = false;
    return () => { if (!done) { done = true; if (gen === generation) pending--; } };
  };
  const xsend = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    const end = track();
    this.addEventListener('loadend', end);
    try { return xsend.apply(this, args); } catch (e) { end(); throw e; }
  };
  if (g.fetch) {
    const realFetch = g.fetch;
    defineValue(g, 'fetch', function fetch(...args) {
      const end = track();
      let p;
      try { p = realFetch.apply(this, args); } catch (e) { end(); throw e; }
      p.then(end, end);
      return p;
    });
    for (const k of ['json', 'text', 'arrayBuffer', 'blob', 'formData']) {
      const f = Response.prototype[k];
      if (!f) continue;
      Response.prototype[k] = function (...args) {
        const end = track();
        const p = f.apply(this, args);
        p.then(end, end);
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
          const end = track();
          this.addEventListener('load', end, { once: true });
          this.addEventListener('error', end, { once: true });
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
      p.then(end, end);
      return p;
    });
  }

  // ---- sound on page time ----
  // Decoding audio, loading media and starting an audio device are loads
  // like the others: the driver waits for them between frames. What the
  // page sees of sound's own clocks runs on page time: an AudioContext's
  // currentTime, state and statechange, the end of its sources (ended),
  // and an <audio> element's currentTime, paused, ended and the events of
  // its playback. The sound itself is the browser's (muted when headless),
  // only roughly in step with the page's time.
  const held = (p) => {
    const end = track();
    Promise.resolve(p).then(end, end);
    return p;
  };
  // holdMethod makes the method key of proto, which returns a promise, a
  // load the driver waits for.
  const holdMethod = (proto, key) => {
    const f = proto && proto[key];
    if (typeof f !== 'function') return;
    const w = { [key](...args) { return held(f.apply(this, args)); } }[key];
    Object.defineProperty(w, 'length', { value: f.length });
    defineValue(proto, key, w);
  };
  const virtualEvents = new WeakSet();
  const fire = (target, type) => {
    const e = new Event(type);
    virtualEvents.add(e);
    target.dispatchEvent(e);
  };
  const soon = (target, ...types) => queueMicrotask(() => { for (const t of types) fire(target, t); });
  const nativeAdd = EventTarget.prototype.addEventListener;
  const nativeRemove = EventTarget.prototype.removeEventListener;
  // gate makes the listeners of types, on the objects of proto that
  // virtual(obj) picks, hear only the events this clock fires: the
  // browser's own come on its wall clock.
  const gate = (proto, types, virtual) => {
    if (!proto) return;
    const wrappers = new WeakMap(); // listener -> Map(type|capture|once -> wrapper)
    const wrapper = (fn, type, capture, once) => {
      let m = wrappers.get(fn);
      if (!m) wrappers.set(fn, m = new Map());
      const k = type + '|' + capture + '|' + once;
      let w = m.get(k);
      if (!w) {
        w = function (e) {
          if (!virtualEvents.has(e)) return undefined;
          if (once) nativeRemove.call(this, type, w, capture);
          return typeof fn === 'function' ? fn.call(this, e) : fn.handleEvent(e);
        };
        m.set(k, w);
      }
      return w;
    };
    const gated = (obj, type, fn) => types.includes(type) && fn && (typeof fn === 'function' || typeof fn === 'object') && virtual(obj);
    const captureOf = (opts) => !!(typeof opts === 'object' && opts !== null ? opts.capture : opts);
    defineValue(proto, 'addEventListener', function addEventListener(type, fn, opts) {
      if (!gated(this, type, fn)) return nativeAdd.apply(this, arguments);
      const capture = captureOf(opts);
      const once = !!(opts && opts.once);
      const o = typeof opts === 'object' && opts !== null ? { ...opts, once: false } : capture;
      return nativeAdd.call(this, type, wrapper(fn, type, capture, once), o);
    });
    defineValue(proto, 'removeEventListener', function removeEventListener(type, fn, opts) {
      if (!gated(this, type, fn)) return nativeRemove.apply(this, arguments);
      const capture = captureOf(opts);
      nativeRemove.call(this, type, wrapper(fn, type, capture, false), capture);
      return nativeRemove.call(this, type, wrapper(fn, type, capture, true), capture);
    });
    // on<type>: the handler runs for this clock's events only, at the
    // place of the listener list where it was first set.
    const handlers = new WeakMap(); // obj -> {type: handler}
    for (const type of types) {
      let owner = proto;
      while (owner && !Object.getOwnPropertyDescriptor(owner, 'on' + type)) owner = Object.getPrototypeOf(owner);
      const d = owner && Object.getOwnPropertyDescriptor(owner, 'on' + type);
      if (!d || !d.set) continue;
      Object.defineProperty(proto, 'on' + type, {
        configurable: true, enumerable: d.enumerable,
        get() {
          if (!virtual(this)) return d.get.call(this);
          const h = handlers.get(this);
          return h && typeof h[type] === 'function' ? h[type] : null;
        },
        set(fn) {
          if (!virtual(this)) { d.set.call(this, fn); return; }
          let h = handlers.get(this);
          if (!h) handlers.set(this, h = {});
          if (!(type in h)) {
            const self = this;
            nativeAdd.call(this, type, function (e) {
              if (virtualEvents.has(e) && typeof h[type] === 'function') h[type].call(self, e);
            });
          }
          h[type] = typeof fn === 'function' ? fn : null;
        },
      });
    }
  };
  const getter = (proto, key) => {
    for (let o = proto; o; o = Object.getPrototypeOf(o)) {
      const d = Object.getOwnPropertyDescriptor(o, key);
      if (d) return d;
    }
    return undefined;
  };
  // override redefines proto's accessor key: get(native getter) and,
  // when given, set(value, native setter).
  const override = (proto, key, get, set) => {
    const d = getter(proto, key);
    if (!d || !d.get) return;
    Object.defineProperty(proto, key, {
      configurable: true, enumerable: d.enumerable,
      get() { return get.call(this, d.get); },
      set: set ? function (v) { set.call(this, v, d.set); } : d.set,
    });
  };

  // Web Audio: an AudioContext's clock runs while it is running, on page
  // time; resume, suspend and close change its state once the browser
  // has done it, while the driver waits.
  const contexts = new WeakMap(); // a real-time context -> {state, base, since}
  const ctxTime = (r) => r.base + (r.state === 'running' ? (now - r.since) / 1000 : 0);
  const setState = (c, r, to) => {
    if (r.state === to) return;
    r.base = ctxTime(r);
    r.since = now;
    r.state = to;
    fire(c, 'statechange');
  };
  const sources = new Map(); // a started source of a real-time context -> {r, t0, offset, duration, stopAt}
  const paramValues = new WeakMap(); // an AudioParam -> the value the page last gave it
  const BAC = g.BaseAudioContext && g.BaseAudioContext.prototype;
  for (const C of [g.BaseAudioContext, g.webkitAudioContext, g.webkitOfflineAudioContext]) {
    const proto = C && C.prototype;
    if (!proto || !Object.prototype.hasOwnProperty.call(proto, 'decodeAudioData')) continue;
    const decode = proto.decodeAudioData;
    // The promise form and the callback form: both end the load after
    // the page's own callback ran.
    defineValue(proto, 'decodeAudioData', function decodeAudioData(data, ...callbacks) {
      const end = track();
      const after = (cb) => (typeof cb === 'function' ? function (...a) { try { return cb.apply(this, a); } finally { end(); } } : cb);
      let p;
      try { p = decode.call(this, data, ...callbacks.map(after)); } catch (e) { end(); throw e; }
      if (p && typeof p.then === 'function') p.then(end, end);
      else if (!callbacks.length) end();
      return p;
    });
  }
  if (g.OfflineAudioContext) holdMethod(g.OfflineAudioContext.prototype, 'startRendering');
  const RealAudioContext = g.AudioContext;
  if (RealAudioContext && BAC) {
    const realState = getter(BAC, 'state');
    const VirtualAudioContext = class AudioContext extends RealAudioContext {
      constructor(...args) {
        super(...args);
        const state = realState && realState.get ? realState.get.call(this) : 'running';
        contexts.set(this, { state, base: 0, since: now });
        if (state === 'running') soon(this, 'statechange');
      }
    };
    defineValue(g, 'AudioContext', VirtualAudioContext);
    if (g.webkitAudioContext === RealAudioContext) defineValue(g, 'webkitAudioContext', VirtualAudioContext);
    override(BAC, 'currentTime', function (get) { const r = contexts.get(this); return r ? ctxTime(r) : get.call(this); });
    override(BAC, 'state', function (get) { const r = contexts.get(this); return r ? r.state : get.call(this); });
    const ACP = RealAudioContext.prototype;
    for (const [key, to] of [['resume', 'running'], ['suspend', 'suspended'], ['close', 'closed']]) {
      const f = ACP[key];
      if (typeof f !== 'function') continue;
      defineValue(ACP, key, { [key](...args) {
        const r = contexts.get(this);
        if (!r) return f.apply(this, args);
        return held(f.apply(this, args).then((v) => { setState(this, r, to); return v; }));
      } }[key]);
    }
    if (typeof ACP.getOutputTimestamp === 'function') {
      const f = ACP.getOutputTimestamp;
      defineValue(ACP, 'getOutputTimestamp', function getOutputTimestamp() {
        const r = contexts.get(this);
        return r ? { contextTime: ctxTime(r), performanceTime: now } : f.call(this);
      });
    }
    gate(BAC, ['statechange'], (c) => contexts.has(c));
  }
  if (g.AudioParam) {
    const AP = g.AudioParam.prototype;
    override(AP, 'value', function (get) { return get.call(this); }, function (v, set) { set.call(this, v); paramValues.set(this, Number(v)); });
    for (const key of ['setValueAtTime', 'linearRampToValueAtTime', 'exponentialRampToValueAtTime', 'setTargetAtTime', 'setValueCurveAtTime']) {
      const f = AP[key];
      if (typeof f !== 'function') continue;
      defineValue(AP, key, { [key](v, ...rest) {
        const out = f.call(this, v, ...rest);
        const last = key === 'setValueCurveAtTime' ? (v && v.length ? v[v.length - 1] : undefined) : v;
        if (last !== undefined) paramValues.set(this, Number(last));
        return out;
      } }[key]);
    }
  }
  // paramValue is the value the page gave p: reading the browser's
  // after an automation would read its audio thread's progress.
  const paramValue = (p, dflt) => {
    if (!p) return dflt;
    if (paramValues.has(p)) return paramValues.get(p);
    const v = Number(p.value);
    return Number.isFinite(v) ? v : dflt;
  };
  const ASN = g.AudioScheduledSourceNode && g.AudioScheduledSourceNode.prototype;
  if (ASN) {
    const ownContext = (node) => { try { return contexts.get(node.context); } catch (e) { return undefined; } };
    const starts = [[ASN, ASN.start]];
    if (g.AudioBufferSourceNode && Object.prototype.hasOwnProperty.call(g.AudioBufferSourceNode.prototype, 'start')) starts.push([g.AudioBufferSourceNode.prototype, g.AudioBufferSourceNode.prototype.start]);
    for (const [proto, start] of starts) {
      const w = function start_(when, offset, duration) {
        const out = start.apply(this, arguments);
        const r = ownContext(this);
        if (r) sources.set(this, { r, t0: Math.max(Number(when) || 0, ctxTime(r)), offset: Number(offset) || 0, duration: duration === undefined ? undefined : Number(duration), stopAt: Infinity });
        return out;
      };
      Object.defineProperty(w, 'name', { value: 'start' });
      Object.defineProperty(w, 'length', { value: start.length });
      defineValue(proto, 'start', w);
    }
    const stop = ASN.stop;
    defineValue(ASN, 'stop', function stop_(when) {
      const out = stop.apply(this, arguments);
      const s = sources.get(this);
      if (s) s.stopAt = Math.max(Number(when) || 0, ctxTime(s.r));
      return out;
    });
    Object.defineProperty(ASN.stop, 'name', { value: 'stop' });
    gate(ASN, ['ended'], (n) => !!ownContext(n));
  }
  // The context time at which a source ends by itself: a buffer played
  // once, at its rate; the others play until stopped.
  const naturalEnd = (node, s) => {
    if (!g.AudioBufferSourceNode || !(node instanceof g.AudioBufferSourceNode) || !node.buffer) return Infinity;
    const rate = Math.abs(paramValue(node.playbackRate, 1) * Math.pow(2, paramValue(node.detune, 0) / 1200)) || 0;
    if (rate === 0) return Infinity;
    if (node.loop) return s.duration === undefined ? Infinity : s.t0 + s.duration / rate;
    const length = Math.max(0, node.buffer.duration - s.offset);
    return s.t0 + (s.duration === undefined ? length : Math.min(s.duration, length)) / rate;
  };

  // Media elements: a load (src, load(), new Audio(url), play() before
  // the data is there) is held until the element can play through, fails,
  // or stops as its preload asks. An <audio> element plays on page time.
  const HME = g.HTMLMediaElement && g.HTMLMediaElement.prototype;
  const isAudio = (el) => !!g.HTMLAudioElement && el instanceof g.HTMLAudioElement;
  const loads = new WeakMap(); // a media element -> the end of its held load
  const hasSource = (el) => el.hasAttribute('src') || !!el.querySelector('source');
  const startLoad = (el, untilPlayable) => {
    const prev = loads.get(el);
    if (prev) prev();
    if (!hasSource(el)) return;
    const end = track();
    const types = ['canplaythrough', 'error', 'suspend'];
    // A load that waits for a play stops at its first suspend.
    const check = (e) => {
      if (e.type === 'suspend' && (untilPlayable || el.autoplay || el.preload !== 'none' || el.readyState !== 0)) return;
      finish();
    };
    const finish = () => {
      for (const t of types) nativeRemove.call(el, t, check, true);
      if (loads.get(el) === finish) loads.delete(el);
      if (el.autoplay && isAudio(el)) playing(el);
      end();
    };
    for (const t of types) nativeAdd.call(el, t, check, true);
    loads.set(el, finish);
  };
  const audios = new WeakMap(); // an <audio> -> {paused, ended, waiting, pos, since, lastUpdate}
  const audioOf = (el) => {
    let r = audios.get(el);
    if (!r) audios.set(el, r = { paused: true, ended: false, waiting: false, pos: 0, since: 0, lastUpdate: 0 });
    return r;
  };
  const playingAudios = new Set();
  const position = (el, r) => {
    if (r.paused || r.waiting) return r.pos;
    const p = r.pos + (now - r.since) / 1000 * (Number(el.playbackRate) || 0);
    const d = el.duration;
    return Number.isFinite(d) ? Math.min(p, d) : p;
  };
  // playing starts the page's time of an <audio> the browser plays.
  const playing = (el) => {
    const r = audioOf(el);
    if (!r.paused && !r.waiting) return;
    const wasPaused = r.paused;
    r.paused = false;
    r.waiting = false;
    r.since = now;
    r.lastUpdate = now;
    playingAudios.add(el);
    if (wasPaused) fire(el, 'play');
    fire(el, 'playing');
  };
  const resetAudio = (el) => {
    const r = audios.get(el);
    if (!r) return;
    r.paused = true; r.ended = false; r.waiting = false; r.pos = 0;
    playingAudios.delete(el);
  };
  if (HME) {
    const srcDesc = getter(HME, 'src');
    if (srcDesc && srcDesc.set) {
      Object.defineProperty(HME, 'src', {
        configurable: true, enumerable: srcDesc.enumerable, get: srcDesc.get,
        set(v) { srcDesc.set.call(this, v); resetAudio(this); startLoad(this, false); },
      });
    }
    const setAttr = Element.prototype.setAttribute;
    defineValue(HME, 'setAttribute', function setAttribute(name, value) {
      const out = setAttr.call(this, name, value);
      if (String(name).toLowerCase() === 'src') { resetAudio(this); startLoad(this, false); }
      return out;
    });
    const load = HME.load;
    defineValue(HME, 'load', function load_() {
      const out = load.call(this);
      resetAudio(this);
      startLoad(this, false);
      return out;
    });
    const play = HME.play;
    defineValue(HME, 'play', function play_() {
      if (this.readyState < 4 && !this.error && !loads.has(this)) startLoad(this, true);
      const p = play.call(this);
      if (!isAudio(this)) return p;
      const r = audioOf(this);
      if (r.paused) {
        if (r.ended) { r.pos = 0; r.ended = false; }
        r.paused = false;
        r.waiting = true;
        soon(this, 'play');
      }
      return held(p.then(() => {
        if (r.waiting) {
          r.waiting = false; r.since = now; r.lastUpdate = now;
          playingAudios.add(this);
          fire(this, 'playing');
        }
      }, (e) => {
        if (!r.paused) { r.pos = position(this, r); r.paused = true; r.waiting = false; playingAudios.delete(this); fire(this, 'pause'); }
        throw e;
      }));
    });
    const pause = HME.pause;
    defineValue(HME, 'pause', function pause_() {
      const out = pause.call(this);
      const r = isAudio(this) && audios.get(this);
      if (r && !r.paused) {
        r.pos = position(this, r);
        r.paused = true;
        r.waiting = false;
        playingAudios.delete(this);
        soon(this, 'timeupdate', 'pause');
      }
      return out;
    });
    const audioOnly = (f) => function (get) { return isAudio(this) ? f.call(this, audioOf(this)) : get.call(this); };
    override(HME, 'paused', audioOnly(function (r) { return r.paused; }));
    override(HME, 'ended', audioOnly(function (r) { return r.ended; }));
    override(HME, 'currentTime', audioOnly(function (r) { return position(this, r); }), function (v, set) {
      set.call(this, v);
      if (!isAudio(this)) return;
      const r = audioOf(this);
      const d = this.duration;
      r.pos = Math.max(0, Number.isFinite(d) ? Math.min(Number(v) || 0, d) : Number(v) || 0);
      r.since = now;
      r.ended = false;
      soon(this, 'seeking', 'timeupdate', 'seeked');
    });
    gate(HME, ['play', 'playing', 'pause', 'timeupdate', 'ended', 'seeking', 'seeked'], isAudio);
    if (g.Audio) {
      const RealAudio = g.Audio;
      const VirtualAudio = function Audio(src) {
        if (!new.target) return RealAudio(); // throws as the browser's does
        const el = Reflect.construct(RealAudio, [], new.target === VirtualAudio ? RealAudio : new.target);
        if (src !== undefined) el.src = src;
        return el;
      };
      VirtualAudio.prototype = RealAudio.prototype;
      defineValue(g, 'Audio', VirtualAudio);
    }
    // The page's own <audio> and <video> elements load while it loads.
    g.addEventListener('load', () => {
      for (const el of document.querySelectorAll('audio, video')) {
        if (el.networkState === 2 && !loads.has(el)) startLoad(el, el.autoplay);
      }
    }, { once: true });
  }
  // Fonts and the GPU's adapter and device are loads too.
  if (g.FontFace) holdMethod(g.FontFace.prototype, 'load');
  if (g.FontFaceSet) holdMethod(g.FontFaceSet.prototype, 'load');
  if (g.GPU) holdMethod(g.GPU.prototype, 'requestAdapter');
  if (g.GPUAdapter) holdMethod(g.GPUAdapter.prototype, 'requestDevice');

  // soundEvents are the events of sound due at a frame: the ends of the
  // sources and <audio> elements whose end came, and every 250 ms a
  // playing element's timeupdate.
  const soundEvents = () => {
    const due = [];
    for (const [node, s] of sources) {
      if (ctxTime(s.r) + 1e-9 < Math.min(s.stopAt, naturalEnd(node, s))) continue;
      sources.delete(node);
      due.push([node, 'ended']);
    }
    for (const el of playingAudios) {
      const r = audioOf(el);
      if (r.paused) { playingAudios.delete(el); continue; }
      if (r.waiting) continue;
      const d = el.duration;
      const p = r.pos + (now - r.since) / 1000 * (Number(el.playbackRate) || 0);
      if (Number.isFinite(d) && p >= d) {
        if (el.loop) { r.pos = d > 0 ? p % d : 0; r.since = now; } else {
          r.pos = d; r.paused = true; r.ended = true;
          playingAudios.delete(el);
          for (const t of ['timeupdate', 'pause', 'ended']) due.push([el, t]);
          continue;
        }
      }
      if (now - r.lastUpdate >= 250) { r.lastUpdate = now; due.push([el, 'timeupdate']); }
    }
    return due;
  };

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
    for (const [target, type] of soundEvents()) {
      fire(target, type);
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
      // driver waits for it before the next frame.
      while (!fault && pending === 0 && realNow() - began < budget) {
        const at = frame * 1000 / 60;
        if (at > t + 1e-6) break;
        await runTimers(at);
        if (fault) break;
        now = Math.max(now, at);
        frame++;
        await runFrame();
      }
      if (!fault && pending === 0 && frame * 1000 / 60 > t + 1e-6) {
        await runTimers(t);
        if (!fault) now = Math.max(now, t);
      }
      return api.state();
    },
    // state reports the page time, what the page reported, and a fault.
    state() {
      const out = { now, frame, pending, reports, dropped, fault, consoleCalls };
      reports = [];
      dropped = 0;
      return out;
    },
    newStep() { consoleCalls = 0; },
    pending() { return pending; },
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
