// Cappy adapter for JavaScript games: lets crosscode-mcp's capture
// controller drive a browser or Node.js game over the Cappy adapter
// protocol (one loopback WebSocket of JSON text frames). One dependency-free
// ES module; types in cappy.d.ts; see README.md.
//
//   import { Cappy } from './cappy.js';
//   const cappy = new Cappy({ game: { id: 'my-game' } });
//   cappy.scenario('smoke', {}, async (op) => { op.emit('READY'); });
//   cappy.frames(canvas);
//   cappy.connect();
//
// The library does the protocol: the handshake, the scenario registry,
// parameter and presentation checks, ping/pong (answered as messages
// arrive, whatever the game is doing), the operation lifecycle, replays
// with their SHA-256, frames, and agent play (actions declared, steps of
// simulation time with their input held, inspect of the game's state). The
// game registers scenarios and hooks.

/** The adapter library's version, sent in hello. */
export const VERSION = '0.1.0';
/** The adapter protocol version this library speaks. */
export const PROTOCOL_VERSION = 1;
/** The largest message either side may send (4 MiB). */
export const MAX_MESSAGE_BYTES = 4 << 20;
/** The largest decoded inline replay (1 MiB). */
export const MAX_INLINE_REPLAY_BYTES = 1 << 20;
/** The largest decoded frame (1 MiB). */
export const MAX_FRAME_BYTES = 1 << 20;
/** The largest summary the controller keeps (64 KiB of JSON). */
export const MAX_SUMMARY_BYTES = 64 << 10;
/** The longest step an agent may ask for (simulation ms). */
export const MAX_STEP_MS = 10000;
/** The largest inspect value (256 KiB of JSON). */
export const MAX_INSPECT_BYTES = 256 << 10;
/** The most actions a game may declare. */
export const MAX_ACTIONS = 256;
/** The most action inputs one step may carry. */
export const MAX_STEP_ACTIONS = 64;
/** The pointer buttons a step may name (left when it names none). */
export const POINTER_BUTTONS = Object.freeze(['left', 'middle', 'right']);

/** Capabilities with a meaning to the controller. */
export const Capability = Object.freeze({
  SCENARIOS: 'scenarios',
  FREEFORM_RECORDING: 'freeform_recording',
  REPLAY: 'replay',
  TIME_SCALE: 'time_scale',
  ALTERNATE_CAMERAS: 'alternate_cameras',
  FRAMES: 'frames',
  /** Agent play: the game declares actions and runs in steps (cappy.actions). */
  INPUT: 'input',
  /** The controller may read the game's state (cappy.state). */
  INSPECT: 'inspect',
  /**
   * The game seeds its randomness with the controller's seed (op.seed) in
   * each recording and replay, so that a recording replays the same: give
   * it in options.capabilities.
   */
  SEED: 'seed',
});

/** The kinds of action an agent can take, and the fields of each in a step. */
export const ActionKind = Object.freeze({
  /** `pressed`: true or false; held until a later step changes it. */
  BUTTON: 'button',
  /** `value`: -1 to 1. */
  AXIS: 'axis',
  /** `x`, `y`: -1 to 1. */
  AXIS2D: 'axis2d',
  /** `x`, `y` in the pixels of the game's frames; `button`? (left, middle, right), `pressed`?. */
  POINTER: 'pointer',
  /** `text`. */
  TEXT: 'text',
});

/** Error codes of the protocol, and the library's own ADAPTER_ERROR. */
export const Code = Object.freeze({
  UNAUTHENTICATED: 'PROTOCOL_UNAUTHENTICATED',
  INVALID_MESSAGE: 'PROTOCOL_INVALID_MESSAGE',
  OUT_OF_STATE: 'PROTOCOL_OUT_OF_STATE',
  CAPABILITY_MISSING: 'CAPABILITY_MISSING',
  OPERATION_BUSY: 'OPERATION_BUSY',
  SCENARIO_NOT_FOUND: 'SCENARIO_NOT_FOUND',
  INVALID_PARAMETERS: 'INVALID_PARAMETERS',
  REPLAY_UNSUPPORTED: 'REPLAY_UNSUPPORTED',
  REPLAY_INVALID: 'REPLAY_INVALID',
  UNKNOWN_CAMERA: 'UNKNOWN_CAMERA',
  PRESENTATION_UNSUPPORTED: 'PRESENTATION_UNSUPPORTED',
  /** A step's unknown action or bad value (step_refused; the play goes on). */
  INVALID_INPUT: 'INVALID_INPUT',
  /** An inspect query that does not parse. */
  INVALID_QUERY: 'INVALID_QUERY',
  /** An inspect path that leads nowhere in the game's state. */
  UNKNOWN_QUERY: 'UNKNOWN_QUERY',
  /** An inspect value of more than MAX_INSPECT_BYTES: ask for a narrower path. */
  VALUE_TOO_LARGE: 'VALUE_TOO_LARGE',
  /** A hook or scenario threw something that is not a CappyFailure. */
  ADAPTER_ERROR: 'ADAPTER_ERROR',
});

const MIN_TIME_SCALE = 0.1;
const MAX_TIME_SCALE = 4;
const TEARDOWN_WAIT_MS = 5000;
const CODE_RE = /^[A-Z][A-Z0-9_]{0,127}$/;

/** An error with a protocol code: thrown by a scenario or hook, it is sent as `failed` with that code. */
export class CappyFailure extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.name = 'CappyFailure';
    this.code = code;
  }
}

/** connect() rejects with this when the controller refuses the adapter. */
export class RejectError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(`cappy controller rejected the adapter: ${code}: ${message}`);
    this.name = 'RejectError';
    this.code = code;
  }
}

const utf8 = new TextEncoder();
const byteLength = (s) => utf8.encode(s).length;
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const clock = () => (globalThis.performance ? globalThis.performance.now() : Date.now());

// Control characters other than newline, tab and carriage return.
const CONTROL_RE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

/** Checks a text field as the controller does; returns a reason or ''. */
function checkText(v, max, required) {
  if (typeof v !== 'string') return required || v !== undefined ? 'must be a string' : '';
  if (v === '') return required ? 'required' : '';
  if (byteLength(v) > max) return `too long: at most ${max} bytes`;
  if (CONTROL_RE.test(v)) return 'contains a control character';
  return '';
}

/** Checks an identifier as the controller does; returns a reason or ''. */
function checkID(v) {
  if (typeof v !== 'string' || v === '') return 'required';
  if (byteLength(v) > 256) return 'too long: at most 256 bytes';
  if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(v)) return 'contains a control, invisible or bidi character';
  if (v.trim() !== v) return 'has leading or trailing space';
  if (/[^\S ]| {2}/u.test(v)) return 'contains white space other than single spaces';
  return '';
}

/**
 * Checks one value against a parameter's description (type, enum,
 * minimum, maximum), as the controller does. Returns a reason or ''.
 */
export function checkParameter(p, v) {
  switch (p.type) {
    case 'string':
      if (typeof v !== 'string') return 'must be a string';
      break;
    case 'boolean':
      if (typeof v !== 'boolean') return 'must be a boolean';
      break;
    case 'number':
    case 'integer':
      if (typeof v !== 'number' || !Number.isFinite(v)) return 'must be a number';
      if (p.type === 'integer' && !Number.isInteger(v)) return 'must be an integer';
      if (p.minimum !== undefined && v < p.minimum) return `must be at least ${p.minimum}`;
      if (p.maximum !== undefined && v > p.maximum) return `must be at most ${p.maximum}`;
      break;
    default:
      return `has an unknown type ${JSON.stringify(p.type)}`;
  }
  if (Array.isArray(p.enum) && p.enum.length > 0 && !p.enum.includes(v)) return `must be one of ${JSON.stringify(p.enum)}`;
  return '';
}

/**
 * Checks args against a scenario's parameters, fills in defaults, and
 * refuses unknown or missing required ones (the controller's rules).
 * Throws a CappyFailure with INVALID_PARAMETERS.
 * @returns {Record<string, unknown>}
 */
export function resolveParameters(scenario, args = {}) {
  const params = scenario.parameters || {};
  const out = {};
  for (const [name, v] of Object.entries(args || {})) {
    const p = params[name];
    if (!p) throw new CappyFailure(Code.INVALID_PARAMETERS, `${name}: scenario ${JSON.stringify(scenario.id)} has no parameter ${JSON.stringify(name)}`);
    const why = checkParameter(p, v);
    if (why) throw new CappyFailure(Code.INVALID_PARAMETERS, `${name}: ${why}`);
    out[name] = v;
  }
  for (const [name, p] of Object.entries(params)) {
    if (name in out) continue;
    if (p.default !== undefined) out[name] = p.default;
    else if (p.required) throw new CappyFailure(Code.INVALID_PARAMETERS, `${name}: required by scenario ${JSON.stringify(scenario.id)}`);
  }
  return out;
}

/**
 * Checks the presentation keys Cappy defines (timeScale, camera) and the
 * capabilities they need. Throws a CappyFailure.
 */
