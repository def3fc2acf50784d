// Package workflows holds example workflows that run as they are: each
// folder has a definition (workflow.json), a mock file scripting its agents
// (mock.json), an input (input.json) and the output it produces
// (output.json). The package's test parses and runs every one of them.
package workflows
