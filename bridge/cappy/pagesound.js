// Sound on page time, a part of the page driver's clock (pageclock.js
// calls it with the clock's own parts): decoding audio, loading media,
// rendering offline, loading fonts and asking for the GPU are loads like
// the others, which the driver waits for between frames. What the page
// sees of sound's own clocks runs on page time: an AudioContext's
// currentTime, state and statechange, the end of its sources (ended), and
// an <audio> element's currentTime, paused, ended and the events of its
// playback. The sound itself is the browser's (muted when headless), only
// roughly in step with the page's time. It answers the events of sound
// due at a frame, which the clock fires each as a task of its own.
(function (k) {
  'use strict';
  const { g, defineValue, track, time } = k;
  const queue = queueMicrotask.bind(g);
  const nativeAdd = EventTarget.prototype.addEventListener;
  const nativeRemove = EventTarget.prototype.removeEventListener;

  const held = (p) => {
    const end = track();
    Promise.resolve(p).then(() => end(), () => end());
    return p;
  };
  // wrap replaces the method key of proto with make(the method), under
  // the same name and length (melonJS reads decodeAudioData's length to
  // choose its form).
  const wrap = (proto, key, make) => {
    const f = proto && proto[key];
    if (typeof f !== 'function') return;
    const w = make(f);
    Object.defineProperty(w, 'name', { value: key });
    Object.defineProperty(w, 'length', { value: f.length });
    defineValue(proto, key, w);
  };
  // hold makes proto's method key, which returns a promise, a load.
  const hold = (proto, key) => wrap(proto, key, (f) => function (...args) { return held(f.apply(this, args)); });
  const descriptor = (proto, key) => {
    for (let o = proto; o; o = Object.getPrototypeOf(o)) {
      const d = Object.getOwnPropertyDescriptor(o, key);
      if (d) return d;
    }
    return undefined;
  };
  // accessor redefines proto's accessor key: get(the browser's getter)
  // and, when given, set(value, the browser's setter).
  const accessor = (proto, key, get, set) => {
    const d = descriptor(proto, key);
    if (!d || !d.get) return;
    Object.defineProperty(proto, key, {
      configurable: true, enumerable: d.enumerable,
      get() { return get.call(this, d.get); },
      set: set ? function (v) { set.call(this, v, d.set); } : d.set,
    });
  };

  // ---- events on page time ----
  const clockEvents = new WeakSet();
  const fire = (target, type) => {
    const e = new Event(type);
    clockEvents.add(e);
    target.dispatchEvent(e);
  };
  const soon = (target, ...types) => queue(() => { for (const t of types) fire(target, t); });
  // gate makes the listeners of types, on the objects of proto that
  // ours(obj) picks, hear only the events this clock fires: the
  // browser's own come on its wall clock.
  const gate = (proto, types, ours) => {
    if (!proto) return;
    const wrappers = new WeakMap(); // listener -> Map(type|capture|once -> wrapper)
    const wrapper = (fn, type, capture, once) => {
      let m = wrappers.get(fn);
      if (!m) wrappers.set(fn, m = new Map());
      const key = type + '|' + capture + '|' + once;
      let w = m.get(key);
      if (!w) {
        w = function (e) {
          if (!clockEvents.has(e)) return undefined;
          if (once) nativeRemove.call(this, type, w, capture);
          return typeof fn === 'function' ? fn.call(this, e) : fn.handleEvent(e);
        };
        m.set(key, w);
      }
      return w;
    };
    const gated = (obj, type, fn) => types.includes(type) && fn && (typeof fn === 'function' || typeof fn === 'object') && ours(obj);
    const captureOf = (opts) => !!(typeof opts === 'object' && opts !== null ? opts.capture : opts);
    defineValue(proto, 'addEventListener', function addEventListener(type, fn, opts) {
      if (!gated(this, type, fn)) return nativeAdd.apply(this, arguments);
      const capture = captureOf(opts);
      const once = !!(opts && opts.once); // ours: a browser's event must not use it up
      const o = typeof opts === 'object' && opts !== null ? { ...opts, once: false } : capture;
      return nativeAdd.call(this, type, wrapper(fn, type, capture, once), o);
    });
    defineValue(proto, 'removeEventListener', function removeEventListener(type, fn, opts) {
      if (!gated(this, type, fn)) return nativeRemove.apply(this, arguments);
      const capture = captureOf(opts);
      nativeRemove.call(this, type, wrapper(fn, type, capture, false), capture);
      return nativeRemove.call(this, type, wrapper(fn, type, capture, true), capture);
    });
    // on<type>: the handler hears this clock's events only, at the place
    // in the listeners where it was first set.
    const handlers = new WeakMap(); // obj -> {type: handler}
    for (const type of types) {
      const d = descriptor(proto, 'on' + type);
      if (!d || !d.set) continue;
      Object.defineProperty(proto, 'on' + type, {
        configurable: true, enumerable: d.enumerable,
        get() {
          if (!ours(this)) return d.get.call(this);
          const h = handlers.get(this);
          return h && typeof h[type] === 'function' ? h[type] : null;
        },
        set(fn) {
          if (!ours(this)) { d.set.call(this, fn); return; }
          let h = handlers.get(this);
          if (!h) handlers.set(this, h = {});
          if (!(type in h)) {
            const self = this;
            nativeAdd.call(this, type, (e) => { if (clockEvents.has(e) && typeof h[type] === 'function') h[type].call(self, e); });
          }
          h[type] = typeof fn === 'function' ? fn : null;
        },
      });
    }
  };

  // ---- Web Audio ----
  // Decoding, in the promise form and the callback form: the load ends
  // after the page's own callback ran.
  for (const C of [g.BaseAudioContext, g.webkitAudioContext, g.webkitOfflineAudioContext]) {
    const proto = C && C.prototype;
    if (!proto || !Object.prototype.hasOwnProperty.call(proto, 'decodeAudioData')) continue;
    wrap(proto, 'decodeAudioData', (decode) => function (data, ...callbacks) {
      const end = track();
      const then = (cb) => (typeof cb === 'function' ? function (...a) { try { return cb.apply(this, a); } finally { end(); } } : cb);
      let p;
      try { p = decode.call(this, data, ...callbacks.map(then)); } catch (e) { end(); throw e; }
      if (p && typeof p.then === 'function') p.then(() => end(), () => end());
      else if (!callbacks.length) end();
      return p;
    });
  }
  if (g.OfflineAudioContext) hold(g.OfflineAudioContext.prototype, 'startRendering');

  // An AudioContext's clock runs while it is running, on page time;
  // resume, suspend and close change its state once the browser has done
  // it, while the driver waits.
  const contexts = new WeakMap(); // a real-time context -> {state, base, since}
  const ctxTime = (r) => r.base + (r.state === 'running' ? (time() - r.since) / 1000 : 0);
  const setState = (c, r, to) => {
    if (r.state === to) return;
    r.base = ctxTime(r);
    r.since = time();
    r.state = to;
    fire(c, 'statechange');
  };
  const BAC = g.BaseAudioContext && g.BaseAudioContext.prototype;
  const RealAudioContext = g.AudioContext;
  if (RealAudioContext && BAC) {
    const state = descriptor(BAC, 'state');
    const AudioContextOnPageTime = class AudioContext extends RealAudioContext {
      constructor(...args) {
        super(...args);
        const s = state && state.get ? state.get.call(this) : 'running';
        contexts.set(this, { state: s, base: 0, since: time() });
        if (s === 'running') soon(this, 'statechange');
      }
    };
    defineValue(g, 'AudioContext', AudioContextOnPageTime);
    if (g.webkitAudioContext === RealAudioContext) defineValue(g, 'webkitAudioContext', AudioContextOnPageTime);
    accessor(BAC, 'currentTime', function (get) { const r = contexts.get(this); return r ? ctxTime(r) : get.call(this); });
    accessor(BAC, 'state', function (get) { const r = contexts.get(this); return r ? r.state : get.call(this); });
    const ACP = RealAudioContext.prototype;
    for (const [key, to] of [['resume', 'running'], ['suspend', 'suspended'], ['close', 'closed']]) {
      wrap(ACP, key, (f) => function (...args) {
        const r = contexts.get(this);
        if (!r) return f.apply(this, args);
        return held(f.apply(this, args).then((v) => { setState(this, r, to); return v; }));
      });
    }
    wrap(ACP, 'getOutputTimestamp', (f) => function () {
      const r = contexts.get(this);
      return r ? { contextTime: ctxTime(r), performanceTime: time() } : f.call(this);
    });
    gate(BAC, ['statechange'], (c) => contexts.has(c));
  }

  // The values the page gives an AudioParam: reading the browser's after
  // an automation would read its audio thread's progress.
  const paramValues = new WeakMap();
  if (g.AudioParam) {
    const AP = g.AudioParam.prototype;
    accessor(AP, 'value', function (get) { return get.call(this); }, function (v, set) { set.call(this, v); paramValues.set(this, Number(v)); });
    for (const key of ['setValueAtTime', 'linearRampToValueAtTime', 'exponentialRampToValueAtTime', 'setTargetAtTime', 'setValueCurveAtTime']) {
      wrap(AP, key, (f) => function (v, ...rest) {
        const out = f.call(this, v, ...rest);
        const last = key === 'setValueCurveAtTime' ? (v && v.length ? v[v.length - 1] : undefined) : v;
        if (last !== undefined) paramValues.set(this, Number(last));
        return out;
      });
    }
  }
  const paramValue = (p, dflt) => {
    if (!p) return dflt;
    if (paramValues.has(p)) return paramValues.get(p);
    const v = Number(p.value);
    return Number.isFinite(v) ? v : dflt;
  };

  // A started source of a real-time context ends at a frame of page time:
  // a buffer played once, at its rate, or its stop.
  const sources = new Map(); // source -> {r, t0, offset, duration, stopAt}
  const ASN = g.AudioScheduledSourceNode && g.AudioScheduledSourceNode.prototype;
  const contextOf = (node) => { try { return contexts.get(node.context); } catch (e) { return undefined; } };
  if (ASN) {
    const starts = [ASN];
    if (g.AudioBufferSourceNode && Object.prototype.hasOwnProperty.call(g.AudioBufferSourceNode.prototype, 'start')) starts.push(g.AudioBufferSourceNode.prototype);
    for (const proto of starts) {
      wrap(proto, 'start', (start) => function (when, offset, duration) {
        const out = start.apply(this, arguments);
        const r = contextOf(this);
        if (r) sources.set(this, { r, t0: Math.max(Number(when) || 0, ctxTime(r)), offset: Number(offset) || 0, duration: duration === undefined ? undefined : Number(duration), stopAt: Infinity });
        return out;
      });
    }
    wrap(ASN, 'stop', (stop) => function (when) {
      const out = stop.apply(this, arguments);
      const s = sources.get(this);
      if (s) s.stopAt = Math.max(Number(when) || 0, ctxTime(s.r));
      return out;
    });
    gate(ASN, ['ended'], (node) => !!contextOf(node));
  }
  const naturalEnd = (node, s) => {
    if (!g.AudioBufferSourceNode || !(node instanceof g.AudioBufferSourceNode) || !node.buffer) return Infinity;
    const rate = Math.abs(paramValue(node.playbackRate, 1) * Math.pow(2, paramValue(node.detune, 0) / 1200));
    if (!rate) return Infinity;
    if (node.loop) return s.duration === undefined ? Infinity : s.t0 + s.duration / rate;
    const length = Math.max(0, node.buffer.duration - s.offset);
    return s.t0 + (s.duration === undefined ? length : Math.min(s.duration, length)) / rate;
  };

  // ---- media elements ----
  // A load (src, setAttribute('src'), load(), new Audio(url), play()
  // before the data is there, the page's own elements still loading at
  // its load event) is held until the element can play through or fails;
  // with preload "none", until it stops at its first suspend with no
  // data. An <audio> element plays on page time.
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
    const p = r.pos + (time() - r.since) / 1000 * (Number(el.playbackRate) || 0);
    const d = el.duration;
    return Number.isFinite(d) ? Math.min(p, d) : p;
  };
  // playing starts the page time of an <audio> the browser plays.
  const playing = (el) => {
    const r = audioOf(el);
    if (!r.paused && !r.waiting) return;
    const wasPaused = r.paused;
    Object.assign(r, { paused: false, waiting: false, since: time(), lastUpdate: time() });
    playingAudios.add(el);
    if (wasPaused) fire(el, 'play');
    fire(el, 'playing');
  };
  const pauseAudio = (el, r) => {
    r.pos = position(el, r);
    r.paused = true;
    r.waiting = false;
    playingAudios.delete(el);
  };
  const resetAudio = (el) => {
    const r = audios.get(el);
    if (!r) return;
    Object.assign(r, { paused: true, ended: false, waiting: false, pos: 0 });
    playingAudios.delete(el);
  };
  const newSource = (el) => { resetAudio(el); startLoad(el, false); };
  if (HME) {
    const src = descriptor(HME, 'src');
    if (src && src.set) {
      Object.defineProperty(HME, 'src', {
        configurable: true, enumerable: src.enumerable, get: src.get,
        set(v) { src.set.call(this, v); newSource(this); },
      });
    }
    const setAttribute = Element.prototype.setAttribute;
    defineValue(HME, 'setAttribute', { setAttribute(name, value) {
      const out = setAttribute.call(this, name, value);
      if (String(name).toLowerCase() === 'src') newSource(this);
      return out;
    } }.setAttribute);
    wrap(HME, 'load', (load) => function () {
      const out = load.call(this);
      newSource(this);
      return out;
    });
    wrap(HME, 'play', (play) => function () {
      if (this.readyState < 4 && !this.error) startLoad(this, true);
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
        if (!r.waiting) return;
        Object.assign(r, { waiting: false, since: time(), lastUpdate: time() });
        playingAudios.add(this);
        fire(this, 'playing');
      }, (e) => {
        if (!r.paused) { pauseAudio(this, r); fire(this, 'pause'); }
        throw e;
      }));
    });
    wrap(HME, 'pause', (pause) => function () {
      const out = pause.call(this);
      const r = isAudio(this) && audios.get(this);
      if (r && !r.paused) {
        pauseAudio(this, r);
        soon(this, 'timeupdate', 'pause');
      }
      return out;
    });
    const audioOnly = (f) => function (get) { return isAudio(this) ? f.call(this, audioOf(this)) : get.call(this); };
    accessor(HME, 'paused', audioOnly((r) => r.paused));
    accessor(HME, 'ended', audioOnly((r) => r.ended));
    accessor(HME, 'currentTime', audioOnly(function (r) { return position(this, r); }), function (v, set) {
      set.call(this, v);
      if (!isAudio(this)) return;
      const r = audioOf(this);
      const d = this.duration;
      const to = Number(v) || 0;
      Object.assign(r, { pos: Math.max(0, Number.isFinite(d) ? Math.min(to, d) : to), since: time(), ended: false });
      soon(this, 'seeking', 'timeupdate', 'seeked');
    });
    gate(HME, ['play', 'playing', 'pause', 'timeupdate', 'ended', 'seeking', 'seeked'], isAudio);
    if (g.Audio) {
      const RealAudio = g.Audio;
      const Audio = function Audio(url) {
        if (!new.target) return RealAudio(); // throws, as the browser's does
        const el = Reflect.construct(RealAudio, [], new.target === Audio ? RealAudio : new.target);
        if (url !== undefined) el.src = url;
        return el;
      };
      Audio.prototype = RealAudio.prototype;
      defineValue(g, 'Audio', Audio);
    }
    g.addEventListener('load', () => {
      for (const el of document.querySelectorAll('audio, video')) {
        if (el.networkState === 2 && !loads.has(el)) startLoad(el, el.autoplay);
      }
    }, { once: true });
  }

  // Fonts and the GPU's adapter and device are loads too.
  if (g.FontFace) hold(g.FontFace.prototype, 'load');
  if (g.FontFaceSet) hold(g.FontFaceSet.prototype, 'load');
  if (g.GPU) hold(g.GPU.prototype, 'requestAdapter');
  if (g.GPUAdapter) hold(g.GPUAdapter.prototype, 'requestDevice');

  // events: the events of sound due now, in order.
  const events = () => {
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
      const p = r.pos + (time() - r.since) / 1000 * (Number(el.playbackRate) || 0);
      if (Number.isFinite(d) && p >= d) {
        if (el.loop) {
          Object.assign(r, { pos: d > 0 ? p % d : 0, since: time() });
        } else {
          pauseAudio(el, r);
          Object.assign(r, { pos: d, ended: true });
          for (const t of ['timeupdate', 'pause', 'ended']) due.push([el, t]);
          continue;
        }
      }
      if (time() - r.lastUpdate >= 250) { r.lastUpdate = time(); due.push([el, 'timeupdate']); }
    }
    return due.map(([target, type]) => () => fire(target, type));
  };
  return { events };
})
