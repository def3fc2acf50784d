package states

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// distDef returns a definition with one Map state named Each whose fields
// are extra and whose processor runs in mode.
func distDef(t *testing.T, mode, extra string) []byte {
	t.Helper()
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map",` + extra + `
		"ItemProcessor":{"ProcessorConfig":{"Mode":"` + mode + `"},"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}}}`
	if !json.Valid([]byte(def)) {
		t.Fatalf("test definition is not JSON: %s", def)
	}
	return []byte(def)
}

const csvReader = `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"GIVEN","CSVHeaders":["a","b"],"MaxItems":10},"Parameters":{"Bucket":"b","Key.$":"$.key"}},`

func TestParseDistributed(t *testing.T) {
	m, err := Parse(distDef(t, "DISTRIBUTED", csvReader+`
		"ItemBatcher":{"MaxItemsPerBatch":5,"MaxInputBytesPerBatchPath":"$.bytes","BatchInput":{"run.$":"$.run"}},
		"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"p"},"WriterConfig":{"OutputType":"JSONL","Transformation":"COMPACT"}},
		"Label":"rows","ToleratedFailurePercentage":5,`))
	if err != nil {
		t.Fatal(err)
	}
	s := m.States["Each"].(*Map)
	r, b, w := s.ItemReader, s.ItemBatcher, s.ResultWriter
	if r == nil || r.InputType != "CSV" || r.CSVHeaderLocation != "GIVEN" || len(r.CSVHeaders) != 2 || r.MaxItems != 10 || r.Parameters == nil {
		t.Errorf("ItemReader = %+v", r)
	}
	if b == nil || b.MaxItemsPerBatch != 5 || b.MaxInputBytesPerBatchPath == nil || b.BatchInput == nil {
		t.Errorf("ItemBatcher = %+v", b)
	}
	if w == nil || w.OutputType != "JSONL" || w.Transformation != "COMPACT" || w.Parameters == nil {
		t.Errorf("ResultWriter = %+v", w)
	}
	def, ok := s.Processor.Definition.(map[string]any)
	if !ok || def["ProcessorConfig"] != nil || def["StartAt"] != "X" {
		t.Errorf("Processor.Definition = %v, want the ItemProcessor without ProcessorConfig", s.Processor.Definition)
	}
	if _, err := ParseValue(def); err != nil {
		t.Errorf("the processor definition does not parse on its own: %v", err)
	}
}

func TestParseDistributedJSONata(t *testing.T) {
	def := `{"QueryLanguage":"JSONata","StartAt":"Each","States":{"Each":{"Type":"Map",
		"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Arguments":{"Bucket":"{% $states.input.bucket %}","Prefix":"in/"},"ReaderConfig":{"MaxItems":"{% $states.input.max %}"}},
		"ItemBatcher":{"MaxItemsPerBatch":"{% 2 %}","BatchInput":{"at":"{% $states.input.at %}"}},
		"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}}}`
	m, err := Parse([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	s := m.States["Each"].(*Map)
	if s.ItemReader.Arguments == nil || s.ItemReader.MaxItemsExpr == nil || s.ItemBatcher.MaxItemsPerBatchExpr == nil || s.ItemBatcher.BatchInputJSONata == nil {
		t.Errorf("JSONata Distributed Map = %+v %+v", s.ItemReader, s.ItemBatcher)
	}
	if d := s.Processor.Definition.(map[string]any); d["QueryLanguage"] != JSONata {
		t.Errorf("processor definition QueryLanguage = %v, want JSONata (inherited, made explicit)", d["QueryLanguage"])
	}
}

// TestParseDistributedRefuses checks every refusal, each at its pointer.
func TestParseDistributedRefuses(t *testing.T) {
	const at = "/States/Each"
	cases := []struct {
		name, mode, extra string
		ptr, msg          string
	}{
		{"reader on inline", "INLINE", csvReader, "/ItemReader", "only valid in a Distributed Map"},
		{"batcher on inline", "INLINE", `"ItemBatcher":{"MaxItemsPerBatch":2},`, "/ItemBatcher", "only valid in a Distributed Map"},
		{"writer on inline", "INLINE", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"b","Prefix":"p"}},`, "/ResultWriter", "only valid in a Distributed Map"},
		{"reader resource", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"b"}},`, "/ItemReader/Resource", "is not supported"},
		{"reader without config", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader", "missing required field ReaderConfig"},
		{"reader without key", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON"},"Parameters":{"Bucket":"b"}},`, "/ItemReader/Parameters", "must give Key"},
		{"reader without parameters", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2"},`, "/ItemReader", "missing required field Parameters"},
		{"reader arguments in jsonpath", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"b"},"Arguments":{}},`, "/ItemReader/Arguments", "JSONata field"},
		{"bad input type", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"XML"},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig/InputType", "must be one of JSON, JSONL or CSV"},
		{"manifest", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"MANIFEST"},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig/InputType", "MANIFEST"},
		{"given without headers", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"GIVEN"},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig", "CSVHeaders is required"},
		{"headers with first row", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaders":["a"]},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig/CSVHeaders", "only valid when CSVHeaderLocation is GIVEN"},
		{"csv field on json", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON","CSVHeaderLocation":"FIRST_ROW"},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig/CSVHeaderLocation", "only valid when InputType is CSV"},
		{"repeated header", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV","CSVHeaderLocation":"GIVEN","CSVHeaders":["a","a"]},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig/CSVHeaders", "twice"},
		{"max items zero", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON","MaxItems":0},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig/MaxItems", ""},
		{"max items and path", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"JSON","MaxItems":3,"MaxItemsPath":"$.n"},"Parameters":{"Bucket":"b","Key":"k"}},`, "/ItemReader/ReaderConfig/MaxItemsPath", "cannot both be set"},
		{"input type on listing", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","ReaderConfig":{"InputType":"JSON"},"Parameters":{"Bucket":"b"}},`, "/ItemReader/ReaderConfig/InputType", "not valid with"},
		{"unknown reader field", "DISTRIBUTED", `"ItemReader":{"Resource":"arn:aws:states:::s3:listObjectsV2","Parameters":{"Bucket":"b"},"Extra":1},`, "/ItemReader/Extra", ""},
		{"reader and items path", "DISTRIBUTED", `"ItemsPath":"$.x",` + csvReader, "/ItemsPath", "cannot be used with ItemReader"},
		{"both batch maxima forms", "DISTRIBUTED", `"ItemBatcher":{"MaxItemsPerBatch":2,"MaxItemsPerBatchPath":"$.n"},`, "/ItemBatcher/MaxItemsPerBatchPath", "cannot both be set"},
		{"empty batcher", "DISTRIBUTED", `"ItemBatcher":{"BatchInput":{}},`, "/ItemBatcher", "must set MaxItemsPerBatch or MaxInputBytesPerBatch"},
		{"batch bytes too big", "DISTRIBUTED", `"ItemBatcher":{"MaxInputBytesPerBatch":262145},`, "/ItemBatcher/MaxInputBytesPerBatch", ""},
		{"batch input not object", "DISTRIBUTED", `"ItemBatcher":{"MaxItemsPerBatch":2,"BatchInput":"x"},`, "/ItemBatcher/BatchInput", "must be an object"},
		{"writer resource", "DISTRIBUTED", `"ResultWriter":{"Resource":"arn:aws:states:::s3:getObject","Parameters":{"Bucket":"b","Prefix":"p"}},`, "/ResultWriter/Resource", "not supported"},
		{"writer without prefix", "DISTRIBUTED", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"b"}},`, "/ResultWriter/Parameters", "must give Prefix"},
		{"writer empty", "DISTRIBUTED", `"ResultWriter":{},`, "/ResultWriter", "must give Resource"},
		{"writer without location", "DISTRIBUTED", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","WriterConfig":{"Transformation":"COMPACT"}},`, "/ResultWriter", "missing required field Parameters"},
		{"writer without resource", "DISTRIBUTED", `"ResultWriter":{"Parameters":{"Bucket":"b","Prefix":"p"}},`, "/ResultWriter", "missing required field Resource"},
		{"writer config", "DISTRIBUTED", `"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"b","Prefix":"p"},"WriterConfig":{"Transformation":"ZIP"}},`, "/ResultWriter/WriterConfig/Transformation", ""},
		{"label too long", "DISTRIBUTED", `"Label":"` + strings.Repeat("x", 41) + `",`, "/Label", "at most 40"},
		{"label character", "DISTRIBUTED", `"Label":"a:b",`, "/Label", "must not contain"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(distDef(t, c.mode, c.extra))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse = %v, want an ErrorList", err)
			}
			for _, e := range list {
				if e.Pointer == at+c.ptr && e.State == "Each" && strings.Contains(e.Msg, c.msg) {
					return
				}
			}
			t.Errorf("Parse errors:\n%v\nwant one at %s%s containing %q", err, at, c.ptr, c.msg)
		})
	}
}

// TestParseWriterConfigAlone accepts a ResultWriter with only a
// WriterConfig (the Map's result is its children's, transformed).
func TestParseWriterConfigAlone(t *testing.T) {
	m, err := Parse(distDef(t, "DISTRIBUTED", `"ResultWriter":{"WriterConfig":{"Transformation":"FLATTEN","OutputType":"JSON"}},`))
	if err != nil {
		t.Fatal(err)
	}
	w := m.States["Each"].(*Map).ResultWriter
	if w == nil || w.Parameters != nil || w.Arguments != nil || w.Transformation != "FLATTEN" || w.OutputType != "JSON" {
		t.Errorf("ResultWriter = %+v, want FLATTEN without a location", w)
	}
}
