// The workspace's state as the page knows it: a fold of the log in server
// order (whole envelopes from GET /v1/events, or fan-out frames from
// /v1/subscribe), plus presence. It keeps only what the views show, with
// bounded history, so a long log costs time once and little memory.

/** How many feed items, validations and answered handoffs are kept. */
export const KEEP_FEED = 1000;
export const KEEP_VALIDATIONS = 2000;
export const KEEP_ANSWERED = 500;

/** How long an intent without expiresAt counts as current (store.IntentTTL). */
const INTENT_TTL_MS = 2 * 3600e3;

/** Fan-out frame type -> the payload field of its data. */
const FRAME_FIELD = {
  operation: 'transaction', task: 'task', claim: 'claim', handoff: 'handoff',
  intent: 'intent', validation: 'validation',
};

/** Envelope type -> fan-out kind. */
const KIND_OF = {
  'transaction.created': 'operation', 'task.created': 'task', 'task.updated': 'task',
  'claim.created': 'claim', 'claim.released': 'claim', 'handoff.requested': 'handoff',
  'handoff.responded': 'handoff', 'intent.published': 'intent', 'validation.completed': 'validation',
};

/**
 * One logged event, the same whether it came from a page or a frame.
 * @typedef {{seq: number, at: string, kind: string, type: string, id: string,
 *   replica: string, actor: string, payload: any}} Item
 */

export class Model {
  constructor() {
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    this.reset();
  }

  /** Forgets the log (on cursor-too-old, before relisting); presence stays. */
  reset() {
    /** The highest serverSequence applied. */
    this.seq = 0;
    /** @type {Map<string, {claim: any, seq: number, at: string, holder: string, exp: number, text: string}>} active or not yet released */
    this.claims = new Map();
    /** @type {Map<string, {intent: any, seq: number, at: string, until: number}>} */
    this.intents = new Map();
    /** @type {Map<string, {task: any, seq: number, at: string}>} */
    this.tasks = new Map();
    /** @type {Map<string, {handoff: any, seq: number, at: string}>} */
    this.handoffs = new Map();
    /** @type {Item[]} newest last */
    this.validations = [];
    /** @type {Item[]} newest last */
    this.feed = [];
    /** @type {Map<string, string>} replica -> ingestedAt of its last event */
    this.activity = new Map();
    /** @type {Map<string, any>} claimId -> denial item of GET /v1/denials */
    this.denials = new Map();
    /** @type {Map<string, any>} claimId -> waiting item of GET /v1/queues, in line order */
    this.waiting = new Map();
    /** @type {Map<string, any>} claimId -> granted item of GET /v1/queues */
    this.granted = new Map();
    if (!this.presence) {
      /** @type {Map<string, any>} replica -> presence */
      this.presence = new Map();
    }
    this.changed();
  }

  /** @param {() => void} fn */
  onChange(fn) { this.listeners.add(fn); }

  changed() {
    this.version = (this.version || 0) + 1;
    this.sortedClaims = null;
    for (const fn of this.listeners) fn();
  }

  /**
   * Applies whole envelopes (a page's items), in server order.
   * @param {any[]} envelopes
   */
  applyEnvelopes(envelopes) {
    for (const e of envelopes) {
      this.apply({
        seq: e.serverSequence, at: e.ingestedAt, kind: KIND_OF[e.type] || 'unknown', type: e.type, id: e.id,
        replica: e.replicaId, actor: e.actorId, payload: e.payload,
      });
    }
    if (envelopes.length) this.changed();
  }

  /**
   * Applies one fan-out frame; returns false for one already applied.
   * @param {{type: string, data: any}} f
   */
  applyFrame(f) {
    if (f.type === 'presence') {
      this.setPresence(f.data);
      this.changed();
      return true;
    }
    const field = FRAME_FIELD[f.type];
    const d = f.data;
    if (!field || !d || d.serverSequence <= this.seq) return false;
    const p = d[field];
    this.apply({
      seq: d.serverSequence, at: d.updatedAt || d.createdAt, kind: f.type, type: frameEventType(f.type, p, this),
      id: d.eventId, replica: d.senderReplicaId, actor: actorOf(f.type, p), payload: p,
    });
    this.changed();
    return true;
  }

  /** @param {any[]} list presence items of GET /v1/presence */
  setPresenceList(list) {
    this.presence = new Map();
    for (const p of list) this.setPresence(p);
    this.changed();
  }

  /** @param {any} p */
  setPresence(p) {
    const old = this.presence.get(p.senderReplicaId);
    if (old && Date.parse(old.updatedAt) > Date.parse(p.updatedAt)) return;
    this.presence.set(p.senderReplicaId, p);
  }

  /** @param {any[]} items of GET /v1/denials */
  setDenials(items) {
    this.denials = new Map(items.map((d) => [d.claimId, d]));
    for (const d of items) this.claims.delete(d.claimId);
    this.changed();
  }

  /**
   * The claims' lines as the server computes them (GET /v1/queues): a
   * claim that asked to wait holds its paths only once granted, with a
   * lease from the grant.
   * @param {{waiting?: any[], granted?: any[]}} q
   */
  setQueues(q) {
    this.waiting = new Map((q.waiting || []).map((w) => [w.claimId, w]));
    this.granted = new Map((q.granted || []).map((g) => [g.claimId, g]));
    this.changed();
  }

  /**
   * The claims waiting for held claim id, in line.
   * @param {string} id
   */
  queueOf(id) {
    const out = [];
    for (const w of this.waiting.values()) {
      if ((w.waitsFor || []).some((k) => k.claimId === id)) out.push(w);
    }
    return out;
  }

