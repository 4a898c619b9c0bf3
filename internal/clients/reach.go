package clients

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/bqcdc/bqcdc/internal/bqerror"
)

// DefaultConnectTimeout is how long a BigQuery client retries requests
// that cannot reach BigQuery at all before it fails (Config.ConnectTimeout).
const DefaultConnectTimeout = 30 * time.Second

// reach is a transport that fails fast once BigQuery has been unreachable
// for budget. A request that cannot connect (refused, unresolvable host,
// TLS handshake) is tried again here, with a short backoff, until it gets
// an answer or budget has passed since the first failure; then it fails
// with a *bqerror.Unreachable, which neither the client library nor bqcdc
// retries, and so does every request for the next budget (a process that
// lives on, the compact function's, tries again after that). Without it,
// `bqcdc compact` against a dead endpoint retried for ever: the library
// retries a refused connection without end, with its own growing pauses.
type reach struct {
	base   http.RoundTripper
	budget time.Duration
	state  *reachState
}

// reachState is what requests learnt of an endpoint.
type reachState struct {
	mu      sync.Mutex
	since   time.Time // the first failure to connect since the last answer; zero: none
	spentAt time.Time // when a request last failed as unreachable
	failure *bqerror.Unreachable
}

// failing records a failure to connect and returns how long requests have
// been failing so: the budget counts from the first failure of any
// request, so a request the caller (not this transport) retries is
// bounded too.
func (st *reachState) failing() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.since.IsZero() {
		st.since = time.Now()
	}
	return time.Since(st.since)
}

// reached records an answer: the endpoint is reachable.
func (st *reachState) reached() {
	st.mu.Lock()
	st.since = time.Time{}
	st.mu.Unlock()
}

// newReach wraps base (budget 0: DefaultConnectTimeout).
func newReach(base http.RoundTripper, budget time.Duration) *reach {
	if budget <= 0 {
		budget = DefaultConnectTimeout
	}
	return &reach{base: base, budget: budget, state: &reachState{}}
}

// reachStates are the states of the endpoints this process talks to, by
// endpoint ("" for Google's): the clients of one endpoint (a command's
// BigQuery client and its table lister) share what they learnt of it, so
// a dead endpoint costs one budget, not one per client.
var reachStates sync.Map // string -> *reachState

// sharedReach is newReach whose state is the endpoint's.
func sharedReach(base http.RoundTripper, budget time.Duration, endpoint string) *reach {
	r := newReach(base, budget)
	st, _ := reachStates.LoadOrStore(endpoint, r.state)
	r.state = st.(*reachState)
	return r
}

func (r *reach) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := r.spent(); err != nil {
		return nil, err
	}
	pause := 100 * time.Millisecond
	for attempt := req; ; {
		resp, err := r.base.RoundTrip(attempt)
		reason := unreachableReason(err)
		if reason == "" {
			if err == nil {
				r.state.reached()
			}
			return resp, err
		}
		waited := r.state.failing()
		if waited >= r.budget {
			u := &bqerror.Unreachable{Host: req.URL.Host, For: waited, Reason: reason}
			r.state.mu.Lock()
			r.state.spentAt, r.state.failure, r.state.since = time.Now(), u, time.Time{}
			r.state.mu.Unlock()
			return nil, u
		}
		if req.Body != nil && req.GetBody == nil {
			return resp, err // the body cannot be sent again: the caller retries
		}
		select {
		case <-req.Context().Done():
			return nil, err
		case <-time.After(min(pause, r.budget-waited)):
		}
		pause = min(2*pause, 5*time.Second)
		attempt = req.Clone(req.Context())
		if req.GetBody != nil {
			if attempt.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
	}
}

// spent fails a request at once for budget after one failed as
// unreachable.
func (r *reach) spent() error {
	st := r.state
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.failure == nil {
		return nil
	}
	if time.Since(st.spentAt) >= r.budget {
		st.failure = nil // try again: BigQuery may be back
		return nil
	}
	return st.failure
}

// unreachableReason says why err is a failure to reach the server at all,
// or "" when it is not one (an answer, a cancelled request, a timeout
// reading a slow answer).
func unreachableReason(err error) string {
	if err == nil {
		return ""
	}
	var dns *net.DNSError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recordHeader tls.RecordHeaderError
	var certVerify *tls.CertificateVerificationError
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "the connection is refused"
	case errors.As(err, &dns):
		return "its host name does not resolve"
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalid),
		errors.As(err, &recordHeader), errors.As(err, &certVerify):
		return "the TLS handshake fails"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the host"
	case errors.As(err, &op) && op.Op == "dial":
		return "the connection cannot be made"
	}
	return ""
}
