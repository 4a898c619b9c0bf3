package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/registry"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

// Issue 20, defects 1 and 2: what one message may cost in memory and CPU,
// and a request that ends stops its work.

// Writer schemas whose items are the costly kinds: compiled natively
// (longs, bits) and as fallback columns (a map, a union of two types,
// arrays of arrays).
var budgetSchemas = map[string]string{
	"longs":  `{"type":"array","items":"long"}`,
	"bits":   `{"type":"array","items":{"type":"bytes","connect.name":"io.debezium.data.Bits","connect.parameters":{"length":"512"}}}`,
	"map":    `{"type":"map","values":"long"}`,
	"union":  `{"type":"array","items":["long","string"]}`,
	"arrarr": `{"type":"array","items":{"type":"array","items":"long"}}`,
}

func varint(v int64) []byte { return binary.AppendVarint(nil, v) }

// itemsPayload is {id, a} with n items of kind, each of the fewest bytes
// (map keys are distinct decimal numbers).
func itemsPayload(kind string, n int) []byte {
	b := append(varint(1), varint(int64(n))...)
	for i := range n {
		switch kind {
		case "map":
			k := fmt.Sprint(i)
			b = append(append(append(b, varint(int64(len(k)))...), k...), 0)
		case "union":
			b = append(b, 0, 0) // branch long, 0
		default:
			b = append(b, 0) // 0, an empty bytes, an empty array
		}
	}
	return append(b, 0)
}

// budgetService serves topic "budget.src" with writer schema 77, whose
// field a has the type of kind.
func budgetService(t testing.TB, kind string) *Service {
	t.Helper()
	s, err := registry.Parse(`{"type":"record","name":"R","namespace":"budget","fields":[{"name":"id","type":"long"},{"name":"a","type":` + budgetSchemas[kind] + `}]}`)
	if err != nil {
		t.Fatal(err)
	}
	svc, tables, _ := newServiceWith(t, &fakeRegistry{schemas: map[int]avro.Schema{77: s}}, Options{})
	addEmptyChangelog(t, tables, "budget.src")
	// Evolve the changelog with a small message, then append without
	// keeping rows (the fake's decoding of rows is no part of ingest).
	if got, err := svc.Handle(context.Background(), Message{Topic: "budget.src", MessageID: "first", Data: wire.Append(nil, 77, itemsPayload(kind, 1))}); got != Appended || err != nil {
		t.Fatalf("%s: first message: %v, %v", kind, got, err)
	}
	svc.writer = discard{tables}
	return svc
}

// allocated is the bytes Handle allocates for data, with the collector
// off: an upper bound of the memory the message holds at its peak.
func allocated(t testing.TB, svc *Service, data []byte) (uint64, Outcome, error) {
	t.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := svc.Handle(context.Background(), Message{Topic: "budget.src", MessageID: "m", Data: data})
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, got, err
}

// TestDecodedSizeIsBounded checks the budget against what decoding really
// allocates: for each costly kind of item, on each path, a message with as
// many items as its budget pays for is appended and allocates less than
// its budget; one with a few times more is dead-lettered at stage decode,
// naming the budget, having allocated less than its budget too. With the
// in-flight semaphore weighing each request by body + budget
// (functions/ingest.MaxMemoryInFlight, 192 MiB), that bounds an
// instance's heap under Terraform's default 512 MiB (see there).
func TestDecodedSizeIsBounded(t *testing.T) {
	for kind := range budgetSchemas {
		{
			t.Run(kind, func(t *testing.T) {
				svc := budgetService(t, kind)
				// The most items the budget pays for, found by trying.
				n := 16
				for {
					data := wire.Append(nil, 77, itemsPayload(kind, 2*n))
					if got, err := svc.Handle(context.Background(), Message{Topic: "budget.src", MessageID: "probe", Data: data}); got != Appended || err != nil {
						break
					}
					n *= 2
				}
				for _, tc := range []struct {
					items int
					want  Outcome
				}{{n, Appended}, {8 * n, DeadLettered}, {200_000, DeadLettered}} {
					data := wire.Append(nil, 77, itemsPayload(kind, tc.items))
					alloc, got, err := allocated(t, svc, data)
					budget := limits.DecodeBudget(len(data) - wire.HeaderLen)
					t.Logf("%d items in %d bytes: %v, allocated %d bytes, budget %d", tc.items, len(data), got, alloc, budget)
					if got != tc.want || err != nil {
						t.Errorf("%d items: %v, %v; want %v", tc.items, got, err, tc.want)
					}
					if int64(alloc) > budget+int64(len(data)) {
						t.Errorf("%d items: allocated %d bytes, more than the message's %d-byte budget", tc.items, alloc, budget)
					}
				}
			})
		}
	}
}

