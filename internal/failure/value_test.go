package failure

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

var errKind = errors.New("value does not fit its BigQuery column")

func TestReason(t *testing.T) {
	leaf := Errorf("%w: parsing zoned timestamp %q: %v", errKind, Value("yesterday at noon"), Value(errors.New(`cannot parse "yesterday at noon"`)))
	wrapped := Permanent(StageConvert, fmt.Errorf("converting to BigQuery values: %w", fmt.Errorf("column %q: %w", "born", leaf)))
	tests := []struct {
		name   string
		err    error
		values bool
		want   string
	}{
		{"values opted in", wrapped, true, `convert: converting to BigQuery values: column "born": value does not fit its BigQuery column: parsing zoned timestamp "yesterday at noon": cannot parse "yesterday at noon"`},
		{"withheld", wrapped, false, `convert: converting to BigQuery values: column "born": value does not fit its BigQuery column: parsing zoned timestamp [value withheld]: [value withheld]`},
		{"nested value errors", Errorf("row %v: %w", Value(7), leaf), false, `row [value withheld]: value does not fit its BigQuery column: parsing zoned timestamp [value withheld]: [value withheld]`},
		{"rewritten, but still in the chain", Permanent(StageAppend, &rewritten{leaf}), false, `append: value does not fit its BigQuery column: parsing zoned timestamp [value withheld]: [value withheld] (the rest of the reason is withheld: it may quote values)`},
		{"explicit redaction", WithValue(errors.New(`row 3: "x@y" is not valid`), "row 3: BigQuery refused a value"), false, "row 3: BigQuery refused a value"},
		{"no values", Permanent(StageWire, errors.New("bad magic byte")), false, "wire: bad magic byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Reason(tt.err, tt.values); got != tt.want {
				t.Errorf("Reason =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	if !errors.Is(wrapped, errKind) || !IsValueError(wrapped) {
		t.Error("the chain is broken")
	}
	if err := Errorf("plain %d", 1); IsValueError(err) || err.Error() != "plain 1" {
		t.Errorf("Errorf without values = %#v", err)
	}
	if got := fmt.Sprint(Errorf("%.3q|%5d", Value("abcdef"), Value(42))); got != `"abc"|   42` {
		t.Errorf("verbs and flags: %s", got)
	}
}

// rewritten is a wrapper that changes its error's text (as a redaction or a
// truncation would) but keeps it in the chain.
type rewritten struct{ err error }

func (r *rewritten) Error() string { return strings.ToUpper(r.err.Error()) }
func (r *rewritten) Unwrap() error { return r.err }
