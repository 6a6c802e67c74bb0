// The views. Each takes the model and the view's UI state and returns the
// nodes to show; tables show at most ROWS rows (filter to narrow), so a
// render stays cheap with 10,000 claims.

import { el, table, row, when, timeLeft, badge, paths, clean } from './dom.js';

/** Most rows one table draws. */
export const ROWS = 100;

/**
 * @typedef {import('./model.js').Model} Model
 * @typedef {{filter: string, kinds?: Set<string>}} ViewState
 */

/**
 * Keeps the items whose text matches the filter, and says how many were cut.
 * @template T
 * @param {T[]} items
 * @param {string} filter
 * @param {(t: T) => string} textOf
 * @returns {{shown: T[], total: number}}
 */
function narrow(items, filter, textOf) {
  const f = filter.trim().toLowerCase();
  if (!f) return { shown: items.slice(0, ROWS), total: items.length };
  const kept = items.filter((x) => textOf(x).toLowerCase().includes(f));
  return { shown: kept.slice(0, ROWS), total: kept.length };
}

/** @param {number} shown @param {number} total @param {string} what */
function more(shown, total, what) {
  return total > shown ? el('p', { class: 'more muted' }, `Showing ${shown} of ${total} ${what}; type in the filter to narrow.`) : null;
}

/** @param {string} title @param {...(Node|null)} body */
function section(title, ...body) {
  return el('section', { class: 'panel', 'aria-label': title }, el('h2', null, title), ...body);
}

/** @param {string|undefined} status */
function presenceBadge(status) {
  return badge(status || 'unknown', 'p-' + (status || 'unknown'));
}

/** @param {Model} m @param {ViewState} ui @param {number} now */
export function agents(m, ui, now) {
  const held = new Map();
  for (const c of m.activeClaims(now)) held.set(c.holder, (held.get(c.holder) || 0) + 1);
  const order = { online: 0, idle: 1, offline: 2 };
  const list = [...m.presence.values()].sort((a, b) =>
    (order[a.status] ?? 3) - (order[b.status] ?? 3) || (a.actorId < b.actorId ? -1 : a.actorId > b.actorId ? 1 : 0));
  const { shown, total } = narrow(list, ui.filter, (p) => [p.actorId, p.agent?.provider, p.sessionId, p.agent?.sessionReference, p.senderReplicaId, p.status].join(' '));
  const rows = shown.map((p) => {
    const last = latest(p.updatedAt, m.activity.get(p.senderReplicaId));
    return row({ 'data-replica': clean(p.senderReplicaId, 200), 'data-status': p.status },
      presenceBadge(p.status), el('strong', null, p.actorId), p.agent?.provider || 'unknown',
      el('code', { title: p.sessionId }, p.agent?.sessionReference || p.sessionId || '—'),
      el('code', null, p.senderReplicaId), String(held.get(p.actorId) || 0), when(last, now));
  });
  return [section('Agents',
    table('Agents', ['Status', 'Actor', 'Provider', 'Session', 'Replica', 'Claims', 'Last activity'], rows,
      'No agent has reported presence yet. Agents appear here when their crosscode-mcp starts.'),
    more(shown.length, total, 'agents'))];
}

/** @param {string|undefined} a @param {string|undefined} b */
function latest(a, b) {
  if (!a) return b;
  if (!b) return a;
  return Date.parse(a) > Date.parse(b) ? a : b;
}

