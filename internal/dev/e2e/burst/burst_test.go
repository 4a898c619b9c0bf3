// Package burst holds the load test of the local stack: a burst across many
// tables, as a Debezium initial snapshot of a database sends. It has its own
// test binary so its minute or so does not eat into the other integration
// tests' budget.
package burst

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/bigquery"
	"github.com/bqcdc/bqcdc/internal/dev/localstack"
	"github.com/bqcdc/bqcdc/internal/dev/viewcheck"
	"github.com/bqcdc/bqcdc/internal/loadgen"
)

// TestBurstAcrossTables publishes 1,000 Debezium messages to each of ten
// tables at once (BQCDC_BURST_TABLES / BQCDC_BURST_MESSAGES change the
// size; 2,000 a table took 489 s under `go test ./...` beside the property
// binary, too close to go test's 10-minute default for one binary, though
// 64-105 s alone) and checks that everything lands, nothing is dead-lettered, every
// view equals the reference model, and that a user's queries made during
// the load are answered.
func TestBurstAcrossTables(t *testing.T) {
	s := loadgen.DefaultSpec()
	s.Tables, s.Messages, s.Keys = envInt(t, "BQCDC_BURST_TABLES", 10), envInt(t, "BQCDC_BURST_MESSAGES", 1000), 500
	o := localstack.DefaultOptions()
	o.BigQueryPort, o.StoragePort, o.PubSubPort, o.RegistryPort, o.FunctionPort = 0, 0, 0, 0, 0
	o.CompactEvery = 0
	o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx := context.Background()
	st, cleanup, err := localstack.StartLoad(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	defer st.Close()

	// A user queries a changelog and a view every 200 ms during the load.
	stop := make(chan struct{})
	var queries atomic.Int64
	var queryErrs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			sql := fmt.Sprintf("SELECT COUNT(*) FROM `%s.%s`", st.Dataset, s.ChangelogTable(i%s.Tables))
			if i%2 == 1 {
				sql = fmt.Sprintf("SELECT COUNT(*) FROM `%s.lg_t%03d`", st.Dataset, i%s.Tables)
			}
			if _, err := st.BigQuery.Query(sql).Read(ctx); err != nil {
				mu.Lock()
				queryErrs = append(queryErrs, err)
				mu.Unlock()
			}
			queries.Add(1)
		}
	}()

	var progress io.Writer
	if testing.Verbose() {
		progress = os.Stderr
	}
	res, err := loadgen.Run(ctx, s, st.LoadTarget(progress), 8*time.Minute)
	close(stop)
	wg.Wait()
	t.Log(res)
	if err != nil {
		t.Fatal(err)
	}
	if res.Landed != res.Published || res.DeadLettered != 0 {
		t.Fatalf("%d of %d landed, %d dead-lettered; want all landed and none dead-lettered", res.Landed, res.Published, res.DeadLettered)
	}
	if len(queryErrs) > 0 {
		t.Errorf("%d of %d queries during the load failed, first: %v", len(queryErrs), queries.Load(), queryErrs[0])
	}
	if queries.Load() == 0 {
		t.Error("no query ran during the load")
	}
	// As `bqcdc loadgen --check` reads them in a project: from the spec's flows.
	problems, err := viewcheck.Load(ctx, st.BigQuery, st.Location(), s)
	if err != nil {
		t.Fatal(err)
	}
	if problems != "" {
		t.Errorf("views differ from the reference model:\n%s", problems)
	}
	// Nothing exhausted its delivery attempts either.
	it, err := st.BigQuery.Query(fmt.Sprintf("SELECT COUNT(*) FROM `%s.pubsub_dead_letters`", st.Dataset)).Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var row []bigquery.Value
	if err := it.Next(&row); err != nil {
		t.Fatal(err)
	}
	if row[0] != int64(0) {
		t.Errorf("%v messages in pubsub_dead_letters, want 0", row[0])
	}
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}
