// Package bqerror is the one place that reads BigQuery's errors: REST
// (googleapi.Error: HTTP code and reasons), gRPC status codes of the Storage
// Write API, and the StorageError and row errors an append can carry. Every
// other package asks it a question (is this transient? a missing table? a
// refused row?) instead of matching codes or text itself.
//
// The classes follow BigQuery's documented error table
// (https://cloud.google.com/bigquery/docs/error-messages) and the Storage
// Write API's gRPC codes
// (https://cloud.google.com/bigquery/docs/write-api#error_handling).
package bqerror

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"cloud.google.com/go/bigquery/storage/apiv1/storagepb"
	"google.golang.org/api/googleapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Class is what a caller may do about an error.
type Class int

// Classes.
const (
	// Permanent: the same request can never succeed (bad request, missing
	// permission, refused rows).
	Permanent Class = iota
	// Transient: retry the same request after a pause (rate limits, 5xx,
	// Unavailable, concurrent DML aborts).
	Transient
)

func (c Class) String() string { return [...]string{"permanent", "transient"}[c] }

// Classify returns err's class. An error bqerror does not recognise is
// transient: retrying is safe, giving up on data is not. Context
// cancellation is transient too (the caller's deadline, not the request).
func Classify(err error) Class {
	if err == nil {
		return Transient
	}
	if IsUnreachable(err) {
		return Permanent // the retries are spent: see Unreachable
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Transient
	}
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		return classifyHTTP(gerr)
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return classifyGRPC(s.Code())
	}
	return Transient
}

// IsTransient reports whether err deserves a retry.
func IsTransient(err error) bool { return err != nil && Classify(err) == Transient }

func classifyHTTP(e *googleapi.Error) Class {
	if e.Code == http.StatusTooManyRequests || e.Code >= 500 {
		return Transient
	}
	for _, item := range e.Errors {
		switch item.Reason {
		case "rateLimitExceeded", "backendError", "internalError", "jobRateLimitExceeded", "quotaExceeded", "jobBackendError", "jobInternalError":
			return Transient
		}
	}
	if concurrentDML(e.Message) {
		return Transient
	}
	for _, item := range e.Errors {
		if concurrentDML(item.Message) {
			return Transient
		}
	}
	return Permanent
}

// concurrentDML recognises BigQuery aborting a statement because another
// DML statement changed the same table (it allows two mutating statements
// per table at once and aborts on conflicting writes). BigQuery reports it
// only in the message text, with reason invalidQuery or 400.
func concurrentDML(msg string) bool {
	msg = strings.ToLower(msg)
	return strings.Contains(msg, "concurrent update") || strings.Contains(msg, "could not serialize access")
}

func classifyGRPC(c codes.Code) Class {
	switch c {
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.Internal, codes.DeadlineExceeded, codes.Canceled:
		return Transient
	}
	return Permanent
}

// NotFound reports whether err says the table or dataset does not exist.
func NotFound(err error) bool { return hasCode(err, http.StatusNotFound, codes.NotFound) }

// hasCode reports whether err carries the HTTP status (an error of the REST
// API) or, when it is not a REST error, the gRPC code (the Storage APIs).
func hasCode(err error, httpCode int, grpcCode codes.Code) bool {
	var gerr *googleapi.Error
	if errors.As(err, &gerr) {
		return gerr.Code == httpCode
	}
	return status.Code(err) == grpcCode
}

// PreconditionFailed reports whether a conditional update lost a race: the
// resource's etag changed since it was read.
func PreconditionFailed(err error) bool {
	var gerr *googleapi.Error
	return errors.As(err, &gerr) && gerr.Code == http.StatusPreconditionFailed
}

// AlreadyExists reports whether a create found the resource there already.
func AlreadyExists(err error) bool { return hasCode(err, http.StatusConflict, codes.AlreadyExists) }

// RequestRefused reports whether BigQuery's REST API refused a request
// itself (400 Bad Request: an invalid schema update, a description or name
// it does not accept) rather than failing to serve it: sending the same
// request again can never succeed. Rate limits and concurrent-DML aborts,
// which BigQuery also reports as 400, are not refusals.
func RequestRefused(err error) bool {
	var gerr *googleapi.Error
	return errors.As(err, &gerr) && gerr.Code == http.StatusBadRequest && classifyHTTP(gerr) == Permanent
}

// RowsRefused reports whether a Storage Write append failed because BigQuery
// refused the rows themselves (INVALID_ARGUMENT, with or without row
// errors), as opposed to the call: the same rows can never be appended.
func RowsRefused(err error) bool {
	return status.Code(err) == codes.InvalidArgument
}

// RowError is one row BigQuery refused in an append, by its index in the
// request.
type RowError struct {
	Index   int
	Message string
}

// RowErrors returns the per-row errors of a refused append, or nil when the
// refusal names no row. They travel only in the response: managedwriter's
// AppendResult.FullResponse returns it beside a plain InvalidArgument status
// error that has no details (checked against managedwriter v1.86.2 with the
// fake in internal/dev/fakebq). BigQuery writes none of a refused request's
// rows.
func RowErrors(resp *storagepb.AppendRowsResponse) []RowError {
	if resp == nil {
		return nil
	}
	out := make([]RowError, 0, len(resp.GetRowErrors()))
	for _, re := range resp.GetRowErrors() {
		out = append(out, RowError{Index: int(re.GetIndex()), Message: re.GetMessage()})
	}
	return out
}

// StorageCode returns the Storage Write API's own error code attached to a
// gRPC error (StorageError details: STREAM_NOT_FOUND, SCHEMA_MISMATCH_EXTRA_FIELDS,
// ...), or STORAGE_ERROR_CODE_UNSPECIFIED.
func StorageCode(err error) storagepb.StorageError_StorageErrorCode {
	s, ok := status.FromError(err)
	if !ok {
		return storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED
	}
	for _, d := range s.Details() {
		if se, ok := d.(*storagepb.StorageError); ok {
			return se.GetCode()
		}
	}
	return storagepb.StorageError_STORAGE_ERROR_CODE_UNSPECIFIED
}

// SchemaNotYetKnown reports whether an append was refused because the
// stream does not know columns the table gained moments ago: BigQuery picks
// up a table's new schema on existing streams within minutes. The code is
// SCHEMA_MISMATCH_EXTRA_FIELDS; older servers say it only in the text
// ("Input schema has more fields than BigQuery schema, extra fields: ...").
func SchemaNotYetKnown(err error) bool {
	if StorageCode(err) == storagepb.StorageError_SCHEMA_MISMATCH_EXTRA_FIELDS {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "more fields than") || strings.Contains(msg, "extra fields")
}

// Unreachable is BigQuery not answering at all for longer than a budget:
// every connection to it refused, its host name not resolving, or its TLS
// handshake failing. The client libraries retry a refused connection
// without end (cloud.google.com/go/bigquery retries any error whose text
// says "connection refused"), so a command pointed at a dead endpoint
// would hang; package clients ends that after the budget with this error,
// which is permanent and whose text names no retryable cause.
type Unreachable struct {
	Host   string
	For    time.Duration // how long every attempt failed
	Reason string        // "the connection is refused", ...
}

func (e *Unreachable) Error() string {
	return fmt.Sprintf("BigQuery at %s is unreachable: %s, every attempt for %s (raise the connect timeout to wait longer)", e.Host, e.Reason, e.For.Round(time.Second))
}

// IsUnreachable reports whether err is (or wraps) an *Unreachable.
func IsUnreachable(err error) bool {
	var u *Unreachable
	return errors.As(err, &u)
}
