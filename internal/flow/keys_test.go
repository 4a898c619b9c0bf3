package flow

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeysBySource(t *testing.T) {
	flows, err := Parse("k.sql", `
CREATE FLOW a AS AUTO CDC INTO a FROM STREAM(`+"`src.one`"+`) KEYS (id) SEQUENCE BY seq;
CREATE FLOW b AS AUTO CDC INTO b FROM STREAM(`+"`src.one`"+`) KEYS (id, region) SEQUENCE BY seq STORED AS SCD TYPE 2;
CREATE FLOW c AS AUTO CDC INTO c FROM STREAM(`+"`src.two`"+`) KEYS (k) SEQUENCE BY seq;`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"src.one": {"id", "region"}, "src.two": {"k"}}
	if d := cmp.Diff(want, KeysBySource(flows)); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
}
