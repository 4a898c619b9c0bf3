package main

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/flow"
)

func TestSelectFlows(t *testing.T) {
	flows, err := flow.Parse("f.sql", `
CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(src1) KEYS (id) SEQUENCE BY seq;
CREATE FLOW b AS AUTO CDC INTO b FROM STREAM(src1) KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE 2;
CREATE FLOW c AS AUTO CDC INTO c FROM STREAM(src2) KEYS (id) SEQUENCE BY seq;
`)
	if err != nil {
		t.Fatal(err)
	}
	names := func(fs []*flow.Flow) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Name)
		}
		return strings.Join(out, ",")
	}
	for _, c := range []struct {
		byName, bySource []string
		want, err        string
	}{
		{want: "a,b,c"},
		{byName: []string{"c"}, want: "c"},
		{bySource: []string{"src1"}, want: "a,b"},
		{byName: []string{"c"}, bySource: []string{"src1"}, want: "a,b,c"},
		{byName: []string{"nope"}, err: "--flow nope"},
		{bySource: []string{"src3"}, err: "--source src3"},
	} {
		got, err := selectFlows(flows, c.byName, c.bySource)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v %v: err %v, want %q", c.byName, c.bySource, err, c.err)
			}
			continue
		}
		if err != nil || names(got) != c.want {
			t.Errorf("%v %v: %s %v, want %s", c.byName, c.bySource, names(got), err, c.want)
		}
	}
}
