package mcp

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
)

func TestMCPResult(t *testing.T) {
	tests := []struct {
		name    string
		wire    string // the result as the server sends it
		want    any
		wantErr string // the Agent.ToolError's cause
	}{
		{name: "no content", wire: `{"content":[]}`, want: ""},
		{name: "one text", wire: `{"content":[{"type":"text","text":"hi"}]}`, want: "hi"},
		{name: "texts joined", wire: `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, want: "a\nb"},
		{name: "JSON text stays text", wire: `{"content":[{"type":"text","text":"{\"a\":1}"}]}`, want: `{"a":1}`},
		{
			name: "structured content wins",
			wire: `{"content":[{"type":"text","text":"{\"n\":1}"}],"structuredContent":{"n":1,"list":[true,null,"x"]}}`,
			want: map[string]any{"n": json.Number("1"), "list": []any{true, nil, "x"}},
		},
		{name: "structured content not an object", wire: `{"content":[],"structuredContent":[1,2]}`, want: []any{json.Number("1"), json.Number("2")}},
		{
			name: "mixed",
			wire: `{"content":[
				{"type":"text","text":"t"},
				{"type":"image","mimeType":"image/png","data":"AQID"},
				{"type":"audio","mimeType":"audio/wav","data":"BAU="},
				{"type":"resource_link","uri":"file:///a","name":"a","mimeType":"text/plain"},
				{"type":"resource","resource":{"uri":"file:///b","mimeType":"text/plain","text":"bee"}},
				{"type":"resource","resource":{"uri":"file:///c","blob":"AAE="}}]}`,
			want: []any{
				"t",
				map[string]any{"type": "image", "mimeType": "image/png", "data": "AQID"},
				map[string]any{"type": "audio", "mimeType": "audio/wav", "data": "BAU="},
				map[string]any{"type": "resource_link", "uri": "file:///a", "name": "a", "mimeType": "text/plain"},
				map[string]any{"type": "resource", "uri": "file:///b", "mimeType": "text/plain", "text": "bee"},
				map[string]any{"type": "resource", "uri": "file:///c", "blob": "AAE="},
			},
		},
		{name: "error", wire: `{"content":[{"type":"text","text":"no such file"}],"isError":true}`, wantErr: "mcp server s: tool t: no such file"},
		{name: "error without text", wire: `{"content":[],"isError":true}`, wantErr: "mcp server s: tool t: the tool failed without saying why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var res sdk.CallToolResult
			if err := json.Unmarshal([]byte(tt.wire), &res); err != nil {
				t.Fatalf("unmarshal %s: %v", tt.wire, err)
			}
			got, err := result("s", "t", &res)
			if tt.wantErr != "" {
				var ae *asl.Error
				if !errors.As(err, &ae) || ae.Name != asl.ErrAgentToolError || ae.Cause != tt.wantErr {
					t.Errorf("result(%s) error = %v, want %s: %s", tt.wire, err, asl.ErrAgentToolError, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("result(%s): %v", tt.wire, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("result(%s) = %#v, want %#v", tt.wire, got, tt.want)
			}
			// Every result is a JSON value as aslrun keeps them.
			if _, err := jsonvalue.Marshal(got); err != nil {
				t.Errorf("result is not a JSON value: %v", err)
			}
		})
	}
}

// FuzzResult feeds arbitrary server results to the conversion: it must
// return a JSON value or an error, never panic.
func FuzzResult(f *testing.F) {
	f.Add([]byte(`{"content":[{"type":"text","text":"hi"}]}`))
	f.Add([]byte(`{"content":[{"type":"image","mimeType":"image/png","data":"AQID"}],"isError":true}`))
	f.Add([]byte(`{"content":[{"type":"resource","resource":{"uri":"x"}}],"structuredContent":{"a":[1e400]}}`))
	f.Add([]byte(`{"content":[{"type":"resource"}]}`))
	f.Fuzz(func(t *testing.T, wire []byte) {
		var res sdk.CallToolResult
		if json.Unmarshal(wire, &res) != nil {
			return
		}
		got, err := result("s", "t", &res)
		if err != nil {
			return
		}
		if _, err := jsonvalue.Marshal(got); err != nil {
			t.Errorf("result(%s) = %#v, not a JSON value: %v", wire, got, err)
		}
	})
}
