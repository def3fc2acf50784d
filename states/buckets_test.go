package states

import (
	"fmt"
	"slices"
	"testing"
)

// TestFileBuckets finds the literal file:// Buckets of a definition, at
// their pointers, nested machines included; computed and named buckets
// are not reported.
func TestFileBuckets(t *testing.T) {
	const reader = `"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Parameters":{"Bucket":%s,"Key":"k.csv"}}`
	processor := `"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED"},"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`
	dist := func(bucket, writer string) string {
		return `{"Type":"Map",` + fmt.Sprintf(reader, bucket) + writer + `,` + processor + `,"End":true}`
	}
	for _, c := range []struct {
		name string
		def  string
		want []string
	}{
		{"named", `{"StartAt":"M","States":{"M":` + dist(`"orders"`, "") + `}}`, nil},
		{"absolute", `{"StartAt":"M","States":{"M":` + dist(`"file:///etc"`, "") + `}}`, []string{"/States/M/ItemReader/Parameters/Bucket"}},
		{"relative", `{"StartAt":"M","States":{"M":` + dist(`"file://../.."`, "") + `}}`, []string{"/States/M/ItemReader/Parameters/Bucket"}},
		{"computed", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Parameters":{"Bucket.$":"$.b","Key":"k"}},` + processor + `,"End":true}}}`, nil},
		{"writer", `{"StartAt":"M","States":{"M":` + dist(`"in"`, `,"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"file:///tmp/out","Prefix":"p"}}`) + `}}`, []string{"/States/M/ResultWriter/Parameters/Bucket"}},
		{"jsonata literal", `{"QueryLanguage":"JSONata","StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Arguments":{"Bucket":"file:///etc","Key":"passwd"}},` + processor + `,"End":true}}}`, []string{"/States/M/ItemReader/Arguments/Bucket"}},
		{"jsonata computed", `{"QueryLanguage":"JSONata","StartAt":"M","States":{"M":{"Type":"Map","ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Arguments":{"Bucket":"{% 'file:///etc' %}","Key":"passwd"}},` + processor + `,"End":true}}}`, nil},
		{"nested", `{"StartAt":"Both","States":{"Both":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"M","States":{"M":` + dist(`"file:///root"`, "") + `}}]}}}`, []string{"/States/Both/Branches/0/States/M/ItemReader/Parameters/Bucket"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Parse([]byte(c.def))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range m.FileBuckets() {
				got = append(got, e.Pointer)
				if e.State != "M" {
					t.Errorf("problem %v names state %q, want M", e, e.State)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("FileBuckets() at %q, want %q", got, c.want)
			}
			if (m.FileBuckets().Err() == nil) != (len(c.want) == 0) {
				t.Errorf("FileBuckets().Err() = %v", m.FileBuckets().Err())
			}
		})
	}
}