/** @param {Model} m @param {ViewState} ui @param {number} now */
export function claims(m, ui, now) {
  const caused = m.denialsBy();
  const list = m.activeClaims(now);
  const { shown, total } = narrow(list, ui.filter, (c) => c.holder + ' ' + c.text);
  const rows = shown.map((c) => {
    const denied = caused.get(c.id) || [];
    const queue = m.queueOf(c.id);
    return row({ 'data-claim': clean(c.id, 200) },
      el('strong', null, c.holder), paths(c.claim.patterns),
      c.claim.exclusive ? badge('exclusive') : badge('shared'),
      timeLeft(c.exp, now), c.claim.reason,
      queue.length ? el('span', { class: 'queue', title: 'waiting, first in line first' },
        queue.map((w, i) => `${i + 1}. ${w.actorId} (until ${new Date(w.waitUntil).toISOString().slice(11, 19)})`).join(' · ')) : el('span', { class: 'muted' }, '—'),
      denied.length ? el('span', { class: 'denied', title: 'denied: ' + denied.map((d) => d.actorId).join(', ') }, `${denied.length} (${[...new Set(denied.map((d) => d.actorId))].join(', ')})`) : el('span', { class: 'muted' }, '0'));
  });
  const waiting = [...m.waiting.values()].slice(0, 200).map((w) => row({ 'data-waiting': clean(w.claimId, 200) },
    el('strong', null, w.actorId), paths(w.claim?.patterns), String(w.position),
    (w.waitsFor || []).map((k) => `${k.actor} (${k.status === 'queued' ? 'waiting ahead' : 'holds'})`).join(', '),
    when(w.since, now), timeLeft(w.waitUntil, now), w.claim?.reason || ''));
  const denials = [...m.denials.values()].slice(0, 50).map((d) => row({ 'data-denied': clean(d.claimId, 200) },
    el('strong', null, d.actorId), paths(d.claim?.patterns), when(d.ingestedAt, now),
    d.denial?.reason === 'limit' ? `holds the most claims one actor may (${d.denial.limit})` :
      d.denial?.reason === 'deadlock' ? 'deadlock: ' + (d.denial.cycle || []).map((e) => `${e.actor} waits for ${e.holder}`).join(', ') :
      (d.denial?.conflicts || []).map((c) => `${c.actor} (${c.exclusive ? 'exclusive' : 'shared'})`).join(', ')));
  const intents = m.currentIntents(now).sort((a, b) => b.seq - a.seq);
  const ni = narrow(intents, ui.filter, (x) => [x.intent.actorId, x.intent.summary, ...(x.intent.paths || [])].join(' '));
  const irows = ni.shown.map((x) => row({ 'data-intent': clean(x.id, 200) },
    el('strong', null, x.intent.actorId), x.intent.summary, paths(x.intent.paths), timeLeft(x.until, now)));
  return [
    section('Active claims',
      table('Active claims', ['Holder', 'Paths', 'Kind', 'Time left', 'Reason', 'Queue', 'Denials caused'], rows, 'No active claims.'),
      more(shown.length, total, 'claims')),
    m.waiting.size ? section('Waiting for a claim',
      table('Waiting for a claim', ['Waiting actor', 'Paths', 'Place', 'Waits for', 'Since', 'Wait left', 'Reason'], waiting)) : null,
    m.denials.size ? section('Recent denials',
      table('Recent denials', ['Denied actor', 'Paths asked', 'When', 'Denied by'], denials)) : null,
    section('Intents',
      table('Intents', ['Actor', 'Summary', 'Paths', 'Time left'], irows, 'No current intents.'),
      more(ni.shown.length, ni.total, 'intents')),
  ];
}

