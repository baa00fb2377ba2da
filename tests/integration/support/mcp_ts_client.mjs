// An independent MCP client on the official TypeScript SDK, driving `merlya mcp serve` over stdio.
// Usage: node mcp_ts_client.mjs MERLYA_BINARY  (MERLYA_HOME and the LLM key come from the environment)
// Prints one JSON object: what each step saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const merlya = process.argv[2];
const out = {};
const transport = new StdioClientTransport({ command: merlya, args: ["mcp", "serve"], env: process.env, stderr: "pipe" });
const client = new Client({ name: "ts-sdk-test", version: "1.0.0" }, { capabilities: { elicitation: {} } });
// The person behind this client: refuses the first change it is asked about, approves the second.
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  asked.push(request.params.message);
  return { action: "accept", content: { approve: asked.length > 1 } };
});
await client.connect(transport);
out.server = client.getServerVersion();
const { tools } = await client.listTools();
out.tools = tools.map((t) => ({ name: t.name, readOnly: t.annotations?.readOnlyHint ?? null, required: t.inputSchema.required ?? [] }));
const hosts = await client.callTool({ name: "list_hosts", arguments: {} });
out.hosts = JSON.parse(hosts.content[0].text).map((h) => h.name);
const refused = await client.callTool({ name: "run_readonly", arguments: { targets: "web01", command: "rm -rf /srv/data" } });
out.refused = { isError: refused.isError ?? false, text: refused.content[0].text };
const answered = await client.callTool({ name: "ask", arguments: { task: "say hello" } });
out.answer = answered.content[0].text;

// Cancellation: abort an `ask` whose specialist is running `sleep 30` on a host.
const progress = [];
const abort = new AbortController();
const started = Date.now();
const slow = client.callTool({ name: "ask", arguments: { task: "sleep on web01" } }, undefined, {
  signal: abort.signal,
  timeout: 120000,
  onprogress: (p) => {
    progress.push(p.message ?? "");
    if ((p.message ?? "").includes("sleep 30")) setTimeout(() => abort.abort("the operator cancelled"), 1500);
  },
});
try {
  await slow;
  out.cancelled = "not cancelled";
} catch (e) {
  out.cancelled = String(e);
}
out.cancelledAfterMs = Date.now() - started;
out.progress = progress;
// The server is still there after the cancellation.
const again = await client.callTool({ name: "list_hosts", arguments: { tag: "web" } });
out.afterCancel = JSON.parse(again.content[0].text).map((h) => h.name);
// A change proposed by the served agent, approved (or not) through elicitation.
const denied = await client.callTool({ name: "ask", arguments: { task: "create the marker on web01" } });
out.denied = denied.content[0].text;
const approved = await client.callTool({ name: "ask", arguments: { task: "create the marker on web01" } });
out.approved = approved.content[0].text;
out.elicitations = asked;
await client.close();
console.log(JSON.stringify(out));
