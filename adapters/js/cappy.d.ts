// Types of cappy.js, the Cappy adapter for JavaScript games.

export const VERSION: string;
export const PROTOCOL_VERSION: 1;
export const MAX_MESSAGE_BYTES: number;
export const MAX_INLINE_REPLAY_BYTES: number;
export const MAX_FRAME_BYTES: number;
export const MAX_SUMMARY_BYTES: number;
/** The longest step an agent may ask for: 10000 ms of simulation. */
export const MAX_STEP_MS: number;
/** The largest inspect value: 256 KiB of JSON. */
export const MAX_INSPECT_BYTES: number;
/** The most actions a game may declare. */
export const MAX_ACTIONS: number;
/** The most action inputs one step may carry. */
export const MAX_STEP_ACTIONS: number;
/** The pointer buttons a step may name. */
export const POINTER_BUTTONS: readonly ['left', 'middle', 'right'];

export const Capability: Readonly<{
  SCENARIOS: 'scenarios';
  FREEFORM_RECORDING: 'freeform_recording';
  REPLAY: 'replay';
  TIME_SCALE: 'time_scale';
  ALTERNATE_CAMERAS: 'alternate_cameras';
  FRAMES: 'frames';
  INPUT: 'input';
  INSPECT: 'inspect';
  SEED: 'seed';
}>;

/** The kinds of action an agent can take. */
export const ActionKind: Readonly<{
  BUTTON: 'button';
  AXIS: 'axis';
  AXIS2D: 'axis2d';
  POINTER: 'pointer';
  TEXT: 'text';
}>;

export const Code: Readonly<{
  UNAUTHENTICATED: 'PROTOCOL_UNAUTHENTICATED';
  INVALID_MESSAGE: 'PROTOCOL_INVALID_MESSAGE';
  OUT_OF_STATE: 'PROTOCOL_OUT_OF_STATE';
  CAPABILITY_MISSING: 'CAPABILITY_MISSING';
  OPERATION_BUSY: 'OPERATION_BUSY';
  SCENARIO_NOT_FOUND: 'SCENARIO_NOT_FOUND';
  INVALID_PARAMETERS: 'INVALID_PARAMETERS';
  REPLAY_UNSUPPORTED: 'REPLAY_UNSUPPORTED';
  REPLAY_INVALID: 'REPLAY_INVALID';
  UNKNOWN_CAMERA: 'UNKNOWN_CAMERA';
  PRESENTATION_UNSUPPORTED: 'PRESENTATION_UNSUPPORTED';
  INVALID_INPUT: 'INVALID_INPUT';
  INVALID_QUERY: 'INVALID_QUERY';
  UNKNOWN_QUERY: 'UNKNOWN_QUERY';
  VALUE_TOO_LARGE: 'VALUE_TOO_LARGE';
  ADAPTER_ERROR: 'ADAPTER_ERROR';
}>;

/** Thrown by a scenario or hook, it is sent as `failed` with its code. */
export class CappyFailure extends Error {
  constructor(code: string, message: string);
  readonly code: string;
}

/** connect() rejects with this when the controller refuses the adapter. */
export class RejectError extends Error {
  constructor(code: string, message: string);
  readonly code: string;
}

export interface Parameter {
  type: 'string' | 'number' | 'integer' | 'boolean';
  description?: string;
  required?: boolean;
  default?: string | number | boolean;
  enum?: Array<string | number | boolean>;
  minimum?: number;
  maximum?: number;
}

export interface ScenarioSpec {
  name?: string;
  description?: string;
  parameters?: Record<string, Parameter>;
  requiredCapabilities?: string[];
}

/** Presentation: timeScale and camera have a meaning to Cappy; other keys are the game's. */
export interface Presentation {
  timeScale?: number;
  camera?: string;
  [key: string]: unknown;
}

/** What the controller asks of frames for one operation. */
export interface FramesRequest {
  fps: number;
  maxWidth: number;
  formats: string[];
}

/** One encoded frame, as a capture function returns it. */
export interface Frame {
  mime: string;
  width: number;
  height: number;
  /** The image's bytes, or their base64. */
  data: Uint8Array | string;
}

export interface ReplayPayload {
  kind: 'inline' | 'file';
  encoding?: 'base64';
  data?: string;
  path?: string;
  sha256: string;
  bytes?: number;
  format?: string;
}

export interface EmitOptions {
  /** Presented ms since the operation started (default: op.now()). */
  t?: number;
  /** Simulation ms: presented as simT / timeScale. */
  simT?: number;
  durationMs?: number;
}

