package server

import (
	"bytes"
	"io"
	"log/slog"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