/** @param {Model} m @param {ViewState} ui @param {number} now */
export function handoffs(m, ui, now) {
  const all = [...m.handoffs.entries()].map(([id, x]) => ({ id, ...x })).sort((a, b) => b.seq - a.seq);
  const text = (x) => [x.handoff.fromActorId, x.handoff.toActorId, x.handoff.summary, x.handoff.notes, x.handoff.status].join(' ');
  const mk = (x) => row({ 'data-handoff': clean(x.id, 200) },
    el('strong', null, x.handoff.fromActorId), x.handoff.toActorId || el('span', { class: 'muted' }, 'anyone'),
    el('div', null, el('div', null, x.handoff.summary), x.handoff.notes ? el('div', { class: 'muted small' }, x.handoff.notes) : null),
    String((x.handoff.claimIds || []).length), badge(x.handoff.status),
    x.handoff.responseNote ? el('span', null, x.handoff.responderActorId || '', ': ', x.handoff.responseNote) : (x.handoff.responderActorId || ''),
    when(x.handoff.status === 'requested' ? x.handoff.createdAt : (x.handoff.respondedAt || x.at), now));
  const open = narrow(all.filter((x) => x.handoff.status === 'requested'), ui.filter, text);
  const done = narrow(all.filter((x) => x.handoff.status !== 'requested'), ui.filter, text);
  const heads = ['From', 'To', 'Summary', 'Claims', 'Status', 'Response', 'When'];
  return [
    section('Open handoffs', table('Open handoffs', heads, open.shown.map(mk), 'No handoff waits for an answer.'), more(open.shown.length, open.total, 'handoffs')),
    section('Answered handoffs', table('Answered handoffs', heads, done.shown.map(mk), 'None answered yet.'), more(done.shown.length, done.total, 'handoffs')),
  ];
}

/** Task board columns. */
const TASK_STATUSES = ['open', 'in_progress', 'blocked', 'done', 'cancelled'];

/** @param {Model} m @param {ViewState} ui @param {number} now */
export function tasks(m, ui, now) {
  const all = [...m.tasks.entries()].map(([id, x]) => ({ id, ...x })).sort((a, b) => b.seq - a.seq);
  const cols = TASK_STATUSES.map((st) => {
    const { shown, total } = narrow(all.filter((x) => x.task.status === st), ui.filter,
      (x) => [x.task.title, x.task.description, x.task.assigneeActorId, ...(x.task.labels || [])].join(' '));
    const cards = shown.map((x) => el('li', { class: 'card', 'data-task': clean(x.id, 200) },
      el('div', { class: 'card-title' }, x.task.title),
      x.task.description ? el('div', { class: 'muted small' }, clean(x.task.description, 160)) : null,
      el('div', { class: 'card-meta' },
        el('span', null, x.task.assigneeActorId ? '→ ' + clean(x.task.assigneeActorId) : 'unassigned'),
        ...(x.task.labels || []).slice(0, 4).map((l) => badge(String(l), 'label')),
        when(x.task.updatedAt || x.at, now))));
    return el('section', { class: 'column', 'aria-label': st.replace('_', ' ') },
      el('h2', null, st.replace('_', ' '), ' ', el('span', { class: 'count' }, String(total))),
      cards.length ? el('ul', { class: 'cards' }, ...cards) : el('p', { class: 'empty muted' }, '—'),
      more(shown.length, total, 'tasks'));
  });
  return [el('div', { class: 'board' }, ...cols)];
}

/** @param {Model} m @param {ViewState} ui @param {number} now */
export function validations(m, ui, now) {
  const { shown } = narrow(m.validations.slice().reverse(), ui.filter,
    (v) => [v.payload.name, v.payload.status, v.payload.commit, v.payload.actorId, v.payload.summary, v.payload.kind].join(' '));
  /** @type {Map<string, any[]>} */
  const byCommit = new Map();
  for (const v of shown) {
    const c = v.payload.commit || '';
    if (!byCommit.has(c)) byCommit.set(c, []);
    byCommit.get(c).push(v);
  }
  const groups = [...byCommit.entries()].slice(0, 30).map(([commit, list]) => {
    const count = (st) => list.filter((v) => v.payload.status === st).length;
    const head = el('h3', null, commit ? el('code', { title: commit }, commit.slice(0, 12)) : el('span', { class: 'muted' }, 'no commit'), ' ',
      badge(`${count('passed')} passed`, 'passed'), ' ', count('failed') ? badge(`${count('failed')} failed`, 'failed') : null, ' ',
      count('errored') ? badge(`${count('errored')} errored`, 'errored') : null);
    const rows = list.slice(0, 50).map((v) => row({ 'data-validation': clean(v.id, 200) },
      badge(v.payload.status), v.payload.kind, el('strong', null, v.payload.name), v.payload.summary || '', v.payload.actorId,
      v.payload.durationMs != null ? `${(v.payload.durationMs / 1000).toFixed(1)} s` : '', when(v.at, now)));
    return el('div', { class: 'group' }, head, table('Validations of ' + (commit || 'no commit'), ['Status', 'Kind', 'Name', 'Summary', 'Actor', 'Took', 'When'], rows));
  });
  return [section('Validations by commit', ...(groups.length ? groups : [el('p', { class: 'empty muted' }, 'No validations yet.')]))];
}

