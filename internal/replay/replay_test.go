package replay

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/bqcdc/bqcdc/internal/catalog"
	"github.com/bqcdc/bqcdc/internal/proof"
	"github.com/google/go-cmp/cmp"
)

type published struct {
	topic string
	data  string
	attrs map[string]string
}

type fakePublisher struct {
	got    []published
	failAt int // 1-based; 0 never
}

func (f *fakePublisher) Publish(_ context.Context, topic string, data []byte, attrs map[string]string) (string, error) {
	if len(f.got)+1 == f.failAt {
		return "", errors.New("unavailable")
	}
	f.got = append(f.got, published{topic, string(data), attrs})
	return "new", nil
}

var key = []byte("0123456789abcdef0123456789abcdef")

func TestReplayKeepsBytesAttributesAndOriginalID(t *testing.T) {
	letters := []Letter{
		{Topic: "a", MessageID: "m1", Data: []byte{0, 1, 2}, Attributes: map[string]string{"key": "7"}},
		// A replay ingest honoured was dead-lettered under the original
		// id: replaying it again keeps that identity, with a fresh proof.
		{Topic: "b", MessageID: "m0", Data: []byte("x"), Attributes: map[string]string{catalog.ReplayOfAttribute: "m0", catalog.ReplayProofAttribute: "stale"}},
		// A forged replay id ingest ignored was dead-lettered under the
		// message's own id: replay must not sign the forged one.
		{Topic: "b", MessageID: "m3", Data: []byte("y"), Attributes: map[string]string{catalog.ReplayOfAttribute: "victim"}},
	}
	var p fakePublisher
	n, err := Replay(context.Background(), letters, &p, key)
	if n != 3 || err != nil {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	signed := func(topic, id, data string) string { return proof.Sign(key, topic, id, []byte(data)) }
	want := []published{
		{"a", "\x00\x01\x02", map[string]string{"key": "7", catalog.ReplayOfAttribute: "m1", catalog.ReplayProofAttribute: signed("a", "m1", "\x00\x01\x02")}},
		{"b", "x", map[string]string{catalog.ReplayOfAttribute: "m0", catalog.ReplayProofAttribute: signed("b", "m0", "x")}},
		{"b", "y", map[string]string{catalog.ReplayOfAttribute: "m3", catalog.ReplayProofAttribute: signed("b", "m3", "y")}},
	}
	if d := cmp.Diff(want, p.got, cmp.AllowUnexported(published{})); d != "" {
		t.Errorf("published (-want +got):\n%s", d)
	}
	if _, ok := letters[0].Attributes[catalog.ReplayOfAttribute]; ok {
		t.Error("Replay modified the letter's attributes")
	}
}

func TestReplayRefusesWithoutAKey(t *testing.T) {
	var p fakePublisher
	if n, err := Replay(context.Background(), []Letter{{Topic: "a", MessageID: "1"}}, &p, nil); n != 0 || !errors.Is(err, ErrNoKey) || len(p.got) != 0 {
		t.Fatalf("Replay without a key = %d, %v, published %v; want nothing published and ErrNoKey", n, err, p.got)
	}
}

func TestReplayStopsAtTheFirstFailure(t *testing.T) {
	letters := []Letter{{Topic: "a", MessageID: "1"}, {Topic: "a", MessageID: "2"}, {Topic: "a", MessageID: "3"}}
	p := fakePublisher{failAt: 2}
	n, err := Replay(context.Background(), letters, &p, key)
	if n != 1 || err == nil {
		t.Fatalf("Replay = %d, %v; want 1 published and the error of the second", n, err)
	}
}

// A letter's original publish time travels with its replay, signed; a
// stale publish-time attribute the letter carries is replaced.
func TestReplayCarriesThePublishTime(t *testing.T) {
	at := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	letters := []Letter{{Topic: "a", MessageID: "m1", Data: []byte("d"), PublishTime: at,
		Attributes: map[string]string{catalog.ReplayPublishTimeAttribute: "1"}}}
	var p fakePublisher
	if n, err := Replay(context.Background(), letters, &p, key); n != 1 || err != nil {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	text := proof.FormatTime(at)
	want := map[string]string{catalog.ReplayOfAttribute: "m1", catalog.ReplayPublishTimeAttribute: text,
		catalog.ReplayProofAttribute: proof.SignAt(key, "a", "m1", text, []byte("d"))}
	if d := cmp.Diff(want, p.got[0].attrs); d != "" {
		t.Errorf("attributes (-want +got):\n%s", d)
	}
}
