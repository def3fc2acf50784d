package jsonpath

import (
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// filterDoc holds values of every JSON type under "v", one per row, each row
// with an id to name it in results.
const filterDoc = `{
  "limit": 10,
  "name": "beta",
  "rows": [
    {"id": "int", "v": 10, "w": 10.0},
    {"id": "small", "v": 2, "w": 3},
    {"id": "neg", "v": -1.5e1, "w": -15},
    {"id": "big", "v": 123456789012345678901234567890, "w": 1},
    {"id": "str", "v": "beta", "w": "Beta"},
    {"id": "num-str", "v": "10", "w": "x"},
    {"id": "true", "v": true},
    {"id": "false", "v": false},
    {"id": "null", "v": null},
    {"id": "arr", "v": [1, "a"]},
    {"id": "obj", "v": {"k": 1}},
    {"id": "none"}
  ]
}`

func TestFilters(t *testing.T) {
	doc := decode(t, filterDoc)
	tests := []struct {
		filter string
		want   string // ids of the selected rows
	}{
		// == and != compare numbers by value and never across types.
		{"@.v == 10", `["int"]`},
		{"@.v == 10.00", `["int"]`},
		{"@.v == @.w", `["int","neg"]`},
		{"@.v == -15", `["neg"]`},
		{"@.v == 123456789012345678901234567890", `["big"]`},
		{"@.v == 'beta'", `["str"]`},
		{`@.v == "10"`, `["num-str"]`},
		{"@.v == true", `["true"]`},
		{"@.v == false", `["false"]`},
		{"@.v == null", `["null"]`},
		{"@.v == $.name", `["str"]`},
		{"@.v == $.limit", `["int"]`},
		{"@.v == $.nowhere", `[]`},
		{"@.v != 10", `["small","neg","big","str","num-str","true","false","null","arr","obj","none"]`},
		{"@.v != 'beta' && @.v != null", `["int","small","neg","big","num-str","true","false","arr","obj","none"]`},
		// Orderings: numbers by value, strings as strings, nothing else.
		{"@.v < 10", `["small","neg"]`},
		{"@.v <= 10", `["int","small","neg"]`},
		{"@.v > 10", `["big"]`},
		{"@.v >= 10", `["int","big"]`},
		{"@.v > -20 && @.v < 3", `["small","neg"]`},
		{"@.v < 'c'", `["str","num-str"]`},
		{"@.v >= 'beta'", `["str"]`},
		{"@.v > @.w", `["big","str"]`},
		{"@.v < true", `[]`},
		{"@.v > null", `[]`},
		// Regular expressions match the whole string.
		{"@.v =~ /bet/", `[]`},
		{"@.v =~ /b.*a/", `["str"]`},
		{"@.w =~ /beta/i", `["str"]`},
		{"@.w =~ /beta/", `[]`},
		{"@.v =~ /1\\d/", `["int","num-str"]`},
		{"@.v =~ /tru./", `["true"]`},
		{`@.id =~ /n.*\/?[a-z]*/`, `["neg","num-str","null","none"]`},
		// in and nin.
		{"@.v in [2, 'beta', null]", `["small","str","null"]`},
		{"@.v in [10.0]", `["int"]`},
		{"@.v in []", `[]`},
		{"@.v in $.rows[0].v", `[]`},
		{"@.v nin [2, 'beta', null, true, false]", `["int","neg","big","num-str","arr","obj","none"]`},
		{"@.id in ['obj'] || @.v == 2", `["small","obj"]`},
		// Existence, negation, grouping.
		{"@.w", `["int","small","neg","big","str","num-str"]`},
		{"!@.w", `["true","false","null","arr","obj","none"]`},
		{"@.v", `["int","small","neg","big","str","num-str","true","false","null","arr","obj"]`},
		{"!@.v", `["none"]`},
		{"@.v.k", `["obj"]`},
		{"@.v[1]", `["arr"]`},
		{"@.v[?(@ == 'a')]", `["arr"]`},
		{"@.v[*]", `["arr","obj"]`},
		{"!(@.v == 10 || @.v == 2) && @.w", `["neg","big","str","num-str"]`},
		{"(@.v == 10 || @.v == 2) && @.w == 3", `["small"]`},
		{"@.v == 10 || @.v == 2 && @.w == 3", `["int","small"]`},
		{"$.limit == 10", `["int","small","neg","big","str","num-str","true","false","null","arr","obj","none"]`},
		{"$.missing", `[]`},
		// Containers compare element by element.
		{"@.v == @.v", `["int","small","neg","big","str","num-str","true","false","null","arr","obj"]`},
		// Spaces are allowed anywhere between tokens.
		{"  @.v==2  ", `["small"]`},
		{"@.v in[2,10]", `["int","small"]`},
	}
	for _, tt := range tests {
		t.Run(tt.filter, func(t *testing.T) {
			expr := "$.rows[?(" + tt.filter + ")].id"
			got, err := mustCompile(t, expr).Get(doc, nil)
			if err != nil {
				t.Fatalf("Get(%q): %v", expr, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Get(%q) = %s, want %s", expr, compact(t, got), tt.want)
			}
		})
	}
}

func TestFilterOnValues(t *testing.T) {
	doc := decode(t, `{"nums":[5,-2,7.5,"7"],"words":["apple","Banana","cherry"],"o":{"price":3,"name":"x"},"deep":{"a":{"price":1},"b":[{"price":20},{"price":2}]}}`)
	tests := []struct {
		expr string
		want string
	}{
		{"$.nums[?(@ > 0)]", `[5,7.5]`},
		{"$.nums[?(@ == '7')]", `["7"]`},
		{"$.words[?(@ =~ /b.*/i)]", `["Banana"]`},
		{"$.words[?(@ < 'b')]", `["apple","Banana"]`},
		// Jayway applies a filter on an object to the object itself.
		{"$.o[?(@.price < 5)].name", `["x"]`},
		{"$.o[?(@.price > 5)]", `[]`},
		{"$.nums[0][?(@ > 0)]", `[]`},
		// A deep filter selects every descendant that passes, once.
		{"$..[?(@.price < 10)].price", `[1,2,3]`},
		{"$.deep..[?(@.price)].price", `[1,20,2]`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := mustCompile(t, tt.expr).Get(doc, nil)
			if err != nil {
				t.Fatalf("Get(%q): %v", tt.expr, err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Get(%q) = %s, want %s", tt.expr, compact(t, got), tt.want)
			}
		})
	}
}

// TestFilterAWSExample reproduces, with our own data, the filter shape AWS
// recordings use: select the objects of a list whose field equals a number.
func TestFilterAWSExample(t *testing.T) {
	doc := decode(t, `{"people":[{"born":1990,"active":0},{"born":1991,"active":1},{"born":1992,"active":0}]}`)
	got, err := mustCompile(t, "$.people[?(@.active == 0)]").Get(doc, nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := decode(t, `[{"born":1990,"active":0},{"born":1992,"active":0}]`)
	if !jsonvalue.Equal(got, want) {
		t.Errorf("Get = %s, want %s", compact(t, got), compact(t, want))
	}
}