/** Feed kinds, for the filter toggles. */
export const FEED_KINDS = ['claim', 'intent', 'handoff', 'task', 'validation', 'operation'];

/** @param {Model} m @param {ViewState} ui @param {number} now */
export function feed(m, ui, now) {
  const kinds = ui.kinds || new Set(FEED_KINDS);
  const items = m.feed.filter((it) => kinds.has(it.kind)).reverse();
  const { shown, total } = narrow(items, ui.filter, (it) => [it.type, it.actor, summaryOf(it)].join(' '));
  const rows = shown.map((it) => row({ 'data-seq': String(it.seq) },
    el('span', { class: 'muted' }, '#' + it.seq), when(it.at, now), badge(it.type, it.kind), el('strong', null, it.actor), summaryOf(it)));
  return [section('Live feed', table('Live feed', ['#', 'When', 'Event', 'Actor', 'What'], rows, 'Nothing happened yet.'), more(shown.length, total, 'events'))];
}

/** @param {import('./model.js').Item} it */
function summaryOf(it) {
  const p = it.payload || {};
  switch (it.kind) {
    case 'claim': return (p.releasedAt ? 'released ' : (p.exclusive ? 'exclusive ' : 'shared ')) + (p.patterns || []).join(', ') + (p.reason ? ' — ' + p.reason : '');
    case 'intent': return p.summary + ' (' + (p.paths || []).join(', ') + ')';
    case 'handoff': return p.status === 'requested' ? `to ${p.toActorId || 'anyone'}: ${p.summary}` : `${p.status}: ${p.summary}`;
    case 'task': return `${p.title} [${p.status}]`;
    case 'validation': return `${p.name}: ${p.status}${p.commit ? ' @' + String(p.commit).slice(0, 12) : ''}`;
    case 'operation': return `${p.summary} (${(p.files || []).length} files)`;
  }
  return '';
}

/** The strip at the top: the numbers that matter, at a glance.
 * @param {Model} m @param {number} now */
export function summary(m, now) {
  let online = 0;
  for (const p of m.presence.values()) if (p.status === 'online') online++;
  const open = [...m.handoffs.values()].filter((x) => x.handoff.status === 'requested').length;
  const doing = [...m.tasks.values()].filter((x) => x.task.status === 'in_progress').length;
  const blocked = [...m.tasks.values()].filter((x) => x.task.status === 'blocked').length;
  const recent = m.validations.slice(-200);
  const failed = recent.filter((v) => v.payload.status === 'failed' || v.payload.status === 'errored').length;
  const stat = (n, label, href, warn) => el('a', { class: 'stat' + (warn ? ' warn' : ''), href, 'data-stat': label }, el('span', { class: 'n' }, String(n)), el('span', { class: 'l' }, label));
  return [
    stat(`${online}/${m.presence.size}`, 'agents online', '#agents'),
    stat(m.activeClaims(now).length, 'active claims', '#claims'),
    stat(m.denials.size, 'denials', '#claims', m.denials.size > 0),
    stat(open, 'open handoffs', '#handoffs', open > 0),
    stat(doing, 'tasks in progress', '#tasks'),
    stat(blocked, 'tasks blocked', '#tasks', blocked > 0),
    stat(failed, 'recent failures', '#validations', failed > 0),
  ];
}
