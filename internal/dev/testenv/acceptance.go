package testenv

import (
	"encoding/json"
	"os"
	"testing"
)

// AcceptanceCase reads the case called name from an acceptance data file
// (a copy of ../shared/acceptance/*.json: {"cases": [{"name": ...}, ...]})
// into T. Cases of other names are not decoded: a file holds cases of
// several shapes, and T fits the named one only.
func AcceptanceCase[T any](t testing.TB, path, name string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var c T
	for _, raw := range doc.Cases {
		var head struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &head); err != nil || head.Name != name {
			continue
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Fatalf("no case %s in %s", name, path)
	return c
}
