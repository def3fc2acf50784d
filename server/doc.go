// Package server serves the aslrun HTTP API.
package server
