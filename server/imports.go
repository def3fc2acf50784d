package server

import (
	"bytes"
	"context"
	"fmt"

	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/states/include"
)

// parseDefinition parses a definition given over the API: its templates'
// Imports resolve in the server's registry only (registry://name@constraint;
// a file path names nothing on a server), and its Include states are
// expanded into what is stored and run. A definition without Imports is
// parsed through the machine cache.
func (s *Server) parseDefinition(ctx context.Context, data []byte) (*states.Machine, error) {
	if !bytes.Contains(data, []byte(`"Imports"`)) {
		return s.machines.Parse(data)
	}
	return states.ParseWith(ctx, data, states.ParseOptions{Imports: include.RegistryFunc(s.templateOf)})
}

// templateOf reads a registered workflow as a template: the version
// constraint picks, and the lock records which.
func (s *Server) templateOf(ctx context.Context, name, constraint string) ([]byte, string, error) {
	v, err := s.st.ResolveWorkflow(ctx, name, constraint)
	if err != nil {
		return nil, "", err
	}
	return v.Definition, fmt.Sprintf("%s@%d", v.Name, v.Version), nil
}
