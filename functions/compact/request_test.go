package compact

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		name          string
		query, body   string
		names         []string
		shard, shards int
		err           string // a part of the error; "" for none
	}{
		{name: "nothing: every flow, one shard", shards: 1},
		{name: "query flows", query: "flow=a&flow=b", names: []string{"a", "b"}, shards: 1},
		{name: "body flows", body: `{"flows": ["a", "b"]}`, names: []string{"a", "b"}, shards: 1},
		{name: "null flows", body: `{"flows": null}`, shards: 1},
		{name: "whitespace body", body: " \n", shards: 1},
		{name: "query and body, each name once in order", query: "flow=b&flow=a", body: `{"flows": ["a", "c", "b", "c"]}`,
			names: []string{"b", "a", "c"}, shards: 1},
		{name: "2000 copies run once", body: `{"flows": [` + strings.Repeat(`"a",`, 1999) + `"a"]}`, names: []string{"a"}, shards: 1},
		{name: "shard", query: "shard=3&shards=100", shard: 3, shards: 100},
		{name: "one shard of one", query: "shard=0&shards=1", shards: 1},
		{name: "misspelt body field", body: `{"flow": ["a"]}`, err: `unknown field "flow"`},
		{name: "misspelt query parameter", query: "flows=a", err: `unknown query parameter "flows"`},
		{name: "trailing object", body: `{"flows": ["a"]} {"flows": ["b"]}`, err: "data after the JSON object"},
		{name: "trailing garbage", body: `{"flows": ["a"]}x`, err: "data after the JSON object"},
		{name: "not an object", body: `["a"]`, err: "decoding the request body"},
		{name: "flows not strings", body: `{"flows": [1]}`, err: "decoding the request body"},
		{name: "body too large", body: `{"flows": ["` + strings.Repeat("a", maxRequestBody) + `"]}`, err: "request body over"},
		{name: "shards 2^32", query: "shard=0&shards=4294967296", err: "shards 4294967296: want 1 to 100"},
		{name: "shards 2^32+1", query: "shard=1&shards=4294967297", err: "want 1 to 100"},
		{name: "shards 101", query: "shard=0&shards=101", err: "want 1 to 100"},
		{name: "shards 0", query: "shard=0&shards=0", err: "want 1 to 100"},
		{name: "shard past shards", query: "shard=4&shards=4", err: "want 0 <= shard < shards"},
		{name: "negative shard", query: "shard=-1&shards=4", err: "want 0 <= shard < shards"},
		{name: "shard alone", query: "shard=1", err: "want each exactly once"},
		{name: "shards twice", query: "shard=0&shards=2&shards=3", err: "want each exactly once"},
		{name: "shards overflowing int", query: "shard=0&shards=99999999999999999999", err: "want integers"},
		{name: "shards not a number", query: "shard=0&shards=x", err: "want integers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/?"+tc.query, strings.NewReader(tc.body))
			names, shard, shards, err := parseRequest(r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.names, names); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if shard != tc.shard || shards != tc.shards {
				t.Errorf("shard %d of %d, want %d of %d", shard, shards, tc.shard, tc.shards)
			}
		})
	}
}

// The handler answers a refused request 400 before it binds or compacts
// anything (a zero Function has no clients: reaching them would panic).
func TestServeHTTPRefusesBadRequests(t *testing.T) {
	for _, body := range []string{`{"flow": ["a"]}`, `{"flows": []} x`} {
		w := httptest.NewRecorder()
		(&Function{}).ServeHTTP(w, httptest.NewRequest("POST", "/", strings.NewReader(body)))
		if w.Code != 400 || !strings.Contains(w.Body.String(), "decoding the request body") {
			t.Errorf("%s: %d %s, want 400 naming the body", body, w.Code, w.Body)
		}
	}
}