export function checkPresentation(p, has = () => true) {
  if (p === undefined || p === null) return;
  if (!isObject(p)) throw new CappyFailure(Code.PRESENTATION_UNSUPPORTED, 'presentation must be an object');
  if ('timeScale' in p) {
    const s = p.timeScale;
    if (typeof s !== 'number' || !(s >= MIN_TIME_SCALE && s <= MAX_TIME_SCALE)) {
      throw new CappyFailure(Code.PRESENTATION_UNSUPPORTED, `presentation.timeScale must be a number from ${MIN_TIME_SCALE} to ${MAX_TIME_SCALE}, got ${JSON.stringify(s)}`);
    }
    if (!has(Capability.TIME_SCALE)) throw new CappyFailure(Code.CAPABILITY_MISSING, `presentation.timeScale needs capability "${Capability.TIME_SCALE}", which the adapter does not advertise`);
  }
  if ('camera' in p) {
    if (typeof p.camera !== 'string' || p.camera === '') throw new CappyFailure(Code.PRESENTATION_UNSUPPORTED, 'presentation.camera must be a camera name');
    if (!has(Capability.ALTERNATE_CAMERAS)) throw new CappyFailure(Code.CAPABILITY_MISSING, `presentation.camera needs capability "${Capability.ALTERNATE_CAMERAS}", which the adapter does not advertise`);
  }
}

/** Checks a scenario description before it is registered; throws a TypeError. */
function checkScenario(s) {
  const bad = (why) => { throw new TypeError(`cappy: scenario ${JSON.stringify(s.id)}: ${why}`); };
  const idWhy = checkID(s.id);
  if (idWhy) bad(`id ${idWhy}`);
  for (const [f, max] of [['name', 1024], ['description', MAX_SUMMARY_BYTES]]) {
    const why = checkText(s[f], max, false);
    if (why) bad(`${f} ${why}`);
  }
  for (const [name, p] of Object.entries(s.parameters || {})) {
    const why = checkID(name);
    if (why) bad(`parameter name ${why}`);
    if (!['string', 'number', 'integer', 'boolean'].includes(p.type)) bad(`parameter ${name}: type must be string, number, integer or boolean`);
    if (p.minimum !== undefined && p.maximum !== undefined && p.minimum > p.maximum) bad(`parameter ${name}: minimum is above maximum`);
    if (p.default !== undefined) {
      const dwhy = checkParameter(p, p.default);
      if (dwhy) bad(`parameter ${name}: default ${dwhy}`);
    }
  }
}

const ACTION_KINDS = Object.values(ActionKind);

/**
 * Checks a game's action declarations ({name, kind, description}) and
 * returns them as sent in `actions`; throws a TypeError.
 * @returns {Array<{name: string, kind: string, description: string}>}
 */
export function checkActions(list) {
  if (!Array.isArray(list)) throw new TypeError('cappy: actions must be an array of {name, kind, description}');
  if (list.length > MAX_ACTIONS) throw new TypeError(`cappy: at most ${MAX_ACTIONS} actions`);
  const seen = new Set();
  return list.map((a) => {
    if (!isObject(a)) throw new TypeError('cappy: an action must be an object {name, kind, description}');
    const idWhy = checkID(a.name) || (byteLength(a.name) > 128 ? 'too long: at most 128 bytes' : '');
    if (idWhy) throw new TypeError(`cappy: action name ${JSON.stringify(a.name)}: ${idWhy}`);
    if (seen.has(a.name)) throw new TypeError(`cappy: action ${a.name} is declared twice`);
    seen.add(a.name);
    if (!ACTION_KINDS.includes(a.kind)) throw new TypeError(`cappy: action ${a.name}: kind must be one of ${ACTION_KINDS.join(', ')}`);
    const why = checkText(a.description, 1024, true);
    if (why) throw new TypeError(`cappy: action ${a.name}: description ${why} (the agent reads it to know what the action does)`);
    return { name: a.name, kind: a.kind, description: a.description };
  });
}

/** The value an action holds before any step sets it. */
function initialValue(kind) {
  switch (kind) {
    case ActionKind.BUTTON: return false;
    case ActionKind.AXIS: return 0;
    case ActionKind.AXIS2D: return { x: 0, y: 0 };
    case ActionKind.TEXT: return '';
    default: return null; // a pointer: none yet
  }
}

const FIELDS = {
  button: ['pressed'], axis: ['value'], axis2d: ['x', 'y'], pointer: ['x', 'y', 'button', 'pressed'], text: ['text'],
};
const HOW = {
  button: 'pressed (true or false)',
  axis: 'value (-1 to 1)',
  axis2d: 'x and y (-1 to 1)',
  pointer: 'x and y (in the pixels of the game\'s frames), button (left, middle or right) and pressed (true or false) optional',
  text: 'text (a string)',
};

/**
 * Checks one step's actions against the declared ones and returns what
 * they set, [[name, value], ...] in order; throws an Error whose message
 * says what is wrong (sent as step_refused INVALID_INPUT). held is the
 * current input (a pointer keeps its button and pressed when a step omits
 * them); frame, when known, is the frames' size {width, height} and the
 * scale from frame pixels to the game's own (pointer x/y are converted).
 * @returns {Array<[string, unknown]>}
 */
export function checkStep(actions, declared, held = {}, frame) {
  if (!Array.isArray(actions)) throw new Error('actions must be an array');
  if (actions.length > MAX_STEP_ACTIONS) throw new Error(`a step holds at most ${MAX_STEP_ACTIONS} actions`);
  const out = [];
  const pending = { ...held };
  for (const a of actions) {
    if (!isObject(a) || typeof a.name !== 'string') throw new Error('an action is {"name": ..., and its value}');
    const d = declared.get(a.name);
    if (!d) throw new Error(`no action ${JSON.stringify(cap(a.name, 64))}; the game's actions are: ${[...declared.keys()].join(', ') || 'none'}`);
    const bad = (why) => new Error(`${a.name} is ${d.kind === 'axis' ? 'an' : 'a'} ${d.kind}: it takes ${HOW[d.kind]}; ${why}`);
    for (const k of Object.keys(a)) if (k !== 'name' && !FIELDS[d.kind].includes(k)) throw bad(`${k} is not one of its fields`);
    const unit = (k) => {
      const v = a[k];
      if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(`${k} must be a number`);
      if (v < -1 || v > 1) throw bad(`${k} ${v} is out of range`);
      return v;
    };
    let v;
    switch (d.kind) {
      case ActionKind.BUTTON:
        if (typeof a.pressed !== 'boolean') throw bad('pressed must be true or false');
        v = a.pressed;
        break;
      case ActionKind.AXIS:
        v = unit('value');
        break;
      case ActionKind.AXIS2D:
        v = { x: unit('x'), y: unit('y') };
        break;
      case ActionKind.TEXT: {
        // No text is the empty text (the controller's encoder leaves an empty one out).
        const why = a.text === undefined || typeof a.text === 'string' ? checkText(a.text, 4096, false) : 'must be a string';
        if (why) throw bad(`text ${why}`);
        v = a.text ?? '';
        break;
      }
      default: { // pointer
        for (const k of ['x', 'y']) {
          if (typeof a[k] !== 'number' || !Number.isFinite(a[k]) || a[k] < 0) throw bad(`${k} must be a number from 0`);
        }
        if (frame && (a.x > frame.width || a.y > frame.height)) throw bad(`(${a.x}, ${a.y}) is outside the ${frame.width}x${frame.height} frame`);
        if (a.button !== undefined && !POINTER_BUTTONS.includes(a.button)) throw bad(`button must be one of ${POINTER_BUTTONS.join(', ')}`);
        if (a.pressed !== undefined && typeof a.pressed !== 'boolean') throw bad('pressed must be true or false');
        const prev = pending[a.name];
        const scale = frame?.scale || 1;
        v = { x: a.x / scale, y: a.y / scale, button: a.button ?? prev?.button ?? 'left', pressed: a.pressed ?? prev?.pressed ?? false };
      }
    }
    pending[a.name] = v;
    out.push([a.name, v]);
  }
  return out;
}

const INSPECT_SYNTAX = 'a path into the game\'s state: names and indices separated by dots (player.hp, enemies.0.x; enemies[0].x and ["a key"] work too); the empty query lists the top-level keys';

/**
 * Parses an inspect query into path segments: `a.b.0`, `a[0]`, `a["k"]`.
 * Throws an Error saying what is wrong.
 * @returns {string[]}
 */
export function parsePath(query) {
  const out = [];
  let i = 0;
  const n = query.length;
  while (i < n) {
    if (query[i] === '[') {
      const close = query.indexOf(']', i);
      if (close < 0) throw new Error(`unclosed [ at ${i}`);
      const inner = query.slice(i + 1, close).trim();
      if (/^\d+$/.test(inner)) out.push(inner);
      else {
        let k;
        try { k = JSON.parse(inner); } catch { k = undefined; }
        if (typeof k !== 'string') throw new Error(`[${inner}] at ${i}: an index is a number or a quoted key`);
        out.push(k);
      }
      i = close + 1;
      if (i < n && query[i] === '.') { i++; if (i >= n) throw new Error('the path ends with a dot'); }
      continue;
    }
    let j = i;
    while (j < n && query[j] !== '.' && query[j] !== '[') j++;
    const seg = query.slice(i, j).trim();
    if (seg === '') throw new Error(`an empty name at ${i}`);
    out.push(seg);
    i = j;
    if (i < n && query[i] === '.') { i++; if (i >= n) throw new Error('the path ends with a dot'); }
  }
  return out;
}

const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

/** Whether key is something the game's state shows: an own property, or a getter of its class. */
function readable(obj, key) {
  if (FORBIDDEN_KEYS.has(key)) return false;
  if (Object.prototype.hasOwnProperty.call(obj, key)) return true;
  for (let p = Object.getPrototypeOf(obj); p && p !== Object.prototype && p !== Array.prototype; p = Object.getPrototypeOf(p)) {
    const d = Object.getOwnPropertyDescriptor(p, key);
    if (d) return typeof d.get === 'function';
  }
  return false;
}

