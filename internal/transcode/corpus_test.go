package transcode

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFuzzCorpus regenerates the seed corpus of FuzzTranscode under
// testdata/fuzz: random valid records of each target schema, and
// truncated copies of some of them.
//
//	BQCDC_WRITE_FUZZ_CORPUS=1 go test ./internal/transcode -run TestWriteFuzzCorpus
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("BQCDC_WRITE_FUZZ_CORPUS") == "" {
		t.Skip("set BQCDC_WRITE_FUZZ_CORPUS=1 to rewrite testdata/fuzz")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzTranscode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, p := range fuzzTargets(t) {
		g := newGen(uint64(1000 + i))
		for j := 0; j < 6; j++ {
			b, err := g.payload(p.ref.writer.Schema)
			if err != nil {
				t.Fatal(err)
			}
			if j == 5 {
				b = b[:len(b)*2/3]
			}
			entry := fmt.Sprintf("go test fuzz v1\nbyte(%q)\n[]byte(%q)\n", rune(i), b)
			name := filepath.Join(dir, fmt.Sprintf("%s-%d", p.name, j))
			if err := os.WriteFile(name, []byte(entry), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
