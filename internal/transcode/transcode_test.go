package transcode

import (
	"testing"
)

func schemas(t testing.TB) map[string]pair {
	t.Helper()
	out := map[string]pair{}
	for name, path := range map[string]string{
		"customers": "../../schemas/dbserver1.inventory.customers-value.avsc",
		"orders":    "../../schemas/dbserver1.inventory.orders-value.avsc",
		"kitchen":   "testdata/kitchen.avsc",
		"accounts":  "testdata/accounts.avsc",
		"plain":     "testdata/plain.avsc",
		// Columns of types the compiler does not cover, among native ones:
		// their values take the fallback (see fallback.go).
		"fallback": "testdata/fallback.avsc",
	} {
		s := loadSchema(t, path)
		out[name] = newPair(t, name, s, tableFor(t, s), nil)
	}
	return out
}

func TestRandomRecordsMatchGenericPath(t *testing.T) {
	for name, p := range schemas(t) {
		t.Run(name, func(t *testing.T) {
			g := newGen(1)
			stages := map[string]int{}
			w := p.ref.writer.Schema
			for i := 0; i < 3000; i++ {
				payload, err := g.payload(w)
				if err != nil {
					stages["marshal error"]++
					continue
				}
				stages[string(p.compare(t, payload, testMeta))]++
			}
			t.Logf("outcomes: %v", stages)
		})
	}
}
