package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/hamba/avro/v2"
)

// TestCodecCacheIsBounded: writer keys come from messages, so a table's
// codecs are bounded in number (the least recently used goes) and in age.
func TestCodecCacheIsBounded(t *testing.T) {
	_, tables, s := newService(t, nil)
	reg := &fakeRegistry{schemas: map[int]avro.Schema{}}
	for id := 1; id <= 3*maxCodecsPerTable; id++ {
		reg.schemas[id] = s // distinct ids, one codec each
	}
	c := newCodecs(reg)
	now := time.Unix(1_800_000_000, 0)
	c.now = func() time.Time { return now }
	table := tables.tables[catalog.TableName(customers)]
	ctx := context.Background()
	get := func(id int) *codec {
		t.Helper()
		cd, err := c.get(ctx, writerRef{registryID: id}, table)
		if err != nil {
			t.Fatal(err)
		}
		return cd
	}
	hot := get(1)
	for id := 2; id <= 3*maxCodecsPerTable; id++ {
		now = now.Add(time.Millisecond)
		get(id)
		now = now.Add(time.Millisecond)
		if get(1) != hot {
			t.Fatalf("after writer %d: the writer in constant use was evicted", id)
		}
	}
	if n := len(c.m[table.Name].codecs); n != maxCodecsPerTable {
		t.Errorf("%d codecs cached for one table, want the bound %d", n, maxCodecsPerTable)
	}
	if c.lookup(writerRef{registryID: 2}.key(), table) != nil {
		t.Error("the least recently used writer is still cached")
	}
	now = now.Add(codecTTL + time.Second)
	if get(1) == hot {
		t.Error("a codec older than the TTL was served")
	}
}
