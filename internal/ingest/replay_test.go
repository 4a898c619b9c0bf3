package ingest

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/cdc"
	"github.com/bqcdc/bqcdc/internal/proof"
	"github.com/bqcdc/bqcdc/internal/wire"
	"github.com/hamba/avro/v2"
)

// TestReplayIDNeedsItsProof: a message claiming to replay another keeps
// that id only when the proof `bqcdc replay` signs verifies under the
// function's key; otherwise it keeps its own.
func TestReplayIDNeedsItsProof(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	_, _, s := newService(t, nil)
	data := customerMessage(t, s, "c", 1)
	other := customerMessage(t, s, "c", 2)
	valid := proof.Sign(key, customers, "orig", data)
	tests := []struct {
		name  string
		key   []byte
		data  []byte
		attrs map[string]string
		want  string
	}{
		{"valid proof", key, data, map[string]string{catalog.ReplayOfAttribute: "orig", catalog.ReplayProofAttribute: valid}, "orig"},
		{"no proof (forged id)", key, data, map[string]string{catalog.ReplayOfAttribute: "orig"}, "own"},
		{"proof of other data (tampered)", key, other, map[string]string{catalog.ReplayOfAttribute: "orig", catalog.ReplayProofAttribute: valid}, "own"},
		{"proof of another id", key, data, map[string]string{catalog.ReplayOfAttribute: "victim", catalog.ReplayProofAttribute: valid}, "own"},
		{"proof under another key", key, data, map[string]string{catalog.ReplayOfAttribute: "orig",
			catalog.ReplayProofAttribute: proof.Sign([]byte("another key, another key, another"), customers, "orig", data)}, "own"},
		{"no key configured", nil, data, map[string]string{catalog.ReplayOfAttribute: "orig", catalog.ReplayProofAttribute: valid}, "own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, tables, _ := newServiceWith(t, nil, Options{ReplayKey: tt.key})
			got, err := svc.Handle(context.Background(), Message{Topic: customers, MessageID: "own", PublishTime: time.Unix(1, 0), Attributes: tt.attrs, Data: tt.data})
			if got != Appended || err != nil {
				t.Fatalf("Handle = %v, %v", got, err)
			}
			rows := tables.rows[catalog.TableName(customers)]
			if id := rows[len(rows)-1][catalog.ColMessageID]; id != tt.want {
				t.Errorf("_cdc_message_id = %v, want %s", id, tt.want)
			}
		})
	}
}

// A replayed plain record (no Debezium envelope: sequenced by publish
// time) keeps its original publish time, which the proof covers: an old
// dead letter is not sequenced as the newest change of its key. A time
// altered after signing voids the claim (own id, own time).
func TestReplayKeepsOriginalPublishTime(t *testing.T) {
	key := []byte("q7Yb1m4+Xc9f0aR2/LwE8tGkPz3nVhJ5sUoD6iQyNxc=")
	plain := avro.MustParse(`{"type":"record","name":"R","fields":[{"name":"id","type":"int"}]}`)
	payload, err := avro.Marshal(plain, map[string]any{"id": 7})
	if err != nil {
		t.Fatal(err)
	}
	data := wire.Append(nil, 5, payload)
	original, replayed := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC), time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	at := proof.FormatTime(original)
	signed := map[string]string{catalog.ReplayOfAttribute: "orig", catalog.ReplayPublishTimeAttribute: at,
		catalog.ReplayProofAttribute: proof.SignAt(key, "plain.src", "orig", at, data)}
	altered := maps.Clone(signed)
	altered[catalog.ReplayPublishTimeAttribute] = proof.FormatTime(replayed.Add(time.Hour))
	{
		for _, tc := range []struct {
			name  string
			attrs map[string]string
			id    string
			at    time.Time
		}{
			{"signed original time", signed, "orig", original},
			{"time altered after signing", altered, "own", replayed},
		} {
			t.Run(tc.name, func(t *testing.T) {
				svc, tables, _ := newServiceWith(t, &fakeRegistry{schemas: map[int]avro.Schema{5: plain}}, Options{ReplayKey: key})
				addEmptyChangelog(t, tables, "plain.src")
				got, err := svc.Handle(context.Background(), Message{Topic: "plain.src", MessageID: "own", PublishTime: replayed, Attributes: tc.attrs, Data: data})
				if got != Appended || err != nil {
					t.Fatalf("Handle = %v, %v", got, err)
				}
				row := tables.rows[catalog.TableName("plain.src")][0]
				if row[catalog.ColMessageID] != tc.id || row[catalog.ColPublishTime] != tc.at.UnixMicro() || row[catalog.ColSequence] != cdc.TimestampSequence(tc.at) {
					t.Errorf("row id %v, publish time %v, sequence %v; want %s, %d, %s", row[catalog.ColMessageID], row[catalog.ColPublishTime],
						row[catalog.ColSequence], tc.id, tc.at.UnixMicro(), cdc.TimestampSequence(tc.at))
				}
			})
		}
	}
}