const keysOf = (v) => (v instanceof Map ? [...v.keys()].map(String) : Object.keys(v).filter((k) => { const x = v[k]; return x !== undefined && typeof x !== 'function'; }));
const listKeys = (keys) => (keys.length > 30 ? `${keys.slice(0, 30).join(', ')}, … (${keys.length})` : keys.join(', ') || 'nothing');

/** Follows a parsed path from root; throws a CappyFailure UNKNOWN_QUERY naming what is there instead. */
export function resolvePath(root, path) {
  let cur = root;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    const at = path.slice(0, i).join('.') || 'the state';
    const missing = (why) => new CappyFailure(Code.UNKNOWN_QUERY, `${path.slice(0, i + 1).join('.')}: ${why}`);
    if (cur === null || cur === undefined || (typeof cur !== 'object' && typeof cur !== 'function')) throw missing(`${at} is ${cur === null ? 'null' : typeof cur}, not an object`);
    if (cur instanceof Map) {
      const k = [...cur.keys()].find((x) => String(x) === seg);
      if (k === undefined && !cur.has(seg)) throw missing(`no key ${JSON.stringify(seg)} in ${at}; it has: ${listKeys(keysOf(cur))}`);
      cur = cur.get(k === undefined ? seg : k);
    } else if (Array.isArray(cur) || ArrayBuffer.isView(cur)) {
      if (seg === 'length') cur = cur.length;
      else if (/^\d+$/.test(seg) && Number(seg) < cur.length) cur = cur[Number(seg)];
      else throw missing(`${at} is an array of ${cur.length}: ask for an index from 0 to ${cur.length - 1}, or length`);
    } else {
      if (!readable(cur, seg)) throw missing(`no ${JSON.stringify(seg)} in ${at}; it has: ${listKeys(keysOf(cur))}`);
      cur = cur[seg];
      if (typeof cur === 'function') throw missing('a function, not state');
    }
  }
  return cur;
}

/** A one-line summary of a value, for the list of what can be asked. */
function summarize(v) {
  if (v === null || v === undefined) return 'null';
  if (Array.isArray(v) || ArrayBuffer.isView(v)) return `array of ${v.length}`;
  if (v instanceof Map) return `map of ${v.size}: ${listKeys(keysOf(v))}`;
  if (typeof v === 'object') return `object: ${listKeys(keysOf(v))}`;
  if (typeof v === 'string') return `string ${JSON.stringify(cap(v, 40))}`;
  return `${typeof v} ${String(v)}`;
}

/** What the empty query answers: the syntax, and the top-level keys with a summary of each. */
export function describeState(root) {
  const keys = {};
  if (root !== null && typeof root === 'object') {
    const names = Array.isArray(root) ? root.map((_, i) => String(i)) : keysOf(root);
    for (const k of names.slice(0, 200)) {
      let v;
      try { v = root instanceof Map ? root.get(k) : root[k]; } catch (e) { v = `[error: ${e?.message ?? e}]`; }
      keys[k] = summarize(v);
    }
  }
  return { syntax: INSPECT_SYNTAX, keys };
}

/**
 * The JSON text of a value from the game's state, at most maxBytes: plain
 * data as JSON.stringify writes it; functions and symbols left out;
 * Map and Set as object and array; typed arrays as arrays; bigint as a
 * string; a cycle as "[circular]", a getter that throws as
 * "[error: …]". Throws a CappyFailure VALUE_TOO_LARGE past maxBytes.
 */
export function snapshotJSON(value, maxBytes = MAX_INSPECT_BYTES) {
  const parts = [];
  let len = 0;
  const tooLarge = () => new CappyFailure(Code.VALUE_TOO_LARGE, `the value is more than ${maxBytes} bytes of JSON: ask for a part of it (the empty query lists what can be asked)`);
  const push = (s) => { len += s.length; if (len > maxBytes) throw tooLarge(); parts.push(s); };
  const ancestors = new Set();
  const read = (obj, k) => { try { return obj[k]; } catch (e) { return `[error: ${cap(String(e?.message ?? e), 200)}]`; } };
  const skip = (v) => v === undefined || typeof v === 'function' || typeof v === 'symbol';
  const walk = (v, depth) => {
    if (v === null || v === undefined || typeof v === 'function' || typeof v === 'symbol') return push('null');
    switch (typeof v) {
      case 'number': return push(Number.isFinite(v) ? JSON.stringify(v) : 'null');
      case 'boolean': return push(v ? 'true' : 'false');
      case 'bigint': return push(JSON.stringify(String(v)));
      case 'string':
        if (v.length > maxBytes) throw tooLarge();
        return push(JSON.stringify(v));
      default:
    }
    if (ancestors.has(v)) return push('"[circular]"');
    if (depth > 64) return push('"[too deep]"');
    if (typeof v.toJSON === 'function' && !(v instanceof Map) && !(v instanceof Set)) {
      let j;
      try { j = v.toJSON(); } catch (e) { j = `[error: ${cap(String(e?.message ?? e), 200)}]`; }
      if (j !== v) { ancestors.add(v); walk(j, depth + 1); ancestors.delete(v); return undefined; }
    }
    ancestors.add(v);
    if (Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView)) || v instanceof Set) {
      push('[');
      if (v instanceof Set) {
        let i = 0;
        for (const x of v) { if (i++) push(','); walk(x, depth + 1); }
      } else {
        for (let i = 0; i < v.length; i++) { if (i) push(','); walk(read(v, i), depth + 1); }
      }
      push(']');
    } else {
      push('{');
      let i = 0;
      const entries = v instanceof Map ? [...v.keys()].map((k) => [String(k), () => v.get(k)]) : Object.keys(v).map((k) => [k, () => read(v, k)]);
      for (const [k, get] of entries) {
        const x = get();
        if (skip(x)) continue;
        if (i++) push(',');
        push(JSON.stringify(k));
        push(':');
        walk(x, depth + 1);
      }
      push('}');
    }
    ancestors.delete(v);
    return undefined;
  };
  walk(value, 0);
  const text = parts.join('');
  if (byteLength(text) > maxBytes) throw tooLarge();
  return text;
}

/** Base64 of bytes, in chunks (no stack blow-up on 1 MiB). */
export function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

