// Drives a server's /mcp with the official MCP TypeScript SDK's Streamable
// HTTP client (the SDK MCP_SDK names, installed by scripts/mcp-sdk). Reads
// one JSON job on stdin: {url, token, clientName, headers, calls: [{tool,
// args}]}; writes one JSON report on stdout: the negotiated protocol
// version, the session id, the tools listed, and each call's result. The
// SDK's client checks every structured result against the tool's output
// schema itself (callTool throws when it does not match).
import { pathToFileURL } from "node:url";
import { join } from "node:path";

const sdk = (rel) => import(pathToFileURL(join(process.env.MCP_SDK, "node_modules/@modelcontextprotocol/sdk/dist/esm", rel)).href);
const { Client } = await sdk("client/index.js");
const { StreamableHTTPClientTransport } = await sdk("client/streamableHttp.js");

let input = "";
for await (const chunk of process.stdin) input += chunk;
const job = JSON.parse(input);
const report = { calls: [] };
const headers = { ...(job.headers || {}) };
if (job.token) headers.Authorization = `Bearer ${job.token}`;
const transport = new StreamableHTTPClientTransport(new URL(job.url), { requestInit: { headers } });
const client = new Client({ name: job.clientName || "mcp-sdk-test", version: "1.0.0" });
try {
  await client.connect(transport);
} catch (err) {
  report.connectError = String(err && err.message || err);
  report.connectCode = err && err.code;
  process.stdout.write(JSON.stringify(report));
  process.exit(0);
}
report.sessionId = transport.sessionId;
report.protocolVersion = transport.protocolVersion;
report.tools = (await client.listTools()).tools.map((t) => t.name);
for (const c of job.calls || []) {
  try {
    const res = await client.callTool({ name: c.tool, arguments: c.args || {} });
    report.calls.push({ tool: c.tool, isError: !!res.isError, structured: res.structuredContent ?? null, text: res.content?.[0]?.text ?? "" });
  } catch (err) {
    report.calls.push({ tool: c.tool, thrown: String(err && err.message || err) });
  }
}
if (job.terminate) await transport.terminateSession();
await client.close();
process.stdout.write(JSON.stringify(report));