  /** @param {Item} it */
  apply(it) {
    if (it.seq <= this.seq) return;
    this.seq = it.seq;
    if (it.replica) this.activity.set(it.replica, it.at);
    const p = it.payload || {};
    switch (it.kind) {
      case 'claim':
        if (p.releasedAt) this.claims.delete(it.id);
        else if (!this.denials.has(it.id)) {
          this.claims.set(it.id, {
            claim: p, seq: it.seq, at: it.at, holder: p.actorId, exp: Date.parse(p.expiresAt),
            text: [p.reason, ...(p.patterns || [])].join(' ').toLowerCase(),
          });
        }
        break;
      case 'intent': {
        // A newer intent of the same actor and replica supersedes the older.
        for (const [id, x] of this.intents) {
          if (x.intent.actorId === p.actorId && x.intent.replicaId === p.replicaId) this.intents.delete(id);
        }
        const until = p.expiresAt ? Date.parse(p.expiresAt) : Date.parse(it.at) + INTENT_TTL_MS;
        this.intents.set(it.id, { intent: p, seq: it.seq, at: it.at, until });
        break;
      }
      case 'task':
        this.tasks.set(it.id, { task: p, seq: it.seq, at: it.at });
        break;
      case 'handoff': {
        const old = this.handoffs.get(it.id);
        // The first response to a requested handoff decides it.
        if (old && old.handoff.status !== 'requested') break;
        this.handoffs.set(it.id, { handoff: p, seq: it.seq, at: it.at });
        if (p.status === 'accepted' && p.responderActorId) {
          for (const cid of p.claimIds || []) {
            const c = this.claims.get(cid);
            if (c) c.holder = p.responderActorId;
            this.sortedClaims = null;
          }
        }
        this.trimAnswered();
        break;
      }
      case 'validation':
        this.validations.push(it);
        if (this.validations.length > KEEP_VALIDATIONS * 1.25) this.validations.splice(0, this.validations.length - KEEP_VALIDATIONS);
        break;
    }
    this.feed.push(it);
    if (this.feed.length > KEEP_FEED * 1.25) this.feed.splice(0, this.feed.length - KEEP_FEED);
  }

  trimAnswered() {
    let answered = 0;
    for (const x of this.handoffs.values()) if (x.handoff.status !== 'requested') answered++;
    if (answered <= KEEP_ANSWERED * 1.25) return;
    const old = [...this.handoffs.entries()].filter(([, x]) => x.handoff.status !== 'requested').sort((a, b) => a[1].seq - b[1].seq);
    for (const [id] of old.slice(0, answered - KEEP_ANSWERED)) this.handoffs.delete(id);
  }

  /**
   * The active claims at now (not released, denied, waiting or expired),
   * by holder then age. The order is kept until the claims change, so a render
   * with 10,000 claims only filters.
   * @param {number} now
   */
  activeClaims(now) {
    if (!this.sortedClaims) {
      const all = [];
      for (const [id, c] of this.claims) all.push({ id, ...c });
      all.sort((a, b) => (a.holder < b.holder ? -1 : a.holder > b.holder ? 1 : a.seq - b.seq));
      this.sortedClaims = all;
    }
    const out = [];
    for (const c of this.sortedClaims) {
      if (!c.claim.waitUntil) {
        if (c.exp > now) out.push(c);
        continue;
      }
      // A claim that asked to wait holds only once the server says it
      // was granted, and its lease runs from the grant.
      const g = this.granted.get(c.id);
      if (g && Date.parse(g.expiresAt) > now) out.push({ ...c, exp: Date.parse(g.expiresAt), grantedAt: g.grantedAt });
    }
    return out;
  }

  /** @param {number} now */
  currentIntents(now) {
    const out = [];
    for (const [id, x] of this.intents) if (x.until > now) out.push({ id, ...x });
    return out;
  }

  /** Denials caused by each claim: claimId -> denial items. */
  denialsBy() {
    /** @type {Map<string, any[]>} */
    const by = new Map();
    for (const d of this.denials.values()) {
      for (const c of d.denial?.conflicts || []) {
        if (!by.has(c.claimId)) by.set(c.claimId, []);
        by.get(c.claimId).push(d);
      }
    }
    return by;
  }
}

/**
 * The envelope type a frame stands for (frames carry the entity, not the
 * event): a claim with releasedAt was released, a handoff past requested
 * was answered, a task already known was updated.
 * @param {string} kind
 * @param {any} p
 * @param {Model} m
 */
function frameEventType(kind, p, m) {
  switch (kind) {
    case 'operation': return 'transaction.created';
    case 'claim': return p.releasedAt ? 'claim.released' : 'claim.created';
    case 'handoff': return p.status === 'requested' ? 'handoff.requested' : 'handoff.responded';
    case 'task': return m.tasks.has(p.id) ? 'task.updated' : 'task.created';
    case 'intent': return 'intent.published';
    case 'validation': return 'validation.completed';
  }
  return kind;
}

/**
 * Who acted, from the payload.
 * @param {string} kind
 * @param {any} p
 */
function actorOf(kind, p) {
  if (!p) return '';
  switch (kind) {
    case 'handoff': return p.status === 'requested' ? p.fromActorId : (p.responderActorId || p.fromActorId);
    case 'task': return p.assigneeActorId || p.createdByActorId;
  }
  return p.actorId || '';
}
