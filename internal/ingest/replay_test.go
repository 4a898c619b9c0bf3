package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/replay/proof"
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
