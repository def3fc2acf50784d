package itemio

import (
	"fmt"
	"io"
	"strings"
	"testing"
)

// BenchmarkCSV10k reads 10,000 CSV rows of three columns.
func BenchmarkCSV10k(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("id,fail,text\n")
	for i := range 10000 {
		fmt.Fprintf(&sb, "row%d,no,\"text, %d\"\n", i, i)
	}
	data := sb.String()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		items, _ := Decode(strings.NewReader(data), Format{InputType: CSV})
		for {
			if _, err := items.Next(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
