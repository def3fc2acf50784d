package server

// Long payloads on the execution page: a document of megabytes, shown in
// every event that carries it, would make a page of tens of megabytes.
// The page shows the first maxShown bytes of each, says how much it
// left out, and links to the whole as JSON (the raw routes below, behind
// the same sign-in as the page).

import (
	"fmt"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// maxShown is how many bytes of one payload (an event's input, output,
// detail or cause, the execution's output or cause, a state's input, a
// change's value) the execution page shows.
const maxShown = 64 << 10

// payloadView is a payload as the execution page shows it: Text, cut to
// maxShown bytes, and when it was cut, how many bytes were left out of
// how many, and where the whole is.
type payloadView struct {
	Text      string
	Cut, Size int
	Href      string
}

// String is the text shown, for templates that print the view as is.
func (p payloadView) String() string { return p.Text }

// cut shows text, cut at maxShown bytes (on a character boundary) with
// href as the link to the whole.
func cut(text, href string) payloadView {
	if len(text) <= maxShown {
		return payloadView{Text: text}
	}
	n := maxShown
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return payloadView{Text: text[:n], Cut: len(text) - n, Size: len(text), Href: href}
}

// Note says how much of the payload the page leaves out.
func (p payloadView) Note() string {
	return fmt.Sprintf("%s of %s shown, %s cut", byteSize(p.Size-p.Cut), byteSize(p.Size), byteSize(p.Cut))
}

// byteSize writes a size for a reader: "2.9 MB", "65.5 kB", "512 bytes".
func byteSize(n int) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return strconv.Itoa(n) + " bytes"
}

// eventFields are the parts of an event the raw route serves.
var eventFields = map[string]func(engine.Event) any{
	"input":  func(ev engine.Event) any { return ev.Input },
	"output": func(ev engine.Event) any { return ev.Output },
	"detail": func(ev engine.Event) any { return ev.Detail },
	"cause":  func(ev engine.Event) any { return ev.Cause },
}

// rawEvent serves one part of one event of an execution's history
// (GET /executions/{id}/events/{seq}/{field}, seq from 1) as JSON, whole.
func (s *Server) rawEvent(w http.ResponseWriter, r *http.Request) error {
	id, field := r.PathValue("id"), r.PathValue("field")
	part, ok := eventFields[field]
	if !ok {
		return &problem{status: http.StatusNotFound, kind: "not-found", title: "not found", detail: fmt.Sprintf("an event has no part %q: input, output, detail or cause", field)}
	}
	seq, err := strconv.Atoi(r.PathValue("seq"))
	if err != nil || seq < 1 {
		return &problem{status: http.StatusNotFound, kind: "not-found", title: "not found", detail: fmt.Sprintf("%q is not an event number (1, 2, …)", r.PathValue("seq"))}
	}
	events, err := s.st.History(r.Context(), id)
	if err != nil {
		return err
	}
	if seq > len(events) {
		return &problem{status: http.StatusNotFound, kind: "not-found", title: "not found", detail: fmt.Sprintf("execution %s has %d events, not %d", id, len(events), seq)}
	}
	return writeRaw(w, part(events[seq-1]))
}

// rawExecution serves the execution's output, its cause, or the input of
// the state a redrive runs again (GET /executions/{id}/raw/{field}) as
// JSON, whole.
func (s *Server) rawExecution(w http.ResponseWriter, r *http.Request) error {
	id, field := r.PathValue("id"), r.PathValue("field")
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	var v any
	switch field {
	case "output":
		v = e.Output
	case "cause":
		v = e.Cause
	case "redrive-input":
		if top := e.Progress.Scopes[""]; top != nil {
			v = top.Doc
		}
	default:
		return &problem{status: http.StatusNotFound, kind: "not-found", title: "not found", detail: fmt.Sprintf("an execution has no part %q: output, cause or redrive-input", field)}
	}
	return writeRaw(w, v)
}

// writeRaw writes v as JSON, numbers as they were recorded.
func writeRaw(w http.ResponseWriter, v any) error {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	// A write fails only when the reader has gone: nothing to tell it.
	w.Write(b)
	return nil
}
