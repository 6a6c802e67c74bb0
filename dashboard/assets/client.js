// The page's client of the coordination API (section 4 of the spec): it
// lists the log with GET /v1/events, follows the /v1/subscribe fan-out,
// resumes from its cursor after a drop and relists after cursor-too-old.

/** An error answer of the API: {error: {code, message}} and the HTTP status. */
export class APIError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   */
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Events read per page while listing. */
const PAGE = 1000;

/** Reconnect backoff bounds, ms. */
const RETRY_MIN = 250;
const RETRY_MAX = 5000;
/** How often the lines are read again while anyone waits, in ms. */
const QUEUE_POLL_MS = 3000;

export class Client {
  /**
   * @param {string} token the workspace access token (kept by the caller in sessionStorage)
   * @param {import('./model.js').Model} model
   * @param {{onStatus: (state: string, detail: string) => void, onFatal: (err: Error) => void, onClaims?: () => void}} hooks
   */
  constructor(token, model, hooks) {
    this.token = token;
    this.model = model;
    this.hooks = hooks;
    this.workspace = '';
    /** @type {string[]} */
    this.features = [];
    this.replica = 'dashboard-' + Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('');
    /** @type {WebSocket|null} */
    this.ws = null;
    this.retry = RETRY_MIN;
    this.stopped = false;
    /** Frames that arrived while a gap is filled, in order. */
    this.pending = [];
    this.filling = false;
    this.denialTimer = 0;
  }

  /**
   * GET a JSON answer of the API.
   * @param {string} path
   * @param {AbortSignal} [signal]
   */
  async get(path, signal) {
    const res = await fetch(path, { headers: { Authorization: 'Bearer ' + this.token, Accept: 'application/json' }, cache: 'no-store', signal });
    let body = null;
    try { body = await res.json(); } catch { /* not JSON */ }
    if (!res.ok) {
      const e = body && body.error;
      throw new APIError(res.status, e?.code || 'HTTP_' + res.status, e?.message || res.statusText);
    }
    return body;
  }