/** Bytes of base64 text; throws on malformed input. */
export function fromBase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** SHA-256 of bytes as 64 lower-case hex digits (Web Crypto). */
export async function sha256Hex(bytes) {
  const d = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

function toBytes(data) {
  if (typeof data === 'string') return utf8.encode(data);
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  throw new TypeError('cappy: replay data must be a string, Uint8Array or ArrayBuffer');
}

/**
 * An inline replay payload of data (at most 1 MiB), with its SHA-256.
 * @returns {Promise<{kind:'inline',encoding:'base64',data:string,sha256:string,format?:string}>}
 */
export async function inlineReplay(data, format) {
  const bytes = toBytes(data);
  if (bytes.length > MAX_INLINE_REPLAY_BYTES) throw new CappyFailure(Code.REPLAY_INVALID, `the replay is ${bytes.length} bytes, more than the ${MAX_INLINE_REPLAY_BYTES} an inline replay may hold`);
  const r = { kind: 'inline', encoding: 'base64', data: toBase64(bytes), sha256: await sha256Hex(bytes) };
  if (format) r.format = format;
  return r;
}

/**
 * The data of a replay payload, checked: shape, the 1 MiB limit and its
 * SHA-256. A file replay is read in Node.js; browsers cannot. Throws a
 * CappyFailure with REPLAY_INVALID (or REPLAY_UNSUPPORTED).
 * @returns {Promise<Uint8Array>}
 */
export async function readReplay(r) {
  const invalid = (why) => new CappyFailure(Code.REPLAY_INVALID, why);
  if (!isObject(r)) throw invalid('the replay must be an object');
  if (typeof r.sha256 !== 'string' || !/^[0-9a-fA-F]{64}$/.test(r.sha256)) throw invalid('replay.sha256 must be 64 hex digits');
  let bytes;
  if (r.kind === 'inline') {
    if (r.encoding !== 'base64' || typeof r.data !== 'string') throw invalid('an inline replay needs encoding "base64" and data');
    if (r.data.length > Math.ceil(MAX_INLINE_REPLAY_BYTES / 3) * 4 + 4) throw invalid(`an inline replay holds at most ${MAX_INLINE_REPLAY_BYTES} bytes`);
    try { bytes = fromBase64(r.data); } catch { throw invalid('replay.data is not base64'); }
    if (bytes.length > MAX_INLINE_REPLAY_BYTES) throw invalid(`an inline replay holds at most ${MAX_INLINE_REPLAY_BYTES} bytes`);
  } else if (r.kind === 'file') {
    if (typeof process === 'undefined' || !process.versions?.node) throw new CappyFailure(Code.REPLAY_UNSUPPORTED, 'a browser cannot read a file replay');
    const { readFile } = await import('node:fs/promises');
    try { bytes = new Uint8Array(await readFile(r.path)); } catch (e) { throw invalid(`replay file: ${e.message}`); }
    if (bytes.length !== r.bytes) throw invalid(`replay file ${r.path} is not ${r.bytes} bytes`);
  } else {
    throw invalid(`replay.kind must be "inline" or "file", got ${JSON.stringify(r.kind)}`);
  }
  const got = await sha256Hex(bytes);
  if (got !== r.sha256.toLowerCase()) throw invalid(`replay SHA-256 is ${got}, expected ${r.sha256}`);
  return bytes;
}

/** The failed code and message of something a game threw. */
function failureOf(err, fallback = Code.ADAPTER_ERROR) {
  if (err && typeof err === 'object' && typeof err.code === 'string' && CODE_RE.test(err.code)) {
    return { code: err.code, message: String(err.message || err.code) };
  }
  const message = err instanceof Error ? `${err.name}: ${err.message}` : `thrown: ${String(err)}`;
  return { code: fallback, message };
}

/** Resolves in a new task (without setTimeout's clamping where the platform allows). */
function yieldTask() {
  if (typeof setImmediate === 'function') return new Promise((r) => setImmediate(r));
  if (typeof MessageChannel === 'function') {
    return new Promise((r) => {
      const c = new MessageChannel();
      c.port1.onmessage = () => { c.port1.close(); r(); };
      c.port2.postMessage(0);
    });
  }
  return new Promise((r) => setTimeout(r, 0));
}

/** The seed a record_start or prepare_replay carries, or undefined. */
const seedOf = (m) => (Number.isSafeInteger(m.seed) && m.seed >= 0 ? m.seed : undefined);

const cap = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

/**
 * One operation the controller asked for: the game emits its events and
 * reads its parameters and presentation through it.
 */
export class Op {
  #session;
  #lastT = 0;
  #abort = new AbortController();
  #stop;
  #stopped = false;
  #finished = false;
  #done;

  constructor(session, id, kind) {
    this.#session = session;
    /** @readonly The controller's operation id. */
    this.id = id;
    /** @readonly 'scenario' | 'recording' | 'replay' */
    this.kind = kind;
    /** The scenario id (scenarios only). */
    this.scenario = undefined;
    /** Checked parameters with defaults filled in (scenarios only). */
    this.params = {};
    /** The presentation as the controller sent it. */
    this.presentation = {};
    /** The replay's checked data (replays only). */
    this.replay = undefined;
    /** The replay payload as sent (replays only): kind, format, sha256. */
    this.replayInfo = undefined;
    /** The frames request ({fps, maxWidth, formats}) or undefined. */
    this.framesRequest = undefined;
    /**
     * The seed of the game's randomness (recordings and replays), when the
     * game advertises capability "seed": seed everything random with it.
     * @type {number | undefined}
     */
    this.seed = undefined;
    /**
     * 'agent' when the agent holds the controller (a recording started with
     * control "agent"): the simulation runs only in the agent's steps, by
     * advance(), and the game ignores its own player's and autopilot's input.
     * @type {'agent' | undefined}
     */
    this.control = undefined;
    /**
     * The actions the agent holds (agent control), by name: a button's
     * true/false, an axis's value, an axis2d's {x, y}, a pointer's {x, y,
     * button ('left', 'middle', 'right'), pressed} in the pixels of the game's canvas (null before the
     * first), a text's text. A step changes what it names; the rest stays.
     * @type {Record<string, unknown>}
     */
    this.input = {};
    /** Simulation ms run through advance() since the operation started (agent control). */
    this.simT = 0;
    this.launched = false;
    this.cancelled = false;
    this.startedAt = 0;
    /** @type {unknown} what summary() set */
    this.summaryValue = undefined;
    /** @readonly Resolves when the controller asks the operation to stop (stop), or on cancel or disconnect. */
    this.stopped = new Promise((resolve) => { this.#stop = resolve; });
    /** @readonly Resolves when the operation is over. */
    this.done = new Promise((resolve) => { this.#done = resolve; });
  }

  /** Aborted on cancel and when the connection is lost (reason says which). */
  get signal() { return this.#abort.signal; }
  /** timeScale of the presentation (1 when absent). */
  get timeScale() { return typeof this.presentation.timeScale === 'number' ? this.presentation.timeScale : 1; }
  /** camera of the presentation (undefined when absent). */
  get camera() { return this.presentation.camera; }
  /** Whether stop (or cancel) was asked. */
  get isStopped() { return this.#stopped; }
  /** Whether the operation no longer takes events (cancelled, lost, or over). */
  get closed() { return this.#finished || this.#abort.signal.aborted; }

  /**
   * Presented milliseconds since the operation started: the game's
   * hooks.now(op) when it has one (its own presented clock, e.g.
   * simT / timeScale), else performance.now() since started (under agent
   * control: op.simT / timeScale). Frames and events without a t are
   * stamped with it.
   */
  now() {
    if (!this.startedAt) return 0;
    const h = this.#session.nowHook;
    const v = h ? h(this) : undefined;
    if (typeof v === 'number' && Number.isFinite(v)) return Math.max(0, v);
    // Agent control: the clock is the simulation's, which runs only in steps.
    return this.control === 'agent' ? this.simT / this.timeScale : Math.max(0, clock() - this.startedAt);
  }

  /**
   * Sends one event. t is presented ms since the operation started: by
   * default now(); opts.simT (simulation ms) is presented as
   * simT / timeScale; opts.t sets it. It never goes back. payload is a
   * plain object or undefined. Returns false, sending nothing, once the
   * operation is cancelled, lost or over; throws a TypeError for an
   * invalid event.
   * @param {string} event
   * @param {Record<string, unknown>} [payload]
   * @param {{t?: number, simT?: number, durationMs?: number}} [opts]
   */
  emit(event, payload, opts = {}) {
    const why = checkText(event, 256, true);
    if (why) throw new TypeError(`cappy: event name ${why}`);
    let t = opts.t;
    if (t === undefined && opts.simT !== undefined) t = opts.simT / this.timeScale;
    const explicit = t !== undefined;
    if (!explicit) t = Math.max(this.now(), this.#lastT);
    if (typeof t !== 'number' || !Number.isFinite(t) || t < 0) throw new TypeError(`cappy: event ${event}: t must be a finite, non-negative number, got ${t}`);
    if (t < this.#lastT) throw new TypeError(`cappy: event ${event}: t ${t} goes back from ${this.#lastT}`);
    const m = { type: 'event', op: this.id, t, event };
    if (opts.durationMs !== undefined) {
      if (typeof opts.durationMs !== 'number' || !Number.isFinite(opts.durationMs) || opts.durationMs < 0) throw new TypeError(`cappy: event ${event}: durationMs must be a finite, non-negative number`);
      m.durationMs = opts.durationMs;
    }
    if (payload !== undefined && payload !== null) {
      if (!isObject(payload)) throw new TypeError(`cappy: event ${event}: payload must be a plain object`);
      m.payload = payload;
    }
    if (this.closed) return false;
    const text = JSON.stringify(m);
    if (text.length > MAX_MESSAGE_BYTES / 4 && byteLength(text) > MAX_MESSAGE_BYTES) throw new TypeError(`cappy: event ${event} is more than the ${MAX_MESSAGE_BYTES} bytes a message may have`);
    if (!this.#session.sendText(text)) return false;
    this.#lastT = t;
    return true;
  }

  /** Sets the summary sent with completed: a plain object of at most 64 KiB of JSON. */
  summary(value) {
    if (!isObject(value)) throw new TypeError('cappy: summary must be a plain object');
    if (byteLength(JSON.stringify(value)) > MAX_SUMMARY_BYTES) throw new TypeError(`cappy: summary is more than the ${MAX_SUMMARY_BYTES} bytes the controller keeps`);
    this.summaryValue = value;
  }

  /**
   * Resolves once the connection's send buffer holds at most maxBytes
   * (default 256 KiB): a loop emitting many events awaits it now and then,
   * so they do not pile up unsent (ahead of the pongs that keep the
   * adapter alive).
   */
  drain(maxBytes = 256 << 10) { return this.#session.drain(maxBytes); }

  /**
   * Asks for an extra frame now (frames only), named by reason (e.g. an
   * event), within an allowance of its own (fps a second of presented
   * time, one at a time). opts.always: not held back by that allowance,
   * for a picture the game must show, e.g. a replay of an agent's play
   * showing each step's paused tick as its recording did (the controller
   * still drops frames beyond twice the asked rate).
   * @param {string} [reason]
   * @param {{always?: boolean}} [opts]
   */
  frame(reason, opts) { this.#session.extraFrame(this, reason, opts?.always === true); }

  /**
   * Whether the next drawn() would read a frame at presented time t
   * (default now()): frames were asked and one is due at t, or an extra
   * one was asked with frame(). A game whose simulation steps in fixed
   * ticks asks it before each step and, when it is true, stops stepping
   * until the frame is drawn: the frame then shows exactly the tick of t,
   * so a recording and its replay at another timeScale show the same tick
   * at the same simulation time, whatever each one's frame rate.
   */
  frameDue(t) { return this.#session.frameDue(this, t === undefined ? this.now() : t); }

  /**
   * Agent control: asks to run ms of simulation (one tick) now. True when
   * the agent's current step has that much simulation time left (it is
   * counted in simT): run the tick. False when the simulation must wait:
   * for the agent's next step, or for a due frame to be drawn first
   * (frameDue). A fixed-tick game calls it before each tick and stops
   * ticking at false: `while (op.advance(TICK_MS)) sim.step(input())`.
   * What a step leaves unused (ms not a multiple of the tick) carries over
   * to the next. Outside agent control it returns true: the game's own
   * clock decides.
   * @param {number} ms
   */
  advance(ms) {
    if (this.control !== 'agent') return true;
    if (typeof ms !== 'number' || !Number.isFinite(ms) || !(ms > 0)) throw new TypeError(`cappy: advance(ms): ms must be a positive number, got ${ms}`);
    if (this.closed) return false;
    const s = this.#step;
    this.#session.captureDue(this); // a capture function's due frame, of the state before this tick
    if (!s || s.done || this.frameDue()) return false;
    if (s.left + 1e-9 >= ms) {
      s.left -= ms;
      this.simT += ms;
      return true;
    }
    // The step has run its time: the agent looks at this state.
    this.#carry = Math.max(0, s.left);
    this.#session.stepDone(this, s);
    return false;
  }

  /** Whether the simulation waits for the agent (agent control, no step running). */
  get paused() { return this.control === 'agent' && (!this.#step || this.#step.done); }

  #step = null;
  #carry = 0;
  /** @internal The running step, or null. */ get _step() { return this.#step; }
  /** @internal Starts a step of ms; returns it. */
  _beginStep(id, ms) {
    this.#step = { id, ms, left: this.#carry + ms, done: false };
    this.#carry = 0;
    return this.#step;
  }
  /** @internal The step is answered: the next one may come. */
  _endStep(s) { if (this.#step === s) this.#step = null; }

  /** @internal */ _stop() { if (!this.#stopped) { this.#stopped = true; this.#stop(); } }
  /** @internal */ _abort(reason) { this.#abort.abort(reason); this._stop(); }
  /** @internal */ _finish() { if (!this.#finished) { this.#finished = true; this.#done(); } }
  /** @internal */ get _finished() { return this.#finished; }
}

function defaultWebSocket() {
  if (typeof globalThis.WebSocket === 'function') return Promise.resolve(globalThis.WebSocket);
  return import('ws').then((m) => m.WebSocket || m.default, () => {
    throw new Error('cappy: no WebSocket: use Node.js 22+ (or 20 with --experimental-websocket), install the "ws" package, or pass options.WebSocket');
  });
}

/** Endpoint and token: options, else the page's #cappy-endpoint / #cappy-token, else CAPPY_ENDPOINT / CAPPY_SESSION_TOKEN. */
function locate(o) {
  let endpoint = o.endpoint;
  let token = o.token;
  const hash = globalThis.location?.hash;
  if ((!endpoint || !token) && hash) {
    const q = new URLSearchParams(hash.slice(1));
    endpoint ||= q.get('cappy-endpoint') || undefined;
    token ||= q.get('cappy-token') || undefined;
  }
  const env = typeof process !== 'undefined' ? process.env : undefined;
  if (env) {
    endpoint ||= env.CAPPY_ENDPOINT;
    token ||= env.CAPPY_SESSION_TOKEN;
  }
  return { endpoint, token };
}

const quietLogger = { debug() {}, info() {}, warn: (...a) => console.warn(...a), error: (...a) => console.error(...a) };

/**
 * The adapter: register scenarios and hooks, then connect().
 */
export class Cappy {
  #o;
  #scenarios = new Map();
  #ws = null;
  #welcomed = false;
  #closing = false;
  #queue = [];
  #pumping = false;
  #cur = null;
  #log;
  #frameSource = null;
  #frames = null; // per-op frame state
  /** @type {Map<string, {name: string, kind: string, description: string}> | null} */
  #actions = null;
  #stateSource = undefined;
  #closedResolve;
  #connectWaiters = null;
  #retryMs = 250;
  #retryTimer = null;

  /**
   * @param {import('./cappy.js').CappyOptions} options
   */
  constructor(options) {
    if (!options || !isObject(options.game) || checkID(options.game.id)) throw new TypeError('cappy: options.game.id is required (an identifier)');
    this.#o = { ...options, hooks: { ...(options.hooks || {}) } };
    this.#log = options.logger || quietLogger;
    /** Resolves when close() was called and the socket is closed. */
    this.closed = new Promise((r) => { this.#closedResolve = r; });
    for (const s of options.scenarios || []) this.scenario(s.id, s, s.run);
    if (typeof globalThis.addEventListener === 'function' && options.catchGlobalErrors !== false && typeof window !== 'undefined') {
      // An error in the game's own loop during an operation fails it,
      // instead of leaving it hanging.
      globalThis.addEventListener('error', (e) => this.#gameError(e.error ?? e.message));
      globalThis.addEventListener('unhandledrejection', (e) => this.#gameError(e.reason));
    }
  }

  /**
   * Registers (or replaces) a scenario. run(op, params, presentation) may
   * be async; it resolving sends completed, throwing sends failed.
   * @param {string} id
   * @param {{name?: string, description?: string, parameters?: Record<string, object>, requiredCapabilities?: string[]}} spec
   * @param {(op: Op, params: Record<string, unknown>, presentation: object) => unknown} run
   */
  scenario(id, spec, run) {
    if (typeof run !== 'function') throw new TypeError(`cappy: scenario ${JSON.stringify(id)}: run must be a function`);
    const s = { id, name: spec?.name, description: spec?.description, parameters: spec?.parameters, requiredCapabilities: spec?.requiredCapabilities };
    checkScenario(s);
    this.#scenarios.set(id, { ...s, run });
    if (this.#welcomed) this.#sendScenarios();
    return this;
  }

  /** Sets hooks: timeScale(scale, op), camera(name, op), record(op), replay(op, data), validate(op), now(op), input(applied, op). */
  hooks(h) { Object.assign(this.#o.hooks, h); return this; }

  /**
   * Frames from a canvas (2D or WebGL), or from capture({maxWidth, formats})
   * returning {mime, width, height, data: Uint8Array}. For WebGL, call
   * drawn() right after each frame is drawn (e.g. Phaser's postrender).
   */
  frames(source) {
    if (!source) throw new TypeError('cappy: frames needs a canvas or {capture}');
    this.#frameSource = typeof source.capture === 'function' ? { capture: source.capture } : { canvas: source };
    return this;
  }

  /**
   * Declares the actions an agent can take (capability input): [{name,
   * kind, description}], kind one of button, axis, axis2d, pointer, text
   * (ActionKind). Call it before connect() for the capability to be
   * advertised; call it again whenever the actions change (they are sent
   * again). An agent-controlled recording (op.control === 'agent') runs
   * in the agent's steps: the game reads op.input and ticks while
   * op.advance(tickMs) is true.
   * @param {Array<{name: string, kind: string, description: string}>} list
   */
  actions(list) {
    const checked = checkActions(list);
    const had = this.#actions !== null;
    this.#actions = new Map(checked.map((a) => [a.name, a]));
    if (this.#welcomed) {
      if (!had) this.#log.warn('cappy: actions() after connect: the capability "input" is advertised from the next connection');
      this.#sendActions();
    }
    return this;
  }

  /**
   * Registers the state the controller may inspect (capability inspect):
   * an object, or a function returning one (called for each query). A
   * query is a path into it (player.hp, enemies.0.x); the empty query
   * lists its top-level keys. Values are read when asked, as JSON, at
   * most MAX_INSPECT_BYTES. Call it before connect().
   * @param {object | (() => unknown)} source
   */
  state(source) {
    if (source === null || (typeof source !== 'object' && typeof source !== 'function')) throw new TypeError('cappy: state needs an object or a function returning one');
    this.#stateSource = source;
    return this;
  }

  /** @internal The game's presented clock, if it gave one. */
  get nowHook() { return this.#o.hooks.now; }

  /** Tells the library a frame was just drawn: a due frame is read now, while the drawing buffer holds it. */
  drawn() { this.#frames?.drawn(); }

  /** The capabilities sent in hello. */
  get capabilities() {
    const h = this.#o.hooks;
    const caps = new Set([Capability.SCENARIOS]);
    if (h.record) caps.add(Capability.FREEFORM_RECORDING);
    if (h.replay) caps.add(Capability.REPLAY);
    if (h.timeScale) caps.add(Capability.TIME_SCALE);
    if (h.camera || this.#o.cameras) caps.add(Capability.ALTERNATE_CAMERAS);
    if (this.#frameSource) caps.add(Capability.FRAMES);
    if (this.#actions) caps.add(Capability.INPUT);
    if (this.#stateSource !== undefined) caps.add(Capability.INSPECT);
    for (const c of this.#o.capabilities || []) caps.add(c);
    return [...caps];
  }

  /** Whether the controller welcomed this adapter and the socket is open. */
  get connected() { return this.#welcomed; }

  /**
   * Connects, sends hello and the registry. Resolves once welcomed;
   * rejects with a RejectError when refused, or an Error when the
   * controller cannot be reached or does not answer within 10 s.
   */
  connect() {
    if (this.#connectWaiters) return this.#connectWaiters.promise;
    let resolve, reject;
    const promise = new Promise((a, b) => { resolve = a; reject = b; });
    this.#connectWaiters = { promise, resolve, reject };
    this.#closing = false;
    this.#rejected = false;
    this.#open().catch((e) => this.#connectFailed(e));
    return promise;
  }

  /** Closes the connection (the current operation is abandoned) and stops reconnecting. */
  close() {
    this.#closing = true;
    clearTimeout(this.#retryTimer);
    if (this.#ws && this.#ws.readyState <= 1) this.#ws.close(1000, 'adapter stopping');
    else this.#closedResolve();
    return this.closed;
  }

  async #open() {
    const { endpoint, token } = locate(this.#o);
    if (!endpoint) throw new Error('cappy: no controller endpoint (the page URL\'s #cappy-endpoint, CAPPY_ENDPOINT, or options.endpoint)');
    if (!token) throw new Error('cappy: no session token (#cappy-token, CAPPY_SESSION_TOKEN, or options.token)');
    if (!/^wss?:\/\//.test(endpoint)) throw new Error(`cappy: endpoint ${endpoint} is not a ws:// URL`);
    const WS = this.#o.WebSocket || (await defaultWebSocket());
    const ws = new WS(endpoint);
    this.#ws = ws;
    let helloTimer;
    // Read from the moment the socket opens: a request right behind the
    // welcome is queued, never dropped.
    ws.onmessage = (e) => this.#receive(e.data);
    ws.onopen = () => {
      helloTimer = setTimeout(() => {
        if (!this.#welcomed && this.#ws === ws) {
          this.#connectFailed(new Error('no welcome from the controller within 10 s'));
          ws.close(1000, 'no welcome');
        }
      }, 10000);
      const hello = {
        type: 'hello', protocol: { min: PROTOCOL_VERSION, max: PROTOCOL_VERSION }, token,
        adapter: this.#o.adapter || { name: 'crosscode-js-adapter', version: VERSION },
        game: this.#o.game, capabilities: this.capabilities,
      };
      if (this.#o.build) hello.build = this.#o.build;
      this.sendText(JSON.stringify(hello));
    };
    ws.onerror = () => {}; // onclose follows with the reason
    ws.onclose = (e) => {
      clearTimeout(helloTimer);
      if (this.#ws === ws) this.#lost(e.code, e.reason);
    };
  }

  #connectFailed(err) {
    const w = this.#connectWaiters;
    if (!w) return;
    this.#connectWaiters = null;
    w.reject(err);
  }

  #lost(code, reason) {
    this.#welcomed = false;
    this.#ws = null;
    this.#queue.length = 0;
    const cur = this.#cur;
    if (cur) {
      cur._abort('disconnected');
      if (!cur.launched) { cur._finish(); this.#cur = null; }
    }
    this.#frames?.stop();
    this.#frames = null;
    this.#log.debug?.(`cappy: connection closed (${code} ${reason || ''})`);
    if (this.#connectWaiters) this.#connectFailed(new Error(`cappy: connection closed before welcome (${code} ${reason || ''})`.trim()));
    const reconnect = this.#o.reconnect ?? typeof window !== 'undefined';
    // In a browser the page stays: it connects again, also when its first
    // attempt failed (a controller slow to answer), but not once refused.
    if (this.#closing || !reconnect || this.#rejected) {
      if (this.#closing) this.#closedResolve();
      return;
    }
    this.#retryTimer = setTimeout(() => {
      this.#retryMs = Math.min(this.#retryMs * 2, 5000);
      this.connect().then(() => { this.#retryMs = 250; }, (e) => this.#log.warn(`cappy: reconnect: ${e.message}`));
    }, this.#retryMs);
  }

  #rejected = false;

  /** @internal Sends one text frame; false when the socket is not open. */
  sendText(text) {
    const ws = this.#ws;
    if (!ws || ws.readyState !== 1) return false;
    ws.send(text);
    return true;
  }

  #send(m) { return this.sendText(JSON.stringify(m)); }

  /** @internal Waits until the socket's send buffer is at most maxBytes (or the socket is gone). */
  async drain(maxBytes) {
    await yieldTask(); // a task boundary: the messages that arrived meanwhile (pings) are handled
    for (let wait = 1; ; wait = Math.min(wait * 2, 50)) {
      const ws = this.#ws;
      if (!ws || ws.readyState !== 1 || !(ws.bufferedAmount > maxBytes)) return;
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  #receive(data) {
    if (typeof data !== 'string') { this.#log.warn('cappy: ignoring a binary frame'); return; }
    let m;
    try { m = JSON.parse(data); } catch { this.#log.warn('cappy: ignoring a message that is not JSON'); return; }
    if (!isObject(m) || typeof m.type !== 'string') { this.#log.warn('cappy: ignoring a message without type'); return; }
    if (m.type === 'ping') { this.#send({ type: 'pong', nonce: String(m.nonce) }); return; }
    this.#queue.push(m);
    if (!this.#pumping) this.#pump();
  }

  /** Handles queued messages one at a time, in order (some checks await). */
  async #pump() {
    this.#pumping = true;
    try {
      while (this.#queue.length) {
        const m = this.#queue.shift();
        try { await this.#handle(m); } catch (e) { this.#log.error('cappy: handling', m.type, e); }
      }
    } finally {
      this.#pumping = false;
    }
  }

  async #handle(m) {
    if (!this.#welcomed) {
      switch (m.type) {
        case 'welcome':
          if (m.protocol !== PROTOCOL_VERSION) {
            this.#connectFailed(new Error(`cappy: the controller welcomed protocol ${m.protocol}; this adapter speaks ${PROTOCOL_VERSION}`));
            this.#ws?.close(1000, 'protocol');
            return;
          }
          this.#welcomed = true;
          this.#sendScenarios();
          if (this.#actions && this.#has(Capability.INPUT)) this.#sendActions();
          this.#log.info?.(`cappy: welcomed by ${m.controller?.name} ${m.controller?.version ?? ''}`);
          if (this.#connectWaiters) { const w = this.#connectWaiters; this.#connectWaiters = null; w.resolve(); }
          return;
        case 'reject':
          this.#rejected = true;
          this.#connectFailed(new RejectError(String(m.code), String(m.message)));
          return;
        case 'error':
          this.#log.warn(`cappy: controller error ${m.code}: ${m.message}`);
          return;
        default:
          this.#log.warn(`cappy: ignoring ${m.type} before welcome`);
          return;
      }
    }
    switch (m.type) {
      case 'list_scenarios': this.#sendScenarios(); return;
      case 'prepare_scenario': return this.#prepareScenario(m);
      case 'prepare_replay': return this.#prepareReplay(m);
      case 'record_start': return this.#recordStart(m);
      case 'start': return this.#start(m.op);
      case 'stop': if (this.#cur?.id === m.op) this.#cur._stop(); return;
      case 'cancel': this.#cancel(m.op); return;
      case 'step': this.#stepMsg(m); return;
      case 'inspect': this.#inspect(m); return;
      case 'error':
        this.#log.warn(`cappy: controller error ${m.code}: ${m.message}${m.op ? ` (op ${m.op})` : ''}`);
        if (m.op) this.#cancel(m.op); // the controller failed it: stop working on it
        return;
      case 'reject':
        this.#rejected = true;
        this.#ws?.close(1000, 'rejected');
        return;
      default:
        this.#log.warn(`cappy: ignoring a ${m.type} message`);
    }
  }

  #sendScenarios() {
    const list = [...this.#scenarios.values()].map(({ run, ...s }) => JSON.parse(JSON.stringify(s)));
    this.#send({ type: 'scenarios', scenarios: list });
  }

  #sendActions() { this.#send({ type: 'actions', actions: [...this.#actions.values()] }); }

  #failed(op, code, message) { this.#send({ type: 'failed', op, code, message: cap(String(message), 4096) }); }

  #has = (c) => this.capabilities.includes(c);

  /** Whether a new operation may begin; answers failed OPERATION_BUSY otherwise. */
  async #admit(id) {
    if (typeof id !== 'string' || id === '') { this.#log.warn('cappy: ignoring an operation request without op'); return false; }
    const cur = this.#cur;
    if (cur && cur.cancelled && !cur._finished) {
      await Promise.race([cur.done, new Promise((r) => setTimeout(r, TEARDOWN_WAIT_MS))]);
    }
    if (this.#cur && this.#cur._finished) this.#cur = null;
    if (this.#cur) { this.#failed(id, Code.OPERATION_BUSY, `operation ${this.#cur.id} is still active`); return false; }
    return true;
  }

  /** The operation's frames request, checked; a CappyFailure when unusable. */
  #framesOf(m) {
    const f = m.frames;
    if (f === undefined || f === null) return undefined;
    if (!this.#frameSource) throw new CappyFailure(Code.CAPABILITY_MISSING, 'this game has no frame source');
    if (!isObject(f) || typeof f.fps !== 'number' || !(f.fps > 0)) throw new CappyFailure(Code.INVALID_MESSAGE, 'frames.fps must be a positive number');
    const formats = Array.isArray(f.formats) && f.formats.length ? f.formats : ['image/jpeg', 'image/png'];
    return { fps: Math.min(f.fps, 30), maxWidth: typeof f.maxWidth === 'number' && f.maxWidth > 0 ? f.maxWidth : 640, formats };
  }

  #validate(op) {
    const cams = this.#o.cameras;
    if (op.camera !== undefined && Array.isArray(cams) && !cams.includes(op.camera)) {
      throw new CappyFailure(Code.UNKNOWN_CAMERA, `no camera ${JSON.stringify(op.camera)}; the game has: ${cams.join(', ')}`);
    }
    return this.#o.hooks.validate?.(op);
  }

  /**
   * Prepares an operation: fill checks the request and fills the op in
   * (throwing to refuse it); then ready, or failed with the thrown code
   * (fallback for an error without one).
   */
  async #prepare(m, kind, fallback, fill) {
    if (!(await this.#admit(m.op))) return;
    const op = new Op(this, m.op, kind);
    try {
      await fill(op);
      checkPresentation(m.presentation, this.#has);
      op.presentation = m.presentation || {};
      op.framesRequest = this.#framesOf(m);
      op.seed = seedOf(m);
      await this.#validate(op);
    } catch (e) {
      const f = failureOf(e, fallback);
      this.#failed(m.op, f.code, f.message);
      return;
    }
    this.#cur = op;
    this.#send({ type: 'ready', op: op.id });
  }

  #prepareScenario(m) {
    return this.#prepare(m, 'scenario', Code.INVALID_PARAMETERS, (op) => {
      const s = this.#scenarios.get(m.scenario);
      if (!s) throw new CappyFailure(Code.SCENARIO_NOT_FOUND, `no scenario ${JSON.stringify(m.scenario)}`);
      op.scenario = s.id;
      op.params = resolveParameters(s, m.parameters);
    });
  }

  #prepareReplay(m) {
    return this.#prepare(m, 'replay', Code.REPLAY_INVALID, async (op) => {
      if (!this.#o.hooks.replay) throw new CappyFailure(Code.REPLAY_UNSUPPORTED, 'this game does not play replays');
      checkPresentation(m.presentation, this.#has); // before the replay is read
      op.replay = await readReplay(m.replay);
      op.replayInfo = { kind: m.replay.kind, format: m.replay.format, sha256: m.replay.sha256 };
    });
  }

  async #recordStart(m) {
    if (!(await this.#admit(m.op))) return;
    if (!this.#o.hooks.record) { this.#failed(m.op, Code.CAPABILITY_MISSING, 'this game does not support freeform recording'); return; }
    const op = new Op(this, m.op, 'recording');
    op.seed = seedOf(m);
    try {
      if (m.control !== undefined && m.control !== null) {
        if (m.control !== 'agent') throw new CappyFailure(Code.INVALID_MESSAGE, `record_start.control must be "agent", got ${JSON.stringify(m.control)}`);
        if (!this.#actions || !this.#has(Capability.INPUT)) throw new CappyFailure(Code.CAPABILITY_MISSING, 'agent control needs the game\'s actions (cappy.actions), advertised as capability "input"');
        op.control = 'agent';
        for (const a of this.#actions.values()) op.input[a.name] = initialValue(a.kind);
      }
      op.framesRequest = this.#framesOf(m);
    } catch (e) {
      const f = failureOf(e);
      this.#failed(m.op, f.code, f.message);
      return;
    }
    this.#cur = op;
    this.#launch(op);
  }

  #start(id) {
    const cur = this.#cur;
    if (!id) { this.#log.warn('cappy: ignoring start without op'); return; }
    if (!cur || cur.id !== id) { this.#failed(id, Code.OUT_OF_STATE, `operation ${id} is not prepared`); return; }
    if (cur.launched) { this.#log.warn(`cappy: ignoring a repeated start of ${id}`); return; }
    this.#launch(cur);
  }

  #cancel(id) {
    const cur = this.#cur;
    if (!cur || cur.id !== id) return;
    cur.cancelled = true;
    cur._abort('cancelled');
    if (!cur.launched) { cur._finish(); this.#cur = null; }
  }

  /** Sends started and runs the operation. */
  #launch(op) {
    op.launched = true;
    const h = this.#o.hooks;
    let run;
    try {
      // The presentation is applied before started: started means the
      // operation's clock runs as shown.
      if (h.timeScale) h.timeScale(op.timeScale, op);
      if (h.camera) h.camera(op.camera, op);
      if (op.kind === 'scenario') {
        const s = this.#scenarios.get(op.scenario);
        run = () => s.run(op, op.params, op.presentation);
      } else if (op.kind === 'replay') {
        run = () => h.replay(op, op.replay, op.replayInfo);
      } else {
        run = () => h.record(op);
      }
    } catch (e) {
      this.#end(op, { error: e });
      return;
    }
    op.startedAt = clock();
    if (!this.#send({ type: 'started', op: op.id })) { op._abort('disconnected'); this.#end(op, {}); return; }
    if (op.framesRequest) this.#frames = new FrameStream(this, op, this.#frameSource, this.#log);
    Promise.resolve()
      .then(run)
      .then((value) => this.#end(op, { value }), (error) => this.#end(op, { error }));
  }

  /** An error in the game's own code (a global error event) fails the running operation. */
  #gameError(err) {
    const op = this.#cur;
    if (!op || !op.launched || op.closed) return;
    this.#log.error('cappy: an error in the game during operation', op.id, err);
    op._stop();
    this.#end(op, { error: err });
  }

  async #end(op, { value, error }) {
    if (op._finished) return;
    const frames = this.#frames?.op === op ? this.#frames : null;
    let out;
    if (error === undefined && op.kind === 'recording') {
      try {
        if (value === undefined || value === null) throw new CappyFailure(Code.REPLAY_INVALID, 'the recording produced no replay');
        const isPayload = isObject(value) && !(value instanceof Uint8Array) && !ArrayBuffer.isView(value) && 'data' in value;
        out = { replay: isPayload ? await inlineReplay(value.data, value.format) : await inlineReplay(value) };
      } catch (e) {
        error = e;
      }
    }
    if (frames) { frames.stop(); await frames.flush(); this.#frames = null; }
    if (op._finished) return;
    op._finish();
    if (this.#cur === op) this.#cur = null;
    if (op.signal.aborted) { this.#log.debug?.(`cappy: operation ${op.id} ended after ${op.signal.reason}`); return; }
    if (error !== undefined) {
      const f = failureOf(error);
      if (f.code === Code.ADAPTER_ERROR) this.#log.error(`cappy: operation ${op.id} failed:`, error);
      this.#failed(op.id, f.code, f.message);
      return;
    }
    const m = { type: 'completed', op: op.id };
    if (out?.replay) m.replay = out.replay;
    if (op.summaryValue !== undefined) m.summary = op.summaryValue;
    this.#send(m);
  }

  /** The frames' size and their scale from the game's canvas, for pointer actions; undefined when unknown. */
  #frameGeometry(op) {
    const src = this.#frameSource;
    const c = src?.canvas;
    if (c && c.width > 0 && c.height > 0) {
      const scale = Math.min(1, (op.framesRequest?.maxWidth ?? 640) / c.width);
      return { width: Math.max(1, Math.floor(c.width * scale)), height: Math.max(1, Math.round(c.height * scale)), scale };
    }
    const last = this.#frames?.op === op ? this.#frames.lastSize : null;
    return last ? { width: last.width, height: last.height, scale: 1 } : undefined;
  }

  /** A step: checked whole (refused, nothing applied, when anything is wrong), then its actions held and its time run by the game's advance(). */
  #stepMsg(m) {
    const refuse = (code, message) => this.#send({ type: 'step_refused', op: m.op, id: m.id, code, message: cap(String(message), 4096) });
    const op = this.#cur;
    if (!op || op.id !== m.op || !op.launched || op.closed) { refuse(Code.OUT_OF_STATE, `operation ${m.op} is not running here`); return; }
    if (op.control !== 'agent') { refuse(Code.OUT_OF_STATE, `operation ${op.id} is not under agent control`); return; }
    if (op.isStopped) { refuse(Code.OUT_OF_STATE, `operation ${op.id} is stopping`); return; }
    if (op._step) { refuse(Code.OPERATION_BUSY, `step ${op._step.id} is still running`); return; }
    if (typeof m.ms !== 'number' || !Number.isFinite(m.ms) || m.ms < 0 || m.ms > MAX_STEP_MS) { refuse(Code.INVALID_INPUT, `ms must be a number from 0 to ${MAX_STEP_MS}, got ${JSON.stringify(m.ms)}`); return; }
    let applied;
    try {
      applied = checkStep(m.actions ?? [], this.#actions, op.input, this.#frameGeometry(op));
    } catch (e) {
      refuse(Code.INVALID_INPUT, e.message);
      return;
    }
    for (const [name, v] of applied) op.input[name] = v;
    const s = op._beginStep(m.id, m.ms);
    try {
      this.#o.hooks.input?.(applied.map(([name, value]) => ({ name, value })), op);
    } catch (e) {
      op._endStep(s);
      op._stop();
      this.#end(op, { error: e });
      return;
    }
    if (m.ms === 0) this.stepDone(op, s); // apply and look
  }

  /** @internal The step's time has run: a frame of the paused state (when frames were asked), then stepped. */
  stepDone(op, s) {
    if (s.done) return;
    s.done = true;
    const answer = () => {
      op._endStep(s);
      if (op.closed || this.#cur !== op) return;
      this.#send({ type: 'stepped', op: op.id, id: s.id, t: op.now(), simT: op.simT });
    };
    const frames = this.#frames?.op === op ? this.#frames : null;
    if (frames && !frames.stopped) frames.stepFrame(answer);
    else answer();
  }

  /** @internal Agent control with a capture function: a due frame is read before the next tick. */
  captureDue(op) { if (this.#frames?.op === op) this.#frames.captureDue(); }

  /** inspect: a path into the game's state, answered whatever else is running. */
  #inspect(m) {
    const reply = (body) => this.sendText(`{"type":"inspect_result","id":${JSON.stringify(m.id ?? null)},${body}}`);
    const fail = (code, message) => reply(`"error":${JSON.stringify({ code, message: cap(String(message), 4096) })}`);
    if (this.#stateSource === undefined) { fail(Code.CAPABILITY_MISSING, 'this game registers no state to inspect (cappy.state)'); return; }
    const q = m.query ?? '';
    if (typeof q !== 'string' || byteLength(q) > 4096) { fail(Code.INVALID_QUERY, `the query must be a string of at most 4096 bytes: ${INSPECT_SYNTAX}`); return; }
    let text;
    try {
      const src = this.#stateSource;
      const root = typeof src === 'function' ? src() : src;
      let value;
      if (q.trim() === '') value = describeState(root);
      else {
        let path;
        try { path = parsePath(q.trim()); } catch (e) { throw new CappyFailure(Code.INVALID_QUERY, `${e.message}: ${INSPECT_SYNTAX}`); }
        value = resolvePath(root, path);
      }
      text = snapshotJSON(value, MAX_INSPECT_BYTES);
    } catch (e) {
      const f = failureOf(e);
      if (f.code === Code.ADAPTER_ERROR) this.#log.warn('cappy: inspect:', e);
      fail(f.code, f.message);
      return;
    }
    reply(`"value":${text}`);
  }

  /** @internal */
  extraFrame(op, reason, always) { if (this.#frames?.op === op) this.#frames.extra(reason, always); }

  /** @internal */
  frameDue(op, t) { return this.#frames?.op === op && this.#frames.due(t); }
}

/**
 * The frames of one operation: read at the asked rate (from drawn() for a
 * canvas, from a timer for a capture function), encoded off the main loop
 * where the platform allows, sent in order of their t.
 */
class FrameStream {
  constructor(session, op, source, log) {
    this.session = session;
    this.op = op;
    this.source = source;
    this.log = log;
    this.req = op.framesRequest;
    this.interval = 1000 / this.req.fps;
    this.next = 0; // presented ms the next frame is due
    this.lastSent = -Infinity;
    this.chain = Promise.resolve();
    this.inFlight = 0;
    this.dropped = 0;
    this.wantExtra = null;
    this.tokens = 1; // the extras' allowance: fps a second of presented time, one at a time
    this.tokensT = 0;
    this.timer = null;
    this.stopped = false;
    this.wantStep = null; // agent control: the answer waiting for a frame of the paused state
    this.wantAlways = false; // the extra asked must be read, whatever the encoder's backlog
    this.lastSize = null;
    // Under agent control the simulation runs in steps: a capture
    // function's frames are read at their due ticks (captureDue), not by a timer.
    if (source.capture && op.control !== 'agent') {
      const tick = () => { if (!this.stopped) { this.capture(); this.timer = setTimeout(tick, this.interval); } };
      this.timer = setTimeout(tick, 0);
    }
  }

  stop() { this.stopped = true; clearTimeout(this.timer); }

  flush() { return this.chain; }

  extra(reason, always = false) {
    const t = this.op.now();
    if (always) {
      if (this.source.capture) this.capture(reason, false, undefined, true);
      else { this.wantExtra = reason || 'extra'; this.wantAlways = true; }
      return;
    }
    // Extras have an allowance of their own beside the due frames (as in
    // the Go library), so the due frames and the extras together stay
    // within twice the asked rate. It does not depend on when the last due
    // frame was sent: a replay at another timeScale takes the extras of
    // its recording's events too.
    this.tokens = Math.min(1, this.tokens + Math.max(0, t - this.tokensT) * this.req.fps / 1000);
    this.tokensT = Math.max(this.tokensT, t);
    if (this.tokens < 1 - 1e-9) return;
    this.tokens -= 1;
    if (this.source.capture) this.capture(reason);
    else this.wantExtra = reason || 'extra';
  }

  /** Whether drawn() at presented t would read a frame (a due one, an asked extra, or a step's). */
  due(t) {
    if (this.stopped || this.op.closed || this.source.capture) return false;
    return this.wantStep !== null || this.wantExtra !== null || t >= this.next;
  }

  /** Agent control, a capture function: reads the frame due now, if one is. */
  captureDue() {
    if (!this.source.capture || this.stopped || this.op.closed) return;
    if (this.op.now() >= this.next) this.capture();
  }

  /** Agent control: a frame of the paused state with reason "step", then after() (which sends stepped). */
  stepFrame(after) {
    if (this.source.capture) this.capture('step', this.op.now() >= this.next, after);
    else this.wantStep = after; // read at the next drawn(), which shows the paused state
  }

  drawn() {
    if (this.stopped || this.op.closed) return;
    const t = this.op.now();
    const extra = this.wantExtra;
    const step = this.wantStep;
    const always = this.wantAlways;
    this.wantExtra = null;
    this.wantStep = null;
    this.wantAlways = false;
    // One frame serves a step's, an extra and a due one drawn at the same moment.
    if (step) this.capture('step', t >= this.next, step);
    else if (extra !== null || t >= this.next) this.capture(extra ?? undefined, t >= this.next, undefined, always);
  }

  /**
   * Reads a frame now: reason names an extra one; due moves the schedule
   * on; after (a step's answer) runs once the frame is sent, or dropped.
   * A step's frame, or one asked with always, is read even when the
   * encoder is behind; others are then dropped.
   */
  capture(reason, due = !reason, after, always = false) {
    if (this.stopped || this.op.closed) { after?.(); return; }
    const t = this.op.now();
    if (due) this.next = Math.max(this.next + this.interval, t);
    if (this.inFlight >= 2 && !after && !always) { this.dropped++; return; } // the encoder is behind: never slow the game
    this.inFlight++;
    let encoded;
    try {
      encoded = this.source.capture ? Promise.resolve(this.source.capture({ maxWidth: this.req.maxWidth, formats: this.req.formats })) : encodeCanvas(this.source.canvas, this.req);
    } catch (e) {
      encoded = Promise.reject(e);
    }
    const p = encoded.then((f) => f && (f.data instanceof Uint8Array || typeof f.data === 'string') ? f : null, (e) => { this.log.warn('cappy: frame capture failed:', e?.message ?? e); return null; });
    this.chain = this.chain.then(() => p).then((f) => {
      this.inFlight--;
      if (f && !this.op.closed) this.send(t, f, reason);
      try { after?.(); } catch (e) { this.log.error('cappy: after a step frame:', e); }
    });
  }

  send(t, f, reason) {
    const bytes = typeof f.data === 'string' ? null : f.data;
    const size = bytes ? bytes.length : Math.floor(f.data.length * 3 / 4);
    if (!this.req.formats.includes(f.mime) || f.width > this.req.maxWidth || size > MAX_FRAME_BYTES || !(f.width > 0 && f.height > 0)) {
      this.log.warn(`cappy: dropping a frame the controller would refuse (${f.mime} ${f.width}x${f.height}, ${size} bytes)`);
      return;
    }
    const m = { type: 'frame', op: this.op.id, t: Math.max(t, this.lastSent === -Infinity ? 0 : this.lastSent), mime: f.mime, width: f.width, height: f.height, data: bytes ? toBase64(bytes) : f.data };
    if (reason) m.reason = String(reason).slice(0, 128);
    if (this.session.sendText(JSON.stringify(m))) { this.lastSent = m.t; this.lastSize = { width: f.width, height: f.height }; }
  }
}

let encoderWorker = null;
let encoderSeq = 0;
const encoderWaiting = new Map();

/** A worker that encodes ImageBitmaps off the main thread, or null where the platform has none. */
function worker() {
  if (encoderWorker !== null) return encoderWorker;
  encoderWorker = false;
  try {
    if (typeof Worker !== 'function' || typeof OffscreenCanvas !== 'function' || typeof Blob !== 'function') return false;
    const src = `onmessage = async (e) => {
      const { id, bitmap, type } = e.data;
      try {
        const c = new OffscreenCanvas(bitmap.width, bitmap.height);
        c.getContext('2d').drawImage(bitmap, 0, 0);
        bitmap.close();
        const blob = await c.convertToBlob({ type, quality: 0.8 });
        const buf = await blob.arrayBuffer();
        postMessage({ id, type: blob.type, buf }, [buf]);
      } catch (err) { postMessage({ id, error: String(err) }); }
    };`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    w.onmessage = (e) => {
      const k = encoderWaiting.get(e.data.id);
      encoderWaiting.delete(e.data.id);
      if (k) e.data.error ? k.reject(new Error(e.data.error)) : k.resolve(e.data);
    };
    w.onerror = () => { encoderWorker = false; };
    encoderWorker = w;
  } catch {
    encoderWorker = false;
  }
  return encoderWorker;
}

/**
 * Reads a canvas now (the drawing buffer as it is: call right after a
 * WebGL frame is drawn), scaled to maxWidth, and encodes it.
 */
async function encodeCanvas(canvas, req) {
  const w0 = canvas.width, h0 = canvas.height;
  if (!(w0 > 0 && h0 > 0)) return null;
  const scale = Math.min(1, req.maxWidth / w0);
  const w = Math.max(1, Math.floor(w0 * scale)), h = Math.max(1, Math.round(h0 * scale));
  const type = req.formats.find((f) => f === 'image/jpeg' || f === 'image/png');
  if (!type) return null;
  // The synchronous read: a scaled copy taken in this task.
  const small = typeof OffscreenCanvas === 'function' ? new OffscreenCanvas(w, h) : Object.assign(document.createElement('canvas'), { width: w, height: h });
  const ctx = small.getContext('2d');
  if (type === 'image/jpeg') { ctx.fillStyle = '#000'; ctx.fillRect(0, 0, w, h); }
  ctx.drawImage(canvas, 0, 0, w, h);
  const wk = worker();
  let buf, mime;
  if (wk && small.transferToImageBitmap) {
    const bitmap = small.transferToImageBitmap();
    const id = ++encoderSeq;
    const res = await new Promise((resolve, reject) => {
      encoderWaiting.set(id, { resolve, reject });
      wk.postMessage({ id, bitmap, type }, [bitmap]);
    });
    buf = res.buf; mime = res.type;
  } else {
    const blob = small.convertToBlob ? await small.convertToBlob({ type, quality: 0.8 }) : await new Promise((r) => small.toBlob(r, type, 0.8));
    buf = await blob.arrayBuffer(); mime = blob.type;
  }
  return { mime, width: w, height: h, data: new Uint8Array(buf) };
}
