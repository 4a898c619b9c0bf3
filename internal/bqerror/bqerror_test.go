package bqerror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"5xx", &googleapi.Error{Code: 503}, Transient},
		{"429", &googleapi.Error{Code: 429}, Transient},
		{"403 rate limit", &googleapi.Error{Code: 403, Errors: []googleapi.ErrorItem{{Reason: "rateLimitExceeded"}}}, Transient},
		{"403 access denied", &googleapi.Error{Code: 403, Errors: []googleapi.ErrorItem{{Reason: "accessDenied"}}}, Permanent},
		{"concurrent DML", &googleapi.Error{Code: 400, Message: "Could not serialize access to table p:d.t due to concurrent update"}, Transient},
		{"concurrent DML wrapped", fmt.Errorf("folding: %w", &googleapi.Error{Code: 400, Message: "Transaction is aborted due to concurrent update against table"}), Transient},
		{"concurrent DML in an item", &googleapi.Error{Code: 400, Errors: []googleapi.ErrorItem{{Reason: "invalidQuery", Message: "Could not serialize access"}}}, Transient},
		{"bad query", &googleapi.Error{Code: 400, Message: "Unrecognized name: foo"}, Permanent},
		{"not found", &googleapi.Error{Code: 404, Message: "Not found: Table p:d.t"}, Permanent},
		{"gRPC unavailable", status.Error(codes.Unavailable, "x"), Transient},
		{"gRPC resource exhausted", status.Error(codes.ResourceExhausted, "quota"), Transient},
		{"gRPC invalid argument", status.Error(codes.InvalidArgument, "row"), Permanent},
		{"gRPC permission denied", fmt.Errorf("wrapped: %w", status.Error(codes.PermissionDenied, "no")), Permanent},
		{"gRPC unknown", status.Error(codes.Unknown, "failed to append rows"), Transient},
		{"unrecognised", errors.New("sqlite3: database is locked"), Transient},
		// AppendRows on a stream whose connection was cut returns io.EOF
		// before the client reconnects.
		{"cut stream", fmt.Errorf("append: %w", io.EOF), Transient},
		{"deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestQuestions(t *testing.T) {
	if !NotFound(fmt.Errorf("x: %w", &googleapi.Error{Code: 404})) || !NotFound(status.Error(codes.NotFound, "s")) || NotFound(&googleapi.Error{Code: 400}) {
		t.Error("NotFound")
	}
	if !PreconditionFailed(&googleapi.Error{Code: 412}) || PreconditionFailed(&googleapi.Error{Code: 409}) {
		t.Error("PreconditionFailed")
	}
	if !AlreadyExists(&googleapi.Error{Code: 409}) || AlreadyExists(&googleapi.Error{Code: 412}) {
		t.Error("AlreadyExists")
	}
	if !RequestRefused(fmt.Errorf("adding: %w", &googleapi.Error{Code: 400, Errors: []googleapi.ErrorItem{{Reason: "invalid"}}})) ||
		RequestRefused(&googleapi.Error{Code: 400, Errors: []googleapi.ErrorItem{{Reason: "rateLimitExceeded"}}}) ||
		RequestRefused(&googleapi.Error{Code: 400, Message: "Could not serialize access to table due to concurrent update"}) ||
		RequestRefused(&googleapi.Error{Code: 503}) || RequestRefused(&googleapi.Error{Code: 403}) || RequestRefused(status.Error(codes.InvalidArgument, "x")) {
		t.Error("RequestRefused")
	}
	if !RowsRefused(status.Error(codes.InvalidArgument, "bad row")) || RowsRefused(status.Error(codes.Unavailable, "x")) || RowsRefused(errors.New("x")) {
		t.Error("RowsRefused")
	}
}

func TestStorageErrors(t *testing.T) {
	st, err := status.New(codes.InvalidArgument, "schema mismatch").WithDetails(&storagepb.StorageError{Code: storagepb.StorageError_SCHEMA_MISMATCH_EXTRA_FIELDS})
	if err != nil {
		t.Fatal(err)
	}
	if got := StorageCode(st.Err()); got != storagepb.StorageError_SCHEMA_MISMATCH_EXTRA_FIELDS {
		t.Errorf("StorageCode = %v", got)
	}
	if !SchemaNotYetKnown(st.Err()) {
		t.Error("SchemaNotYetKnown by code")
	}
	if !SchemaNotYetKnown(status.Error(codes.InvalidArgument, "Input schema has more fields than BigQuery schema, extra fields: 'x'")) {
		t.Error("SchemaNotYetKnown by text")
	}
	if SchemaNotYetKnown(status.Error(codes.InvalidArgument, "Field x: wrong type")) {
		t.Error("SchemaNotYetKnown for another refusal")
	}
	resp := &storagepb.AppendRowsResponse{RowErrors: []*storagepb.RowError{{Index: 3, Message: "bad"}}}
	if got := RowErrors(resp); len(got) != 1 || got[0].Index != 3 || got[0].Message != "bad" {
		t.Errorf("RowErrors = %v", got)
	}
}
