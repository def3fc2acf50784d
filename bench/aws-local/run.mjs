// Runs one of bench/workflows on aws-local-stepfunctions and prints, as one
// line of JSON, how long it took and what it returned:
//
//   node run.mjs --modules DIR --workflow FILE --mock FILE --input FILE [--executions N]
//
// DIR is the node_modules folder aws-local-stepfunctions is installed in.
// The workflows name agents (a Task's "Agent"), as aslrun runs them; this
// interpreter wants a Lambda ARN in "Resource" instead, so every Task gets
// one, and a local handler (taskResourceLocalHandlers, keyed by state name)
// that returns what the mock file's first response of that agent returns.
// With --executions N, N executions of the same input run at once (Promise.all)
// and the output is the list of their outputs.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    modules: { type: 'string' },
    workflow: { type: 'string' },
    mock: { type: 'string' },
    input: { type: 'string' },
    executions: { type: 'string', default: '1' },
  },
});
for (const name of ['modules', 'workflow', 'mock', 'input']) {
  if (!args[name]) {
    throw new Error(`--${name} is required`);
  }
}
const executions = Number.parseInt(args.executions, 10);
if (!(executions >= 1)) {
  throw new Error(`--executions ${args.executions}: want a positive integer`);
}

const pkg = JSON.parse(readFileSync(join(args.modules, 'aws-local-stepfunctions', 'package.json'), 'utf8'));
const { StateMachine } = await import(pathToFileURL(join(args.modules, 'aws-local-stepfunctions', pkg.exports.import)).href);

const definition = JSON.parse(readFileSync(args.workflow, 'utf8'));
const mocks = JSON.parse(readFileSync(args.mock, 'utf8'));
const input = JSON.parse(readFileSync(args.input, 'utf8'));

// firstReturn is the Return of an agent's first mocked response.
function firstReturn(agent) {
  const responses = mocks[agent];
  if (!responses) {
    throw new Error(`agent ${agent} is not in the mock file`);
  }
  const first = Object.keys(responses).sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10))[0];
  if (!('Return' in responses[first])) {
    throw new Error(`agent ${agent}: the first response must Return a value`);
  }
  return JSON.stringify(responses[first].Return);
}

// toResources rewrites the Tasks of a machine (and of its nested machines)
// in place and registers their handlers. A handler returns a fresh copy of
// the mocked result, as a Lambda's response would be.
const handlers = {};
function toResources(machine) {
  for (const [name, state] of Object.entries(machine.States)) {
    if (state.Type === 'Task') {
      const result = firstReturn(state.Agent);
      state.Resource = `arn:aws:lambda:us-east-1:123456789012:function:${state.Agent}`;
      delete state.Agent;
      handlers[name] = async () => JSON.parse(result);
    }
    if (state.ItemProcessor) toResources(state.ItemProcessor);
    if (state.Iterator) toResources(state.Iterator);
    for (const branch of state.Branches ?? []) toResources(branch);
  }
}
toResources(definition);

const machine = new StateMachine(definition);
const options = { overrides: { taskResourceLocalHandlers: handlers } };
const start = process.hrtime.bigint();
const outputs = await Promise.all(Array.from({ length: executions }, () => machine.run(input, options).result));
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const output = executions === 1 ? outputs[0] : outputs;
process.stdout.write(JSON.stringify({ seconds, node: process.version, version: pkg.version, output }) + '\n');
