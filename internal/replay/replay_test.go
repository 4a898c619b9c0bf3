package replay

import (
	"context"
	"errors"
	"testing"

	"github.com/bqcdc/bqcdc/internal/catalog"
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

func TestReplayKeepsBytesAttributesAndOriginalID(t *testing.T) {
	letters := []Letter{
		{Topic: "a", MessageID: "m1", Data: []byte{0, 1, 2}, Attributes: map[string]string{"key": "7"}},
		// Replaying a replay keeps the first message's identity.
		{Topic: "b", MessageID: "m2", Data: []byte("x"), Attributes: map[string]string{catalog.ReplayOfAttribute: "m0"}},
	}
	var p fakePublisher
	n, err := Replay(context.Background(), letters, &p)
	if n != 2 || err != nil {
		t.Fatalf("Replay = %d, %v", n, err)
	}
	want := []published{
		{"a", "\x00\x01\x02", map[string]string{"key": "7", catalog.ReplayOfAttribute: "m1"}},
		{"b", "x", map[string]string{catalog.ReplayOfAttribute: "m0"}},
	}
	if d := cmp.Diff(want, p.got, cmp.AllowUnexported(published{})); d != "" {
		t.Errorf("published (-want +got):\n%s", d)
	}
	if _, ok := letters[0].Attributes[catalog.ReplayOfAttribute]; ok {
		t.Error("Replay modified the letter's attributes")
	}
}

func TestReplayStopsAtTheFirstFailure(t *testing.T) {
	letters := []Letter{{Topic: "a", MessageID: "1"}, {Topic: "a", MessageID: "2"}, {Topic: "a", MessageID: "3"}}
	p := fakePublisher{failAt: 2}
	n, err := Replay(context.Background(), letters, &p)
	if n != 1 || err == nil {
		t.Fatalf("Replay = %d, %v; want 1 published and the error of the second", n, err)
	}
}
