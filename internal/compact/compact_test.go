package compact

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/api/googleapi"
)

func TestTransient(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&googleapi.Error{Code: 503}, true},
		{&googleapi.Error{Code: 429}, true},
		{&googleapi.Error{Code: 403, Errors: []googleapi.ErrorItem{{Reason: "rateLimitExceeded"}}}, true},
		{&googleapi.Error{Code: 400, Message: "Could not serialize access to table p:d.t due to concurrent update"}, true},
		{fmt.Errorf("folding: %w", &googleapi.Error{Code: 400, Message: "Transaction is aborted due to concurrent update against table"}), true},
		{errors.New("sqlite3: database is locked"), true},
		{&googleapi.Error{Code: 400, Message: "Unrecognized name: foo"}, false},
		{&googleapi.Error{Code: 404, Message: "Not found: Table p:d.t"}, false},
	}
	for _, tt := range tests {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
