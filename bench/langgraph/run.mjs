// Runs the loop of bench/workflows/loop.json as a LangGraph JS StateGraph
// and prints, as one line of JSON, how long it took and what it returned
// (the measurement bench/aws-local/run.mjs prints):
//
//   node run.mjs --modules DIR --mock FILE --input FILE --checkpointer memory|sqlite|postgres
//                [--sqlite FILE] [--postgres URL]
//
// DIR is the node_modules folder the packages of package.json are
// installed in (bench/compare.sh installs them into bench/.node). The
// input is the loop's: {"doc": a 1 KiB document, "i": 0, "n": turns}. One
// turn is the nodes Prepare, Work (the mocked agent: it returns what the
// mock file's first response of Work returns), Review and Tally, each its
// own super-step, and the conditional edge Check back to Prepare until i
// reaches n. The checkpointer is MemorySaver, SqliteSaver on --sqlite (a
// file that should not exist yet) or PostgresSaver on --postgres (an empty
// database: its tables are made here). The graph runs with durability
// "sync": each super-step's checkpoint is written before the next
// super-step starts, as aslrun's strict mode commits before it goes on.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    modules: { type: 'string' },
    mock: { type: 'string' },
    input: { type: 'string' },
    checkpointer: { type: 'string' },
    sqlite: { type: 'string' },
    postgres: { type: 'string' },
  },
});
for (const name of ['modules', 'mock', 'input', 'checkpointer']) {
  if (!args[name]) {
    throw new Error(`--${name} is required`);
  }
}

// load imports an installed package's ES module entry point.
async function load(name) {
  const dir = join(args.modules, ...name.split('/'));
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const entry = pkg.exports['.'].import;
  const file = typeof entry === 'string' ? entry : entry.default;
  return { pkg, module: await import(pathToFileURL(join(dir, file)).href) };
}

const { pkg, module: lg } = await load('@langchain/langgraph');
const { Annotation, StateGraph, MemorySaver, START, END } = lg;

let checkpointer;
switch (args.checkpointer) {
  case 'memory':
    checkpointer = new MemorySaver();
    break;
  case 'sqlite': {
    if (!args.sqlite) throw new Error('--checkpointer sqlite needs --sqlite FILE');
    const { SqliteSaver } = (await load('@langchain/langgraph-checkpoint-sqlite')).module;
    checkpointer = SqliteSaver.fromConnString(args.sqlite);
    break;
  }
  case 'postgres': {
    if (!args.postgres) throw new Error('--checkpointer postgres needs --postgres URL');
    const { PostgresSaver } = (await load('@langchain/langgraph-checkpoint-postgres')).module;
    checkpointer = PostgresSaver.fromConnString(args.postgres);
    await checkpointer.setup();
    break;
  }
  default:
    throw new Error(`--checkpointer ${args.checkpointer}: want memory, sqlite or postgres`);
}

const mocks = JSON.parse(readFileSync(args.mock, 'utf8'));
const input = JSON.parse(readFileSync(args.input, 'utf8'));

// The mocked agent returns a fresh copy of the Return of Work's first
// response, as a remote agent's reply would be.
const work = mocks.Work?.[Object.keys(mocks.Work ?? {})[0]];
if (!work || !('Return' in work)) {
  throw new Error('the mock file must Return a result for Work');
}
const workResult = JSON.stringify(work.Return);
async function agent(request) {
  if (typeof request.subject !== 'string') throw new Error('Work: the request has no subject');
  return JSON.parse(workResult);
}

// The state: what loop.json's states read and write. The output is what
// the workflow returns: Tally keeps doc, work, review, n and i.
const value = () => Annotation();
const Output = Annotation.Root({ doc: value(), work: value(), review: value(), n: value(), i: value() });
const State = Annotation.Root({ ...Output.spec, request: value() });

const graph = new StateGraph({ state: State, output: Output })
  .addNode('Prepare', (s) => ({ request: { subject: s.doc.ticket.subject, owner: s.doc.owner.name, turn: s.i } }))
  .addNode('Work', async (s) => ({ work: await agent(s.request) }))
  .addNode('Review', () => ({ review: { approved: true, by: 'reviewer' } }))
  .addNode('Tally', (s) => ({ i: s.i + 1 }))
  .addEdge(START, 'Prepare')
  .addEdge('Prepare', 'Work')
  .addEdge('Work', 'Review')
  .addEdge('Review', 'Tally')
  .addConditionalEdges('Tally', (s) => (s.i < s.n ? 'Prepare' : END), ['Prepare', END])
  .compile({ checkpointer });

// Four super-steps a turn, and the input's: the recursion limit (25 by
// default) must be above them.
const config = {
  configurable: { thread_id: 'loop' },
  recursionLimit: 4 * input.n + 10,
  durability: 'sync',
};

// On PostgreSQL, the server's write-ahead log written during the run and
// what the database's tables grew by (bench/compare's walSQL, tablesSQL).
const pg = args.checkpointer === 'postgres' ? checkpointer.pool : null;
const tables = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS n
  FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'm') AND s.nspname NOT IN ('pg_catalog', 'information_schema')`;
const lsn = pg && (await pg.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn;
const tablesBefore = pg && Number((await pg.query(tables)).rows[0].n);

const start = process.hrtime.bigint();
const output = await graph.invoke(input, config);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const result = { seconds, node: process.version, version: pkg.version, output };
if (pg) {
  const wal = await pg.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint AS n', [lsn]);
  result.walBytes = Number(wal.rows[0].n);
  result.tableBytes = Number((await pg.query(tables)).rows[0].n) - tablesBefore;
  await checkpointer.end();
}
if (args.checkpointer === 'sqlite') checkpointer.db.close();
process.stdout.write(JSON.stringify(result) + '\n');