/** An action the agent can take: what the game declares with cappy.actions(). */
export interface Action {
  /** An identifier of at most 128 bytes: what a step names. */
  name: string;
  kind: 'button' | 'axis' | 'axis2d' | 'pointer' | 'text';
  /** What it does in the game: the agent reads it. */
  description: string;
}

/** A pointer as the game reads it: x, y in the pixels of its canvas (converted from the frames' pixels). */
export interface PointerInput {
  x: number;
  y: number;
  /** 'left' unless a step named another. */
  button: 'left' | 'middle' | 'right';
  pressed: boolean;
}

/** What a step applied, in order, as hooks.input receives it. */
export interface AppliedAction {
  name: string;
  /** boolean (button), number (axis), {x, y} (axis2d), PointerInput (pointer), string (text). */
  value: boolean | number | { x: number; y: number } | PointerInput | string;
}

/** One operation: the game emits its events through it. */
export class Op {
  readonly id: string;
  readonly kind: 'scenario' | 'recording' | 'replay';
  /** The scenario id (scenarios). */
  readonly scenario?: string;
  /** Checked parameters with defaults filled in (scenarios). */
  readonly params: Record<string, unknown>;
  readonly presentation: Presentation;
  /** The replay's data, its SHA-256 checked (replays). */
  readonly replay?: Uint8Array;
  readonly replayInfo?: { kind: string; format?: string; sha256: string };
  readonly framesRequest?: FramesRequest;
  /** 'agent' in a recording the agent plays (record_start control "agent"): the simulation runs in its steps only. */
  readonly control?: 'agent';
  /** The seed of the game's randomness in a recording or replay, when the game advertises capability "seed" (options.capabilities): seed everything random with it. */
  readonly seed?: number;
  /**
   * The actions the agent holds, by name (agent control): a button's
   * boolean, an axis's number, an axis2d's {x, y}, a pointer's
   * PointerInput (null before the first), a text's string. A step changes
   * what it names; the rest stays as it was.
   */
  readonly input: Record<string, boolean | number | { x: number; y: number } | PointerInput | string | null>;
  /** Simulation ms run through advance() since the operation started (agent control). */
  readonly simT: number;
  /** Whether the simulation waits for the agent's next step (agent control). */
  readonly paused: boolean;
  /** Aborted on cancel ('cancelled') and when the connection is lost ('disconnected'). */
  readonly signal: AbortSignal;
  /** Resolves on stop, cancel or disconnect. */
  readonly stopped: Promise<void>;
  /** Resolves when the operation is over. */
  readonly done: Promise<void>;
  readonly timeScale: number;
  readonly camera?: string;
  readonly isStopped: boolean;
  /** The operation no longer takes events. */
  readonly closed: boolean;
  /** Presented ms since the operation started. */
  now(): number;
  /** Sends an event; false once the operation is over. Throws a TypeError for an invalid one. */
  emit(event: string, payload?: Record<string, unknown>, opts?: EmitOptions): boolean;
  /** The summary sent with completed (a plain object, at most 64 KiB of JSON). */
  summary(value: Record<string, unknown>): void;
  /** Resolves once the send buffer holds at most maxBytes (default 256 KiB): await it in a loop that emits many events. */
  drain(maxBytes?: number): Promise<void>;
  /**
   * Asks for an extra frame now, named by reason, within an allowance of
   * its own (fps a second, one at a time); opts.always: not held back by
   * it (a picture the game must show, e.g. a replay showing each step of
   * an agent's play as its recording did).
   */
  frame(reason?: string, opts?: { always?: boolean }): void;
  /**
   * Whether the next drawn() reads a frame at presented t (default now()):
   * a fixed-tick game stops stepping while it is true, so each frame shows
   * the tick of its t, the same at any timeScale and frame rate.
   */
  frameDue(t?: number): boolean;
  /**
   * Agent control: asks to run ms of simulation (one tick) now. True: the
   * current step has that much time left (counted in simT), run the
   * tick. False: wait (for the agent's next step, or for a due frame to be
   * drawn). `while (op.advance(TICK_MS)) sim.step(input())`. Outside agent
   * control: always true (the game's own clock decides).
   */
  advance(ms: number): boolean;
}

/** What a recording returns: its data (and format), kept by the controller as an inline replay. */
export type RecordingResult = string | Uint8Array | ArrayBuffer | { data: string | Uint8Array | ArrayBuffer; format?: string };

