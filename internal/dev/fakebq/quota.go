package fakebq

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/bqquota"
	"github.com/bqcdc/bqcdc/internal/clients"
	"golang.org/x/time/rate"
	"google.golang.org/api/option"
)

// REST quotas and accounting. Every REST request is counted by its API
// method (bqquota.Method), so that a benchmark can report what a phase
// costs in quota even when nothing is enforced; with Options.Quota set the
// fake also refuses what BigQuery would, the way BigQuery does: HTTP 403,
// reason rateLimitExceeded, which the client library retries with backoff
// (1 s at first) and bqerror counts as transient. A client that ignores the
// quota is therefore slowed down here as it would be in a real project,
// instead of measuring a speed no project allows.
//
// The limits:
//
//   - Per method: a token bucket of PerMethod tokens refilled at PerMethod
//     a second (golang.org/x/time/rate), i.e. bursts of one second's worth.
//     Not a sliding 1-second window, because bqquota.Transport, the
//     client-side limiter, is itself a token bucket (Share × PerMethod a
//     second, bursts of a second's worth): after an idle spell it sends its
//     burst and then its rate within the same second, up to 2 × Share ×
//     PerMethod requests, which a sliding window refuses. A stream that a
//     smaller bucket lets through always passes a larger one, so Transport
//     (Share ≤ 0.8) is never refused here, even with its requests bunched
//     by up to (1−Share)/Share seconds of network jitter.
//   - Per table or dataset: at most TableUpdates metadata updates
//     (tables.insert, tables.patch, tables.update, datasets.patch) in any
//     UpdateWindow, a sliding window over the accepted updates' arrival
//     times: BigQuery documents the limit as "5 per 10 seconds", with no
//     burst allowance.
//
// Only accepted requests take quota (tokens, window slots), so a client
// that backs off gets through; refused ones are counted apart (Rejected).
// There is one user: every client of the fake shares the limits, as the
// components of one service account would. An update refused by its
// table's window has taken its method's token: the request reached
// BigQuery.

// quota is a Server's REST request accounting and, when limits is set,
// its enforcement.
type quota struct {
	limits *bqquota.Limits // nil: count only

	mu       sync.Mutex
	accepted map[string]int64         // by method
	rejected map[string]int64         // by method
	methods  map[string]*rate.Limiter // by method (limits set)
	updates  map[string]*updateWindow // by table or dataset path (limits set)
}

// updateWindow holds the arrival times of the last TableUpdates updates of
// one table accepted, oldest at next: a ring, so that checking and
// recording are O(1) and a table costs TableUpdates times, however busy.
type updateWindow struct {
	times []time.Time
	next  int
}

// admit reports whether the window lets an update arriving at now through,
// and records it if so.
func (u *updateWindow) admit(now time.Time, n int, window time.Duration) bool {
	if len(u.times) < n {
		u.times = append(u.times, now)
		return true
	}
	if now.Sub(u.times[u.next]) < window {
		return false
	}
	u.times[u.next] = now
	u.next = (u.next + 1) % len(u.times)
	return true
}

// init readies q to count, and with l set to enforce l.
func (q *quota) init(l *bqquota.Limits) {
	q.accepted, q.rejected = map[string]int64{}, map[string]int64{}
	if l != nil {
		lim := withDefaults(*l)
		q.limits = &lim
		q.methods, q.updates = map[string]*rate.Limiter{}, map[string]*updateWindow{}
	}
}

// withDefaults fills the zero fields of l from bqquota.Default, so that
// Limits{PerMethod: 20} lowers only the per-method rate.
func withDefaults(l bqquota.Limits) bqquota.Limits {
	if l.PerMethod <= 0 {
		l.PerMethod = bqquota.Default.PerMethod
	}
	if l.TableUpdates <= 0 {
		l.TableUpdates = bqquota.Default.TableUpdates
	}
	if l.UpdateWindow <= 0 {
		l.UpdateWindow = bqquota.Default.UpdateWindow
	}
	return l
}

