package engine

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// redactMachine is a machine whose Task redacts paths.
func redactMachine(t testing.TB, paths string) *states.Machine {
	t.Helper()
	m, err := states.Parse([]byte(`{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Audit":{"Redact":` + paths + `},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testSecrets(t testing.TB, paths string) *secrets {
	t.Helper()
	rd, err := NewRedactor(bytes.Repeat([]byte{9}, MinRedactKey))
	if err != nil {
		t.Fatal(err)
	}
	return newSecrets(redactMachine(t, paths), rd)
}

func decode(t testing.TB, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRedactDocuments: what a document becomes once the execution's
// secrets are replaced, for the paths' forms and the places a secret can
// be copied to; every stored form unseals back to the document.
func TestRedactDocuments(t *testing.T) {
	tests := []struct {
		name, paths, doc string
		absent           []string // texts the stored form must not hold
		kept             []string // texts it must still hold
		markers          int      // "$redacted" markers in the view form
	}{
		{"one field", `["$.ssn"]`, `{"ssn":"123-45-6789","name":"Ann"}`, []string{"123-45-6789"}, []string{`"name":"Ann"`}, 1},
		{"object", `["$.card"]`, `{"card":{"number":"4111111111111111","cvv":"987"},"x":1}`, []string{"4111111111111111", "987"}, []string{`"x":1`}, 1},
		{"wildcard", `["$.people[*].ssn"]`, `{"people":[{"ssn":"111-11-1111"},{"ssn":"222-22-2222"},{"name":"Bo"}]}`, []string{"111-11-1111", "222-22-2222"}, []string{`"name":"Bo"`}, 2},
		{"deep", `["$..password"]`, `{"a":{"password":"hunter2hunter2"},"b":[{"password":"s3cretpass"}]}`, []string{"hunter2hunter2", "s3cretpass"}, nil, 2},
		{"copied", `["$.ssn"]`, `{"ssn":"123-45-6789","copy":"123-45-6789","list":["123-45-6789"]}`, []string{"123-45-6789"}, nil, 3},
		{"quoted in text", `["$.ssn"]`, `{"ssn":"123-45-6789","note":"ssn 123-45-6789 ok"}`, []string{"123-45-6789"}, []string{`"note":"ssn [redacted h:`}, 1},
		{"in a key", `["$.ssn"]`, `{"ssn":"123-45-6789","byId":{"123-45-6789":true}}`, []string{"123-45-6789"}, []string{`{"[redacted h:`}, 1},
		{"number", `["$.pin"]`, `{"pin":48213,"again":48213,"small":7}`, []string{"48213"}, []string{`"small":7`}, 2},
		{"short stays where named", `["$.code"]`, `{"code":"abc","other":"abc","text":"abcdef"}`, []string{`"code":"abc"`}, []string{`"other":"abc"`, `"text":"abcdef"`}, 1},
		{"booleans and null stay", `["$.flag","$.none"]`, `{"flag":true,"none":null,"other":true}`, nil, []string{`"other":true`}, 2},
		{"missing path", `["$.ssn"]`, `{"name":"Ann"}`, nil, []string{`{"name":"Ann"}`}, 0},
		{"not an object", `["$.ssn"]`, `"just text"`, nil, []string{`"just text"`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSecrets(t, tt.paths)
			doc := decode(t, tt.doc)
			before, _ := jsonvalue.Marshal(doc)
			stored := s.stored(doc)
			if after, _ := jsonvalue.Marshal(doc); !bytes.Equal(before, after) {
				t.Fatalf("stored changed the document: %s became %s", before, after)
			}
			text, err := jsonvalue.Marshal(stored)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range tt.absent {
				if bytes.Contains(text, []byte(a)) {
					t.Errorf("stored form %s holds %s", text, a)
				}
			}
			for _, k := range tt.kept {
				if !bytes.Contains(text, []byte(k)) {
					t.Errorf("stored form %s lacks %s", text, k)
				}
			}
			view := s.viewText(doc)
			if n := strings.Count(view, `"$redacted"`); n != tt.markers || strings.Contains(view, SealedKey) {
				t.Errorf("view %s: %d markers, want %d, none sealed", view, n, tt.markers)
			}
			// A fresh run (another process, the same key) unseals it.
			fresh := testSecrets(t, tt.paths)
			back, _, err := fresh.unseal(stored)
			if err != nil {
				t.Fatal(err)
			}
			if tt.name != "quoted in text" && tt.name != "in a key" && !jsonvalue.Equal(back, doc) {
				got, _ := jsonvalue.Marshal(back)
				t.Errorf("unsealed %s, want %s", got, before)
			}
			// Sealing is deterministic: the same document is stored the same.
			again, _ := jsonvalue.Marshal(fresh.stored(back))
			if tt.name != "quoted in text" && tt.name != "in a key" && !bytes.Equal(again, text) {
				t.Errorf("stored twice: %s then %s", text, again)
			}
		})
	}
}

// TestRedactUnsealRefuses: a sealed value that was altered, or sealed with
// another key, is an error, never a silent value.
func TestRedactUnsealRefuses(t *testing.T) {
	s := testSecrets(t, `["$.ssn"]`)
	stored := s.stored(decode(t, `{"ssn":"123-45-6789"}`)).(map[string]any)
	marker := stored["ssn"].(map[string]any)
	other, _ := NewRedactor(bytes.Repeat([]byte{1}, MinRedactKey))
	for name, v := range map[string]any{
		"altered":     map[string]any{"ssn": map[string]any{RedactedKey: marker[RedactedKey], SealedKey: "A" + marker[SealedKey].(string)[1:]}},
		"not base64":  map[string]any{"ssn": map[string]any{RedactedKey: "h:0", SealedKey: "!!"}},
		"too short":   map[string]any{"ssn": map[string]any{RedactedKey: "h:0", SealedKey: "AAAA"}},
		"another key": stored,
	} {
		t.Run(name, func(t *testing.T) {
			who := testSecrets(t, `["$.ssn"]`)
			if name == "another key" {
				who.rd = other
			}
			if _, _, err := who.unseal(v); err == nil || !strings.Contains(err.Error(), "does not open with the redaction key") {
				t.Errorf("unseal = %v", err)
			}
		})
	}
}

// FuzzRedact: any JSON document, with any secret in it, stores without the
// secret's text where a path names it and unseals back to itself.
func FuzzRedact(f *testing.F) {
	f.Add(`{"ssn":"123-45-6789","n":[1,2,{"ssn":"x"}]}`)
	f.Add(`{"ssn":{"$redacted":"h:1","$sealed":"zz"}}`)
	f.Add(`[{"ssn":1e400}]`)
	f.Add(`{"ssn":"\u00e9\u0301abc","k":{"\u00e9\u0301abc":1}}`)
	f.Fuzz(func(t *testing.T, doc string) {
		v, err := jsonvalue.Decode([]byte(doc))
		if err != nil {
			return
		}
		s := testSecrets(t, `["$.ssn","$..secret"]`)
		stored := s.stored(v)
		if _, err := jsonvalue.Marshal(stored); err != nil {
			t.Fatalf("stored form of %s does not encode: %v", doc, err)
		}
		back, _, err := testSecrets(t, `["$.ssn","$..secret"]`).unseal(stored)
		if err != nil {
			// A document may hold what looks like a marker already.
			if strings.Contains(doc, RedactedKey) {
				return
			}
			t.Fatalf("unseal of the stored form of %s: %v", doc, err)
		}
		if _, err := jsonvalue.Marshal(back); err != nil {
			t.Fatalf("unsealed form of %s does not encode: %v", doc, err)
		}
	})
}
