// An independent MCP client of `cairn mcp`: the TypeScript SDK over stdio.
// Usage: node client.mjs CAIRN_BINARY DATA_DIR — prints one JSON report.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { CallToolResultSchema } from "@modelcontextprotocol/sdk/types.js";

const [bin, data] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--data", data],
  env: { PATH: process.env.PATH, HOME: data },
  stderr: "inherit",
});
const client = new Client({ name: "ts-test-client", version: "1.0.0" });
await client.connect(transport);

const tools = (await client.listTools()).tools.map((t) => t.name);
// Progress as it arrives on the wire, before the call's response: the SDK
// runs notification handlers asynchronously and drops those it reaches
// after the response (as an unknown token), so onprogress alone would
// depend on timing.
const progress = [];
let answered = false;
const deliver = transport.onmessage;
transport.onmessage = (m) => {
  if (m.method === "notifications/progress" && !answered) progress.push(m.params.message ?? "");
  if (m.id !== undefined && m.method === undefined) answered = true;
  deliver(m);
};
const run = await client.callTool(
  {
    name: "run_agent",
    arguments: {
      prompt: "do the demo",
      model: "scripted:demo",
      tools: ["write_file", "list_dir", "read_file", "bash"],
    },
  },
  CallToolResultSchema,
  { onprogress: () => {}, timeout: 120000 },
);
const s = run.structuredContent ?? {};
const again = await client.callTool({
  name: "get_result",
  arguments: { session_id: s.session_id, submission_id: s.submission_id },
});
await client.close();
process.stdout.write(
  JSON.stringify({ tools, progress, run, again: again.content.map((c) => c.text ?? "").join("") }),
);