// BenchmarkHostileMessage reports what one hostile message costs: 10 MB
// of one-byte array items (the generic path took 2.8-4.1 GB for it and
// answered 503), now refused within its budget.
//
//	go test ./internal/ingest -run '^$' -bench HostileMessage -benchmem
func BenchmarkHostileMessage(b *testing.B) {
	for _, kind := range []string{"longs", "map", "arrarr"} {
		b.Run(kind, func(b *testing.B) {
			svc := budgetService(b, kind)
			n := limits.MaxMessageBytes - 64
			if kind == "map" {
				n /= 8
			}
			data := wire.Append(nil, 77, itemsPayload(kind, n))
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			var peak uint64
			for b.Loop() {
				alloc, got, err := allocated(b, svc, data)
				if got != DeadLettered || err != nil {
					b.Fatal(got, err)
				}
				peak = max(peak, alloc)
			}
			b.ReportMetric(float64(peak), "alloc-bytes/msg")
			b.ReportMetric(float64(limits.DecodeBudget(len(data))), "budget-bytes")
		})
	}
}

// TestRowOverTheAppendLimit: a 9.5 MB string and 10,000 Bits items (each
// padded to 64 bytes) make a row over BigQuery's 10 MB from a payload
// under Pub/Sub's 10 MiB; it is dead-lettered at stage convert, never
// appended.
func TestRowOverTheAppendLimit(t *testing.T) {
	s, err := registry.Parse(readBulk(t))
	if err != nil {
		t.Fatal(err)
	}
	note := bytes.Repeat([]byte("x"), 9_500_000)
	bits := append(append(varint(10_000), make([]byte, 10_000)...), 0)
	payload := bytes.Join([][]byte{varint(1), {0}, bits, varint(0), varint(0), varint(0), varint(int64(len(note))), note}, nil)
	{
		svc, tables, _ := newServiceWith(t, &fakeRegistry{schemas: map[int]avro.Schema{9005: s}}, Options{})
		addEmptyChangelog(t, tables, "bulk.src")
		got, err := svc.Handle(context.Background(), Message{Topic: "bulk.src", MessageID: "big", Data: wire.Append(nil, 9005, payload)})
		dl := tables.rows[catalog.DeadLetterTable]
		if got != DeadLettered || err != nil || len(dl) != 1 {
			t.Fatalf("%v, %v, %d dead letters; want one", got, err, len(dl))
		}
		if dl[0]["stage"] != string(failure.StageConvert) || !strings.Contains(dl[0]["reason"].(string), "row limit") {
			t.Errorf("dead letter at %v: %v", dl[0]["stage"], dl[0]["reason"])
		}
		if n := len(tables.rows[catalog.TableName("bulk.src")]); n != 0 {
			t.Errorf("%d rows appended", n)
		}
	}
}

func readBulk(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(hostileDir, "schemas/bulk.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHandleStopsWhenItsRequestEnds: decoding a message whose request has
// ended stops between items, and the message is answered for redelivery
// (it is not at fault), neither appended nor dead-lettered.
func TestHandleStopsWhenItsRequestEnds(t *testing.T) {
	s, err := registry.Parse(readBulk(t))
	if err != nil {
		t.Fatal(err)
	}
	// 5,000 longs of 9 bytes each: within the budget, over the 1,024 items
	// between two looks at the context.
	longs := varint(5000)
	for range 5000 {
		longs = append(longs, varint(1<<60)...)
	}
	payload := bytes.Join([][]byte{varint(1), append(longs, 0), {0}, varint(0), varint(0), varint(0), varint(0)}, nil)
	{
		svc, tables, _ := newServiceWith(t, &fakeRegistry{schemas: map[int]avro.Schema{9005: s}}, Options{})
		addEmptyChangelog(t, tables, "bulk.src")
		m := Message{Topic: "bulk.src", MessageID: "m", Data: wire.Append(nil, 9005, payload)}
		if got, err := svc.Handle(context.Background(), m); got != Appended || err != nil {
			t.Fatalf("live request: %v, %v", got, err)
		}
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errors.New("push request timed out"))
		got, err := svc.Handle(ctx, m)
		if got != Failed || err == nil || failure.IsPermanent(err) || !errors.Is(err, limits.ErrInterrupted) {
			t.Errorf("ended request: %v, %v; want a retryable failure", got, err)
		}
		if n := len(tables.rows[catalog.DeadLetterTable]); n != 0 {
			t.Errorf("%d dead letters", n)
		}
		if n := len(tables.rows[catalog.TableName("bulk.src")]); n != 1 {
			t.Errorf("%d rows, want the one of the live request", n)
		}
	}
}
