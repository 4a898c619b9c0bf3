package transcode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/bqcdc/bqcdc/internal/failure"
	"github.com/bqcdc/bqcdc/internal/limits"
	"github.com/bqcdc/bqcdc/internal/registry"
)

// Issue 20, defect 10: the compiled path applies the generic validator's
// bound on the payload (Pub/Sub's 10 MiB), though each of its values is
// within the bound on one value.
func TestPayloadBeyondMessageLimit(t *testing.T) {
	s, err := registry.Parse(`{"type":"record","name":"R","namespace":"x","fields":[{"name":"id","type":"long"},{"name":"a","type":"bytes"},{"name":"b","type":"bytes"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	p := newPair(t, "two halves", s, tableFor(t, s), nil)
	half := func(n int) []byte { return append(binary.AppendVarint(nil, int64(n)), bytes.Repeat([]byte{1}, n)...) }
	within := bytes.Join([][]byte{binary.AppendVarint(nil, 1), half(5 << 20), half(5<<20 - 16)}, nil)
	if stage := p.compare(t, within, testMeta); stage != "" {
		t.Fatalf("a payload of %d bytes: stage %s, want a row", len(within), stage)
	}
	beyond := bytes.Join([][]byte{binary.AppendVarint(nil, 1), half(5 << 20), half(5<<20 + 1)}, nil)
	if stage := p.compare(t, beyond, testMeta); stage != failure.StageDecode {
		t.Fatalf("a payload of %d bytes: stage %q, want decode", len(beyond), stage)
	}
	_, _, err = p.plan.Append(nil, beyond, testMeta)
	if !errors.Is(err, limits.ErrLimit) || !failure.IsPermanent(err) || !strings.Contains(err.Error(), "10485760-byte message limit") {
		t.Errorf("error %v, want a permanent limit error naming the bound", err)
	}
}
