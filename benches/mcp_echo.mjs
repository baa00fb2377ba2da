// Times `echo` calls to server-everything through the official TypeScript SDK (the direct client).
// Usage: node mcp_echo.mjs SERVER_BINARY ROUNDS  → prints the median milliseconds of one call.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [server, rounds] = [process.argv[2], Number(process.argv[3] ?? 200)];
const client = new Client({ name: "bench", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: server, args: [], stderr: "ignore" }));
const times = [];
for (let i = 0; i < rounds + 20; i++) {
  const t = process.hrtime.bigint();
  await client.callTool({ name: "echo", arguments: { message: `m${i}` } });
  if (i >= 20) times.push(Number(process.hrtime.bigint() - t) / 1e6);
}
times.sort((a, b) => a - b);
console.log(times[Math.floor(times.length / 2)].toFixed(3));
await client.close();
