// The library's own checks, without a controller: parameters,
// presentation, and replay payloads (SHA-256, size, shape).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { resolveParameters, checkPresentation, inlineReplay, readReplay, sha256Hex, toBase64, fromBase64, CappyFailure, Code, MAX_INLINE_REPLAY_BYTES } from '../cappy.js';

const count = {
  id: 'count',
  parameters: {
    n: { type: 'integer', minimum: 1, maximum: 100, default: 3 },
    mode: { type: 'string', enum: ['plain', 'fancy'] },
    route: { type: 'string', required: true, enum: ['short', 'long'] },
  },
};

const failsWith = (code) => (e) => e instanceof CappyFailure && e.code === code && e.message.length > 0;

test('parameters: defaults filled in, the controller\'s refusals', () => {
  assert.deepEqual(resolveParameters(count, { route: 'short' }), { n: 3, route: 'short' });
  assert.deepEqual(resolveParameters(count, { route: 'long', n: 7, mode: 'fancy' }), { n: 7, route: 'long', mode: 'fancy' });
  for (const args of [
    { route: 'short', n: 1000 }, { route: 'short', n: 1.5 }, { route: 'short', n: 'five' }, { route: 'short', mode: 'ugly' },
    { route: 'short', speed: 2 }, {}, { route: 'medium' }, { route: 'short', n: NaN },
  ]) {
    assert.throws(() => resolveParameters(count, args), failsWith(Code.INVALID_PARAMETERS), JSON.stringify(args));
  }
});

test('presentation: ranges and the capabilities they need', () => {
  checkPresentation({ timeScale: 0.5, camera: 'overview', mine: 1 });
  checkPresentation(undefined);
  assert.throws(() => checkPresentation({ timeScale: 8 }), failsWith(Code.PRESENTATION_UNSUPPORTED));
  assert.throws(() => checkPresentation({ timeScale: 'fast' }), failsWith(Code.PRESENTATION_UNSUPPORTED));
  assert.throws(() => checkPresentation({ camera: '' }), failsWith(Code.PRESENTATION_UNSUPPORTED));
  assert.throws(() => checkPresentation({ camera: 2 }), failsWith(Code.PRESENTATION_UNSUPPORTED));
  const none = () => false;
  assert.throws(() => checkPresentation({ timeScale: 1 }, none), failsWith(Code.CAPABILITY_MISSING));
  assert.throws(() => checkPresentation({ camera: 'a' }, none), failsWith(Code.CAPABILITY_MISSING));
});

test('replays: inline with SHA-256, round trip, and corruption refused', async () => {
  const data = new TextEncoder().encode('{"inputs":[1,2,3]}');
  const r = await inlineReplay(data, 'test/v1');
  assert.equal(r.kind, 'inline');
  assert.equal(r.encoding, 'base64');
  assert.equal(r.format, 'test/v1');
  // Web Crypto's digest, as node:crypto computes it.
  assert.equal(r.sha256, createHash('sha256').update(data).digest('hex'));
  assert.equal(fromBase64(r.data).length, data.length);
  assert.equal(await sha256Hex(new TextEncoder().encode('abc')), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.deepEqual(await readReplay(r), data);
  await assert.rejects(readReplay({ ...r, sha256: '0'.repeat(64) }), failsWith(Code.REPLAY_INVALID));
  await assert.rejects(readReplay({ ...r, data: toBase64(new TextEncoder().encode('{"inputs":[1,2,4]}')) }), failsWith(Code.REPLAY_INVALID));
  await assert.rejects(readReplay({ ...r, data: '***' }), failsWith(Code.REPLAY_INVALID));
  await assert.rejects(readReplay({ ...r, kind: 'tape' }), failsWith(Code.REPLAY_INVALID));
  await assert.rejects(readReplay({ ...r, sha256: 'xyz' }), failsWith(Code.REPLAY_INVALID));
  const big = new Uint8Array(MAX_INLINE_REPLAY_BYTES + 1);
  await assert.rejects(inlineReplay(big), failsWith(Code.REPLAY_INVALID));
  await assert.rejects(readReplay({ kind: 'inline', encoding: 'base64', data: toBase64(big), sha256: await sha256Hex(big) }), failsWith(Code.REPLAY_INVALID));
  const max = new Uint8Array(MAX_INLINE_REPLAY_BYTES).map((_, i) => i * 7);
  assert.deepEqual(fromBase64((await inlineReplay(max)).data), max);
});
