// The real controller for the library's tests: the crosscode-mcp binary as
// a stdio MCP server (capture tools only), driven over JSON-RPC, with no
// game command, so it writes its endpoint and token for the adapter the
// test connects itself.
//
// The binary is $CROSSCODE_MCP, else it is built from this repository with
// `go build` into a temporary directory once per test process.

import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
let built;

/** The crosscode-mcp binary to test against. */
export function binary() {
  if (process.env.CROSSCODE_MCP) return process.env.CROSSCODE_MCP;
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), 'cappy-js-bin-'));
    built = join(dir, 'crosscode-mcp');
    execFileSync('go', ['build', '-o', built, './cmd/crosscode-mcp'], { cwd: repoRoot, stdio: 'inherit' });
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return built;
}

/** Waits for cond() to be truthy (polled), up to ms. */
export async function waitFor(what, cond, ms = 15000) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Starts crosscode-mcp and initializes an MCP session. Returns
 * {call, callRaw, endpoint, token, stderr(), close()}.
 */
export async function startController(t, { args = [], cwd } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'cappy-js-'));
  const data = join(dir, 'data');
  const child = spawn(binary(), ['--toolsets', 'capture', '--data', data, '--repo', cwd || dir, ...args], {
    cwd: cwd || dir,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, CROSSCODE_SESSION_REF: 'js-tests', CAPPY_ENDPOINT: '', CAPPY_SESSION_TOKEN: '' },
  });
  let stderr = '';
  child.stderr.on('data', (b) => { stderr += b; if (stderr.length > 1 << 20) stderr = stderr.slice(-(1 << 19)); });
  const exited = new Promise((r) => child.on('exit', r));
  let nextID = 1;
  const pending = new Map();
  const notifications = [];
  createInterface({ input: child.stdout }).on('line', (line) => {
    const m = JSON.parse(line);
    if (m.id !== undefined && pending.has(m.id)) {
      const k = pending.get(m.id);
      pending.delete(m.id);
      m.error ? k.reject(new Error(`${m.error.code}: ${m.error.message}`)) : k.resolve(m.result);
    } else if (m.method) {
      notifications.push(m);
    }
  });
  const request = (method, params) => new Promise((resolve, reject) => {
    const id = nextID++;
    pending.set(id, { resolve, reject });
    child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
  });
  await request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cappy-js-tests', version: '1' } });
  child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
  const endpointFile = join(data, 'cappy-endpoint.json');
  let endpoint, token;
  if (!args.length) {
    await waitFor('the endpoint file', () => existsSync(endpointFile));
    ({ endpoint, token } = JSON.parse(readFileSync(endpointFile, 'utf8')));
  }

  /**
   * Calls a tool: {out, isError, content}. out is structuredContent, or
   * for a failed operation (whose result is its JSON as text alone) that
   * JSON.
   */
  async function callRaw(name, args = {}, meta) {
    const params = { name, arguments: args };
    if (meta) params._meta = meta;
    const res = await request('tools/call', params);
    let out = res.structuredContent;
    if (out === undefined && res.isError) {
      const text = (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
      try { out = JSON.parse(text); } catch { out = undefined; }
    }
    return { out, isError: !!res.isError, content: res.content };
  }
  /** Calls a tool that must not fail; returns its structuredContent. */
  async function call(name, args = {}) {
    const r = await callRaw(name, args);
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.out ?? r.content)}`);
    return r.out;
  }
  const c = {
    endpoint, token, call, callRaw, notifications,
    stderr: () => stderr,
    /** Waits until no adapter is connected (the previous test's is gone). */
    async idle() { await waitFor('the adapter to disconnect', async () => !(await call('capture_status')).adapter); },
    async close() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill('SIGKILL'), 10000);
      await exited;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  t?.after?.(() => c.close());
  return c;
}