// admit counts r and, with limits set, decides whether it is over them:
// it returns the refusal's message, or "" to serve r. parts is r's path
// split at '/', without /bigquery/v2.
func (q *quota) admit(r *http.Request, parts []string) string {
	method, updates := bqquota.Method(r)
	if q.limits != nil && method == bqquota.TablesInsert && len(parts) == 5 {
		// The inserted table is named only in the body (insertTable reads
		// it again); a creation is an update of the table.
		updates = insertedTable(r, parts[1], parts[3])
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if l := q.limits; l != nil {
		m := q.methods[method]
		if m == nil {
			m = rate.NewLimiter(rate.Limit(l.PerMethod), max(1, int(l.PerMethod)))
			q.methods[method] = m
		}
		if !m.AllowN(now, 1) {
			q.rejected[method]++
			return "Exceeded rate limits: too many api requests per user per method for this user_method (fakebq: " + method + ")"
		}
		if updates != "" {
			u := q.updates[updates]
			if u == nil {
				u = &updateWindow{}
				q.updates[updates] = u
			}
			if !u.admit(now, l.TableUpdates, l.UpdateWindow) {
				q.rejected[method]++
				return "Exceeded rate limits: too many table update operations for this table (fakebq: " + updates + ")"
			}
		}
	}
	q.accepted[method]++
	return ""
}

// insertedTable is the table a tables.insert request creates, or "" if
// its body names none. The body is read and put back for insertTable.
func insertedTable(r *http.Request, project, dataset string) string {
	if r.Body == nil {
		return ""
	}
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	var body struct {
		TableReference *struct {
			TableID string `json:"tableId"`
		} `json:"tableReference"`
	}
	if json.Unmarshal(b, &body) != nil || body.TableReference == nil || body.TableReference.TableID == "" {
		return ""
	}
	return bqquota.InsertedTable(project, dataset, body.TableReference.TableID)
}

// Requests returns the REST requests served (not refused by a quota) since
// the fake started or ResetRequests, by API method (bqquota.Method). They
// are counted whether or not Options.Quota is set.
func (s *Server) Requests() map[string]int64 { return s.quota.counts(false) }

// Rejected returns the REST requests refused by Options.Quota since the
// fake started or ResetRequests, by API method.
func (s *Server) Rejected() map[string]int64 { return s.quota.counts(true) }

func (q *quota) counts(rejected bool) map[string]int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	m := q.accepted
	if rejected {
		m = q.rejected
	}
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ResetRequests zeroes Requests and Rejected, e.g. between a benchmark's
// phases. The quota itself (tokens, update windows) is not reset: the
// requests before still took it, as in BigQuery.
func (s *Server) ResetRequests() {
	s.quota.mu.Lock()
	defer s.quota.mu.Unlock()
	s.quota.accepted, s.quota.rejected = map[string]int64{}, map[string]int64{}
}

// QuotaSeconds is the per-method quota the requests counted so far
// (served and refused: a refused request reached BigQuery too) used under
// l, in seconds: the sum over methods of requests / l.PerMethod (zero:
// bqquota.Default's). It is what a phase costs whatever its concurrency,
// and adds up across phases and methods; to know how long a phase must
// take, see QuotaFloor.
func (s *Server) QuotaSeconds(l bqquota.Limits) float64 {
	sum, _ := s.quotaSeconds(l)
	return sum
}

// QuotaFloor is the floor that l's per-method quota puts on the wall time
// of the requests counted so far, in seconds: the largest over methods of
// requests / l.PerMethod. Methods have separate quotas and are used at
// once, so the busiest method bounds the phase, not the sum
// (QuotaSeconds). It is the floor at the sustained rate: a phase that
// starts with full buckets (after a second or more without requests) may
// beat it by up to the one second of burst BigQuery's, and this fake's,
// quotas allow, and it ignores the per-table update limit.
func (s *Server) QuotaFloor(l bqquota.Limits) float64 {
	_, floor := s.quotaSeconds(l)
	return floor
}

func (s *Server) quotaSeconds(l bqquota.Limits) (sum, floor float64) {
	per := withDefaults(l).PerMethod
	q := &s.quota
	q.mu.Lock()
	defer q.mu.Unlock()
	add := func(method string, n int64) {
		secs := float64(n+q.rejected[method]) / per
		sum += secs
		floor = max(floor, secs)
	}
	for method, n := range q.accepted {
		add(method, n)
	}
	for method := range q.rejected {
		if _, ok := q.accepted[method]; !ok {
			add(method, 0)
		}
	}
	return sum, floor
}

// SetRTT sets the round trip added to every REST response from now on
// (see Options.RTT).
func (s *Server) SetRTT(d time.Duration) { s.rtt.Store(int64(d)) }

// roundTrip waits out the simulated round trip before r is handled,
// reporting false if the client gave up first (then nothing is answered).
// Handlers run concurrently, so requests in flight wait at once.
func (s *Server) roundTrip(ctx context.Context) bool {
	d := time.Duration(s.rtt.Load())
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// restParts is a REST request's path split at '/', without the
// /bigquery/v2 prefix the client library puts in front unless its
// endpoint is overridden (both are accepted, as the emulator does).
func restParts(r *http.Request) []string {
	p := strings.TrimPrefix(r.URL.Path, "/bigquery/v2")
	return strings.Split(strings.Trim(p, "/"), "/")
}

// PacedClients returns a BigQuery client and a table lister of the fake
// whose requests go through bqquota.Transport, as bqcdc's clients of
// Google do (clients.NewBigQuery): what a benchmark against the quota
// measures. They are closed when tb ends.
func (s *Server) PacedClients(tb testing.TB) (*bigquery.Client, *clients.TableLister) {
	tb.Helper()
	return s.ClientsVia(tb, bqquota.NewTransport(http.DefaultTransport))
}

// ClientsVia returns a BigQuery client and a table lister of the fake whose
// requests go through rt (one that paces or counts them). They are closed
// when tb ends.
func (s *Server) ClientsVia(tb testing.TB, rt http.RoundTripper) (*bigquery.Client, *clients.TableLister) {
	tb.Helper()
	opts := []option.ClientOption{option.WithEndpoint(s.RESTURL()), option.WithHTTPClient(&http.Client{Transport: rt})}
	bq, err := bigquery.NewClient(context.Background(), s.Project(), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { bq.Close() })
	lister, err := clients.NewTableListerWith(context.Background(), s.Project(), opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return bq, lister
}
