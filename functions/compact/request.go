package compact

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/bqcdc/bqcdc/internal/compact"
)

// maxRequestBody bounds the JSON body: a list of flow names.
const maxRequestBody = 1 << 20

// parseRequest reads what a run compacts: the flows named in ?flow=a&flow=b
// and in a JSON body {"flows": [...]}, each name once, and one shard of the
// sources (?shard=i&shards=n, both or neither; 0 of 1 when absent). It
// refuses what it does not understand rather than compact more than asked:
// an unknown query parameter or JSON field (a misspelt "flow" would
// otherwise select every flow), a repeated shard parameter, data after the
// JSON object, and shards beyond compact.MaxShards.
func parseRequest(r *http.Request) (names []string, shard, shards int, err error) {
	q := r.URL.Query()
	for k := range q {
		if k != "flow" && k != "shard" && k != "shards" {
			return nil, 0, 0, fmt.Errorf("unknown query parameter %.64q: want flow, shard and shards", k)
		}
	}
	if shard, shards, err = shardOf(q); err != nil {
		return nil, 0, 0, err
	}
	names = q["flow"]
	if r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
		if err != nil {
			return nil, 0, 0, fmt.Errorf("reading the request body: %w", err)
		}
		if len(body) > maxRequestBody {
			return nil, 0, 0, fmt.Errorf("request body over %d bytes", maxRequestBody)
		}
		flows, err := decodeBody(body)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("decoding the request body: %w", err)
		}
		names = append(names, flows...)
	}
	return unique(names), shard, shards, nil
}

// decodeBody reads {"flows": [...]}: an empty body names no flow.
func decodeBody(body []byte) ([]string, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, nil
	}
	var req struct {
		Flows []string `json:"flows"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields() // its error names the field
	if err := dec.Decode(&req); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("data after the JSON object at byte %d", dec.InputOffset())
	}
	return req.Flows, nil
}

// shardOf reads ?shard=i&shards=n (both or neither, each once).
func shardOf(q map[string][]string) (shard, shards int, err error) {
	if len(q["shard"]) == 0 && len(q["shards"]) == 0 {
		return 0, 1, nil
	}
	if len(q["shard"]) != 1 || len(q["shards"]) != 1 {
		return 0, 0, fmt.Errorf("?shard=i&shards=n: want each exactly once (got %d shard, %d shards)", len(q["shard"]), len(q["shards"]))
	}
	shard, err1 := strconv.Atoi(q["shard"][0])
	shards, err2 := strconv.Atoi(q["shards"][0])
	if err1 != nil || err2 != nil {
		return 0, 0, fmt.Errorf("?shard=%.24q&shards=%.24q: want integers", q["shard"][0], q["shards"][0])
	}
	if err := compact.ValidShards(shard, shards); err != nil {
		return 0, 0, fmt.Errorf("?shard=%d&shards=%d: %w", shard, shards, err)
	}
	return shard, shards, nil
}

// unique keeps the first of each name, in order: a name given twice (or
// 2,000 times) runs its flow once, not once per copy against one state
// table.
func unique(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
