package clients

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/bqerror"
)

// deadEndpoint is an address nothing listens on: connections are refused.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// A BigQuery client of a dead endpoint fails within the connect timeout
// with a permanent *bqerror.Unreachable (before, the library retried a
// refused connection for ever); so does an unresolvable host.
func TestUnreachableFailsFast(t *testing.T) {
	for _, endpoint := range []string{deadEndpoint(t), "http://bqcdc-no-such-host.invalid:9050"} {
		ctx := context.Background()
		bq, err := NewBigQuery(ctx, Config{Project: "p", Endpoint: endpoint, ConnectTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = bq.Dataset("d").Table("t").Metadata(ctx)
		took := time.Since(start)
		bq.Close()
		if !bqerror.IsUnreachable(err) {
			t.Fatalf("%s: %v, want Unreachable", endpoint, err)
		}
		if bqerror.IsTransient(err) {
			t.Errorf("%s: Unreachable classified transient: it would be retried", endpoint)
		}
		if took > 5*time.Second {
			t.Errorf("%s: failed after %s, want about the 1 s connect timeout", endpoint, took)
		}
	}
}

// A failure to connect that ends before the budget is invisible: the
// request is tried again and gets its answer.
func TestReachRetriesWithinBudget(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // refused until the server starts below
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	go func() {
		time.Sleep(300 * time.Millisecond)
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return // the port was taken meanwhile: the request below fails and says so
		}
		srv.Listener = l
		srv.Start()
	}()
	defer func() { srv.Close() }()
	c := &http.Client{Transport: newReach(http.DefaultTransport, 5*time.Second)}
	resp, err := c.Get("http://" + addr + "/")
	if err != nil {
		t.Fatalf("a server that came up within the budget: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("status %d", resp.StatusCode)
	}
}

// A request whose body cannot be sent again is left to its caller to
// retry, but the budget counts from the first failure of any request, so
// a caller that retries it for ever still gets Unreachable after it.
func TestReachBoundsCallerRetries(t *testing.T) {
	dead := deadEndpoint(t)
	c := &http.Client{Transport: newReach(http.DefaultTransport, 500*time.Millisecond)}
	start := time.Now()
	for time.Since(start) < 5*time.Second {
		req, err := http.NewRequest(http.MethodPost, dead+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Body = io.NopCloser(strings.NewReader("body")) // no GetBody
		_, err = c.Do(req)
		if bqerror.IsUnreachable(err) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("a caller retrying a body that cannot be resent never got Unreachable")
}
