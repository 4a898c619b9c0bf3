package flow

import (
	"strings"
	"testing"
)

// A target whose objects' names BigQuery would refuse is refused at its
// position, with the limit named.
func TestCheckNames(t *testing.T) {
	long := strings.Repeat("t", 250)
	for _, tt := range []struct {
		src, want string
	}{
		{"CREATE FLOW f AS AUTO CDC INTO " + long + " FROM STREAM(topic) KEYS (id) SEQUENCE BY s;", "256 in a routine id"},
		{"CREATE FLOW f AS AUTO CDC INTO " + strings.Repeat("t", 1020) + " FROM STREAM(topic) KEYS (id) SEQUENCE BY s;", "1024 in a table id"},
		{"CREATE FLOW f AS AUTO CDC INTO " + long[:248] + " FROM STREAM(topic) KEYS (id) SEQUENCE BY s;", ""},
	} {
		flows, err := Parse("f.sql", tt.src)
		if err != nil {
			t.Fatal(err)
		}
		got := CheckNames(flows[0])
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("refused: %v", got)
		case tt.want != "" && (got == nil || !strings.Contains(got.Error(), tt.want) || !strings.HasPrefix(got.Error(), "f.sql:1:32")):
			t.Errorf("got %v, want an error at f.sql:1:32 naming %q", got, tt.want)
		}
	}
}
