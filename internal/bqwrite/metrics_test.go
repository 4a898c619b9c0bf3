package bqwrite

import (
	"context"
	"testing"

	"github.com/bqcdc/bqcdc/internal/metrics"
)

// Each AppendRows call is measured once: its rows and outcome. A batch with
// a refused row counts as refused, and the rows appended again after it as
// a second, ok call; a dropped connection counts as an error.
func TestBatcherMetrics(t *testing.T) {
	ctx := context.Background()
	mp, err := metrics.Start(ctx, metrics.Config{Exporter: metrics.ExportMemory})
	if err != nil {
		t.Fatal(err)
	}
	out := newFakeSender()
	out.refuse, out.named = map[string]bool{"bad": true}, true
	b := newBatcher("t", out, BatchOptions{MaxRows: 10, MaxBytes: 1 << 20, MaxInFlight: 1, Timeout: 10e9}, nil)
	b.metrics = mp.Recorder()
	if err := b.submit(ctx, [][]byte{[]byte("a"), []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := b.submit(ctx, [][]byte{[]byte("c"), []byte("bad")}); err == nil {
		t.Fatal("a refused row succeeded")
	}
	out.dropNext = 1
	if err := b.submit(ctx, [][]byte{[]byte("d")}); err == nil {
		t.Fatal("a dropped append succeeded")
	}
	series, err := mp.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]uint64{}
	var rows float64
	for _, s := range series {
		switch s.Name {
		case metrics.AppendDuration:
			calls[s.Attributes["outcome"]] = s.Count
		case metrics.AppendRows:
			rows = *s.Sum
		}
	}
	// ok: [a b], [c] again after [c bad] was refused; error: [d].
	if calls[metrics.AppendOK] != 2 || calls[metrics.AppendRefused] != 1 || calls[metrics.AppendError] != 1 || rows != 6 {
		t.Errorf("append calls by outcome = %v, rows %v; want ok 2, refused 1, error 1, 6 rows", calls, rows)
	}
}
