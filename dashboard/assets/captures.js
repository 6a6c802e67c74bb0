// The captures view (local mode): this machine's Cappy operations, one
// operation's event timeline, and its frames and video when stored.

import { el, fill, table, row, when, badge, clean } from './dom.js';

/** Timeline events drawn at most (the page reads on with "more"). */
const MAX_EVENTS = 2000;

export class CapturesView {
  /**
   * @param {import('./client.js').Client} client
   * @param {() => void} redraw
   */
  constructor(client, redraw) {
    this.client = client;
    this.redraw = redraw;
    /** @type {any[]} */
    this.list = [];
    this.error = '';
    this.selected = '';
    /** @type {any} */
    this.detail = null;
    /** @type {any[]} */
    this.events = [];
    this.eventsMore = false;
    this.eventsCursor = 0;
    /** @type {{filter: string}} */
    this.ui = { filter: '' };
    /** @type {string[]} blob URLs of shown frames, revoked when left */
    this.urls = [];
  }

  /** Loads the list (again) when the view opens. @param {{filter: string}} ui */
  async open(ui) {
    this.ui = ui;
    try {
      const ans = await this.client.get('/v1/captures?limit=100');
      this.list = ans.items;
      this.error = '';
    } catch (e) {
      this.error = 'Could not list captures: ' + /** @type {Error} */ (e).message;
    }
    this.redraw();
  }

  /** @param {string} op */
  async select(op) {
    this.selected = op;
    this.detail = null;
    this.events = [];
    this.eventsCursor = 0;
    for (const u of this.urls) URL.revokeObjectURL(u);
    this.urls = [];
    this.redraw();
    try {
      this.detail = await this.client.get('/v1/captures/' + encodeURIComponent(op));
      await this.moreEvents();
    } catch (e) {
      this.error = 'Could not read capture: ' + /** @type {Error} */ (e).message;
    }
    this.redraw();
  }

  async moreEvents() {
    const op = this.selected;
    const ans = await this.client.get(`/v1/captures/${encodeURIComponent(op)}/events?afterSeq=${this.eventsCursor}&limit=500`);
    if (op !== this.selected) return;
    this.events.push(...ans.items);
    this.eventsCursor = ans.nextCursor;
    this.eventsMore = ans.hasMore && this.events.length < MAX_EVENTS;
    this.redraw();
  }

  /** @param {HTMLElement} into */
  render(into) {
    const now = Date.now();
    const f = this.ui.filter.trim().toLowerCase();
    const list = this.list.filter((c) => !f || [c.op, c.kind, c.scenario, c.status, c.code, c.message].join(' ').toLowerCase().includes(f));
    const rows = list.map((c) => {
      const open = el('button', { type: 'button', class: 'link', 'data-op': clean(c.op, 200), 'aria-pressed': c.op === this.selected ? 'true' : 'false' }, c.op);
      open.addEventListener('click', () => this.select(c.op));
      return row({ class: c.op === this.selected ? 'selected' : '' },
        open, c.kind, c.scenario || '—', badge(c.status), String(c.events), duration(c), when(c.createdAt, now));
    });
    const parts = [
      this.error ? el('p', { class: 'error', role: 'alert' }, this.error) : null,
      el('section', { class: 'panel', 'aria-label': 'Captures' }, el('h2', null, 'Captures on this machine'),
        table('Captures', ['Operation', 'Kind', 'Scenario', 'Status', 'Events', 'Took', 'Started'], rows,
          'No captures yet. They appear when an agent runs a scenario, a recording or a replay.')),
      this.selected ? this.renderDetail(now) : null,
    ];
    fill(into, ...parts.filter(Boolean));
  }

  /** @param {number} now */
  renderDetail(now) {
    const d = this.detail;
    if (!d) return el('section', { class: 'panel' }, el('h2', null, 'Operation ', el('code', null, this.selected)), el('p', { class: 'muted' }, 'loading…'));
    const c = d.capture;
    const meta = el('dl', { class: 'meta' },
      el('dt', null, 'Status'), el('dd', null, badge(c.status), c.code ? ' ' + clean(c.code) : '', c.message ? ' — ' + clean(c.message) : ''),
      el('dt', null, 'Game'), el('dd', null, [c.game, c.adapter, c.build].filter(Boolean).join(' · ') || '—'),
      el('dt', null, 'Created'), el('dd', null, when(c.createdAt, now)),
      el('dt', null, 'Events'), el('dd', null, String(c.events)),
      c.replayOf ? el('dt', null, 'Replay of') : null, c.replayOf ? el('dd', null, el('code', null, c.replayOf)) : null);
    const evRows = this.events.map((e) => row({ 'data-event-seq': String(e.seq) },
      String(Math.round(e.t)), el('strong', null, e.event), e.durationMs != null ? e.durationMs.toFixed(1) + ' ms' : '',
      el('pre', { class: 'payload' }, e.payload ? clean(JSON.stringify(e.payload), 600) : '')));
    const more = this.eventsMore ? el('button', { type: 'button', onclick: () => this.moreEvents() }, 'More events') : null;
    return el('section', { class: 'panel', 'aria-label': 'Operation ' + clean(c.op) },
      el('h2', null, 'Operation ', el('code', null, c.op), ' · ', c.kind, c.scenario ? ' · ' + clean(c.scenario) : ''),
      meta,
      this.renderMedia(d),
      el('h3', null, 'Event timeline'),
      table('Event timeline', ['t (ms)', 'Event', 'Took', 'Payload'], evRows, 'No events.'),
      more);
  }

  /** Frames and video, when the controller stored them. @param {any} d */
  renderMedia(d) {
    const frames = d.frames || [];
    if (!frames.length && !d.video) return el('p', { class: 'muted' }, 'No frames or video stored for this operation.');
    const strip = el('ol', { class: 'frames' });
    for (const f of frames.slice(0, 60)) {
      const img = /** @type {HTMLImageElement} */ (el('img', { alt: `frame at t=${Math.round(f.t)} ms`, width: String(Math.min(f.width, 240)), loading: 'lazy' }));
      if (typeof f.url === 'string' && f.url.startsWith('/v1/')) img.src = f.url;
      strip.append(el('li', null, img, el('span', { class: 'small muted' }, `t=${Math.round(f.t)} ms`)));
    }
    const video = typeof d.video === 'string' && d.video.startsWith('/v1/') ? el('a', { href: d.video, class: 'video', target: '_blank', rel: 'noopener' }, 'Open the video (MP4)') : null;
    const count = d.framesTotal > frames.length ? el('p', { class: 'muted small' }, `First ${frames.length} of ${d.framesTotal} frames.`) : null;
    return el('div', { class: 'media' }, el('h3', null, 'Frames ', video), count, strip);
  }
}

/** @param {any} c */
function duration(c) {
  if (!c.startedAt || !c.endedAt) return c.status === 'running' ? 'running' : '—';
  return ((Date.parse(c.endedAt) - Date.parse(c.startedAt)) / 1000).toFixed(1) + ' s';
}