  /** Authenticates, lists presence and the log, then follows the fan-out. */
  async start() {
    const who = await this.get('/v1/workspace');
    this.workspace = who.workspaceId;
    this.features = who.features || [];
    await this.relist(0);
    this.connect();
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.denialTimer);
    if (this.ws) this.ws.close(1000, 'page closed');
  }

  /**
   * Forgets the log and reads it again from `from`, with presence.
   * @param {number} from
   */
  async relist(from) {
    this.model.reset();
    const pres = await this.get('/v1/presence');
    this.model.setPresenceList(pres.items || []);
    await this.readFrom(from);
    await this.refreshDenials();
  }

  /**
   * Reads the log after the model's cursor (or `from` on an empty model)
   * until no more pages, or until `upto` is reached.
   * @param {number} from
   * @param {number} [upto]
   */
  async readFrom(from, upto = Infinity) {
    let cursor = Math.max(from, this.model.seq);
    for (;;) {
      const page = await this.get(`/v1/events?afterSequence=${cursor}&limit=${PAGE}&protocolVersion=2`);
      if (page.status === 'cursor-too-old') {
        // History below resyncFrom is gone: start over from there.
        this.hooks.onStatus('resync', `history before #${page.resyncFrom} was deleted by retention; relisting`);
        this.model.reset();
        cursor = page.resyncFrom;
        continue;
      }
      this.model.applyEnvelopes(page.items);
      cursor = page.nextCursor;
      if (!page.hasMore || cursor >= upto) return;
    }
  }

  /** Reads the denials and the claims' lines again (when the server offers them). */
  async refreshDenials() {
    if (!this.features.includes('denials')) return;
    const d = await this.get('/v1/denials');
    this.model.setDenials(d.items || []);
    await this.refreshQueues();
  }

  /**
   * Reads the claims' lines: who waits for what, and the leases of claims
   * granted after waiting. Grants also happen with no event in the log
   * (a lease runs out), so while anyone waits they are read again every
   * few seconds.
   */
  async refreshQueues() {
    if (!this.features.includes('queues')) return;
    const q = await this.get('/v1/queues');
    this.model.setQueues(q);
    clearTimeout(this.queueTimer);
    if ((q.waiting || []).length && !this.stopped) {
      this.queueTimer = setTimeout(() => {
        this.refreshQueues().catch((e) => this.hooks.onStatus('error', 'queues: ' + e.message));
      }, QUEUE_POLL_MS);
    }
  }

  /** Refreshes denials soon after claims arrive, at most once per 250 ms. */
  denialsSoon() {
    if (!this.features.includes('denials') || this.denialTimer) return;
    this.denialTimer = setTimeout(() => {
      this.denialTimer = 0;
      this.refreshDenials().catch((e) => this.hooks.onStatus('error', 'denials: ' + e.message));
    }, 250);
  }

  connect() {
    if (this.stopped) return;
    const url = (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/v1/subscribe';
    const ws = new WebSocket(url);
    this.ws = ws;
    this.hooks.onStatus('connecting', 'connecting…');
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: 'subscribe', workspaceId: this.workspace, replicaId: this.replica, accessToken: this.token }));
    };
    ws.onmessage = (ev) => {
      let f;
      try { f = JSON.parse(ev.data); } catch { return; }
      if (f.type === 'subscribed') {
        this.retry = RETRY_MIN;
        this.resume(f.cursor);
        return;
      }
      if (f.type === 'error') {
        ws.onclose = null;
        ws.close();
        if (f.code === 'UNAUTHENTICATED' || f.code === 'FORBIDDEN') {
          this.hooks.onFatal(new APIError(401, f.code, f.message));
        } else {
          this.hooks.onStatus('error', f.message);
          this.later();
        }
        return;
      }
      if (this.filling) this.pending.push(f);
      else this.frame(f);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws || this.stopped) return;
      this.hooks.onStatus('reconnecting', `connection closed (${ev.code}${ev.reason ? ': ' + ev.reason : ''}); reconnecting`);
      this.later();
    };
  }

  later() {
    const wait = this.retry;
    this.retry = Math.min(this.retry * 2, RETRY_MAX);
    setTimeout(() => this.connect(), wait);
  }

  /**
   * After a (re)subscription at `cursor`: reads what was missed up to it
   * from the log, then applies the frames that came meanwhile.
   * @param {number} cursor
   */
  async resume(cursor) {
    this.filling = true;
    try {
      if (cursor > this.model.seq) await this.readFrom(this.model.seq, cursor);
      // Presence is not in the log: read it again after a drop.
      const pres = await this.get('/v1/presence');
      this.model.setPresenceList(pres.items || []);
      await this.refreshDenials();
    } catch (e) {
      this.filling = false;
      this.pending = [];
      if (e instanceof APIError && e.status === 401) { this.hooks.onFatal(e); return; }
      this.hooks.onStatus('reconnecting', 'catching up failed: ' + /** @type {Error} */ (e).message);
      if (this.ws) this.ws.close();
      return;
    }
    this.filling = false;
    const frames = this.pending;
    this.pending = [];
    for (const f of frames) this.frame(f);
    this.hooks.onStatus('live', `live · #${this.model.seq}`);
  }

  /** @param {{type: string, data: any}} f */
  frame(f) {
    const d = f.data;
    if (f.type !== 'presence' && d && d.serverSequence > this.model.seq + 1) {
      // A gap (should not happen): read it from the log first.
      this.pending.push(f);
      if (!this.filling) this.resume(d.serverSequence - 1);
      return;
    }
    if (this.model.applyFrame(f)) {
      if (f.type === 'claim') this.denialsSoon();
      this.hooks.onStatus('live', `live · #${this.model.seq}`);
    }
  }
}