export interface Hooks {
  /** Apply the operation's timeScale (1 when it has none) before it starts. */
  timeScale?(scale: number, op: Op): void;
  /** Switch to the operation's camera (undefined: the default) before it starts. */
  camera?(name: string | undefined, op: Op): void;
  /** A freeform recording: run until op.stopped, return the replay's data. */
  record?(op: Op): RecordingResult | Promise<RecordingResult>;
  /** Play a replay this game recorded: data is checked against its SHA-256. */
  replay?(op: Op, data: Uint8Array, info: { kind: string; format?: string; sha256: string }): unknown;
  /** The operation's presented clock in ms since it started (default: performance.now() since started); frames are stamped with it. */
  now?(op: Op): number;
  /** Agent control: a step's actions, as they are applied (op.input already holds them), before its first tick. */
  input?(applied: AppliedAction[], op: Op): void;
  /** Extra checks before ready; throw a CappyFailure to refuse. */
  validate?(op: Op): unknown;
}

export interface CappyOptions {
  game: { id: string; name?: string };
  /** The build identity sent in hello (a replay against another build may diverge). */
  build?: string;
  adapter?: { name: string; version?: string };
  /** Capabilities beyond those the hooks imply. */
  capabilities?: string[];
  /** The camera names presentation.camera may take; others fail with UNKNOWN_CAMERA. */
  cameras?: string[];
  hooks?: Hooks;
  scenarios?: Array<ScenarioSpec & { id: string; run: ScenarioRun }>;
  /** Default: the page URL's #cappy-endpoint, else $CAPPY_ENDPOINT. */
  endpoint?: string;
  /** Default: the page URL's #cappy-token, else $CAPPY_SESSION_TOKEN. */
  token?: string;
  /** Default: globalThis.WebSocket, else the "ws" package. */
  WebSocket?: unknown;
  /** Connect again, with backoff, after a failed or lost connection, unless refused (default: in browsers). */
  reconnect?: boolean;
  /** In browsers: an uncaught error during an operation fails it (default true). */
  catchGlobalErrors?: boolean;
  logger?: { debug?(...a: unknown[]): void; info?(...a: unknown[]): void; warn(...a: unknown[]): void; error(...a: unknown[]): void };
}

export type ScenarioRun = (op: Op, params: Record<string, any>, presentation: Presentation) => unknown;

export class Cappy {
  constructor(options: CappyOptions);
  /** Resolves once close() was called and the socket closed. */
  readonly closed: Promise<void>;
  readonly connected: boolean;
  readonly capabilities: string[];
  scenario(id: string, spec: ScenarioSpec, run: ScenarioRun): this;
  hooks(h: Hooks): this;
  /** Frames from a canvas (2D or WebGL), or from a capture function. */
  frames(source: HTMLCanvasElement | OffscreenCanvas | { capture(req: { maxWidth: number; formats: string[] }): Frame | null | Promise<Frame | null> }): this;
  /** Declares the actions an agent can take (capability input); sent after welcome and again on each call. */
  actions(list: Action[]): this;
  /** The state inspect reads (capability inspect): an object, or a function returning one, called for each query. */
  state(source: object | (() => unknown)): this;
  /** Call right after a frame is drawn (WebGL): a due frame is read then. */
  drawn(): void;
  /** Connects; resolves once welcomed, rejects with a RejectError when refused. */
  connect(): Promise<void>;
  close(): Promise<void>;
}

export function checkParameter(p: Parameter, v: unknown): string;
export function resolveParameters(scenario: { id: string; parameters?: Record<string, Parameter> }, args?: Record<string, unknown>): Record<string, unknown>;
export function checkPresentation(p: unknown, has?: (capability: string) => boolean): void;
export function inlineReplay(data: string | Uint8Array | ArrayBuffer, format?: string): Promise<ReplayPayload>;
export function readReplay(r: ReplayPayload): Promise<Uint8Array>;
export function sha256Hex(bytes: Uint8Array): Promise<string>;
export function toBase64(bytes: Uint8Array): string;
export function fromBase64(text: string): Uint8Array;
export function checkActions(list: Action[]): Action[];
/** A step's actions checked against the declared ones: [[name, value], ...]; throws an Error saying what is wrong. */
export function checkStep(actions: unknown, declared: Map<string, Action>, held?: Record<string, unknown>, frame?: { width: number; height: number; scale: number }): Array<[string, AppliedAction['value']]>;
/** An inspect query as path segments; throws an Error when it does not parse. */
export function parsePath(query: string): string[];
/** Follows a path into the state; throws a CappyFailure UNKNOWN_QUERY naming what is there instead. */
export function resolvePath(root: unknown, path: string[]): unknown;
/** What the empty query answers: the syntax, and the top-level keys with a summary of each. */
export function describeState(root: unknown): { syntax: string; keys: Record<string, string> };
/** A value of the game's state as JSON text of at most maxBytes (default MAX_INSPECT_BYTES); throws a CappyFailure VALUE_TOO_LARGE beyond. */
export function snapshotJSON(value: unknown, maxBytes?: number): string;
