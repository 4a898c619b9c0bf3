package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/metrics"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/google/go-cmp/cmp"
)

// The metrics of known messages: one per outcome (and per stage for
// failures), the lag from publish to append by the service's clock, and a
// decode time for each row built. No timing is asserted beyond counts.
func TestHandleMetrics(t *testing.T) {
	ctx := context.Background()
	mp, err := metrics.Start(ctx, metrics.Config{Exporter: metrics.ExportMemory})
	if err != nil {
		t.Fatal(err)
	}
	svc, _, s := newServiceWith(t, nil, Options{Metrics: mp.Recorder()})
	msg := func(data []byte) Message {
		// The service's clock reads 1_800_000_000: a lag of 90 s.
		return Message{Topic: customers, MessageID: "m", PublishTime: time.Unix(1_800_000_000-90, 0), Data: data}
	}
	for _, data := range [][]byte{customerMessage(t, s, "c", 1), customerMessage(t, s, "u", 1), nil, []byte("\x01abcdef"),
		wire.Append(nil, 9, []byte{2}), customerMessage(t, s, "x", 3)} {
		if _, err := svc.Handle(ctx, msg(data)); err != nil {
			t.Fatal(err)
		}
	}
	// A registry outage: the message comes back.
	down, _, _ := newServiceWith(t, &fakeRegistry{err: registry.ErrUnavailable}, Options{Metrics: mp.Recorder()})
	if out, _ := down.Handle(ctx, msg(customerMessage(t, s, "c", 2))); out != Failed {
		t.Fatalf("outcome %v, want a retry", out)
	}

	series, err := mp.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, x := range series {
		switch x.Name {
		case metrics.IngestMessages:
			got[x.Attributes["outcome"]+"/"+x.Attributes["stage"]] = *x.Value
			if x.Attributes["topic"] != customers {
				t.Errorf("series %v: topic %q", x.Attributes, x.Attributes["topic"])
			}
		case metrics.IngestLag:
			if x.Count != 2 || *x.Sum != 180 || x.Attributes["topic"] != customers {
				t.Errorf("lag = %d values summing to %v for %v, want 2 of 90 s", x.Count, *x.Sum, x.Attributes)
			}
			got["lag"] = float64(x.Count)
		case metrics.IngestDecodeTime:
			got["decode/"+x.Attributes["path"]] = float64(x.Count)
		}
	}
	want := map[string]float64{
		"appended/": 2, "tombstone/": 1,
		"dead_lettered/wire": 1, "dead_lettered/registry": 1, "dead_lettered/envelope": 1,
		"retried/registry": 1,
		"lag":              2, "decode/compiled": 2,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
}
