// Package builtin holds the agents people can use without writing Go: an
// agent for any OpenAI-compatible chat-completions endpoint (LLM), one that
// runs a command speaking JSON on stdin and stdout (Exec), one that POSTs
// JSON to a URL (HTTP), and the agents file that configures them for the
// command line (ParseAgentsFile, AgentsFile.Register, AgentsFile.Resolved).
//
// Every agent is safe for concurrent use and honours its context: a
// cancelled call returns the context's error. Failures are *asl.Error values
// with the names the ASL specification gives them (States.RateLimitExceeded,
// Agent.ModelError, Agent.InvalidOutput, States.Timeout, or a name the
// command or the endpoint chose), so Retry and Catch can match them; a
// configuration problem found at call time (an unset environment variable,
// a command that cannot start) is a plain error, which the engine raises as
// States.TaskFailed.
//
// The agents reach only what their owner granted. The llm and http agents
// connect through an egress.Policy (LLMConfig.Hosts, HTTPConfig.Hosts, the
// agents file's Hosts): public addresses, and loopback, private or
// link-local ones only when listed, checked on the address connected to
// and on every redirect; a refused host fails the call with
// States.Permissions. An exec agent's command cannot outlive its call nor
// aslrun: on Linux it runs in a PID namespace of its own with a
// parent-death signal (see Exec).
//
// Secrets stay out of configurations: an API key is read from the
// environment at call time (LLMConfig.APIKeyEnv), and `${VAR}` in an exec
// agent's Env and an http agent's Headers is expanded from the environment
// at call time too, so a configuration holds only the names of the
// variables. An agents file, which the command line stores with each
// execution, must do so: it is refused when it writes an API key, a token
// in a header such as Authorization, or the value of an Env entry named
// like a secret itself (see AgentsFile); Resolved, the text stored, holds
// the references and never their values.
package builtin
