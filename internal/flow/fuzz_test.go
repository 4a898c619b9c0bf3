package flow

import (
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/schema"
)

// FuzzParseAndBind: no input makes the parser or the binder panic, and an
// accepted condition never renders a string literal unescaped.
//
//	go test ./internal/flow -fuzz FuzzParseAndBind -fuzztime 60s
func FuzzParseAndBind(f *testing.F) {
	f.Add("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(`a.b.c`) KEYS (id) SEQUENCE BY s WHERE name = 'x' AND s > 1;")
	f.Add("APPLY CHANGES INTO t FROM STREAM(abc) KEYS (id, name) SEQUENCE BY STRUCT(s, name) COLUMNS * EXCEPT (s) STORED AS SCD TYPE 2 TRACK HISTORY ON * IGNORE NULL UPDATES;")
	f.Add("CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(abc) KEYS (id) SEQUENCE BY s APPLY AS DELETE WHEN name = 'it\\'s' OR name LIKE '%`x`%';")
	f.Add("CREATE OR REFRESH STREAMING TABLE t (id INT) COMMENT 'a;b' TBLPROPERTIES ('k' = 'v');\nCREATE FLOW f COMMENT 'c' AS AUTO CDC INTO t FROM STREAM abc KEYS (id) SEQUENCE BY s APPLY AS DELETE WHEN name == 'd' OR s <=> 1 COLUMNS * EXCEPT (name) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (name, id);")
	f.Add("CREATE STREAMING TABLE t FLOW AUTO CDC FROM abc KEYS (id) IGNORE NULL UPDATES ON * EXCEPT (id) SEQUENCE BY s;\nAUTO CDC INTO u FROM STREAM(abc) KEYS (id) SEQUENCE BY s WHERE name = 'x;\n/* open")
	cols := schema.Columns{{Name: "id", Type: schema.Int64}, {Name: "name", Type: schema.String}, {Name: "s", Type: schema.Int64}}
	f.Fuzz(func(t *testing.T, src string) {
		flows, err := Parse("f.sql", src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.sql:") {
				t.Fatalf("error without a position: %v", err)
			}
			return
		}
		for _, fl := range flows {
			b, err := Bind(fl, cols)
			if err != nil {
				continue
			}
			for _, cond := range []string{b.Where, b.Delete, b.Truncate} {
				if strings.Contains(cond, ";") && !inLiteral(cond) {
					t.Fatalf("condition %q renders a statement separator", cond)
				}
			}
		}
	})
}

// inLiteral reports whether every ';' of s sits inside a quoted literal.
func inLiteral(s string) bool {
	in := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && in:
			i++
		case s[i] == '\'':
			in = !in
		case s[i] == ';' && !in:
			return false
		}
	}
	return true
}
